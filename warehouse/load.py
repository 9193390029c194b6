"""The only code that writes prices: one transaction per provider run, all or nothing.

Prices are stored as intervals. A run that sees the same price as the open interval only moves its
``last_seen``; a changed price closes the interval and opens a new one; an offer missing from a
successful run is closed, unless its source was unchanged (``carried``) and so never re-read.
Replaying the same records changes nothing, and an exception anywhere rolls everything back, so
yesterday's prices survive today's failure.

A reload at the *same* observation time (``costopt reparse`` after a parser fix) is a correction of
what was seen at that moment, not a new observation: the open interval that began at that time is
replaced in place (or removed, or the interval it had closed is reopened), so no zero-length
``[T, T)`` interval is ever written and a corrected price leaves no trace of the wrong one in
``price_history``, ``gpu_hourly`` or the export. An offer's attributes (GPU, count, vCPUs, RAM)
follow the newest parse.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

from warehouse.archive import yield_to_scrape
from warehouse.errors import WarehouseError, from_duckdb, is_duckdb_error, is_interrupt
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
    # offers read per source ("scope") in this run, stored in run_scopes as the guard's next baseline
    scopes: Mapping[str, int] = field(default_factory=dict)
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
    raw: Iterable[RawRow] = (),
    scopes: Mapping[str, int] | None = None,
    offers: int = 0,
) -> int:
    """Log a run that loaded no prices. The previous prices of ``provider`` are not touched.

    The raw payloads and per-source counts of a run that fetched but was refused (a parse error, a
    suspect drop) are kept as evidence: what the upstream sent is what a person needs to look at.
    """
    con.execute("BEGIN TRANSACTION")
    try:
        run_id = _insert_failure(
            con,
            provider=provider,
            mode=mode,
            started_at=started_at,
            error=error,
            status=status,
            seconds=seconds,
            bytes_downloaded=bytes_downloaded,
            source_urls=source_urls,
            parser_version=parser_version,
            raw=raw,
            scopes=scopes,
            offers=offers,
        )
        con.execute("COMMIT")
    except BaseException as exc:
        _rollback(con, exc)
    return run_id


def _insert_failure(
    con: duckdb.DuckDBPyConnection,
    *,
    provider: str,
    mode: str,
    started_at: datetime,
    error: str,
    status: str,
    seconds: float,
    bytes_downloaded: int,
    source_urls: Iterable[str],
    parser_version: str,
    raw: Iterable[RawRow] = (),
    scopes: Mapping[str, int] | None = None,
    offers: int = 0,
) -> int:
    run_id = _next_run_id(con)
    con.execute(
        "INSERT INTO scrape_runs (run_id, provider, mode, started_at, finished_at, status, offers, error, "
        "seconds, bytes_downloaded, source_urls, parser_version) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            run_id,
            provider,
            mode,
            started_at,
            datetime.now(UTC),
            status,
            offers,
            error,
            seconds,
            bytes_downloaded,
            list(source_urls),
            parser_version,
        ],
    )
    _insert_raw(con, run_id, list(raw))
    _insert_scopes(con, run_id, provider, scopes or {})
    return run_id


def _rollback(con: duckdb.DuckDBPyConnection, exc: BaseException) -> NoReturn:
    """Roll back and re-raise ``exc`` as what it means: Ctrl-C, a warehouse error, or itself."""
    with contextlib.suppress(Exception):  # the transaction is gone either way; report the first error
        con.execute("ROLLBACK")
    if is_interrupt(exc):
        raise KeyboardInterrupt from None
    if is_duckdb_error(exc):
        raise from_duckdb(exc) from None
    raise exc


def _bulk_insert(con: duckdb.DuckDBPyConnection, statement: str, columns: list[tuple[str, list[Any]]]) -> None:
    """Run ``statement SELECT unnest(?), unnest(?), ...``: any number of rows in one statement.

    ``executemany`` runs the statement once per row; an 82-row ``INSERT OR REPLACE`` took 170-350 ms
    that way and ~5 ms as one statement. Parallel unnests of equal-length lists line up row by row.
    """
    if not columns or not columns[0][1]:
        return
    select = ", ".join(f"unnest(?::{sql_type}[])" for sql_type, _ in columns)
    con.execute(f"{statement} SELECT {select}", [values for _, values in columns])


def _insert_raw(con: duckdb.DuckDBPyConnection, run_id: int, raw: list[RawRow]) -> None:
    _bulk_insert(
        con,
        "INSERT INTO raw_payloads (run_id, url, fetched_at, status, sha256, bytes, path, not_modified, scope)",
        [
            ("BIGINT", [run_id] * len(raw)),
            ("VARCHAR", [r.url for r in raw]),
            ("TIMESTAMPTZ", [r.fetched_at for r in raw]),
            ("INTEGER", [r.status for r in raw]),
            ("VARCHAR", [r.sha256 for r in raw]),
            ("BIGINT", [r.bytes for r in raw]),
            ("VARCHAR", [r.path for r in raw]),
            ("BOOLEAN", [r.not_modified for r in raw]),
            ("VARCHAR[]", [list(r.scope) for r in raw]),
        ],
    )


def _insert_scopes(con: duckdb.DuckDBPyConnection, run_id: int, provider: str, scopes: Mapping[str, int]) -> None:
    names = sorted(scopes)
    _bulk_insert(
        con,
        "INSERT INTO run_scopes (run_id, provider, scope, offers)",
        [
            ("BIGINT", [run_id] * len(names)),
            ("VARCHAR", [provider] * len(names)),
            ("VARCHAR", names),
            ("INTEGER", [int(scopes[n]) for n in names]),
        ],
    )


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
    except BaseException as exc:
        _rollback(con, exc)
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
        run_id = _insert_failure(
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
    # the newest parse decides what an offer is: a parser fix that corrects a GPU or a count reaches
    # the offers already stored (and with them every interval of their history)
    con.execute(
        """UPDATE offers o SET gpu = s.gpu, gpu_count = s.gpu_count, vcpus = s.vcpus, memory_gib = s.memory_gib
           FROM (SELECT DISTINCT ON (region, instance_type) region, instance_type, gpu, gpu_count, vcpus, memory_gib
                 FROM _stage ORDER BY region, instance_type, pricing) s
           WHERE o.provider = ? AND o.region = s.region AND o.instance_type = s.instance_type
             AND (o.gpu IS DISTINCT FROM s.gpu OR o.gpu_count IS DISTINCT FROM s.gpu_count
                  OR o.vcpus IS DISTINCT FROM s.vcpus OR o.memory_gib IS DISTINCT FROM s.memory_gib)""",
        [provider],
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _obs AS
           SELECT o.offer_id, s.* FROM _stage s
           JOIN offers o ON o.provider = ? AND o.region = s.region AND o.instance_type = s.instance_type""",
        [provider],
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _open AS
           SELECT p.offer_id, p.pricing, p.usd_per_hour, p.valid_from, o.region
           FROM prices p JOIN offers o USING (offer_id)
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
    # changed since an earlier observation: flag large moves (a same-time correction is not a move)
    flags = con.execute(
        """INSERT INTO price_flags
           SELECT ?, b.offer_id, b.pricing, x.usd_per_hour, b.usd_per_hour,
                  (b.usd_per_hour - x.usd_per_hour) / x.usd_per_hour, 'large_move'
           FROM _obs b JOIN _open x ON x.offer_id = b.offer_id AND x.pricing = b.pricing
           WHERE abs(b.usd_per_hour - x.usd_per_hour) / x.usd_per_hour > ? AND x.valid_from < ?""",
        [run_id, FLAG_CHANGE, obs],
    ).fetchall()[0]
    changed_row = con.execute(
        """SELECT count(*) FROM _obs b JOIN _open x ON x.offer_id = b.offer_id AND x.pricing = b.pricing
           WHERE abs(b.usd_per_hour - x.usd_per_hour) >= 1e-9"""
    ).fetchall()[0]
    new_row = con.execute(
        """SELECT count(*) FROM _obs b WHERE NOT EXISTS
           (SELECT 1 FROM prices p WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL)"""
    ).fetchall()[0]
    # changed: close what was in force since an earlier time ...
    con.execute(
        """UPDATE prices p SET valid_to = ?
           FROM _obs b WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL
           AND abs(p.usd_per_hour - b.usd_per_hour) >= 1e-9 AND p.valid_from < ?""",
        [obs, obs],
    )
    # ... and drop what an earlier load at this very time wrote: it is being corrected, never was in force
    con.execute(
        """DELETE FROM prices p USING _obs b
           WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL
           AND abs(p.usd_per_hour - b.usd_per_hour) >= 1e-9 AND p.valid_from = ?""",
        [obs],
    )
    # no open interval now: reopen the one an earlier load at this time closed, if it had this price ...
    con.execute(
        """UPDATE prices p SET valid_to = NULL, last_seen = ?, last_run = ?, source = b.source,
                  source_time = b.source_time, source_basis = b.source_basis, effective_since = b.effective_since
           FROM _obs b WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to = ?
           AND abs(p.usd_per_hour - b.usd_per_hour) < 1e-9
           AND NOT EXISTS (SELECT 1 FROM prices q WHERE q.offer_id = b.offer_id AND q.pricing = b.pricing
                           AND q.valid_to IS NULL)""",
        [obs, run_id, obs],
    )
    # ... else open a new one
    con.execute(
        """INSERT INTO prices (offer_id, pricing, usd_per_hour, valid_from, valid_to, last_seen, first_run, last_run,
                               source, source_time, source_basis, effective_since)
           SELECT b.offer_id, b.pricing, b.usd_per_hour, ?, NULL, ?, ?, ?, b.source, b.source_time, b.source_basis,
                  b.effective_since FROM _obs b
           WHERE NOT EXISTS (SELECT 1 FROM prices p WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing
                             AND p.valid_to IS NULL)""",
        [obs, obs, run_id, run_id],
    )
    # carried (source unchanged): confirm; missing otherwise: close (or drop, if it began at this time)
    carried = sorted(run.carried)
    con.execute("CREATE OR REPLACE TEMP TABLE _carried (region VARCHAR, pricing VARCHAR)")
    _bulk_insert(
        con,
        "INSERT INTO _carried",
        [("VARCHAR", [region for region, _ in carried]), ("VARCHAR", [pricing for _, pricing in carried])],
    )
    con.execute(
        """UPDATE prices p SET last_seen = ?, last_run = ?
           FROM _open x JOIN _carried c ON c.region = x.region AND c.pricing = x.pricing
           WHERE p.offer_id = x.offer_id AND p.pricing = x.pricing AND p.valid_to IS NULL
           AND NOT EXISTS (SELECT 1 FROM _obs b WHERE b.offer_id = x.offer_id AND b.pricing = x.pricing)""",
        [obs, run_id],
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _gone AS SELECT x.offer_id, x.pricing, x.valid_from FROM _open x
           WHERE NOT EXISTS (SELECT 1 FROM _obs b WHERE b.offer_id = x.offer_id AND b.pricing = x.pricing)
           AND NOT EXISTS (SELECT 1 FROM _carried c WHERE c.region = x.region AND c.pricing = x.pricing)"""
    )
    closed_row = con.execute("SELECT count(*) FROM _gone").fetchall()[0]
    con.execute(
        """UPDATE prices p SET valid_to = ? FROM _gone g
           WHERE p.offer_id = g.offer_id AND p.pricing = g.pricing AND p.valid_to IS NULL AND g.valid_from < ?""",
        [obs, obs],
    )
    con.execute(
        """DELETE FROM prices p USING _gone g
           WHERE p.offer_id = g.offer_id AND p.pricing = g.pricing AND p.valid_to IS NULL AND g.valid_from = ?""",
        [obs],
    )
    # an offer that only an earlier load at this time had seen, and that no longer has any price
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _orphans AS SELECT offer_id FROM offers o
           WHERE o.provider = ? AND o.first_seen = ?
           AND NOT EXISTS (SELECT 1 FROM prices p WHERE p.offer_id = o.offer_id)""",
        [provider, obs],
    )
    for table in ("market_stats", "price_flags", "offers"):
        con.execute(f"DELETE FROM {table} WHERE offer_id IN (SELECT offer_id FROM _orphans)")
    con.execute(
        """INSERT INTO market_stats (run_id, offer_id, pricing, observed_at, offer_count, min_usd, p10_usd,
                                     median_usd, max_usd, listings)
           SELECT ?, offer_id, pricing, ?, offer_count, min_usd, p10_usd, median_usd, max_usd, listings
           FROM _obs WHERE offer_count IS NOT NULL""",
        [run_id, obs],
    )
    yield_to_scrape(con, provider)  # a scraped price wins over imported history where both cover a time
    risk = run.spot_risk
    _bulk_insert(
        con,
        "INSERT OR REPLACE INTO spot_risk",
        [
            ("VARCHAR", [s.provider for s in risk]),
            ("VARCHAR", [s.region for s in risk]),
            ("VARCHAR", [s.instance_type for s in risk]),
            ("DOUBLE", [s.savings_pct for s in risk]),
            ("INTEGER", [s.bucket for s in risk]),
            ("VARCHAR", [s.label for s in risk]),
            ("DOUBLE", [s.interruption_pct_min for s in risk]),
            ("DOUBLE", [s.interruption_pct_max for s in risk]),
            ("TIMESTAMPTZ", [s.observed_at for s in risk]),
            ("BIGINT", [run_id] * len(risk)),
            ("VARCHAR", [s.source for s in risk]),
        ],
    )
    urls = sorted(run.validators)
    _bulk_insert(
        con,
        "INSERT OR REPLACE INTO http_validators",
        [
            ("VARCHAR", [provider] * len(urls)),
            ("VARCHAR", urls),
            ("VARCHAR", [run.validators[u][0] for u in urls]),
            ("VARCHAR", [run.validators[u][1] for u in urls]),
            ("TIMESTAMPTZ", [obs] * len(urls)),
        ],
    )
    keys = sorted(run.state)
    _bulk_insert(
        con,
        "INSERT OR REPLACE INTO provider_state",
        [
            ("VARCHAR", [provider] * len(keys)),
            ("VARCHAR", keys),
            ("VARCHAR", [run.state[k] for k in keys]),
            ("TIMESTAMPTZ", [obs] * len(keys)),
        ],
    )
    _insert_raw(con, run_id, run.raw)
    _insert_scopes(con, run_id, provider, run.scopes)
    n_flags = int(flags[0]) if flags else 0
    changed = (int(changed_row[0]) if changed_row else 0) + (int(new_row[0]) if new_row else 0)
    closed = int(closed_row[0]) if closed_row else 0
    offers = len({(r.region, r.instance_type) for r in run.prices})
    con.execute(
        """INSERT INTO scrape_runs (run_id, provider, mode, started_at, finished_at, observed_at, status, offers,
           prices_changed, prices_closed, unknown_items, flags, bytes_downloaded, seconds, error, source_urls,
           parser_version, notes, data_origin, figures_as_of)
           VALUES (?,?,?,?,?,?,'ok',?,?,?,?,?,?,?,NULL,?,?,?,?,?)""",
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
    for temp in ("_stage", "_obs", "_open", "_carried", "_gone", "_orphans"):
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
