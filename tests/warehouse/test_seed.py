"""The seed (fixtures/seed/) is what a replay of the bundled snapshot writes, and a seeded warehouse is a replayed one.

The first test is the staleness guard: it regenerates the seed from fixtures/ with today's parsers,
loader and schema and compares it, table by table and value by value, with the committed one.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from scraper.snapshot import load_snapshot, make_seed, replay_snapshot
from tests.conftest import REPO, run_costopt, same_answer
from warehouse import seed as seeds
from warehouse.db import open_warehouse
from warehouse.load import record_failure

FIXTURES = REPO / "fixtures"
SEED = FIXTURES / "seed"
# the time and duration of the load itself: what a replay and a seeding cannot share
VOLATILE = {
    "scrape_runs": ("started_at", "finished_at", "seconds"),
    "archive_imports": ("updated_at",),
    "alerts": ("created_at",),
}


def parquet_rows(path: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute("SELECT * FROM read_parquet(?) ORDER BY ALL", [str(path)]).fetchall()
    finally:
        con.close()


def warehouse_rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    con = open_warehouse(db, read_only=True)
    try:
        names = [
            n
            for (n,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary ORDER BY 1").fetchall()
            if n != "schema_migrations"
        ]
        rows = {}
        for table in names:
            excluded = VOLATILE.get(table, ())
            columns = f"* EXCLUDE ({', '.join(excluded)})" if excluded else "*"
            rows[table] = con.execute(f"SELECT {columns} FROM {table} ORDER BY ALL").fetchall()
        return rows
    finally:
        con.close()


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("replayed") / "wh.duckdb"
    summary = replay_snapshot(db, FIXTURES)
    assert summary.providers == 6 and not summary.seeded
    return db


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("seeded") / "wh.duckdb"
    summary = load_snapshot(db, FIXTURES)
    assert summary.seeded
    return db


def test_the_committed_seed_is_what_the_fixtures_make_today(tmp_path):
    fresh = tmp_path / "seed"
    make_seed(fresh, FIXTURES)
    committed = json.loads((SEED / seeds.MANIFEST).read_text())
    assert json.loads((fresh / seeds.MANIFEST).read_text()) == committed, (
        "fixtures/seed/ is stale: run `python fixtures/seed/make_seed.py` and commit the result"
    )
    assert sorted(p.name for p in fresh.glob("*.parquet")) == sorted(p.name for p in SEED.glob("*.parquet"))
    assert committed["tables"]["prices"] > 20_000 and committed["tables"]["scrape_runs"] == 11
    for table in committed["tables"]:
        assert parquet_rows(fresh / f"{table}.parquet") == parquet_rows(SEED / f"{table}.parquet"), (
            f"fixtures/seed/{table}.parquet is stale: run `python fixtures/seed/make_seed.py`"
        )


def test_a_seeded_warehouse_holds_what_a_replayed_one_holds(seeded, replayed):
    got, expected = warehouse_rows(seeded), warehouse_rows(replayed)
    assert got.keys() == expected.keys()
    for table in expected:
        assert got[table] == expected[table], table
    modes = {r[2] for r in got["scrape_runs"]}
    assert modes == {"snapshot", "import"}
    con = open_warehouse(seeded, read_only=True)
    try:
        times = con.execute("SELECT min(started_at), max(finished_at), max(seconds) FROM scrape_runs").fetchone()
        updated = con.execute("SELECT min(updated_at) FROM archive_imports").fetchone()[0]
    finally:
        con.close()
    now = datetime.now(UTC)
    assert now - timedelta(minutes=10) < times[0] <= times[1] <= now and times[2] == 0.0  # when it was loaded
    assert now - timedelta(minutes=10) < updated <= now


def test_ids_drawn_after_seeding_follow_the_seeds(seeded, replayed, tmp_path):
    """A refresh after the seed numbers its runs and new offers as it would after a replay."""
    for db in (seeded, replayed):
        copy = tmp_path / f"{db.parent.name}.duckdb"
        shutil.copy(db, copy)
        con = open_warehouse(copy)
        try:
            record_failure(con, provider="aws", mode="live", started_at=datetime.now(UTC), error="x")
            run_id = con.execute("SELECT max(run_id) FROM scrape_runs").fetchone()[0]
            offer_id = con.execute("SELECT nextval('offer_ids')").fetchone()[0]
        finally:
            con.close()
        assert (run_id, offer_id) == (12, 2295)


def costopt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_costopt(*args, env=env)


@pytest.mark.parametrize(
    "command",
    [
        ["prices", "--format", "json"],
        ["plan", "--model", "8B", "--tokens", "100B", "--format", "json"],
        ["history", "--gpu", "H100", "--since", "2025-01-01", "--format", "json"],
    ],
    ids=["prices", "plan", "history"],
)
def test_a_seeded_warehouse_answers_like_a_replayed_one(seeded, replayed, command):
    got, expected = costopt(*command, "--db", str(seeded)), costopt(*command, "--db", str(replayed))
    assert (got.returncode, expected.returncode) == (0, 0), got.stderr + expected.stderr
    data = json.loads(got.stdout)
    assert data and same_answer(data, json.loads(expected.stdout))


def test_ages_may_differ_by_a_rounding_step_and_nothing_else():
    assert same_answer([{"age_hours": 1.0, "usd": 2.0}], [{"age_hours": 1.01, "usd": 2.0}])
    assert not same_answer([{"age_hours": 1.0, "usd": 2.0}], [{"age_hours": 1.5, "usd": 2.0}])
    assert not same_answer([{"age_hours": 1.0, "usd": 2.0}], [{"age_hours": 1.0, "usd": 2.1}])
    assert not same_answer([{"age_hours": 1.0}], [{"age_hours": 1.0}, {"age_hours": 1.0}])


def test_first_use_seeds_the_default_warehouse_and_says_what_it_loaded(tmp_path, replayed):
    out = costopt("prices", "--format", "json", env={"COSTOPT_DATA_DIR": str(tmp_path / "data")})
    assert out.returncode == 0, out.stderr
    assert out.stderr == (
        f"costopt: the warehouse at {tmp_path / 'data' / 'costopt.duckdb'} was empty: loaded the bundled price "
        "snapshot recorded 2026-11-20 (6 providers) and 23,460 price intervals of history 2022-02-09..2026-07-30 "
        "imported from github.com/Cyclenerd/google-cloud-pricing-cost-calculator, github.com/anycloud-sh/catalog. "
        "Run `costopt refresh` for live prices.\n"
    )
    assert warehouse_rows(tmp_path / "data" / "costopt.duckdb") == warehouse_rows(replayed)


def test_a_warehouse_that_holds_anything_is_replayed_not_seeded(tmp_path, replayed):
    db = tmp_path / "wh.duckdb"
    con = open_warehouse(db)
    try:
        record_failure(con, provider="lambda", mode="live", started_at=datetime.now(UTC), error="HTTP 500")
        assert seeds.usable(con, SEED) is None
    finally:
        con.close()
    summary = load_snapshot(db, FIXTURES)
    assert not summary.seeded and summary.providers == 6
    runs = warehouse_rows(db)["scrape_runs"]
    assert len(runs) == 12 and runs[0][1:5] == ("lambda", "live", None, "failed")


def test_a_seed_for_another_schema_or_a_damaged_one_is_replayed_instead(tmp_path, replayed):
    for case in ("schema", "damaged"):
        root = tmp_path / case
        shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("*.py", "README.md"))
        if case == "schema":
            manifest = json.loads((root / "seed" / seeds.MANIFEST).read_text())
            manifest["schema_version"] += 1
            (root / "seed" / seeds.MANIFEST).write_text(json.dumps(manifest))
        else:
            (root / "seed" / "prices.parquet").write_bytes(b"PAR1 not parquet")
        db = tmp_path / f"{case}.duckdb"
        summary = load_snapshot(db, root)
        assert not summary.seeded and summary.providers == 6 and summary.history_intervals == 23_460
        assert warehouse_rows(db) == warehouse_rows(replayed), case
