"""Azure: Retail Prices rows -> Linux pay-as-you-go and spot VM prices, paging, regions, errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
import respx

from scraper.base import RawPayload
from scraper.http import Fetcher
from scraper.providers.azure import AZURE_VMS, DEFAULT_REGIONS, AzureProvider, region_filter, regions_from_env
from tests.scraper.support import T0, make_fetcher, replay_parse
from warehouse.errors import ParseError, ProviderError, TransientProviderError
from warehouse.gpus import catalog

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "azure"
SHARED = REPO.parent / "shared" / "reference"
DOCS_EXAMPLE = SHARED / "captures" / "azure" / "retail_prices_docs_example_items_2021.json"
EMPTY_PAGE = SHARED / "captures" / "azure" / "retail_prices_empty_page_envelope_2021.json"
URL = "https://prices.azure.com/api/retail/prices"


def row(size: str = "Standard_NC24ads_A100_v4", price: float = 3.673, region: str = "eastus", **extra) -> dict:
    meter = " ".join(size.removeprefix("Standard_").split("_"))
    base = {
        "currencyCode": "USD",
        "retailPrice": price,
        "unitPrice": price,
        "armRegionName": region,
        "effectiveStartDate": "2026-05-01T00:00:00Z",
        "meterName": meter,
        "productName": "Virtual Machines NCads A100 v4 Series",
        "skuName": meter,
        "serviceName": "Virtual Machines",
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "armSkuName": size,
    }
    base.update(extra)
    return base


def page(items: list, link: str | None = None) -> RawPayload:
    body = {"BillingCurrency": "USD", "Items": items, "NextPageLink": link, "Count": len(items)}
    return RawPayload(url=URL, fetched_at=T0, status=200, body=json.dumps(body).encode(), scope=("eastus",))


def parse(items: list) -> dict[tuple[str, str, str], float]:
    result = AzureProvider.from_env({}).parse([page(items)])
    return {(r.instance_type, r.region, r.pricing): r.usd_per_hour for r in result.prices}


def fetcher(client: httpx.AsyncClient) -> Fetcher:
    return make_fetcher(client, "azure", attempts=2)[0]


# --- rows ----------------------------------------------------------------------------------------


def test_linux_consumption_and_spot_rows_are_kept():
    prices = parse(
        [
            row(),
            row(price=0.746721, skuName="NC24ads A100 v4 Spot", meterName="NC24ads A100 v4 Spot"),
        ]
    )
    assert prices == {
        ("Standard_NC24ads_A100_v4", "eastus", "on_demand"): 3.673,
        ("Standard_NC24ads_A100_v4", "eastus", "spot"): 0.746721,
    }


@pytest.mark.parametrize(
    "extra",
    [
        {"productName": "Virtual Machines NCads A100 v4 Series Windows"},
        {"productName": "Virtual Machines NCads A100 v4 Srs Win"},
        {"productName": "Cloud Services NCads A100 v4 Series"},
        {"skuName": "NC24ads A100 v4 Low Priority", "meterName": "NC24ads A100 v4 Low Priority"},
        {"type": "DevTestConsumption"},
        {"type": "Reservation", "reservationTerm": "1 Year", "retailPrice": 25007.0},
        {"serviceName": "Storage"},
    ],
)
def test_rows_that_are_not_linux_pay_as_you_go_are_ignored(extra):
    # each look-alike at a different price next to the real row: the real row's price must survive
    assert parse([row(), row(**{"retailPrice": 9.99, **extra})]) == {
        ("Standard_NC24ads_A100_v4", "eastus", "on_demand"): 3.673
    }


def test_zero_unknown_and_wrong_unit_rows_are_counted_not_priced():
    result = AzureProvider.from_env({}).parse(
        [
            page(
                [
                    row(),
                    row(price=0.0, skuName="x Spot"),
                    row("Standard_NV12s_v3", 1.14),
                    row(unitOfMeasure="1/Month", skuName="y Spot"),
                    row(currencyCode="EUR", skuName="z Spot"),
                ]
            )
        ]
    )
    assert [(r.instance_type, r.pricing) for r in result.prices] == [("Standard_NC24ads_A100_v4", "on_demand")]
    assert result.skipped == {"zero price": 1, "unknown VM size": 1, "not USD per hour": 2}


def test_a_row_with_a_bad_date_is_skipped_not_the_page():
    result = AzureProvider.from_env({}).parse(
        [page([row(effectiveStartDate="last tuesday"), row("Standard_NC4as_T4_v3", 0.526)])]
    )
    assert [r.instance_type for r in result.prices] == ["Standard_NC4as_T4_v3"]
    assert result.skipped == {"malformed row": 1}


def test_latest_effective_date_wins_and_a_same_date_disagreement_is_no_price():
    newer = row(price=3.5, effectiveStartDate="2026-10-01T00:00:00Z")
    assert parse([row(), newer])[("Standard_NC24ads_A100_v4", "eastus", "on_demand")] == 3.5
    result = AzureProvider.from_env({}).parse([page([row(), row(price=3.9), row("Standard_NC4as_T4_v3", 0.526)])])
    assert [r.instance_type for r in result.prices] == ["Standard_NC4as_T4_v3"]
    assert result.skipped["conflicting prices"] == 1


def test_fractional_a10_sizes_keep_their_fraction():
    result = AzureProvider.from_env({}).parse([page([row("Standard_NV6ads_A10_v5", 0.454)])])
    (record,) = result.prices
    assert record.gpu == "A10" and record.gpu_count == pytest.approx(1 / 6)
    assert record.usd_per_gpu_hour == pytest.approx(0.454 * 6)


def test_size_table_uses_known_gpus():
    names = set(catalog().names)
    assert {vm.gpu for vm in AZURE_VMS.values()} <= names
    h100 = AZURE_VMS["Standard_ND96isr_H100_v5"]
    assert (h100.gpu, h100.gpu_count, h100.vcpus) == ("H100-SXM", 8, 96)


@pytest.mark.skipif(not DOCS_EXAMPLE.is_file(), reason="needs ../shared reference captures")
def test_microsoft_docs_example_rows_are_not_gpu_vms():
    items = json.loads(DOCS_EXAMPLE.read_text())
    items = items["Items"] if isinstance(items, dict) else items
    result = AzureProvider.from_env({}).parse([page([*items, row()])])
    assert [r.instance_type for r in result.prices] == ["Standard_NC24ads_A100_v4"]


@pytest.mark.skipif(not EMPTY_PAGE.is_file(), reason="needs ../shared reference captures")
def test_real_empty_envelope_is_an_empty_page():
    payload = RawPayload(url=URL, fetched_at=T0, status=200, body=EMPTY_PAGE.read_bytes())
    assert AzureProvider.from_env({}).parse([payload]).prices == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>busy</html>", "not JSON"),
        (b'{"error": {"code": "BadRequest"}}', "no 'Items' list"),
        (json.dumps({"Items": [row("Standard_NV12s_v3", 1.1)], "NextPageLink": None}).encode(), "none is a known GPU"),
        (json.dumps({"Items": [row()], "nextPageLink": None}).encode(), "no 'NextPageLink'"),
    ],
)
def test_malformed_pages_are_parse_errors(body, message):
    with pytest.raises(ParseError, match=message):
        AzureProvider.from_env({}).parse([RawPayload(url=URL, fetched_at=T0, status=200, body=body)])


# --- the recorded walk ---------------------------------------------------------------------------


def test_replay_walks_every_default_region_and_its_next_pages():
    payloads, result = replay_parse("azure")
    assert {p.scope[0] for p in payloads} == set(DEFAULT_REGIONS)
    second_pages = {p.scope[0] for p in payloads if p.url.endswith("&%24skip=100")}
    assert "eastus" in second_pages and "swedencentral" not in second_pages  # one page only there
    prices = {(r.instance_type, r.region, r.pricing): r.usd_per_hour for r in result.prices}
    # published Linux pay-as-you-go and spot prices (anycloud-sh/catalog, 2026-05-20)
    assert prices[("Standard_ND96isr_H100_v5", "eastus", "on_demand")] == 98.32
    assert prices[("Standard_ND96isr_H100_v5", "eastus", "spot")] == 18.169536
    assert prices[("Standard_ND96isr_MI300X_v5", "westus3", "on_demand")] == 48.0
    assert prices[("Standard_NC24ads_A100_v4", "swedencentral", "on_demand")] == 4.775
    assert ("Standard_ND96isr_H200_v5", "westus3", "on_demand") in prices
    assert ("Standard_ND96isr_H200_v5", "westus3", "spot") not in prices  # no spot offer
    assert result.skipped["unknown VM size"] > 0  # M60 / MI25 NV sizes are listed but not priced
    assert {r.region for r in result.prices} == set(DEFAULT_REGIONS)


# --- fetch ---------------------------------------------------------------------------------------


def test_regions_from_env():
    assert regions_from_env({}) == DEFAULT_REGIONS
    assert regions_from_env({"COSTOPT_AZURE_REGIONS": "EastUS, westus3,eastus"}) == ("eastus", "westus3")
    with pytest.raises(ProviderError, match="COSTOPT_AZURE_REGIONS"):
        regions_from_env({"COSTOPT_AZURE_REGIONS": "east us"})


@respx.mock
def test_next_page_link_is_followed_on_the_configured_host():
    mirror = "http://mirror.test/api/retail/prices"
    real_link = "https://prices.azure.com:443/api/retail/prices?api-version=2023-01-01-preview&$skip=100"
    first = respx.get(mirror, params={"$filter": region_filter("westus3")}).mock(
        return_value=httpx.Response(200, json={"Items": [row(region="westus3")], "NextPageLink": real_link})
    )
    second = respx.get(mirror, params={"$skip": "100"}).mock(
        return_value=httpx.Response(200, json={"Items": [], "NextPageLink": None})
    )
    env = {"COSTOPT_AZURE_URL": "http://mirror.test", "COSTOPT_AZURE_REGIONS": "westus3"}
    provider = AzureProvider.from_env(env)

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client))

    payloads = asyncio.run(go())
    assert first.called and second.called and len(payloads) == 2
    assert first.calls[0].request.url.params["api-version"] == "2023-01-01-preview"
    assert [r.region for r in provider.parse(payloads).prices] == ["westus3"]


@respx.mock
def test_full_page_without_a_link_is_continued_with_skip(monkeypatch):
    from scraper.providers import azure

    monkeypatch.setattr(azure, "PAGE_SIZE", 2)
    calls: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        skip = request.url.params.get("$skip")
        calls.append(skip)
        items = {None: [row(), row("Standard_NC4as_T4_v3", 0.526)], "2": [row("Standard_NC8as_T4_v3", 0.752)]}
        return httpx.Response(200, json={"Items": items.get(skip, []), "NextPageLink": None})

    respx.get(URL).mock(side_effect=answer)
    provider = AzureProvider.from_env({"COSTOPT_AZURE_REGIONS": "eastus"})

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client))

    payloads = asyncio.run(go())
    assert calls == [None, "2"]
    assert len(provider.parse(payloads).prices) == 3


@respx.mock
def test_http_errors():
    respx.get(URL).mock(return_value=httpx.Response(429))
    provider = AzureProvider.from_env({"COSTOPT_AZURE_REGIONS": "eastus"})

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client))

    with pytest.raises(TransientProviderError, match="HTTP 429"):
        asyncio.run(go())
    respx.get(URL).mock(return_value=httpx.Response(400, json={"Error": "Invalid OData parameters"}))
    with pytest.raises(ProviderError, match="HTTP 400"):
        asyncio.run(go())


@respx.mock
def test_a_next_page_link_that_repeats_fails_at_once():
    """A page pointing back to one already read made 50 identical requests before giving up."""
    mirror = "http://mirror.test/api/retail/prices"
    link = "https://prices.azure.com:443/api/retail/prices?api-version=2023-01-01-preview&$skip=100"
    route = respx.get(mirror).mock(
        return_value=httpx.Response(200, json={"Items": [row(region="westus3")], "NextPageLink": link})
    )
    provider = AzureProvider.from_env({"COSTOPT_AZURE_URL": "http://mirror.test", "COSTOPT_AZURE_REGIONS": "westus3"})

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client))

    with pytest.raises(ParseError, match="NextPageLink repeats a page already read"):
        asyncio.run(go())
    assert route.call_count == 2  # the first page and the linked one, which links to itself: stop
