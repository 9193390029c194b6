"""Opening the warehouse: migrations, refusing bad files, lock contention."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import duckdb
import pytest

from tests.conftest import REPO
from warehouse import migrations
from warehouse.db import open_warehouse, schema_version
from warehouse.errors import WarehouseError, WarehouseLocked
from warehouse.migrations import LATEST, MIGRATIONS

VIEWS = {"current_prices", "price_history", "gpu_hourly", "market_current"}
TABLES = {"gpus", "offers", "prices", "scrape_runs", "raw_payloads", "spot_risk", "market_stats", "price_flags"}


def test_fresh_database_gets_every_table_view_and_the_gpu_table(db_path):
    con = open_warehouse(db_path)
    names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert names >= TABLES | VIEWS
    assert schema_version(con) == LATEST
    assert con.execute("SELECT memory_gb FROM gpus WHERE name = 'H100-SXM'").fetchone() == (80.0,)
    cols = {r[0] for r in con.execute("DESCRIBE current_prices").fetchall()}
    assert {"provider", "region", "instance_type", "gpu", "gpu_count", "pricing", "usd_per_hour",
            "usd_per_gpu_hour", "observed_at", "age_hours", "source"} <= cols  # fmt: skip
    con.close()


def test_reopening_does_not_migrate_twice(db_path):
    open_warehouse(db_path).close()
    con = open_warehouse(db_path)
    assert con.execute("SELECT count(*) FROM schema_migrations").fetchone() == (len(MIGRATIONS),)
    con.close()


def test_older_database_is_migrated(db_path, monkeypatch):
    open_warehouse(db_path).close()  # version 1
    extra = (LATEST + 1, "test column", "ALTER TABLE offers ADD COLUMN note VARCHAR;")
    monkeypatch.setattr("warehouse.db.MIGRATIONS", [*migrations.MIGRATIONS, extra])
    monkeypatch.setattr("warehouse.db.LATEST", LATEST + 1)
    con = open_warehouse(db_path)
    assert schema_version(con) == LATEST + 1
    assert "note" in {r[0] for r in con.execute("DESCRIBE offers").fetchall()}
    con.close()


def test_migration_6_moves_the_fp16_rate_of_volta_and_turing_out_of_bf16(db_path):
    """A warehouse written before migration 6 held V100's and T4's FP16 rate in bf16_tflops: after it, their
    bf16_tflops is NULL and fp16_tflops holds the rate; every other GPU gets its one rate in both."""
    con = duckdb.connect(str(db_path))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMPTZ)")
    for number, name, sql in MIGRATIONS[:5]:
        con.execute(sql)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [number, name])
    for name, architecture, tflops in (
        ("V100-16GB", "Volta", 125.0),
        ("T4", "Turing", 65.0),
        ("H100-SXM", "Hopper", 989.0),
    ):
        con.execute(
            "INSERT INTO gpus (name, architecture, bf16_tflops, memory_gb) VALUES (?, ?, ?, 16)",
            [name, architecture, tflops],
        )
    con.close()
    con = open_warehouse(db_path)
    assert schema_version(con) == LATEST >= 6
    assert con.execute("SELECT name, bf16_tflops, fp16_tflops FROM gpus ORDER BY name").fetchall() == [
        ("H100-SXM", 989.0, 989.0),
        ("T4", None, 65.0),
        ("V100-16GB", None, 125.0),
    ]
    con.close()


def test_a_fresh_warehouse_has_both_rates_from_the_gpu_table(db_path):
    con = open_warehouse(db_path)
    rows = dict(
        (
            (name, (bf16, fp16))
            for name, bf16, fp16 in con.execute("SELECT name, bf16_tflops, fp16_tflops FROM gpus").fetchall()
        )
    )
    assert rows["V100-16GB"] == (None, 125.0) and rows["T4"] == (None, 65.0) and rows["A100-80GB"] == (312.0, 312.0)
    con.close()


def test_newer_database_is_refused(db_path):
    open_warehouse(db_path).close()
    con = duckdb.connect(str(db_path))
    con.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', now())")
    con.close()
    with pytest.raises(WarehouseError, match="newer than this costopt"):
        open_warehouse(db_path)
    with pytest.raises(WarehouseError, match="newer than this costopt"):
        open_warehouse(db_path, read_only=True)


@pytest.mark.parametrize("content", [b"not a database at all\n" * 50, b"\x00" * 4096])
def test_a_file_that_is_not_duckdb_is_refused_and_left_untouched(db_path, content):
    db_path.write_bytes(content)
    with pytest.raises(WarehouseError, match=r"not a costopt warehouse|cannot open"):
        open_warehouse(db_path)
    assert db_path.read_bytes() == content


def test_a_foreign_duckdb_database_is_not_touched(db_path):
    con = duckdb.connect(str(db_path))
    con.execute("CREATE TABLE mine (x INT)")
    con.close()
    with pytest.raises(WarehouseError, match="no costopt schema"):
        open_warehouse(db_path)


@pytest.mark.parametrize("below", [None, "deeper"])
def test_a_file_where_the_directory_should_be_is_named(tmp_path, below):
    blocker = tmp_path / "file"
    blocker.write_text("in the way")
    directory = blocker / below if below else blocker
    with pytest.raises(WarehouseError) as raised:
        open_warehouse(directory / "wh.duckdb")
    assert raised.value.one_line() == (
        f"cannot create the directory {directory} for the warehouse: {blocker} is a file, not a directory "
        "(choose another place with --db, COSTOPT_DB or COSTOPT_DATA_DIR)"
    )
    assert blocker.read_text() == "in the way"


def test_read_only_open_of_a_missing_file_does_not_create_it(db_path):
    with pytest.raises(WarehouseError, match="no warehouse"):
        open_warehouse(db_path, read_only=True)
    assert not db_path.exists()


HOLDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from warehouse.db import open_warehouse
    con = open_warehouse(__import__("pathlib").Path({path!r}))
    print("holding", flush=True)
    time.sleep({seconds})
    con.close()
    """
)


@pytest.mark.slow
def test_a_second_process_waits_then_names_the_holder(db_path):
    open_warehouse(db_path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(repo=str(REPO), path=str(db_path), seconds=3)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(WarehouseLocked, match=r"busy: held by .*PID \d+"):
            open_warehouse(db_path, read_only=True, wait_seconds=0.5)
        started = time.monotonic()
        con = open_warehouse(db_path, read_only=True, wait_seconds=20)  # waits for the holder to finish
        assert time.monotonic() - started > 0.5
        assert con.execute("SELECT count(*) FROM gpus").fetchone()[0] > 20
        con.close()
    finally:
        holder.wait(timeout=30)
