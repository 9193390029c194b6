"""Buy vs rent: when owning GPUs beats renting them at the prices actually observed.

All quantities are for one box of ``count`` GPUs and per hour of use:

    capex            = GPU purchase price x count x (1 + server share), or --server-cost
    opex per hour    = power (TDP x count x server overhead x PUE x $/kWh)
                       + hosting (kW x $/kW-month x 12 / (8760 x utilization): a fixed cost spread
                         over the hours the box is actually used)
    rent per hour    = observed $/GPU-hour x count
    break-even hours = capex x (1 - residual) / (rent - opex)

so that break-even hours x (rent - opex) = capex x (1 - residual) exactly. Break-even utilization is
that over the life's hours; months to break even divide it by the hours used per month.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from optimizer import defaults
from optimizer.units import fraction, positive
from warehouse.errors import UsageError
from warehouse.gpus import GpuSpec


@dataclass(frozen=True, slots=True)
class Inputs:
    gpu: GpuSpec
    count: int
    rent_usd_per_gpu_hour: float
    rent_source: str
    utilization: float = defaults.UTILIZATION.value
    power_price: float = defaults.POWER_PRICE.value
    pue: float = defaults.PUE.value
    life_years: float = defaults.LIFE_YEARS.value
    residual: float = defaults.RESIDUAL.value
    server_cost: float | None = None
    hosting_per_kw_month: float = defaults.HOSTING_PER_KW_MONTH.value

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


@dataclass(frozen=True, slots=True)
class Breakeven:
    capex_usd: float
    opex_usd_per_hour: float
    rent_usd_per_hour: float
    break_even_hours: float | None  # None: renting is cheaper than even running owned GPUs
    break_even_utilization: float | None
    months_to_break_even: float | None
    assumptions: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "capex_usd": self.capex_usd,
            "opex_usd_per_hour": self.opex_usd_per_hour,
            "rent_usd_per_hour": self.rent_usd_per_hour,
            "break_even_hours": self.break_even_hours,
            "break_even_utilization": self.break_even_utilization,
            "months_to_break_even": self.months_to_break_even,
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


def breakeven(inputs: Inputs) -> Breakeven:
    gpu, count = inputs.gpu, inputs.count
    capex_usd, capex_source = capex(gpu, count, inputs.server_cost)
    kw = gpu.tdp_w * count * defaults.SERVER_POWER_OVERHEAD.value / 1000
    power = kw * inputs.pue * inputs.power_price
    hosting = kw * inputs.hosting_per_kw_month * 12 / (defaults.HOURS_PER_YEAR * inputs.utilization)
    opex = power + hosting
    rent = inputs.rent_usd_per_gpu_hour * count
    recoverable = capex_usd * (1 - inputs.residual)
    hours = recoverable / (rent - opex) if rent > opex else None
    life_hours = inputs.life_years * defaults.HOURS_PER_YEAR
    return Breakeven(
        capex_usd=capex_usd,
        opex_usd_per_hour=opex,
        rent_usd_per_hour=rent,
        break_even_hours=hours,
        break_even_utilization=hours / life_hours if hours is not None else None,
        months_to_break_even=hours / (inputs.utilization * defaults.HOURS_PER_MONTH) if hours is not None else None,
        assumptions={
            "gpu": gpu.name,
            "count": count,
            "capex_source": capex_source,
            "rent_usd_per_gpu_hour": inputs.rent_usd_per_gpu_hour,
            "rent_source": inputs.rent_source,
            "utilization": inputs.utilization,
            "power_price_usd_per_kwh": inputs.power_price,
            "pue": inputs.pue,
            "it_power_kw": kw,
            "power_usd_per_hour": power,
            "hosting_per_kw_month": inputs.hosting_per_kw_month,
            "hosting_usd_per_hour_of_use": hosting,
            "life_years": inputs.life_years,
            "residual": inputs.residual,
            "server_share": defaults.SERVER_SHARE.value if inputs.server_cost is None else None,
            "server_power_overhead": defaults.SERVER_POWER_OVERHEAD.value,
            "life_hours": life_hours,
            "never": None if hours is not None else "renting costs less per hour than running owned GPUs",
        },
    )


def jobs_to_pay_off(result: Breakeven, job_wall_hours: float, job_rent_cost: float) -> float | None:
    """After how many such jobs owning the GPUs pays off (``plan --buy``)."""
    saving = job_rent_cost - result.opex_usd_per_hour * job_wall_hours
    if saving <= 0:
        return None
    recoverable = result.capex_usd * (1 - result.assumptions["residual"])
    return math.ceil(recoverable / saving * 10) / 10
