"""Vast.ai: a GPU marketplace, read as a price distribution per kind of listing, not as a price list.

Vast has no fixed instance types: thousands of hosts each list offers at their own price, and offers
appear and vanish between nightly runs. Storing every listing would turn the price history into
noise, so the parser groups listings by what a renter actually chooses between -- canonical GPU,
GPUs per offer, verified or not, datacenter or community host -- and records one price per group and
pricing kind: the group's MEDIAN whole-offer price, with min / p10 / median / max, the offer count
and every listing (price, country, reliability; cheapest first) in ``MarketStats``. Country is not a
group key: grouping by it left most groups with a single listing, whose price nobody can count on;
it is kept per listing so that a plan can filter on it (``--region US``). The group's region is
``all`` (REGION).

Source: ``POST {COSTOPT_VASTAI_URL}/api/v0/bundles/`` (the search endpoint vast-cli and gpuhunt use),
once with ``type: "on-demand"`` and once with ``type: "bid"`` (interruptible).

* on_demand price of a listing = ``dph_total``: the undiscounted whole-offer $/hour for all
  ``num_gpus`` GPUs, including the storage the query asks Vast to price in (``allocated_storage``,
  5 GiB as in vast-cli: about $0.00001/h at typical $/GB-month rates). Network transfer
  (``inet_up_cost``/``inet_down_cost``, per TB) is billed separately and not included.
  ``discounted_dph_total`` (prepaid-credit discounts) is ignored: it is not a list price.
* interruptible price of a listing = ``min_bid``: the lowest bid the host accepts now. It is a
  floor, not a clearing price: a running bid can be outbid and stopped, and renters who want to keep
  their machine bid above it. Storage is billed on top and is not added (it is negligible).
* ``gpu_frac`` is the offer's share of the host machine, not a fraction of a GPU; ``num_gpus`` whole
  GPUs are rented, so ``gpu_count = num_gpus``.

Result limits: Vast caps a search at ``limit`` offers (vast-cli #268). Every query sets ``limit``
explicitly; a response holding exactly ``limit`` offers was cut off, so the provider asks again once
per GPU name (the names seen in the cut-off response plus every name this module maps) and uses
those responses instead. Offers are de-duplicated by id within a pricing kind. A per-name answer that
is itself cut off (over 5000 offers of one GPU, far above today's market) is kept as is: ordered
cheapest first, its min and p10 stay right and its median reads low.

Datacenter vs community: offers carry ``hosting_type`` (0 in the one real capture, a community host);
1 is read as a datacenter host, as is an explicit ``datacenter: true``. This follows the search
filter's name (``datacenter``) and is an assumption: no public source spells the codes out.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from scraper.base import ParseResult, Provider, RawPayload, require_fields
from warehouse.errors import ParseError
from warehouse.quantiles import quantile
from warehouse.records import Listing, MarketStats, PriceRecord

if TYPE_CHECKING:
    from scraper.http import Fetcher

BUNDLES_PATH = "/api/v0/bundles/"
URL_VARIABLE = "COSTOPT_VASTAI_URL"
KEY_VARIABLE = "VAST_API_KEY"
LIMIT = 5000  # offers per query; the whole marketplace is a few thousand rentable offers
ALLOCATED_STORAGE_GIB = 5.0  # what dph_total prices in for disk (vast-cli's default)
# our pricing kind -> Vast's search ``type``
SEARCH_TYPES: dict[str, str] = {"on_demand": "on-demand", "interruptible": "bid"}
A100_80GB_MIN_MB = 60_000  # gpu_ram is in MB: 40 GB cards report ~40960, 80 GB cards ~81920
V100_32GB_MIN_MB = 24_000
REGION = "all"  # a group spans every country; the listings carry theirs
# fields of an offer that decide its group; a response where no offer has one of them has changed
# shape (every offer would otherwise land in a wrong group: unverified, community, country unknown)
OFFER_FIELDS: tuple[tuple[str, ...], ...] = (
    ("id",),
    ("gpu_name",),
    ("num_gpus",),
    ("geolocation",),
    ("verified", "verification"),
    ("hosting_type", "datacenter"),
)
# the JSON types the parser reads in those fields (and in the prices): a value of another type is not
# an odd offer but a changed upstream, read on it would misfile offers (hosting_type "dc" as community,
# gpu_ram "81920" leaving every A100 unknown), so the answer is refused (``require_fields``)
NUMBER = (int, float)
OFFER_TYPES: dict[str, tuple[type, ...]] = {
    "gpu_name": (str,),
    "num_gpus": (int,),
    "gpu_ram": NUMBER,
    "geolocation": (str,),
    "verified": (bool,),
    "verification": (str,),
    "hosting_type": (int,),
    "datacenter": (bool,),
    "reliability2": NUMBER,
    "reliability": NUMBER,
}
PRICE_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "on_demand": {"dph_total": NUMBER, "dph_base": NUMBER},
    "interruptible": {"min_bid": NUMBER},
}


@cache  # thousands of listings, a few dozen GPU names
def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# Vast's gpu_name spellings (gpuhunt GPU_MAPPING, vast-cli, anycloud-sh/catalog) -> canonical name.
# A value of None means "decided by gpu_ram" (see _canonical_gpu). Anything else is skipped, not guessed.
GPU_NAMES: dict[str, str | None] = {
    "RTX 3090": "RTX-3090",
    "RTX 4090": "RTX-4090",
    "RTX 5090": "RTX-5090",
    "RTX A4000": "RTX-A4000",
    "RTX A5000": "RTX-A5000",
    "RTX A6000": "RTX-A6000",
    "RTX 6000Ada": "RTX-6000-Ada",
    "RTX 6000 Ada": "RTX-6000-Ada",
    "RTX PRO 6000 S": "RTX-PRO-6000",
    "RTX PRO 6000 WS": "RTX-PRO-6000",
    "RTX PRO 6000": "RTX-PRO-6000",
    "Tesla T4": "T4",
    "Tesla V100": None,
    "A10": "A10",
    "L4": "L4",
    "L40": "L40",
    "L40S": "L40S",
    "A40": "A40",
    "A100 SXM4": None,
    "A100 PCIE": None,
    "H100 SXM": "H100-SXM",
    "H100 PCIE": "H100-PCIe",
    "H100 NVL": "H100-NVL",
    "H200": "H200",
    "H200 NVL": "H200-NVL",
    "B200": "B200",
}
_BY_KEY: dict[str, tuple[str, str | None]] = {_norm(k): (k, v) for k, v in GPU_NAMES.items()}


def _canonical_gpu(gpu_name: str, gpu_ram_mb: float | None) -> str | None:
    """Canonical GPU for a Vast ``gpu_name``; memory decides where one name covers two cards."""
    found = _BY_KEY.get(_norm(gpu_name))
    if found is None:
        return None
    upstream, canonical = found
    if canonical is not None:
        return canonical
    if gpu_ram_mb is None:
        return None  # A100/V100 without a memory size: which card is unknowable
    if upstream == "Tesla V100":
        return "V100-32GB" if gpu_ram_mb >= V100_32GB_MIN_MB else "V100-16GB"
    big = gpu_ram_mb >= A100_80GB_MIN_MB
    if upstream == "A100 SXM4":
        return "A100-80GB" if big else "A100-40GB"
    return "A100-80GB-PCIe" if big else "A100-40GB-PCIe"  # A100 PCIE


_COUNTRY = re.compile(r"^[A-Z]{2}$")


def country_of(geolocation: object) -> str:
    """ISO country code from Vast's "Region, CC" geolocation ("Guangxi, CN" -> "CN"); else "unknown"."""
    if not isinstance(geolocation, str):
        return "unknown"
    # "Region, CC", ", CC" and "CC" all put the code last; anything else is not guessed at
    last = geolocation.rsplit(",", 1)[-1].strip()
    return last if _COUNTRY.match(last) else "unknown"


def market_stats(prices: Iterable[float], listings: Iterable[Listing] = ()) -> MarketStats:
    """Distribution of a group's prices; ``listings`` (if given) are kept cheapest first, ties by country."""
    values = sorted(prices)
    kept = tuple(sorted(listings, key=lambda x: (x.usd_per_hour, x.country, -(x.reliability or 0.0))))
    return MarketStats(
        offer_count=len(values),
        min=values[0],
        p10=round(quantile(values, 0.10), 6),
        median=round(statistics.median(values), 6),
        max=values[-1],
        listings=kept,
    )


@dataclass(frozen=True, slots=True)
class _Group:
    pricing: str
    gpu: str
    num_gpus: int
    verified: bool
    datacenter: bool

    @property
    def instance_type(self) -> str:
        """Stable readable key, e.g. "RTX-4090x1.verified.datacenter"."""
        return (
            f"{self.gpu}x{self.num_gpus}."
            f"{'verified' if self.verified else 'unverified'}."
            f"{'datacenter' if self.datacenter else 'community'}"
        )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _reliability(offer: dict[str, Any]) -> float | None:
    """Vast's ``reliability2`` (falling back to ``reliability``), a 0..1 score; None when absent or out of range."""
    for key in ("reliability2", "reliability"):
        value = _number(offer.get(key))
        if value is not None and 0.0 <= value <= 1.0:
            return round(value, 6)
    return None


def _is_datacenter(offer: dict[str, Any]) -> bool:
    # the search filter is called ``datacenter``; offers carry ``hosting_type`` (1 = datacenter, 0 = community),
    # an int: an answer holding it in another type is refused before any offer is read (OFFER_TYPES)
    if offer.get("datacenter") is True:
        return True
    hosting = offer.get("hosting_type")
    return type(hosting) is int and hosting == 1


def _is_verified(offer: dict[str, Any]) -> bool:
    if isinstance(offer.get("verified"), bool):
        return bool(offer["verified"])
    return offer.get("verification") == "verified"


def _pricing_of(payload: RawPayload) -> str:
    """Pricing kind of a payload: its scope ("*", kind), else the ``type`` of the query it answered."""
    if len(payload.scope) >= 2 and payload.scope[1] in SEARCH_TYPES:
        return payload.scope[1]
    if payload.request_body:
        try:
            kind = json.loads(payload.request_body).get("type")
        except (ValueError, AttributeError):
            kind = None
        for pricing, search_type in SEARCH_TYPES.items():
            if kind == search_type:
                return pricing
    raise ParseError(f"vastai: cannot tell whether {payload.url} holds on-demand or bid offers (no scope)")


def offers_of(payload: RawPayload) -> list[Any]:
    """The ``offers`` list of a /bundles/ response; ParseError when the body is not that shape."""
    try:
        data = json.loads(payload.text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParseError(f"vastai: {payload.url} is not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("offers"), list):
        shape = f"keys {sorted(data)[:8]}" if isinstance(data, dict) else type(data).__name__
        raise ParseError(f"vastai: {payload.url} has no 'offers' list ({shape})")
    return data["offers"]


def search_query(search_type: str, gpu_name: str | None = None) -> dict[str, Any]:
    """The /bundles/ query: every rentable, unrented, non-external offer, cheapest first.

    No ``verified`` filter (vast-cli adds verified=true by default): unverified hosts are half the
    market and are kept as their own groups. ``external`` offers are listings relayed from outside the
    marketplace and are excluded, as vast-cli does.
    """
    query: dict[str, Any] = {
        "rentable": {"eq": True},
        "rented": {"eq": False},
        "external": {"eq": False},
    }
    if gpu_name is not None:
        query["gpu_name"] = {"eq": gpu_name}
    query.update(
        {
            "order": [["dph_total", "asc"]],
            "type": search_type,
            "limit": LIMIT,
            "allocated_storage": ALLOCATED_STORAGE_GIB,
        }
    )
    return query


class VastProvider(Provider):
    name: ClassVar[str] = "vastai"
    parser_version: ClassVar[str] = "2"  # 2: groups no longer split by country; listings kept
    base_urls: ClassVar[dict[str, str]] = {URL_VARIABLE: "https://console.vast.ai"}
    credential_var: ClassVar[str | None] = KEY_VARIABLE
    without_credential: ClassVar[str] = "searches anonymously (lower rate limits)"

    @property
    def url(self) -> str:
        return self.base_url(URL_VARIABLE) + BUNDLES_PATH

    def _headers(self) -> dict[str, str]:
        key = (self.env.get(KEY_VARIABLE) or "").strip()
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        """Two searches (on-demand, bid); a cut-off search is repeated once per GPU name.

        The key is optional: the search works anonymously, a key only raises rate limits. Vast's 429
        carries no Retry-After; the Fetcher backs off exponentially on its own.
        """
        payloads: list[RawPayload] = []
        headers = self._headers()
        for pricing, search_type in SEARCH_TYPES.items():
            scope = ("*", pricing)
            first = await http.post(self.url, json=search_query(search_type), headers=headers, scope=scope)
            try:
                offers = offers_of(first)
            except ParseError:
                payloads.append(first)  # the parser reports it, with the body kept as evidence
                continue
            if len(offers) < LIMIT:
                payloads.append(first)
                self.remember_decoded(first, offers)
                continue
            seen = {o["gpu_name"] for o in offers if isinstance(o, dict) and isinstance(o.get("gpu_name"), str)}
            for gpu_name in sorted(seen | set(GPU_NAMES)):
                payloads.append(
                    await http.post(self.url, json=search_query(search_type, gpu_name), headers=headers, scope=scope)
                )
        return payloads

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = ParseResult()
        listings: dict[_Group, list[Listing]] = defaultdict(list)
        sources: dict[_Group, tuple[str, datetime]] = {}
        seen_ids: set[tuple[str, object]] = set()
        listed: dict[str, int] = defaultdict(int)
        usable: dict[str, int] = defaultdict(int)
        located: dict[str, int] = defaultdict(int)  # listings whose geolocation gives a country
        unplaced: dict[str, object] = {}  # an example geolocation that gave none
        for payload in payloads:
            if payload.not_modified:
                continue
            pricing = _pricing_of(payload)
            kept = self.recall_decoded(payload)
            offers = kept if isinstance(kept, list) else offers_of(payload)
            price_field = ("dph_total",) if pricing == "on_demand" else ("min_bid",)
            require_fields(
                offers,
                (*OFFER_FIELDS, price_field),
                self.name,
                f"{payload.url} ({pricing})",
                types=OFFER_TYPES | PRICE_TYPES[pricing],
            )
            for offer in offers:
                listed[pricing] += 1
                listing = self._listing(offer, pricing, result)
                if listing is None:
                    continue
                usable[pricing] += 1
                group, item, offer_id = listing
                if item.country != "unknown":
                    located[pricing] += 1
                else:
                    unplaced.setdefault(pricing, offer.get("geolocation") if isinstance(offer, dict) else None)
                if offer_id is not None:
                    if (pricing, offer_id) in seen_ids:
                        continue
                    seen_ids.add((pricing, offer_id))
                listings[group].append(item)
                sources.setdefault(group, (payload.url, payload.fetched_at))
        for pricing, count in sorted(listed.items()):
            if count and not usable[pricing]:
                reasons = ", ".join(f"{n} {reason}" for reason, n in result.skipped.most_common(3))
                raise ParseError(
                    f"vastai: {count} {SEARCH_TYPES[pricing]} offers but none readable (skipped in this run: "
                    f"{reasons}): the offers' fields changed"
                )
            if usable[pricing] and not located[pricing]:
                # every listing "unknown": the geolocation's form changed ("Germany" for "DE", a nested object);
                # loading on would label the whole market country-less (null in every offer: require_fields)
                raise ParseError(
                    f"vastai: none of {usable[pricing]} {SEARCH_TYPES[pricing]} offers has a readable country (e.g. "
                    f"geolocation {unplaced.get(pricing)!r}, read as 'Region, CC'): the offers' fields changed"
                )
        for group in sorted(listings, key=lambda g: (g.pricing, g.gpu, g.num_gpus, g.instance_type)):
            items = listings[group]
            stats = market_stats([x.usd_per_hour for x in items], items)
            url, fetched_at = sources[group]
            result.prices.append(
                PriceRecord(
                    provider=self.name,
                    region=REGION,
                    instance_type=group.instance_type,
                    gpu=group.gpu,
                    gpu_count=group.num_gpus,
                    pricing=group.pricing,  # type: ignore[arg-type]
                    usd_per_hour=stats.median,
                    source=url,
                    observed_at=fetched_at,
                    stats=stats,
                )
            )
        return result

    @staticmethod
    def _listing(offer: object, pricing: str, result: ParseResult) -> tuple[_Group, Listing, object] | None:
        """(group, listing, offer id) of one offer, or None after counting why it was skipped."""
        if not isinstance(offer, dict):
            result.skip("malformed offer", repr(offer)[:60])
            return None
        offer_id = offer.get("id")
        if offer.get("rentable") is False or offer.get("rented") is True or offer.get("external") is True:
            result.skip("not rentable", str(offer_id))
            return None
        gpu_name = offer.get("gpu_name")
        gpu = _canonical_gpu(gpu_name, _number(offer.get("gpu_ram"))) if isinstance(gpu_name, str) else None
        if gpu is None:
            result.skip("unknown GPU", str(gpu_name))
            return None
        num_gpus = offer.get("num_gpus")
        if isinstance(num_gpus, bool) or not isinstance(num_gpus, int) or num_gpus <= 0:
            result.skip("no GPU count", f"{offer_id}: num_gpus={num_gpus!r}")
            return None
        price = _number(offer.get("dph_total" if pricing == "on_demand" else "min_bid"))
        # a listing with no machine price still has a dph_total: the storage (~$0.00001/h); that is no price
        base = _number(offer.get("dph_base"))
        unpriced = pricing == "on_demand" and base is not None and base <= 0
        if price is None or round(price, 6) <= 0 or unpriced:
            result.skip("no price", f"{offer_id}: {gpu_name}")
            return None
        group = _Group(
            pricing=pricing,
            gpu=gpu,
            num_gpus=num_gpus,
            verified=_is_verified(offer),
            datacenter=_is_datacenter(offer),
        )
        item = Listing(round(price, 6), country_of(offer.get("geolocation")), _reliability(offer))
        return group, item, offer_id
