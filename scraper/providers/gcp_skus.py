"""Cloud Billing Catalog SKUs -> a table of component unit prices per (component, region, pricing).

Compute Engine has no SKU per machine type: a GPU VM is billed as GPUs + vCPUs + GiB of RAM (+ the
Local SSD some machine types bundle), each a separate SKU whose ``serviceRegions`` say where it
applies. This module reads one SKU at a time and keeps only the plain pay-as-you-go rates of the
components costopt's machine table (``gcp_machines``) needs; everything else in the catalog (tens of
thousands of SKUs: other families, disks, network, licences) is ignored without a count.

Recognition is by exact description, not by substring, because the look-alikes differ by one word:
after dropping the location (" running in Americas") and the spot wording ("Spot Preemptible ...",
"... attached to Spot Preemptible VMs"), the rest must be a key of ``GPU_SKUS``, ``<family> Core`` /
``<family> Ram`` with a family in ``VM_FAMILIES``, or the Local SSD description. Before that, a SKU
whose description names a commitment, reservation, sole tenancy, premium, custom or extended shape,
a suspended VM, or a Dynamic Workload Scheduler product (DWS Defined Duration, Calendar Mode,
Flex-start) is dropped: DWS SKUs carry ``usageType: OnDemand`` and are cheaper than on-demand, and
"Reserved ..." SKUs are priced $0.

Spot is decided by ``usageType: Preemptible`` *or* by the description: A4's B200 spot SKU is
described "Spot Preemptible ..." but labelled ``OnDemand`` (SkyPilot PR #8125).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

HOURS_PER_MONTH = Decimal(730)  # Google's conversion for monthly units (GiBy.mo), as in its pricing pages
NANOS = Decimal(1_000_000_000)

# Description (location and spot wording removed, lower case) -> GPU SKU key used by gcp_machines.
GPU_SKUS: dict[str, str] = {
    "nvidia tesla a100 gpu": "A100",  # 40 GB, A2 High / Mega
    "nvidia tesla a100 80gb gpu": "A100-80GB",  # A2 Ultra
    "nvidia h100 80gb gpu": "H100",  # A3 High
    # A3 Mega: three spellings seen in different regions (SkyPilot matches all three)
    "nvidia h100 80gb plus gpu": "H100-MEGA",
    "nvidia h100 80gb mega gpu": "H100-MEGA",
    "nvidia h100 mega 80gb gpu": "H100-MEGA",
    "h200 141gb gpu": "H200",  # A3 Ultra; the real SKU has no "Nvidia"
    "nvidia h200 141gb gpu": "H200",
    "a4 nvidia b200 (1 gpu slice)": "B200-SLICE",  # A4: one eighth of an a4-highgpu-8g, vCPU/RAM/SSD included
    "nvidia l4 gpu": "L4",  # G2
    "nvidia tesla t4 gpu": "T4",  # attached to N1
    "nvidia tesla v100 gpu": "V100",  # attached to N1
}

# "<label> Core" / "<label> Ram" (lower case) -> vCPU/RAM family key used by gcp_machines.
VM_FAMILIES: dict[str, str] = {
    "a2 instance": "a2",  # A2 High, Mega and Ultra
    "a3 instance": "a3",  # A3 High
    "a3plus instance": "a3-mega",  # A3 Mega
    "a3ultra instance": "a3-ultra",  # A3 Ultra
    "g2 instance": "g2",
    "n1 predefined instance": "n1",
}
LOCAL_SSD = "ssd backed local storage"

# Words that mark a SKU as something other than the plain pay-as-you-go rate (matched in lower case).
REJECT_MARKERS: tuple[str, ...] = (
    "commitment",
    "reserved",
    "reservation",
    "sole tenancy",
    "premium",
    "custom",
    "extended",
    "suspended",
    "dws",
    "defined duration",
    "calendar mode",
    "flex start",
    "flex-start",
)
PRICED_USAGE_TYPES = frozenset({"OnDemand", "Preemptible"})
# usageUnit -> (component kinds it may price, divisor to a per-hour rate)
UNITS: dict[str, tuple[frozenset[str], Decimal]] = {
    "h": (frozenset({"gpu", "core"}), Decimal(1)),
    "GiBy.h": (frozenset({"ram", "lssd"}), Decimal(1)),
    "GiBy.mo": (frozenset({"lssd"}), HOURS_PER_MONTH),
}

_LOCATION = re.compile(r"\s+(?:running\s+)?in\s+[^()]*$")
_SPOT_PREFIXES = ("spot preemptible ", "preemptible ")
_SPOT_SUFFIXES = (" attached to spot preemptible vms", " attached to preemptible vms")
_REGION = re.compile(r"^[a-z]+-[a-z]+\d+$")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True, order=True)
class Component:
    """One billable part of a VM: a GPU model, a family's vCPU or RAM, or Local SSD."""

    kind: str  # gpu | core | ram | lssd
    name: str  # GPU SKU key, vCPU/RAM family key, "" for Local SSD

    def __str__(self) -> str:
        return {"gpu": f"{self.name} GPU", "core": f"{self.name} vCPU", "ram": f"{self.name} RAM"}.get(
            self.kind, "Local SSD"
        )


def gpu(name: str) -> Component:
    return Component("gpu", name)


def core(family: str) -> Component:
    return Component("core", family)


def ram(family: str) -> Component:
    return Component("ram", family)


SSD = Component("lssd", "")


@dataclass(frozen=True, slots=True)
class SkuPrice:
    """What one recognised SKU says: a per-hour unit price of one component, spot or not, in some regions."""

    sku_id: str
    description: str
    component: Component
    spot: bool
    usd_per_hour: Decimal  # per GPU / vCPU / GiB, per hour
    regions: tuple[str, ...]


@dataclass(slots=True)
class PriceTable:
    """Unit prices by (component, region, pricing); a key two SKUs disagree on is kept as a conflict."""

    prices: dict[tuple[Component, str, str], Decimal] = field(default_factory=dict)
    sources: dict[tuple[Component, str, str], str] = field(default_factory=dict)
    conflicts: dict[tuple[Component, str, str], tuple[str, ...]] = field(default_factory=dict)

    def add(self, sku: SkuPrice) -> None:
        pricing = "spot" if sku.spot else "on_demand"
        for region in sku.regions:
            key = (sku.component, region, pricing)
            known = self.prices.get(key)
            if known is None:
                self.prices[key] = sku.usd_per_hour
                self.sources[key] = sku.sku_id
            elif known != sku.usd_per_hour:
                self.conflicts[key] = (*self.conflicts.get(key, (self.sources[key],)), sku.sku_id)

    def get(self, component: Component, region: str, pricing: str) -> Decimal | None:
        return self.prices.get((component, region, pricing))

    def conflicted(self, component: Component, region: str, pricing: str) -> tuple[str, ...] | None:
        return self.conflicts.get((component, region, pricing))

    def regions_with(self, component: Component, pricing: str) -> list[str]:
        return sorted({r for (c, r, p) in self.prices if c == component and p == pricing})


class Unusable(Exception):
    """A SKU that names a wanted component but whose price cannot be used (zero, odd unit, bad shape)."""

    def __init__(self, reason: str, example: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.example = example


def normalise(description: str) -> tuple[str, bool]:
    """(description without location and spot wording, in lower case; True when it says spot)."""
    text = _SPACES.sub(" ", description.strip().lower())
    text = _LOCATION.sub("", text)
    spot = False
    for prefix in _SPOT_PREFIXES:
        if text.startswith(prefix):
            text, spot = text[len(prefix) :], True
            break
    for suffix in _SPOT_SUFFIXES:
        if text.endswith(suffix):
            text, spot = text[: -len(suffix)], True
            break
    return text, spot


def component_of(text: str) -> Component | None:
    """The component a normalised description prices, or None when costopt does not need it."""
    if text in GPU_SKUS:
        return gpu(GPU_SKUS[text])
    if text == LOCAL_SSD:
        return SSD
    label, _, word = text.rpartition(" ")
    family = VM_FAMILIES.get(label)
    if family is None:
        return None
    return {"core": core(family), "ram": ram(family)}.get(word)


def read_sku(sku: Any) -> SkuPrice | None:
    """The unit price a SKU gives a wanted component; None when the SKU is not one costopt uses.

    Raises ``Unusable`` for a SKU that is one costopt uses but whose price cannot be read: it is
    counted, and the component stays unpriced in those regions (so the VMs needing it get no price).
    """
    if not isinstance(sku, dict):
        raise Unusable("malformed SKU", repr(sku)[:60])
    description = sku.get("description")
    category = sku.get("category")
    if not isinstance(description, str) or not isinstance(category, dict):
        raise Unusable("malformed SKU", str(sku.get("skuId", "?")))
    lowered = description.lower()
    if category.get("usageType") not in PRICED_USAGE_TYPES or any(m in lowered for m in REJECT_MARKERS):
        return None
    text, spot = normalise(description)
    component = component_of(text)
    if component is None:
        return None
    sku_id = str(sku.get("skuId", "?"))
    example = f"{sku_id} {description!r}"
    regions = sku.get("serviceRegions")
    if not isinstance(regions, list):
        raise Unusable("malformed SKU", example)
    price = unit_price(sku, component, example)
    return SkuPrice(
        sku_id=sku_id,
        description=description,
        component=component,
        spot=spot or category.get("usageType") == "Preemptible",
        usd_per_hour=price,
        regions=tuple(r for r in regions if isinstance(r, str) and _REGION.match(r)),
    )


def unit_price(sku: dict[str, Any], component: Component, example: str) -> Decimal:
    """USD per unit-hour of the SKU's current, first-tier rate: ``units + nanos / 1e9`` (/ 730 if monthly)."""
    try:
        infos = sku["pricingInfo"]
        info = max(infos, key=lambda i: str(i.get("effectiveTime", "")))  # the current one if several
        expression = info["pricingExpression"]
        unit = expression["usageUnit"]
        first = min(expression["tieredRates"], key=lambda t: float(t.get("startUsageAmount", 0)))
        money = first["unitPrice"]
        currency = money.get("currencyCode", "USD")
        amount = Decimal(int(money.get("units") or 0)) + Decimal(int(money.get("nanos") or 0)) / NANOS
    except (KeyError, TypeError, ValueError, AttributeError):
        raise Unusable("malformed SKU", example) from None
    if currency != "USD":
        raise Unusable("not priced in USD", f"{example} ({currency})")
    kinds, divisor = UNITS.get(unit, (frozenset(), Decimal(1)))
    if component.kind not in kinds:
        raise Unusable("unexpected usage unit", f"{example} ({unit})")
    if amount <= 0:
        raise Unusable("zero price", example)
    return amount / divisor


def build_table(skus: Iterable[Any]) -> tuple[PriceTable, list[tuple[str, str]]]:
    """The price table of every usable SKU, and (reason, example) for each wanted but unusable one."""
    table = PriceTable()
    problems: list[tuple[str, str]] = []
    for sku in skus:
        try:
            price = read_sku(sku)
        except Unusable as exc:
            problems.append((exc.reason, exc.example))
            continue
        if price is not None:
            table.add(price)
    return table, problems
