"""One refresh: fetch every requested provider concurrently, parse, validate, load.

This is the single function behind ``costopt refresh``, the nightly scheduler and the bundled
snapshot. The network phase runs without the warehouse open, so readers are locked out only for the
seconds of the loads; each provider loads in its own transaction, so one provider's failure leaves
its previous prices intact and does not stop the others.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from scraper.base import ParseResult, Provider, RawPayload
from scraper.http import Fetcher, RetryPolicy, Validators, make_client
from scraper.providers import NAMES, provider_class
from scraper.replay import Origin, apply_origin, origin_of
from warehouse.alerts import Alert
from warehouse.errors import CostoptError, MissingCredentials, UsageError
from warehouse.load import RunRecord

PROVIDER_TIMEOUT_SECONDS = 30 * 60


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
) -> list[_Fetched]:
    client = make_client()
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
                raise Cancelled("stopped before loading: nothing was written")
            await asyncio.sleep(0.1)
        return work.result()
    finally:
        await client.aclose()


def parse_and_validate(provider: Provider, payloads: list[RawPayload]) -> tuple[ParseResult, int, list[str]]:
    """Run the pure parser, then the shared invariants; return the result and how much was dropped."""
    from scraper.validate import validate
    from warehouse.gpus import catalog

    result = provider.parse(payloads)
    kept, dropped, examples = validate(result.prices, catalog())
    result.prices = kept
    unknown = sum(result.skipped.values()) + sum(dropped.values())
    notes = [f"{count} skipped: {reason}" for reason, count in (result.skipped + dropped).most_common()]
    return result, unknown, notes + result.skipped_examples[:5] + examples[:5]


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
) -> list[Outcome]:
    """Refresh prices for ``providers`` (all by default) into the warehouse at ``db_path``."""
    from scraper import rawstore
    from warehouse.db import open_warehouse
    from warehouse.load import last_validators, load_run, record_failure
    from warehouse.paths import raw_dir

    names = list(providers or NAMES)
    for name in names:
        provider_class(name)  # unknown names fail before anything runs
    if replay is not None and not replay.is_dir():
        raise UsageError(f"replay: {replay} is not a directory")
    mode = mode or ("replay" if replay is not None else "live")
    say = progress or (lambda _p, _m: None)

    con = open_warehouse(db_path)
    try:
        known = {}
        for name in names:
            validators, state = last_validators(con, name)
            known[name] = ({u: Validators(e, m) for u, (e, m) in validators.items()}, state)
    finally:
        con.close()

    workdir = Path(tempfile.mkdtemp(prefix="costopt-fetch-"))
    try:
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
            )
        )
        runs: list[tuple[_Fetched, RunRecord | None, str | None]] = []
        for item in fetched:
            if item.status != "ok" or item.instance is None:
                runs.append((item, None, item.error))
                continue
            try:
                result, unknown, notes = parse_and_validate(item.instance, item.payloads)
            except CostoptError as exc:
                runs.append((item, None, exc.one_line()))
                continue
            except Exception as exc:  # a parser bug is this provider's failure, not everyone's
                runs.append((item, None, f"{item.provider}: parser crashed: {type(exc).__name__}: {exc}"))
                continue
            fetcher = item.fetcher
            assert fetcher is not None
            raw_root = raw_dir(db_path)
            raw_rows = [rawstore.store(raw_root, p) for p in item.payloads] if keep_raw else []
            observed = min((p.fetched_at for p in item.payloads), default=item.started_at)
            if item.origin is not None:
                result.prices = apply_origin(result.prices, item.origin)
            validators = {u: (v.etag, v.last_modified) for u, v in fetcher.new_validators.items()}
            runs.append(
                (
                    item,
                    RunRecord(
                        provider=item.provider,
                        mode=mode,
                        started_at=item.started_at,
                        observed_at=observed,
                        prices=result.prices,
                        spot_risk=result.spot_risk,
                        carried=result.carried,
                        unknown_items=unknown,
                        notes="; ".join(notes) or None,
                        raw=raw_rows,
                        validators=validators,
                        state=fetcher.new_state,
                        bytes_downloaded=fetcher.bytes_downloaded,
                        seconds=item.seconds,
                        source_urls=sorted(set(fetcher.urls)),
                        parser_version=item.instance.parser_version,
                        data_origin=item.origin.kind if item.origin else "live",
                        figures_as_of=item.origin.figures_as_of if item.origin else None,
                    ),
                    None,
                )
            )
        return _load_all(db_path, runs, mode, say, open_warehouse, load_run, record_failure, cancel)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _load_all(db_path, runs, mode, say, open_warehouse, load_run, record_failure, cancel) -> list[Outcome]:  # type: ignore[no-untyped-def]
    outcomes: list[Outcome] = []
    con = open_warehouse(db_path, on_wait=lambda message: say("warehouse", message))
    try:
        for item, run, error in runs:
            if cancel is not None and cancel.is_set():
                say(item.provider, "not loaded: stop requested")
                outcomes.append(Outcome(item.provider, "cancelled", error="stop requested before its load"))
                continue
            fetcher = item.fetcher
            downloaded = fetcher.bytes_downloaded if fetcher else 0
            if run is None:
                run_id = record_failure(
                    con,
                    provider=item.provider,
                    mode=mode,
                    started_at=item.started_at,
                    error=error or "failed",
                    status=item.status if item.status == "skipped" else "failed",
                    seconds=item.seconds,
                    bytes_downloaded=downloaded,
                    source_urls=sorted(set(fetcher.urls)) if fetcher else [],
                )
                status = "skipped" if item.status == "skipped" else "failed"
                outcomes.append(
                    Outcome(
                        item.provider,
                        status,
                        bytes_downloaded=downloaded,
                        seconds=item.seconds,
                        error=error,
                        run_id=run_id,
                    )
                )
                say(item.provider, f"{status}: {error}")
                continue
            try:
                summary = load_run(con, run)
            except CostoptError as exc:
                run_id = record_failure(
                    con,
                    provider=item.provider,
                    mode=mode,
                    started_at=item.started_at,
                    error=exc.one_line(),
                    seconds=item.seconds,
                    bytes_downloaded=downloaded,
                )
                outcomes.append(Outcome(item.provider, "failed", error=exc.one_line(), run_id=run_id))
                continue
            outcomes.append(
                Outcome(
                    item.provider,
                    summary.status if summary.status != "skipped" else "skipped",
                    offers=summary.offers,
                    prices_changed=summary.prices_changed,
                    prices_closed=summary.prices_closed,
                    flags=summary.flags,
                    unknown=run.unknown_items,
                    bytes_downloaded=run.bytes_downloaded,
                    seconds=item.seconds,
                    run_id=summary.run_id,
                    error=summary.note if summary.status == "skipped" else None,
                )
            )
            say(item.provider, f"loaded {summary.offers} offers, {summary.prices_changed} prices changed")
        _raise_alerts(con, outcomes)
    finally:
        con.close()
    return outcomes


def _raise_alerts(con, outcomes: list[Outcome]) -> None:  # type: ignore[no-untyped-def]
    from warehouse.alerts import check_run, record

    for outcome in outcomes:
        if outcome.run_id is None:
            continue
        outcome.alerts = check_run(con, outcome.run_id)
        record(con, outcome.alerts)
