"""costopt import end to end on real git archives built in the test: idempotent, incremental, atomic."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scraper.archive.importer import import_archive
from tests.conftest import REPO
from tests.scraper.archive_support import aws_csv, commit, gcp_csv, git, init
from warehouse.db import open_warehouse
from warehouse.load import RunRecord, load_run

T = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)
D = timedelta(days=1)
NAME = "github.com/example/prices"
TABLES = ("offers", "prices", "gpu_part_prices", "scrape_runs", "archive_imports")


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """Three days of AWS and GCP snapshots; p5 on-demand cut on day 3; a README commit in between."""
    repo = init(tmp_path / "archive")
    commit(repo, T, {"aws/vms.csv": aws_csv(98.32), "gcp/vms.csv": gcp_csv()})
    commit(repo, T + D, {"aws/vms.csv": aws_csv(98.32, spot_az=(31.0, 29.0))})
    commit(repo, T + D + 3600 * timedelta(seconds=1), {"README.md": "prices\n"})
    commit(repo, T + 2 * D, {"aws/vms.csv": aws_csv(55.04, spot_az=(31.0, 29.0))})
    commit(repo, T + 3 * D, {"README.md": "prices, still\n"})  # the tip: the archive still holds day 3
    return repo


def counts(db: Path) -> dict[str, int]:
    con = open_warehouse(db, read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = open_warehouse(db, read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


P5 = """SELECT p.pricing, p.usd_per_hour, p.valid_from, p.valid_to, p.last_seen, p.archive_commit, p.archive_path,
              p.source, p.archive_repository
       FROM prices p JOIN offers o USING (offer_id)
       WHERE o.instance_type = 'p5.48xlarge' ORDER BY p.pricing, p.valid_from"""


def test_import_makes_closed_intervals_with_provenance(archive, db_path):
    result = import_archive(db_path, archive, repository=NAME)
    c0, c1, _, c3, _ = git(archive, "rev-list", "--reverse", "HEAD").split()

    def url(sha: str) -> str:
        return f"https://{NAME}/blob/{sha}/aws/vms.csv"

    assert rows(db_path, P5) == [
        ("on_demand", 98.32, T, T + 2 * D, T + D, c0, "aws/vms.csv", url(c0), NAME),
        ("on_demand", 55.04, T + 2 * D, T + 3 * D, T + 3 * D, c3, "aws/vms.csv", url(c3), NAME),
        ("spot", 28.0, T, T + D, T, c0, "aws/vms.csv", url(c0), NAME),  # the cheaper of the two zones
        ("spot", 29.0, T + D, T + 3 * D, T + 3 * D, c1, "aws/vms.csv", url(c1), NAME),
    ]
    # imported prices are never current, so plan never sees them
    assert rows(db_path, "SELECT count(*) FROM current_prices") == [(0,)]
    runs = rows(db_path, "SELECT provider, mode, status, observed_at FROM scrape_runs ORDER BY provider")
    assert runs == [("aws", "import", "imported", T + 3 * D), ("gcp", "import", "imported", T + 3 * D)]
    assert {s.path: s.observations for s in result.stage.staged} == {"aws/vms.csv": 3, "gcp/vms.csv": 1}
    assert result.stage.staged[0].unknown == {"K80 (p2)": 1}


def test_gcp_machine_is_gpu_plus_vm_and_gpu_parts_stay_out_of_prices(archive, db_path):
    import_archive(db_path, archive, repository=NAME)
    machine = rows(
        db_path,
        """SELECT o.gpu, o.gpu_count, p.usd_per_hour FROM prices p JOIN offers o USING (offer_id)
           WHERE o.provider = 'gcp' AND p.pricing = 'on_demand'""",
    )
    assert machine == [("A100-40GB", 1.0, pytest.approx(2.93391 + 0.73948))]
    parts = rows(db_path, "SELECT gpu, gpu_count, pricing, usd_per_hour, valid_to FROM gpu_part_prices ORDER BY 3")
    assert parts == [("T4", 1.0, "on_demand", 0.35, T + 3 * D), ("T4", 1.0, "spot", 0.11, T + 3 * D)]
    assert rows(db_path, "SELECT count(*) FROM price_history WHERE gpu = 'T4'") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM gpu_hourly WHERE gpu = 'T4'") == [(0,)]


def test_a_second_import_changes_nothing(archive, db_path):
    import_archive(db_path, archive, repository=NAME)
    before = counts(db_path)
    again = import_archive(db_path, archive, repository=NAME)
    assert again.stage.up_to_date and again.loaded == []
    assert counts(db_path) == before


def test_new_commits_extend_the_open_intervals_and_read_only_new_snapshots(archive, db_path):
    import_archive(db_path, archive, repository=NAME)
    commit(archive, T + 5 * D, {"aws/vms.csv": aws_csv(55.04, spot_az=(25.0, 26.0))})
    commit(archive, T + 6 * D, {"NOTES": "x\n"})
    result = import_archive(db_path, archive, repository=NAME)
    assert {s.path: s.observations for s in result.stage.staged} == {"aws/vms.csv": 1, "gcp/vms.csv": 0}
    on_demand = [r[:5] for r in rows(db_path, P5) if r[0] == "on_demand"]
    assert on_demand == [
        ("on_demand", 98.32, T, T + 2 * D, T + D),
        ("on_demand", 55.04, T + 2 * D, T + 6 * D, T + 6 * D),  # one interval, extended to the new tip
    ]
    spot = [r[1:4] for r in rows(db_path, P5) if r[0] == "spot"]
    assert spot == [(28.0, T, T + D), (29.0, T + D, T + 5 * D), (25.0, T + 5 * D, T + 6 * D)]
    # the GCP file did not change: its intervals reach the new tip too
    assert rows(db_path, "SELECT max(valid_to) FROM gpu_part_prices") == [(T + 6 * D,)]
    assert rows(db_path, "SELECT last_commit FROM archive_imports WHERE path = 'aws/vms.csv'") == [
        (git(archive, "rev-parse", "HEAD").strip(),)
    ]


def test_daily_keeps_the_last_commit_of_each_utc_day(tmp_path, db_path):
    repo = init(tmp_path / "busy")
    commit(repo, T, {"aws/vms.csv": aws_csv(98.32)})
    commit(repo, T + timedelta(hours=6), {"aws/vms.csv": aws_csv(90.0)})
    commit(repo, T + D, {"aws/vms.csv": aws_csv(80.0)})
    result = import_archive(db_path, repo, repository=NAME, only_daily=True)
    assert result.stage.staged[0].observations == 2
    on_demand = [r[1:4] for r in rows(db_path, P5) if r[0] == "on_demand"]
    # the 98.32 of the first commit was replaced the same day: only the day's last snapshot counts
    assert on_demand == [(90.0, T + timedelta(hours=6), T + D), (80.0, T + D, T + D)]


def test_a_snapshot_the_clone_lacks_is_skipped_and_counted(tmp_path, db_path):
    repo = init(tmp_path / "partial")
    commit(repo, T, {"aws/vms.csv": aws_csv(98.32)})
    commit(repo, T + D, {"aws/vms.csv": aws_csv(70.0)})
    commit(repo, T + 2 * D, {"aws/vms.csv": aws_csv(55.04)})
    lost = git(repo, "rev-parse", "HEAD~1:aws/vms.csv").strip()
    (repo / ".git" / "objects" / lost[:2] / lost[2:]).unlink()  # a loose object: gone from the clone
    result = import_archive(db_path, repo, repository=NAME)
    staged = result.stage.staged[0]
    assert (staged.observations, staged.blobs_missing) == (2, 1)
    on_demand = [r[1:4] for r in rows(db_path, P5) if r[0] == "on_demand"]
    # the 70.0 of the lost snapshot is unknown: 98.32 is taken to hold until 55.04 is seen
    assert on_demand == [(98.32, T, T + 2 * D), (55.04, T + 2 * D, T + 2 * D)]


def test_scraped_prices_win_where_they_overlap(archive, db_path, make_record):
    # a scrape already holds p5 on-demand from day 2 on: the import fills only the time before it
    con = open_warehouse(db_path)
    at = T + D + timedelta(hours=12)
    load_run(con, RunRecord("aws", "live", at, at, prices=[make_record("p5.48xlarge", 60.0, at=at)]))
    con.close()
    import_archive(db_path, archive, repository=NAME)
    on_demand = rows(
        db_path,
        """SELECT p.usd_per_hour, p.valid_from, p.valid_to, p.archive_commit IS NOT NULL FROM prices p
           JOIN offers o USING (offer_id) WHERE o.instance_type = 'p5.48xlarge' AND p.pricing = 'on_demand'
           ORDER BY p.valid_from""",
    )
    assert on_demand == [(98.32, T, at, True), (60.0, at, None, False)]
    assert rows(db_path, "SELECT count(*) FROM current_prices WHERE instance_type = 'p5.48xlarge'") == [(1,)]


def test_a_scrape_older_than_imported_history_still_loads_and_wins(archive, db_path, make_record):
    import_archive(db_path, archive, repository=NAME)
    at = T + D + timedelta(hours=12)  # recorded before the archive's end (a replay of older recordings)
    con = open_warehouse(db_path)
    summary = load_run(con, RunRecord("aws", "replay", at, at, prices=[make_record("p5.48xlarge", 60.0, at=at)]))
    con.close()
    assert summary.status == "ok"
    on_demand = rows(
        db_path,
        """SELECT p.usd_per_hour, p.valid_from, p.valid_to FROM prices p JOIN offers o USING (offer_id)
           WHERE o.instance_type = 'p5.48xlarge' AND p.pricing = 'on_demand' ORDER BY p.valid_from""",
    )
    assert on_demand == [(98.32, T, at), (60.0, at, None)]  # the imported 55.04 from day 2 yielded


def test_ctrl_c_while_reading_leaves_the_warehouse_untouched(archive, db_path):
    open_warehouse(db_path).close()
    before = counts(db_path)

    def interrupt(path, done, total, at):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_archive(db_path, archive, repository=NAME, progress=interrupt)
    assert counts(db_path) == before
    assert not list(db_path.parent.glob("costopt-import-*")), "the staging directory is removed"


def test_a_failure_in_the_load_rolls_back_every_file(archive, db_path, monkeypatch):
    import warehouse.archive as loader

    open_warehouse(db_path).close()
    before = counts(db_path)
    real = loader._load_path
    calls = []

    def second_fails(con, item, root, started):
        calls.append(item.path)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(con, item, root, started)

    monkeypatch.setattr(loader, "_load_path", second_fails)
    with pytest.raises(KeyboardInterrupt):
        import_archive(db_path, archive, repository=NAME)
    assert calls == ["aws/vms.csv", "gcp/vms.csv"]
    assert counts(db_path) == before


def test_not_a_clone_and_no_archive_are_one_line_errors(tmp_path, db_path):
    from warehouse.errors import UsageError

    with pytest.raises(UsageError, match="does not exist"):
        import_archive(db_path, tmp_path / "nowhere")
    empty = init(tmp_path / "empty")
    commit(empty, T, {"README.md": "nothing here\n"})
    with pytest.raises(UsageError, match="no price archive found"):
        import_archive(db_path, empty)


def test_the_cli_imports_then_says_it_is_up_to_date(archive, tmp_path):
    # the default warehouse (seeded on first use); an explicit --db would get nothing bundled
    env = dict(os.environ, COSTOPT_DATA_DIR=str(tmp_path / "data"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from cli.app import main; main()", "import", str(archive), *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
            env=env,
        )

    first = run("--repository", NAME, "--format", "json")
    assert first.returncode == 0, first.stderr
    import json

    report = json.loads(first.stdout)
    assert report["repository"] == NAME and not report["up_to_date"]
    # a fresh warehouse is seeded first; the bundled GCP history (Cyclenerd) already covers a2-highgpu-1g
    # in us-central1 in March 2026, so this archive's GCP machine prices fill nothing (held data wins)
    assert "loaded the bundled price snapshot" in first.stderr
    assert {f["path"]: (f["intervals"], f["gpu_parts"]) for f in report["files"]} == {
        "aws/vms.csv": (4, 0),
        "gcp/vms.csv": (0, 2),
    }
    second = run("--repository", NAME)
    assert second.returncode == 0
    assert "already imported up to" in second.stderr
    missing = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cli.app import main; main()",
            "import",
            str(archive / "nope"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env=env,
    )
    assert missing.returncode == 2 and missing.stderr.startswith("costopt: error:") and missing.stderr.count("\n") == 1


def test_sigint_during_a_long_import_exits_130_and_loads_nothing(tmp_path):
    import signal
    import time

    from tests.scraper.archive_support import busy_archive

    repo = busy_archive(tmp_path / "busy.git", commits=1500, rows=400, start=T)
    db = tmp_path / "wh" / "costopt.duckdb"
    db.parent.mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from cli.app import main; main()",
            "import",
            str(repo),
            "--db",
            str(db),
            "--repository",
            NAME,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    deadline = time.monotonic() + 120
    while not list(db.parent.glob("costopt-import-*")) and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    time.sleep(0.3)  # well inside reading the archive
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err  # (the one-line message on Ctrl-C is the CLI's, for every command)
    assert not list(db.parent.glob("costopt-import-*")), "the staging directory is removed"
    assert rows(db, "SELECT count(*) FROM prices WHERE archive_repository = ?", [NAME]) == [(0,)]
    # an explicit --db is the user's own warehouse: nothing bundled was loaded, and the interrupted import left no run
    assert rows(db, "SELECT count(*) FROM scrape_runs WHERE mode = 'import'") == [(0,)]
    assert rows(db, "SELECT count(*) FROM archive_imports") == [(0,)]


def test_bundled_history_into_a_warehouse_started_by_a_refresh(tmp_path):
    db = tmp_path / "wh.duckdb"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from cli.app import main; main()", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )

    assert run("refresh", "--replay", str(REPO / "fixtures")).returncode == 0
    assert rows(db, "SELECT count(*) FROM archive_imports") == [(0,)]  # a refresh brings no history
    first = run("import", "--bundled")
    assert first.returncode == 0, first.stderr
    assert "loaded the bundled price history" in first.stderr and "2022-02-09..2026-07-30" in first.stderr
    assert rows(db, "SELECT count(*) FROM archive_imports") == [(5,)]
    again = run("import", "--bundled")
    assert again.returncode == 0 and "already in" in again.stderr
    both = run("import", str(tmp_path), "--bundled")
    assert both.returncode == 2 and both.stderr.count("\n") == 1
