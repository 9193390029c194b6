"""GCP: catalog SKUs -> component unit prices -> whole-VM prices, paging, key handling, errors."""

from __future__ import annotations

import asyncio
import csv
import json
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
import respx

from scraper.base import RawPayload
from scraper.http import Fetcher
from scraper.providers.gcp import GcpProvider, skus_of
from scraper.providers.gcp_machines import MACHINES
from scraper.providers.gcp_skus import SSD, Unusable, core, gpu, normalise, ram, read_sku
from tests.scraper.support import T0, make_fetcher, replay_parse
from warehouse.errors import MissingCredentials, ParseError, ProviderError, TransientProviderError
from warehouse.gpus import catalog

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "gcp"
SHARED = REPO.parent / "shared" / "reference"
CAPTURE = SHARED / "captures" / "gcp" / "cloudbilling_v1_services_skus_gpu_americas.json"
HISTORY = SHARED / "gpu_price_history.csv"
URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"


def fetcher(client: httpx.AsyncClient) -> tuple[Fetcher, list[float]]:
    return make_fetcher(client, "gcp")


def page(skus: list[dict], token: str | None = None) -> RawPayload:
    body: dict[str, object] = {"skus": skus}
    if token:
        body["nextPageToken"] = token
    return RawPayload(url=URL, fetched_at=T0, status=200, body=json.dumps(body).encode())


def sku(description: str, units: str, nanos: int, *, usage: str = "OnDemand", unit: str = "h", regions=None) -> dict:
    return {
        "skuId": f"ID-{abs(hash((description, units, nanos))) % 10**8}",
        "description": description,
        "category": {"resourceFamily": "Compute", "resourceGroup": "GPU", "usageType": usage},
        "serviceRegions": regions or ["us-central1"],
        "pricingInfo": [
            {
                "pricingExpression": {
                    "usageUnit": unit,
                    "tieredRates": [
                        {"startUsageAmount": 0, "unitPrice": {"currencyCode": "USD", "units": units, "nanos": nanos}}
                    ],
                },
                "effectiveTime": "2026-11-01T07:00:00Z",
            }
        ],
    }


G2_PARTS = [
    sku("Nvidia L4 GPU running in Iowa", "0", 560040239),
    sku("G2 Instance Core running in Iowa", "0", 24988000),
    sku("G2 Instance Ram running in Iowa", "0", 2927500, unit="GiBy.h"),
]
N1_T4_PARTS = [
    sku("Nvidia Tesla T4 GPU running in Iowa", "0", 350000000),
    sku("N1 Predefined Instance Core running in Iowa", "0", 31611000),
    sku("N1 Predefined Instance Ram running in Iowa", "0", 4237000, unit="GiBy.h"),
]


def by_key(result) -> dict[tuple[str, str, str], float]:
    return {(r.instance_type, r.region, r.pricing): r.usd_per_hour for r in result.prices}


# --- SKU recognition ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("description", "text", "spot"),
    [
        ("Nvidia Tesla T4 GPU attached to Spot Preemptible VMs running in Americas", "nvidia tesla t4 gpu", True),
        ("Spot Preemptible A2 Instance Core running in Americas", "a2 instance core", True),
        ("Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Iowa", "a4 nvidia b200 (1 gpu slice)", True),
        ("H200 141GB GPU running in Americas", "h200 141gb gpu", False),
        ("SSD backed Local Storage attached to Spot Preemptible VMs in Netherlands", "ssd backed local storage", True),
        ("Nvidia H100 80GB Plus GPU running in Virginia", "nvidia h100 80gb plus gpu", False),
    ],
)
def test_normalise_drops_location_and_spot_wording(description, text, spot):
    assert normalise(description) == (text, spot)


def test_read_sku_units_nanos_and_monthly_ssd():
    price = read_sku(sku("Nvidia H100 80GB GPU running in Americas", "9", 796550569))
    assert price is not None and price.component == gpu("H100")
    assert price.usd_per_hour == Decimal("9.796550569") and not price.spot
    ssd = read_sku(sku("SSD backed Local Storage running in Iowa", "0", 80000000, unit="GiBy.mo"))
    assert ssd is not None and ssd.component == SSD
    assert ssd.usd_per_hour == Decimal("0.08") / 730
    assert read_sku(sku("A3Plus Instance Ram running in Iowa", "0", 1, unit="GiBy.h")).component == ram("a3-mega")
    assert read_sku(sku("N1 Predefined Instance Core running in Iowa", "0", 31611000)).component == core("n1")


@pytest.mark.parametrize(
    "description",
    [
        "Reserved Nvidia Tesla A100 GPU in Americas",
        "Nvidia Tesla T4 GPU attached to DWS Defined Duration VMs running in Americas",
        "DWS Calendar Mode A4 Nvidia B200 (1 gpu slice) running in Americas",
        "Commitment v1: Nvidia H100 80GB GPU running in Americas for 1 Year",
        "Sole Tenancy Premium for A2 Instance Core running in Americas",
        "Nvidia Tesla P100 GPU running in Americas",
        "1/8 vGPU no lssd running in Iowa",
        "N2 Instance Core running in Americas",
    ],
)
def test_look_alikes_are_not_taken_for_plain_rates(description):
    assert read_sku(sku(description, "1", 0)) is None


def test_commitment_usage_type_is_ignored_and_mislabelled_spot_is_spot():
    assert read_sku(sku("Nvidia H100 80GB GPU running in Americas", "6", 0, usage="Commit1Yr")) is None
    b200 = read_sku(sku("Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Iowa", "4", 75800000))
    assert b200 is not None and b200.spot and b200.component == gpu("B200-SLICE")


def test_zero_price_wrong_unit_and_currency_are_unusable_not_zero():
    with pytest.raises(Unusable, match="zero price"):
        read_sku(sku("Nvidia L4 GPU running in Iowa", "0", 0))
    with pytest.raises(Unusable, match="usage unit"):
        read_sku(sku("Nvidia L4 GPU running in Iowa", "1", 0, unit="GiBy.h"))
    bad = sku("Nvidia L4 GPU running in Iowa", "1", 0)
    bad["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["currencyCode"] = "EUR"
    with pytest.raises(Unusable, match="USD"):
        read_sku(bad)


@pytest.mark.skipif(not CAPTURE.is_file(), reason="needs ../shared reference captures")
def test_real_capture_gpu_skus():
    skus = json.loads(CAPTURE.read_text())["skus"]
    read = {s["skuId"]: read_sku(s) for s in skus}
    assert read["D4E2-451A-15B9"].usd_per_hour == Decimal("9.796550569")  # H100 80GB, Americas
    assert read["7CFD-81D6-E49C"].component == gpu("H100-MEGA")
    assert read["455B-5067-C961"].component == gpu("H200")
    assert read["1A25-07A3-AB6D"].spot and read["1A25-07A3-AB6D"].usd_per_hour == Decimal("0.1654")
    for dropped in ("2013-37B4-22EA", "49C6-9328-AC0B", "302A-B1A1-06DD", "D5C5-C5F4-086C", "7929-334B-6348"):
        assert read[dropped] is None, dropped


# --- machine sums ------------------------------------------------------------------------------


def test_vm_price_is_the_sum_of_its_components():
    result = GcpProvider.from_env({}, replay=True).parse([page(G2_PARTS)])
    prices = by_key(result)
    # g2-standard-4 = 1 L4 + 4 vCPU + 16 GiB: 0.560040239 + 0.099952 + 0.04684 (Google lists 0.706832)
    assert prices[("g2-standard-4", "us-central1", "on_demand")] == 0.706832
    expected = round(4 * 0.560040239 + 48 * 0.024988 + 192 * 0.0029275, 6)
    assert prices[("g2-standard-48", "us-central1", "on_demand")] == expected
    record = next(r for r in result.prices if r.instance_type == "g2-standard-96")
    assert (record.gpu, record.gpu_count, record.vcpus, record.memory_gib) == ("L4", 8, 96, 384)
    assert record.source == URL and record.observed_at == T0
    assert not any(r.pricing == "spot" for r in result.prices)


def test_a_missing_component_means_no_price_never_a_partial_sum():
    parts = [*G2_PARTS, sku("Nvidia Tesla T4 GPU running in Iowa", "0", 350000000)]  # T4 but no N1 vCPU/RAM
    result = GcpProvider.from_env({}, replay=True).parse([page(parts)])
    assert {r.instance_type for r in result.prices} == {n for n in MACHINES if n.startswith("g2-")}
    assert result.skipped["incomplete components"] == sum(1 for name in MACHINES if "+T4x" in name)


def test_two_skus_disagreeing_on_one_component_give_no_price():
    parts = [*G2_PARTS, sku("G2 Instance Core running in Iowa", "0", 30000000), *N1_T4_PARTS]
    result = GcpProvider.from_env({}, replay=True).parse([page(parts)])
    assert {r.instance_type for r in result.prices} == {n for n in MACHINES if "+T4x" in n}
    assert result.skipped["conflicting SKU prices"] == sum(1 for name in MACHINES if name.startswith("g2-"))


def test_spot_only_machines_get_no_on_demand_price():
    parts = [
        sku("A4 Nvidia B200 (1 gpu slice) running in Iowa", "11", 277000000),
        sku("Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Iowa", "4", 75800000),
    ]
    prices = by_key(GcpProvider.from_env({}, replay=True).parse([page(parts)]))
    assert prices == {("a4-highgpu-8g", "us-central1", "spot"): 32.6064}


# --- the recorded catalog ----------------------------------------------------------------------


def test_replay_reads_both_pages_and_prices_every_family():
    payloads, result = replay_parse("gcp")
    assert len(payloads) == 2 and "pageToken=" in payloads[1].url
    assert "key=" not in payloads[0].url
    prices = by_key(result)
    assert prices[("a2-highgpu-1g", "us-central1", "on_demand")] == 3.673385
    assert prices[("a2-megagpu-16g", "us-central1", "on_demand")] == 55.739504  # Google's published figure
    assert prices[("a3-highgpu-8g", "us-central1", "on_demand")] == 88.49
    assert prices[("a3-megagpu-8g", "us-east4", "spot")] == 20.143806
    assert prices[("a4-highgpu-8g", "us-central1", "spot")] == 32.6064
    assert prices[("n1-standard-8+T4x1", "us-central1", "on_demand")] == round(0.35 + 8 * 0.031611 + 30 * 0.004237, 6)
    families = {name.split("-")[0] for name, _, _ in prices}
    assert families == {"a2", "a3", "a4", "g2", "n1"}
    # the catalog's Americas SKUs cover us-east1 and us-west1 at us-central1's price
    assert prices[("g2-standard-8", "us-east1", "on_demand")] == prices[("g2-standard-8", "us-central1", "on_demand")]
    # pitfalls: A3 Mega has no GPU SKU in us-central1; A3 Ultra and A4 are not sold on demand; V100 only where listed
    assert ("a3-megagpu-8g", "us-central1", "on_demand") not in prices
    assert not any(name.startswith(("a3-ultragpu", "a4-")) and p == "on_demand" for name, _, p in prices)
    assert not any("V100" in name and region == "us-east4" for name, region, _ in prices)
    assert {r.gpu for r in result.prices} <= set(catalog().names)


@pytest.mark.skipif(not HISTORY.is_file(), reason="needs ../shared reference price history")
def test_replayed_shapes_match_published_vm_prices():
    """Every A2/A3/G2 shape in the recording within 1 % of its published price (anycloud-sh/catalog, 2026-07-02)."""
    _, result = replay_parse("gcp")
    prices = by_key(result)
    checked = 0
    with HISTORY.open() as f:
        for row in csv.DictReader(f):
            if row["cloud"] != "gcp" or row["snapshot_date"] != "2026-07-02":
                continue
            for pricing, column in (("on_demand", "price_usd_per_hour"), ("spot", "spot_price_usd_per_hour")):
                ours = prices.get((row["instance_type"], row["region"], pricing))
                if ours is None or not row[column]:
                    continue
                assert ours == pytest.approx(float(row[column]), rel=0.01), (row["instance_type"], row["region"])
                checked += 1
    assert checked >= 80


# --- fetch: paging, key, errors ----------------------------------------------------------------


def test_without_a_key_the_provider_is_skipped_with_a_notice():
    with pytest.raises(MissingCredentials, match="COSTOPT_GCP_API_KEY"):
        GcpProvider.from_env({})
    assert GcpProvider.from_env({}, replay=True).url == URL


@respx.mock
def test_fetch_follows_page_tokens_and_keeps_the_key_out_of_stored_urls():
    route = respx.get(url__startswith="http://mirror.test/v1/services/6F81-5844-456A/skus").mock(
        side_effect=lambda request: httpx.Response(
            200,
            json={"skus": G2_PARTS, "nextPageToken": "t2"}
            if "pageToken" not in request.url.params
            else {"skus": [], "nextPageToken": ""},
        )
    )
    provider = GcpProvider.from_env({"COSTOPT_GCP_API_KEY": "secret", "COSTOPT_GCP_URL": "http://mirror.test/"})

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client)[0])

    payloads = asyncio.run(go())
    assert route.call_count == 2
    sent = route.calls[0].request.url.params
    assert sent["key"] == "secret" and sent["pageSize"] == "5000" and sent["currencyCode"] == "USD"
    assert route.calls[1].request.url.params["pageToken"] == "t2"
    assert all("secret" not in p.url for p in payloads)
    assert by_key(provider.parse(payloads))[("g2-standard-4", "us-central1", "on_demand")] == 0.706832


@respx.mock
def test_a_repeated_page_token_is_an_error_not_a_loop():
    respx.get(url__startswith=URL).mock(return_value=httpx.Response(200, json={"skus": [], "nextPageToken": "same"}))
    provider = GcpProvider.from_env({"COSTOPT_GCP_API_KEY": "k"})

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client)[0])

    with pytest.raises(ParseError, match="paging loop"):
        asyncio.run(go())


@respx.mock
def test_http_errors():
    respx.get(url__startswith=URL).mock(side_effect=[httpx.Response(503), httpx.Response(503), httpx.Response(503)])
    provider = GcpProvider.from_env({"COSTOPT_GCP_API_KEY": "k"})

    slept: list[float] = []

    async def go():
        async with httpx.AsyncClient() as client:
            f, waits = fetcher(client)
            try:
                return await provider.fetch(f)
            finally:
                slept.extend(waits)

    with pytest.raises(TransientProviderError, match="HTTP 503"):
        asyncio.run(go())
    assert len(slept) == 2  # three attempts, two back-offs
    respx.get(url__startswith=URL).mock(return_value=httpx.Response(403, json={"error": {"code": 403}}))
    with pytest.raises(ProviderError, match="HTTP 403"):
        asyncio.run(go())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>quota</html>", "not JSON"),
        (b'{"error": {"code": 400, "message": "API key not valid"}}', "not a Cloud Billing SKU page"),
        (b'{"skus": {"a": 1}}', "not a list"),
        (b'{"skus": []}', "no SKUs"),
        (json.dumps({"skus": [sku("N2 Instance Core running in Iowa", "0", 1)]}).encode(), "no GPU machine"),
        (b'{"skus": [], "next_page_token": "t2"}', "pages with 'next_page_token', not 'nextPageToken'"),
    ],
)
def test_malformed_pages_are_parse_errors(body, message):
    with pytest.raises(ParseError, match=message):
        GcpProvider.from_env({}, replay=True).parse([RawPayload(url=URL, fetched_at=T0, status=200, body=body)])


def test_empty_page_without_skus_key_is_an_empty_page():
    assert skus_of(RawPayload(url=URL, fetched_at=T0, status=200, body=b"{}")) == ([], None)
