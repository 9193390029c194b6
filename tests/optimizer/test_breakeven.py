"""Buy vs rent, month by month: hand-computed break-even, "never within the hardware's life", a rent path."""

from __future__ import annotations

import math

import pytest

from optimizer.breakeven import Inputs, breakeven, jobs_to_pay_off, months_to_recover
from warehouse.errors import UsageError
from warehouse.gpus import catalog

H100 = catalog().resolve("H100")  # $30,000, 700 W in the GPU table
# 8 x H100: capex 30,000 x 8 x 1.3 = 312,000; recoverable 312,000 x 0.8 = 249,600
# IT power 700 W x 8 x 1.5 = 8.4 kW; power per hour of use 8.4 x 1.3 PUE x $0.12 = $1.3104
# hosting 8.4 kW x $150 = $1,260 a month, busy or idle; hours of use a month 730 x 0.6 = 438


def h100(rent: float, **extra) -> Inputs:
    return Inputs(gpu=H100, count=8, rent_usd_per_gpu_hour=rent, rent_source="test", **extra)


def test_break_even_by_hand():
    result = breakeven(h100(2.5))
    assert result.capex_usd == pytest.approx(312_000)
    assert result.assumptions["power_usd_per_hour_of_use"] == pytest.approx(1.3104)
    assert result.assumptions["hosting_usd_per_month"] == pytest.approx(1260)
    assert result.rent_usd_per_hour == pytest.approx(20.0)
    # saving a month = 438 x (20 - 1.3104) - 1260 = 6,926.04; 249,600 / 6,926.04 = 36.04 months
    assert result.months_to_break_even == pytest.approx(36.0379, abs=1e-3)
    assert result.break_even_hours == pytest.approx(36.0379 * 438, abs=0.5)
    # u* = (249,600 + 1,260 x 48) / (730 x 48 x 18.6896) = 310,080 / 654,883.6 = 0.4735
    assert result.break_even_utilization == pytest.approx(0.47349, abs=1e-4)
    assert result.never is None
    # display figure: power + hosting spread over the hours of use at 60 %
    assert result.opex_usd_per_hour == pytest.approx(1.3104 + 1260 / 438)


def test_break_even_utilization_is_self_consistent():
    """At --utilization u*, owning pays off exactly at the end of the life (hosting no longer depends on u)."""
    for rent, life in ((2.5, 4), (3.1, 5), (1.9, 3)):
        first = breakeven(h100(rent, life_years=life))
        assert first.break_even_utilization is not None
        again = breakeven(h100(rent, life_years=life, utilization=first.break_even_utilization))
        assert again.months_to_break_even == pytest.approx(life * 12, rel=1e-9)


def test_never_within_the_hardware_life_by_hand():
    """The issue's case: 8 x H100 at $1.09/GPU-h used to print 125.7 months for a 48-month life."""
    result = breakeven(h100(1.09))
    # saving a month = 438 x (8.72 - 1.3104) - 1260 = 1,985.40; 249,600 / 1,985.40 = 125.7 months > 48
    assert result.months_to_break_even is None and result.break_even_hours is None
    assert result.months_needed == pytest.approx(125.72, abs=0.01)
    # u* = 310,080 / (730 x 48 x 7.4096) = 1.194: more than every hour of the life
    assert result.break_even_utilization is None
    assert result.utilization_needed == pytest.approx(1.1943, abs=1e-4)
    assert result.never == (
        "never within the hardware's 4-year life: at 60% utilization it would take 125.7 months; "
        "within the life it would need 119% utilization"
    )
    data = result.as_dict()
    assert data["months_to_break_even"] is None and data["never"].startswith("never within the hardware's")


def test_never_when_rent_is_below_the_power_bill():
    result = breakeven(h100(0.1))  # 0.8 $/h of rent against 1.31 $/h of power
    assert result.never == "never: renting costs less per hour of use than the power to run owned GPUs"
    assert result.months_needed is None and result.utilization_needed is None


def test_a_rent_path_plugs_in_month_by_month():
    """A falling rent (issue 13's trend) changes the answer through Inputs.rent_path, nothing else."""
    seen: list[int] = []

    def falling(month: int) -> float:
        seen.append(month)
        return 2.5 if month < 12 else 1.5

    flat = breakeven(h100(2.5))
    path = breakeven(h100(2.5, rent_path=falling, rent_path_source="test: 2.5 then 1.5 after a year"))
    # first year: 12 x 6,926.04 = 83,112.5; then 438 x (12 - 1.3104) - 1260 = 3,422.04 a month:
    # (249,600 - 83,112.5) / 3,422.04 = 48.65 more months -> 60.65 > 48: never within the life
    assert seen[:3] == [0, 1, 2]
    assert path.months_needed == pytest.approx(12 + (249_600 - 12 * 6926.0448) / 3422.0448, abs=1e-3)
    assert path.months_to_break_even is None and flat.months_to_break_even is not None
    assert path.assumptions["rent_path"] == "test: 2.5 then 1.5 after a year"
    assert flat.assumptions["rent_path"].startswith("flat")


def test_months_to_recover_interpolates_within_the_month():
    assert months_to_recover(250.0, lambda m: 100.0) == pytest.approx(2.5)
    assert months_to_recover(100.0, lambda m: -1.0 if m < 3 else 50.0) == pytest.approx(5.06)  # 3 x -1, then 103 / 50
    assert months_to_recover(1.0, lambda m: 0.0, limit=10) is None


def test_partial_last_month_of_the_life():
    # 4.5 years = 54 months; 3.7 years = 44.4 months: the last 0.4 month counts for 0.4
    result = breakeven(h100(2.5, life_years=3.7))
    hosting, margin = 1260.0, 20 - 1.3104
    assert result.break_even_utilization == pytest.approx((249_600 + hosting * 44.4) / (730 * 44.4 * margin))


def test_jobs_to_pay_off_counts_jobs_of_the_break_even_hours():
    result = breakeven(h100(2.5))
    assert jobs_to_pay_off(result, 100.0) == pytest.approx(math.ceil(result.break_even_hours / 100.0 * 10) / 10)
    assert jobs_to_pay_off(breakeven(h100(1.09)), 100.0) is None


def test_bad_values_and_unknown_prices():
    for bad in ({"utilization": 1.5}, {"pue": 0.9}, {"residual": -0.1}, {"life_years": 0}):
        with pytest.raises(UsageError):
            breakeven(h100(2.0, **bad))
    with pytest.raises(UsageError):
        breakeven(Inputs(gpu=H100, count=0, rent_usd_per_gpu_hour=2.0, rent_source="t"))
    with pytest.raises(UsageError, match="--server-cost"):
        breakeven(Inputs(gpu=catalog().resolve("H100-PCIe"), count=8, rent_usd_per_gpu_hour=2.0, rent_source="t"))
