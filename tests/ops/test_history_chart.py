"""History over the bundled years: a fresh install's history, SQL and chart show real movement."""

from __future__ import annotations

import json
import struct
import subprocess
from datetime import date, timedelta

from tests.conftest import run_costopt
from warehouse.plot import cuts, plot_history, segments


def costopt(*args: str) -> subprocess.CompletedProcess[str]:
    return run_costopt(*args, timeout=300)


def test_series_break_at_gaps_and_cuts_are_found():
    d = date(2026, 4, 1)
    points = [(d, 4.0), (d + timedelta(days=1), 4.0), (d + timedelta(days=2), 3.0), (d + timedelta(days=200), 2.5)]
    assert segments(points) == [points[:3], points[3:]]
    assert cuts(points) == [(d + timedelta(days=2), 3.0)]  # -25 % day on day; the gap is no cut


def test_chart_of_a_gappy_history_is_a_png(tmp_path):
    d = date(2024, 5, 17)
    daily = [
        {
            "day": d + timedelta(days=n),
            "provider": "gcp",
            "pricing": "on_demand",
            "min_usd_per_gpu_hour": 11.06,
            "imported": True,
        }
        for n in range(800)
    ] + [
        {
            "day": date(2026, 11, 20),
            "provider": "aws",
            "pricing": "spot",
            "min_usd_per_gpu_hour": 3.3,
            "imported": False,
        }
    ]
    target = tmp_path / "h100.png"
    plot_history(daily, "H100-SXM", target)
    head = target.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == (1000, 520)


def test_a_fresh_install_has_years_of_history(tmp_path, monkeypatch):
    # the default warehouse path (an explicit --db is the user's own warehouse and is never seeded)
    monkeypatch.setenv("COSTOPT_DATA_DIR", str(tmp_path))
    out = costopt("history", "--gpu", "A100-40GB", "--since", "all", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert "imported from github.com/Cyclenerd/google-cloud-pricing-cost-calculator" in out.stderr
    assert "history 2022-02-09..2026-07-30" in out.stderr
    daily = json.loads(out.stdout)
    gcp = [r for r in daily if r["provider"] == "gcp" and r["pricing"] == "on_demand"]
    assert gcp[0]["day"] == "2022-02-09" and gcp[0]["imported"] is True
    assert gcp[-1]["day"] == "2026-11-20" and gcp[-1]["imported"] is False  # the bundled snapshot's day
    spot_days = {
        r["day"]: r["min_usd_per_gpu_hour"] for r in daily if r["provider"] == "gcp" and r["pricing"] == "spot"
    }
    assert len(set(spot_days.values())) > 10  # GCP spot prices moved many times
    # a README example: prices in force on 1 June 2026 come from the imported history
    asof = costopt(
        "sql",
        "SELECT count(*) AS n, count(DISTINCT provider) AS p FROM prices_as_of('2026-06-01')",
        "--format",
        "json",
    )
    [row] = json.loads(asof.stdout)
    assert row["p"] == 1 and row["n"] > 1000  # GCP machines, region by region (Cyclenerd's history)
    monthly = costopt(
        "sql",
        "SELECT count(DISTINCT date_trunc('month', day)) AS months FROM gpu_hourly WHERE gpu = 'L4'",
        "--format",
        "json",
    )
    assert json.loads(monthly.stdout)[0]["months"] >= 40


def test_history_plot_over_the_bundled_years(tmp_path, monkeypatch):
    monkeypatch.setenv("COSTOPT_DATA_DIR", str(tmp_path))
    target = tmp_path / "h100.png"
    out = costopt("history", "--gpu", "H100", "--since", "all", "--plot", str(target), "--wide")
    assert out.returncode == 0, out.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = out.stdout
    assert "imported+scraped" in lines and "2024-05-17" in lines
