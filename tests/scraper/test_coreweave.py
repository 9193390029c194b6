"""CoreWeave: pricing-page fence, region tables, labelled cells only, no-price values, fetch and replay."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest
import respx

from scraper.base import RawPayload
from scraper.http import Fetcher, Validators
from scraper.providers.coreweave import (
    GPU_MODELS,
    REGIONS,
    CoreWeaveProvider,
    canonical_gpu,
    parse_gib,
    parse_gpu_count,
    parse_price,
)
from scraper.replay import ReplayTransport, load_manifest
from scraper.validate import validate
from tests.scraper.support import T0, make_fetcher
from warehouse.errors import ParseError, ProviderError, TransientProviderError
from warehouse.gpus import catalog

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "coreweave"
URL = "https://www.coreweave.com/pricing"
PAGE = (FIXTURES / "pricing.html").read_text(encoding="utf-8")


def run(coro):
    return asyncio.run(coro)


def fetcher(client: httpx.AsyncClient | None = None, **extra) -> tuple[Fetcher, list[float]]:
    return make_fetcher(client, "coreweave", **extra)


def payload(body: str | bytes) -> RawPayload:
    raw = body.encode() if isinstance(body, str) else body
    return RawPayload(url=URL, fetched_at=T0, status=200, body=raw, content_type="text/html; charset=utf-8")


def parse(body: str | bytes):
    return CoreWeaveProvider({}).parse([payload(body)])


def by_key(result) -> dict[tuple[str, str, str], object]:
    return {(r.region, r.instance_type, r.pricing): r for r in result.prices}


def record_dict(r) -> dict:
    return {
        "region": r.region,
        "instance_type": r.instance_type,
        "gpu": r.gpu,
        "gpu_count": r.gpu_count,
        "pricing": r.pricing,
        "usd_per_hour": r.usd_per_hour,
        "vcpus": r.vcpus,
        "memory_gib": r.memory_gib,
    }


# --- recorded parser cases: one test per <case>.html / <case>.expected.json pair -----------------

CASES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))


def test_there_are_parser_cases():
    assert {"pricing", "edges"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_parser_case(case: str):
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    result = parse((FIXTURES / f"{case}.html").read_bytes())
    got = [record_dict(r) for r in result.prices]
    assert [(g["region"], g["instance_type"], g["pricing"]) for g in got] == [
        (w["region"], w["instance_type"], w["pricing"]) for w in expected["records"]
    ]
    for g, w in zip(got, expected["records"], strict=True):
        assert g == {**w, "usd_per_hour": pytest.approx(w["usd_per_hour"])}, g
    assert dict(result.skipped) == expected["skipped"]
    assert all(r.provider == "coreweave" and r.source == URL and r.observed_at == T0 for r in result.prices)


# --- the fixture page, value by value --------------------------------------------------------------


def test_page_prices_are_per_instance_with_labelled_figures():
    prices = by_key(parse(PAGE))
    h100 = prices[("north-america", "hgx-h100", "on_demand")]
    assert (h100.gpu, h100.gpu_count, h100.usd_per_hour) == ("H100-SXM", 8, 49.24)
    assert (h100.vcpus, h100.memory_gib) == (128, 2048.0)
    assert h100.usd_per_gpu_hour == pytest.approx(6.155)  # not the page's rounded $6.16 per-GPU column
    assert prices[("north-america", "hgx-h100", "spot")].usd_per_hour == 19.71
    a100 = prices[("north-america", "a100", "on_demand")]
    assert (a100.gpu, a100.gpu_count, a100.usd_per_hour) == ("A100-80GB", 8, 21.60)
    gb200 = prices[("north-america", "gb200-nvl72", "on_demand")]
    assert (gb200.gpu, gb200.gpu_count, gb200.usd_per_hour) == ("GB200", 4, 42.00)  # "4^1"
    assert gb200.usd_per_gpu_hour == pytest.approx(10.50)
    b200 = prices[("north-america", "hgx-b200", "on_demand")]
    assert (b200.gpu, b200.usd_per_hour, b200.usd_per_gpu_hour) == ("B200", 68.80, pytest.approx(8.60))
    assert prices[("north-america", "hgx-h200", "on_demand")].gpu == "H200"
    assert prices[("north-america", "gh200", "on_demand")].gpu_count == 1
    assert prices[("north-america", "rtx-pro-6000", "on_demand")].gpu == "RTX-PRO-6000"
    assert {prices[("north-america", t, "on_demand")].gpu for t in ("l40s", "l40")} == {"L40S", "L40"}


def test_no_price_is_never_zero_and_not_recorded():
    result = parse(PAGE)
    keys = set(by_key(result))
    assert not any(t == "gb300-nvl72" for _, t, _ in keys)  # Contact sales (and not a known GPU)
    assert ("europe", "hgx-b200", "on_demand") not in keys  # Contact sales
    assert ("north-america", "gb200-nvl72", "spot") not in keys  # N/A
    assert ("north-america", "hgx-b200", "spot") not in keys  # empty
    assert ("north-america", "gh200", "spot") not in keys  # hidden by Webflow conditional visibility
    assert all(r.usd_per_hour > 0 for r in result.prices)
    assert result.skipped == {"no spot price": 7, "no on_demand price": 1, "unknown GPU": 1}


def test_regions_are_fenced_and_rows_deduplicated():
    result = parse(PAGE)
    keys = [r.key for r in result.prices]
    assert len(keys) == len(set(keys)) == 18  # the mobile card's second h3 adds nothing
    assert {r.region for r in result.prices} == {"north-america", "europe"}
    europe = sorted((t, p) for region, t, p in by_key(result) if region == "europe")
    assert europe == [("hgx-h100", "on_demand"), ("hgx-h200", "on_demand"), ("l40s", "on_demand"), ("l40s", "spot")]
    # the CPU section (same row markup) and the inference-price spans are not read
    assert not {r.instance_type for r in result.prices} & {"amd-genoa", "intel-emerald-rapids"}
    assert 7.68 not in {r.usd_per_hour for r in result.prices}
    assert {3.95, 4.20}.isdisjoint(r.usd_per_hour for r in result.prices)


def test_json_ld_headings_are_not_section_headings():
    assert PAGE.count("On-demand GPU instances") == 2  # the <h2> and the JSON-LD OfferCatalog
    without_h2 = PAGE.replace(
        '<h2 data-heading-class="" class="heading-32-20">On-demand GPU instances</h2>',
        '<div class="heading-32-20">GPU instances</div>',
    )
    assert without_h2 != PAGE and "On-demand GPU instances" in without_h2
    with pytest.raises(ParseError, match=r"coreweave: no 'On-demand GPU instances' <h2> .* layout changed"):
        parse(without_h2)


# --- changed layouts -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "<html><body><h1>Pricing</h1><p>Talk to sales.</p></body></html>",
        "<html><body><h3>On-demand GPU instances</h3></body></html>",
        '{"error": "rate limited"}',
        "",
    ],
)
def test_no_gpu_heading_is_a_parse_error(body):
    with pytest.raises(ParseError, match="layout changed") as info:
        parse(body)
    assert "\n" not in info.value.one_line()


def test_heading_without_rows_is_a_parse_error():
    body = """<html><body><h2>On-demand GPU instances</h2><div>REGION: NORTH AMERICA</div>
      <table><tr><td>NVIDIA HGX H100</td><td>$49.24</td></tr></table>
      <h2>On-demand CPU instances</h2>
      <div role="listitem" class="table-row-v2 w-dyn-item"><h3 data-product="amd-genoa">AMD Genoa</h3></div>
    </body></html>"""
    with pytest.raises(ParseError, match=r"no price rows .* layout changed"):
        parse(body)


def test_rows_without_any_readable_price_are_a_parse_error():
    no_labels = PAGE.replace('class="item-value"', 'class="price-value"')
    with pytest.raises(ParseError, match=r"GPU rows .* but no price could be read .*no on_demand price"):
        parse(no_labels)
    no_regions = PAGE.replace("REGION: NORTH AMERICA", "").replace("REGION: EUROPE", "")
    with pytest.raises(ParseError, match="row outside a region table"):
        parse(no_regions)


def test_unchanged_page_carries_every_region_and_kind():
    unchanged = RawPayload(url=URL, fetched_at=T0, status=304, not_modified=True)
    result = CoreWeaveProvider({}).parse([unchanged])
    assert result.prices == []
    assert result.carried == {(r, p) for r in ("north-america", "europe") for p in ("on_demand", "spot")}
    assert set(REGIONS.values()) == {"north-america", "europe"}


# --- cells and names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "price"),
    [
        ("$49.24", 49.24),
        (" $42.00 ", 42.0),
        ("$1,008.00", 1008.0),
        ("$ 6.50", 6.5),
        ("$20.00*", 20.0),
        ("N/A", None),
        ("N/A*", None),
        ("", None),
        ("Contact sales", None),
        ("Contact Sales", None),
        ("$0.00", None),
        ("0", None),
        ("49.24", None),  # no currency: not guessed
        ("€45.00", None),
        ("$49.24 - $60.00", None),
    ],
)
def test_parse_price(text, price):
    assert parse_price(text) == price


@pytest.mark.parametrize(
    ("text", "count"),
    [("8", 8), ("4^1", 4), ("4 ^ 1", 4), (" 1 ", 1), ("4*", 4), ("N/A", None), ("", None), ("0", None), ("1/2", None)],
)
def test_parse_gpu_count(text, count):
    assert parse_gpu_count(text) == count


@pytest.mark.parametrize(
    ("text", "gib"),
    [("2048", 2048.0), ("2,048 GB", 2048.0), ("960GB", 960.0), ("2 TB", 2048.0), ("1.5 TiB", 1536.0), ("lots", None)],
)
def test_parse_gib(text, gib):
    assert parse_gib(text) == gib


@pytest.mark.parametrize(
    ("model", "slug", "vram", "gpu"),
    [
        ("NVIDIA HGX H100", "hgx-h100", 80, "H100-SXM"),
        ("NVIDIA HGX H200", "hgx-h200", 141, "H200"),
        ("NVIDIA HGX B200", "hgx-b200", 180, "B200"),
        ("NVIDIA GB200 NVL72", "gb200-nvl72", 186, "GB200"),
        ("NVIDIA A100", "a100", 80, "A100-80GB"),
        ("NVIDIA HGX A100", "hgx-a100", None, "A100-80GB"),
        ("NVIDIA A100", "a100", 40, "A100-40GB"),
        ("NVIDIA A100 PCIe", "a100-pcie", 80, "A100-80GB-PCIe"),
        ("NVIDIA L40S", "l40s", 48, "L40S"),
        ("NVIDIA L40", "l40", 48, "L40"),
        ("NVIDIA A40", "a40", 48, "A40"),
        ("NVIDIA GH200", "gh200", 96, "GH200"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000", 96, "RTX-PRO-6000"),
        ("NVIDIA RTX A5000", "rtx-a5000", 24, "RTX-A5000"),
        ("NVIDIA RTX A6000", "rtx-a6000", 48, "RTX-A6000"),
        ("NVIDIA HGX H100 (8x)", "hgx-h100", 80, "H100-SXM"),  # unknown spelling, known slug
        ("NVIDIA GB300 NVL72", "gb300-nvl72", 279, None),
        ("NVIDIA H100 NVL", "h100-nvl", 94, None),
        ("NVIDIA B300", "hgx-b300", 288, None),
        ("AMD Genoa", "amd-genoa", None, None),
    ],
)
def test_canonical_gpu(model, slug, vram, gpu):
    assert canonical_gpu(model, slug, vram) == gpu


def test_every_mapped_name_is_canonical_in_the_gpu_table():
    gpus = catalog()
    targets = {g for value in GPU_MODELS.values() for g in ((value,) if isinstance(value, str) else value)}
    assert all(gpus.get(g) is not None and gpus.get(g).name == g for g in targets), sorted(targets)


# --- fetch ---------------------------------------------------------------------------------------


@respx.mock
def test_fetch_one_get_of_the_pricing_page():
    route = respx.get(URL).mock(return_value=httpx.Response(200, text=PAGE, headers={"content-type": "text/html"}))
    f, _ = fetcher()
    payloads = run(CoreWeaveProvider({}).fetch(f))
    assert route.call_count == 1
    (p,) = payloads
    assert (p.url, p.status, p.fetched_at, p.not_modified) == (URL, 200, T0, False)
    assert len(CoreWeaveProvider({}).parse(payloads).prices) == 18


@respx.mock
def test_base_url_override():
    route = respx.get("http://mirror.test/pricing").mock(return_value=httpx.Response(200, text=PAGE))
    provider = CoreWeaveProvider.from_env({"COSTOPT_COREWEAVE_URL": "http://mirror.test/"})
    assert provider.url == "http://mirror.test/pricing"
    (p,) = run(provider.fetch(fetcher()[0]))
    assert route.call_count == 1 and p.url == "http://mirror.test/pricing"
    assert {r.source for r in provider.parse([p]).prices} == {"http://mirror.test/pricing"}
    assert CoreWeaveProvider.from_env({"COSTOPT_COREWEAVE_URL": "http://x"}, replay=True).url == URL


@respx.mock
def test_conditional_get_and_304_carry_forward():
    route = respx.get(URL).mock(return_value=httpx.Response(304, headers={"etag": '"v1"'}))
    f, _ = fetcher(validators={URL: Validators(etag='"v1"')})
    provider = CoreWeaveProvider({})
    (p,) = run(provider.fetch(f))
    assert route.calls[0].request.headers["if-none-match"] == '"v1"'
    assert p.not_modified
    result = provider.parse([p])
    assert result.prices == [] and len(result.carried) == 4


@respx.mock
def test_5xx_is_retried_then_transient():
    route = respx.get(URL).mock(return_value=httpx.Response(500))
    f, slept = fetcher()
    with pytest.raises(TransientProviderError, match=r"HTTP 500 from https://www\.coreweave\.com/pricing"):
        run(CoreWeaveProvider({}).fetch(f))
    assert route.call_count == 3 and len(slept) == 2


@respx.mock
def test_5xx_then_200_succeeds():
    route = respx.get(URL).mock(side_effect=[httpx.Response(503), httpx.Response(200, text=PAGE)])
    f, slept = fetcher()
    (p,) = run(CoreWeaveProvider({}).fetch(f))
    assert route.call_count == 2 and len(slept) == 1 and p.status == 200


@respx.mock
def test_404_is_a_provider_error_not_retried():
    route = respx.get(URL).mock(return_value=httpx.Response(404, text="Not found"))
    f, slept = fetcher()
    with pytest.raises(ProviderError, match="HTTP 404") as info:
        run(CoreWeaveProvider({}).fetch(f))
    assert not isinstance(info.value, TransientProviderError)
    assert route.call_count == 1 and slept == []


# --- recorded snapshot ---------------------------------------------------------------------------


def test_replay_fetches_and_parses():
    transport = ReplayTransport(load_manifest(FIXTURES))
    client = httpx.AsyncClient(transport=transport)
    provider = CoreWeaveProvider.from_env({}, replay=True)
    payloads = run(provider.fetch(fetcher(client)[0]))
    assert transport.served == [URL]
    result = provider.parse(payloads)
    assert len(result.prices) == 18
    prices = by_key(result)
    assert prices[("north-america", "hgx-h100", "on_demand")].usd_per_hour == 49.24
    kept, dropped, examples = validate(result.prices, catalog())
    assert not dropped, examples
    assert len(kept) == len(result.prices)
