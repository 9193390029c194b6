"""What renting a listing from a marketplace costs: a price a renter can expect, not one listing's floor.

A marketplace group (Vast.ai: GPU x GPUs per listing x verified x host kind) holds listings at many
prices, each from one host. The warehouse keeps every listing of the latest run (price, country,
reliability). A plan rents one listing of a group (listings are separate hosts with no cluster network
between them, so a job is never spread over several: ``optimizer.plan``) and prices it as follows:

1. **Eligible listings**: those at or above ``--min-reliability`` (Vast's ``reliability2``) and, with
   ``--region``, in one of those countries. A listing without a reliability score is not eligible.
2. **Enough of them**: a group with fewer than ``--min-listings`` eligible listings is not offered.
3. **The price**: the chosen quantile of the eligible listings (``--market-price min|p10|median``,
   default median): ``min`` is the cheapest listing right now (if nobody else takes it), ``median``
   the typical one.
4. **Interruptible bids** (``min_bid`` listings) are placed ``BID_PREMIUM`` above each listing's floor:
   a bid at the floor is outbid by anyone. The outbid hazard itself is in the spot model
   (defaults.SPOT_HAZARD["vastai"]).

The quantile is the same linear-interpolation definition the scraper stores (warehouse.quantiles).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from optimizer import defaults
from warehouse.errors import UsageError
from warehouse.quantiles import quantile

_Q = {"min": 0.0, "p10": 0.10, "median": 0.50}


@dataclass(frozen=True, slots=True)
class MarketPolicy:
    """How a plan prices marketplace listings (every field is a flag of ``costopt plan``)."""

    price: str = defaults.MARKET_QUANTILE  # min | p10 | median
    min_reliability: float = defaults.MIN_RELIABILITY.value
    min_listings: int = int(defaults.MIN_LISTINGS.value)
    bid_premium: float = defaults.BID_PREMIUM.value
    countries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.price not in _Q:
            raise UsageError(f"--market-price must be one of {', '.join(_Q)}, got {self.price!r}")
        if not 0.0 <= self.min_reliability <= 1.0:
            raise UsageError(f"--min-reliability must be between 0 and 1, got {self.min_reliability:g}")
        if self.min_listings < 1:
            raise UsageError(f"--min-listings must be at least 1, got {self.min_listings}")
        if self.bid_premium < 0:
            raise UsageError(f"--bid-premium cannot be negative, got {self.bid_premium:g}")


@dataclass(frozen=True, slots=True)
class Market:
    """A group's eligible listing prices (whole listing, USD/hour, ascending) and what they stand for."""

    prices: tuple[float, ...]
    countries: tuple[str, ...]  # countries of the eligible listings, sorted, distinct
    total: int  # listings in the group before the filters
    policy: MarketPolicy
    interruptible: bool

    @property
    def count(self) -> int:
        return len(self.prices)

    @property
    def reference(self) -> float:
        """The chosen quantile of the eligible listings (USD per listing-hour)."""
        return quantile(list(self.prices), _Q[self.policy.price])

    @property
    def rule(self) -> str:
        """Which price a listing is rented at, in a word: "median", "p10", "cheapest"."""
        return "cheapest" if self.policy.price == "min" else self.policy.price

    @property
    def basis(self) -> str:
        """The whole phrase: which price, how many listings stand behind it, and the bid premium."""
        text = f"{self.rule} of {self.count} listings"
        if self.interruptible:
            text = f"bid floor+{self.policy.bid_premium:.0%}, {text}"
        return text


def market_of(
    listings: Iterable[Mapping[str, Any]] | None, policy: MarketPolicy, *, interruptible: bool
) -> Market | None:
    """The eligible listings of a group (None when the group has no listing detail, e.g. an old warehouse)."""
    if listings is None:
        return None
    items = list(listings)
    wanted = set(policy.countries)
    scale = 1.0 + policy.bid_premium if interruptible else 1.0
    kept = [
        x
        for x in items
        if x.get("reliability") is not None
        and x["reliability"] >= policy.min_reliability
        and (not wanted or x.get("country") in wanted)
    ]
    prices = tuple(sorted(float(x["usd_per_hour"]) * scale for x in kept))
    countries = tuple(sorted({str(x.get("country")) for x in kept}))
    return Market(prices, countries, len(items), policy, interruptible)
