"""The bundled snapshot: what the first command on an empty default warehouse loads.

Two ways to the same rows. The seed (``warehouse.seed``: the tables a replay writes, in Parquet) is
copied in with a statement per table; when it cannot be used -- missing, made for another schema
version, a warehouse that already holds something, or a load that fails -- the recordings in
``fixtures/`` are replayed and the bundled history imported, as the seed was made.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path


@dataclass(slots=True)
class SnapshotSummary:
    """What was loaded, for the one-line note: recording dates, providers, the history's span."""

    recorded: list[str] = field(default_factory=list)  # YYYY-MM-DD
    providers: int = 0
    history_intervals: int = 0
    history_first: datetime | None = None
    history_last: datetime | None = None
    history_archives: list[str] = field(default_factory=list)
    seeded: bool = False  # True: from the seed; False: replayed


def load_snapshot(path: Path, root: Path | None = None) -> SnapshotSummary:
    """Fill the (empty) warehouse at ``path`` with the bundled snapshot and history under ``root``."""
    from warehouse import seed as seeds
    from warehouse.db import open_warehouse
    from warehouse.errors import is_interrupt
    from warehouse.paths import snapshot_dir

    root = root or snapshot_dir()
    con = open_warehouse(path)
    try:
        seed = seeds.usable(con, root / "seed")
        if seed is not None:
            try:
                seeds.load(con, root / "seed", seed)
            except Exception as exc:  # a damaged seed costs time, not the snapshot: replay instead
                if is_interrupt(exc):
                    raise KeyboardInterrupt from None
            else:
                return SnapshotSummary(
                    seed.recorded,
                    seed.providers,
                    seed.history_intervals,
                    seed.history_first,
                    seed.history_last,
                    seed.history_archives,
                    seeded=True,
                )
    finally:
        con.close()
    return replay_snapshot(path, root)


def replay_snapshot(path: Path, root: Path | None = None) -> SnapshotSummary:
    """Replay the recordings under ``root`` (mode ``snapshot``) and import the bundled history."""
    from scraper.providers import NAMES
    from scraper.refresh import refresh
    from scraper.replay import recorded_at
    from warehouse.archive import load_bundle
    from warehouse.db import open_warehouse
    from warehouse.paths import snapshot_dir

    root = root or snapshot_dir()
    recorded = [name for name in NAMES if (root / name / "replay.json").is_file()]
    # the snapshot is what is bundled, whatever regions this machine is configured for
    outcomes = refresh(path, recorded, replay=root, mode="snapshot", keep_raw=False, env={})
    loaded = [o.provider for o in outcomes if o.status == "ok"]
    dates = sorted({recorded_at(root / name).strftime("%Y-%m-%d") for name in loaded})
    con = open_warehouse(path)
    try:
        history = load_bundle(con, root / "history")
    finally:
        con.close()
    return SnapshotSummary(dates, len(loaded), history.intervals, history.first, history.last, list(history.archives))


def make_seed(target: Path, root: Path | None = None) -> None:
    """Replay the snapshot under ``root`` into a scratch warehouse and dump it as the seed in ``target``."""
    from scraper.scratch import owned_scratch
    from warehouse import seed as seeds
    from warehouse.db import open_warehouse
    from warehouse.paths import snapshot_dir, temp_root

    root = root or snapshot_dir()
    with owned_scratch("costopt-seed-", temp_root()) as scratch:
        path = scratch / "seed.duckdb"
        summary = replay_snapshot(path, root)
        con = open_warehouse(path, read_only=True)
        try:
            seeds.dump(
                con,
                target,
                seeds.Seed(
                    schema_version=0,
                    tables={},
                    sequences={},
                    recorded=summary.recorded,
                    providers=summary.providers,
                    history_intervals=summary.history_intervals,
                    history_first=summary.history_first,
                    history_last=summary.history_last,
                    history_archives=summary.history_archives,
                ),
            )
        finally:
            con.close()
