"""Azure: GPU VM prices from the public Retail Prices API, one query per region.

Source: ``GET {COSTOPT_AZURE_URL}/api/retail/prices?api-version=2023-01-01-preview&$filter=...`` (no
credentials). The filter asks for pay-as-you-go Virtual Machines rows of one region whose
``armSkuName`` contains ``Standard_N`` (every GPU series is an N series), which narrows thousands of
rows to the GPU ones; the parser still checks every row itself and does not trust the filter.
Values in ``$filter`` are case-sensitive since this api-version. OData ``or`` is avoided (peers
disagree on whether it works), hence one query per region, which also confines a price update in
the middle of a walk to one region.

Paging: ``NextPageLink`` is followed until it is empty. Its host is replaced by the configured base
URL so a mirror keeps serving the walk. A page that comes back full (``PAGE_SIZE`` items) with no
``NextPageLink`` is continued with ``$skip`` (the link has been reported missing while more rows
existed).

Rows: ``type`` Consumption only (DevTest and Reservation rows have other prices; a Reservation
``retailPrice`` is for the whole term), Linux only (``productName`` without "Windows"/" Win", no
Cloud Services), no "Low Priority" (retired batch pricing that would overwrite on-demand), USD,
``unitOfMeasure`` "1 Hour", ``retailPrice`` > 0. Spot rows are those whose ``skuName``/``meterName``
ends with " Spot". Where two rows price one VM, region and kind, the latest ``effectiveStartDate``
wins; two current rows that disagree give no price (counted), never a guess.

The API says nothing about GPUs: ``AZURE_VMS`` below is the size table (GPU, count, vCPUs, GiB) from
Microsoft's VM size documentation. NV A10 v5 sizes are fractions of one A10 (1/6, 1/3, 1/2): they are
recorded with their fractional ``gpu_count`` so SQL users see them, and the planner skips them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from scraper.base import ParseResult, Provider, RawPayload, regions_from, require_fields
from warehouse.errors import ParseError
from warehouse.records import PriceRecord

if TYPE_CHECKING:
    from scraper.http import Fetcher

PRICES_PATH = "/api/retail/prices"
API_VERSION = "2023-01-01-preview"
URL_VARIABLE = "COSTOPT_AZURE_URL"
REGIONS_VARIABLE = "COSTOPT_AZURE_REGIONS"
PAGE_SIZE = 1000  # items per page today; a full page without a NextPageLink is continued with $skip
MAX_PAGES = 50  # per region; GPU rows of one region fill one page
# regions with the broadest GPU line-up (ND H100/H200/MI300X v5, NC A100/H100, NV A10) in the Americas, Europe, APAC
DEFAULT_REGIONS: tuple[str, ...] = (
    "eastus",
    "eastus2",
    "southcentralus",
    "westus3",
    "westeurope",
    "swedencentral",
    "uksouth",
    "japaneast",
)
_REGION = re.compile(r"^[a-z]+[a-z0-9]*$")
# fields of a price row the parser reads; a page where no row has one of them has changed shape
ITEM_FIELDS: tuple[tuple[str, ...], ...] = (
    ("armSkuName",),
    ("armRegionName",),
    ("retailPrice",),
    ("type",),
    ("serviceName",),
    ("productName",),
    ("skuName", "meterName"),
    ("unitOfMeasure",),
)


@dataclass(frozen=True, slots=True)
class AzureVm:
    gpu: str  # canonical GPU name (warehouse/data/gpus.csv)
    gpu_count: float  # below 1 for NV A10 v5 partial-GPU sizes
    vcpus: int
    memory_gib: float


def _a10(fraction: float, vcpus: int, gib: int) -> AzureVm:
    return AzureVm("A10", fraction, vcpus, gib)


# armSkuName -> size, from the Azure VM size docs ("ND H100 v5", "NC A100 v4", ... series pages).
AZURE_VMS: dict[str, AzureVm] = {
    # ND H100 v5 / ND H200 v5 / ND MI300X v5: 8 GPUs on NVLink / Infinity Fabric, InfiniBand between VMs
    "Standard_ND96isr_H100_v5": AzureVm("H100-SXM", 8, 96, 1900),
    "Standard_ND96is_H100_v5": AzureVm("H100-SXM", 8, 96, 1900),
    "Standard_ND96isr_H200_v5": AzureVm("H200", 8, 96, 1850),
    "Standard_ND96isr_MI300X_v5": AzureVm("MI300X", 8, 96, 1850),
    "Standard_ND96is_MI300X_v5": AzureVm("MI300X", 8, 96, 1850),
    # NC H100 v5: H100 NVL 94 GB (PCIe), 1 or 2 per VM
    "Standard_NC40ads_H100_v5": AzureVm("H100-NVL", 1, 40, 320),
    "Standard_NC80adis_H100_v5": AzureVm("H100-NVL", 2, 80, 640),
    # NC A100 v4: A100 80 GB PCIe; NDm A100 v4: 8x A100 80 GB SXM; ND A100 v4: 8x A100 40 GB SXM
    "Standard_NC24ads_A100_v4": AzureVm("A100-80GB-PCIe", 1, 24, 220),
    "Standard_NC48ads_A100_v4": AzureVm("A100-80GB-PCIe", 2, 48, 440),
    "Standard_NC96ads_A100_v4": AzureVm("A100-80GB-PCIe", 4, 96, 880),
    "Standard_ND96amsr_A100_v4": AzureVm("A100-80GB", 8, 96, 1900),
    "Standard_ND96asr_v4": AzureVm("A100-40GB", 8, 96, 900),
    # NC A10 v4 (whole A10s) and NV A10 v5 (1/6, 1/3, 1/2 of an A10 below 36 vCPUs)
    "Standard_NC8ads_A10_v4": AzureVm("A10", 1, 8, 100),
    "Standard_NC16ads_A10_v4": AzureVm("A10", 1, 16, 200),
    "Standard_NC32ads_A10_v4": AzureVm("A10", 2, 32, 400),
    "Standard_NV6ads_A10_v5": _a10(1 / 6, 6, 55),
    "Standard_NV12ads_A10_v5": _a10(1 / 3, 12, 110),
    "Standard_NV18ads_A10_v5": _a10(1 / 2, 18, 220),
    "Standard_NV36ads_A10_v5": _a10(1, 36, 440),
    "Standard_NV36adms_A10_v5": _a10(1, 36, 880),
    "Standard_NV72ads_A10_v5": _a10(2, 72, 880),
    # NC T4 v3
    "Standard_NC4as_T4_v3": AzureVm("T4", 1, 4, 28),
    "Standard_NC8as_T4_v3": AzureVm("T4", 1, 8, 56),
    "Standard_NC16as_T4_v3": AzureVm("T4", 1, 16, 110),
    "Standard_NC64as_T4_v3": AzureVm("T4", 4, 64, 440),
    # NCv3 (V100 16 GB) and NDv2 (8x V100 32 GB)
    "Standard_NC6s_v3": AzureVm("V100-16GB", 1, 6, 112),
    "Standard_NC12s_v3": AzureVm("V100-16GB", 2, 12, 224),
    "Standard_NC24s_v3": AzureVm("V100-16GB", 4, 24, 448),
    "Standard_NC24rs_v3": AzureVm("V100-16GB", 4, 24, 448),
    "Standard_ND40rs_v2": AzureVm("V100-32GB", 8, 40, 672),
}


def regions_from_env(env: Mapping[str, str]) -> tuple[str, ...]:
    return regions_from(env, REGIONS_VARIABLE, DEFAULT_REGIONS, _REGION, "eastus")


def region_filter(region: str) -> str:
    return (
        "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
        f"and armRegionName eq '{region}' and contains(armSkuName, 'Standard_N')"
    )


def page_of(payload: RawPayload) -> tuple[list[Any], str | None]:
    """(Items, NextPageLink) of one response; ParseError when it is not a Retail Prices page.

    The envelope always carries ``NextPageLink`` (null on the last page). A page without the key has
    changed shape: reading on as if it were the last page would drop every later page's prices.
    """
    try:
        data = json.loads(payload.text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParseError(f"azure: {payload.url} is not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("Items"), list):
        shape = f"keys {sorted(data)[:8]}" if isinstance(data, dict) else type(data).__name__
        raise ParseError(f"azure: {payload.url} has no 'Items' list ({shape})")
    if "NextPageLink" not in data:  # always there, null on the last page: without it the walk would stop early
        raise ParseError(f"azure: {payload.url} has no 'NextPageLink' (keys {sorted(data)[:8]}): the envelope changed")
    link = data.get("NextPageLink")
    return data["Items"], link if isinstance(link, str) and link else None


class AzureProvider(Provider):
    name: ClassVar[str] = "azure"
    parser_version: ClassVar[str] = "1"
    base_urls: ClassVar[dict[str, str]] = {URL_VARIABLE: "https://prices.azure.com"}

    config_vars: ClassVar[tuple[str, ...]] = (REGIONS_VARIABLE,)

    @property
    def url(self) -> str:
        return self.base_url(URL_VARIABLE) + PRICES_PATH

    def configured_regions(self) -> tuple[str, ...] | None:
        return regions_from_env(self.env)

    def scope_of(self, region: str, pricing: str) -> str:
        """Each region is its own query (its own pages), priced on demand and spot."""
        return f"{pricing}/{region}"

    def expects(self, scope: str) -> bool:
        _, _, region = scope.partition("/")
        return not region or region in regions_from_env(self.env)

    def _on_our_host(self, link: str) -> str:
        """The NextPageLink with its scheme and host replaced by the configured base URL."""
        parts = urlsplit(link)
        return f"{self.base_url(URL_VARIABLE)}{parts.path}" + (f"?{parts.query}" if parts.query else "")

    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        payloads: list[RawPayload] = []
        for region in regions_from_env(self.env):
            payloads.extend(await self._walk(http, region))
        return payloads

    async def _walk(self, http: Fetcher, region: str) -> list[RawPayload]:
        """Every page of one region: NextPageLink, else $skip while pages come back full."""
        params = {"api-version": API_VERSION, "$filter": region_filter(region)}
        payload = await http.get(self.url, params=params, scope=(region,))
        pages = [payload]
        seen = 0
        links: set[str] = set()
        for _ in range(MAX_PAGES):
            try:
                page = page_of(payload)
            except ParseError:
                return pages  # the parser reports it with the body kept
            self.remember_decoded(payload, page)
            items, link = page
            seen += len(items)
            if link is not None:
                if link in links:  # a page pointing back to one already read would loop to MAX_PAGES requests
                    raise ParseError(f"azure: {region}: NextPageLink repeats a page already read ({link[:120]})")
                links.add(link)
                payload = await http.get(self._on_our_host(link), scope=(region,))
            elif len(items) >= PAGE_SIZE:
                payload = await http.get(self.url, params={**params, "$skip": str(seen)}, scope=(region,))
            else:
                return pages
            pages.append(payload)
        raise ParseError(f"azure: {region} did not end after {MAX_PAGES} pages")

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = ParseResult()
        chosen: dict[tuple[str, str, str], tuple[str, float, RawPayload]] = {}
        conflicts: set[tuple[str, str, str]] = set()
        rows = 0
        for payload in payloads:
            kept = self.recall_decoded(payload)
            items, _ = kept if isinstance(kept, tuple) else page_of(payload)
            require_fields(items, ITEM_FIELDS, self.name, payload.url)
            rows += len(items)
            for item in items:
                row = self._row(item, result)
                if row is None:
                    continue
                key, effective, price = row
                known = chosen.get(key)
                if known is None or effective > known[0]:
                    chosen[key] = (effective, price, payload)
                    conflicts.discard(key)
                elif effective == known[0] and price != known[1]:
                    conflicts.add(key)
        for key in sorted(chosen):
            arm_sku, region, pricing = key
            if key in conflicts:
                result.skip("conflicting prices", f"{arm_sku} {region} {pricing}")
                continue
            effective, price, payload = chosen[key]
            vm = AZURE_VMS[arm_sku]
            result.prices.append(
                PriceRecord(
                    provider=self.name,
                    region=region,
                    instance_type=arm_sku,
                    gpu=vm.gpu,
                    gpu_count=vm.gpu_count,
                    pricing=pricing,  # type: ignore[arg-type]
                    usd_per_hour=price,
                    source=payload.url,
                    observed_at=payload.fetched_at,
                    vcpus=vm.vcpus,
                    memory_gib=vm.memory_gib,
                    effective_since=_as_time(effective),
                )
            )
        if rows and not result.prices:
            raise ParseError(f"azure: {rows} rows but none is a known GPU VM's Linux pay-as-you-go price")
        return result

    @staticmethod
    def _row(item: object, result: ParseResult) -> tuple[tuple[str, str, str], str, float] | None:
        """((armSkuName, region, pricing), effectiveStartDate, price) of a usable row, or None (counted)."""
        if not isinstance(item, dict):
            result.skip("malformed row", repr(item)[:60])
            return None
        arm_sku = item.get("armSkuName") or ""
        sku_name = str(item.get("skuName") or "")
        meter = str(item.get("meterName") or "")
        product = str(item.get("productName") or "")
        label = f"{arm_sku or '?'} {item.get('armRegionName')} {sku_name!r}"
        if item.get("type") != "Consumption" or item.get("serviceName") != "Virtual Machines":
            return None  # DevTest, Reservation and other services: not pay-as-you-go VM prices
        if (
            "Windows" in product
            or product.endswith(" Win")
            or "Cloud Services" in product
            or "CloudServices" in product
        ):
            return None
        if sku_name.endswith(" Low Priority") or meter.endswith(" Low Priority"):
            return None
        if arm_sku not in AZURE_VMS:
            result.skip("unknown VM size", label)
            return None
        region = str(item.get("armRegionName") or "").lower()
        price = item.get("retailPrice")
        if not region or isinstance(price, bool) or not isinstance(price, int | float):
            result.skip("malformed row", label)
            return None
        if item.get("currencyCode", "USD") != "USD" or item.get("unitOfMeasure") != "1 Hour":
            result.skip("not USD per hour", f"{label} {item.get('currencyCode')} {item.get('unitOfMeasure')}")
            return None
        if price <= 0:
            result.skip("zero price", label)
            return None
        spot = sku_name.endswith(" Spot") or meter.endswith(" Spot")
        effective = str(item.get("effectiveStartDate") or "")
        if not _is_date(effective):
            result.skip("malformed row", f"{label}: effectiveStartDate {effective!r}")
            return None
        return (arm_sku, region, "spot" if spot else "on_demand"), effective, round(float(price), 6)


def _as_time(text: str) -> datetime | None:
    """effectiveStartDate as an aware UTC time (a date without zone is UTC), None when empty."""
    if not text:
        return None
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _is_date(text: str) -> bool:
    """Empty (no date: ranks below any dated row) or ISO 8601; anything else makes the row unusable."""
    try:
        return not text or bool(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return False
