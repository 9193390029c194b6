"""``--keep-raw-days N``: delete stored raw payload files older than N days.

Only the files go; the ``raw_payloads`` rows stay (with ``path`` cleared) so the run log still says
what was fetched, when, and its hash. Content shared with a newer run is kept.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb


def prune_raw(con: duckdb.DuckDBPyConnection, keep_days: int, now: datetime | None = None) -> tuple[int, int]:
    """Return (files deleted, bytes freed)."""
    cutoff = (now or datetime.now(UTC)) - timedelta(days=keep_days)
    old = con.execute(
        """SELECT DISTINCT path FROM raw_payloads WHERE path IS NOT NULL AND fetched_at < ?
           AND path NOT IN (SELECT path FROM raw_payloads WHERE path IS NOT NULL AND fetched_at >= ?)""",
        [cutoff, cutoff],
    ).fetchall()
    deleted = freed = 0
    if not old:
        return 0, 0
    for (path,) in old:
        file = Path(path)
        if file.exists():
            freed += file.stat().st_size
            file.unlink()
            deleted += 1
    con.execute(
        "UPDATE raw_payloads SET path = NULL WHERE fetched_at < ? AND path IN (SELECT unnest(?))",
        [cutoff, [p for (p,) in old]],
    )
    return deleted, freed
