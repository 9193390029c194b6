"""``--keep-raw-days N``: delete stored raw payload files older than N days.

Only the files go; the ``raw_payloads`` rows stay (with ``path`` cleared) so the run log still says
what was fetched, when, and its hash. Content shared with a newer run is kept.

Only files in this warehouse's own raw folder are ever deleted. A row recorded before paths were relative to
that folder may name another warehouse's file (this one is a copy of it): such a row is counted as the file this
warehouse would hold under its own folder (``warehouse.paths.raw_own_file``), and the other warehouse's file is
left alone; the copy of a warehouse once emptied the original's folder.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from warehouse.paths import raw_own_file

if TYPE_CHECKING:
    import duckdb


def prune_raw(
    con: duckdb.DuckDBPyConnection, root: Path, keep_days: int, now: datetime | None = None
) -> tuple[int, int]:
    """Delete the files under ``root`` (this warehouse's raw folder) that only older runs use; (files, bytes).

    Age is counted from the run that stored a file (a replayed recording's fetch time is its vintage: it was
    pruned at once), and the newest stored answer of every URL is kept whatever its age: it is what today's
    prices were read from, also when later runs were told "not modified" (an AWS offer file unchanged for a
    month), and what ``costopt reparse`` reads. ``--keep-raw-days 0`` removed the payloads of the run just loaded.
    """
    cutoff = (now or datetime.now(UTC)) - timedelta(days=keep_days)
    rows = con.execute(
        """WITH newest AS (SELECT arg_max(path, run_id) AS path FROM raw_payloads WHERE path IS NOT NULL GROUP BY url)
           SELECT p.path, bool_or(s.started_at >= ? OR p.path IN (SELECT path FROM newest))
           FROM raw_payloads p LEFT JOIN scrape_runs s USING (run_id)
           WHERE p.path IS NOT NULL GROUP BY p.path""",
        [cutoff],
    ).fetchall()
    # one file may be recorded in two ways (relative, and absolute by an older costopt): kept if any run is recent
    recent: dict[Path | None, bool] = {}
    recorded: dict[Path | None, list[str]] = {}
    for stored, is_recent in rows:
        own = raw_own_file(root, stored)
        recent[own] = recent.get(own, False) or bool(is_recent)
        recorded.setdefault(own, []).append(stored)
    old = [own for own, is_recent in recent.items() if not is_recent]
    if not old:
        return 0, 0
    deleted = freed = 0
    for own in old:
        if own is not None and own.is_file():
            freed += own.stat().st_size
            own.unlink()
            deleted += 1
    # every old row forgets its file, a foreign one included: this warehouse no longer keeps that payload
    con.execute(
        "UPDATE raw_payloads SET path = NULL WHERE path IN (SELECT unnest(?))",
        [sorted(p for own in old for p in recorded[own])],
    )
    return deleted, freed
