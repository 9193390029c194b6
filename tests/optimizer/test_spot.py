"""Spot overhead: Daly's exponential model against hand-computed values in both regimes, and its interval."""

from __future__ import annotations

import math

import pytest

from optimizer import defaults
from optimizer.memory import state_bytes
from optimizer.models import resolve_model
from optimizer.spot import (
    daly_interval,
    daly_overhead,
    first_order_overhead,
    spot_overhead,
    young_interval,
)

STATES_8B = state_bytes(resolve_model("8B"), "full")  # 8e9 params x 16 bytes = 128 GB


def test_small_hazard_daly_equals_the_first_order_form():
    # C = 0.01 h, R = 0.1 h, k.lam = 0.001/h (M = 1000 h), tau = Young's sqrt(2C/(k.lam)) = sqrt(20) = 4.47214 h
    c, r, lam = 0.01, 0.1, 0.001
    tau = young_interval(c, lam)
    assert tau == pytest.approx(4.47214, abs=1e-5)
    # first order: C/tau + k.lam (tau/2 + R) = 0.0022361 + 0.001 x 2.33607 = 0.0045722
    assert first_order_overhead(c, r, lam, tau) == pytest.approx(0.0045722, abs=1e-7)
    # Daly: (M/tau) e^(R/M) (e^((tau+C)/M) - 1) - 1 = 223.6068 x 1.0001 x 0.00449220 - 1 = 0.0045860
    assert daly_overhead(c, r, lam, tau) == pytest.approx(0.0045860, abs=2e-7)
    assert daly_overhead(c, r, lam, tau) == pytest.approx(first_order_overhead(c, r, lam, tau), rel=0.005)


def test_large_hazard_daly_is_far_above_the_first_order_form():
    """The issue's two cases: g2-standard-32 x 224 (GCP 0.01/h) and 256 instances x 0.02/h, 8B model states."""
    # 224 instances: C = 128 GB / (224 GB/s) = 0.571 s = 1.5873e-4 h, R = 0.25 h + C, k.lam = 2.24/h (M = 0.44643 h)
    c = STATES_8B / (1e9 * 224) / 3600
    assert c == pytest.approx(1.5873e-4, rel=1e-4)
    r, lam = 0.25 + c, 2.24
    # first order at Young's interval: sqrt(2 C k.lam) + k.lam.R = 0.026667 + 0.560356 = 0.587
    assert first_order_overhead(c, r, lam, young_interval(c, lam)) == pytest.approx(0.5870, abs=1e-4)
    # Daly at its interval: tau = sqrt(2CM)(1 + sqrt(C/2M)/3 + C/(18M)) - C = 0.0119047 x 1.0044642 - 1.5873e-4
    # = 0.011799 h;
    # (M/tau) e^(R/M) (e^((tau+C)/M) - 1) = 37.85 x 1.7522 x 0.027165 = 1.7988 -> +79.9 %
    tau = daly_interval(c, lam)
    assert tau == pytest.approx(0.011799, abs=2e-6)
    assert daly_overhead(c, r, lam, tau) == pytest.approx(0.7988, abs=5e-4)

    # 256 instances x 0.02/h: k.lam = 5.12/h, C = 1.3889e-4 h: first order +131.8 %, Daly +273.8 %
    c = STATES_8B / (1e9 * 256) / 3600
    r, lam = 0.25 + c, 5.12
    assert first_order_overhead(c, r, lam, young_interval(c, lam)) == pytest.approx(1.3184, abs=1e-3)
    assert daly_overhead(c, r, lam, daly_interval(c, lam)) == pytest.approx(2.7384, abs=2e-3)


def test_daly_interval_is_the_minimum_of_daly_overhead():
    for c, r, lam in ((0.01, 0.1, 0.001), (1.5873e-4, 0.25, 2.24), (0.05, 0.3, 0.2), (0.2, 0.25, 1.0)):
        tau = daly_interval(c, lam)
        best = daly_overhead(c, r, lam, tau)
        grid = min(daly_overhead(c, r, lam, tau * f / 1000) for f in range(100, 5000))
        assert best == pytest.approx(grid, rel=1e-3), (c, r, lam)
        for other in (tau * 0.5, tau * 2):
            assert daly_overhead(c, r, lam, other) > best


def test_daly_interval_reduces_to_young_and_caps_at_the_mtbf():
    assert daly_interval(1e-6, 0.001) == pytest.approx(young_interval(1e-6, 0.001), rel=1e-3)
    assert daly_interval(3.0, 1.0) == 1.0  # C >= 2M: checkpoint once per MTBF


def test_spot_overhead_uses_k_times_the_hazard_and_daly():
    one = spot_overhead(hazard=0.01, hazard_source="t", instances=1, checkpoint_bytes=STATES_8B)
    c = STATES_8B / 1e9 / 3600  # 1 GB/s per instance
    r = defaults.RESTART_HOURS.value + c
    assert (one.checkpoint_hours, one.restart_hours) == (pytest.approx(c), pytest.approx(r))
    assert one.interval_hours == pytest.approx(daly_interval(c, 0.01))
    assert one.overhead == pytest.approx(daly_overhead(c, r, 0.01, one.interval_hours))
    four = spot_overhead(hazard=0.01, hazard_source="t", instances=4, checkpoint_bytes=STATES_8B)
    assert four.overhead == pytest.approx(daly_overhead(c / 4, 0.25 + c / 4, 0.04, daly_interval(c / 4, 0.04)))
    fixed = spot_overhead(hazard=0.01, hazard_source="t", instances=1, checkpoint_bytes=STATES_8B, interval_hours=2.0)
    assert fixed.interval_hours == 2.0 and fixed.overhead == pytest.approx(daly_overhead(c, r, 0.01, 2.0))


def test_interruptions_that_outpace_progress_are_infinite():
    assert math.isinf(daly_overhead(0.1, 10.0, 100.0, 0.05))
