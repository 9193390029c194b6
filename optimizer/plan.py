"""``costopt plan``: the cost and time of one training job on every current offer that can hold it.

For every current price (on-demand, spot, interruptible) and every instance count from the smallest
that holds the job up to ``--max-gpus`` -- the minimum, its doublings, the largest count under the cap,
the first count at which the job fits without full activation recomputation where it fits with it first
(--recompute auto: each option runs, and is charged for, the cheapest strategy that fits its GPUs) and,
with ``--deadline``, the smallest count that meets it -- the estimator gives the wall time range;
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

The options are ranked in Python (``costopt plan`` does not pay polars' ~0.1 s import on every run): a plan
is a few thousand options on a snapshot, ~30,000 on a year of history. While they are ranked each option
is a small slotted ``_Option`` holding what ranking reads, with a reference to its offer's shared fields;
the caller gets plain rows (one dict per option, ``OPTION_COLUMNS`` and the comparison columns), and with
``view="default"`` only the rows ``plan`` shows by default are made into dicts: a 40-key dict per option
for 30,000 options was most of a year-of-history plan's time, and every pass over them was slowed by
their size.
"""

from __future__ import annotations

import functools
import gc
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, ParamSpec, TypeVar

from optimizer import defaults
from optimizer.estimate import Estimate, Job, ceiling_binds, estimate
from optimizer.fabric import bandwidth_of, fabric_of
from optimizer.inputs import MARKETPLACES
from optimizer.market import Market, MarketPolicy, market_of
from optimizer.memory import state_bytes
from optimizer.network import Bandwidth
from optimizer.spot import hazard_from_bucket, spot_overhead
from warehouse import spot_buckets
from warehouse.errors import CostoptError, UsageError
from warehouse.gpus import GpuCatalog, GpuSpec

INTERRUPTIBLE = ("spot", "interruptible")
# an option's labels from its estimate, merged into its row: speed_basis (calibrated, extrapolated: outside what the
# calibration covers, optimizer/scope.py; given: --mfu), extrapolated_because, scope, mfu_ceiling_binds
Labels = dict[str, Any]
Timed = tuple[float, float, float, float, float, float, str, int, Labels]  # times, MFU, overheads, recompute, t, labels


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
    options: list[dict[str, Any]]  # ranked rows: OPTION_COLUMNS, the on-demand comparison, regions, pareto, slow
    dropped: list[dict[str, Any]] = field(default_factory=list)  # offers removed, with the reason
    prices_as_of: str = ""
    total: int = 0  # options with every instance count (len(options) unless only the default view was kept)


OPTION_COLUMNS = [
    "provider", "instance_type", "region", "gpu", "gpus_per_instance", "instances", "pricing",
    "usd_per_instance_hour", "usd_per_gpu_hour", "age_hours", "source", "observed_at",
    "source_time", "source_basis", "source_age_hours", "effective_since", "data_origin",
    "listings", "market_basis",
    "wall_low", "wall_expected", "wall_high", "cost_low", "cost_expected", "cost_high",
    "mfu_expected", "spot_overhead", "spot_overhead_first_order", "hazard_source", "fabric", "speed_basis",
    "extrapolated_because", "mfu_ceiling_binds", "recompute", "tensor_parallel",
]  # fmt: skip


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
    """Smallest count in [low, high] whose wall time is within ``limit``; None when no count tried meets it.

    The counts ``instance_counts`` tries (low, its doublings, high) are checked in order, then the gap below the
    first that meets is bisected. Wall time is not monotone in the count for spot offers: past some size the
    interruptions of more instances cost more than the instances save, so ``high`` can miss a deadline that a
    smaller count meets (bisecting from ``high`` alone said none did, and the plan lost its cheapest option).
    """
    tried = instance_counts(low, high)
    first = next((i for i, n in enumerate(tried) if hours_at(n) <= limit), None)
    if first is None:
        return None
    if first == 0:
        return tried[0]
    lo, hi = tried[first - 1], tried[first]  # hours_at(lo) > limit >= hours_at(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if hours_at(mid) <= limit:
            hi = mid
        else:
            lo = mid
    return hi


P = ParamSpec("P")
R = TypeVar("R")


def cyclic_gc_paused(func: Callable[P, R]) -> Callable[P, R]:
    """Run ``func`` with Python's cyclic garbage collector paused, and restore it however ``func`` ends.

    Why: a plan allocates tens of thousands of small objects (options, rows, estimates) that stay alive until it
    returns, and the collector's full passes, triggered by those allocations, rescan every one of them; the more
    options, the longer each pass, so planning time grew faster than the options did (``bench/plan_scale.py``:
    4096 / 256 GPUs at 1.9-2.0x against its 2x target, 1.5-1.6x with the passes paused). Nothing a plan builds is a
    reference cycle that needs the collector: reference counting frees it as before, and a cycle left behind is
    collected at the next pass after the plan returns. A collector the caller had disabled stays disabled."""

    @functools.wraps(func)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@cyclic_gc_paused
def build_plan(
    job: Job,
    offers: list[dict[str, Any]],
    gpus: GpuCatalog,
    constraints: Constraints,
    *,
    spot_risk: dict[tuple[str, str, str], tuple[float, float]] | None = None,
    mfu_override: float | None = None,
    view: str = "all",
) -> Plan:
    """Rank every feasible (offer, instance count); ``offers`` are rows of ``optimizer.inputs.current_offers``.

    ``view="default"``: ``options`` holds only ``default_view`` of the ranked options (``total`` still counts
    them all), the same rows ``default_view(build_plan(...).options)`` gives, made into dicts alone."""
    if view not in ("all", "default"):
        raise ValueError(f"view must be 'all' or 'default', not {view!r}")
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
    rows = [option for offer in ordered for option in builder.options(offer)]
    if not rows:
        raise NoOptions(_no_option_reason(dropped, constraints.max_gpus))
    _refuse_absurd(rows)
    regions: dict[tuple[str, str, str], set[str]] = {}
    for o in ordered:
        regions.setdefault((o["provider"], o["instance_type"], o["pricing"]), set()).add(o["region"])
    shared = {key for key, found in regions.items() if len(found) > 1}
    rows = _collapse_regions(_compare_with_on_demand(rows), shared)
    if constraints.spot is True:
        rows = [r for r in rows if r.pricing in INTERRUPTIBLE]
    for flag, limit, column in (
        ("--deadline", constraints.deadline_hours, "wall_expected"),
        ("--budget", constraints.budget_usd, "cost_expected"),
    ):
        if limit is None:
            continue
        value = attrgetter(column)
        within = [r for r in rows if value(r) <= limit]
        for r in rows:
            if value(r) > limit:
                dropped.append(
                    {
                        "offer": f"{r.provider} {r.region} {r.instance_type} {r.pricing} x{r.instances}",
                        "reason": f"over {flag}",
                    }
                )
        if not within:
            best = value(min(rows, key=value))
            unit = f"{best / 24:.1f} days" if column == "wall_expected" else f"${best:,.0f}"
            raise NoOptions(
                f"no offer left: {flag} removed the last {len(rows)} options "
                f"(best: {unit} with up to --max-gpus {constraints.max_gpus})"
            )
        rows = within
    rows.sort(key=_BY_COST_THEN_TIME)
    _mark_pareto(rows)
    horizon = constraints.horizon_hours
    for r in rows:
        r.slow = r.wall_expected > horizon
    rows.sort(key=_SLOW)  # stable: cost, then time, within each of the two groups
    chosen = _default_view(rows) if view == "default" else rows
    return Plan(job=job, options=[r.row() for r in chosen], dropped=dropped, total=len(rows))


# cost, then time; exact ties (the same instance and price at two providers or regions) in a fixed order
_BY_COST_THEN_TIME = attrgetter("cost_expected", "wall_expected", "provider", "instance_type", "region", "pricing",
                                "instances")  # fmt: skip
_SLOW = attrgetter("slow")


class _Option:
    """One (offer, instance count) while the plan ranks it: what ranking reads as slots, the rest in ``base``
    (the offer's fields, shared by all its counts). ``row()`` is the option as the caller gets it."""

    __slots__ = (
        "added_hours",
        "base",
        "cost_expected",
        "cost_high",
        "cost_low",
        "countries",
        "data_origin",
        "gpu",
        "gpus_per_instance",
        "instance_type",
        "instances",
        "labels",
        "market_basis",
        "market_rule",
        "mfu_expected",
        "on_demand_cost_usd",
        "pareto",
        "pricing",
        "provider",
        "recompute",
        "region",
        "regions",
        "savings_basis",
        "savings_usd",
        "slow",
        "spot_overhead",
        "spot_overhead_first_order",
        "tensor_parallel",
        "twin",
        "usd_per_gpu_hour",
        "usd_per_instance_hour",
        "view_key",
        "wall_expected",
        "wall_high",
        "wall_low",
    )  # fmt: skip
    base: dict[str, Any]
    provider: str
    instance_type: str
    region: str
    pricing: str
    gpu: str
    gpus_per_instance: int
    data_origin: str
    instances: int
    labels: Labels  # what the count's estimate says of itself: its speed basis, where the MFU ceiling binds
    regions: list[str]
    usd_per_instance_hour: float
    usd_per_gpu_hour: float
    market_basis: str | None
    market_rule: str | None
    countries: list[str]
    wall_low: float
    wall_expected: float
    wall_high: float
    cost_low: float
    cost_expected: float
    cost_high: float
    mfu_expected: float
    recompute: str  # the activation recomputation the option runs and is charged for (memory.choose)
    tensor_parallel: int  # the tensor-parallel degree of its memory verdict (memory.choose; no time charged)
    spot_overhead: float
    spot_overhead_first_order: float
    on_demand_cost_usd: float | None
    savings_usd: float | None
    added_hours: float | None
    savings_basis: str | None
    pareto: bool
    slow: bool
    twin: tuple[str, str, str]  # (provider, region, instance type): its on-demand twin's key
    view_key: tuple[str, str, str, tuple[str, ...]]  # (provider, instance type, pricing, regions): default_view's

    def __init__(self, base: dict[str, Any], ident: tuple[Any, ...], keys: tuple[Any, Any], instances: int) -> None:
        """``ident``: the offer's provider, instance type, region, pricing, GPU, GPUs per instance and data origin;
        ``keys``: its ``twin`` and ``view_key`` (tuples made once per offer, shared by its counts)."""
        self.base = base
        (self.provider, self.instance_type, self.region, self.pricing, self.gpu, self.gpus_per_instance,
         self.data_origin) = ident  # fmt: skip
        self.twin, self.view_key = keys
        self.instances = instances
        self.regions = [self.region]
        self.pareto = self.slow = False

    def row(self) -> dict[str, Any]:
        """The option as a plain row, keys in the order they always had."""
        return {
            **self.base,
            "instances": self.instances,
            "regions": self.regions,
            "usd_per_instance_hour": self.usd_per_instance_hour,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "market_basis": self.market_basis,
            "market_rule": self.market_rule,
            "countries": self.countries,
            "wall_low": self.wall_low,
            "wall_expected": self.wall_expected,
            "wall_high": self.wall_high,
            "cost_low": self.cost_low,
            "cost_expected": self.cost_expected,
            "cost_high": self.cost_high,
            "mfu_expected": self.mfu_expected,
            "recompute": self.recompute,
            "tensor_parallel": self.tensor_parallel,
            "spot_overhead": self.spot_overhead,
            "spot_overhead_first_order": self.spot_overhead_first_order,
            "on_demand_cost_usd": self.on_demand_cost_usd,
            "savings_usd": self.savings_usd,
            "added_hours": self.added_hours,
            "savings_basis": self.savings_basis,
            **self.labels,
            "pareto": self.pareto,
            "slow": self.slow,
        }


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
    cache: dict[tuple[str, int, int, str, Bandwidth | None], Estimate] = field(default_factory=dict)
    specs: dict[str, GpuSpec | None] = field(default_factory=dict)  # the catalog's answer per GPU name
    count_lists: dict[tuple[int, int, tuple[int, ...]], list[int]] = field(default_factory=dict)
    spot_counts: dict[tuple[str, str, str], set[int]] = field(default_factory=dict)
    overheads: dict[tuple[float, int], tuple[float, float]] = field(default_factory=dict)
    # (GPU, per instance, fabric, bandwidth, interruptible, hazard, counts) -> each count's times, mfu, overhead, labels
    profiles: dict[tuple[Any, ...], list[tuple[int, Timed | None]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.states = state_bytes(self.job.model, self.job.method)

    def estimate(self, gpu: GpuSpec, per_instance: int, n: int, fabric: str, bandwidth: Bandwidth | None) -> Estimate:
        key = (gpu.name, per_instance, n, fabric, bandwidth)
        if key not in self.cache:
            self.cache[key] = estimate(
                self.job, gpu, n * per_instance, gpus_per_node=per_instance, fabric=fabric, bandwidth=bandwidth,
                mfu_override=self.mfu_override,
            )  # fmt: skip
        return self.cache[key]

    def hazard(self, offer: dict[str, Any]) -> tuple[float, str]:
        risk = self.spot_risk.get((offer["provider"], offer["region"], offer["instance_type"]))
        if risk is not None:
            return hazard_from_bucket(*risk), spot_buckets.describe(*risk)
        default = defaults.SPOT_HAZARD.get(offer["provider"], defaults.DEFAULT_HAZARD)
        return default.value, default.source

    def drop(self, offer: dict[str, Any], reason: str) -> list[_Option]:
        label = f"{offer['provider']} {offer['region']} {offer['instance_type']} {offer['pricing']}"
        self.dropped.append({"offer": label, "reason": reason})
        return []

    def options(self, offer: dict[str, Any]) -> list[_Option]:
        name = offer["gpu"]
        if name in self.specs:
            gpu = self.specs[name]
        else:
            gpu = self.specs[name] = self.gpus.get(name)
        per_instance = offer["gpu_count"]
        if gpu is None:
            return self.drop(offer, f"unknown GPU {offer['gpu']}")
        if per_instance < 1 or per_instance != int(per_instance):
            return self.drop(offer, f"fractional GPU ({per_instance:g} per instance)")
        if self.job.precision == "fp8" and gpu.fp8_tflops is None:
            return self.drop(offer, f"{gpu.name} has no FP8")
        per_instance = int(per_instance)
        fabric = fabric_of(offer["provider"], offer["instance_type"])
        bandwidth = bandwidth_of(offer["provider"], offer["instance_type"])  # None: estimate's default for the fabric
        probe = self.estimate(gpu, per_instance, 1, fabric, bandwidth)  # one instance: the memory probe
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
        if offer["provider"] in MARKETPLACES:
            # a listing is one host of its own: two listings share no cluster network, often not even a country,
            # and a job sharded across them over the internet would crawl. An option is one listing.
            if low > 1:
                return self.drop(
                    offer,
                    f"needs {low} machines at once; marketplace listings are separate hosts with no cluster "
                    "network between them, so an option is one listing",
                )
            high = 1
        hazard, hazard_source = self.hazard(offer) if interruptible else (0.0, "")

        def overhead(n: int) -> tuple[float, float]:
            if not interruptible:
                return 0.0, 0.0
            known = self.overheads.get((hazard, n))  # the same hazard and count: the same overhead
            if known is None:
                over = spot_overhead(
                    hazard=hazard,
                    hazard_source=hazard_source,
                    instances=n,
                    checkpoint_bytes=self.states,
                    interval_hours=self.constraints.checkpoint_interval_hours,
                )
                known = self.overheads[(hazard, n)] = (over.overhead, over.first_order)
            return known

        def hours_at(n: int) -> float:
            return self.estimate(gpu, per_instance, n, fabric, bandwidth).wall_hours.expected * (1 + overhead(n)[0])

        twin = (offer["provider"], offer["region"], offer["instance_type"])
        extra: tuple[int, ...] = () if interruptible else tuple(self.spot_counts.get(twin, ()))
        selective = probe.memory.min_gpus_by_recompute["selective"]
        if self.job.recompute == "auto" and selective is not None:
            # the first count that fits without full recomputation: a third less compute from there on, often the
            # cheapest count of the offer, and not always a doubling of the minimum
            extra += (math.ceil(selective / per_instance),)
        if self.constraints.deadline_hours is not None:
            meet = smallest_meeting(low, high, hours_at, self.constraints.deadline_hours)
            extra += (meet,) if meet is not None else ()
        wanted = (low, high, tuple(sorted(set(extra))))
        counts = self.count_lists.get(wanted)
        if counts is None:
            counts = self.count_lists[wanted] = instance_counts(low, high, extra)
        if interruptible:
            self.spot_counts.setdefault(twin, set()).update(counts)
        age = _float(offer.get("age_hours"))
        base = {  # what every count of this offer shares
            "provider": offer["provider"],
            "instance_type": offer["instance_type"],
            "region": offer["region"],
            "gpu": gpu.name,
            "gpus_per_instance": per_instance,
            "pricing": offer["pricing"],
            "age_hours": age,
            "source": offer.get("source"),
            "observed_at": _text(offer.get("observed_at")),
            "source_time": _text(offer.get("source_time") or offer.get("observed_at")),
            "source_basis": offer.get("source_basis") or "observed",
            "source_age_hours": _first(_float(offer.get("source_age_hours")), age),
            "effective_since": _text(offer.get("effective_since")),
            "data_origin": offer.get("data_origin") or "unknown",
            "listings": market.count if market is not None else available,
            "hazard_source": hazard_source,
            "fabric": fabric,
        }
        # the times of each count: the same for every offer of this GPU shape, pricing kind and hazard
        key = (gpu.name, per_instance, fabric, bandwidth, interruptible, hazard, tuple(counts))
        profile = self.profiles.get(key)
        if profile is None:
            profile = []
            for n in counts:
                est = self.estimate(gpu, per_instance, n, fabric, bandwidth)
                over, first = overhead(n)
                if not math.isfinite(over):
                    profile.append((n, None))
                    continue
                factor = 1 + over
                hours = est.wall_hours
                mfu = est.mfu.expected
                labels = {
                    "speed_basis": "given"
                    if self.mfu_override is not None
                    else "extrapolated"
                    if est.scope.extrapolated
                    else "calibrated",
                    "extrapolated_because": est.scope.because,
                    "scope": est.scope,  # the reasons with their kinds, for the table's footer
                    "mfu_ceiling_binds": ceiling_binds(est),
                }
                times = (hours.low * factor, hours.expected * factor, hours.high * factor, mfu, over, first)
                profile.append((n, (*times, est.recompute, est.tensor_parallel, labels)))
            self.profiles[key] = profile
        ident = (base["provider"], base["instance_type"], base["region"], base["pricing"], gpu.name, per_instance,
                 base["data_origin"])  # fmt: skip
        keys = ((ident[0], ident[2], ident[1]), (ident[0], ident[1], ident[3], (ident[2],)))
        listed_price = None if market is not None else float(offer["usd_per_hour"])
        out = []
        for n, timed in profile:
            if timed is None:
                self.drop(offer, f"x{n}: interruptions (every {1 / (hazard * n) * 60:.0f} min) outpace progress")
                continue
            fast, expected, slow, mfu, over, first, recompute, tensor_parallel, labels = timed
            if market is None:
                per_hour = listed_price
                o = _Option(base, ident, keys, n)
                o.market_basis = o.market_rule = None
                o.countries = []
            else:
                per_hour = market.reference  # one listing (n is 1), at the group's quantile
                o = _Option(base, ident, keys, n)
                o.market_basis = market.basis
                o.market_rule = market.rule
                o.countries = list(market.countries)
            assert per_hour is not None
            price = per_hour * n
            o.usd_per_instance_hour = per_hour
            o.usd_per_gpu_hour = per_hour / per_instance
            o.wall_low, o.wall_expected, o.wall_high = fast, expected, slow
            o.cost_low, o.cost_expected, o.cost_high = fast * price, expected * price, slow * price
            o.mfu_expected = mfu
            o.recompute = recompute
            o.tensor_parallel = tensor_parallel
            o.spot_overhead = over
            o.spot_overhead_first_order = first
            o.labels = labels
            out.append(o)
        return out


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _float(value: Any) -> float | None:
    """A number as a float (a column of floats, as the options always had), None kept."""
    return None if value is None else float(value)


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
    # the reasons most offers share first; an offer that could never run any job (a fractional GPU, a GPU outside
    # the table) says nothing about this one, so those come last
    telling = [r for r in reasons if not r.startswith(_NOT_TELLING)] or reasons
    kinds = Counter(_NUMBERS.sub("#", r) for r in telling)  # one reason per kind: the figures differ by offer
    first: dict[str, str] = {}
    for r in telling:
        first.setdefault(_NUMBERS.sub("#", r), r)
    told = [f"{first[kind]} ({n} offer{'s' if n > 1 else ''})" for kind, n in kinds.most_common(3)]
    return "no offer can run the job: " + "; ".join(told)


_NOT_TELLING = ("fractional GPU", "unknown GPU")
_NUMBERS = re.compile(r"\d[\d.,]*")


def _refuse_absurd(rows: list[_Option]) -> None:
    """Refuse a job whose fastest option takes longer than MAX_WALL_YEARS: almost surely a typo in the inputs."""
    from optimizer.absurd import refuse_absurd_wall_time

    fastest = min(rows, key=_WALL)
    gpus = fastest.gpus_per_instance * fastest.instances
    refuse_absurd_wall_time(
        fastest.wall_expected, on=f"even on its fastest option ({gpus} x {fastest.gpu})", remedy="or raise --max-gpus"
    )


_WALL = attrgetter("wall_expected")


def _compare_with_on_demand(rows: list[_Option]) -> list[_Option]:
    """On-demand cost of the same instance and count where it exists, else the provider's cheapest on-demand of the
    same GPU and GPU count.

    Never another provider's: what spot saves is a property of the provider's own two prices (a GCP spot row
    compared with a marketplace's generated on-demand price claimed a 33 % saving, and showed none under
    ``--provider gcp``, whose filter removed that baseline).

    Sets ``on_demand_cost_usd`` (a row's own cost for on-demand), ``savings_usd`` (0 when spot is no cheaper),
    ``added_hours`` and ``savings_basis`` on every option, in place.
    """
    # nested by the keys each option already holds (no key tuple made per option): twin -> count, GPU -> GPUs
    same: dict[tuple[str, str, str], dict[int, tuple[float, float]]] = {}
    cheapest: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    for r in rows:
        if r.pricing != "on_demand":
            continue
        cost, wall = r.cost_expected, r.wall_expected
        by_count = same.get(r.twin)
        if by_count is None:
            by_count = same[r.twin] = {}
        by_count.setdefault(r.instances, (cost, wall))
        by_gpus = cheapest.get((r.provider, r.gpu))
        if by_gpus is None:
            by_gpus = cheapest[(r.provider, r.gpu)] = {}
        total = r.gpus_per_instance * r.instances
        known = by_gpus.get(total)
        if known is None or cost < known[0]:  # the first of equally cheap ones, as a stable sort would give
            by_gpus[total] = (cost, wall)
    nothing: dict[int, tuple[float, float]] = {}
    for r in rows:
        if r.pricing not in INTERRUPTIBLE:
            r.on_demand_cost_usd = r.cost_expected
            r.savings_usd = r.added_hours = r.savings_basis = None
            continue
        twin = same.get(r.twin, nothing).get(r.instances)
        any_ = cheapest.get((r.provider, r.gpu), nothing).get(r.gpus_per_instance * r.instances)
        basis = twin if twin is not None else any_
        if basis is None:
            r.on_demand_cost_usd = r.savings_usd = r.added_hours = r.savings_basis = None
            continue
        r.on_demand_cost_usd = basis[0]
        # a bid or spot price that, interruptions paid, costs as much as on-demand or more saves nothing: it is
        # not a negative saving (a Vast.ai bid placed --bid-premium above a floor near the listing's on-demand
        # price showed "spot saves -$308 (-4%)"); by how much it is dearer is cost_expected - on_demand_cost_usd
        r.savings_usd = max(basis[0] - r.cost_expected, 0.0)
        r.added_hours = r.wall_expected - basis[1]
        r.savings_basis = None if twin is not None else f"vs {r.provider}'s cheapest on-demand of the same GPU count"
    return rows


def _collapse_regions(rows: list[_Option], shared: set[tuple[str, str, str]]) -> list[_Option]:
    """One row for identical options in several regions (same provider, instance type, pricing, GPU, count, price,
    time and on-demand comparison), listing the regions in ``regions``; ``region`` is the first alphabetically
    and the row kept is that region's, at the place of the group's first row.

    ``shared`` holds the (provider, instance type, pricing) offered in more than one region: only their rows can
    collapse, so only they are compared (prices and times to 9 and 6 decimals, the on-demand cost to 4).
    """
    out: list[_Option | None] = []
    groups: dict[tuple[Any, ...], tuple[int, list[_Option]]] = {}
    for r in rows:
        if (r.provider, r.instance_type, r.pricing) not in shared:
            out.append(r)
            continue
        od = r.on_demand_cost_usd
        key = (
            r.provider, r.instance_type, r.pricing, r.gpu, r.gpus_per_instance, r.instances,
            r.data_origin, round(r.usd_per_instance_hour, 9), round(r.wall_expected, 6),
            None if od is None else round(od, 4),
        )  # fmt: skip
        group = groups.get(key)
        if group is None:
            groups[key] = (len(out), [r])
            out.append(None)
        else:
            group[1].append(r)
    for place, members in groups.values():
        if len(members) > 1:
            members.sort(key=_REGION)
            kept = members[0]
            kept.regions = list(dict.fromkeys(m.region for m in members))
            kept.view_key = (kept.provider, kept.instance_type, kept.pricing, tuple(kept.regions))
        out[place] = members[0]
    return [r for r in out if r is not None]


_REGION = attrgetter("region")


def _mark_pareto(rows: list[_Option]) -> None:
    """Sorted by cost: an option is on the front when it is faster than every cheaper option."""
    best_wall = math.inf
    for r in rows:
        wall = r.wall_expected
        r.pareto = wall < best_wall
        best_wall = min(best_wall, wall)


def _default_view(rows: list[_Option]) -> list[_Option]:
    """``default_view`` on options before they become rows."""
    cheapest: dict[tuple[str, str, str, tuple[str, ...]], float] = {}
    for r in rows:
        key = r.view_key
        cost = r.cost_expected
        known = cheapest.get(key)
        if known is None or cost < known:
            cheapest[key] = cost
    return [r for r in rows if r.pareto or r.cost_expected == cheapest[r.view_key]]


def default_view(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What ``plan`` shows unless ``--all-counts``: each offer at its cheapest instance count, plus every option on
    the Pareto front of cost and time (the faster, dearer counts worth knowing about); ranking kept."""
    cheapest: dict[tuple[str, str, str, tuple[str, ...]], float] = {}
    keys = []
    for r in rows:
        key = (r["provider"], r["instance_type"], r["pricing"], tuple(r["regions"]))
        keys.append(key)
        cost = r["cost_expected"]
        if key not in cheapest or cost < cheapest[key]:
            cheapest[key] = cost
    return [r for r, key in zip(rows, keys, strict=True) if r["pareto"] or r["cost_expected"] == cheapest[key]]


def every_option_slow(options: list[dict[str, Any]], constraints: Constraints) -> str | None:
    """A warning when no option finishes within the horizon: the cheapest row is then a job of years, and what the
    user most likely wants is more GPUs than ``--max-gpus`` allows."""
    if not options or not all(r["slow"] for r in options):
        return None
    fastest = min(options, key=lambda r: r["wall_expected"])
    return (
        f"warning: no option finishes within {constraints.horizon_hours / 24:g} days with up to --max-gpus "
        f"{constraints.max_gpus} (the fastest: {fastest['wall_expected'] / 24:,.0f} days on "
        f"{fastest['gpus_per_instance'] * fastest['instances']} x {fastest['gpu']}); raise --max-gpus for faster "
        "options"
    )


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
