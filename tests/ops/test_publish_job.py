"""`refresh --publish`, `schedule --publish` and `costopt publish`: the nightly publish and its failures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scraper.job import EXIT_OK, EXIT_PUBLISH_FAILED, run_job
from tests.conftest import REPO, run_costopt
from tests.warehouse.iceberg_support import iceberg_figures, warehouse_figures
from warehouse.iceberg.catalog import open_catalog, resolve_target
from warehouse.iceberg.publish import publisher


def costopt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_costopt(*args, env=env, timeout=300)


def test_the_nightly_job_publishes_after_a_successful_refresh(tmp_path: Path) -> None:
    db = tmp_path / "wh.duckdb"
    target = resolve_target(f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "lake"), None)
    lines: list[str] = []
    outcomes, code = run_job(
        db, ["lambda", "coreweave"], replay=REPO / "fixtures", log=lines.append, publish=publisher(db, target)
    )
    assert code == EXIT_OK and {o.status for o in outcomes} == {"ok"}
    n = warehouse_figures(db)["price_history"][0]
    assert n > 20
    ph = [line for line in lines if " publish price_history: " in line]
    assert len(ph) == 1 and f"full publish wrote {n} rows" in ph[0]
    ok = [line for line in lines if " publish ok: " in line]
    assert len(ok) == 1 and "4 table(s) changed" in ok[0]  # spot_risk: no Lambda or CoreWeave rows
    assert iceberg_figures(open_catalog(target)) == warehouse_figures(db)


def test_a_failed_publish_is_reported_and_leaves_the_warehouse_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "wh.duckdb"
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the catalog's folder should be")
    target = resolve_target(f"sqlite:///{blocked / 'catalog.db'}", str(tmp_path / "lake"), None)
    sent: list[dict] = []
    monkeypatch.setattr("scraper.notify.post", lambda url, body: sent.append(body))
    lines: list[str] = []
    outcomes, code = run_job(
        db,
        ["lambda"],
        replay=REPO / "fixtures",
        notify="http://127.0.0.1:9/hook",
        log=lines.append,
        publish=publisher(db, target),
    )
    assert outcomes[0].status == "ok" and code == EXIT_PUBLISH_FAILED
    failure = [line for line in lines if "publish to sql catalog" in line]
    assert len(failure) == 1 and "failed" in failure[0] and "Traceback" not in failure[0]
    assert sent and sent[0]["exit_code"] == EXIT_PUBLISH_FAILED
    assert [f["provider"] for f in sent[0]["failures"]] == ["publish"]
    assert warehouse_figures(db)["price_history"][0] == 20  # the prices loaded all the same


def test_no_publish_when_nothing_loaded(tmp_path: Path) -> None:
    calls: list[object] = []
    (tmp_path / "empty").mkdir()
    outcomes, code = run_job(
        tmp_path / "wh.duckdb", ["lambda"], replay=tmp_path / "empty", publish=lambda log: calls.append(log)
    )
    assert outcomes[0].status == "failed" and code == 1 and calls == []


def test_publish_command_end_to_end(tmp_path: Path) -> None:
    db = tmp_path / "wh.duckdb"
    seed = costopt("refresh", "--replay", str(REPO / "fixtures"), "--provider", "lambda", "--db", str(db))
    assert seed.returncode == 0, seed.stderr
    args = ["publish", "--iceberg", "--db", str(db), "--warehouse", str(tmp_path / "lake")]
    env = {"COSTOPT_ICEBERG_CATALOG_URI": f"sqlite:///{tmp_path / 'catalog.db'}"}
    first = costopt(*args, "--format", "json", env=env)
    assert first.returncode == 0, first.stderr
    body = json.loads(first.stdout)
    assert body["changed"] is True and body["namespace"] == "costopt"
    assert {t["table"]: t["total_rows"] for t in body["tables"]}["price_history"] == 20
    second = costopt(*args, env=env)
    assert second.returncode == 0 and "already up to date (no new snapshot)" in second.stderr
    assert "price_history" in second.stdout and "unchanged" in second.stdout


def test_publish_command_errors_are_one_line(tmp_path: Path) -> None:
    missing = costopt("publish", "--db", str(tmp_path / "wh.duckdb"))
    assert missing.returncode == 2 and "--iceberg" in missing.stderr and "Traceback" not in missing.stderr
    secret = costopt("publish", "--iceberg", "--catalog-uri", "postgresql://me:hunter2@db/lake", "--warehouse", "/x")
    assert secret.returncode == 2 and "must not contain a password" in secret.stderr
    assert "hunter2" not in secret.stderr
    nothing = costopt(
        "publish",
        "--iceberg",
        "--db",
        str(tmp_path / "none.duckdb"),
        "--catalog-uri",
        f"sqlite:///{tmp_path / 'c.db'}",
        "--warehouse",
        str(tmp_path / "lake"),
    )
    assert nothing.returncode == 1 and nothing.stderr.count("\n") == 1 and "no warehouse at" in nothing.stderr
    stray = costopt("refresh", "--replay", str(REPO / "fixtures"), "--catalog-uri", "sqlite:///x.db")
    assert stray.returncode == 2 and "only apply with --publish" in stray.stderr


def test_refresh_publish_flag(tmp_path: Path) -> None:
    db = tmp_path / "wh.duckdb"
    done = costopt(
        "refresh",
        "--replay",
        str(REPO / "fixtures"),
        "--provider",
        "coreweave",
        "--db",
        str(db),
        "--publish",
        "--catalog-uri",
        f"sqlite:///{tmp_path / 'catalog.db'}",
        "--warehouse",
        str(tmp_path / "lake"),
    )
    assert done.returncode == 0, done.stderr
    assert "publish ok" in done.stderr
    target = resolve_target(f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "lake"), None)
    assert iceberg_figures(open_catalog(target)) == warehouse_figures(db)
