"""Buy vs rent: when owning GPUs beats renting them, month by month over the hardware's life.

One box of ``count`` GPUs, bought at month 0 and kept for ``life_years``:

    capex                 = GPU purchase price x count x (1 + server share), or --server-cost
    recoverable           = capex x (1 - residual)        (the residual is the resale value at the end)
    power per hour of use = TDP x count x server overhead x PUE x $/kWh
    hosting per month     = kW x $/kW-month                (a FIXED cost: paid whether the box is busy or idle)
    rent in month m       = rent(m) x count per hour of use (a rent path: flat by default)

    saving in month m     = hours used (730 x utilization) x (rent(m) x count - power) - hosting

Owning pays off in the first month where the cumulative saving reaches ``recoverable`` (interpolated
within the month). When that falls after the hardware's life, or never comes, the answer is "never
within the hardware's life", not a number of months the box will not live to see.

The break-even utilization is the one at which the cumulative saving over the whole life equals
``recoverable``:

    u* = (recoverable + hosting x life months) / (730 x sum over the life of (rent(m) x count - power))

so at ``--utilization u*`` the months to break even are exactly the life: the two figures agree.
(Spreading hosting over the hours of use at an assumed utilization, as before, made ``u*`` depend on
the utilization it was meant to find.)

The rent path is a function of the month (``Inputs.rent_path``). It is flat unless a caller gives one:
a projected falling rent (issue 13: rents fall over a GPU's life) plugs in here without changing the
computation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optimizer import defaults
from optimizer.units import fraction, positive
from warehouse.errors import UsageError
from warehouse.gpus import GpuSpec

RentPath = Callable[[int], float]  # month index (0 = first month of ownership) -> rent, USD per GPU-hour
MAX_MONTHS = 1200  # how far past the life a "never" looks to say when it would have paid off (100 years)


@dataclass(frozen=True, slots=True)
class Inputs:
    gpu: GpuSpec
    count: int
    rent_usd_per_gpu_hour: float  # today's rent (month 0 of a path)
    rent_source: str
    utilization: float = defaults.UTILIZATION.value
    power_price: float = defaults.POWER_PRICE.value
    pue: float = defaults.PUE.value
    life_years: float = defaults.LIFE_YEARS.value
    residual: float = defaults.RESIDUAL.value
    server_cost: float | None = None
    hosting_per_kw_month: float = defaults.HOSTING_PER_KW_MONTH.value
    rent_path: RentPath | None = field(default=None, compare=False)  # None: flat at rent_usd_per_gpu_hour
    rent_path_source: str = "flat: today's rent for the whole life (no trend)"

    def __post_init__(self) -> None:
        if self.count <= 0:
            raise UsageError(f"--count must be a positive whole number, got {self.count}")
        fraction(self.utilization, "--utilization")
        fraction(self.residual, "--residual", allow_zero=True)
        if not math.isfinite(self.power_price) or self.power_price < 0:
            raise UsageError(f"--power-price cannot be negative, got {self.power_price:g}")
        if self.pue < 1:
            raise UsageError(f"--pue must be at least 1, got {self.pue:g}")
        positive(self.life_years, "--life-years")
        positive(self.rent_usd_per_gpu_hour, "--rent-price")
        if self.server_cost is not None:
            positive(self.server_cost, "--server-cost")
        if self.hosting_per_kw_month < 0:
            raise UsageError("--hosting-per-kw-month cannot be negative")

    def rent_at(self, month: int) -> float:
        """Rent per GPU-hour in month ``month`` of ownership."""
        return self.rent_path(month) if self.rent_path is not None else self.rent_usd_per_gpu_hour


@dataclass(frozen=True, slots=True)
class Breakeven:
    capex_usd: float
    opex_usd_per_hour: float  # power + hosting per hour of use at --utilization (a display figure)
    rent_usd_per_hour: float  # the box's rent per hour of use, month 0
    break_even_hours: float | None  # hours of use by the break-even month; None: never within the life
    break_even_utilization: float | None  # u* over the life; None: above 100 %, or never at any utilization
    months_to_break_even: float | None  # at --utilization; None: never within the life
    never: str | None  # why owning does not pay off within the life; None when it does
    months_needed: float | None  # when it would pay off if the box lived on (may exceed the life); None: never
    utilization_needed: float | None  # u* even when above 1; None when no utilization pays off
    assumptions: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "capex_usd": self.capex_usd,
            "opex_usd_per_hour": self.opex_usd_per_hour,
            "rent_usd_per_hour": self.rent_usd_per_hour,
            "break_even_hours": self.break_even_hours,
            "break_even_utilization": self.break_even_utilization,
            "months_to_break_even": self.months_to_break_even,
            "never": self.never,
            "months_needed": self.months_needed,
            "utilization_needed": self.utilization_needed,
            "assumptions": self.assumptions,
        }


def capex(gpu: GpuSpec, count: int, server_cost: float | None) -> tuple[float, str]:
    if server_cost is not None:
        return server_cost, "--server-cost"
    if gpu.purchase_price_usd is None:
        raise UsageError(f"no public purchase price for {gpu.name} in the GPU table: give --server-cost")
    total = gpu.purchase_price_usd * count * (1 + defaults.SERVER_SHARE.value)
    return total, (
        f"{count} x ${gpu.purchase_price_usd:,.0f} ({gpu.purchase_price_source}, {gpu.purchase_price_date}) "
        f"+ {defaults.SERVER_SHARE.value:.0%} server share"
    )


def _month_weights(months: float) -> list[float]:
    """Whole months of 1.0 and a final partial month: 4.5 years -> 54 x 1.0; 50.4 months -> 50 x 1.0 + 0.4."""
    whole = math.floor(months)
    weights = [1.0] * whole
    if months - whole > 1e-9:
        weights.append(months - whole)
    return weights


def months_to_recover(
    recoverable: float, monthly_saving: Callable[[int], float], limit: int = MAX_MONTHS
) -> float | None:
    """First (fractional) month at which the cumulative saving reaches ``recoverable``; None within ``limit``."""
    total = 0.0
    for m in range(limit):
        saving = monthly_saving(m)
        if saving > 0 and total + saving >= recoverable:
            return m + (recoverable - total) / saving
        total += saving
    return None


def breakeven(inputs: Inputs) -> Breakeven:
    gpu, count = inputs.gpu, inputs.count
    capex_usd, capex_source = capex(gpu, count, inputs.server_cost)
    kw = gpu.tdp_w * count * defaults.SERVER_POWER_OVERHEAD.value / 1000
    power = kw * inputs.pue * inputs.power_price  # per hour of use
    hosting = kw * inputs.hosting_per_kw_month  # per month, busy or idle
    recoverable = capex_usd * (1 - inputs.residual)
    hours_used = defaults.HOURS_PER_MONTH * inputs.utilization
    life_months = inputs.life_years * 12
    life_hours = inputs.life_years * defaults.HOURS_PER_YEAR

    def margin(month: int) -> float:  # what one hour of use saves against renting, before hosting
        return inputs.rent_at(month) * count - power

    def saving(month: int) -> float:
        return hours_used * margin(month) - hosting

    needed = months_to_recover(recoverable, saving)
    within = needed is not None and needed <= life_months + 1e-9
    weights = _month_weights(life_months)
    margin_over_life = sum(w * margin(m) for m, w in enumerate(weights))
    u_star = (
        (recoverable + hosting * life_months) / (defaults.HOURS_PER_MONTH * margin_over_life)
        if margin_over_life > 0
        else None
    )
    never = None
    if not within:
        if margin(0) <= 0 and margin_over_life <= 0:
            never = "never: renting costs less per hour of use than the power to run owned GPUs"
        elif needed is None:
            never = f"never within the hardware's {inputs.life_years:g}-year life, nor in {MAX_MONTHS // 12} years"
        else:
            never = (
                f"never within the hardware's {inputs.life_years:g}-year life: at {inputs.utilization:.0%} "
                f"utilization it would take {needed:.1f} months"
            )
        if u_star is not None:  # what utilization would pay it off within the life, even when today's never does
            never += (
                f"; within the life it would need {u_star:.0%} utilization"
                if u_star > 1
                else f"; within the life it would pay off at {u_star:.0%} utilization or more"
            )
    rent_now = inputs.rent_at(0)
    return Breakeven(
        capex_usd=capex_usd,
        opex_usd_per_hour=power + hosting / hours_used,
        rent_usd_per_hour=rent_now * count,
        break_even_hours=needed * hours_used if within and needed is not None else None,
        break_even_utilization=u_star if u_star is not None and u_star <= 1 else None,
        months_to_break_even=needed if within else None,
        never=never,
        months_needed=needed,
        utilization_needed=u_star,
        assumptions={
            "gpu": gpu.name,
            "count": count,
            "capex_source": capex_source,
            "recoverable_usd": recoverable,
            "rent_usd_per_gpu_hour": rent_now,
            "rent_source": inputs.rent_source,
            "rent_path": inputs.rent_path_source,
            "utilization": inputs.utilization,
            "power_price_usd_per_kwh": inputs.power_price,
            "pue": inputs.pue,
            "it_power_kw": kw,
            "power_usd_per_hour_of_use": power,
            "hosting_per_kw_month": inputs.hosting_per_kw_month,
            "hosting_usd_per_month": hosting,
            "life_years": inputs.life_years,
            "life_months": life_months,
            "life_hours": life_hours,
            "residual": inputs.residual,
            "server_share": defaults.SERVER_SHARE.value if inputs.server_cost is None else None,
            "server_power_overhead": defaults.SERVER_POWER_OVERHEAD.value,
        },
    )


def jobs_to_pay_off(result: Breakeven, job_hours: float) -> float | None:
    """After how many jobs of ``job_hours`` of use owning the box pays off within its life (``plan --buy``);
    None when it never does. ``result`` is a break-even at the job's own rent per hour of use."""
    if result.break_even_hours is None:
        return None
    return math.ceil(result.break_even_hours / job_hours * 10) / 10
