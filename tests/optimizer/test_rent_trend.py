"""The rent trend: recovers a known decline, ignores coverage changes, says when it falls back to the default."""

from __future__ import annotations

import math
import random
from datetime import date, timedelta

import pytest

from optimizer.rent_trend import (
    DEFAULT_SOURCE,
    _ols_runs,
    default_trend,
    fit,
    override,
    parse_rate,
    rent_trend,
)
from scraper.refresh import refresh
from warehouse.archive import load_bundle
from warehouse.db import open_warehouse
from warehouse.errors import UsageError
from warehouse.paths import snapshot_dir

D0 = date(2024, 1, 1)


def daily(offer: str, start: date, days: int, price_of_day, provider: str = "gcp"):
    """One interval per day (a price that changes every day)."""
    return [
        (provider, offer, start + timedelta(days=n), start + timedelta(days=n), price_of_day(n)) for n in range(days)
    ]


def test_a_steady_decline_is_recovered():
    rate = -0.30
    points = daily("gcp/us/a", D0, 730, lambda n: 10 * (1 + rate) ** (n / 365.25))
    points += daily("aws/us/b", D0 + timedelta(days=100), 400, lambda n: 7 * (1 + rate) ** (n / 365.25), "aws")
    trend = fit("H100-SXM", points)
    assert trend.basis == "fit"
    assert trend.rate_per_year == pytest.approx(rate, abs=1e-9)
    assert (trend.first_day, trend.last_day, trend.days, trend.offers) == (D0, D0 + timedelta(days=729), 1130, 2)
    assert trend.providers == ("aws", "gcp")
    assert trend.low <= trend.rate_per_year <= trend.high


def test_noise_gives_an_interval_around_the_true_rate():
    random.seed(7)
    rate = -0.20
    points = daily("gcp/us/a", D0, 900, lambda n: 10 * (1 + rate) ** (n / 365.25) * math.exp(random.gauss(0, 0.05)))
    trend = fit("A100-80GB", points, min_providers=1)
    assert trend.low < rate < trend.high
    assert trend.high - trend.low < 0.05
    assert trend.rho is not None and trend.rho < 0.2  # independent daily noise


def test_a_cheap_provider_appearing_is_not_a_price_cut():
    # a list price flat for two years; a marketplace at a fifth of it recorded for the last three months
    points = [("gcp", "gcp/us/a3", D0, D0 + timedelta(days=729), 11.0)]
    points += [("vastai", "vastai/US/x", D0 + timedelta(days=640), D0 + timedelta(days=729), 2.2)]
    trend = fit("H100-SXM", points, min_providers=1)
    assert trend.rate_per_year == pytest.approx(0.0, abs=1e-9)
    # the daily minimum over everything: an 80 % drop in the last 90 days reads as -41 % a year
    assert trend.naive_rate_per_year == pytest.approx(-0.4068, abs=1e-4)


def test_a_price_cut_in_long_flat_runs():
    # 55.04 after 98.32 halfway through two years of an otherwise flat list price (AWS p5, June 2025)
    points = [
        ("aws", "aws/us-east-1/p5", D0, D0 + timedelta(days=364), 98.32 / 8),
        ("aws", "aws/us-east-1/p5", D0 + timedelta(days=365), D0 + timedelta(days=729), 55.04 / 8),
    ]
    trend = fit("H100-SXM", points, min_providers=1)
    # a step of h = ln(55.04/98.32) halfway through N days: least squares slope 1.5 h / N per day
    slope = 1.5 * math.log(55.04 / 98.32) / 730
    assert trend.rate_per_year == pytest.approx(math.exp(slope * 365.25) - 1, abs=2e-3)
    assert trend.rate_per_year == pytest.approx(-0.353, abs=2e-3)
    assert trend.rho > 0.98  # a step: consecutive days are nearly the same observation
    assert (trend.low, trend.high) == (pytest.approx(-0.487, abs=1e-3), pytest.approx(-0.184, abs=1e-3))  # wide


def test_runs_in_closed_form_match_a_day_by_day_fit():
    random.seed(3)
    groups = {}
    for g in range(4):
        runs, t = [], random.randint(-40, 40)
        for _ in range(5):
            length = random.randint(1, 25)
            runs.append((t, t + length - 1, math.log(random.uniform(1, 4))))
            t += length + random.choice([0, 0, 3])
        groups[str(g)] = runs
    closed = _ols_runs(groups)
    points = {g: [(t, y) for a, b, y in runs for t in range(a, b + 1)] for g, runs in groups.items()}
    sxx = sxy = 0.0
    resid: dict[str, list[tuple[int, float]]] = {}
    centred = {}
    for g, pts in points.items():
        mt = sum(t for t, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        centred[g] = [(t, t - mt, y - my) for t, y in pts]
        sxx += sum(dt * dt for _, dt, _ in centred[g])
        sxy += sum(dt * dy for _, dt, dy in centred[g])
    slope = sxy / sxx
    for g, rows in centred.items():
        resid[g] = [(t, dy - slope * dt) for t, dt, dy in rows]
    ssr = sum(e * e for r in resid.values() for _, e in r)
    lagged = sum(r[i][1] * r[i + 1][1] for r in resid.values() for i in range(len(r) - 1) if r[i + 1][0] == r[i][0] + 1)
    assert closed is not None
    assert closed.slope == pytest.approx(slope, rel=1e-9)
    assert closed.rho == pytest.approx(min(max(lagged / ssr, 0.0), 0.99), rel=1e-9)


def test_one_provider_is_not_the_market():
    # AWS's p5 price cut, alone, with a marketplace recorded for the last 90 days only
    points = [
        ("aws", "aws/us-east-1/p5", D0, D0 + timedelta(days=364), 98.32 / 8),
        ("aws", "aws/us-east-1/p5", D0 + timedelta(days=365), D0 + timedelta(days=729), 55.04 / 8),
        ("vastai", "vastai/all/x", D0 + timedelta(days=640), D0 + timedelta(days=729), 2.2),
    ]
    trend = fit("H100-SXM", points)
    assert trend.basis == "default" and trend.rate_per_year == pytest.approx(-0.2846, abs=1e-4)
    assert trend.fit_rate_per_year == pytest.approx(-0.353, abs=2e-3)  # still reported
    assert trend.why_default is not None and trend.why_default.startswith("only aws has price history over 180 days")
    # a second provider with a long history of its own: the fit stands
    points.append(("gcp", "gcp/us/a3", D0, D0 + timedelta(days=729), 11.0))
    both = fit("H100-SXM", points)
    assert both.basis == "fit" and both.providers == ("aws", "gcp", "vastai")
    assert both.fit_rate_per_year == both.rate_per_year


def test_too_little_history_uses_the_stated_default():
    points = daily("lambda/all/gpu_8x_b200", D0, 48, lambda n: 5.0, "lambda")
    trend = fit("B200", points)
    assert trend.basis == "default"
    assert trend.rate_per_year == pytest.approx(2 ** (-1 / 2.07) - 1)
    assert trend.rate_per_year == pytest.approx(-0.2846, abs=1e-4)
    assert (trend.low, trend.high) == (pytest.approx(-0.3624, abs=1e-4), pytest.approx(-0.1986, abs=1e-4))
    assert trend.source == DEFAULT_SOURCE and "Epoch AI" in trend.source
    assert "longest-listed offer over 47 days" in (trend.why_default or "")
    assert fit("B200", []).why_default == "no on-demand price history"


def test_projection_and_override():
    trend = override("H100-SXM", -0.3)
    assert trend.basis == "override"
    assert trend.rent_at(2.0, 2) == pytest.approx(2.0 * 0.7**2)
    path = trend.path(2.0, 1.0, steps_per_year=4)
    assert [round(t, 2) for t, _ in path] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert path[-1][1] == pytest.approx(1.4)
    assert default_trend("X", "why").as_dict()["basis"] == "default"
    with pytest.raises(UsageError):
        override("H100-SXM", -1.5)


@pytest.mark.parametrize(
    ("text", "rate"), [("-30%/y", -0.30), ("-30%", -0.30), ("-0.3", -0.3), ("+5 % / year", 0.05), ("0", 0.0)]
)
def test_rent_trend_flag_forms(text, rate):
    assert parse_rate(text) == pytest.approx(rate)


def test_a_bad_rent_trend_is_a_usage_error():
    with pytest.raises(UsageError, match="-30%/y"):
        parse_rate("fast")


def test_fitted_trends_on_the_bundled_history(db_path):
    con = open_warehouse(db_path)
    load_bundle(con, snapshot_dir() / "history")
    alone = rent_trend(con, "H100-SXM")  # the archives only: GCP is the one provider with a long history
    con.close()
    refresh(db_path, replay=snapshot_dir(), mode="snapshot", keep_raw=False, env={})
    con = open_warehouse(db_path)
    h100 = rent_trend(con, "H100-SXM")
    a100 = rent_trend(con, "A100-40GB")
    b200 = rent_trend(con, "B200")
    con.close()
    # GCP's H100 list price (a3 machines, 2024-05 on) hardly moved; alone, it is not the market
    assert alone.basis == "default" and alone.why_default.startswith("only gcp has price history over 180 days")
    assert alone.fit_rate_per_year is not None and abs(alone.fit_rate_per_year) < 0.02
    # with the snapshot, Azure's archived April prices and November's make a second long history
    assert h100.basis == "fit" and h100.first_day == date(2024, 5, 17)
    assert {"azure", "gcp"} <= set(h100.providers)
    assert abs(h100.rate_per_year) < 0.02 and h100.high - h100.low < 0.02
    assert h100.naive_rate_per_year is not None and h100.naive_rate_per_year < -0.05  # the cheapest of all fell
    assert a100.basis == "fit" and a100.first_day == date(2022, 2, 9)
    assert abs(a100.rate_per_year) < 0.02
    assert b200.basis == "default"  # B200 history: weeks, not months
