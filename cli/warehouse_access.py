"""How commands reach the warehouse: the right mode, the bundled snapshot on first use, a lock wait.

Readers open the file read-only, so any number of them share it; a reader that meets a refresh
mid-load waits a bounded time with a message instead of failing. The first command that needs
prices on an empty warehouse loads the bundled snapshot and says so, with its date.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cli.output import note

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


def ensure_prices(path: Path) -> None:
    """Create and migrate the warehouse if needed, and seed it from the bundled snapshot if empty."""
    from warehouse.db import has_prices, open_warehouse

    con = open_warehouse(path, on_wait=note)
    try:
        seeded = has_prices(con)
    finally:
        con.close()
    if not seeded:
        load_snapshot(path)


def load_snapshot(path: Path) -> None:
    """The bundled snapshot (a replay of ``fixtures/``) and the bundled history (``fixtures/history/``)."""
    from scraper.providers import NAMES
    from scraper.refresh import refresh
    from scraper.replay import recorded_at
    from warehouse.archive import load_bundle
    from warehouse.db import open_warehouse
    from warehouse.paths import snapshot_dir

    root = snapshot_dir()
    recorded = [name for name in NAMES if (root / name / "replay.json").is_file()]
    outcomes = refresh(path, recorded, replay=root, mode="snapshot", keep_raw=False)
    loaded = [o.provider for o in outcomes if o.status == "ok"]
    dates = sorted({recorded_at(root / name).strftime("%Y-%m-%d") for name in loaded})
    con = open_warehouse(path, on_wait=note)
    try:
        history = load_bundle(con, root / "history")
    finally:
        con.close()
    told = ""
    if history.intervals and history.first is not None and history.last is not None:
        told = (
            f" and {history.intervals:,} price intervals of history {history.first:%Y-%m-%d}..{history.last:%Y-%m-%d}"
            f" imported from {', '.join(history.archives)}"
        )
    note(
        f"costopt: the warehouse at {path} was empty: loaded the bundled price snapshot recorded "
        f"{', '.join(dates) or '?'} ({len(loaded)} providers){told}. Run `costopt refresh` for live prices."
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
    rows = con.execute(
        """SELECT mode, min(observed_at), max(observed_at), count(DISTINCT provider)
           FROM scrape_runs r WHERE status = 'ok' AND run_id IN
             (SELECT max(run_id) FROM scrape_runs WHERE status = 'ok' AND mode <> 'import' GROUP BY provider)
           GROUP BY mode ORDER BY mode"""
    ).fetchall()
    if not rows:
        return "no prices loaded"
    parts = []
    for mode, first, last, providers in rows:
        kind = {"snapshot": "bundled snapshot", "replay": "replayed recordings", "live": "live"}.get(mode, mode)
        when = last.strftime("%Y-%m-%d %H:%M UTC")
        if first.date() != last.date():
            when = f"{first:%Y-%m-%d}..{last:%Y-%m-%d %H:%M} UTC"
        parts.append(f"{kind}, {providers} provider{'s' if providers != 1 else ''}, as of {when}")
    return "prices: " + "; ".join(parts)


def open_for_reading(db: Path | None, *, need_prices: bool = True) -> Readable:
    """A read-only connection to a warehouse that has prices (seeding it on first use)."""
    from warehouse.db import open_warehouse
    from warehouse.errors import WarehouseError

    path = resolve_db(db)
    if need_prices:
        try:
            con = open_warehouse(path, read_only=True, on_wait=note)
        except WarehouseError as exc:
            if "no warehouse" not in str(exc) and "needs migrating" not in str(exc):
                raise
            ensure_prices(path)
            con = open_warehouse(path, read_only=True, on_wait=note)
        else:
            from warehouse.db import has_prices

            if not has_prices(con):
                con.close()
                ensure_prices(path)
                con = open_warehouse(path, read_only=True, on_wait=note)
    else:
        if not path.exists():
            open_warehouse(path).close()
        con = open_warehouse(path, read_only=True, on_wait=note)
    return Readable(con, path, prices_note(con))
