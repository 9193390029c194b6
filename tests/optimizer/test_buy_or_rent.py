"""Break-even along a falling rent: hand-computed months, "never", and the JSON contract of `breakeven`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from optimizer.breakeven import Inputs
from optimizer.buy_or_rent import report, trend_path
from optimizer.rent_trend import default_trend, override
from tests.conftest import REPO
from warehouse.gpus import catalog

H100 = catalog().resolve(
    "H100"
)  # $30,000, 700 W: 8 x H100 recover 249,600; power $1.3104/h of use; hosting $1,260/month


def h100(rent: float, **extra) -> Inputs:
    return Inputs(gpu=H100, count=8, rent_usd_per_gpu_hour=rent, rent_source="test", **extra)


def test_the_path_starts_at_today_and_falls_at_the_rate():
    path = trend_path(2.5, -0.2)
    assert path(0) == 2.5
    assert path(12) == pytest.approx(2.0)
    assert path(47) == pytest.approx(2.5 * 0.8 ** (47 / 12))


def test_a_falling_rent_delays_break_even_by_hand():
    # month m saves 730 u x (8 x 2.5 x 0.8^(m/12) - 1.3104) - 1260; summed month by month:
    # at 80 % utilization the 249,600 are recovered 0.439 into month 39 (39.44 months; flat: 25.96)
    answer = report(h100(2.5, utilization=0.8), override("H100-SXM", -0.2))
    assert answer.today.months_to_break_even == pytest.approx(249_600 / (584 * (20 - 1.3104) - 1260), abs=1e-3)
    assert answer.along_trend.months_to_break_even == pytest.approx(39.4392, abs=1e-3)
    assert answer.rent_at_end_of_life == pytest.approx(2.5 * 0.8 ** (47 / 12))
    # u* along the path = (249,600 + 1,260 x 48) / (730 x sum over 48 months of (20 x 0.8^(m/12) - 1.3104))
    #                   = 310,080 / (730 x 578.0224) = 0.7349
    assert answer.along_trend.break_even_utilization == pytest.approx(0.73486, abs=1e-4)


def test_never_along_the_trend_while_today_it_pays():
    answer = report(h100(2.5), override("H100-SXM", -0.2))  # 60 % utilization
    assert answer.today.never is None and answer.today.months_to_break_even == pytest.approx(36.04, abs=0.01)
    along = answer.along_trend
    assert along.months_to_break_even is None and along.months_needed is None  # the rent falls below the power
    assert along.never == (
        "never within the hardware's 4-year life, nor in 100 years; "
        "within the life it would pay off at 73% utilization or more"
    )
    data = answer.as_dict()
    assert data["months_to_break_even"] == pytest.approx(36.04, abs=0.01)  # the top level: today's rent
    assert data["along_rent_trend"]["never"] == along.never
    assert data["rent_trend"]["basis"] == "override" and data["rent_trend"]["rate_per_year"] == -0.2


def test_the_default_trend_is_named_with_its_reason():
    answer = report(h100(2.5), default_trend("B200", "under 180 days of history"))
    data = answer.as_dict()
    assert data["rent_trend"]["basis"] == "default" and data["rent_trend"]["why_default"] == "under 180 days of history"
    assert "Epoch AI" in data["along_rent_trend"]["rent_path"]
    assert data["rent_trend"]["rate_per_year"] == pytest.approx(-0.2846, abs=1e-4)


def test_breakeven_json_carries_today_and_the_trend(tmp_path, monkeypatch):
    monkeypatch.setenv("COSTOPT_DATA_DIR", str(tmp_path))  # the default warehouse: seeded with snapshot and history
    out = subprocess.run(
        [sys.executable, "-c", "from cli.app import main; main()", "breakeven", "--gpu", "H100", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    trend = data["rent_trend"]
    assert trend["basis"] == "fit" and trend["period"] == "2024-05-17..2026-11-20"
    assert {"azure", "gcp"} <= set(trend["providers"])
    assert data["along_rent_trend"]["rent_usd_per_gpu_hour_at_end_of_life"] == pytest.approx(
        data["rent"]["usd_per_gpu_hour"] * (1 + trend["rate_per_year"]) ** (47 / 12), rel=1e-3
    )
    stated = subprocess.run(
        [sys.executable, "-c", "from cli.app import main; main()", "breakeven", "--gpu", "H100", "--rent-trend",
         "-30%/y", "--rent-price", "2.5", "--format", "json", "--exact"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )  # fmt: skip
    assert stated.returncode == 0, stated.stderr
    again = json.loads(stated.stdout)
    assert again["rent_trend"]["basis"] == "override" and again["rent_trend"]["rate_per_year"] == -0.3
    assert again["along_rent_trend"]["rent_usd_per_gpu_hour_at_end_of_life"] == pytest.approx(2.5 * 0.7 ** (47 / 12))
    bad = subprocess.run(
        [
            sys.executable,
            "-c",
            "from cli.app import main; main()",
            "breakeven",
            "--gpu",
            "H100",
            "--rent-trend",
            "fast",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--rent-trend" in bad.stderr
