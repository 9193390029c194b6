"""Publish the warehouse into Iceberg tables: incremental, idempotent, atomic per table.

How a publish decides what to write (``plan_*``), for each table of :mod:`warehouse.iceberg.tables`:

* **price_history, nightly (incremental)**: the open intervals (``valid_to IS NULL``) of every provider
  whose open set changed are rewritten (their partition is replaced: an Iceberg overwrite), and the
  intervals closed since the last publish — those that were published open, and those opened and
  closed since the last publish's watermark run — are appended to their month. A closed interval
  never changes, so no older partition is read or written. If the row count that would result does
  not equal the warehouse's (history imported or removed behind the watermark), the table is
  reconciled in full instead.
* **full (first publish, ``--full``, or drift)** and the small tables (offers, scrape_runs, gpus,
  spot_risk, every time): the published rows are compared with the warehouse's row by row, and only
  the partitions that differ are replaced.

Nothing differs: no commit at all, so publishing twice leaves every table on the same snapshot.
Each table's change is ONE Iceberg commit (a delete and an append snapshot made visible together by
one catalog swap): a failure before it leaves the table on its last good snapshot, readable as before.
Every snapshot written carries ``costopt.watermark-run-id`` (the warehouse's newest scrape run when it
was read) in its summary; after all tables are committed the namespace property
``costopt.published-watermark-run-id`` says which watermark the whole set reflects. Tables are
committed reference-first (gpus, offers, scrape_runs, spot_risk) and price_history last, so a reader
never meets a price whose offer or run is not there yet.

The DuckDB warehouse is opened read-only, and only for the seconds it takes to read it into Arrow.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse.errors import CostoptError
from warehouse.iceberg.catalog import IcebergTarget, PublishError, one_line, open_catalog
from warehouse.iceberg.tables import PRICE_HISTORY, TABLES, TableSpec

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

WATERMARK = "costopt.watermark-run-id"
PUBLISHED_AT = "costopt.published-at"
MODE = "costopt.publish-mode"
MAX_KEY = "costopt.max-key"  # insert-only tables: the largest key published
NS_WATERMARK = "costopt.published-watermark-run-id"
NS_PUBLISHED_AT = "costopt.published-at"
KEEP_SNAPSHOTS_DAYS = 30
TABLE_PROPERTIES = {
    "format-version": "2",
    "write.parquet.compression-codec": "zstd",
    # keep the metadata folder bounded: each commit writes a new metadata.json
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "20",
}

Log = Callable[[str], None]


@dataclass(slots=True)
class Plan:
    """What one table's commit will do: delete what ``delete`` matches, then append ``rows``."""

    spec: TableSpec
    mode: str  # incremental | full
    rows: pa.Table | None = None
    delete: BooleanExpression | None = None  # None: append only
    rows_removed: int = 0
    partitions: int = 0
    note: str | None = None

    @property
    def changes(self) -> bool:
        return self.rows is not None and (self.rows.num_rows > 0 or self.delete is not None)


@dataclass(frozen=True, slots=True)
class TableResult:
    table: str
    action: str  # written | unchanged
    mode: str
    rows_written: int
    rows_removed: int
    partitions: int
    total_rows: int
    bytes_written: int
    snapshot_id: int | None
    metadata_location: str
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "action": self.action,
            "mode": self.mode,
            "rows_written": self.rows_written,
            "rows_removed": self.rows_removed,
            "partitions": self.partitions,
            "total_rows": self.total_rows,
            "bytes_written": self.bytes_written,
            "snapshot_id": self.snapshot_id,
            "metadata_location": self.metadata_location,
            "note": self.note,
        }


@dataclass(slots=True)
class PublishReport:
    target: str
    namespace: str
    watermark: int
    tables: list[TableResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return any(t.action == "written" for t in self.tables)


# -- the warehouse side ---------------------------------------------------------------------------


def _read(con: duckdb.DuckDBPyConnection, spec: TableSpec, sql: str, params: list[object] | None = None) -> pa.Table:
    table = con.sql(sql, params=params).to_arrow_table() if params else con.sql(sql).to_arrow_table()
    return table.select(list(spec.column_names)).cast(spec.arrow_schema())


def _watermark(con: duckdb.DuckDBPyConnection) -> int:
    row = con.execute("SELECT coalesce(max(run_id), 0), count(*) FILTER (status = 'ok') FROM scrape_runs").fetchall()[0]
    if not row or not row[1]:
        raise PublishError("nothing to publish: the warehouse holds no prices yet", hint="run `costopt refresh` first")
    return int(row[0])


# -- the Iceberg side -----------------------------------------------------------------------------


def ensure_table(catalog: Catalog, namespace: str, spec: TableSpec) -> Table:
    """Create the table on first use; add columns the spec has and the table lacks (schema evolution)."""
    from pyiceberg.exceptions import NoSuchTableError

    identifier = f"{namespace}.{spec.name}"
    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError:
        schema = spec.iceberg_schema()
        table = catalog.create_table_if_not_exists(
            identifier,
            schema=schema,
            partition_spec=spec.partition_spec(schema),
            sort_order=spec.sort_order(schema),
            properties={**TABLE_PROPERTIES, "comment": spec.doc},
        )
    have = set(table.schema().column_names)
    missing = [c for c in spec.columns if c.name not in have]
    if missing:
        from warehouse.iceberg.tables import _iceberg_type

        with table.update_schema() as update:
            for c in missing:
                kind, _ = _iceberg_type(c.kind, 1)
                update.add_column(c.name, kind, doc=c.doc)  # type: ignore[arg-type]
        table = catalog.load_table(identifier)
    return table


def _summary(table: Table) -> dict[str, str]:
    snapshot = table.current_snapshot()
    if snapshot is None or snapshot.summary is None:
        return {}
    return {k: str(v) for k, v in snapshot.summary.additional_properties.items()}


def _published(table: Table, spec: TableSpec, row_filter: BooleanExpression | None = None) -> pa.Table:
    import pyarrow as pa

    if table.current_snapshot() is None:
        return spec.arrow_schema().empty_table()
    scan = (
        table.scan(selected_fields=spec.column_names)
        if row_filter is None
        else table.scan(row_filter=row_filter, selected_fields=spec.column_names)
    )
    data = scan.to_arrow()
    return pa.Table.from_arrays(
        [data.column(c).cast(t) for c, t in zip(spec.column_names, spec.arrow_schema().types, strict=True)],
        schema=spec.arrow_schema(),
    )


# -- planning (Arrow in, Plan out; an in-memory DuckDB does the set arithmetic) -------------------


def scratch() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB for the diffs, in UTC (Iceberg's month transform is in UTC)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'").fetchall()
    return con


def _keys(spec: TableSpec) -> list[str]:
    out = []
    for i, (column, transform) in enumerate(spec.partition):
        out.append(f"{column} AS __k{i}" if transform == "identity" else f"date_trunc('month', {column}) AS __k{i}")
    return out


def expr(kind: str, *args: object) -> BooleanExpression:
    """``pyiceberg.expressions.<kind>(*args)``: its pydantic signatures (``term=``, ``literal=``) defeat mypy."""
    from pyiceberg import expressions

    made: BooleanExpression = getattr(expressions, kind)(*args)
    return made


def _partition_filter(spec: TableSpec, values: tuple[object, ...]) -> BooleanExpression:
    from pyiceberg.expressions import And

    parts: list[BooleanExpression] = []
    for (column, transform), value in zip(spec.partition, values, strict=True):
        if value is None:
            parts.append(expr("IsNull", column))
        elif transform == "identity":
            parts.append(expr("EqualTo", column, value))
        else:
            start = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
            start = start.astimezone(UTC)
            end = datetime(start.year + (start.month == 12), start.month % 12 + 1, 1, tzinfo=UTC)
            parts.append(expr("GreaterThanOrEqual", column, start.isoformat()))
            parts.append(expr("LessThan", column, end.isoformat()))
    return reduce(And, parts) if len(parts) > 1 else parts[0]


def _any_of(filters: list[BooleanExpression]) -> BooleanExpression:
    from pyiceberg.expressions import Or

    return reduce(Or, filters) if len(filters) > 1 else filters[0]


def _count_partitions(con: duckdb.DuckDBPyConnection, spec: TableSpec, rows: pa.Table) -> int:
    if not spec.partition:
        return 1 if rows.num_rows else 0
    con.register("_rows", rows)
    try:
        n = con.execute(f"SELECT count(*) FROM (SELECT DISTINCT {', '.join(_keys(spec))} FROM _rows)").fetchall()[0]
    finally:
        con.unregister("_rows")
    return int(n[0])


def plan_full(
    con: duckdb.DuckDBPyConnection, spec: TableSpec, warehouse_rows: pa.Table, published_rows: pa.Table, *, empty: bool
) -> Plan:
    """Replace exactly the partitions whose rows differ (all of an unpartitioned table, if any differ)."""
    from pyiceberg.expressions import AlwaysTrue

    if empty:
        return Plan(spec, "full", warehouse_rows, None, 0, _count_partitions(con, spec, warehouse_rows))
    con.register("w", warehouse_rows)
    con.register("p", published_rows)
    try:
        cols = ", ".join(spec.column_names)
        diff = (
            f"(SELECT {cols} FROM w EXCEPT ALL SELECT {cols} FROM p) "
            f"UNION ALL (SELECT {cols} FROM p EXCEPT ALL SELECT {cols} FROM w)"
        )
        if not spec.partition:
            differs = con.execute(f"SELECT count(*) FROM ({diff})").fetchall()[0]
            if not differs[0]:
                return Plan(spec, "full")
            return Plan(spec, "full", warehouse_rows, AlwaysTrue(), published_rows.num_rows, 1)
        keys = ", ".join(_keys(spec))
        knames = [f"__k{i}" for i in range(len(spec.partition))]
        changed = con.execute(f"SELECT DISTINCT {keys} FROM ({diff}) ORDER BY ALL").fetchall()
        if not changed:
            return Plan(spec, "full")
        con.execute(f"CREATE OR REPLACE TEMP TABLE _changed AS SELECT DISTINCT {keys} FROM ({diff})").fetchall()
        match = " AND ".join(f"x.{k} IS NOT DISTINCT FROM c.{k}" for k in knames)
        rows = con.sql(
            f"SELECT {cols} FROM (SELECT *, {keys} FROM w) x WHERE EXISTS (SELECT 1 FROM _changed c WHERE {match}) "
            f"ORDER BY {', '.join(spec.sort)}"
        ).to_arrow_table()
        removed = con.execute(
            f"SELECT count(*) FROM (SELECT {keys} FROM p) x WHERE EXISTS (SELECT 1 FROM _changed c WHERE {match})"
        ).fetchall()[0]
        con.execute("DROP TABLE _changed").fetchall()
    finally:
        con.unregister("w")
        con.unregister("p")
    delete = _any_of([_partition_filter(spec, tuple(values)) for values in changed])
    return Plan(spec, "full", rows.cast(spec.arrow_schema()), delete, int(removed[0]), len(changed))


def plan_append(
    con: duckdb.DuckDBPyConnection, spec: TableSpec, new_rows: pa.Table, *, published_total: int, warehouse_total: int
) -> Plan | None:
    """An insert-only table: append the rows above the largest published key (None: counts disagree)."""
    if published_total + new_rows.num_rows != warehouse_total:
        return None
    if not new_rows.num_rows:
        return Plan(spec, "incremental")
    return Plan(spec, "incremental", new_rows, None, 0, _count_partitions(con, spec, new_rows))


def plan_price_history(
    con: duckdb.DuckDBPyConnection,
    warehouse_rows: pa.Table,
    published_open: pa.Table,
    *,
    published_total: int,
    warehouse_total: int,
) -> Plan | None:
    """The nightly plan: replace changed providers' open partitions, append newly closed intervals.

    ``warehouse_rows`` holds the warehouse's open intervals plus the closed candidates (see
    :func:`read_price_history`). Returns None when the result would not match the warehouse's row
    count: then the caller reconciles in full.
    """
    from pyiceberg.expressions import And

    spec = PRICE_HISTORY
    cols = ", ".join(spec.column_names)
    con.register("w", warehouse_rows)
    con.register("p", published_open)
    try:
        providers = [
            r[0]
            for r in con.execute(
                f"""SELECT DISTINCT provider FROM (
                      (SELECT {cols} FROM w WHERE valid_to IS NULL EXCEPT ALL SELECT {cols} FROM p)
                      UNION ALL (SELECT {cols} FROM p EXCEPT ALL SELECT {cols} FROM w WHERE valid_to IS NULL))
                    ORDER BY provider"""
            ).fetchall()
        ]
        changed = ", ".join("'" + p.replace("'", "''") + "'" for p in providers) or "NULL"
        rows = con.sql(
            f"""SELECT {cols} FROM w WHERE valid_to IS NOT NULL OR provider IN ({changed})
                ORDER BY {", ".join(spec.sort)}"""
        ).to_arrow_table()
        removed = int(con.execute(f"SELECT count(*) FROM p WHERE provider IN ({changed})").fetchall()[0][0])
        closed, closed_parts = con.execute(
            "SELECT count(*), count(DISTINCT (provider, date_trunc('month', valid_to))) FROM w "
            "WHERE valid_to IS NOT NULL"
        ).fetchall()[0]
    finally:
        con.unregister("w")
        con.unregister("p")
    if published_total - removed + rows.num_rows != warehouse_total:
        return None
    if not providers and not closed:
        return Plan(spec, "incremental")
    delete = (
        _any_of([And(expr("EqualTo", "provider", p), expr("IsNull", "valid_to")) for p in providers])
        if providers
        else None
    )
    return Plan(
        spec, "incremental", rows.cast(spec.arrow_schema()), delete, removed, len(providers) + int(closed_parts)
    )


def read_price_history(
    con: duckdb.DuckDBPyConnection, published_open: pa.Table, watermark: int
) -> tuple[pa.Table, int]:
    """Open intervals; closed ones that were published open or began after ``watermark``; the total.

    The three parts are disjoint: a published open interval began at or before the watermark.
    """
    spec = PRICE_HISTORY
    cols = ", ".join(spec.column_names)
    con.register("_published_open", published_open.select(["offer_id", "pricing", "valid_from"]))
    try:
        rows = _read(
            con,
            spec,
            f"""SELECT {cols} FROM price_history WHERE valid_to IS NULL
                UNION ALL
                SELECT {cols} FROM price_history SEMI JOIN _published_open USING (offer_id, pricing, valid_from)
                WHERE valid_to IS NOT NULL
                UNION ALL
                SELECT {cols} FROM price_history WHERE valid_to IS NOT NULL AND first_run > ?""",
            [watermark],
        )
    finally:
        con.unregister("_published_open")
    total = con.execute("SELECT count(*) FROM price_history").fetchall()[0]
    return rows, int(total[0])


# -- the publish ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Table:
    """One table during a publish: the Iceberg side, what the warehouse holds, and the plan."""

    spec: TableSpec
    table: Table
    summary: dict[str, str]
    incremental: bool
    published: pa.Table | None = None  # all rows (full) or the open intervals (price_history)
    rows: pa.Table | None = None  # warehouse rows: all (full) or the candidates (incremental)
    warehouse_total: int = 0
    max_key: int | None = None
    note: str | None = None
    watermark: int = 0  # the warehouse's newest run when these rows were read

    @property
    def empty(self) -> bool:
        return self.table.current_snapshot() is None

    @property
    def published_total(self) -> int:
        return int(self.summary.get("total-records", "0"))


def publish(
    db_path: Path,
    target: IcebergTarget,
    *,
    full: bool = False,
    keep_snapshots_days: int = KEEP_SNAPSHOTS_DAYS,
    log: Log | None = None,
) -> PublishReport:
    """Publish every table of :data:`TABLES` to ``target``; raise :class:`PublishError` on failure."""
    say = log or (lambda _line: None)
    began = time.perf_counter()
    catalog = open_catalog(target)
    stage = "opening the namespace"
    try:
        catalog.create_namespace_if_not_exists(target.namespace)
        stage = "loading the tables"
        states = []
        for spec in TABLES:
            table = ensure_table(catalog, target.namespace, spec)
            summary = _summary(table)
            ready = WATERMARK in summary and (spec.append_key is None or MAX_KEY in summary)
            incremental = not full and ready and (spec is PRICE_HISTORY or spec.append_key is not None)
            state = _Table(spec, table, summary, incremental)
            if not full and not ready and table.current_snapshot() is not None:
                state.note = "last commit not by costopt: reconciled in full"
            states.append(state)
        stage = "reading the published tables"
        for st in states:
            if st.spec is PRICE_HISTORY and st.incremental:
                st.published = _published(st.table, st.spec, expr("IsNull", "valid_to"))
            elif not st.incremental:
                st.published = _published(st.table, st.spec)
    except CostoptError:
        raise
    except Exception as exc:
        raise PublishError(f"publish failed while {stage} ({target.describe()}): {one_line(exc)}") from None

    try:
        watermark = _read_warehouse(db_path, states)
        plans = _plans(db_path, states, say)
    except CostoptError:
        raise
    except Exception as exc:  # a query the warehouse no longer answers, an unreadable table file
        raise PublishError(f"publish failed while comparing the warehouse with the tables: {one_line(exc)}") from None

    report = PublishReport(target.describe(), target.namespace, watermark)
    now = datetime.now(UTC)
    for st, plan in plans:
        props = {WATERMARK: str(st.watermark), PUBLISHED_AT: now.isoformat(timespec="seconds"), MODE: plan.mode}
        if st.max_key is not None:
            props[MAX_KEY] = str(st.max_key)
        result = _commit(st.table, plan, props, now - timedelta(days=keep_snapshots_days), target)
        report.tables.append(result)
        say(_line(result))
    if report.changed:
        try:
            catalog.update_namespace_properties(
                target.namespace,
                updates={NS_WATERMARK: str(watermark), NS_PUBLISHED_AT: now.isoformat(timespec="seconds")},
            )
        except Exception as exc:
            raise PublishError(
                f"every table was published, but recording the watermark on namespace {target.namespace} failed: "
                f"{one_line(exc)}"
            ) from None
    report.seconds = time.perf_counter() - began
    return report


def _plans(db_path: Path, states: list[_Table], say: Log) -> list[tuple[_Table, Plan]]:
    con = scratch()
    plans: list[tuple[_Table, Plan]] = []
    try:
        for st in states:
            plan = _plan(con, st)
            if plan is None:
                say(
                    f"{st.spec.name}: the published table has drifted from the warehouse ({st.published_total} rows "
                    f"published, {st.warehouse_total} in the warehouse); reconciling in full"
                )
                st.incremental = False
                st.published = _published(st.table, st.spec)
                _read_warehouse(db_path, [st])
                plan = _plan(con, st)
                assert plan is not None
                st.note = "drift: reconciled in full"
            plan.note = st.note
            plans.append((st, plan))
    finally:
        con.close()
    return plans


def _plan(con: duckdb.DuckDBPyConnection, st: _Table) -> Plan | None:
    assert st.rows is not None
    if not st.incremental:
        assert st.published is not None
        return plan_full(con, st.spec, st.rows, st.published, empty=st.empty)
    if st.spec is PRICE_HISTORY:
        assert st.published is not None
        return plan_price_history(
            con, st.rows, st.published, published_total=st.published_total, warehouse_total=st.warehouse_total
        )
    return plan_append(con, st.spec, st.rows, published_total=st.published_total, warehouse_total=st.warehouse_total)


def _read_warehouse(db_path: Path, states: list[_Table]) -> int:
    """Fill each state's warehouse rows from ONE read-only connection, held only while reading."""
    from warehouse.db import open_warehouse

    con = open_warehouse(db_path, read_only=True)
    try:
        con.begin()  # one consistent view of the file for every table
        watermark = _watermark(con)
        for st in states:
            st.watermark = watermark
            spec = st.spec
            if not st.incremental:
                st.rows = _read(con, spec, spec.select_sql())
                st.warehouse_total = st.rows.num_rows
            elif spec is PRICE_HISTORY:
                assert st.published is not None
                st.rows, st.warehouse_total = read_price_history(con, st.published, int(st.summary[WATERMARK]))
            else:
                assert spec.append_key is not None
                st.rows = _read(con, spec, spec.select_sql(f"{spec.append_key} > ?"), [int(st.summary[MAX_KEY])])
                st.warehouse_total = int(con.execute(f"SELECT count(*) FROM {spec.source}").fetchall()[0][0])
            if spec.append_key is not None:
                top = con.execute(f"SELECT max({spec.append_key}) FROM {spec.source}").fetchall()[0][0]
                st.max_key = int(top) if top is not None else 0
        con.commit()
    finally:
        con.close()
    return watermark


def _commit(
    table: Table, plan: Plan, props: dict[str, str], expire_before: datetime, target: IcebergTarget
) -> TableResult:
    from pyiceberg.exceptions import CommitFailedException

    name = f"{target.namespace}.{plan.spec.name}"
    before = table.current_snapshot()
    if not plan.changes:
        return TableResult(
            plan.spec.name,
            "unchanged",
            plan.mode,
            0,
            0,
            0,
            int(_summary(table).get("total-records", "0")),
            0,
            before.snapshot_id if before else None,
            table.metadata_location,
            plan.note,
        )
    assert plan.rows is not None
    try:
        with table.transaction() as tx:
            if plan.delete is not None and plan.rows.num_rows == 0:
                tx.delete(plan.delete, snapshot_properties=props)
            elif plan.delete is not None:
                tx.overwrite(plan.rows, overwrite_filter=plan.delete, snapshot_properties=props)
            else:
                tx.append(plan.rows, snapshot_properties=props)
    except CommitFailedException as exc:
        raise PublishError(
            f"{name}: another writer committed first ({one_line(exc)}); this table keeps its last snapshot",
            hint="run the publish again",
        ) from None
    except Exception as exc:
        raise PublishError(f"{name}: publish failed, the table keeps its last snapshot: {one_line(exc)}") from None
    new_ids = _new_snapshots(table, before.snapshot_id if before else None)
    written = sum(int(_summary_of(table, s).get("added-files-size", "0")) for s in new_ids)
    _expire(table, expire_before, name)
    current = table.current_snapshot()
    return TableResult(
        plan.spec.name,
        "written",
        plan.mode,
        plan.rows.num_rows,
        plan.rows_removed,
        plan.partitions,
        int(_summary(table).get("total-records", "0")),
        written,
        current.snapshot_id if current else None,
        table.metadata_location,
        plan.note,
    )


def _new_snapshots(table: Table, before: int | None) -> list[int]:
    """Snapshot ids added since ``before`` on the main branch (walking parents from the head)."""
    out = []
    snapshot = table.current_snapshot()
    while snapshot is not None and snapshot.snapshot_id != before:
        out.append(snapshot.snapshot_id)
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return out


def _summary_of(table: Table, snapshot_id: int) -> dict[str, str]:
    snapshot = table.snapshot_by_id(snapshot_id)
    if snapshot is None or snapshot.summary is None:
        return {}
    return {k: str(v) for k, v in snapshot.summary.additional_properties.items()}


def _expire(table: Table, cutoff: datetime, name: str) -> None:
    """Drop snapshots older than ``cutoff`` from the metadata (the current one always stays).

    Without this every nightly commit would carry the summaries of every earlier one. Data files only
    the expired snapshots referenced stay on storage (pyiceberg does not delete them); an engine's
    orphan-file cleanup reclaims them.
    """
    old = [s for s in table.snapshots() if s.timestamp_ms < cutoff.timestamp() * 1000]
    current = table.current_snapshot()
    if not old or (current is not None and all(s.snapshot_id == current.snapshot_id for s in old)):
        return
    try:
        table.maintenance.expire_snapshots().older_than(cutoff).commit()
    except Exception as exc:  # the data is published; an expiry can wait for the next night
        raise PublishError(f"{name}: published, but expiring old snapshots failed: {one_line(exc)}") from None


def _line(result: TableResult) -> str:
    if result.action == "unchanged":
        return f"{result.table}: unchanged ({result.total_rows} rows)"
    return (
        f"{result.table}: {result.mode} publish wrote {result.rows_written} rows in {result.partitions} "
        f"partition(s), replaced {result.rows_removed}, {result.bytes_written / 1024:.0f} KiB of data; "
        f"{result.total_rows} rows" + (f" ({result.note})" if result.note else "")
    )


def _stamp() -> str:
    return f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"


def publisher(db_path: Path, target: IcebergTarget) -> Callable[[Log], str | None]:
    """A callback for the nightly job: publish, log a line per table; return None or a one-line failure."""

    def run(log: Log) -> str | None:
        try:
            report = publish(db_path, target, log=lambda line: log(f"{_stamp()} publish {line}"))
        except CostoptError as exc:
            return f"publish to {target.describe()} failed: {exc.one_line()}"
        except Exception as exc:  # a bug must not take the schedule down, and must be seen
            return f"publish to {target.describe()} failed: {one_line(exc)}"
        log(
            f"{_stamp()} publish ok: {target.describe()} at run {report.watermark}, "
            f"{sum(t.action == 'written' for t in report.tables)} table(s) changed, {report.seconds:.1f}s"
        )
        return None

    return run
