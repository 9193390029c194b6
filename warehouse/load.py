"""The only code that writes prices: one transaction per provider run, all or nothing.

Prices are stored as intervals. A run that sees the same price as the open interval only moves its
``last_seen``; a changed price closes the interval and opens a new one; an offer missing from a
successful run is closed, unless its source was unchanged (``carried``) and so never re-read.
Replaying the same records changes nothing, and an exception anywhere rolls everything back, so
yesterday's prices survive today's failure.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from warehouse.archive import yield_to_scrape
from warehouse.errors import WarehouseError
from warehouse.records import PriceRecord, SpotRisk

if TYPE_CHECKING:
    import duckdb

FLAG_CHANGE = 0.60  # a move larger than this against the last observation is loaded but flagged


@dataclass(frozen=True, slots=True)
class RawRow:
    url: str
    fetched_at: datetime
    status: int
    sha256: str | None
    bytes: int
    path: str | None
    not_modified: bool
    scope: tuple[str, ...] = ()


@dataclass(slots=True)
class RunRecord:
    """Everything one provider run produced, ready to load."""

    provider: str
    mode: str  # live | replay | snapshot
    started_at: datetime
    observed_at: datetime
    prices: list[PriceRecord] = field(default_factory=list)
    spot_risk: list[SpotRisk] = field(default_factory=list)
    carried: set[tuple[str, str]] = field(default_factory=set)
    unknown_items: int = 0
    notes: str | None = None
    raw: list[RawRow] = field(default_factory=list)
    validators: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)
    state: Mapping[str, str] = field(default_factory=dict)
    bytes_downloaded: int = 0
    seconds: float = 0.0
    source_urls: list[str] = field(default_factory=list)
    parser_version: str = "1"
    data_origin: str = "live"  # live | recorded | derived | generated (a replay manifest declares the last three)
    figures_as_of: datetime | None = None  # the declared vintage of derived or generated figures


@dataclass(frozen=True, slots=True)
class LoadSummary:
    run_id: int
    status: str
    offers: int
    prices_changed: int
    prices_closed: int
    flags: int
    note: str | None = None


def _test_delay() -> None:
    """Hold the transaction open for ``COSTOPT_TEST_LOAD_DELAY`` seconds: lets tests signal a process mid-load."""
    delay = os.environ.get("COSTOPT_TEST_LOAD_DELAY")
    if delay:
        sys.stderr.write("costopt-test: load transaction open\n")
        sys.stderr.flush()
        time.sleep(float(delay))


def _next_run_id(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT nextval('run_ids')").fetchall()[0]
    assert row is not None
    return int(row[0])


def record_failure(
    con: duckdb.DuckDBPyConnection,
    *,
    provider: str,
    mode: str,
    started_at: datetime,
    error: str,
    status: str = "failed",
    seconds: float = 0.0,
    bytes_downloaded: int = 0,
    source_urls: Iterable[str] = (),
    parser_version: str = "1",
) -> int:
    """Log a run that loaded nothing. The previous prices of ``provider`` are not touched."""
    run_id = _next_run_id(con)
    con.execute(
        "INSERT INTO scrape_runs (run_id, provider, mode, started_at, finished_at, status, error, seconds, "
        "bytes_downloaded, source_urls, parser_version) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [
            run_id,
            provider,
            mode,
            started_at,
            datetime.now(UTC),
            status,
            error,
            seconds,
            bytes_downloaded,
            list(source_urls),
            parser_version,
        ],
    )
    return run_id


def _stage(con: duckdb.DuckDBPyConnection, records: list[PriceRecord]) -> None:
    import pyarrow as pa

    columns: dict[str, list[object]] = {
        k: []
        for k in (
            "region",
            "instance_type",
            "gpu",
            "gpu_count",
            "vcpus",
            "memory_gib",
            "pricing",
            "usd_per_hour",
            "source",
            "offer_count",
            "min_usd",
            "p10_usd",
            "median_usd",
            "max_usd",
            "source_time",
            "source_basis",
            "effective_since",
            "listings",
        )
    }
    for r in records:
        columns["region"].append(r.region)
        columns["instance_type"].append(r.instance_type)
        columns["gpu"].append(r.gpu)
        columns["gpu_count"].append(float(r.gpu_count))
        columns["vcpus"].append(r.vcpus)
        columns["memory_gib"].append(None if r.memory_gib is None else float(r.memory_gib))
        columns["pricing"].append(r.pricing)
        columns["usd_per_hour"].append(float(r.usd_per_hour))
        columns["source"].append(r.source)
        s = r.stats
        columns["offer_count"].append(s.offer_count if s else None)
        columns["min_usd"].append(s.min if s else None)
        columns["p10_usd"].append(s.p10 if s else None)
        columns["median_usd"].append(s.median if s else None)
        columns["max_usd"].append(s.max if s else None)
        columns["source_time"].append(r.source_time)
        columns["source_basis"].append(r.source_basis)
        columns["effective_since"].append(r.effective_since)
        columns["listings"].append(
            [{"usd_per_hour": x.usd_per_hour, "country": x.country, "reliability": x.reliability} for x in s.listings]
            if s and s.listings
            else None
        )
    listing = pa.struct([("usd_per_hour", pa.float64()), ("country", pa.string()), ("reliability", pa.float64())])
    schema = pa.schema(
        [
            ("region", pa.string()),
            ("instance_type", pa.string()),
            ("gpu", pa.string()),
            ("gpu_count", pa.float64()),
            ("vcpus", pa.int64()),
            ("memory_gib", pa.float64()),
            ("pricing", pa.string()),
            ("usd_per_hour", pa.float64()),
            ("source", pa.string()),
            ("offer_count", pa.int64()),
            ("min_usd", pa.float64()),
            ("p10_usd", pa.float64()),
            ("median_usd", pa.float64()),
            ("max_usd", pa.float64()),
            ("source_time", pa.timestamp("us", tz="UTC")),
            ("source_basis", pa.string()),
            ("effective_since", pa.timestamp("us", tz="UTC")),
            ("listings", pa.list_(listing)),
        ]
    )
    table = pa.Table.from_pydict(columns, schema=schema)
    con.register("_stage_arrow", table)
    con.execute("CREATE OR REPLACE TEMP TABLE _stage AS SELECT * FROM _stage_arrow")
    con.unregister("_stage_arrow")


def _check_keys(records: list[PriceRecord]) -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for r in records:
        if r.key in seen:
            raise WarehouseError(f"duplicate price key in one run: {r.key}")
        seen.add(r.key)


def load_run(con: duckdb.DuckDBPyConnection, run: RunRecord) -> LoadSummary:
    """Load one provider run in a single transaction. Raises after rolling back on any error."""
    _check_keys(run.prices)
    if any(r.provider != run.provider for r in run.prices):
        raise WarehouseError(f"{run.provider}: records from another provider in this run")
    con.execute("BEGIN TRANSACTION")
    try:
        summary = _load(con, run)
        _test_delay()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return summary


def _load(con: duckdb.DuckDBPyConnection, run: RunRecord) -> LoadSummary:
    provider, obs = run.provider, run.observed_at
    newest = con.execute(  # imported history does not count: an archive may reach past a replayed run
        """SELECT max(p.last_seen) FROM prices p JOIN offers o USING (offer_id)
           WHERE o.provider = ? AND p.archive_commit IS NULL""",
        [provider],
    ).fetchall()[0]
    if newest and newest[0] is not None and newest[0] > obs:
        held = f"{newest[0]:%Y-%m-%d %H:%M}"
        note = f"not loaded: recorded {obs:%Y-%m-%d %H:%M} UTC, older than prices already held ({held})"
        run_id = record_failure(
            con,
            provider=provider,
            mode=run.mode,
            started_at=run.started_at,
            error=note,
            status="skipped",
            seconds=run.seconds,
            bytes_downloaded=run.bytes_downloaded,
            source_urls=run.source_urls,
            parser_version=run.parser_version,
        )
        return LoadSummary(run_id, "skipped", 0, 0, 0, 0, note)

    run_id = _next_run_id(con)
    _stage(con, run.prices)
    con.execute(
        """INSERT INTO offers (provider, region, instance_type, gpu, gpu_count, vcpus, memory_gib, first_seen)
           SELECT DISTINCT ON (region, instance_type) ?, region, instance_type, gpu, gpu_count, vcpus, memory_gib, ?
           FROM _stage s
           WHERE NOT EXISTS (SELECT 1 FROM offers o WHERE o.provider = ? AND o.region = s.region
                             AND o.instance_type = s.instance_type)""",
        [provider, obs, provider],
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _obs AS
           SELECT o.offer_id, s.* FROM _stage s
           JOIN offers o ON o.provider = ? AND o.region = s.region AND o.instance_type = s.instance_type""",
        [provider],
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _open AS
           SELECT p.offer_id, p.pricing, p.usd_per_hour, o.region FROM prices p JOIN offers o USING (offer_id)
           WHERE o.provider = ? AND p.valid_to IS NULL""",
        [provider],
    )
    # unchanged: confirm (and take the source's newer time: a republished file vouches for the price anew)
    con.execute(
        """UPDATE prices p SET last_seen = ?, last_run = ?, source_time = b.source_time,
                  source_basis = b.source_basis, effective_since = b.effective_since
           FROM _obs b WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL
           AND abs(p.usd_per_hour - b.usd_per_hour) < 1e-9""",
        [obs, run_id],
    )
    # changed: flag, close, reopen
    flags = con.execute(
        """INSERT INTO price_flags
           SELECT ?, b.offer_id, b.pricing, x.usd_per_hour, b.usd_per_hour,
                  (b.usd_per_hour - x.usd_per_hour) / x.usd_per_hour, 'large_move'
           FROM _obs b JOIN _open x ON x.offer_id = b.offer_id AND x.pricing = b.pricing
           WHERE abs(b.usd_per_hour - x.usd_per_hour) / x.usd_per_hour > ?""",
        [run_id, FLAG_CHANGE],
    ).fetchall()[0]
    changed_row = con.execute(
        """SELECT count(*) FROM _obs b JOIN _open x ON x.offer_id = b.offer_id AND x.pricing = b.pricing
           WHERE abs(b.usd_per_hour - x.usd_per_hour) >= 1e-9"""
    ).fetchall()[0]
    new_row = con.execute(
        """SELECT count(*) FROM _obs b WHERE NOT EXISTS
           (SELECT 1 FROM prices p WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL)"""
    ).fetchall()[0]
    con.execute(
        """UPDATE prices p SET valid_to = ?
           FROM _obs b WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL
           AND abs(p.usd_per_hour - b.usd_per_hour) >= 1e-9""",
        [obs],
    )
    con.execute(
        """INSERT INTO prices (offer_id, pricing, usd_per_hour, valid_from, valid_to, last_seen, first_run, last_run,
                               source, source_time, source_basis, effective_since)
           SELECT b.offer_id, b.pricing, b.usd_per_hour, ?, NULL, ?, ?, ?, b.source, b.source_time, b.source_basis,
                  b.effective_since FROM _obs b
           WHERE NOT EXISTS (SELECT 1 FROM prices p WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing
                             AND p.valid_to IS NULL)""",
        [obs, obs, run_id, run_id],
    )
    # carried (source unchanged): confirm; missing otherwise: close
    carried = sorted(run.carried)
    con.execute("CREATE OR REPLACE TEMP TABLE _carried (region VARCHAR, pricing VARCHAR)")
    if carried:
        con.executemany("INSERT INTO _carried VALUES (?, ?)", [list(c) for c in carried])
    con.execute(
        """UPDATE prices p SET last_seen = ?, last_run = ?
           FROM _open x JOIN _carried c ON c.region = x.region AND c.pricing = x.pricing
           WHERE p.offer_id = x.offer_id AND p.pricing = x.pricing AND p.valid_to IS NULL
           AND NOT EXISTS (SELECT 1 FROM _obs b WHERE b.offer_id = x.offer_id AND b.pricing = x.pricing)""",
        [obs, run_id],
    )
    closed_row = con.execute(
        """SELECT count(*) FROM _open x
           WHERE NOT EXISTS (SELECT 1 FROM _obs b WHERE b.offer_id = x.offer_id AND b.pricing = x.pricing)
           AND NOT EXISTS (SELECT 1 FROM _carried c WHERE c.region = x.region AND c.pricing = x.pricing)"""
    ).fetchall()[0]
    con.execute(
        """UPDATE prices p SET valid_to = ?
           FROM _open x WHERE p.offer_id = x.offer_id AND p.pricing = x.pricing AND p.valid_to IS NULL
           AND NOT EXISTS (SELECT 1 FROM _obs b WHERE b.offer_id = x.offer_id AND b.pricing = x.pricing)
           AND NOT EXISTS (SELECT 1 FROM _carried c WHERE c.region = x.region AND c.pricing = x.pricing)""",
        [obs],
    )
    con.execute(
        """INSERT INTO market_stats (run_id, offer_id, pricing, observed_at, offer_count, min_usd, p10_usd,
                                     median_usd, max_usd, listings)
           SELECT ?, offer_id, pricing, ?, offer_count, min_usd, p10_usd, median_usd, max_usd, listings
           FROM _obs WHERE offer_count IS NOT NULL""",
        [run_id, obs],
    )
    yield_to_scrape(con, provider)  # a scraped price wins over imported history where both cover a time
    if run.spot_risk:
        con.executemany(
            "INSERT OR REPLACE INTO spot_risk VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                [
                    s.provider,
                    s.region,
                    s.instance_type,
                    s.savings_pct,
                    s.bucket,
                    s.label,
                    s.interruption_pct_min,
                    s.interruption_pct_max,
                    s.observed_at,
                    run_id,
                    s.source,
                ]
                for s in run.spot_risk
            ],
        )
    if run.validators:
        con.executemany(
            "INSERT OR REPLACE INTO http_validators VALUES (?,?,?,?,?)",
            [[provider, url, etag, modified, obs] for url, (etag, modified) in run.validators.items()],
        )
    if run.state:
        con.executemany(
            "INSERT OR REPLACE INTO provider_state VALUES (?,?,?,?)",
            [[provider, key, value, obs] for key, value in run.state.items()],
        )
    if run.raw:
        con.executemany(
            "INSERT INTO raw_payloads VALUES (?,?,?,?,?,?,?,?,?)",
            [
                [run_id, r.url, r.fetched_at, r.status, r.sha256, r.bytes, r.path, r.not_modified, list(r.scope)]
                for r in run.raw
            ],
        )
    n_flags = int(flags[0]) if flags else 0
    changed = (int(changed_row[0]) if changed_row else 0) + (int(new_row[0]) if new_row else 0)
    closed = int(closed_row[0]) if closed_row else 0
    offers = len({(r.region, r.instance_type) for r in run.prices})
    con.execute(
        """INSERT INTO scrape_runs (run_id, provider, mode, started_at, finished_at, observed_at, status, offers,
           prices_changed, prices_closed, unknown_items, flags, bytes_downloaded, seconds, error, source_urls,
           parser_version, notes, data_origin, figures_as_of) VALUES (?,?,?,?,?,?,'ok',?,?,?,?,?,?,?,NULL,?,?,?,?,?)""",
        [
            run_id,
            provider,
            run.mode,
            run.started_at,
            datetime.now(UTC),
            obs,
            offers,
            changed,
            closed,
            run.unknown_items,
            n_flags,
            run.bytes_downloaded,
            run.seconds,
            run.source_urls,
            run.parser_version,
            run.notes,
            run.data_origin,
            run.figures_as_of,
        ],
    )
    for temp in ("_stage", "_obs", "_open", "_carried"):
        con.execute(f"DROP TABLE IF EXISTS {temp}")
    return LoadSummary(run_id, "ok", offers, changed, closed, n_flags, run.notes)


def last_validators(
    con: duckdb.DuckDBPyConnection, provider: str
) -> tuple[dict[str, tuple[str | None, str | None]], dict[str, str]]:
    """Conditional-GET validators and change markers from the provider's last successful load."""
    validators = {
        url: (etag, modified)
        for url, etag, modified in con.execute(
            "SELECT url, etag, last_modified FROM http_validators WHERE provider = ?", [provider]
        ).fetchall()
    }
    state = dict(con.execute("SELECT key, value FROM provider_state WHERE provider = ?", [provider]).fetchall())
    return validators, state
