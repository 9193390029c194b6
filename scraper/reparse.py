"""``costopt reparse``: run today's parsers over the raw payloads of each provider's last run.

A parser fix then corrects the current prices without waiting for (or being able to reach) the
upstream source: the stored bytes are re-parsed and loaded as a new run with the original
observation time, through the same validation and the same one-transaction load. A load at the
same time replaces what the earlier parse wrote for that moment (``warehouse.load``), so the wrong
figures leave no trace in the history.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path

from scraper.base import RawPayload
from scraper.providers import NAMES, provider_class
from scraper.refresh import Outcome, parse_and_validate
from scraper.replay import Origin, apply_origin
from warehouse.errors import CostoptError


def _payloads(con, run_id: int, root: Path) -> list[RawPayload]:  # type: ignore[no-untyped-def]
    """The payloads of run ``run_id``, read from ``root`` (this warehouse's raw folder; ``raw_file``)."""
    from scraper.rawstore import read
    from warehouse.paths import raw_file

    payloads = []
    for url, fetched_at, status, path, not_modified, scope in con.execute(
        "SELECT url, fetched_at, status, path, not_modified, scope FROM raw_payloads WHERE run_id = ? ORDER BY rowid",
        [run_id],
    ).fetchall():
        if not_modified:
            # "not modified": the answer is the one stored when the URL last changed (an AWS offer file unchanged
            # for weeks); re-parsed from it, else this run's on-demand prices were carried and never re-read
            stored = con.execute(
                "SELECT fetched_at, status, path FROM raw_payloads WHERE url = ? AND path IS NOT NULL "
                "AND run_id <= ? ORDER BY run_id DESC LIMIT 1",
                [url, run_id],
            ).fetchall()
            file = raw_file(root, stored[0][2]) if stored else None
            if file is None:
                payloads.append(RawPayload(url, fetched_at, status, not_modified=True, scope=tuple(scope or ())))
                continue
            fetched_at, status = stored[0][0], stored[0][1]
        else:
            file = raw_file(root, path) if path is not None else None
        if file is None:
            raise CostoptError(f"raw payload {url} of run {run_id} is no longer stored (pruned?)")
        if file.suffix == ".raw":
            payloads.append(RawPayload(url, fetched_at, status, path=file, scope=tuple(scope or ())))
        else:
            payloads.append(RawPayload(url, fetched_at, status, body=read(file), scope=tuple(scope or ())))
    return payloads


def reparse(
    db_path: Path,
    providers: list[str] | None = None,
    *,
    dry_run: bool = False,
    env: Mapping[str, str] | None = None,
    accept_drop: Collection[str] = (),
) -> list[Outcome]:
    """Re-parse each provider's last successful run and load the result at its original observation time.

    Providers are built from the same environment as ``refresh`` (``COSTOPT_AWS_REGIONS`` and the like;
    no credential is needed to parse), and the result passes the same mass-disappearance guard: a
    parser change that loses most of a source's offers is refused unless ``accept_drop`` names it.
    """
    from warehouse.alerts import Alert, record
    from warehouse.db import open_warehouse
    from warehouse.load import RunRecord, load_run
    from warehouse.paths import raw_dir
    from warehouse.volume import check, min_share, suspect_message

    names = list(providers or NAMES)
    for name in [*names, *accept_drop]:
        provider_class(name)
    environ = os.environ if env is None else env
    shares = {name: min_share(environ, name) for name in names}
    con = open_warehouse(db_path)
    outcomes: list[Outcome] = []
    try:
        for name in names:
            row = con.execute(
                "SELECT max(r.run_id) FROM scrape_runs r WHERE r.provider = ? AND r.status = 'ok' "
                "AND EXISTS (SELECT 1 FROM raw_payloads p WHERE p.run_id = r.run_id)",
                [name],
            ).fetchall()[0][0]
            if row is None:
                outcomes.append(Outcome(name, "skipped", error="no stored raw payloads to re-parse"))
                continue
            started, clock = datetime.now(UTC), time.monotonic()
            try:
                payloads = _payloads(con, row, raw_dir(db_path))
                provider = provider_class(name).from_env(environ, replay=True)
                result, unknown, notes = parse_and_validate(provider, payloads)
                counts, carried = provider.scope_counts(result)
            except CostoptError as exc:
                outcomes.append(Outcome(name, "failed", error=exc.one_line()))
                continue
            if dry_run:
                outcomes.append(
                    Outcome(
                        name,
                        "ok",
                        offers=len({(r.region, r.instance_type) for r in result.prices}),
                        unknown=unknown,
                        notes=[f"dry run of run {row}"],
                    )
                )
                continue
            drops = check(
                con,
                name,
                counts,
                carried=carried,
                expects=provider.expects,
                scope_of=provider.scope_of,
                share=shares[name],
            )
            if drops and name not in accept_drop:
                message = f"{name}: re-parse of run {row} not loaded: {suspect_message(name, drops, shares[name])}"
                outcomes.append(
                    Outcome(name, "failed", error=message, alerts=[Alert(None, name, "suspect_drop", "error", message)])
                )
                record(con, outcomes[-1].alerts)
                continue
            observed = min(p.fetched_at for p in payloads)
            # a re-parse keeps what the data is: a replayed recording stays derived/generated, with its vintage
            origin_row = con.execute(
                "SELECT data_origin, figures_as_of FROM scrape_runs WHERE run_id = ?", [row]
            ).fetchall()[0]
            origin = Origin(origin_row[0] or "live", origin_row[1])
            summary = load_run(
                con,
                RunRecord(
                    provider=name,
                    mode="reparse",
                    started_at=started,
                    observed_at=observed,
                    prices=apply_origin(result.prices, origin),
                    spot_risk=result.spot_risk,
                    carried=result.carried,
                    held=result.held,
                    unknown_items=unknown,
                    notes=f"re-parse of run {row}; " + "; ".join(notes),
                    seconds=time.monotonic() - clock,
                    parser_version=provider.parser_version,
                    scopes=dict(counts),
                    data_origin=origin.kind,
                    figures_as_of=origin.figures_as_of,
                ),
            )
            outcomes.append(
                Outcome(
                    name,
                    summary.status,
                    offers=summary.offers,
                    prices_changed=summary.prices_changed,
                    prices_closed=summary.prices_closed,
                    flags=summary.flags,
                    unknown=unknown,
                    run_id=summary.run_id,
                    error=summary.note if summary.status != "ok" else None,
                    notes=[summary.note] if summary.note else [],
                )
            )
    finally:
        con.close()
    return outcomes
