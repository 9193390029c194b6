"""Loading staged history: held data wins (intervals are cut around it), and the bundled history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from warehouse.archive import (
    StagedPath,
    StageWriter,
    load_bundle,
    load_staged,
    repository_id,
    source_url,
)
from warehouse.db import open_warehouse
from warehouse.load import RunRecord, load_run
from warehouse.paths import snapshot_dir

T = datetime(2026, 1, 1, tzinfo=UTC)
D = timedelta(days=1)


def stage(tmp_path: Path, intervals: list[tuple[float, datetime, datetime]], name: str = "p5.48xlarge") -> StagedPath:
    writer = StageWriter(tmp_path / "x.parquet")
    for usd, start, end in intervals:
        writer.add(
            kind="m",
            region="us-east-1",
            name=name,
            pricing="on_demand",
            gpu="H100-SXM",
            gpu_count=8.0,
            vcpus=192,
            memory_gib=2048.0,
            usd_per_hour=usd,
            valid_from=start,
            valid_to=end,
            last_seen=end,
            commit="c" * 40,
            last_commit="d" * 40,
            continues=False,
        )
    writer.close()
    end = max(e for _, _, e in intervals)
    return StagedPath(
        "github.com/o/r", "aws/vms.csv", "skypilot", "aws", "d" * 40, end, file="x.parquet", rows=writer.rows
    )


def scrape(con, at, usd, make_record):
    load_run(con, RunRecord("aws", "live", at, at, prices=[make_record("p5.48xlarge", usd, at=at)]))


def test_imported_interval_is_cut_around_every_scraped_island(tmp_path, db_path, make_record):
    con = open_warehouse(db_path)
    # scraped: 60 from day 10 to day 12 (then the offer vanished), 58 from day 20 on (still open)
    scrape(con, T + 10 * D, 60.0, make_record)
    scrape(con, T + 12 * D, 60.0, make_record)
    load_run(
        con,
        RunRecord(
            "aws",
            "live",
            T + 13 * D,
            T + 13 * D,
            prices=[make_record("g6.xlarge", 0.8, gpu="L4", gpu_count=1, at=T + 13 * D)],
        ),
    )
    scrape(con, T + 20 * D, 58.0, make_record)
    staged = stage(tmp_path, [(98.32, T, T + 15 * D), (55.04, T + 15 * D, T + 30 * D)])
    loaded = load_staged(con, [staged], tmp_path)
    con.execute("SET TimeZone = 'UTC'")
    got = con.execute(
        """SELECT p.usd_per_hour, p.valid_from, p.valid_to, p.archive_commit IS NOT NULL FROM prices p
           JOIN offers o USING (offer_id) WHERE o.instance_type = 'p5.48xlarge' ORDER BY p.valid_from"""
    ).fetchall()
    con.close()
    assert got == [
        (98.32, T, T + 10 * D, True),
        (60.0, T + 10 * D, T + 13 * D, False),
        (98.32, T + 13 * D, T + 15 * D, True),
        (55.04, T + 15 * D, T + 20 * D, True),
        (58.0, T + 20 * D, None, False),
    ]
    assert loaded[0].prices == 3


def test_a_second_archive_fills_only_what_the_first_left_open(tmp_path, db_path):
    con = open_warehouse(db_path)
    first = tmp_path / "a"
    second = tmp_path / "b"
    first.mkdir()
    second.mkdir()
    load_staged(con, [stage(first, [(10.0, T + 5 * D, T + 10 * D)])], first)
    other = stage(second, [(11.0, T, T + 20 * D)])
    other.repository, other.path = "github.com/o/other", "catalogs/v6/aws/vms.csv"
    load_staged(con, [other], second)
    got = con.execute(
        """SELECT usd_per_hour, valid_from, valid_to, archive_repository FROM prices ORDER BY valid_from"""
    ).fetchall()
    con.close()
    assert [(usd, start, end) for usd, start, end, _ in got] == [
        (11.0, T, T + 5 * D),
        (10.0, T + 5 * D, T + 10 * D),
        (11.0, T + 10 * D, T + 20 * D),
    ]


def test_a_missing_staged_file_is_an_error_and_loads_nothing(tmp_path, db_path):
    from warehouse.errors import WarehouseError

    con = open_warehouse(db_path)
    staged = stage(tmp_path, [(10.0, T, T + D)])
    (tmp_path / "x.parquet").unlink()
    with pytest.raises(WarehouseError, match="missing"):
        load_staged(con, [staged], tmp_path)
    assert con.execute("SELECT count(*) FROM scrape_runs").fetchone() == (0,)
    con.close()


def test_repository_names_and_source_urls():
    assert repository_id("https://github.com/anycloud-sh/catalog.git", "/x") == "github.com/anycloud-sh/catalog"
    assert repository_id("git@github.com:skypilot-org/skypilot-catalog.git", "/x") == (
        "github.com/skypilot-org/skypilot-catalog"
    )
    assert repository_id(None, "/srv/mirror") == "/srv/mirror"
    assert source_url("github.com/o/r", "abc", "gcp/vms.csv") == "https://github.com/o/r/blob/abc/gcp/vms.csv"
    assert source_url("/srv/mirror", "abc", "pricing.yml") == "git:/srv/mirror@abc:pricing.yml"


# -- the bundled history ---------------------------------------------------------------------------------


def test_the_bundled_history_loads_once_with_its_provenance(db_path):
    con = open_warehouse(db_path)
    summary = load_bundle(con, snapshot_dir() / "history")
    assert summary.archives == [
        "github.com/Cyclenerd/google-cloud-pricing-cost-calculator",
        "github.com/anycloud-sh/catalog",
    ]
    assert summary.first == datetime(2022, 2, 9, 23, 7, 12, tzinfo=UTC)
    assert summary.intervals > 20_000
    again = load_bundle(con, snapshot_dir() / "history")
    assert again.intervals == 0 and again.archives == []
    con.execute("SET TimeZone = 'UTC'")
    per_archive = dict(
        con.execute(
            "SELECT archive_repository, count(*) FROM prices WHERE archive_commit IS NOT NULL GROUP BY 1"
        ).fetchall()
    )
    assert per_archive["github.com/Cyclenerd/google-cloud-pricing-cost-calculator"] > 15_000
    # GCP H100 machines: a3-highgpu-8g in us-central1 at Google's list price through the years
    h100 = con.execute(
        """SELECT min(p.usd_per_hour), max(p.usd_per_hour) FROM prices p JOIN offers o USING (offer_id)
           WHERE o.instance_type = 'a3-highgpu-8g' AND o.region = 'us-central1' AND p.pricing = 'on_demand'"""
    ).fetchone()
    assert h100[0] > 85 and h100[1] < 90
    # nothing imported is current
    assert con.execute("SELECT count(*) FROM current_prices").fetchone() == (0,)
    # a2 machines priced without their GPU in 2022 (northamerica-northeast2) are not in the history
    assert con.execute(
        """SELECT count(*) FROM prices p JOIN offers o USING (offer_id) WHERE o.gpu = 'A100-40GB'
           AND o.provider = 'gcp' AND p.pricing = 'on_demand' AND p.usd_per_hour / o.gpu_count < 2"""
    ).fetchone() == (0,)
    con.close()
