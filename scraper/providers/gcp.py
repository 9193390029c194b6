"""GCP Compute Engine: GPU VM prices summed from the Cloud Billing Catalog's component SKUs.

Source: ``GET {COSTOPT_GCP_URL}/v1/services/6F81-5844-456A/skus?key=...&currencyCode=USD&pageSize=5000``
(6F81-5844-456A is Compute Engine), following ``nextPageToken`` until it is empty. The public catalog
needs only an API key (``COSTOPT_GCP_API_KEY``); without one the provider is skipped with a notice,
because the catalog has no anonymous access and the HTML pricing pages render one region at a time.

The catalog prices parts, not machines (``gcp_skus``): a VM's hourly price is GPUs + vCPUs + GiB of
RAM (+ its bundled Local SSD), with shapes from ``gcp_machines``. A machine gets a price in a region
only when every one of its components has exactly one price there; a missing or conflicting part
means no price (counted under ``skipped``), never a partial sum, because a VM without its vCPUs
looks 10-20 % cheaper than it is. Spot prices are the same sum over the ``Preemptible`` SKUs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, ClassVar, Self

from scraper.base import ParseResult, Provider, RawPayload, require_fields
from scraper.providers.gcp_machines import MACHINES, GcpMachine
from scraper.providers.gcp_skus import PriceTable, build_table
from warehouse.errors import MissingCredentials, ParseError
from warehouse.records import PriceRecord

if TYPE_CHECKING:
    from scraper.http import Fetcher

SERVICE = "6F81-5844-456A"  # Compute Engine
SKUS_PATH = f"/v1/services/{SERVICE}/skus"
URL_VARIABLE = "COSTOPT_GCP_URL"
KEY_VARIABLE = "COSTOPT_GCP_API_KEY"
PAGE_SIZE = 5000  # the API's maximum
MAX_PAGES = 100  # Compute Engine has tens of thousands of SKUs: ~10 pages; more means a token loop
PRICINGS = ("on_demand", "spot")
# fields of a SKU the parser reads; a page where no SKU has one of them has changed shape
SKU_FIELDS: tuple[tuple[str, ...], ...] = (
    ("skuId",),
    ("description",),
    ("category",),
    ("serviceRegions",),
    ("pricingInfo",),
)


def skus_of(payload: RawPayload) -> tuple[list[Any], str | None]:
    """(SKUs, next page token) of one catalog page; ParseError when the body is not a catalog page.

    Google omits empty repeated fields, so a page without ``skus`` is an empty page, not an error;
    an ``error`` object (an API error that came back with a 200 through a proxy) is one.
    """
    try:
        data = json.loads(payload.text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ParseError(f"gcp: {payload.url} is not JSON ({exc})") from None
    if not isinstance(data, dict) or "error" in data:
        shape = f"keys {sorted(data)[:8]}" if isinstance(data, dict) else type(data).__name__
        raise ParseError(f"gcp: {payload.url} is not a Cloud Billing SKU page ({shape})")
    skus = data.get("skus", [])
    if not isinstance(skus, list):
        raise ParseError(f"gcp: {payload.url} has 'skus' that is not a list")
    paging = [k for k in data if k != "nextPageToken" and any(w in k.lower() for w in ("page", "token", "next"))]
    if paging:  # a renamed page token would end the walk after this page and drop every later page's prices
        raise ParseError(f"gcp: {payload.url} pages with {paging[0]!r}, not 'nextPageToken': the response changed")
    token = data.get("nextPageToken")
    return skus, token if isinstance(token, str) and token else None


class GcpProvider(Provider):
    name: ClassVar[str] = "gcp"
    parser_version: ClassVar[str] = "1"
    base_urls: ClassVar[dict[str, str]] = {URL_VARIABLE: "https://cloudbilling.googleapis.com"}
    credential_var: ClassVar[str | None] = KEY_VARIABLE
    credential_required: ClassVar[bool] = True
    without_credential: ClassVar[str] = "skipped: the Cloud Billing Catalog API needs a key"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, replay: bool = False) -> Self:
        provider = super().from_env(env, replay=replay)
        if not replay and not (provider.env.get(KEY_VARIABLE) or "").strip():
            raise MissingCredentials(
                f"gcp needs a Cloud Billing API key in {KEY_VARIABLE} (console.cloud.google.com > APIs & Services "
                "> Credentials, with the Cloud Billing API enabled)"
            )
        return provider

    @property
    def url(self) -> str:
        return self.base_url(URL_VARIABLE) + SKUS_PATH

    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        """Every page of the Compute Engine SKU list; the key goes in the query and is never stored."""
        key = (self.env.get(KEY_VARIABLE) or "").strip()
        payloads: list[RawPayload] = []
        token: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            params: dict[str, str | int] = {"currencyCode": "USD", "pageSize": PAGE_SIZE}
            if key:
                params["key"] = key
            if token:
                params["pageToken"] = token
            payload = await http.get(self.url, params=params)
            payloads.append(payload)
            try:
                page = skus_of(payload)
            except ParseError:
                return payloads  # the parser reports it, with the body kept as evidence
            self.remember_decoded(payload, page)
            token = page[1]
            if token is None:
                return payloads
            if token in seen:
                raise ParseError(f"gcp: the catalog repeated page token {token[:16]}... (a paging loop)")
            seen.add(token)
        raise ParseError(f"gcp: the catalog did not end after {MAX_PAGES} pages")

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = ParseResult()
        skus: list[Any] = []
        page_of: dict[str, RawPayload] = {}
        for payload in payloads:
            kept = self.recall_decoded(payload)
            page, _ = kept if isinstance(kept, tuple) else skus_of(payload)
            require_fields(page, SKU_FIELDS, self.name, payload.url)
            for sku in page:
                if isinstance(sku, dict) and isinstance(sku.get("skuId"), str):
                    page_of.setdefault(sku["skuId"], payload)
            skus.extend(page)
        if not skus:
            raise ParseError("gcp: the catalog returned no SKUs at all")
        table, problems = build_table(skus)
        for reason, example in problems:
            result.skip(reason, example)
        for name in sorted(MACHINES):
            machine = MACHINES[name]
            for pricing in PRICINGS:
                if pricing == "on_demand" and not machine.on_demand:
                    continue
                for region in table.regions_with(machine.components()[0][0], pricing):
                    record = self._price(name, machine, region, pricing, table, page_of, payloads[0], result)
                    if record is not None:
                        result.prices.append(record)
        if not result.prices:
            raise ParseError("gcp: no GPU machine could be priced from the catalog (component SKUs not recognised)")
        return result

    def _price(
        self,
        name: str,
        machine: GcpMachine,
        region: str,
        pricing: str,
        table: PriceTable,
        page_of: dict[str, RawPayload],
        first: RawPayload,
        result: ParseResult,
    ) -> PriceRecord | None:
        """The machine's hourly price in one region, or None (counted) when a component is missing."""
        total = Decimal(0)
        for component, quantity in machine.components():
            if table.conflicted(component, region, pricing):
                result.skip("conflicting SKU prices", f"{name} {region} {pricing}: {component}")
                return None
            unit = table.get(component, region, pricing)
            if unit is None:
                result.skip("incomplete components", f"{name} {region} {pricing}: no {component} price")
                return None
            total += unit * Decimal(str(quantity))
        gpu_component = machine.components()[0][0]
        page = page_of.get(table.sources[(gpu_component, region, pricing)], first)
        return PriceRecord(
            provider=self.name,
            region=region,
            instance_type=name,
            gpu=machine.gpu,
            gpu_count=machine.gpu_count,
            pricing=pricing,  # type: ignore[arg-type]
            usd_per_hour=round(float(total), 6),
            source=page.url,
            observed_at=page.fetched_at,
            vcpus=machine.vcpus,
            memory_gib=machine.memory_gib,
        )
