"""One file of an archive at one commit, as prices: what every parser returns.

A snapshot holds two kinds of price, kept apart on purpose: the price of a **machine** (what a user
rents; it becomes an offer and a price interval like any scraped price) and the price of a **GPU part**
(a GPU that attaches to a machine the user picks, priced without that machine; it is stored in its own
table and never mistaken for a machine price).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from warehouse.records import PRICING_KINDS

# (kind, region, name, pricing): kind "m" -> name is the instance type; kind "p" -> name is "<GPU>x<count>"
Key = tuple[str, str, str, str]


@dataclass(frozen=True, slots=True)
class Attrs:
    """What a key offers: the GPU and how many, and for machines the vCPUs and memory."""

    gpu: str  # canonical GPU name (warehouse/data/gpus.csv)
    gpu_count: float
    vcpus: int | None = None
    memory_gib: float | None = None


@dataclass(slots=True)
class Snapshot:
    provider: str
    prices: dict[Key, float] = field(default_factory=dict)  # USD per hour of the whole key
    attrs: dict[Key, Attrs] = field(default_factory=dict)
    rows: int = 0  # GPU rows read (before reduction to one price per key)
    unknown: Counter[str] = field(default_factory=Counter)  # upstream names not mapped, with row counts
    skipped: Counter[str] = field(default_factory=Counter)  # other rows left out, by reason

    def offer(self, key: Key, usd: float, attrs: Attrs) -> None:
        """Add one row's price; several rows for one key (zones, regions of one price list) keep the lowest."""
        if key[3] not in PRICING_KINDS:
            raise ValueError(f"unknown pricing kind {key[3]!r}")
        held = self.prices.get(key)
        if held is None or usd < held:
            self.prices[key] = usd
            self.attrs[key] = attrs

    @property
    def machines(self) -> int:
        return sum(1 for k in self.prices if k[0] == "m")


def machine_key(region: str, instance_type: str, pricing: str) -> Key:
    return ("m", region, instance_type, pricing)


def part_key(region: str, gpu: str, count: float, pricing: str) -> Key:
    return ("p", region, f"{gpu}x{count:g}", pricing)


def price(text: str | None) -> float | None:
    """A price cell as a number, or ``None`` for no price: empty, "nan", "N/A", zero or negative."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    return value
