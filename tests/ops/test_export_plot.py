"""Parquet export reads back to the same counts; the history chart is a real PNG."""

from __future__ import annotations

import struct
from datetime import timedelta

import duckdb
import pytest

from tests.conftest import T0
from warehouse.db import open_warehouse
from warehouse.errors import UsageError
from warehouse.export import export_parquet
from warehouse.history import daily_cheapest
from warehouse.load import RunRecord, load_run
from warehouse.plot import plot_history


@pytest.fixture
def con(db_path, make_record):
    con = open_warehouse(db_path)
    for night, p5 in enumerate([98.32, 98.32, 55.04, 55.04]):
        at = T0 + timedelta(days=night)
        load_run(
            con,
            RunRecord(
                "aws",
                "live",
                at,
                at,
                prices=[
                    make_record("p5.48xlarge", p5, at=at),
                    make_record("p5.48xlarge", 20 + night, pricing="spot", at=at),
                ],
            ),
        )
        load_run(
            con,
            RunRecord(
                "lambda",
                "live",
                at,
                at,
                prices=[make_record("gpu_8x_h100_sxm5", 23.92, provider="lambda", region="us", at=at)],
            ),
        )
    yield con
    con.close()


def test_export_reads_back_with_duckdb(con, tmp_path):
    target = tmp_path / "export"
    counts = export_parquet(con, target)
    assert counts["price_history"] == 2 + 4 + 1
    check = duckdb.connect()
    glob = f"{target}/price_history/**/*.parquet"
    back = check.execute(f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true)").fetchone()[0]
    assert back == counts["price_history"]
    parts = check.execute(
        f"SELECT DISTINCT provider, date FROM read_parquet('{glob}', hive_partitioning = true) ORDER BY 1, 2"
    ).fetchall()
    assert [(provider, str(day)) for provider, day in parts] == [
        ("aws", "2026-11-01"),
        ("aws", "2026-11-02"),
        ("aws", "2026-11-03"),
        ("aws", "2026-11-04"),
        ("lambda", "2026-11-01"),
    ]
    assert (target / "price_history" / "provider=aws").is_dir()
    assert check.execute(f"SELECT count(*) FROM '{target}/scrape_runs.parquet'").fetchone()[0] == 8
    # a second export replaces the first atomically
    assert export_parquet(con, target) == counts


def test_exported_price_history_joins_the_runs_that_opened_and_confirmed_it(con, tmp_path):
    """Keys and provenance survive the export: offer_id, first_run and last_run join scrape_runs.parquet."""
    target = tmp_path / "export"
    export_parquet(con, target)
    check = duckdb.connect()
    check.execute("SET TimeZone = 'UTC'")
    glob = f"{target}/price_history/**/*.parquet"
    history = f"read_parquet('{glob}', hive_partitioning = true)"
    columns = [r[0] for r in check.execute(f"DESCRIBE SELECT * FROM {history}").fetchall()]
    assert columns[0] == "offer_id" and {"provider", "date"} <= set(columns)  # hive keys come last
    assert {"first_run", "last_run", "source_time", "source_basis", "effective_since"} <= set(columns)
    joined = check.execute(
        f"""SELECT h.provider, h.pricing, h.usd_per_hour, o.run_id, o.provider, o.started_at, c.run_id, c.status
            FROM {history} h
            JOIN '{target}/scrape_runs.parquet' o ON o.run_id = h.first_run
            JOIN '{target}/scrape_runs.parquet' c ON c.run_id = h.last_run
            WHERE h.provider = 'aws' AND h.pricing = 'on_demand' ORDER BY h.valid_from"""
    ).fetchall()
    # p5.48xlarge: $98.32 opened by the first AWS run (run 1) and confirmed by the second (run 3); $55.04
    # opened by the third (run 5) and confirmed by the fourth (run 7); runs alternate aws, lambda
    assert [(r[2], r[3], r[6]) for r in joined] == [(98.32, 1, 3), (55.04, 5, 7)]
    assert all(r[0] == r[4] == "aws" and r[7] == "ok" for r in joined)
    assert joined[0][5] == T0
    # every interval finds both of its runs, and offer_id is the warehouse's own key
    orphans = check.execute(
        f"""SELECT count(*) FROM {history} h
            WHERE h.first_run NOT IN (SELECT run_id FROM '{target}/scrape_runs.parquet')
               OR h.last_run NOT IN (SELECT run_id FROM '{target}/scrape_runs.parquet')"""
    ).fetchone()[0]
    assert orphans == 0
    keys = check.execute(f"SELECT DISTINCT offer_id, instance_type FROM {history} ORDER BY 1").fetchall()
    assert keys == con.execute("SELECT DISTINCT offer_id, instance_type FROM price_history ORDER BY 1").fetchall()


def test_export_refuses_a_foreign_directory(con, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not a costopt export"):
        export_parquet(con, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_history_plot_is_a_real_png(con, tmp_path):
    daily = daily_cheapest(con, "H100-SXM", T0 - timedelta(days=1))
    target = tmp_path / "h100.png"
    plot_history(daily, "H100-SXM", target)
    head = target.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", head[16:24])
    assert width > 500 and height > 300
