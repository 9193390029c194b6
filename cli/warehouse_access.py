"""How commands reach the warehouse: the right mode, the bundled snapshot on first use, a lock wait.

Readers open the file read-only, so any number of them share it; a reader that meets a refresh
mid-load waits a bounded time with a message instead of failing. The first command that needs
prices on an empty warehouse *at the default path* loads the bundled snapshot and says so, with its
date. A path given with ``--db`` or ``COSTOPT_DB`` is the user's own warehouse: a read command never
creates it or fills it with bundled data (a typo would otherwise answer from a fresh snapshot); it
says what is missing and how to create it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cli.output import note
from warehouse.errors import NeedsMigrating, WarehouseError

if TYPE_CHECKING:
    import duckdb


@dataclass
class Readable:
    con: duckdb.DuckDBPyConnection
    path: Path
    prices_note: str

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Readable:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def resolve_db(db: Path | None) -> Path:
    from warehouse.paths import default_db_path

    return (db or default_db_path()).expanduser()


def _missing(path: Path) -> WarehouseError:
    return WarehouseError(
        f"no warehouse at {path} (given by --db or COSTOPT_DB)",
        hint=f"check the path, or create it with `costopt refresh --db {path}`",
    )


def existing_db(db: Path | None) -> Path:
    """The warehouse path for a command that works on an existing warehouse only (reparse)."""
    path = resolve_db(db)
    if not path.exists():
        if db is not None:
            raise _missing(path)
        raise WarehouseError(f"no warehouse at {path} yet", hint="run `costopt refresh` first")
    return path


def ensure_prices(db: Path | None) -> Path:
    """The warehouse a write command (``import``) works on: created and migrated if missing.

    The default warehouse is also seeded with the bundled snapshot and history when it holds no prices,
    as the first read command would; a warehouse given with ``--db``/``COSTOPT_DB`` is the user's own
    and gets nothing bundled.
    """
    from warehouse.db import has_prices, open_warehouse

    path = resolve_db(db)
    con = open_warehouse(path, on_wait=note)
    try:
        seeded = has_prices(con)
    finally:
        con.close()
    if not seeded and db is None:
        seed_once(path)
    return path


def seed_once(path: Path) -> None:
    """Load the bundled snapshot into the default warehouse unless another command already has.

    Four first commands started together each found it empty and each loaded the snapshot (the run log held up to
    four copies of the snapshot's runs). The check and the load run under an advisory lock on
    ``<warehouse>.seed.lock``: the others wait for the first, then find its prices.
    """
    import fcntl

    from warehouse.db import has_prices, open_warehouse

    with path.with_name(path.name + ".seed.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        con = open_warehouse(path, read_only=True, on_wait=note, core=True)
        try:
            empty = not has_prices(con)
        finally:
            con.close()
        if empty:
            load_snapshot(path)


def load_snapshot(path: Path) -> None:
    """The bundled snapshot (a replay of ``fixtures/``) and the bundled history (``fixtures/history/``).

    Loaded from the seed (the same rows, in bulk) where it fits; see ``scraper.snapshot``."""
    from scraper.snapshot import load_snapshot as load

    loaded = load(path)
    told = ""
    if loaded.history_intervals and loaded.history_first is not None and loaded.history_last is not None:
        told = (
            f" and {loaded.history_intervals:,} price intervals of history "
            f"{loaded.history_first:%Y-%m-%d}..{loaded.history_last:%Y-%m-%d}"
            f" imported from {', '.join(loaded.history_archives)}"
        )
    note(
        f"costopt: the warehouse at {path} was empty: loaded the bundled price snapshot recorded "
        f"{', '.join(loaded.recorded) or '?'} ({loaded.providers} providers){told}. "
        "Run `costopt refresh` for live prices."
    )


def ensure_history(path: Path) -> int:
    """Load the bundled history into a warehouse that lacks (part of) it; returns the intervals loaded."""
    from warehouse.archive import load_bundle
    from warehouse.db import open_warehouse
    from warehouse.paths import snapshot_dir

    con = open_warehouse(path, on_wait=note)
    try:
        history = load_bundle(con, snapshot_dir() / "history")
    finally:
        con.close()
    if history.intervals and history.first is not None and history.last is not None:
        note(
            f"costopt: loaded the bundled price history into {path}: {history.intervals:,} price intervals "
            f"{history.first:%Y-%m-%d}..{history.last:%Y-%m-%d} imported from {', '.join(history.archives)}"
        )
    return history.intervals


def prices_note(con: duckdb.DuckDBPyConnection) -> str:
    from warehouse.queries import utc_datetime

    rows = con.execute(  # times as epoch microseconds: no pytz on a read path (warehouse.queries.utc_datetime)
        """SELECT mode, epoch_us(min(observed_at)), epoch_us(max(observed_at)), count(DISTINCT provider)
           FROM scrape_runs r WHERE status = 'ok' AND run_id IN
             (SELECT max(run_id) FROM scrape_runs WHERE status = 'ok' AND mode <> 'import' GROUP BY provider)
           GROUP BY mode ORDER BY mode"""
    ).fetchall()
    if not rows:
        return "no prices loaded"
    parts = []
    for mode, first_us, last_us, providers in rows:
        first, last = utc_datetime(first_us), utc_datetime(last_us)
        assert first is not None and last is not None  # min/max over at least one run
        kind = {"snapshot": "bundled snapshot", "replay": "replayed recordings", "live": "live"}.get(mode, mode)
        when = last.strftime("%Y-%m-%d %H:%M UTC")
        if first.date() != last.date():
            when = f"{first:%Y-%m-%d}..{last:%Y-%m-%d %H:%M} UTC"
        parts.append(f"{kind}, {providers} provider{'s' if providers != 1 else ''}, as of {when}")
    return "prices: " + "; ".join(parts)


def open_for_reading(db: Path | None, *, need_prices: bool = True) -> Readable:
    """A read-only connection to a warehouse that has prices (seeding the default one on first use).

    ``db`` is what ``--db``/``COSTOPT_DB`` gave (None: the default path).
    """
    from warehouse.db import has_prices, open_warehouse

    path = resolve_db(db)
    explicit = db is not None
    if not path.exists():
        if explicit:
            raise _missing(path)
        open_warehouse(path, on_wait=note).close()  # create and migrate the default warehouse
    # core: plain SQL needs only DuckDB's compiled engine, not its Python package (warehouse/db.py)
    try:
        con = open_warehouse(path, read_only=True, on_wait=note, core=True)
    except NeedsMigrating:
        open_warehouse(path, on_wait=note).close()
        con = open_warehouse(path, read_only=True, on_wait=note, core=True)
    if need_prices and not has_prices(con):
        con.close()
        if explicit:
            raise WarehouseError(
                f"the warehouse at {path} holds no prices yet", hint=f"run `costopt refresh --db {path}`"
            )
        seed_once(path)
        con = open_warehouse(path, read_only=True, on_wait=note, core=True)
    return Readable(con, path, prices_note(con))
