"""The only code that writes prices: one transaction per provider run, all or nothing.

Prices are stored as intervals. A run that sees the same price as the open interval only moves its
``last_seen``; a changed price closes the interval and opens a new one; an offer missing from a
successful run is closed, unless its source was unchanged (``carried``) and so never re-read, or
its row was refused as invalid (``held``): then its open price is kept as it was, unconfirmed.
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
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
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
    # (region, instance_type, pricing) whose row was refused this run: the open price stays, unconfirmed
    held: set[tuple[str, str, str]] = field(default_factory=set)
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
    _insert_raw_many(con, [(run_id, raw)])


def _insert_raw_many(con: duckdb.DuckDBPyConnection, runs: list[tuple[int, list[RawRow]]]) -> None:
    rows = [(run_id, r) for run_id, raw in runs for r in raw]
    _bulk_insert(
        con,
        "INSERT INTO raw_payloads (run_id, url, fetched_at, status, sha256, bytes, path, not_modified, scope)",
        [
            ("BIGINT", [run_id for run_id, _ in rows]),
            ("VARCHAR", [r.url for _, r in rows]),
            ("TIMESTAMPTZ", [r.fetched_at for _, r in rows]),
            ("INTEGER", [r.status for _, r in rows]),
            ("VARCHAR", [r.sha256 for _, r in rows]),
            ("BIGINT", [r.bytes for _, r in rows]),
            ("VARCHAR", [r.path for _, r in rows]),
            ("BOOLEAN", [r.not_modified for _, r in rows]),
            ("VARCHAR[]", [list(r.scope) for _, r in rows]),
        ],
    )


def _insert_scopes(con: duckdb.DuckDBPyConnection, run_id: int, provider: str, scopes: Mapping[str, int]) -> None:
    _insert_scopes_many(con, [(run_id, provider, scopes)])


def _insert_scopes_many(con: duckdb.DuckDBPyConnection, runs: list[tuple[int, str, Mapping[str, int]]]) -> None:
    rows = [(run_id, provider, name, int(scopes[name])) for run_id, provider, scopes in runs for name in sorted(scopes)]
    _bulk_insert(
        con,
        "INSERT INTO run_scopes (run_id, provider, scope, offers)",
        [
            ("BIGINT", [row[0] for row in rows]),
            ("VARCHAR", [row[1] for row in rows]),
            ("VARCHAR", [row[2] for row in rows]),
            ("INTEGER", [row[3] for row in rows]),
        ],
    )


LISTING_TYPE = "STRUCT(usd_per_hour DOUBLE, country VARCHAR, reliability DOUBLE)"


def _stage(con: duckdb.DuckDBPyConnection, runs: list[RunRecord]) -> None:
    """Every record of ``runs`` into the temp table ``_stage``, as one statement over column lists.

    Columnar lists through ``unnest`` (no pyarrow: importing it cost more than the whole load).
    """
    records = [r for run in runs for r in run.prices]
    stats = [r.stats for r in records]
    columns: list[tuple[str, str, list[Any]]] = [
        ("provider", "VARCHAR", [r.provider for r in records]),
        ("region", "VARCHAR", [r.region for r in records]),
        ("instance_type", "VARCHAR", [r.instance_type for r in records]),
        ("gpu", "VARCHAR", [r.gpu for r in records]),
        ("gpu_count", "DOUBLE", [float(r.gpu_count) for r in records]),
        ("vcpus", "BIGINT", [r.vcpus for r in records]),
        ("memory_gib", "DOUBLE", [None if r.memory_gib is None else float(r.memory_gib) for r in records]),
        ("pricing", "VARCHAR", [r.pricing for r in records]),
        ("usd_per_hour", "DOUBLE", [float(r.usd_per_hour) for r in records]),
        ("source", "VARCHAR", [r.source for r in records]),
        ("offer_count", "BIGINT", [s.offer_count if s else None for s in stats]),
        ("min_usd", "DOUBLE", [s.min if s else None for s in stats]),
        ("p10_usd", "DOUBLE", [s.p10 if s else None for s in stats]),
        ("median_usd", "DOUBLE", [s.median if s else None for s in stats]),
        ("max_usd", "DOUBLE", [s.max if s else None for s in stats]),
        ("source_time", "TIMESTAMPTZ", [r.source_time for r in records]),
        ("source_basis", "VARCHAR", [r.source_basis for r in records]),
        ("effective_since", "TIMESTAMPTZ", [r.effective_since for r in records]),
        (
            "listings",
            f"{LISTING_TYPE}[]",
            [
                [
                    {"usd_per_hour": x.usd_per_hour, "country": x.country, "reliability": x.reliability}
                    for x in s.listings
                ]
                if s and s.listings
                else None
                for s in stats
            ],
        ),
    ]
    select = ", ".join(f"unnest(?::{sql_type}[]) AS {name}" for name, sql_type, _ in columns)
    con.execute(f"CREATE OR REPLACE TEMP TABLE _stage AS SELECT {select}", [values for _, _, values in columns])


def _check_keys(records: list[PriceRecord]) -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for r in records:
        if r.key in seen:
            raise WarehouseError(f"duplicate price key in one run: {r.key}")
        seen.add(r.key)


def load_run(con: duckdb.DuckDBPyConnection, run: RunRecord) -> LoadSummary:
    """Load one provider run in a single transaction. Raises after rolling back on any error."""
    return load_runs(con, [run])[0]


def load_runs(con: duckdb.DuckDBPyConnection, runs: list[RunRecord]) -> list[LoadSummary]:
    """Load several providers' runs in ONE transaction, set-based: all of them or none.

    The statements are the same whatever the number of runs (~30, each over every run's rows), so
    six providers cost about what one did. The price is that one provider's failure undoes the
    others': a caller that must keep them apart (``scraper.refresh``) retries each run alone with
    ``load_run`` when a batch fails. Summaries come back in the order of ``runs``.
    """
    providers = [run.provider for run in runs]
    if len(set(providers)) != len(providers):
        raise WarehouseError(f"one run per provider in a batch, got {', '.join(providers)}")
    for run in runs:
        _check_keys(run.prices)
        if any(r.provider != run.provider for r in run.prices):
            raise WarehouseError(f"{run.provider}: records from another provider in this run")
    if not runs:
        return []
    con.execute("BEGIN TRANSACTION")
    try:
        summaries = _load(con, runs)
        _test_delay()
        con.execute("COMMIT")
    except BaseException as exc:
        _rollback(con, exc)
    return summaries


def _load(con: duckdb.DuckDBPyConnection, runs: list[RunRecord]) -> list[LoadSummary]:
    """The body of ``load_runs``, inside its transaction. Every statement is keyed by provider.

    ``_runs`` holds each loaded run's provider, run id and observation time; ``_stage`` every record;
    ``_obs`` the records joined to their offers; ``_open`` the open intervals of the providers loaded.
    """
    newest = dict(
        con.execute(  # imported history does not count: an archive may reach past a replayed run
            """SELECT o.provider, max(p.last_seen) FROM prices p JOIN offers o USING (offer_id)
               WHERE list_contains(?::VARCHAR[], o.provider) AND p.archive_commit IS NULL GROUP BY o.provider""",
            [[run.provider for run in runs]],
        ).fetchall()
    )
    summaries: dict[str, LoadSummary] = {}
    loading: list[tuple[RunRecord, int]] = []
    for run in runs:
        held = newest.get(run.provider)
        obs = run.observed_at
        if held is not None and held > obs:
            note = (
                f"not loaded: recorded {obs:%Y-%m-%d %H:%M} UTC, older than prices already held ({held:%Y-%m-%d %H:%M})"
            )
            run_id = _insert_failure(
                con,
                provider=run.provider,
                mode=run.mode,
                started_at=run.started_at,
                error=note,
                status="skipped",
                seconds=run.seconds,
                bytes_downloaded=run.bytes_downloaded,
                source_urls=run.source_urls,
                parser_version=run.parser_version,
            )
            summaries[run.provider] = LoadSummary(run_id, "skipped", 0, 0, 0, 0, note)
        else:
            loading.append((run, _next_run_id(con)))
    if loading:
        counts = _load_prices(con, loading)
        for run, run_id in loading:
            changed, closed, n_flags = counts.get(run_id, (0, 0, 0))
            offers = len({(r.region, r.instance_type) for r in run.prices})
            summaries[run.provider] = LoadSummary(run_id, "ok", offers, changed, closed, n_flags, run.notes)
    return [summaries[run.provider] for run in runs]


def _load_prices(
    con: duckdb.DuckDBPyConnection, loading: list[tuple[RunRecord, int]]
) -> dict[int, tuple[int, int, int]]:
    """Offers, intervals, market stats and run records of ``loading``: (changed, closed, flags) per run id."""
    runs = [run for run, _ in loading]
    con.execute("CREATE OR REPLACE TEMP TABLE _runs (provider VARCHAR, run_id BIGINT, obs TIMESTAMPTZ)")
    _bulk_insert(
        con,
        "INSERT INTO _runs",
        [
            ("VARCHAR", [run.provider for run in runs]),
            ("BIGINT", [run_id for _, run_id in loading]),
            ("TIMESTAMPTZ", [run.observed_at for run in runs]),
        ],
    )
    _stage(con, runs)
    # new offers, numbered in (provider, region, instance_type) order whether loaded alone or together
    con.execute(
        """INSERT INTO offers (provider, region, instance_type, gpu, gpu_count, vcpus, memory_gib, first_seen)
           SELECT provider, region, instance_type, gpu, gpu_count, vcpus, memory_gib, obs FROM (
               SELECT DISTINCT ON (s.provider, s.region, s.instance_type) s.provider, s.region, s.instance_type,
                      s.gpu, s.gpu_count, s.vcpus, s.memory_gib, r.obs
               FROM _stage s JOIN _runs r USING (provider)
               WHERE NOT EXISTS (SELECT 1 FROM offers o WHERE o.provider = s.provider AND o.region = s.region
                                 AND o.instance_type = s.instance_type)
               ORDER BY s.provider, s.region, s.instance_type, s.pricing)
           ORDER BY provider, region, instance_type"""
    )
    # the newest parse decides what an offer is: a parser fix that corrects a GPU or a count reaches
    # the offers already stored (and with them every interval of their history)
    con.execute(
        """UPDATE offers o SET gpu = s.gpu, gpu_count = s.gpu_count, vcpus = s.vcpus, memory_gib = s.memory_gib
           FROM (SELECT DISTINCT ON (provider, region, instance_type) provider, region, instance_type, gpu, gpu_count,
                        vcpus, memory_gib
                 FROM _stage ORDER BY provider, region, instance_type, pricing) s
           WHERE o.provider = s.provider AND o.region = s.region AND o.instance_type = s.instance_type
             AND (o.gpu IS DISTINCT FROM s.gpu OR o.gpu_count IS DISTINCT FROM s.gpu_count
                  OR o.vcpus IS DISTINCT FROM s.vcpus OR o.memory_gib IS DISTINCT FROM s.memory_gib)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _obs AS
           SELECT o.offer_id, r.run_id, r.obs, s.* FROM _stage s JOIN _runs r USING (provider)
           JOIN offers o ON o.provider = s.provider AND o.region = s.region AND o.instance_type = s.instance_type"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _open AS
           SELECT p.offer_id, p.pricing, p.usd_per_hour, p.valid_from, o.region, o.instance_type, o.provider,
                  r.run_id, r.obs
           FROM prices p JOIN offers o USING (offer_id) JOIN _runs r ON r.provider = o.provider
           WHERE p.valid_to IS NULL"""
    )
    # unchanged: confirm, and the price's provenance is now this run's read of it: its URL, the source's time (a
    # republished file vouches for the price anew) and, through last_run, its data_origin -- keeping the first
    # run's URL beside the latest run's time and origin described no run (a replay's lambda.ai page "live")
    con.execute(
        """UPDATE prices p SET last_seen = b.obs, last_run = b.run_id, source = b.source, source_time = b.source_time,
                  source_basis = b.source_basis, effective_since = b.effective_since
           FROM _obs b WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL
           AND abs(p.usd_per_hour - b.usd_per_hour) < 1e-9"""
    )
    # changed since an earlier observation: flag large moves (a same-time correction is not a move)
    flagged = con.execute(
        """INSERT INTO price_flags
           SELECT b.run_id, b.offer_id, b.pricing, x.usd_per_hour, b.usd_per_hour,
                  (b.usd_per_hour - x.usd_per_hour) / x.usd_per_hour, 'large_move'
           FROM _obs b JOIN _open x ON x.offer_id = b.offer_id AND x.pricing = b.pricing
           WHERE abs(b.usd_per_hour - x.usd_per_hour) / x.usd_per_hour > ? AND x.valid_from < b.obs
           RETURNING run_id""",
        [FLAG_CHANGE],
    ).fetchall()
    # changed, or new: no open interval for the offer and pricing kind before this load
    changed = dict(
        con.execute(
            """SELECT b.run_id, count(*) FROM _obs b
               LEFT JOIN _open x ON x.offer_id = b.offer_id AND x.pricing = b.pricing
               WHERE x.offer_id IS NULL OR abs(b.usd_per_hour - x.usd_per_hour) >= 1e-9
               GROUP BY b.run_id"""
        ).fetchall()
    )
    # changed: close what was in force since an earlier time ...
    con.execute(
        """UPDATE prices p SET valid_to = b.obs
           FROM _obs b WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL
           AND abs(p.usd_per_hour - b.usd_per_hour) >= 1e-9 AND p.valid_from < b.obs"""
    )
    # ... and drop what an earlier load at this very time wrote: it is being corrected, never was in force
    con.execute(
        """DELETE FROM prices p USING _obs b
           WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to IS NULL
           AND abs(p.usd_per_hour - b.usd_per_hour) >= 1e-9 AND p.valid_from = b.obs"""
    )
    # no open interval now: reopen the one an earlier load at this time closed, if it had this price ...
    con.execute(
        """UPDATE prices p SET valid_to = NULL, last_seen = b.obs, last_run = b.run_id, source = b.source,
                  source_time = b.source_time, source_basis = b.source_basis, effective_since = b.effective_since
           FROM _obs b WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing AND p.valid_to = b.obs
           AND abs(p.usd_per_hour - b.usd_per_hour) < 1e-9
           AND NOT EXISTS (SELECT 1 FROM prices q WHERE q.offer_id = b.offer_id AND q.pricing = b.pricing
                           AND q.valid_to IS NULL)"""
    )
    # ... else open a new one
    con.execute(
        """INSERT INTO prices (offer_id, pricing, usd_per_hour, valid_from, valid_to, last_seen, first_run, last_run,
                               source, source_time, source_basis, effective_since)
           SELECT b.offer_id, b.pricing, b.usd_per_hour, b.obs, NULL, b.obs, b.run_id, b.run_id, b.source,
                  b.source_time, b.source_basis, b.effective_since FROM _obs b
           WHERE NOT EXISTS (SELECT 1 FROM prices p WHERE p.offer_id = b.offer_id AND p.pricing = b.pricing
                             AND p.valid_to IS NULL)"""
    )
    # carried (source unchanged): confirm; missing otherwise: close (or drop, if it began at this time)
    carried = sorted((run.provider, region, pricing) for run in runs for region, pricing in run.carried)
    con.execute("CREATE OR REPLACE TEMP TABLE _carried (provider VARCHAR, region VARCHAR, pricing VARCHAR)")
    _bulk_insert(
        con,
        "INSERT INTO _carried",
        [
            ("VARCHAR", [provider for provider, _, _ in carried]),
            ("VARCHAR", [region for _, region, _ in carried]),
            ("VARCHAR", [pricing for _, _, pricing in carried]),
        ],
    )
    # held (its row refused as invalid): neither confirmed nor closed -- a bad row is no news about the offer
    held = sorted((run.provider, *key) for run in runs for key in run.held)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _held (provider VARCHAR, region VARCHAR, instance_type VARCHAR, pricing VARCHAR)"
    )
    _bulk_insert(
        con,
        "INSERT INTO _held",
        [("VARCHAR", [row[i] for row in held]) for i in range(4)],
    )
    # carried: the source answered "unchanged" (a 304, an AWS publication already loaded) at the same URL; an
    # observed price's source_time is its last_seen (NULL stored), so it moves with the confirmation
    con.execute(
        """UPDATE prices p SET last_seen = x.obs, last_run = x.run_id
           FROM _open x JOIN _carried c ON c.provider = x.provider AND c.region = x.region AND c.pricing = x.pricing
           WHERE p.offer_id = x.offer_id AND p.pricing = x.pricing AND p.valid_to IS NULL
           AND NOT EXISTS (SELECT 1 FROM _obs b WHERE b.offer_id = x.offer_id AND b.pricing = x.pricing)
           AND NOT EXISTS (SELECT 1 FROM _held h WHERE h.provider = x.provider AND h.region = x.region
                           AND h.instance_type = x.instance_type AND h.pricing = x.pricing)"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _gone AS SELECT x.offer_id, x.pricing, x.valid_from, x.run_id, x.obs
           FROM _open x
           WHERE NOT EXISTS (SELECT 1 FROM _obs b WHERE b.offer_id = x.offer_id AND b.pricing = x.pricing)
           AND NOT EXISTS (SELECT 1 FROM _carried c WHERE c.provider = x.provider AND c.region = x.region
                           AND c.pricing = x.pricing)
           AND NOT EXISTS (SELECT 1 FROM _held h WHERE h.provider = x.provider AND h.region = x.region
                           AND h.instance_type = x.instance_type AND h.pricing = x.pricing)"""
    )
    closed = dict(con.execute("SELECT run_id, count(*) FROM _gone GROUP BY run_id").fetchall())
    # runs that kept an open price for a held offer: their change markers are not stored (see _insert_side_tables)
    holding = {
        run_id
        for (run_id,) in con.execute(
            """SELECT DISTINCT x.run_id FROM _open x JOIN _held h ON h.provider = x.provider AND h.region = x.region
               AND h.instance_type = x.instance_type AND h.pricing = x.pricing"""
        ).fetchall()
    }
    con.execute(
        """UPDATE prices p SET valid_to = g.obs FROM _gone g
           WHERE p.offer_id = g.offer_id AND p.pricing = g.pricing AND p.valid_to IS NULL AND g.valid_from < g.obs"""
    )
    con.execute(
        """DELETE FROM prices p USING _gone g
           WHERE p.offer_id = g.offer_id AND p.pricing = g.pricing AND p.valid_to IS NULL AND g.valid_from = g.obs"""
    )
    # an offer that only an earlier load at this time had seen, and that no longer has any price
    con.execute(
        """CREATE OR REPLACE TEMP TABLE _orphans AS SELECT offer_id FROM offers o
           JOIN _runs r ON o.provider = r.provider AND o.first_seen = r.obs
           WHERE NOT EXISTS (SELECT 1 FROM prices p WHERE p.offer_id = o.offer_id)"""
    )
    for table in ("market_stats", "price_flags", "offers"):
        con.execute(f"DELETE FROM {table} WHERE offer_id IN (SELECT offer_id FROM _orphans)")
    # a load at the time of an earlier one (a reparse) replaces that moment's market distributions: the superseded
    # parse's listings stayed beside the corrected ones and kept moving breakeven's rent median
    con.execute(
        """DELETE FROM market_stats m USING offers o, _runs r
           WHERE m.offer_id = o.offer_id AND o.provider = r.provider AND m.observed_at = r.obs"""
    )
    con.execute(
        """INSERT INTO market_stats (run_id, offer_id, pricing, observed_at, offer_count, min_usd, p10_usd,
                                     median_usd, max_usd, listings)
           SELECT run_id, offer_id, pricing, obs, offer_count, min_usd, p10_usd, median_usd, max_usd, listings
           FROM _obs WHERE offer_count IS NOT NULL"""
    )
    yield_to_scrape(con, [run.provider for run in runs])  # a scraped price wins over imported history
    _insert_side_tables(con, loading, holding)
    flags = Counter(run_id for (run_id,) in flagged)
    now = datetime.now(UTC)
    _bulk_insert(
        con,
        """INSERT INTO scrape_runs (run_id, provider, mode, started_at, finished_at, observed_at, status, offers,
           prices_changed, prices_closed, unknown_items, flags, bytes_downloaded, seconds, error, source_urls,
           parser_version, notes, data_origin, figures_as_of)""",
        [
            ("BIGINT", [run_id for _, run_id in loading]),
            ("VARCHAR", [run.provider for run in runs]),
            ("VARCHAR", [run.mode for run in runs]),
            ("TIMESTAMPTZ", [run.started_at for run in runs]),
            ("TIMESTAMPTZ", [now for _ in runs]),
            ("TIMESTAMPTZ", [run.observed_at for run in runs]),
            ("VARCHAR", ["ok" for _ in runs]),
            ("INTEGER", [len({(r.region, r.instance_type) for r in run.prices}) for run in runs]),
            ("INTEGER", [int(changed.get(run_id, 0)) for _, run_id in loading]),
            ("INTEGER", [int(closed.get(run_id, 0)) for _, run_id in loading]),
            ("INTEGER", [run.unknown_items for run in runs]),
            ("INTEGER", [flags[run_id] for _, run_id in loading]),
            ("BIGINT", [run.bytes_downloaded for run in runs]),
            ("DOUBLE", [float(run.seconds) for run in runs]),
            ("VARCHAR", [None for _ in runs]),
            ("VARCHAR[]", [list(run.source_urls) for run in runs]),
            ("VARCHAR", [run.parser_version for run in runs]),
            ("VARCHAR", [run.notes for run in runs]),
            ("VARCHAR", [run.data_origin for run in runs]),
            ("TIMESTAMPTZ", [run.figures_as_of for run in runs]),
        ],
    )
    con.execute(
        "DROP TABLE IF EXISTS _stage; DROP TABLE IF EXISTS _obs; DROP TABLE IF EXISTS _open; "
        "DROP TABLE IF EXISTS _carried; DROP TABLE IF EXISTS _held; DROP TABLE IF EXISTS _gone; "
        "DROP TABLE IF EXISTS _orphans; DROP TABLE IF EXISTS _runs"
    )
    return {run_id: (int(changed.get(run_id, 0)), int(closed.get(run_id, 0)), flags[run_id]) for _, run_id in loading}


def _insert_side_tables(
    con: duckdb.DuckDBPyConnection, loading: list[tuple[RunRecord, int]], holding: Collection[int] = ()
) -> None:
    """Spot risk, conditional-GET validators, change markers, raw payloads and source counts of every run.

    A run in ``holding`` kept an offer's previous price because its new row was refused: its validators and
    change markers are not stored, so the next run reads its documents again. With them, the same document
    would come back as unchanged, its source would be carried forward, and carrying confirms every open
    price of the source, the held one too, while the document still refuses it. The previous markers stay.
    """
    risk = [(s, run_id) for run, run_id in loading for s in run.spot_risk]
    _bulk_insert(
        con,
        "INSERT OR REPLACE INTO spot_risk",
        [
            ("VARCHAR", [s.provider for s, _ in risk]),
            ("VARCHAR", [s.region for s, _ in risk]),
            ("VARCHAR", [s.instance_type for s, _ in risk]),
            ("DOUBLE", [s.savings_pct for s, _ in risk]),
            ("INTEGER", [s.bucket for s, _ in risk]),
            ("VARCHAR", [s.label for s, _ in risk]),
            ("DOUBLE", [s.interruption_pct_min for s, _ in risk]),
            ("DOUBLE", [s.interruption_pct_max for s, _ in risk]),
            ("TIMESTAMPTZ", [s.observed_at for s, _ in risk]),
            ("BIGINT", [run_id for _, run_id in risk]),
            ("VARCHAR", [s.source for s, _ in risk]),
        ],
    )
    marking = [(run, run_id) for run, run_id in loading if run_id not in holding]
    validators = [(run, url) for run, _ in marking for url in sorted(run.validators)]
    _bulk_insert(
        con,
        "INSERT OR REPLACE INTO http_validators",
        [
            ("VARCHAR", [run.provider for run, _ in validators]),
            ("VARCHAR", [url for _, url in validators]),
            ("VARCHAR", [run.validators[url][0] for run, url in validators]),
            ("VARCHAR", [run.validators[url][1] for run, url in validators]),
            ("TIMESTAMPTZ", [run.observed_at for run, _ in validators]),
        ],
    )
    state = [(run, key) for run, _ in marking for key in sorted(run.state)]
    _bulk_insert(
        con,
        "INSERT OR REPLACE INTO provider_state",
        [
            ("VARCHAR", [run.provider for run, _ in state]),
            ("VARCHAR", [key for _, key in state]),
            ("VARCHAR", [run.state[key] for run, key in state]),
            ("TIMESTAMPTZ", [run.observed_at for run, _ in state]),
        ],
    )
    _insert_raw_many(con, [(run_id, run.raw) for run, run_id in loading])
    _insert_scopes_many(con, [(run_id, run.provider, run.scopes) for run, run_id in loading])


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
