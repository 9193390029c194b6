"""Every default assumption of plan, spot and breakeven, in one place, each with where it comes from.

``costopt plan --explain`` and ``costopt breakeven`` print these; each is also a command-line flag.
None of them is a price: prices only ever come from the warehouse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Assumption:
    value: float
    unit: str
    source: str


# Interruption hazard per instance-hour where a provider publishes nothing per instance type.
# AWS publishes Spot Advisor buckets (used instead whenever the warehouse has one for the offer).
SPOT_HAZARD: dict[str, Assumption] = {
    "aws": Assumption(
        -math.log(1 - 0.125) / 730,
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
        "assumption: interruptible Vast.ai bids are outbid; no published rate",
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
INSTANCE_DOUBLINGS = Assumption(5, "doublings", "plan tries the minimum instance count and up to 5 doublings")

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
