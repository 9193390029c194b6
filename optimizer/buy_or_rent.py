"""``costopt breakeven`` as one answer: break-even at today's rent and along the projected rent path.

A box bought today competes with rents that fall over its life, so a break-even at today's rent alone
flatters buying. The report pairs two month-by-month break-evens (optimizer/breakeven.py) over the same
inputs:

* **at today's rent**: the rent a renter can get now (optimizer/inputs.rent_observed, or ``--rent-price``)
  held flat for the whole life;
* **along the rent trend**: the same rent projected month by month, ``rent(m) = rent_now x (1 + rate)^(m/12)``,
  with the rate fitted on the GPU's price history (optimizer/rent_trend.py), or the stated default when
  the history is too short, or ``--rent-trend`` when a person states one.

Both carry "never" when owning does not pay off within the hardware's life. The trailing 90-day median
rent is shown beside them, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from optimizer.breakeven import Breakeven, Inputs, RentPath, breakeven
from optimizer.rent_trend import RentTrend, default_trend, override, parse_rate, rent_trend

if TYPE_CHECKING:
    import duckdb


@dataclass(frozen=True, slots=True)
class Report:
    today: Breakeven  # flat at today's rent
    along_trend: Breakeven  # along the projected rent path
    trend: RentTrend
    rent_at_end_of_life: float  # the projected rent per GPU-hour in the last month of the life
    at_history_median: Breakeven | None  # flat at the trailing 90-day median rent, where there is one
    observed: dict[str, Any]  # optimizer.inputs.rent_observed (empty figures with --rent-price)

    def as_dict(self) -> dict[str, Any]:
        """The JSON contract: today's break-even at the top level (as before), the trend's beside it."""
        out = self.today.as_dict()
        median = self.at_history_median
        out["rent"] = {
            "usd_per_gpu_hour": self.today.assumptions["rent_usd_per_gpu_hour"],
            "source": self.today.assumptions["rent_source"],
            "cloud_on_demand": self.observed.get("cloud"),
            "marketplace_median": self.observed.get("market"),
            "history_median_usd_per_gpu_hour": self.observed.get("median"),
            "history_days_observed": self.observed.get("median_days", 0),
            "at_history_median": None
            if median is None
            else {k: median.as_dict()[k] for k in ("months_to_break_even", "break_even_utilization", "never")},
        }
        out["rent_trend"] = self.trend.as_dict()
        along = self.along_trend.as_dict()
        out["along_rent_trend"] = {
            k: along[k]
            for k in (
                "months_to_break_even",
                "break_even_utilization",
                "break_even_hours",
                "never",
                "months_needed",
                "utilization_needed",
            )
        }
        out["along_rent_trend"]["rent_usd_per_gpu_hour_at_end_of_life"] = self.rent_at_end_of_life
        out["along_rent_trend"]["rent_path"] = self.along_trend.assumptions["rent_path"]
        return out


def trend_path(rent_now: float, rate_per_year: float) -> RentPath:
    """Month m of ownership -> the rent projected from today's at ``rate_per_year`` (month 0 is today's)."""
    return lambda month: rent_now * (1 + rate_per_year) ** (month / 12)


def choose_trend(con: duckdb.DuckDBPyConnection | None, gpu: str, stated: str | None) -> RentTrend:
    """``--rent-trend`` when given, else the fit on the warehouse's history (or its stated default)."""
    if stated is not None:
        return override(gpu, parse_rate(stated))
    if con is None:
        return default_trend(gpu, "no warehouse to fit on")
    return rent_trend(con, gpu)


def report(inputs: Inputs, trend: RentTrend, observed: dict[str, Any] | None = None) -> Report:
    """Break-even of ``inputs`` (today's rent, flat) and along ``trend``; ``observed`` adds the 90-day median."""
    observed = observed or {}
    rent_now = inputs.rent_usd_per_gpu_hour
    rate = trend.rate_per_year
    along = replace(
        inputs,
        rent_path=trend_path(rent_now, rate),
        rent_path_source=(
            f"{rate:+.1%} a year from today's ${rent_now:.2f}/GPU-h ({trend.basis}: {trend.source})"
            if trend.basis != "override"
            else f"{rate:+.1%} a year from today's ${rent_now:.2f}/GPU-h (--rent-trend)"
        ),
    )
    life_months = inputs.life_years * 12
    median = observed.get("median")
    at_median = (
        breakeven(replace(inputs, rent_usd_per_gpu_hour=median, rent_source="90-day median")) if median else None
    )
    return Report(
        today=breakeven(inputs),
        along_trend=breakeven(along),
        trend=trend,
        rent_at_end_of_life=trend_path(rent_now, rate)(max(0, int(life_months) - 1)),
        at_history_median=at_median,
        observed=observed,
    )
