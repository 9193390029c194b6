"""What spot really costs once interruptions are paid for.

Model (DESIGN.md, Spot): ``k`` instances each interrupted at rate ``lam`` per hour make a job that is
interrupted at ``k.lam``, i.e. with a mean time between interruptions ``M = 1 / (k.lam)``. The job
checkpoints every ``tau`` hours of work (cost ``C`` each) and after an interruption pays a restart
``R`` and redoes the work since the last checkpoint.

Daly's exponential model (J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
restart dumps", Future Generation Computer Systems 22(3), 2006) gives the expected wall time of
``T`` hours of work with exponentially distributed interruptions, restarts included:

    wall = M . e^(R/M) . (e^((tau + C)/M) - 1) . T / tau

so the overhead fraction is ``wall / T - 1``. Expanded to first order in ``1/M`` it is the familiar

    overhead ~ C / tau + k.lam . (tau / 2 + R)

which is only right while ``k.lam.R`` and ``k.lam.tau`` are small: at 256 instances x 0.02/h with a
15-minute restart the first-order form says +132 % where the exponential one says +274 %.

The interval is Daly's higher-order optimum (same paper)

    tau = sqrt(2.C.M) . [1 + (1/3) sqrt(C / (2M)) + (1/9) (C / (2M))] - C     for C < 2M, else M

which reduces to Young's ``sqrt(2C/(k.lam))`` when ``C << M``. ``--checkpoint-every`` overrides it.

The hazard comes from the AWS Spot Advisor bucket of the offer where the warehouse has one (read
through the one bucket definition in ``warehouse.spot_buckets``), otherwise from a stated
per-provider default (optimizer/defaults.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer import defaults
from warehouse import spot_buckets

# e^x overflows a float above ~709: an exponent this large means interruptions outpace all progress
_MAX_EXPONENT = 700.0


@dataclass(frozen=True, slots=True)
class SpotOverhead:
    hazard_per_instance_hour: float
    hazard_source: str
    checkpoint_hours: float
    restart_hours: float
    interval_hours: float
    overhead: float  # fraction added to the wall time (math.inf: the job cannot finish)
    first_order: float  # the first-order approximation, for comparison and --explain

    @property
    def factor(self) -> float:
        return 1.0 + self.overhead


def hazard_from_bucket(pct_min: float, pct_max: float) -> float:
    """Per-hour hazard from a stored Spot Advisor bucket (monthly interruption-frequency range in percent)."""
    return spot_buckets.hazard_per_hour(pct_min, pct_max)


def young_interval(checkpoint_hours: float, job_hazard: float) -> float:
    """Young's first-order optimum sqrt(2C / (k.lam)) (what Daly's interval reduces to when C << M)."""
    return math.sqrt(2 * checkpoint_hours / job_hazard)


def daly_interval(checkpoint_hours: float, job_hazard: float) -> float:
    """Daly's higher-order optimum checkpoint interval (hours of work between checkpoints)."""
    mtbf = 1.0 / job_hazard
    c = checkpoint_hours
    if c >= 2 * mtbf:
        return mtbf
    ratio = c / (2 * mtbf)
    return math.sqrt(2 * c * mtbf) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - c


def first_order_overhead(checkpoint_hours: float, restart_hours: float, job_hazard: float, interval: float) -> float:
    """C / tau + k.lam . (tau / 2 + R): the first-order expansion of :func:`daly_overhead`."""
    return checkpoint_hours / interval + job_hazard * (interval / 2 + restart_hours)


def daly_overhead(checkpoint_hours: float, restart_hours: float, job_hazard: float, interval: float) -> float:
    """(M / tau) . e^(R/M) . (e^((tau + C)/M) - 1) - 1, with M = 1 / (k.lam); math.inf when it overflows."""
    if job_hazard <= 0:
        return checkpoint_hours / interval
    mtbf = 1.0 / job_hazard
    restart_exp = restart_hours / mtbf
    segment_exp = (interval + checkpoint_hours) / mtbf
    if restart_exp + segment_exp > _MAX_EXPONENT:
        return math.inf
    return (mtbf / interval) * math.exp(restart_exp) * math.expm1(segment_exp) - 1.0


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
    tau = interval_hours if interval_hours is not None else daly_interval(checkpoint, job_hazard)
    return SpotOverhead(
        hazard_per_instance_hour=hazard,
        hazard_source=hazard_source,
        checkpoint_hours=checkpoint,
        restart_hours=restart,
        interval_hours=tau,
        overhead=daly_overhead(checkpoint, restart, job_hazard, tau),
        first_order=first_order_overhead(checkpoint, restart, job_hazard, tau),
    )
