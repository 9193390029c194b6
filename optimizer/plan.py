"""``costopt plan``: the cost and time of one training job on every current offer that can hold it.

For every current price (on-demand, spot, interruptible) and every instance count from the smallest
that holds the job up to ``--max-gpus`` -- the minimum, its doublings, the largest count under the cap
and, with ``--deadline``, the smallest count that meets it -- the estimator gives the wall time range;
cost is wall time x instance price x instances. The work is O(offers x counts) with
O(log(max_gpus)) counts per offer, and estimates are shared by every offer of the same GPU shape.

* Marketplace groups (Vast.ai) are priced at what a renter of k instances can expect, from the
  group's reliable listings (optimizer/market.py), never at one listing's floor; an option needing
  more instances than there are listings is not offered.
* Spot and interruptible options pay for their interruptions (optimizer/spot.py, Daly's model) and
  are compared with on-demand of the same instance (or the cheapest on-demand of the same GPU count),
  whether or not on-demand options are shown (``--spot``).
* Identical options in several regions (same provider, instance type, pricing, price and count)
  collapse into one row listing the regions.
* Options are ranked by expected cost, those slower than the horizon (default 90 days) after the
  others and flagged; the Pareto front of cost against time is marked.
* A job whose fastest option takes more than a century is refused as an input error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from optimizer import defaults
from optimizer.estimate import Estimate, Job, estimate
from optimizer.inputs import MARKETPLACES
from optimizer.market import Market, MarketPolicy, market_of
from optimizer.memory import state_bytes
from optimizer.spot import hazard_from_bucket, spot_overhead
from warehouse import spot_buckets
from warehouse.errors import CostoptError, UsageError
from warehouse.gpus import GpuCatalog, GpuSpec

INTERRUPTIBLE = ("spot", "interruptible")


class NoOptions(CostoptError):
    """Every offer was removed by a filter or could not hold the job."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class Constraints:
    gpus: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()  # provider regions; for marketplaces, listing countries
    spot: bool | None = None  # True: only spot/interruptible; False: only on-demand
    deadline_hours: float | None = None
    budget_usd: float | None = None
    max_gpus: int = int(defaults.MAX_GPUS.value)
    checkpoint_interval_hours: float | None = None
    horizon_hours: float = defaults.HORIZON_DAYS.value * 24
    market: MarketPolicy = field(default_factory=MarketPolicy)


@dataclass(slots=True)
class Plan:
    job: Job
    options: pl.DataFrame  # ranked, the columns of OPTION_COLUMNS plus the on-demand comparison
    dropped: list[dict[str, Any]] = field(default_factory=list)  # offers removed, with the reason
    prices_as_of: str = ""


OPTION_COLUMNS = [
    "provider", "instance_type", "region", "gpu", "gpus_per_instance", "instances", "pricing",
    "usd_per_instance_hour", "usd_per_gpu_hour", "age_hours", "source", "observed_at",
    "source_time", "source_basis", "source_age_hours", "effective_since", "data_origin",
    "listings", "market_basis",
    "wall_low", "wall_expected", "wall_high", "cost_low", "cost_expected", "cost_high",
    "mfu_expected", "spot_overhead", "spot_overhead_first_order", "hazard_source", "fabric",
]  # fmt: skip


def _fabric(provider: str, gpu: GpuSpec, per_instance: int) -> str:
    if provider in MARKETPLACES:
        return "ethernet"
    return "rdma" if gpu.intra_node in ("nvlink", "infinity_fabric") and per_instance >= 8 else "ethernet"


def instance_counts(low: int, high: int, extra: tuple[int, ...] = ()) -> list[int]:
    """``low``, its doublings up to ``high``, ``high`` itself, and any ``extra`` count in range; ascending.

    No hidden cap: the largest count allowed (``high``) is always tried, and the number of counts is
    O(log(high / low)).
    """
    if high < low:
        return []
    counts = set()
    n = low
    while n <= high:
        counts.add(n)
        n *= 2
    counts.add(high)
    counts.update(c for c in extra if low <= c <= high)
    return sorted(counts)


def smallest_meeting(low: int, high: int, hours_at: Callable[[int], float], limit: float) -> int | None:
    """Smallest count in [low, high] whose wall time is within ``limit``, by bisection (wall time falls with count
    over the range a plan explores); None when even ``high`` misses it."""
    if hours_at(high) > limit:
        return None
    if hours_at(low) <= limit:
        return low
    lo, hi = low, high  # hours_at(lo) > limit >= hours_at(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if hours_at(mid) <= limit:
            hi = mid
        else:
            lo = mid
    return hi


def build_plan(
    job: Job,
    offers: list[dict[str, Any]],
    gpus: GpuCatalog,
    constraints: Constraints,
    *,
    spot_risk: dict[tuple[str, str, str], tuple[float, float]] | None = None,
    mfu_override: float | None = None,
) -> Plan:
    """Rank every feasible (offer, instance count); ``offers`` are rows of ``optimizer.inputs.current_offers``."""
    spot_risk = spot_risk or {}
    if constraints.max_gpus <= 0:
        raise UsageError("--max-gpus must be positive")
    policy = replace(constraints.market, countries=constraints.regions)
    wanted_gpus = {gpus.resolve(g).name for g in constraints.gpus}
    dropped: list[dict[str, Any]] = []

    def in_region(o: dict[str, Any]) -> bool:
        if not constraints.regions or o["region"] in constraints.regions:
            return True
        listings = (o.get("listings") or []) if o["provider"] in MARKETPLACES else []
        return any(x.get("country") in constraints.regions for x in listings)

    filters = [
        ("--gpu", lambda o: not wanted_gpus or o["gpu"] in wanted_gpus),
        ("--provider", lambda o: not constraints.providers or o["provider"] in constraints.providers),
        ("--region", in_region),
    ]
    remaining = [o for o in offers if o["pricing"] in ("on_demand", *INTERRUPTIBLE)]
    if not remaining:
        raise NoOptions("the warehouse has no current on-demand or spot prices: run `costopt refresh`")
    for flag, keep in filters:
        kept = [o for o in remaining if keep(o)]
        if not kept:
            raise NoOptions(f"no offer left: {flag} removed the last {len(remaining)} offers")
        remaining = kept
    # --spot/--no-spot chooses what is shown; on-demand offers stay in the computation as the baseline of spot
    shown = [o for o in remaining if constraints.spot is None or (o["pricing"] in INTERRUPTIBLE) == constraints.spot]
    if not shown:
        raise NoOptions(f"no offer left: --spot/--no-spot removed the last {len(remaining)} offers")
    if constraints.spot is False:
        remaining = shown

    builder = _Builder(job, gpus, constraints, policy, spot_risk, mfu_override, dropped)
    # spot first: the on-demand twin of a spot offer is also priced at the counts the spot rows use (a
    # deadline's count differs between them), so that every spot row has its same-count baseline
    ordered = sorted(remaining, key=lambda o: o["pricing"] not in INTERRUPTIBLE)
    rows = [row for offer in ordered for row in builder.rows(offer)]
    if not rows:
        raise NoOptions(_no_option_reason(dropped, constraints.max_gpus))
    _refuse_absurd(rows)
    frame = pl.DataFrame(
        rows,
        schema_overrides={
            "age_hours": pl.Float64,
            "source_age_hours": pl.Float64,
            "listings": pl.Int64,
            "market_basis": pl.Utf8,
            "market_rule": pl.Utf8,
            "observed_at": pl.Utf8,
            "source_time": pl.Utf8,
            "effective_since": pl.Utf8,
        },
        infer_schema_length=None,
    )
    frame = _collapse_regions(_compare_with_on_demand(frame))
    if constraints.spot is True:
        frame = frame.filter(pl.col("pricing").is_in(INTERRUPTIBLE))
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
            raise NoOptions(
                f"no offer left: {flag} removed the last {frame.height} options "
                f"(best: {unit} with up to --max-gpus {constraints.max_gpus})"
            )
        frame = within
    frame = _mark_pareto(frame.sort(["cost_expected", "wall_expected"]))
    frame = frame.with_columns((pl.col("wall_expected") > constraints.horizon_hours).alias("slow"))
    frame = frame.sort(["slow", "cost_expected", "wall_expected"], maintain_order=True)
    return Plan(job=job, options=frame, dropped=dropped)


@dataclass
class _Builder:
    """Turns one offer into its rows (one per instance count); shares estimates between equal GPU shapes."""

    job: Job
    gpus: GpuCatalog
    constraints: Constraints
    policy: MarketPolicy
    spot_risk: dict[tuple[str, str, str], tuple[float, float]]
    mfu_override: float | None
    dropped: list[dict[str, Any]]
    cache: dict[tuple[str, int, int, str], Estimate] = field(default_factory=dict)
    spot_counts: dict[tuple[str, str, str], set[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.states = state_bytes(self.job.model, self.job.method)

    def estimate(self, gpu: GpuSpec, per_instance: int, n: int, fabric: str) -> Estimate:
        key = (gpu.name, per_instance, n, fabric)
        if key not in self.cache:
            self.cache[key] = estimate(
                self.job, gpu, n * per_instance, gpus_per_node=per_instance, fabric=fabric,
                mfu_override=self.mfu_override,
            )  # fmt: skip
        return self.cache[key]

    def hazard(self, offer: dict[str, Any]) -> tuple[float, str]:
        risk = self.spot_risk.get((offer["provider"], offer["region"], offer["instance_type"]))
        if risk is not None:
            return hazard_from_bucket(*risk), spot_buckets.describe(*risk)
        default = defaults.SPOT_HAZARD.get(offer["provider"], defaults.DEFAULT_HAZARD)
        return default.value, default.source

    def drop(self, offer: dict[str, Any], reason: str) -> list[dict[str, Any]]:
        label = f"{offer['provider']} {offer['region']} {offer['instance_type']} {offer['pricing']}"
        self.dropped.append({"offer": label, "reason": reason})
        return []

    def rows(self, offer: dict[str, Any]) -> list[dict[str, Any]]:
        gpu = self.gpus.get(offer["gpu"])
        per_instance = offer["gpu_count"]
        if gpu is None:
            return self.drop(offer, f"unknown GPU {offer['gpu']}")
        if per_instance < 1 or per_instance != int(per_instance):
            return self.drop(offer, f"fractional GPU ({per_instance:g} per instance)")
        if self.job.precision == "fp8" and gpu.fp8_tflops is None:
            return self.drop(offer, f"{gpu.name} has no FP8")
        per_instance = int(per_instance)
        fabric = _fabric(offer["provider"], gpu, per_instance)
        probe = self.estimate(gpu, per_instance, 1, fabric)  # one instance: the memory probe
        if probe.memory.min_gpus is None:
            return self.drop(offer, probe.memory.reason)
        interruptible = offer["pricing"] in INTERRUPTIBLE
        market: Market | None = None
        available: int | None = None
        if offer["provider"] in MARKETPLACES:
            market = market_of(offer.get("listings"), self.policy, interruptible=interruptible)
            if market is not None:
                if market.count < self.policy.min_listings:
                    return self.drop(
                        offer,
                        f"{market.count} of {market.total} listings pass --min-reliability "
                        f"{self.policy.min_reliability:g}{' and --region' if self.policy.countries else ''}; "
                        f"fewer than --min-listings {self.policy.min_listings}",
                    )
                available = market.count
            else:
                available = offer.get("offer_count")  # a warehouse without listing detail: the group's count
        low = math.ceil(probe.memory.min_gpus / per_instance)
        high = self.constraints.max_gpus // per_instance
        if available is not None:
            high = min(high, int(available))
        if low > high:
            need = low * per_instance
            if need > self.constraints.max_gpus:
                return self.drop(offer, f"needs {need} GPUs ({low} instances), more than --max-gpus "
                                        f"{self.constraints.max_gpus}")  # fmt: skip
            return self.drop(offer, f"needs {low} listings, the market has {available}")
        hazard, hazard_source = self.hazard(offer) if interruptible else (0.0, "")

        def overhead(n: int) -> tuple[float, float]:
            if not interruptible:
                return 0.0, 0.0
            over = spot_overhead(
                hazard=hazard,
                hazard_source=hazard_source,
                instances=n,
                checkpoint_bytes=self.states,
                interval_hours=self.constraints.checkpoint_interval_hours,
            )
            return over.overhead, over.first_order

        def hours_at(n: int) -> float:
            return self.estimate(gpu, per_instance, n, fabric).wall_hours.expected * (1 + overhead(n)[0])

        twin = (offer["provider"], offer["region"], offer["instance_type"])
        extra: tuple[int, ...] = () if interruptible else tuple(self.spot_counts.get(twin, ()))
        if self.constraints.deadline_hours is not None:
            meet = smallest_meeting(low, high, hours_at, self.constraints.deadline_hours)
            extra += (meet,) if meet is not None else ()
        counts = instance_counts(low, high, extra)
        if interruptible:
            self.spot_counts.setdefault(twin, set()).update(counts)
        out = []
        for n in counts:
            est = self.estimate(gpu, per_instance, n, fabric)
            over, first = overhead(n)
            if not math.isfinite(over):
                self.drop(offer, f"x{n}: interruptions (every {1 / (hazard * n) * 60:.0f} min) outpace progress")
                continue
            per_hour = market.price_per_instance(n) if market is not None else offer["usd_per_hour"]
            assert per_hour is not None  # n <= market.count
            wall = est.wall_hours.scaled(1 + over)
            price = per_hour * n
            out.append(
                {
                    "provider": offer["provider"],
                    "instance_type": offer["instance_type"],
                    "region": offer["region"],
                    "gpu": gpu.name,
                    "gpus_per_instance": per_instance,
                    "instances": n,
                    "pricing": offer["pricing"],
                    "usd_per_instance_hour": per_hour,
                    "usd_per_gpu_hour": per_hour / per_instance,
                    "age_hours": offer.get("age_hours"),
                    "source": offer.get("source"),
                    "observed_at": _text(offer.get("observed_at")),
                    "source_time": _text(offer.get("source_time") or offer.get("observed_at")),
                    "source_basis": offer.get("source_basis") or "observed",
                    "source_age_hours": _first(offer.get("source_age_hours"), offer.get("age_hours")),
                    "effective_since": _text(offer.get("effective_since")),
                    "data_origin": offer.get("data_origin") or "unknown",
                    "listings": market.count if market is not None else available,
                    "market_basis": market.basis(n) if market is not None else None,
                    "market_rule": market.rule(n) if market is not None else None,
                    "countries": list(market.countries) if market is not None else [],
                    "wall_low": wall.low,
                    "wall_expected": wall.expected,
                    "wall_high": wall.high,
                    "cost_low": wall.low * price,
                    "cost_expected": wall.expected * price,
                    "cost_high": wall.high * price,
                    "mfu_expected": est.mfu.expected,
                    "spot_overhead": over,
                    "spot_overhead_first_order": first,
                    "hazard_source": hazard_source,
                    "fabric": fabric,
                }
            )
        return out


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _no_option_reason(dropped: list[dict[str, Any]], max_gpus: int) -> str:
    """Why nothing is left, the most telling reason first: the --max-gpus cap when it is what stopped every offer
    that could otherwise hold the job."""
    reasons = [d["reason"] for d in dropped]
    capped = [r for r in reasons if "more than --max-gpus" in r]
    if capped:
        smallest = min(int(r.split()[1]) for r in capped)
        return f"the job needs more than --max-gpus {max_gpus}: its smallest option needs {smallest} GPUs"
    return "no offer can hold the job: " + "; ".join(sorted(set(reasons))[:3])


def _refuse_absurd(rows: list[dict[str, Any]]) -> None:
    """Refuse a job whose fastest option takes longer than MAX_WALL_YEARS: almost surely a typo in the inputs."""
    fastest = min(rows, key=lambda r: r["wall_expected"])
    years = fastest["wall_expected"] / defaults.HOURS_PER_YEAR
    if years > defaults.MAX_WALL_YEARS.value:
        gpus = fastest["gpus_per_instance"] * fastest["instances"]
        raise UsageError(
            f"the job would take {years:.3g} years even on its fastest option ({gpus} x {fastest['gpu']}), "
            f"more than {defaults.MAX_WALL_YEARS.value:g} years: check --tokens and --model (or raise --max-gpus)"
        )


def _compare_with_on_demand(frame: pl.DataFrame) -> pl.DataFrame:
    """On-demand cost of the same instance and count where it exists, else the cheapest of the same GPU count."""
    on_demand = frame.filter(pl.col("pricing") == "on_demand")
    same = on_demand.select(
        "provider", "region", "instance_type", "instances", pl.col("cost_expected").alias("od_same"),
        pl.col("wall_expected").alias("od_same_wall"),
    ).unique(subset=["provider", "region", "instance_type", "instances"], keep="first")  # fmt: skip
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


_COLLAPSE_KEYS = ["provider", "instance_type", "pricing", "gpu", "gpus_per_instance", "instances", "data_origin"]


def _collapse_regions(frame: pl.DataFrame) -> pl.DataFrame:
    """One row for identical options in several regions (same provider, instance type, pricing, price, count and
    on-demand comparison), listing the regions in ``regions`` (``region`` is the first)."""
    rounded = [
        pl.col("usd_per_instance_hour").round(9).alias("_price"),
        pl.col("wall_expected").round(6).alias("_wall"),
        pl.col("on_demand_cost_usd").round(4).alias("_od"),
    ]
    keys = [*_COLLAPSE_KEYS, "_price", "_wall", "_od"]
    grouped = (
        frame.with_columns(rounded)
        .sort("region")
        .group_by(keys, maintain_order=True)
        .agg(pl.col("region").unique(maintain_order=True).alias("regions"), pl.all().exclude(*keys, "region").first())
    )
    return grouped.with_columns(pl.col("regions").list.first().alias("region")).drop("_price", "_wall", "_od")


def _mark_pareto(frame: pl.DataFrame) -> pl.DataFrame:
    """Sorted by cost: an option is on the front when it is faster than every cheaper option."""
    best_wall = math.inf
    flags = []
    for wall in frame["wall_expected"]:
        flags.append(wall < best_wall)
        best_wall = min(best_wall, wall)
    return frame.with_columns(pl.Series("pareto", flags))


def default_view(frame: pl.DataFrame) -> pl.DataFrame:
    """What ``plan`` shows unless ``--all-counts``: each offer at its cheapest instance count, plus every option on
    the Pareto front of cost and time (the faster, dearer counts worth knowing about); ranking kept."""
    offer = pl.concat_str(
        [pl.col("provider"), pl.col("instance_type"), pl.col("pricing"), pl.col("regions").list.join(",")],
        separator="|",
    )
    cheapest = pl.col("cost_expected") == pl.col("cost_expected").min().over(offer)
    return frame.filter(pl.col("pareto") | cheapest)


def stale_prices(rows: list[dict[str, Any]], stale_days: float = defaults.STALE_DAYS.value) -> list[dict[str, Any]]:
    """The providers among ``rows`` whose prices are older than ``stale_days`` by their source's own time."""
    oldest: dict[str, dict[str, Any]] = {}
    for r in rows:
        age = r.get("source_age_hours")
        if age is None or age <= stale_days * 24:
            continue
        known = oldest.get(r["provider"])
        if known is None or age > known["age_hours"]:
            oldest[r["provider"]] = {
                "provider": r["provider"],
                "age_hours": age,
                "source_time": r.get("source_time"),
                "source_basis": r.get("source_basis"),
                "data_origin": r.get("data_origin"),
            }
    return sorted(oldest.values(), key=lambda s: -s["age_hours"])
