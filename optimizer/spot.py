"""What spot really costs once interruptions are paid for.

Model (DESIGN.md, Spot): ``k`` instances each interrupted at rate ``lam`` per hour make a job that is
interrupted at ``k.lam``. The job checkpoints every ``tau`` hours (cost ``C`` each) and after an
interruption pays a restart ``R`` and redoes on average half an interval. The expected overhead
fraction of useful time is

    overhead = C / tau + k.lam . (tau / 2 + R)

minimized by Young's interval ``tau* = sqrt(2C / (k.lam))`` (Daly's refinement differs by terms of
order C/MTBF, negligible here), where the overhead is ``sqrt(2.C.k.lam) + k.lam.R``.

The hazard comes from the AWS Spot Advisor bucket of the offer where the warehouse has one (monthly
interruption frequency f -> lam = -ln(1 - f) / 730 h, the bucket's midpoint; the open ">20%" bucket
is read as 20-40 %), otherwise from a stated per-provider default (optimizer/defaults.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer import defaults


@dataclass(frozen=True, slots=True)
class SpotOverhead:
    hazard_per_instance_hour: float
    hazard_source: str
    checkpoint_hours: float
    restart_hours: float
    interval_hours: float
    overhead: float  # fraction added to the wall time

    @property
    def factor(self) -> float:
        return 1.0 + self.overhead


def hazard_from_bucket(pct_min: float, pct_max: float) -> float:
    """Per-hour hazard from a monthly interruption-frequency range in percent."""
    high = pct_max if pct_max > pct_min else pct_min * 2  # the open top bucket: ">20%" read as 20-40 %
    share = min(0.99, (pct_min + high) / 2 / 100)
    return -math.log(1 - share) / defaults.HOURS_PER_MONTH


def young_interval(checkpoint_hours: float, job_hazard: float) -> float:
    return math.sqrt(2 * checkpoint_hours / job_hazard)


def overhead_fraction(checkpoint_hours: float, restart_hours: float, job_hazard: float, interval: float) -> float:
    return checkpoint_hours / interval + job_hazard * (interval / 2 + restart_hours)


def spot_overhead(
    *,
    hazard: float,
    hazard_source: str,
    instances: int,
    checkpoint_bytes: float,
    write_gbps: float = defaults.CHECKPOINT_WRITE_GBPS.value,
    restart_hours: float = defaults.RESTART_HOURS.value,
    interval_hours: float | None = None,
) -> SpotOverhead:
    checkpoint = checkpoint_bytes / (write_gbps * 1e9 * instances) / 3600
    restart = restart_hours + checkpoint  # reading the checkpoint back takes about as long as writing it
    job_hazard = hazard * instances
    tau = interval_hours if interval_hours is not None else young_interval(checkpoint, job_hazard)
    return SpotOverhead(
        hazard_per_instance_hour=hazard,
        hazard_source=hazard_source,
        checkpoint_hours=checkpoint,
        restart_hours=restart,
        interval_hours=tau,
        overhead=overhead_fraction(checkpoint, restart, job_hazard, tau),
    )
