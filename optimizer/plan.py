"""``costopt plan``: the cost and time of one training job on every current offer that can hold it.

For every current price (on-demand, spot, interruptible) and every instance count from the smallest
that holds the job up to ``max_gpus`` (doubling), the estimator gives the wall time range; cost is
wall time x instance price x instances. Spot and interruptible options pay for their interruptions
(optimizer/spot.py) and are compared with on-demand for the same GPU. Options are ranked by expected
cost and the Pareto front of cost against time is marked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from optimizer import defaults
from optimizer.estimate import Estimate, Job, estimate
from optimizer.memory import state_bytes
from optimizer.spot import hazard_from_bucket, spot_overhead
from warehouse.errors import CostoptError, UsageError
from warehouse.gpus import GpuCatalog, GpuSpec

INTERRUPTIBLE = ("spot", "interruptible")
MARKETPLACES = ("vastai",)  # listings are single hosts: no fast fabric between them


class NoOptions(CostoptError):
    """Every offer was removed by a filter or could not hold the job."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class Constraints:
    gpus: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    spot: bool | None = None  # True: only spot/interruptible; False: only on-demand
    deadline_hours: float | None = None
    budget_usd: float | None = None
    max_gpus: int = int(defaults.MAX_GPUS.value)
    checkpoint_interval_hours: float | None = None


@dataclass(slots=True)
class Plan:
    job: Job
    options: pl.DataFrame  # ranked, the columns of OPTION_COLUMNS
    dropped: list[dict[str, Any]] = field(default_factory=list)  # offers removed, with the reason
    prices_as_of: str = ""


OPTION_COLUMNS = [
    "provider", "instance_type", "region", "gpu", "gpus_per_instance", "instances", "pricing",
    "usd_per_instance_hour", "usd_per_gpu_hour", "age_hours", "source", "observed_at",
    "wall_low", "wall_expected", "wall_high", "cost_low", "cost_expected", "cost_high",
    "mfu_expected", "spot_overhead", "hazard_source", "fabric",
]  # fmt: skip


def _fabric(provider: str, gpu: GpuSpec, per_instance: int) -> str:
    if provider in MARKETPLACES:
        return "ethernet"
    return "rdma" if gpu.intra_node in ("nvlink", "infinity_fabric") and per_instance >= 8 else "ethernet"


def _instance_counts(min_instances: int, per_instance: int, max_gpus: int, available: int | None) -> list[int]:
    counts = []
    n = min_instances
    for _ in range(int(defaults.INSTANCE_DOUBLINGS.value) + 1):
        if n * per_instance > max_gpus or (available is not None and n > available):
            break
        counts.append(n)
        n *= 2
    return counts


def build_plan(
    job: Job,
    offers: list[dict[str, Any]],
    gpus: GpuCatalog,
    constraints: Constraints,
    *,
    spot_risk: dict[tuple[str, str, str], tuple[float, float]] | None = None,
    mfu_override: float | None = None,
) -> Plan:
    """Rank every feasible (offer, instance count); ``offers`` are rows of the ``current_prices`` view."""
    spot_risk = spot_risk or {}
    if constraints.max_gpus <= 0:
        raise UsageError("--max-gpus must be positive")
    wanted_gpus = {gpus.resolve(g).name for g in constraints.gpus}
    dropped: list[dict[str, Any]] = []
    filters = [
        ("--gpu", lambda o: not wanted_gpus or o["gpu"] in wanted_gpus),
        ("--provider", lambda o: not constraints.providers or o["provider"] in constraints.providers),
        ("--region", lambda o: not constraints.regions or o["region"] in constraints.regions),
        (
            "--spot/--no-spot",
            lambda o: constraints.spot is None or (o["pricing"] in INTERRUPTIBLE) == constraints.spot,
        ),
    ]
    remaining = [o for o in offers if o["pricing"] in ("on_demand", *INTERRUPTIBLE)]
    if not remaining:
        raise NoOptions("the warehouse has no current on-demand or spot prices: run `costopt refresh`")
    for flag, keep in filters:
        kept = [o for o in remaining if keep(o)]
        if not kept:
            raise NoOptions(f"no offer left: {flag} removed the last {len(remaining)} offers")
        remaining = kept

    cache: dict[tuple[str, int, int, str], Estimate] = {}
    rows: list[dict[str, Any]] = []
    states = state_bytes(job.model, job.method)
    for offer in remaining:
        gpu = gpus.get(offer["gpu"])
        per_instance = offer["gpu_count"]
        label = f"{offer['provider']} {offer['region']} {offer['instance_type']} {offer['pricing']}"
        if gpu is None:
            dropped.append({"offer": label, "reason": f"unknown GPU {offer['gpu']}"})
            continue
        if per_instance < 1 or per_instance != int(per_instance):
            dropped.append({"offer": label, "reason": f"fractional GPU ({per_instance:g} per instance)"})
            continue
        if job.precision == "fp8" and gpu.fp8_tflops is None:
            dropped.append({"offer": label, "reason": f"{gpu.name} has no FP8"})
            continue
        per_instance = int(per_instance)
        fabric = _fabric(offer["provider"], gpu, per_instance)
        probe_key = (gpu.name, per_instance, 1, fabric)  # one instance: the memory probe, shared by equal offers
        if probe_key not in cache:
            cache[probe_key] = estimate(
                job, gpu, per_instance, gpus_per_node=per_instance, fabric=fabric, mfu_override=mfu_override
            )
        probe = cache[probe_key]
        if probe.memory.min_gpus is None:
            dropped.append({"offer": label, "reason": probe.memory.reason})
            continue
        min_instances = math.ceil(probe.memory.min_gpus / per_instance)
        counts = _instance_counts(min_instances, per_instance, constraints.max_gpus, offer.get("offer_count"))
        if not counts:
            need = min_instances * per_instance
            why = (
                f"needs {need} GPUs ({min_instances} instances), above --max-gpus {constraints.max_gpus}"
                if need > constraints.max_gpus
                else f"needs {min_instances} listings, the market has {offer.get('offer_count')}"
            )
            dropped.append({"offer": label, "reason": why})
            continue
        for n in counts:
            key = (gpu.name, per_instance, n, fabric)
            if key not in cache:
                cache[key] = estimate(
                    job, gpu, n * per_instance, gpus_per_node=per_instance, fabric=fabric, mfu_override=mfu_override
                )
            est = cache[key]
            factor, hazard_source = 1.0, ""
            if offer["pricing"] in INTERRUPTIBLE:
                risk = spot_risk.get((offer["provider"], offer["region"], offer["instance_type"]))
                if risk is not None:
                    hazard, hazard_source = (
                        hazard_from_bucket(*risk),
                        f"AWS Spot Advisor {risk[0]:g}-{risk[1]:g}%/month",
                    )
                else:
                    default = defaults.SPOT_HAZARD.get(offer["provider"], defaults.DEFAULT_HAZARD)
                    hazard, hazard_source = default.value, default.source
                over = spot_overhead(
                    hazard=hazard,
                    hazard_source=hazard_source,
                    instances=n,
                    checkpoint_bytes=states,
                    interval_hours=constraints.checkpoint_interval_hours,
                )
                factor = over.factor
            wall = est.wall_hours.scaled(factor)
            price = offer["usd_per_hour"] * n
            rows.append(
                {
                    "provider": offer["provider"],
                    "instance_type": offer["instance_type"],
                    "region": offer["region"],
                    "gpu": gpu.name,
                    "gpus_per_instance": per_instance,
                    "instances": n,
                    "pricing": offer["pricing"],
                    "usd_per_instance_hour": offer["usd_per_hour"],
                    "usd_per_gpu_hour": offer["usd_per_hour"] / per_instance,
                    "age_hours": offer.get("age_hours"),
                    "source": offer.get("source"),
                    "observed_at": offer.get("observed_at"),
                    "wall_low": wall.low,
                    "wall_expected": wall.expected,
                    "wall_high": wall.high,
                    "cost_low": wall.low * price,
                    "cost_expected": wall.expected * price,
                    "cost_high": wall.high * price,
                    "mfu_expected": est.mfu.expected,
                    "spot_overhead": factor - 1.0,
                    "hazard_source": hazard_source,
                    "fabric": fabric,
                }
            )
    if not rows:
        reasons = sorted({d["reason"] for d in dropped})[:3]
        raise NoOptions("no offer can hold the job: " + "; ".join(reasons))
    frame = pl.DataFrame(rows, schema_overrides={"age_hours": pl.Float64, "observed_at": pl.Object})
    frame = _compare_with_on_demand(frame)
    for flag, limit, column in (
        ("--deadline", constraints.deadline_hours, "wall_expected"),
        ("--budget", constraints.budget_usd, "cost_expected"),
    ):
        if limit is None:
            continue
        within = frame.filter(pl.col(column) <= limit)
        for row in (
            frame.filter(pl.col(column) > limit)
            .select("provider", "region", "instance_type", "pricing", "instances")
            .iter_rows()
        ):
            dropped.append({"offer": " ".join(map(str, row[:4])) + f" x{row[4]}", "reason": f"over {flag}"})
        if within.is_empty():
            best = frame.sort(column).row(0, named=True)
            unit = f"{best[column] / 24:.1f} days" if column == "wall_expected" else f"${best[column]:,.0f}"
            raise NoOptions(f"no offer left: {flag} removed the last {frame.height} options (best: {unit})")
        frame = within
    frame = _mark_pareto(frame.sort(["cost_expected", "wall_expected"]))
    return Plan(job=job, options=frame, dropped=dropped)


def _compare_with_on_demand(frame: pl.DataFrame) -> pl.DataFrame:
    """On-demand cost of the same instance and count where it exists, else the cheapest of the same GPU count."""
    on_demand = frame.filter(pl.col("pricing") == "on_demand")
    same = on_demand.select(
        "provider", "region", "instance_type", "instances", pl.col("cost_expected").alias("od_same"),
        pl.col("wall_expected").alias("od_same_wall"),
    )  # fmt: skip
    total = pl.col("gpus_per_instance") * pl.col("instances")
    cheapest = (
        on_demand.with_columns(total.alias("total_gpus"))
        .sort("cost_expected")
        .group_by("gpu", "total_gpus", maintain_order=True)
        .first()
        .select(
            "gpu", "total_gpus", pl.col("cost_expected").alias("od_any"), pl.col("wall_expected").alias("od_any_wall")
        )
    )
    out = (
        frame.with_columns(total.alias("total_gpus"))
        .join(same, on=["provider", "region", "instance_type", "instances"], how="left")
        .join(cheapest, on=["gpu", "total_gpus"], how="left")
    )
    spot = pl.col("pricing").is_in(INTERRUPTIBLE)
    od_cost = pl.coalesce("od_same", "od_any")
    od_wall = pl.coalesce("od_same_wall", "od_any_wall")
    return out.with_columns(
        pl.when(spot).then(od_cost).otherwise(pl.col("cost_expected")).alias("on_demand_cost_usd"),
        pl.when(spot).then(od_cost - pl.col("cost_expected")).otherwise(None).alias("savings_usd"),
        pl.when(spot).then(pl.col("wall_expected") - od_wall).otherwise(None).alias("added_hours"),
        pl.when(spot & pl.col("od_same").is_null() & pl.col("od_any").is_not_null())
        .then(pl.lit("vs cheapest on-demand of the same GPU count"))
        .otherwise(None)
        .alias("savings_basis"),
    ).drop("od_same", "od_same_wall", "od_any", "od_any_wall", "total_gpus")


def _mark_pareto(frame: pl.DataFrame) -> pl.DataFrame:
    """Sorted by cost: an option is on the front when it is faster than every cheaper option."""
    best_wall = math.inf
    flags = []
    for wall in frame["wall_expected"]:
        flags.append(wall < best_wall)
        best_wall = min(best_wall, wall)
    return frame.with_columns(pl.Series("pareto", flags))
