"""The bundled snapshot as tables, so that a first use loads rows instead of replaying recordings.

The first command that needs prices on an empty default warehouse fills it with the bundled snapshot
(a replay of ``fixtures/``) and the bundled history (``fixtures/history/``). Replaying means importing
the HTTP stack and six parsers, parsing ~4 MB of recordings and loading ~1,400 records: about two
seconds before the command itself starts. The seed (``fixtures/seed/``) holds what that replay writes,
one Parquet file per table, and ``load`` copies it in with one ``INSERT ... SELECT`` per table, in one
transaction: the same rows, ids and provenance (sources, recorded times, ``mode = 'snapshot'``, data
origin, archive commits) as the replay. Only what says *when the load itself ran* differs -- the
``started_at``/``finished_at`` of its runs, ``archive_imports.updated_at``, ``alerts.created_at`` --
and is set to the time of the load, as a replay sets it; how long a run took (``seconds``) is 0, since
nothing was fetched.

The seed is generated, never edited: ``python fixtures/seed/make_seed.py`` replays the fixtures into a
scratch warehouse and dumps it (``dump``); ``tests/warehouse/test_seed.py`` regenerates it and fails
when the committed one differs, so a change to a fixture, a parser, the loader or the schema that is
not followed by a regeneration fails the suite. At run time a seed made for another schema version,
or a warehouse that already holds anything, is not seeded: the caller replays instead (``usable``).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse.utc_json import instants_from_json, instants_to_json

if TYPE_CHECKING:
    import duckdb

MANIFEST = "manifest.json"
# reference data every migration loads itself, and the migration record: never part of a seed
NOT_SEEDED = ("gpus", "schema_migrations")
# when the load ran: cleared in the seed, set to the time of the seeding load
LOAD_TIMES: dict[str, tuple[str, ...]] = {
    "scrape_runs": ("started_at", "finished_at"),
    "archive_imports": ("updated_at",),
    "alerts": ("created_at",),
}
# how long it took: cleared in the seed, 0 when loaded (nothing was fetched)
DURATIONS: dict[str, tuple[str, ...]] = {"scrape_runs": ("seconds",)}
SEQUENCES: dict[str, tuple[str, str]] = {"run_ids": ("scrape_runs", "run_id"), "offer_ids": ("offers", "offer_id")}


_INSTANTS = ("history_first", "history_last")


@dataclass(slots=True)
class Seed:
    """A seed's manifest: what it holds and what the first-use note says about it."""

    schema_version: int
    tables: dict[str, int]  # table -> rows
    sequences: dict[str, int]  # sequence -> the highest id the seed uses
    recorded: list[str] = field(default_factory=list)  # the snapshot's recording dates (YYYY-MM-DD)
    providers: int = 0  # providers in the snapshot
    history_intervals: int = 0
    history_first: datetime | None = None
    history_last: datetime | None = None
    history_archives: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]
        return instants_to_json(data, _INSTANTS)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Seed:
        return cls(**instants_from_json(data, _INSTANTS))


def _tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND schema_name = 'main' ORDER BY table_name"
    ).fetchall()
    return [name for (name,) in rows if name not in NOT_SEEDED]


def _cleared(con: duckdb.DuckDBPyConnection, table: str) -> str:
    """``SELECT`` list of ``table`` with its load times and durations as NULL (as the seed stores them)."""
    columns = [c for c in (*LOAD_TIMES.get(table, ()), *DURATIONS.get(table, ())) if c in con.table(table).columns]
    return f"* REPLACE ({', '.join(f'NULL AS {c}' for c in columns)})" if columns else "*"


def dump(con: duckdb.DuckDBPyConnection, directory: Path, seed: Seed) -> Seed:
    """Write every non-empty table of a freshly seeded warehouse to ``directory`` (rows in a fixed order)."""
    from warehouse.db import schema_version

    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.parquet"):
        old.unlink()
    seed.schema_version = schema_version(con)
    seed.tables = {}
    for table in _tables(con):
        rows = int(con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0])
        if not rows:
            continue
        target = str(directory / f"{table}.parquet").replace("'", "''")
        con.execute(
            f"COPY (SELECT {_cleared(con, table)} FROM {table} ORDER BY ALL) TO '{target}' "
            "(FORMAT parquet, COMPRESSION zstd)"
        )
        seed.tables[table] = rows
    seed.sequences = {}
    for sequence, (table, column) in SEQUENCES.items():
        top = con.execute(f"SELECT coalesce(max({column}), 0) FROM {table}").fetchall()[0][0]
        seed.sequences[sequence] = int(top)
    text = json.dumps(seed.to_json(), indent=1, sort_keys=True) + "\n"
    (directory / MANIFEST).write_text(text, encoding="utf-8")
    return seed


def read(directory: Path) -> Seed | None:
    """The seed's manifest, or None when there is no seed (or not a whole one) in ``directory``."""
    try:
        seed = Seed.from_json(json.loads((directory / MANIFEST).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not all((directory / f"{table}.parquet").is_file() for table in seed.tables):
        return None
    return seed


def usable(con: duckdb.DuckDBPyConnection, directory: Path) -> Seed | None:
    """The seed, if it fits this warehouse: made for its schema version, and the warehouse holds nothing yet.

    A warehouse with anything in it (a failed refresh's run, an imported archive) gets the replay, which
    merges with what is there; the seed's rows and ids assume an empty one.
    """
    from warehouse.db import schema_version

    seed = read(directory)
    if seed is None or seed.schema_version != schema_version(con):
        return None
    tables = _tables(con)
    if set(seed.tables) - set(tables):
        return None
    held = con.execute("SELECT " + " + ".join(f"(SELECT count(*) FROM {table})" for table in tables)).fetchall()[0][0]
    return seed if not held else None


def load(con: duckdb.DuckDBPyConnection, directory: Path, seed: Seed) -> None:
    """Copy the seed's tables into an empty warehouse in one transaction (all or nothing)."""
    now = datetime.now(UTC)
    con.execute("BEGIN TRANSACTION")
    try:
        for table in seed.tables:
            replaced = [f"?::TIMESTAMPTZ AS {c}" for c in LOAD_TIMES.get(table, ())]
            replaced += [f"0.0 AS {c}" for c in DURATIONS.get(table, ())]
            select = f"* REPLACE ({', '.join(replaced)})" if replaced else "*"
            params: list[object] = [now] * len(LOAD_TIMES.get(table, ()))
            path = str(directory / f"{table}.parquet")
            con.execute(f"INSERT INTO {table} BY NAME SELECT {select} FROM read_parquet(?)", [*params, path])
        for sequence, top in seed.sequences.items():
            if top:  # the next id drawn follows the seed's (a sequence cannot be set, only advanced)
                con.execute(f"SELECT max(nextval('{sequence}')) FROM range(?)", [top]).fetchall()
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):
            con.execute("ROLLBACK")
        raise
