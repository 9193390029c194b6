"""`costopt refresh` as a real process leaves through the fast exit (cli/app.py DURABLE_ON_RETURN): what it
wrote must be whole when a fresh process looks, because the interpreter's teardown no longer runs."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import duckdb

from scraper.rawstore import read
from tests.conftest import REPO
from warehouse.paths import raw_dir

PROVIDERS = ["aws", "azure", "coreweave", "gcp", "lambda", "vastai"]


def test_a_refresh_process_leaves_its_loads_and_raw_payloads_whole(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    env = {k: v for k, v in os.environ.items() if k != "COSTOPT_DB"}
    done = subprocess.run(
        [sys.executable, "-m", "cli.app", "refresh", "--db", str(db), "--replay", "fixtures/"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    table = [line.split() for line in done.stdout.splitlines()[3:9]]
    assert [row[0] for row in table] == PROVIDERS
    printed = {row[0]: int(row[2].replace(",", "")) for row in table}

    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT provider, status, offers FROM scrape_runs ORDER BY provider").fetchall()
        offers = dict(con.execute("SELECT provider, count(*) FROM current_prices GROUP BY 1").fetchall())
        payloads = con.execute("SELECT sha256, bytes, path FROM raw_payloads WHERE path IS NOT NULL").fetchall()
    finally:
        con.close()
    assert [(p, s) for p, s, _ in runs] == [(p, "ok") for p in PROVIDERS]
    # the runs the process reported are the runs a fresh process finds, each with prices to read
    assert {p: n for p, _, n in runs} == printed
    assert all(offers[p] > 0 for p in PROVIDERS)
    # and every raw payload it recorded is on disk, complete: its bytes hash to the name it was stored under
    assert len(payloads) >= len(PROVIDERS)
    for sha, size, path in payloads:
        assert path == f"{sha[:2]}/{Path(path).name}"  # relative to the raw folder, so it moves with the warehouse
        body = read(raw_dir(db) / path)
        assert len(body) == size
        assert hashlib.sha256(body).hexdigest() == sha
