"""Loading imported price history: staged intervals in, warehouse rows out, in one transaction.

An archive import (``scraper.archive``) writes its intervals to Parquet files (``StageWriter``) with
the warehouse closed; ``load_staged`` then loads every staged file of the import in ONE transaction,
so Ctrl-C or an error at any point leaves the warehouse exactly as it was. The bundled history is a
set of such staged files and loads through the same function.

The rules, in the order they apply:

* **Held data wins.** An imported interval only fills time that no interval already stored for the
  same offer and pricing kind covers: scraped prices (live, replayed, the bundled snapshot) and
  earlier imports (another archive, an older catalog version) are never overwritten or doubled.
  The imported interval is cut around them (``_insert_clipped``).
* **Imports never look current.** Every imported interval is closed (its ``valid_to`` is set), at the
  archive's last observation at the latest, so ``current_prices`` and ``plan`` never see one.
* **Later scrapes win too.** When a scrape observes an offer at a time that an imported interval
  still covers (an archive imported up to today, then a replay of older recordings),
  ``yield_to_scrape`` ends the imported interval where the scraped one starts.
* **Idempotent and incremental.** ``archive_imports`` remembers, per repository and file, the tip the
  last import reached; the next import reads only later commits, and an interval that was still open
  at that tip and has not changed is extended in place, not duplicated.
* **Provenance per row**: ``archive_repository``, ``archive_commit`` (the commit that first showed the
  price), ``archive_path``, and ``source`` (a URL of that file at that commit) on every row; one
  ``scrape_runs`` row per file and import with ``mode = 'import'`` and ``status = 'imported'`` (not
  ``ok``: every check that compares a scrape with "the last good run" -- alerts, the drop guard,
  ``reparse``, the data-age note -- must never compare it with an import of 60 regions of history).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse.errors import WarehouseError
from warehouse.utc_json import instants_from_json, instants_to_json

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

STAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("kind", "string"),  # m: machine (prices), p: GPU part (gpu_part_prices)
    ("region", "string"),
    ("name", "string"),  # instance type (m) or "<GPU>x<count>" (p)
    ("pricing", "string"),
    ("gpu", "string"),
    ("gpu_count", "float64"),
    ("vcpus", "int64"),
    ("memory_gib", "float64"),
    ("usd_per_hour", "float64"),
    ("valid_from", "timestamp"),
    ("valid_to", "timestamp"),
    ("last_seen", "timestamp"),
    ("commit", "string"),
    ("last_commit", "string"),
    ("continues", "bool"),
)
BATCH_ROWS = 50_000


def _schema() -> pa.Schema:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "float64": pa.float64(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([(name, types[kind]) for name, kind in STAGE_COLUMNS])


class StageWriter:
    """Append intervals to one Parquet file in batches, so memory stays flat however long the archive."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0
        self._buffer: dict[str, list[Any]] = {name: [] for name, _ in STAGE_COLUMNS}
        self._writer: Any = None

    def add(self, **row: Any) -> None:
        for name, _ in STAGE_COLUMNS:
            self._buffer[name].append(row[name])
        self.rows += 1
        if len(self._buffer["kind"]) >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._buffer["kind"]:
            return
        table = pa.Table.from_pydict(self._buffer, schema=_schema())
        if self._writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._writer = pq.ParquetWriter(self.path, _schema(), compression="zstd", compression_level=9)
        self._writer.write_table(table)
        self._buffer = {name: [] for name, _ in STAGE_COLUMNS}

    def close(self) -> None:
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None


_INSTANTS = ("last_observed", "first_observed")


@dataclass(slots=True)
class StagedPath:
    """One file of one archive, read and staged: everything ``load_staged`` needs, and the report."""

    repository: str
    path: str
    format: str
    provider: str
    last_commit: str  # the archive tip this import reached
    last_observed: datetime  # the tip's time: where this import's intervals end at the latest
    first_commit: str | None = None
    first_observed: datetime | None = None
    observations: int = 0  # snapshots read (commits, or days with --daily)
    commits: int = 0  # commits that changed the file
    blobs_missing: int = 0  # snapshots the clone does not hold (skipped)
    malformed: int = 0  # snapshots the parser refused (skipped)
    malformed_example: str | None = None
    glitches: int = 0  # one-snapshot price spikes dropped (scraper.archive.intervals)
    gpu_rows: int = 0  # GPU rows read, summed over snapshots
    keys: int = 0  # distinct (offer or GPU part, pricing) priced
    unknown: dict[str, int] = field(default_factory=dict)  # unmapped GPU names -> rows
    skipped: dict[str, int] = field(default_factory=dict)
    file: str | None = None  # the staged Parquet file (relative to the manifest when bundled)
    rows: int = 0  # staged intervals

    def to_json(self) -> dict[str, Any]:
        return instants_to_json(asdict(self), _INSTANTS)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StagedPath:
        return cls(**instants_from_json(data, _INSTANTS))


@dataclass(slots=True)
class LoadedPath:
    path: str
    provider: str
    run_id: int | None
    prices: int  # machine price intervals written
    gpu_parts: int  # GPU-part intervals written
    offers_new: int


def source_url(repository: str, commit: str, path: str) -> str:
    """Where a row can be checked: the file at that commit (a GitHub URL where the archive is on GitHub)."""
    if repository.startswith("github.com/"):
        return f"https://{repository}/blob/{commit}/{path}"
    return f"git:{repository}@{commit}:{path}"


def repository_id(remote: str | None, fallback: str) -> str:
    """``host/owner/name`` from a remote URL (https, ssh or scp form), else ``fallback`` (the clone's path)."""
    if not remote:
        return fallback
    text = remote.strip()
    match = re.match(r"^(?:[a-z+]+://)?(?:[^@/]+@)?(?P<host>[^/:]+)[:/](?P<rest>.+?)(?:\.git)?/?$", text)
    if match is None:
        return text
    return f"{match.group('host').lower()}/{match.group('rest')}"


# -- state --------------------------------------------------------------------------------------------------


def import_state(con: duckdb.DuckDBPyConnection, repository: str) -> dict[str, tuple[str, datetime]]:
    """Per file of ``repository``: the tip the last import reached and its time."""
    rows = con.execute(
        "SELECT path, last_commit, last_observed FROM archive_imports WHERE repository = ?", [repository]
    ).fetchall()
    return {path: (commit, observed) for path, commit, observed in rows}


def carried_intervals(
    con: duckdb.DuckDBPyConnection, repository: str, path: str, end: datetime
) -> list[tuple[Any, ...]]:
    """Intervals the last import of this file left open at its end (still priced at the tip).

    Rows ``(kind, region, name, pricing, gpu, gpu_count, vcpus, memory_gib, usd, valid_from, commit,
    last_seen)``, the key and state an incremental import continues from.
    """
    machines = con.execute(
        """SELECT 'm', o.region, o.instance_type, p.pricing, o.gpu, o.gpu_count, o.vcpus, o.memory_gib,
                  p.usd_per_hour, p.valid_from, p.archive_commit, p.last_seen
           FROM prices p JOIN offers o USING (offer_id)
           WHERE p.archive_repository = ? AND p.archive_path = ? AND p.valid_to = ? AND p.last_seen = ?""",
        [repository, path, end, end],
    ).fetchall()
    parts = con.execute(
        """SELECT 'p', region, gpu || 'x' || CAST(gpu_count AS VARCHAR), pricing, gpu, gpu_count, NULL, NULL,
                  usd_per_hour, valid_from, archive_commit, last_seen
           FROM gpu_part_prices
           WHERE archive_repository = ? AND archive_path = ? AND valid_to = ? AND last_seen = ?""",
        [repository, path, end, end],
    ).fetchall()
    return [*machines, *parts]


# -- loading ------------------------------------------------------------------------------------------------


def load_staged(
    con: duckdb.DuckDBPyConnection, staged: list[StagedPath], root: Path, *, started_at: datetime | None = None
) -> list[LoadedPath]:
    """Load staged files (Parquet under ``root``) in one transaction; roll everything back on any error."""
    started = started_at or datetime.now(UTC)
    con.execute("SET TimeZone = 'UTC'")
    con.execute("BEGIN TRANSACTION")
    try:
        loaded = [_load_path(con, item, root, started) for item in staged]
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return loaded


def _load_path(con: duckdb.DuckDBPyConnection, item: StagedPath, root: Path, started: datetime) -> LoadedPath:
    if item.file is not None and not (root / item.file).is_file():
        raise WarehouseError(f"import: staged file {root / item.file} is missing")
    run_id = int(con.execute("SELECT nextval('run_ids')").fetchall()[0][0])
    source = source_url(item.repository, "{commit}", item.path)
    prices = parts = new_offers = 0
    if item.file is not None and item.rows:
        con.execute("CREATE OR REPLACE TEMP TABLE _imp AS SELECT * FROM read_parquet(?)", [str(root / item.file)])
        new_offers = _offers(con, item)
        _forget_continued(con, item)
        prices = _insert_clipped(con, item, run_id, source, machines=True)
        parts = _insert_clipped(con, item, run_id, source, machines=False)
        con.execute("DROP TABLE IF EXISTS _imp")
    notes = _notes(item)
    con.execute(
        """INSERT INTO scrape_runs (run_id, provider, mode, started_at, finished_at, observed_at, status, offers,
               prices_changed, prices_closed, unknown_items, flags, bytes_downloaded, seconds, error, source_urls,
               parser_version, notes)
           VALUES (?, ?, 'import', ?, ?, ?, 'imported', ?, ?, 0, ?, 0, 0, NULL, NULL, ?, ?, ?)""",
        [
            run_id,
            item.provider,
            started,
            datetime.now(UTC),
            item.last_observed,
            item.keys,
            prices + parts,
            sum(item.unknown.values()),
            [source_url(item.repository, item.last_commit, item.path)],
            item.format,
            notes,
        ],
    )
    con.execute(
        """INSERT INTO archive_imports VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (repository, path) DO UPDATE SET
               last_commit = excluded.last_commit, last_observed = excluded.last_observed,
               observations = archive_imports.observations + excluded.observations,
               first_commit = coalesce(archive_imports.first_commit, excluded.first_commit),
               first_observed = coalesce(archive_imports.first_observed, excluded.first_observed),
               updated_at = excluded.updated_at""",
        [
            item.repository,
            item.path,
            item.format,
            item.provider,
            item.first_commit,
            item.first_observed,
            item.last_commit,
            item.last_observed,
            item.observations,
            datetime.now(UTC),
        ],
    )
    return LoadedPath(item.path, item.provider, run_id, prices, parts, new_offers)


def _notes(item: StagedPath) -> str:
    span = ""
    if item.first_observed is not None:
        span = f" {item.first_observed:%Y-%m-%d}..{item.last_observed:%Y-%m-%d}"
    parts = [f"{item.repository} {item.path}: {item.observations} snapshots{span}"]
    if item.blobs_missing:
        parts.append(f"{item.blobs_missing} snapshots missing from the clone")
    if item.malformed:
        parts.append(f"{item.malformed} unreadable ({item.malformed_example})")
    if item.glitches:
        parts.append(f"{item.glitches} one-snapshot price glitches dropped")
    if item.unknown:
        top = sorted(item.unknown.items(), key=lambda kv: -kv[1])[:8]
        parts.append("unknown GPUs: " + ", ".join(f"{name} ({n})" for name, n in top))
    return "; ".join(parts)


def _offers(con: duckdb.DuckDBPyConnection, item: StagedPath) -> int:
    """New offers for imported machines; an offer already known keeps its attributes."""
    before = con.execute("SELECT count(*) FROM offers").fetchall()[0][0]
    con.execute(  # numbered in (region, instance type) order: the same ids on every load of the same file
        """INSERT INTO offers (provider, region, instance_type, gpu, gpu_count, vcpus, memory_gib, first_seen)
           SELECT ?, region, name, arg_max(gpu, valid_from), arg_max(gpu_count, valid_from),
                  arg_max(vcpus, valid_from), arg_max(memory_gib, valid_from), min(valid_from)
           FROM _imp i WHERE kind = 'm'
             AND NOT EXISTS (SELECT 1 FROM offers o WHERE o.provider = ? AND o.region = i.region
                             AND o.instance_type = i.name)
           GROUP BY region, name ORDER BY region, name""",
        [item.provider, item.provider],
    )
    after = con.execute("SELECT count(*) FROM offers").fetchall()[0][0]
    return int(after - before)


def _forget_continued(con: duckdb.DuckDBPyConnection, item: StagedPath) -> None:
    """Drop the stored intervals that staged ones continue (they are re-inserted, longer)."""
    con.execute(
        """DELETE FROM prices p USING _imp i, offers o
           WHERE i.continues AND i.kind = 'm' AND o.provider = ? AND o.region = i.region AND o.instance_type = i.name
             AND p.offer_id = o.offer_id AND p.pricing = i.pricing AND p.valid_from = i.valid_from
             AND p.archive_repository = ? AND p.archive_path = ?""",
        [item.provider, item.repository, item.path],
    )
    con.execute(
        """DELETE FROM gpu_part_prices g USING _imp i
           WHERE i.continues AND i.kind = 'p' AND g.provider = ? AND g.region = i.region AND g.gpu = i.gpu
             AND g.gpu_count = i.gpu_count AND g.pricing = i.pricing AND g.valid_from = i.valid_from
             AND g.archive_repository = ? AND g.archive_path = ?""",
        [item.provider, item.repository, item.path],
    )


def _insert_clipped(
    con: duckdb.DuckDBPyConnection, item: StagedPath, run_id: int, source: str, *, machines: bool
) -> int:
    """Insert staged intervals cut around every interval already held for the same key (held data wins).

    Held intervals of a key are merged into islands; the gaps between islands (and before the first and
    after the last) are where the imported interval may go; each staged interval is intersected with
    each gap it overlaps. A key with nothing held keeps its intervals whole.
    """
    if machines:
        con.execute(
            """CREATE OR REPLACE TEMP TABLE _new AS
               SELECT o.offer_id AS k1, '' AS k2, 0.0 AS k3, i.* FROM _imp i
               JOIN offers o ON o.provider = ? AND o.region = i.region AND o.instance_type = i.name
               WHERE i.kind = 'm'""",
            [item.provider],
        )
        con.execute(
            """CREATE OR REPLACE TEMP TABLE _held AS
               SELECT p.offer_id AS k1, '' AS k2, 0.0 AS k3, p.pricing, p.valid_from AS a,
                      coalesce(p.valid_to, 'infinity'::TIMESTAMPTZ) AS b
               FROM prices p SEMI JOIN (SELECT DISTINCT k1, pricing FROM _new) n
                 ON p.offer_id = n.k1 AND p.pricing = n.pricing"""
        )
    else:
        con.execute(
            """CREATE OR REPLACE TEMP TABLE _new AS
               SELECT 0::BIGINT AS k1, i.region AS k2, i.gpu_count AS k3, i.* FROM _imp i WHERE i.kind = 'p'"""
        )
        con.execute(
            """CREATE OR REPLACE TEMP TABLE _held AS
               SELECT 0::BIGINT AS k1, g.region AS k2, g.gpu_count AS k3, g.pricing, g.valid_from AS a,
                      g.valid_to AS b, g.gpu
               FROM gpu_part_prices g SEMI JOIN (SELECT DISTINCT k2, k3, gpu, pricing FROM _new) n
                 ON g.provider = ? AND g.region = n.k2 AND g.gpu_count = n.k3 AND g.gpu = n.gpu
                 AND g.pricing = n.pricing""",
            [item.provider],
        )
    gpu_key = "" if machines else ", gpu"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE _pieces AS
            WITH ordered AS (
                SELECT *, max(b) OVER (PARTITION BY k1, k2, k3, pricing{gpu_key} ORDER BY a, b
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
                FROM _held),
            numbered AS (
                SELECT *, sum(CASE WHEN prev_end IS NULL OR a > prev_end THEN 1 ELSE 0 END)
                          OVER (PARTITION BY k1, k2, k3, pricing{gpu_key} ORDER BY a, b ROWS UNBOUNDED PRECEDING)
                          AS island
                FROM ordered),
            islands AS (
                SELECT k1, k2, k3, pricing{gpu_key}, min(a) AS a, max(b) AS b FROM numbered
                GROUP BY k1, k2, k3, pricing{gpu_key}, island),
            gaps AS (
                SELECT k1, k2, k3, pricing{gpu_key},
                       coalesce(lag(b) OVER (PARTITION BY k1, k2, k3, pricing{gpu_key} ORDER BY a),
                                '-infinity'::TIMESTAMPTZ) AS g_from,
                       a AS g_to
                FROM islands
                UNION ALL
                SELECT k1, k2, k3, pricing{gpu_key}, max(b), 'infinity'::TIMESTAMPTZ FROM islands
                GROUP BY k1, k2, k3, pricing{gpu_key})
            SELECT n.*, greatest(n.valid_from, g.g_from) AS f, least(n.valid_to, g.g_to) AS t
            FROM _new n JOIN gaps g USING (k1, k2, k3, pricing{gpu_key})
            WHERE g.g_from < n.valid_to AND g.g_to > n.valid_from
            UNION ALL
            SELECT n.*, n.valid_from AS f, n.valid_to AS t FROM _new n
            WHERE NOT EXISTS (SELECT 1 FROM _held h WHERE h.k1 = n.k1 AND h.k2 = n.k2 AND h.k3 = n.k3
                              AND h.pricing = n.pricing {"AND h.gpu = n.gpu" if not machines else ""})"""
    )
    url = "replace(?, '{commit}', commit)"
    common = "pricing, usd_per_hour, f, t, greatest(f, least(last_seen, t)), ?, ?, " + url + ", ?, commit, ?"
    if machines:
        con.execute(
            f"""INSERT INTO prices (offer_id, pricing, usd_per_hour, valid_from, valid_to, last_seen, first_run,
                    last_run, source, archive_repository, archive_commit, archive_path)
                SELECT k1, {common} FROM _pieces WHERE t >= f""",
            [run_id, run_id, source, item.repository, item.path],
        )
    else:
        con.execute(
            f"""INSERT INTO gpu_part_prices (provider, region, gpu, gpu_count, pricing, usd_per_hour, valid_from,
                    valid_to, last_seen, first_run, last_run, source, archive_repository, archive_commit, archive_path)
                SELECT ?, region, gpu, gpu_count, {common} FROM _pieces WHERE t >= f""",
            [item.provider, run_id, run_id, source, item.repository, item.path],
        )
    written = con.execute("SELECT count(*) FROM _pieces WHERE t >= f").fetchall()[0][0]
    for temp in ("_new", "_held", "_pieces"):
        con.execute(f"DROP TABLE IF EXISTS {temp}")
    return int(written)


def yield_to_scrape(con: duckdb.DuckDBPyConnection, providers: str | list[str]) -> int:
    """End imported intervals where an open scraped interval of the same offer starts (scrapes win).

    Called by the scrape loader after its runs (one provider's, or several loaded together), inside
    its transaction. Only imported intervals that reach past the start of an open scraped one are
    touched; normally there are none. Returns how many imported intervals were shortened or removed.
    """
    names = [providers] if isinstance(providers, str) else list(providers)
    starts = """SELECT l.offer_id, l.pricing, l.valid_from AS start FROM prices l JOIN offers o USING (offer_id)
                WHERE list_contains(?::VARCHAR[], o.provider) AND l.valid_to IS NULL AND l.archive_commit IS NULL"""
    removed = con.execute(
        f"""DELETE FROM prices p USING ({starts}) x
            WHERE p.offer_id = x.offer_id AND p.pricing = x.pricing AND p.archive_commit IS NOT NULL
              AND p.valid_from >= x.start""",
        [names],
    ).fetchall()
    shortened = con.execute(
        f"""UPDATE prices p SET valid_to = x.start, last_seen = least(p.last_seen, x.start)
            FROM ({starts}) x
            WHERE p.offer_id = x.offer_id AND p.pricing = x.pricing AND p.archive_commit IS NOT NULL
              AND p.valid_to > x.start AND p.valid_from < x.start""",
        [names],
    ).fetchall()
    return int(removed[0][0] if removed else 0) + int(shortened[0][0] if shortened else 0)


# -- the bundle ---------------------------------------------------------------------------------------------

MANIFEST = "manifest.json"


def read_manifest(directory: Path) -> list[StagedPath]:
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        return [StagedPath.from_json(entry) for entry in data["files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WarehouseError(f"bundled history: cannot read {directory / MANIFEST}: {exc}") from None


def write_manifest(directory: Path, staged: list[StagedPath], about: str) -> None:
    text = json.dumps({"about": about, "files": [s.to_json() for s in staged]}, indent=1) + "\n"
    part = directory / (MANIFEST + ".part")
    part.write_text(text, encoding="utf-8")
    part.replace(directory / MANIFEST)


def bundle_dirs(root: Path) -> list[Path]:
    """Directories under ``root`` holding a staged archive (``manifest.json``), in name order."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / MANIFEST).is_file())


@dataclass(slots=True)
class BundleSummary:
    archives: list[str]
    first: datetime | None
    last: datetime | None
    intervals: int


def load_bundle(con: duckdb.DuckDBPyConnection, root: Path) -> BundleSummary:
    """Load the staged archives under ``root`` (the bundled history) in one transaction.

    Each archive's files load as an import would (same rules, same provenance, same ``archive_imports``
    state), so a later ``costopt import`` of a clone of the same archive continues where the bundle ends.
    Archives whose files are already recorded are skipped: loading the bundle twice changes nothing.
    """
    items: list[tuple[Path, StagedPath]] = []
    for directory in bundle_dirs(root):
        for staged in read_manifest(directory):
            if staged.path not in import_state(con, staged.repository):
                items.append((directory, staged))
    summary = BundleSummary(sorted({s.repository for _, s in items}), None, None, 0)
    if not items:
        return summary
    started = datetime.now(UTC)
    con.execute("SET TimeZone = 'UTC'")
    con.execute("BEGIN TRANSACTION")
    try:
        for directory, staged in items:
            loaded = _load_path(con, staged, directory, started)
            summary.intervals += loaded.prices + loaded.gpu_parts
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    span = con.execute(
        f"""SELECT min(valid_from), max(valid_to) FROM prices
            WHERE archive_repository IN ({",".join("?" * len(summary.archives))})""",
        summary.archives,
    ).fetchall()[0]
    summary.first, summary.last = span
    return summary
