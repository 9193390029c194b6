"""One refresh: fetch every requested provider concurrently, parse, validate, load.

This is the single function behind ``costopt refresh``, the nightly scheduler and the bundled
snapshot. The network phase runs without the warehouse open, so readers are locked out only for the
seconds of the loads; each provider loads in its own transaction, so one provider's failure (an
upstream error, a parse error, a DuckDB error in its load) leaves its previous prices intact and
does not stop the others. Before a provider loads, each of its sources is compared with that
source's last good run (``warehouse.volume``): a source that suddenly answers with far fewer offers
fails the provider as "suspect" instead of closing its prices, unless a person accepted the drop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

# rawstore is imported here, by the main thread, not inside _keep_raw: that runs on a worker thread, and an import
# there can wait forever on a module lock a Ctrl-C left held in the main thread's own import (CPython's import locks
# are not safe against KeyboardInterrupt); the main thread then waits for the worker, and the refresh never exits
from scraper import rawstore
from scraper.base import ParseResult, Provider, RawPayload
from scraper.http import Fetcher, RetryPolicy, Validators, make_client
from scraper.providers import NAMES, provider_class
from scraper.replay import Origin, apply_origin, origin_of
from warehouse.alerts import Alert
from warehouse.errors import (
    CostoptError,
    MissingCredentials,
    UsageError,
    WarehouseError,
    from_duckdb,
    is_duckdb_error,
    is_interrupt,
)
from warehouse.load import LoadSummary, RawRow, RunRecord
from warehouse.records import PriceRecord
from warehouse.volume import Drop

PROVIDER_TIMEOUT_SECONDS = 30 * 60
DEFAULT_HTTP_TIMEOUT = 30.0
TIMEOUT_VARIABLE = "COSTOPT_HTTP_TIMEOUT"


class Cancelled(CostoptError):
    """A stop was requested (SIGTERM/SIGINT) before anything was loaded."""


@dataclass(slots=True)
class Outcome:
    """What happened to one provider in one refresh (one row of the summary table)."""

    provider: str
    status: str  # ok | failed | skipped
    offers: int = 0
    prices_changed: int = 0
    prices_closed: int = 0
    flags: int = 0
    unknown: int = 0
    bytes_downloaded: int = 0
    seconds: float = 0.0
    error: str | None = None
    run_id: int | None = None
    notes: list[str] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)

    @property
    def reason(self) -> str | None:
        """``error`` without the ``<provider>:`` its message starts with (errors name their provider, to be read on
        their own in ``costopt runs`` or a webhook), for a line that names the provider already: the failure line
        ``lambda failed: HTTP 500 ...`` said ``lambda failed: lambda: HTTP 500 ...``."""
        if self.error is None:
            return None
        own = f"{self.provider}: "
        return self.error[len(own) :] if self.error.startswith(own) else self.error

    def as_dict(self) -> dict[str, object]:
        return {
            "provider": self.provider,
            "status": self.status,
            "offers": self.offers,
            "prices_changed": self.prices_changed,
            "prices_closed": self.prices_closed,
            "flags": self.flags,
            "unknown": self.unknown,
            "bytes_downloaded": self.bytes_downloaded,
            "seconds": round(self.seconds, 2),
            "error": self.error,
            "run_id": self.run_id,
            "alerts": [a.as_dict() for a in self.alerts],
        }


@dataclass(slots=True)
class _Fetched:
    provider: str
    instance: Provider | None
    payloads: list[RawPayload] = field(default_factory=list)
    fetcher: Fetcher | None = None
    error: str | None = None
    status: str = "ok"
    seconds: float = 0.0
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    origin: Origin | None = None  # a replay's declared origin (None: live)


Progress = Callable[[str, str], None]  # (provider, message)


def _replay_client(directory: Path) -> tuple[object, datetime]:
    import httpx

    from scraper.replay import ReplayTransport, load_manifest, recorded_at

    transport = ReplayTransport(load_manifest(directory))
    return httpx.AsyncClient(transport=transport), recorded_at(directory)


async def _fetch_one(
    name: str,
    *,
    env: Mapping[str, str] | None,
    replay_root: Path | None,
    shared_client: object,
    validators: dict[str, Validators],
    state: dict[str, str],
    workdir: Path,
    retry: RetryPolicy,
    progress: Progress,
) -> _Fetched:
    started = datetime.now(UTC)
    clock_start = time.monotonic()
    try:
        provider = provider_class(name).from_env(env, replay=replay_root is not None)
    except MissingCredentials as exc:
        progress(name, f"skipped: {exc.one_line()}")
        return _Fetched(name, None, error=exc.one_line(), status="skipped", started_at=started)
    client = shared_client
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731
    own_client = False
    origin: Origin | None = None
    if replay_root is not None:
        directory = replay_root / name
        if not (directory / "replay.json").is_file():
            return _Fetched(
                name, provider, error=f"no recordings for {name} in {replay_root}", status="failed", started_at=started
            )
        client, recorded = _replay_client(directory)
        clock = lambda: recorded  # noqa: E731
        own_client = True
        origin = origin_of(directory)
    fetcher = Fetcher(
        client=client,  # type: ignore[arg-type]
        provider=name,
        validators=validators,
        state=state,
        retry=retry,
        workdir=workdir / name,
        clock=clock,
    )
    progress(name, "fetching")
    try:
        payloads = await asyncio.wait_for(provider.fetch(fetcher), PROVIDER_TIMEOUT_SECONDS)
    except CostoptError as exc:
        return _Fetched(
            name,
            provider,
            fetcher=fetcher,
            error=exc.one_line(),
            status="failed",
            started_at=started,
            seconds=time.monotonic() - clock_start,
        )
    except TimeoutError:
        return _Fetched(
            name,
            provider,
            fetcher=fetcher,
            status="failed",
            started_at=started,
            error=f"{name}: gave up after {PROVIDER_TIMEOUT_SECONDS // 60} minutes",
            seconds=time.monotonic() - clock_start,
        )
    except Exception as exc:  # a provider bug must not take the other providers down
        return _Fetched(
            name,
            provider,
            fetcher=fetcher,
            status="failed",
            started_at=started,
            error=f"{name}: unexpected {type(exc).__name__}: {exc}",
            seconds=time.monotonic() - clock_start,
        )
    finally:
        if own_client:
            await client.aclose()  # type: ignore[attr-defined]
    progress(name, f"fetched {len(payloads)} payloads")
    return _Fetched(
        name, provider, payloads, fetcher, started_at=started, seconds=time.monotonic() - clock_start, origin=origin
    )


async def _fetch_all(
    names: list[str],
    *,
    env: Mapping[str, str] | None,
    replay_root: Path | None,
    known: dict[str, tuple[dict[str, Validators], dict[str, str]]],
    workdir: Path,
    retry: RetryPolicy,
    progress: Progress,
    cancel: threading.Event | None = None,
    timeout: float = DEFAULT_HTTP_TIMEOUT,
) -> list[_Fetched]:
    # a replay serves every provider from its own recorded transport: no shared client (building one
    # loads the CA bundle, ~0.1 s, for a client that would never send a request)
    client = make_client(timeout=timeout) if replay_root is None else None
    try:
        work = asyncio.gather(
            *(
                _fetch_one(
                    name,
                    env=env,
                    replay_root=replay_root,
                    shared_client=client,
                    validators=known[name][0],
                    state=known[name][1],
                    workdir=workdir,
                    retry=retry,
                    progress=progress,
                )
                for name in names
            )
        )
        if cancel is None:
            return await work
        while not work.done():
            if cancel.is_set():
                work.cancel()
                # awaited, so that asyncio does not report the cancelled fetches as an error nobody
                # retrieved (a CancelledError traceback on stderr) when the future is collected
                with contextlib.suppress(asyncio.CancelledError):
                    await work
                raise Cancelled("stopped before loading: nothing was written")
            await asyncio.sleep(0.1)
        return work.result()
    finally:
        if client is not None:
            await client.aclose()


def parse_and_validate(provider: Provider, payloads: list[RawPayload]) -> tuple[ParseResult, int, list[str]]:
    """Run the pure parser, then the shared invariants; return the result and how much was dropped."""
    from scraper.validate import validate
    from warehouse.gpus import catalog

    result = provider.parse(payloads)
    kept, dropped, examples = validate(result.prices, catalog())
    if len(kept) < len(result.prices):
        # a refused row must not read as the offer's disappearance: the load would close its good price
        valid = {id(r) for r in kept}
        result.held |= {(r.region, r.instance_type, r.pricing) for r in result.prices if id(r) not in valid}
    result.prices = kept
    unknown = sum(result.skipped.values()) + sum(dropped.values())
    notes = [f"{count} skipped: {reason}" for reason, count in (result.skipped + dropped).most_common()]
    if result.held:
        notes.append(f"{len(result.held)} offer(s) not updated: their new row was rejected, any previous price kept")
    return result, unknown, notes + result.skipped_examples[:5] + examples[:5]


@dataclass(slots=True)
class _Ready:
    """One provider after fetch and parse: a run to load, or the reason there is none."""

    item: _Fetched
    run: RunRecord | None = None
    error: str | None = None
    raw: list[RawRow] = field(default_factory=list)
    carried: set[str] = field(default_factory=set)
    share: float = 0.5
    jumped: str | None = None  # prices held back as implausible moves (``_hold_implausible``), said in an alert


def refresh(
    db_path: Path,
    providers: list[str] | None = None,
    *,
    replay: Path | None = None,
    mode: str | None = None,
    env: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    retry: RetryPolicy | None = None,
    keep_raw: bool = True,
    cancel: threading.Event | None = None,
    accept_drop: Collection[str] = (),
    timeout: float | None = None,
) -> list[Outcome]:
    """Refresh prices for ``providers`` (all by default) into the warehouse at ``db_path``.

    ``accept_drop`` names providers whose far smaller answer a person has confirmed as real (the
    guard in ``warehouse.volume`` otherwise refuses it). ``timeout`` is the per-request HTTP
    timeout in seconds (default ``COSTOPT_HTTP_TIMEOUT``, else 30).
    """
    from scraper.scratch import owned_scratch
    from warehouse.db import open_warehouse
    from warehouse.load import last_validators
    from warehouse.paths import raw_dir, temp_root

    names = list(providers or NAMES)
    shares, default_timeout = check_config(names, env=env, replay=replay, accept_drop=accept_drop)
    mode = mode or ("replay" if replay is not None else "live")
    say = progress or (lambda _p, _m: None)
    timeout = timeout if timeout is not None else default_timeout

    con = open_warehouse(db_path, on_wait=lambda message: say("warehouse", message))  # not 30 s of silence
    try:
        known = {}
        for name in names:
            validators, state = last_validators(con, name)
            known[name] = ({u: Validators(e, m) for u, (e, m) in validators.items()}, state)
    except BaseException:
        con.close()
        raise
    # a live fetch runs with the warehouse closed (readers are locked out only for the loads); a
    # replay reads local files for a moment, and keeps the connection for its loads
    if replay is None:
        con.close()

    try:
        # a directory of this run's own, removed on every way out; one a SIGKILL left is swept by the next run
        with owned_scratch("costopt-fetch-", temp_root()) as workdir:
            fetched = asyncio.run(
                _fetch_all(
                    names,
                    cancel=cancel,
                    env=env,
                    replay_root=replay,
                    known=known,
                    workdir=workdir,
                    retry=retry or RetryPolicy(),
                    progress=say,
                    timeout=timeout,
                )
            )
            ready: list[_Ready] = []
            raw_root = raw_dir(db_path)
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="costopt-raw") as keeper:
                # the raw payloads are kept whatever the parse says (a response that fails to parse is the
                # evidence a person needs), on a thread beside the parse: hashing and gzip release the GIL
                kept = {
                    item.provider: keeper.submit(_keep_raw, raw_root, item.payloads)
                    for item in fetched
                    if keep_raw and item.status == "ok" and item.instance is not None
                }
                for item in fetched:
                    entry = _Ready(item, share=shares[item.provider])
                    ready.append(entry)
                    if item.status != "ok" or item.instance is None:
                        entry.error = item.error
                        continue
                    _parse_one(entry, kept.get(item.provider), raw_root, mode)
            return _load_all(db_path, ready, mode, say, cancel, set(accept_drop), con=None if replay is None else con)
    finally:
        # a Ctrl-C can surface twice, as DuckDB's "Query interrupted" in a load and then, once DuckDB returns to
        # Python, as the main thread's pending KeyboardInterrupt, here in close(): the scratch directory is gone by
        # then, removed on the way out of the block above
        if replay is not None:
            con.close()


def _keep_raw(root: Path, payloads: list[RawPayload]) -> list[RawRow]:
    """On the keeper thread: no import may run here (see the import of rawstore above)."""
    return [rawstore.store(root, p) for p in payloads]


def _parse_one(entry: _Ready, kept: Future[list[RawRow]] | None, raw_root: Path, mode: str) -> None:
    """Parse and validate one provider's payloads into ``entry.run`` (or ``entry.error``), with its raw rows."""
    item = entry.item
    assert item.instance is not None
    parsed: tuple[ParseResult, int, list[str]] | None = None
    error: str | None = None
    counts: Mapping[str, int] = {}
    try:
        parsed = parse_and_validate(item.instance, item.payloads)
        counts, entry.carried = item.instance.scope_counts(parsed[0])
    except CostoptError as exc:
        error = exc.one_line()
    except Exception as exc:  # a parser bug is this provider's failure, not everyone's
        error = f"{item.provider}: parser crashed: {type(exc).__name__}: {exc}"
    try:
        entry.raw = kept.result() if kept is not None else []
    except OSError as exc:
        entry.error = f"{item.provider}: cannot keep the raw payloads under {raw_root}: {exc.strerror or exc}"
        return
    if error is not None or parsed is None:
        entry.error = error
        return
    result, unknown, notes = parsed
    fetcher = item.fetcher
    assert fetcher is not None
    observed = min((p.fetched_at for p in item.payloads), default=item.started_at)
    if item.origin is not None:
        result.prices = apply_origin(result.prices, item.origin)
    validators = {u: (v.etag, v.last_modified) for u, v in fetcher.new_validators.items()}
    entry.run = RunRecord(
        provider=item.provider,
        mode=mode,
        started_at=item.started_at,
        observed_at=observed,
        prices=result.prices,
        spot_risk=result.spot_risk,
        carried=result.carried,
        held=result.held,
        unknown_items=unknown,
        notes="; ".join(notes) or None,
        raw=entry.raw,
        validators=validators,
        state=fetcher.new_state,
        bytes_downloaded=fetcher.bytes_downloaded,
        seconds=item.seconds,
        source_urls=sorted(set(fetcher.urls)),
        parser_version=item.instance.parser_version,
        scopes=dict(counts),
        data_origin=item.origin.kind if item.origin else "live",
        figures_as_of=item.origin.figures_as_of if item.origin else None,
    )


def check_config(
    names: list[str],
    *,
    env: Mapping[str, str] | None = None,
    replay: Path | None = None,
    accept_drop: Collection[str] = (),
) -> tuple[dict[str, float], float]:
    """Refuse unknown providers and bad settings up front (the scheduler calls it at start, not at 3 a.m.).

    Returns the guard's share per provider and the HTTP timeout.
    """
    from warehouse.volume import min_share

    for name in [*names, *accept_drop]:
        provider_class(name)  # unknown names fail before anything runs
    if replay is not None and not replay.is_dir():
        raise UsageError(f"replay: {replay} is not a directory")
    environ = os.environ if env is None else env
    return {name: min_share(environ, name) for name in names}, _http_timeout(environ)


def _http_timeout(env: Mapping[str, str]) -> float:
    text = (env.get(TIMEOUT_VARIABLE) or "").strip()
    if not text:
        return DEFAULT_HTTP_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise UsageError(f"{TIMEOUT_VARIABLE}={text!r}: give the per-request timeout in seconds, e.g. 30")
    return value


def _load_all(
    db_path: Path,
    ready: list[_Ready],
    mode: str,
    say: Progress,
    cancel: threading.Event | None,
    accept_drop: set[str],
    con: object = None,
) -> list[Outcome]:
    """Load every provider; whatever goes wrong with one is that provider's failure.

    The providers that passed their checks load together in ONE transaction (``load_runs``: the same
    ~30 statements for six providers as for one). Should that batch fail, it is rolled back whole and
    each provider loads again in its own transaction, as if there had been no batch: one provider's
    failure never stops or undoes another's.
    """
    from warehouse.db import open_warehouse

    outcomes: dict[str, Outcome] = {}
    given = con is not None  # the caller's open connection (a replay): the caller closes it
    if con is None:
        con = open_warehouse(db_path, on_wait=lambda message: say("warehouse", message))
    try:
        if cancel is not None and cancel.is_set():
            for entry in ready:
                say(entry.item.provider, "not loaded: stop requested")
                outcomes[entry.item.provider] = Outcome(
                    entry.item.provider, "cancelled", error="stop requested before its load"
                )
        else:
            batch = _checked(con, ready, mode, accept_drop, outcomes)
            if len(batch) > 1:
                _load_batch(con, batch, outcomes)
            for entry, drops in batch:
                if entry.item.provider in outcomes:
                    continue
                if cancel is not None and cancel.is_set():
                    say(entry.item.provider, "not loaded: stop requested")
                    outcomes[entry.item.provider] = Outcome(
                        entry.item.provider, "cancelled", error="stop requested before its load"
                    )
                    continue
                outcomes[entry.item.provider] = _guarded(con, entry, mode, _load_one, con, entry, drops)
        ordered = [outcomes[entry.item.provider] for entry in ready]
        for outcome in ordered:
            if outcome.status == "ok":
                say(outcome.provider, f"loaded {outcome.offers} offers, {outcome.prices_changed} prices changed")
            elif outcome.status != "cancelled":
                say(outcome.provider, f"{outcome.status}: {outcome.reason}")
        _raise_alerts(con, ordered)
    finally:
        if not given:
            con.close()  # type: ignore[attr-defined]
    return ordered


def _guarded(con, entry: _Ready, mode: str, step: Callable[..., Outcome], *args: object) -> Outcome:  # type: ignore[no-untyped-def]
    """``step(*args)``, or the provider's recorded failure when it raises (Ctrl-C still stops everything)."""
    try:
        return step(*args)
    except Exception as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        return _failed(con, entry, mode, _reason(entry.item.provider, exc))


def _checked(
    con, ready: list[_Ready], mode: str, accept_drop: set[str], outcomes: dict[str, Outcome]
) -> list[tuple[_Ready, list[Drop]]]:  # type: ignore[no-untyped-def]
    """Record the providers that have nothing to load (or a suspect drop); return the others with their drops."""
    batch: list[tuple[_Ready, list[Drop]]] = []
    for entry in ready:
        provider = entry.item.provider
        if entry.run is None:
            outcomes[provider] = _failed(con, entry, mode, entry.error or "failed")
            continue
        try:
            drops = _drops(con, entry)
        except Exception as exc:
            if is_interrupt(exc):
                raise KeyboardInterrupt from None
            outcomes[provider] = _failed(con, entry, mode, _reason(provider, exc))
            continue
        if drops and provider not in accept_drop:
            outcomes[provider] = _guarded(con, entry, mode, _suspect, con, entry, mode, drops)
            continue
        _hold_implausible(con, entry)
        batch.append((entry, drops))
    return batch


JUMP_FACTOR = 10.0  # a price more than this many times, or less than its inverse, the current one is held back


def _hold_implausible(con, entry: _Ready) -> None:  # type: ignore[no-untyped-def]
    """Hold back the prices that moved more than JUMP_FACTOR-fold against the offer's current one: kept as they
    were (``held``: neither confirmed nor closed), said in the run's notes and in a warning.

    A page whose every price was multiplied by 30 (an H100 at $128.70 an hour, under the flat $150/GPU-hour
    ceiling) was loaded as today's prices with only a "moved more than 60 %" flag. Cloud list prices and
    marketplace medians do not move tenfold overnight; a unit or parsing slip upstream does. A real move of that
    size stays visible in the warning and in ``costopt reparse`` after a person looks.
    """
    from dataclasses import replace

    run = entry.run
    assert run is not None
    if not run.prices:
        return
    current = {
        (region, instance, pricing): usd
        for region, instance, pricing, usd in con.execute(
            "SELECT region, instance_type, pricing, usd_per_hour FROM current_prices WHERE provider = ?",
            [run.provider],
        ).fetchall()
    }
    jumped: list[tuple[float, PriceRecord, float]] = []
    for record in run.prices:
        before = current.get((record.region, record.instance_type, record.pricing))
        if before and before > 0 and record.usd_per_hour > 0:
            ratio = record.usd_per_hour / before
            if ratio > JUMP_FACTOR or ratio < 1 / JUMP_FACTOR:
                jumped.append((max(ratio, 1 / ratio), record, before))
    if not jumped:
        return
    keys = {(r.region, r.instance_type, r.pricing) for _, r, _ in jumped}
    _, worst, before = max(jumped, key=lambda item: item[0])
    message = (
        f"{run.provider}: {len(jumped)} price(s) moved more than {JUMP_FACTOR:g}-fold against the current one and "
        f"were not loaded, the previous price kept; largest {worst.instance_type} {worst.region} {worst.pricing} "
        f"${before:,.4g} -> ${worst.usd_per_hour:,.4g}"
    )
    entry.run = replace(
        run,
        prices=[r for r in run.prices if (r.region, r.instance_type, r.pricing) not in keys],
        held=run.held | keys,
        notes="; ".join(part for part in (run.notes, message) if part),
    )
    entry.jumped = message


def _load_batch(con, batch: list[tuple[_Ready, list[Drop]]], outcomes: dict[str, Outcome]) -> None:  # type: ignore[no-untyped-def]
    """All of ``batch`` in one transaction; on any error (but Ctrl-C) nothing, and the caller loads each alone."""
    from warehouse.load import load_runs

    runs = [entry.run for entry, _ in batch]
    try:
        summaries = load_runs(con, [run for run in runs if run is not None])
    except Exception as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        return
    for (entry, drops), summary in zip(batch, summaries, strict=True):
        outcomes[entry.item.provider] = _outcome(entry, summary, drops)


def _reason(provider: str, exc: BaseException) -> str:
    if isinstance(exc, WarehouseError) and not str(exc).startswith(f"{provider}:"):
        return f"{provider}: not loaded: {exc.one_line()}"  # a load's DuckDB error names no provider
    if isinstance(exc, CostoptError):
        return exc.one_line()
    if is_duckdb_error(exc):
        return f"{provider}: not loaded: {from_duckdb(exc).one_line()}"
    return f"{provider}: not loaded: unexpected {type(exc).__name__}: {exc}"


def _drops(con, entry: _Ready) -> list[Drop]:  # type: ignore[no-untyped-def]
    """The sources of this run that answered with far fewer offers than their last good run."""
    from warehouse.volume import check

    item, run, instance = entry.item, entry.run, entry.item.instance
    assert run is not None and instance is not None
    return check(
        con,
        item.provider,
        run.scopes,
        carried=entry.carried,
        expects=instance.expects,
        scope_of=instance.scope_of,
        share=entry.share,
    )


def _suspect(con, entry: _Ready, mode: str, drops: list[Drop]) -> Outcome:  # type: ignore[no-untyped-def]
    from warehouse.alerts import Alert
    from warehouse.volume import suspect_message

    provider = entry.item.provider
    message = f"{provider}: {suspect_message(provider, drops, entry.share)}"
    outcome = _failed(con, entry, mode, message)
    if outcome.run_id is not None:
        outcome.alerts.append(Alert(outcome.run_id, provider, "suspect_drop", "error", message))
    return outcome


def _load_one(con, entry: _Ready, drops: list[Drop]) -> Outcome:  # type: ignore[no-untyped-def]
    """One provider in its own transaction (its checks passed)."""
    from warehouse.load import load_run

    assert entry.run is not None
    return _outcome(entry, load_run(con, entry.run), drops)


def _outcome(entry: _Ready, summary: LoadSummary, drops: list[Drop]) -> Outcome:
    from warehouse.alerts import Alert

    item, run = entry.item, entry.run
    assert run is not None
    accepted: list[Alert] = []
    if entry.jumped:
        accepted.append(Alert(summary.run_id, item.provider, "implausible_move", "warning", entry.jumped))
    if drops:
        accepted.append(
            Alert(
                summary.run_id,
                item.provider,
                "drop_accepted",
                "info",
                f"{item.provider}: drop accepted (--accept-drop): " + "; ".join(d.describe() for d in drops),
            )
        )
    return Outcome(
        item.provider,
        summary.status,
        offers=summary.offers,
        prices_changed=summary.prices_changed,
        prices_closed=summary.prices_closed,
        flags=summary.flags,
        unknown=run.unknown_items,
        bytes_downloaded=run.bytes_downloaded,
        seconds=item.seconds,
        run_id=summary.run_id,
        error=summary.note if summary.status == "skipped" else None,
        alerts=accepted,
    )


def _failed(con, entry: _Ready, mode: str, error: str) -> Outcome:  # type: ignore[no-untyped-def]
    """Record a provider run that loaded nothing; if even that cannot be written, still report it."""
    from warehouse.load import record_failure

    item, fetcher = entry.item, entry.item.fetcher
    downloaded = fetcher.bytes_downloaded if fetcher else 0
    status = "skipped" if item.status == "skipped" else "failed"
    run_id: int | None = None
    try:
        run_id = record_failure(
            con,
            provider=item.provider,
            mode=mode,
            started_at=item.started_at,
            error=error,
            status=status,
            seconds=item.seconds,
            bytes_downloaded=downloaded,
            source_urls=sorted(set(fetcher.urls)) if fetcher else [],
            raw=entry.raw,
            scopes=entry.run.scopes if entry.run is not None else None,
            offers=len({(r.region, r.instance_type) for r in entry.run.prices}) if entry.run is not None else 0,
        )
    except Exception as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        error = f"{error} (and the failure could not be logged: {_reason(item.provider, exc)})"
    return Outcome(item.provider, status, bytes_downloaded=downloaded, seconds=item.seconds, error=error, run_id=run_id)


def _raise_alerts(con, outcomes: list[Outcome]) -> None:  # type: ignore[no-untyped-def]
    """Check every run of this refresh at once and record what it raised (one run at a time if that fails)."""
    from warehouse.alerts import check_runs, record

    runs = [o for o in outcomes if o.run_id is not None]
    try:
        found = check_runs(con, [o.run_id for o in runs if o.run_id is not None])
        raised = [o.alerts + found.get(o.run_id, []) for o in runs if o.run_id is not None]
        record(con, [a for alerts in raised for a in alerts])
    except Exception as exc:
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
    else:
        for outcome, alerts in zip(runs, raised, strict=True):
            outcome.alerts = alerts
        return
    for outcome in runs:
        try:
            assert outcome.run_id is not None
            outcome.alerts = outcome.alerts + check_runs(con, [outcome.run_id]).get(outcome.run_id, [])
            record(con, outcome.alerts)
        except Exception as exc:  # the prices are loaded; an alert that cannot be written is a note
            if is_interrupt(exc):
                raise KeyboardInterrupt from None
            outcome.notes.append(f"alerts not recorded: {_reason(outcome.provider, exc)}")
