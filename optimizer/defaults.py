"""Every default assumption of plan, spot and breakeven, in one place, each with where it comes from.

``costopt plan --explain`` and ``costopt breakeven`` print these; each is also a command-line flag.
None of them is a price: prices only ever come from the warehouse.
"""

from __future__ import annotations

from dataclasses import dataclass

from warehouse import spot_buckets


@dataclass(frozen=True, slots=True)
class Assumption:
    value: float
    unit: str
    source: str


# Interruption hazard per instance-hour where a provider publishes nothing per instance type.
# AWS publishes Spot Advisor buckets (used instead whenever the warehouse has one for the offer).
SPOT_HAZARD: dict[str, Assumption] = {
    "aws": Assumption(
        spot_buckets.hazard_per_hour(spot_buckets.AWS_BUCKETS[2].pct_min, spot_buckets.AWS_BUCKETS[2].pct_max),
        "per instance-hour",
        "AWS Spot Advisor middle bucket (10-15 %/month, midpoint) when the offer has no bucket of its own",
    ),
    "gcp": Assumption(
        0.01,
        "per instance-hour",
        "assumption: GCP publishes no Spot preemption rates; ~1 preemption per 100 GPU-VM hours",
    ),
    "azure": Assumption(
        0.01,
        "per instance-hour",
        "assumption: Azure publishes eviction-rate bands only in the portal",
    ),
    "coreweave": Assumption(0.01, "per instance-hour", "assumption: CoreWeave publishes no spot reclaim rates"),
    "vastai": Assumption(
        0.02,
        "per instance-hour",
        "assumption: a Vast.ai bid placed --bid-premium above the floor is outbid (or displaced by an on-demand "
        "renter, who always has priority) about once per 50 instance-hours; Vast publishes no rate",
    ),
}
DEFAULT_HAZARD = Assumption(0.01, "per instance-hour", "assumption for providers without data")

CHECKPOINT_WRITE_GBPS = Assumption(
    1.0, "GB/s per instance", "assumption: sharded checkpoint to network storage, each instance writes its shard"
)
RESTART_HOURS = Assumption(
    0.25, "hours", "assumption: re-acquire an instance, start the container, join the job (plus reading the checkpoint)"
)
MAX_GPUS = Assumption(256, "GPUs", "default search limit; --max-gpus")
LONE_GPU_RDMA_GBPS = Assumption(
    400,
    "Gbit/s, a server of one GPU to the others",
    "assumption: a GPU alone in its server on a cluster network whose bandwidth nothing states (estimate "
    "--gpus-per-node 1; plan's RDMA families without a figure in optimizer/data/cluster_networks.csv) has one 400 "
    "Gbit/s NIC, the per-GPU NIC of NVIDIA's HGX/DGX H100 design (8 x 400 Gbit/s) and of AWS p5.48xlarge (3,200 per 8 "
    "GPUs); none is assumed over Ethernet, nor for servers of several GPUs, which the calibrated between-node term "
    "covers (the calibration's runs across servers were all on such servers)",
)

# Marketplaces (Vast.ai): what a renter of k instances can expect to pay
MARKET_QUANTILES = ("min", "p10", "median")
MARKET_QUANTILE = "median"  # --market-price: the i-th of k instances costs max(i-th cheapest listing, this quantile)
MIN_RELIABILITY = Assumption(
    0.95,
    "Vast reliability2 (0..1)",
    "listings below it are left out: Vast advises a high reliability score for multi-day jobs and gives no "
    "number; 0.95 drops the hosts Vast rates least reliable and keeps most of the market (the one real "
    "listing on record scores 0.970); RunPod's own bar for its pool is 0.98 (--min-reliability 0.98)",
)
MIN_LISTINGS = Assumption(
    3,
    "listings",
    "a group with fewer reliable listings is not offered: one or two listings can be gone before you rent "
    "them, and their price says nothing about the market; --min-listings",
)
BID_PREMIUM = Assumption(
    0.25,
    "fraction above the floor",
    "assumption: an interruptible Vast.ai bid is placed 25 % above the listing's min_bid (the lowest bid the host "
    "accepts now), since a bid at the floor is outbid by any other renter; no public data on winning bids",
)

# How the plan is shown
HORIZON_DAYS = Assumption(
    90, "days", "options slower than this are listed after the others and flagged (--horizon); not removed"
)
MAX_WALL_YEARS = Assumption(100, "years", "a job whose fastest option takes longer is refused as a likely input error")
STALE_DAYS = Assumption(
    30, "days", "a plan warns when a price it shows is older than this, counted from its source's own time"
)

# Buy vs rent
UTILIZATION = Assumption(0.6, "fraction of hours", "typical busy share of an owned training cluster; --utilization")
POWER_PRICE = Assumption(0.12, "USD per kWh", "US commercial average order of magnitude (EIA 2024: ~$0.12-0.13)")
PUE = Assumption(1.3, "ratio", "modern air-cooled data centre (Uptime Institute 2024 average: ~1.56; new builds ~1.3)")
LIFE_YEARS = Assumption(4, "years", "typical depreciation life of GPU servers")
RESIDUAL = Assumption(0.2, "fraction of capex", "resale value at end of life; --residual")
SERVER_SHARE = Assumption(
    0.3,
    "fraction of GPU cost",
    "CPUs, memory, NICs, chassis and switches on top of the GPUs (HGX-class servers); --server-cost overrides",
)
HOSTING_PER_KW_MONTH = Assumption(150.0, "USD per kW-month", "assumption: wholesale colocation; --hosting-per-kw-month")
SERVER_POWER_OVERHEAD = Assumption(1.5, "x GPU TDP", "CPUs, fans, NICs and storage draw ~50 % on top of GPU TDP")
HOURS_PER_MONTH = 730.0
HOURS_PER_YEAR = 8760.0
