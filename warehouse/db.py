"""Opening the warehouse: locks, migrations, the session time zone, and refusing files we must not touch.

DuckDB lets one process write a file at a time, and a read-write holder blocks readers too. So the
writers (refresh, schedule) open the file only for the seconds of a load, and everybody retries a
held lock with backoff for a bounded time before giving up with a message naming the holder.

Every connection pins DuckDB's session ``TimeZone`` to UTC. DuckDB otherwise takes the host's zone,
and then ``date_trunc('day', ...)``, ``::DATE``, ``strftime`` and the Python datetimes it returns
all shift: day buckets, labels and export partitions would depend on where the command ran.

The commands that only read (``prices``, ``sql``, ``history``, ``plan``...) open with ``core=True``: the
connection comes from DuckDB's compiled engine module (``_duckdb``) without importing the ``duckdb``
Python package around it. That package's relation and expression layers and its version lookup
(``importlib.metadata``) take ~0.1 s to import in DuckDB 2.0, most of a read command's time, and a
read path uses none of them: ``execute``, ``fetchall``, ``description``, ``interrupt`` and ``close`` are
the engine's own methods, and values convert to Python in the engine either way. The connection is the
same class: should anything later import ``duckdb``, the package adds its methods to it as usual. Where
the engine module is missing or differs (other DuckDB releases), the package is used.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse.errors import NeedsMigrating, WarehouseError, WarehouseLocked, from_duckdb, is_duckdb_error
from warehouse.migrations import LATEST, MIGRATIONS

if TYPE_CHECKING:
    import duckdb

LOCK_WAIT_SECONDS = 30.0
SESSION_TIMEZONE = "UTC"
_OPEN: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()  # for interrupt_all


def interrupt_all() -> None:
    """Interrupt whatever query each connection of this process is running (thread-safe).

    DuckDB notices a Ctrl-C on its own only between large units of work, which can take seconds
    to minutes (a scan of a big range); ``interrupt()`` from another thread stops it at once.
    """
    for con in list(_OPEN):
        with contextlib.suppress(Exception):
            con.interrupt()


def close_all() -> None:
    """Close every connection of this process still open (a process about to leave without its teardown)."""
    for con in list(_OPEN):
        with contextlib.suppress(Exception):
            con.close()


def _is_lock_error(message: str) -> bool:
    return "lock" in message.lower() and ("conflicting" in message.lower() or "could not set" in message.lower())


def _holder(message: str) -> str:
    match = re.search(r"held in (.+?) \(PID (\d+)\)", message)
    return f"{match.group(1)} (PID {match.group(2)})" if match else "another process"


def engine(core: bool = False) -> Any:
    """The module connections are opened with: the ``duckdb`` package, or with ``core`` (read paths) its
    compiled engine alone when the package is not loaded yet and the engine has what a reader calls."""
    if core and "duckdb" not in sys.modules:
        try:
            import _duckdb
        except ImportError:
            pass
        else:
            if all(hasattr(_duckdb, name) for name in _CORE_NEEDS):
                return _duckdb
    import duckdb

    return duckdb


_CORE_NEEDS = ("connect", "Error", "CatalogException", "DuckDBPyConnection")


def connect(
    path: Path,
    *,
    read_only: bool = False,
    wait_seconds: float | None = None,
    on_wait: object = None,
    core: bool = False,
) -> duckdb.DuckDBPyConnection:
    """Open ``path``, retrying while another process holds it, never creating it in read-only mode.

    ``core``: a read-only connection for plain SQL, without importing the ``duckdb`` package (module docstring).
    """
    duckdb = engine(core and read_only)

    wait = LOCK_WAIT_SECONDS if wait_seconds is None else wait_seconds
    if read_only and not path.exists():
        raise WarehouseError(f"no warehouse at {path}")
    if path.exists() and path.is_dir():
        raise WarehouseError(f"{path} is a directory, not a DuckDB file")
    if not read_only:
        _make_directory(path)
    deadline = time.monotonic() + wait
    delay = 0.05
    told = False
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as exc:
            message = str(exc)
            if _is_lock_error(message):
                if time.monotonic() >= deadline:
                    raise WarehouseLocked(
                        f"{path} is busy: held by {_holder(message)} for more than {wait:.0f}s",
                        hint="another costopt command holds it: a refresh loading, or a long query; try again shortly",
                    ) from None
                if callable(on_wait) and not told:
                    on_wait(f"waiting for {path}: held by {_holder(message)}")
                    told = True
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            if "not a valid DuckDB database" in message or "Serialization" in type(exc).__name__:
                raise WarehouseError(
                    f"{path} is not a costopt warehouse (not a valid DuckDB file); left untouched"
                ) from None
            damaged = from_duckdb(exc, path)
            if damaged.hint:
                raise damaged from None
            raise WarehouseError(f"cannot open {path}: {message.splitlines()[0]}") from None
        try:
            con.execute(f"SET TimeZone = '{SESSION_TIMEZONE}'")
        except duckdb.Error as exc:
            con.close()
            raise from_duckdb(exc, path) from None
        _OPEN.add(con)
        return con


def _make_directory(path: Path) -> None:
    """Create the directory the warehouse ``path`` goes in, or say in one line why it cannot be.

    A file where a directory should be (``COSTOPT_DATA_DIR`` naming a file), a directory that cannot be written or
    created (``HOME=/proc``) are settings to fix, not bugs: they used to reach the CLI's catch-all as
    ``unexpected FileExistsError``.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            why = f"{blocker} is a file, not a directory"
        else:
            why = (exc.strerror or type(exc).__name__).lower()
        raise WarehouseError(
            f"cannot create the directory {path.parent} for the warehouse: {why}",
            hint="choose another place with --db, COSTOPT_DB or COSTOPT_DATA_DIR",
        ) from None


def _scalar(con: duckdb.DuckDBPyConnection, sql: str) -> object:
    """One value, fetched to the end: DuckDB 2.0 refuses relation-API work (``con.sql``) on a
    connection whose last result was not read to its end, so nothing here leaves one open."""
    rows = con.execute(sql).fetchall()
    return rows[0][0] if rows else None


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version recorded in the warehouse (0: an empty file).

    The record is read first and the catalog consulted only when there is none: the first query on
    ``information_schema`` costs ~20 ms on every open, reading ``schema_migrations`` ~1 ms.
    """
    try:
        version = _scalar(con, "SELECT coalesce(max(version), 0) FROM schema_migrations")
    except Exception as exc:
        if type(exc).__name__ != "CatalogException" or not is_duckdb_error(exc):
            raise
        if _scalar(con, "SELECT count(*) FROM information_schema.tables"):
            raise WarehouseError("the database has tables but no costopt schema record; refusing to touch it") from None
        return 0
    return int(version) if isinstance(version, int) else 0


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Bring the schema up to date in one transaction; refuse a database newer than this code."""
    version = schema_version(con)
    if version > LATEST:
        raise WarehouseError(
            f"the warehouse has schema version {version}, newer than this costopt understands ({LATEST})",
            hint="upgrade costopt",
        )
    if version == LATEST:
        return version
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)"
        )
        for number, name, sql in MIGRATIONS:
            if number > version:
                con.execute(sql)
                con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)", [number, name, datetime.now(UTC)])
        if version == 0:
            _load_gpus(con)
        con.execute("COMMIT")
    except BaseException:  # Ctrl-C included: a migration is applied whole or not at all
        with contextlib.suppress(Exception):
            con.execute("ROLLBACK")
        raise
    return LATEST


def _load_gpus(con: duckdb.DuckDBPyConnection) -> None:
    from warehouse.gpus import catalog

    refresh_gpus(con, catalog().specs)


def refresh_gpus(con: duckdb.DuckDBPyConnection, specs: list) -> None:  # type: ignore[type-arg]
    """Replace the ``gpus`` reference table with the shipped one (it is reference data, not history).

    Columns are named: ``fp16_tflops`` (migration 6) sits last in the table but beside ``bf16_tflops``
    in the CSV. Only the columns the table has are written, so a warehouse opened at an older schema
    version (a test of an old migration, a downgrade check) still gets its reference rows."""
    from warehouse.gpus import CSV_COLUMNS

    con.execute("DELETE FROM gpus")
    if not specs:
        return
    types = dict(
        con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = 'gpus'").fetchall()
    )
    columns = [c for c in CSV_COLUMNS if c in types]
    # one statement over column lists: executemany ran one INSERT per GPU (~60 ms on every new warehouse)
    values = [[list(s.aliases) if c == "aliases" else getattr(s, c) for s in specs] for c in columns]
    con.execute(
        f"INSERT INTO gpus ({', '.join(columns)}) SELECT {', '.join(f'unnest(?::{types[c]}[])' for c in columns)}",
        values,
    )


def open_warehouse(
    path: Path,
    *,
    read_only: bool = False,
    wait_seconds: float | None = None,
    on_wait: object = None,
    core: bool = False,
) -> duckdb.DuckDBPyConnection:
    """Open and (read-write only) migrate the warehouse. Read-only opens check the version instead.

    ``core``: see ``connect`` (read-only opens only)."""
    con = connect(path, read_only=read_only, wait_seconds=wait_seconds, on_wait=on_wait, core=core)
    try:
        if read_only:
            version = schema_version(con)
            if version > LATEST:
                raise WarehouseError(
                    f"the warehouse has schema version {version}, newer than this costopt understands ({LATEST})",
                    hint="upgrade costopt",
                )
            if version < LATEST:
                raise NeedsMigrating(f"the warehouse at {path} needs migrating; open it read-write once")
        else:
            migrate(con)
    except Exception as exc:
        con.close()
        if is_duckdb_error(exc):
            raise from_duckdb(exc, path) from None
        raise
    return con


def has_prices(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any run loaded prices: a scrape, or an archive's history (a warehouse built with ``costopt import``
    alone was refused as holding none)."""
    return bool(_scalar(con, "SELECT count(*) FROM scrape_runs WHERE status IN ('ok', 'imported')"))
