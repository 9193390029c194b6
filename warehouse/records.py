"""The typed records that cross the scraper -> warehouse boundary.

Providers return these, never loose dicts; they check their own invariants on construction so
that a parser bug surfaces at the provider that made it, not as a strange row in the warehouse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, get_args

Pricing = Literal["on_demand", "spot", "interruptible", "reserved_1y", "reserved_3y"]
PRICING_KINDS: tuple[str, ...] = get_args(Pricing)


SourceBasis = Literal["published", "observed", "declared"]
SOURCE_BASES: tuple[str, ...] = get_args(SourceBasis)


@dataclass(frozen=True, slots=True)
class Listing:
    """One marketplace listing behind a group's distribution: what the planner needs to price k rentals.

    ``usd_per_hour`` is the whole listing's price (on-demand ``dph_total`` or interruptible
    ``min_bid``); ``country`` the host's ISO code ("unknown" when Vast gives none); ``reliability``
    Vast's ``reliability2`` score in 0..1 (None when the listing has none).
    """

    usd_per_hour: float
    country: str
    reliability: float | None


@dataclass(frozen=True, slots=True)
class MarketStats:
    """Distribution of one marketplace group's listings in one run (USD per instance-hour).

    ``listings`` keeps every listing, cheapest first, so that a plan can price renting k of them
    (the k-th cheapest, a quantile) and filter them by country or reliability.
    """

    offer_count: int
    min: float
    p10: float
    median: float
    max: float
    listings: tuple[Listing, ...] = ()

    def __post_init__(self) -> None:
        if self.offer_count <= 0:
            raise ValueError("a market group needs at least one listing")
        if not (0 < self.min <= self.p10 <= self.median <= self.max):
            raise ValueError(f"market stats out of order: {self}")
        if self.listings and len(self.listings) != self.offer_count:
            raise ValueError(f"{len(self.listings)} listings for an offer count of {self.offer_count}")


@dataclass(frozen=True, slots=True)
class PriceRecord:
    """One observed price of one offer: what a user pays per hour for a whole instance."""

    provider: str
    region: str
    instance_type: str
    gpu: str  # canonical name from the GPU table (warehouse/data/gpus.csv)
    gpu_count: float  # GPUs per instance; below 1 only for fractional-GPU sizes
    pricing: Pricing
    usd_per_hour: float  # whole instance, USD
    source: str  # URL (or file) the price was read from
    observed_at: datetime  # when the source was fetched, timezone-aware UTC
    vcpus: int | None = None
    memory_gib: float | None = None
    stats: MarketStats | None = field(default=None, compare=False)
    # When the source itself vouches for the price, where it says so: an AWS offer file's publication
    # time ("published"); a recording's declared vintage ("declared", replay manifests of derived or
    # generated data). None: the observation time (``observed_at``) is the source's time.
    source_time: datetime | None = field(default=None, compare=False)
    source_basis: SourceBasis = field(default="observed", compare=False)
    # The source's own "in effect since" date where it gives one (Azure effectiveStartDate): shown,
    # not used for the price's age (the live API vouched for the price when it was observed).
    effective_since: datetime | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.pricing not in PRICING_KINDS:
            raise ValueError(f"unknown pricing kind {self.pricing!r}")
        if not (isinstance(self.usd_per_hour, float | int) and math.isfinite(self.usd_per_hour)):
            raise ValueError(f"price is not a number: {self.usd_per_hour!r}")
        if self.usd_per_hour <= 0:
            raise ValueError(f"price must be > 0, got {self.usd_per_hour} for {self.key}")
        if not self.gpu_count > 0:
            raise ValueError(f"gpu_count must be > 0 for {self.key}")
        if self.observed_at.tzinfo is None:
            raise ValueError("observed_at must be timezone-aware")
        for name in ("source_time", "effective_since"):
            when = getattr(self, name)
            if when is not None and when.tzinfo is None:
                raise ValueError(f"{name} must be timezone-aware")
        if self.source_basis not in SOURCE_BASES:
            raise ValueError(f"unknown source basis {self.source_basis!r}")

    @property
    def vouched_at(self) -> datetime:
        """The time the price's age counts from: the source's own time, else the observation."""
        return self.source_time if self.source_time is not None else self.observed_at

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.provider, self.region, self.instance_type, self.pricing)

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.usd_per_hour / self.gpu_count


@dataclass(frozen=True, slots=True)
class SpotRisk:
    """A provider's published interruption data for one instance type in one region."""

    provider: str
    region: str
    instance_type: str
    savings_pct: float | None  # advertised saving of spot against on-demand, 0-100
    bucket: int  # the provider's interruption-frequency bucket index (AWS: 0..4)
    label: str  # e.g. "<5%", ">20%"
    interruption_pct_min: float  # monthly interruption frequency range, percent
    interruption_pct_max: float
    source: str
    observed_at: datetime
