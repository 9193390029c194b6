"""Vast.ai: bundles search, truncation split, optional key, listing -> group distributions."""

from __future__ import annotations

import asyncio
import json
import statistics
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
import respx

from scraper.base import RawPayload
from scraper.http import Fetcher
from scraper.providers import vastai
from scraper.providers.vastai import (
    GPU_NAMES,
    VastProvider,
    _canonical_gpu,
    country_of,
    market_stats,
    quantile,
    search_query,
)
from scraper.replay import ReplayTransport, load_manifest
from tests.conftest import script_module
from tests.scraper.support import T0, make_fetcher
from warehouse.errors import ParseError, TransientProviderError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "vastai"
SHARED = REPO.parent / "shared" / "reference"
CAPTURE = SHARED / "captures" / "vastai" / "bundles_offer_rtx4090_cli_raw_2024-07.json"
URL = "https://console.vast.ai/api/v0/bundles/"
CANONICAL = {
    "V100-16GB", "V100-32GB", "T4", "A10", "A10G", "L4", "L40", "L40S", "A40", "A100-40GB", "A100-80GB",
    "A100-80GB-PCIe", "A100-40GB-PCIe", "H100-SXM", "H100-PCIe", "H100-NVL", "H800", "H200", "H200-NVL", "B200",
    "GB200", "GH200", "MI300X", "MI325X", "RTX-3090", "RTX-4090", "RTX-5090", "RTX-A4000", "RTX-A5000", "RTX-A6000",
    "RTX-6000-Ada", "RTX-PRO-6000",
}  # fmt: skip


def run(coro):
    return asyncio.run(coro)


def fetcher(client: httpx.AsyncClient | None = None) -> tuple[Fetcher, list[float]]:
    return make_fetcher(client, "vastai")


def payload(body: object, pricing: str = "on_demand") -> RawPayload:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return RawPayload(url=URL, fetched_at=T0, status=200, body=raw, scope=("*", pricing))


def offer(ident: int, price: float, *, gpu: str = "RTX 4090", n: int = 1, geo: str | None = "Oregon, US", **extra):
    base = {
        "id": ident,
        "gpu_name": gpu,
        "gpu_ram": 24564,
        "num_gpus": n,
        "dph_base": price - 0.00001,
        "dph_total": price,
        "min_bid": round(price * 0.6, 6),
        "geolocation": geo,
        "verification": "verified",
        "hosting_type": 0,
        "rentable": True,
        "rented": False,
        "external": None,
    }
    return base | extra


def record_dict(r) -> dict:
    return {
        "region": r.region,
        "instance_type": r.instance_type,
        "gpu": r.gpu,
        "gpu_count": r.gpu_count,
        "usd_per_hour": r.usd_per_hour,
        "stats": {
            "offer_count": r.stats.offer_count,
            "min": r.stats.min,
            "p10": r.stats.p10,
            "median": r.stats.median,
            "max": r.stats.max,
        },
        "listings": [[x.usd_per_hour, x.country, x.reliability] for x in r.stats.listings],
    }


# --- recorded parser cases: one test per <case>.json / <case>.expected.json pair -----------------

CASES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))


def test_there_are_parser_cases():
    assert {"hand_small", "edges"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_parser_case(case: str):
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    body = (FIXTURES / f"{case}.json").read_bytes()
    result = VastProvider({}).parse([payload(body, expected["pricing"])])
    got = sorted((record_dict(r) for r in result.prices), key=lambda d: (d["instance_type"], d["region"]))
    want = sorted(expected["records"], key=lambda d: (d["instance_type"], d["region"]))
    _approx_records(got, want)
    assert all(r.pricing == expected["pricing"] and r.provider == "vastai" for r in result.prices)
    assert dict(result.skipped) == expected["skipped"]


def _approx_records(got: list[dict], want: list[dict]) -> None:
    assert [(g["instance_type"], g["region"]) for g in got] == [(w["instance_type"], w["region"]) for w in want]
    for g, w in zip(got, want, strict=True):
        assert g["gpu"] == w["gpu"] and g["gpu_count"] == w["gpu_count"], g
        assert g["usd_per_hour"] == pytest.approx(w["usd_per_hour"]), g
        assert g["stats"] == pytest.approx(w["stats"]), g
        assert g["listings"] == w["listings"], g


# --- aggregation, country, mapping ---------------------------------------------------------------


def test_quantile_and_stats_hand_computed():
    assert quantile([1.0, 2.0, 3.0, 4.0, 5.0], 0.1) == pytest.approx(1.4)  # position 0.4
    assert quantile([10.0, 20.0], 0.1) == pytest.approx(11.0)
    stats = market_stats([0.9, 0.3, 0.5, 0.35, 0.4])
    assert (stats.offer_count, stats.min, stats.p10, stats.median, stats.max) == (5, 0.3, 0.32, 0.4, 0.9)
    even = market_stats([16.0, 14.0, 20.0, 15.2])
    assert (even.p10, even.median) == (pytest.approx(14.36), pytest.approx(15.6))
    one = market_stats([0.25])
    assert one.min == one.p10 == one.median == one.max == 0.25


def test_group_price_is_the_median_whole_offer_and_groups_split_by_host_kind():
    offers = [
        offer(1, 0.30),
        offer(2, 0.40),
        offer(3, 0.50),
        offer(4, 0.20, verification="unverified"),
        offer(5, 0.60, hosting_type=1),
        offer(6, 1.60, n=4),
    ]
    result = VastProvider({}).parse([payload({"offers": offers})])
    by_type = {r.instance_type: r for r in result.prices}
    assert set(by_type) == {
        "RTX-4090x1.verified.community",
        "RTX-4090x1.unverified.community",
        "RTX-4090x1.verified.datacenter",
        "RTX-4090x4.verified.community",
    }
    main = by_type["RTX-4090x1.verified.community"]
    assert main.usd_per_hour == 0.40 and main.stats.offer_count == 3 and main.region == "all"
    four = by_type["RTX-4090x4.verified.community"]
    assert four.gpu_count == 4 and four.usd_per_hour == 1.60 and four.usd_per_gpu_hour == pytest.approx(0.40)
    assert all(r.observed_at == T0 and r.source == URL for r in result.prices)


@pytest.mark.parametrize(
    ("geolocation", "country"),
    [
        ("Guangxi, CN", "CN"),
        ("Oregon, US", "US"),
        ("The Netherlands, NL", "NL"),
        (", CA", "CA"),
        ("SE", "SE"),
        ("  Texas ,  US ", "US"),
        (None, "unknown"),
        ("", "unknown"),
        ("Somewhere", "unknown"),
        ("Oregon, usa", "unknown"),
        (42, "unknown"),
    ],
)
def test_country_of(geolocation, country):
    assert country_of(geolocation) == country


@pytest.mark.parametrize(
    ("name", "ram", "canonical"),
    [
        ("RTX 4090", 24564, "RTX-4090"),
        ("RTX_4090", 24564, "RTX-4090"),
        ("H100 SXM", 81559, "H100-SXM"),
        ("H100 PCIE", 81559, "H100-PCIe"),
        ("H100 NVL", 95830, "H100-NVL"),
        ("A100 SXM4", 81920, "A100-80GB"),
        ("A100 SXM4", 40960, "A100-40GB"),
        ("A100 PCIE", 81920, "A100-80GB-PCIe"),
        ("A100 PCIE", 40960, "A100-40GB-PCIe"),
        ("A100 SXM4", None, None),
        ("Tesla V100", 16160, "V100-16GB"),
        ("Tesla V100", 32768, "V100-32GB"),
        ("Tesla T4", 15360, "T4"),
        ("RTX A6000", 49140, "RTX-A6000"),
        ("RTX 6000Ada", 49140, "RTX-6000-Ada"),
        ("RTX 6000 Ada", 49140, "RTX-6000-Ada"),
        ("L40S", 46068, "L40S"),
        ("L40", 46068, "L40"),
        ("A40", 46068, "A40"),
        ("RTX 3090", 24576, "RTX-3090"),
        ("RTX 5090", 32607, "RTX-5090"),
        ("H200", 143771, "H200"),
        ("B200", 183359, "B200"),
        ("RTX A5000", 24564, "RTX-A5000"),
        ("RTX A4000", 16376, "RTX-A4000"),
        ("RTX PRO 6000 S", 97887, "RTX-PRO-6000"),
        ("RTX PRO 6000 WS", 97887, "RTX-PRO-6000"),
        ("Q RTX 8000", 49152, None),
        ("RTX 3060", 12288, None),
        ("A100X", 81920, None),
        ("GTX 1080 Ti", 11264, None),
    ],
)
def test_gpu_mapping(name, ram, canonical):
    assert _canonical_gpu(name, ram) == canonical


def test_every_mapped_name_is_canonical():
    targets = {v for v in GPU_NAMES.values() if v} | {"A100-80GB", "A100-40GB", "A100-80GB-PCIe", "A100-40GB-PCIe"}
    targets |= {"V100-16GB", "V100-32GB"}
    assert targets <= CANONICAL


def test_interruptible_reads_min_bid_not_dph_total():
    offers = [offer(1, 0.40, min_bid=0.21), offer(2, 0.50, min_bid=0.25), offer(3, 0.60, min_bid=0.0)]
    provider = VastProvider({})
    bid = provider.parse([payload({"offers": offers}, "interruptible")])
    (rec,) = bid.prices
    assert rec.pricing == "interruptible" and rec.usd_per_hour == pytest.approx(0.23)
    assert (rec.stats.min, rec.stats.max, rec.stats.offer_count) == (0.21, 0.25, 2)
    assert bid.skipped == {"no price": 1}
    (od,) = provider.parse([payload({"offers": offers}, "on_demand")]).prices
    assert od.pricing == "on_demand" and od.usd_per_hour == 0.50 and od.stats.offer_count == 3


def test_fractional_host_share_keeps_whole_gpus():
    (rec,) = VastProvider({}).parse([payload({"offers": [offer(1, 0.8, n=2, gpu_frac=0.25)]})]).prices
    assert rec.gpu_count == 2 and rec.usd_per_gpu_hour == pytest.approx(0.4)


def test_listing_without_machine_price_is_no_price_even_with_storage_in_dph_total():
    zero = offer(1, 0.0000231, dph_base=0.0)
    result = VastProvider({}).parse([payload({"offers": [zero, offer(2, 0.3)]})])
    assert [r.stats.offer_count for r in result.prices] == [1] and result.skipped == {"no price": 1}


def test_pricing_kind_falls_back_to_the_request_body_and_fails_without_either():
    body = json.dumps({"offers": [offer(1, 0.5)]}).encode()
    from_body = RawPayload(url=URL, fetched_at=T0, status=200, body=body, request_body=b'{"type": "bid"}')
    (rec,) = VastProvider({}).parse([from_body]).prices
    assert rec.pricing == "interruptible"
    with pytest.raises(ParseError, match="on-demand or bid"):
        VastProvider({}).parse([RawPayload(url=URL, fetched_at=T0, status=200, body=body)])


@pytest.mark.parametrize("body", [b"<html>502 Bad Gateway</html>", b'{"offers": ', b"[]", b'{"success": false}'])
def test_malformed_body_is_a_parse_error(body):
    with pytest.raises(ParseError, match="vastai"):
        VastProvider({}).parse([payload(body)])


# --- fetch ---------------------------------------------------------------------------------------


def test_query_body():
    q = search_query("bid")
    assert q["type"] == "bid" and q["limit"] == vastai.LIMIT == 5000
    assert q["rentable"] == {"eq": True} and q["rented"] == {"eq": False} and q["external"] == {"eq": False}
    assert q["order"] == [["dph_total", "asc"]] and "verified" not in q and "gpu_name" not in q
    assert search_query("on-demand", "RTX 4090")["gpu_name"] == {"eq": "RTX 4090"}


@respx.mock
def test_fetch_two_searches_with_scopes_and_no_key_header():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json={"offers": [offer(1, 0.4)]}))
    f, _ = fetcher()
    payloads = run(VastProvider({}).fetch(f))
    assert [p.scope for p in payloads] == [("*", "on_demand"), ("*", "interruptible")]
    sent = [json.loads(c.request.content) for c in route.calls]
    assert [s["type"] for s in sent] == ["on-demand", "bid"]
    assert all("authorization" not in c.request.headers for c in route.calls)


@respx.mock
def test_key_header_sent_only_when_set():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json={"offers": []}))
    f, _ = fetcher()
    payloads = run(VastProvider({"VAST_API_KEY": "sekrit"}).fetch(f))
    assert [c.request.headers["authorization"] for c in route.calls] == ["Bearer sekrit"] * 2
    assert all(b"sekrit" not in (p.request_body or b"") and "sekrit" not in p.url for p in payloads)
    run(VastProvider({"VAST_API_KEY": "  "}).fetch(fetcher()[0]))  # blank counts as unset
    assert len(route.calls) == 4 and all("authorization" not in c.request.headers for c in route.calls[2:])


def test_from_env_never_needs_a_key_and_replay_drops_it():
    assert VastProvider.from_env({})._headers() == {}
    assert VastProvider.from_env({"VAST_API_KEY": "k"}, replay=True)._headers() == {}
    assert (
        VastProvider.from_env({"COSTOPT_VASTAI_URL": "http://mirror.test/"}).url == "http://mirror.test/api/v0/bundles/"
    )


@respx.mock
def test_truncated_result_is_split_by_gpu_name(monkeypatch):
    monkeypatch.setattr(vastai, "LIMIT", 3)
    full = [offer(1, 0.30), offer(2, 0.35), offer(3, 0.20, gpu="Weird GPU")]
    per_name = {"RTX 4090": [offer(1, 0.30), offer(2, 0.35), offer(4, 0.90)], "Weird GPU": [full[2]]}
    seen: list[tuple[str, str | None]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        q = json.loads(request.content)
        assert q["limit"] == 3
        name = q.get("gpu_name", {}).get("eq")
        seen.append((q["type"], name))
        return httpx.Response(200, json={"offers": full if name is None else per_name.get(name, [])})

    respx.post(URL).mock(side_effect=answer)
    f, _ = fetcher()
    provider = VastProvider({})
    payloads = run(provider.fetch(f))
    names = sorted(set(GPU_NAMES) | {"RTX 4090", "Weird GPU"})
    expected = [(t, n) for t in ("on-demand", "bid") for n in (None, *names)]
    assert seen == expected
    assert len(payloads) == 2 * len(names)  # the cut-off responses are replaced by the split ones
    result = provider.parse(payloads)
    od = [r for r in result.prices if r.pricing == "on_demand"]
    assert [(r.instance_type, r.stats.offer_count, r.stats.max) for r in od] == [
        ("RTX-4090x1.verified.community", 3, 0.90)
    ]
    assert result.skipped == {"unknown GPU": 2}


def test_duplicate_offer_ids_count_once_per_pricing_kind():
    p1 = payload({"offers": [offer(1, 0.3), offer(2, 0.5)]})
    p2 = payload({"offers": [offer(2, 0.5), offer(3, 0.7)]})
    (rec,) = VastProvider({}).parse([p1, p2]).prices
    assert rec.stats.offer_count == 3 and rec.usd_per_hour == 0.5


@respx.mock
def test_429_without_retry_after_backs_off_then_succeeds():
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(429, text="API requests too frequent"),
            httpx.Response(200, json={"offers": [offer(1, 0.4)]}),
            httpx.Response(200, json={"offers": [offer(1, 0.4)]}),
        ]
    )
    f, slept = fetcher()
    provider = VastProvider({})
    payloads = run(provider.fetch(f))
    assert route.call_count == 3 and len(slept) == 1 and 0.5 <= slept[0] <= 1.5  # own backoff, no header
    prices = {r.pricing: r.usd_per_hour for r in provider.parse(payloads).prices}
    assert prices == {"on_demand": 0.4, "interruptible": 0.24}


@respx.mock
def test_5xx_exhausted_is_transient():
    respx.post(URL).mock(return_value=httpx.Response(502))
    f, slept = fetcher()
    with pytest.raises(TransientProviderError, match=r"HTTP 502 from https://console\.vast\.ai/api/v0/bundles/"):
        run(VastProvider({}).fetch(f))
    assert len(slept) == 2


@respx.mock
def test_timeout_is_transient():
    respx.post(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(TransientProviderError, match="timeout"):
        run(VastProvider({}).fetch(fetcher()[0]))


@respx.mock
def test_malformed_json_is_kept_by_fetch_and_rejected_by_parse():
    respx.post(URL).mock(return_value=httpx.Response(200, text="<html>maintenance</html>"))
    provider = VastProvider({})
    payloads = run(provider.fetch(fetcher()[0]))
    assert len(payloads) == 2 and payloads[0].body.startswith(b"<html>")
    with pytest.raises(ParseError, match="not JSON"):
        provider.parse(payloads)


# --- recorded snapshot ---------------------------------------------------------------------------


def _replayed() -> list[RawPayload]:
    client = httpx.AsyncClient(transport=ReplayTransport(load_manifest(FIXTURES)))
    return run(VastProvider.from_env({}, replay=True).fetch(fetcher(client)[0]))


def test_replay_serves_both_searches_and_parses():
    payloads = _replayed()
    assert [p.scope[1] for p in payloads] == ["on_demand", "interruptible"]
    result = VastProvider({}).parse(payloads)
    kinds = defaultdict(int)
    for r in result.prices:
        kinds[r.pricing] += 1
        assert r.gpu in CANONICAL and r.stats.min <= r.usd_per_hour <= r.stats.max
    assert kinds["on_demand"] > 100 and kinds["interruptible"] > 100
    assert result.skipped == {"unknown GPU": 6, "no price": 2}
    keys = [r.key for r in result.prices]
    assert len(keys) == len(set(keys))
    assert any(r.gpu == "A100-40GB" for r in result.prices)
    assert {r.region for r in result.prices} == {"all"}  # country is a listing attribute, not a group key
    countries = {x.country for r in result.prices for x in r.stats.listings}
    assert "unknown" in countries and {"US", "DE", "CN"} <= countries
    assert all(r.stats.offer_count == len(r.stats.listings) for r in result.prices)
    # grouping without country leaves the data-centre GPUs' groups with several listings each
    h200 = next(
        r for r in result.prices if r.instance_type == "H200x8.verified.datacenter" and r.pricing == "on_demand"
    )
    assert h200.stats.offer_count >= 5


def test_an_offer_skipped_by_both_searches_is_one_example_in_the_run_notes():
    """Offer 27838644 has no price in the on-demand and the bid search: the notes listed it twice."""
    from scraper.refresh import parse_and_validate

    result, unknown, notes = parse_and_validate(VastProvider({}), _replayed())
    assert unknown == 8 and result.skipped == {"unknown GPU": 6, "no price": 2}  # still counted per search
    assert notes == [
        "6 skipped: unknown GPU",
        "2 skipped: no price",
        "no price: 27838644: RTX 3090",
        "unknown GPU: RTX 3060",
        "unknown GPU: Q RTX 8000",
    ]


def test_snapshot_reproduces_the_published_statistics():
    """Pooled per-GPU-hour on-demand prices per GPU land on make_fixtures.TARGETS (min, p10, median, max)."""
    module = script_module(FIXTURES / "make_fixtures.py", "vast_make_fixtures")
    offers = json.loads((FIXTURES / "bundles_on_demand.json").read_text())["offers"]
    for target in module.TARGETS:
        per_gpu = sorted(
            o["dph_base"] / o["num_gpus"]
            for o in offers
            if o["gpu_name"] == target.gpu_name and o["gpu_ram"] == target.gpu_ram_mb
        )
        for name, ram, price, *_ in module.EXTRAS:  # the edge-case listings are not part of the sample
            if (name, ram) == (target.gpu_name, target.gpu_ram_mb):
                per_gpu.remove(min(per_gpu, key=lambda p, price=price: abs(p - price)))
        assert len(per_gpu) == target.offers, target.gpu_name
        got = (per_gpu[0], quantile(per_gpu, 0.1), statistics.median(per_gpu), per_gpu[-1])
        assert got == pytest.approx((target.min, target.p10, target.median, target.max), abs=1e-4), target.gpu_name


def test_shared_invariants_hold_on_the_snapshot():
    pytest.importorskip("warehouse.gpus")
    from warehouse.gpus import catalog

    try:
        gpus = catalog()
    except FileNotFoundError:
        pytest.skip("warehouse/data/gpus.csv not present")
    if missing := CANONICAL - set(gpus.names):
        pytest.skip(f"GPU table does not have every canonical name yet: {sorted(missing)}")
    from scraper.validate import validate

    records = VastProvider({}).parse(_replayed()).prices
    kept, dropped, examples = validate(records, gpus)
    assert not dropped, examples
    assert len(kept) == len(records)


@pytest.mark.skipif(not CAPTURE.exists(), reason="../shared reference captures not present")
def test_real_capture_parses():
    offers = json.loads(CAPTURE.read_text())
    body = json.dumps({"offers": offers}).encode()
    provider = VastProvider({})
    (od,) = provider.parse([payload(body, "on_demand")]).prices
    assert (od.gpu, od.gpu_count, od.region, od.instance_type) == (
        "RTX-4090",
        1,
        "all",
        "RTX-4090x1.verified.community",
    )
    assert od.usd_per_hour == pytest.approx(0.2466759, abs=1e-6)
    (listing,) = od.stats.listings
    assert (listing.country, listing.reliability) == ("CN", pytest.approx(0.970084, abs=1e-6))  # reliability2
    (bid,) = provider.parse([payload(body, "interruptible")]).prices
    assert bid.usd_per_hour == 0.2


# --- a field whose type changed (audit A5) -------------------------------------------------------

RETYPED = [
    ("hosting_type", lambda v: "dc" if v == 1 else "cc", "str ('cc')"),  # the int code sent as a name
    ("gpu_ram", str, "str ('"),  # A100/V100 can no longer be told apart
    ("num_gpus", str, "str ('1')"),
    ("dph_total", str, "str ("),
    ("gpu_name", lambda v: {"name": v}, "dict ("),
    ("verification", lambda v: v == "verified", "bool (True)"),
    ("geolocation", lambda v: {"location": v}, "dict ("),
]


def _retyped(field: str, change, which=lambda offer: True) -> bytes:
    offers = json.loads((FIXTURES / "bundles_on_demand.json").read_text())["offers"]
    return json.dumps(
        {"offers": [o | {field: change(o[field])} if field in o and which(o) else o for o in offers]}
    ).encode()


@pytest.mark.parametrize(("field", "change", "seen"), RETYPED, ids=[f for f, _, _ in RETYPED])
def test_a_field_whose_type_changed_fails_the_answer_instead_of_misfiling_every_offer(field, change, seen):
    """``hosting_type: "dc"`` instead of its int code re-filed every datacenter group as community (108 prices
    closed, exit 3); ``gpu_ram`` as a string dropped every A100/V100 offer (64 closed). Presence alone was checked."""
    with pytest.raises(ParseError) as caught:
        VastProvider({}).parse([payload(_retyped(field, change))])
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"vastai: {URL} (on_demand): '{field}' is {seen}")
    assert "the upstream's fields changed" in message


def test_one_offer_with_a_retyped_field_fails_the_answer_and_none_values_stay_readable():
    """An upstream changes how it writes a field for every offer at once, and a partial change (only the
    datacenter hosts' code written as a name) would misfile exactly the offers it touches: one is enough.
    ``null`` is absence, as before (the fixture has a ``geolocation: null`` listing, read as "unknown")."""
    body = _retyped("hosting_type", lambda v: "dc", which=lambda o: o["hosting_type"] == 1)
    with pytest.raises(ParseError, match=r"'hosting_type' is str \('dc'\) in \d+ of its 430 items, where "):
        VastProvider({}).parse([payload(body)])
    nulls = _retyped("gpu_ram", lambda v: None, which=lambda o: o["gpu_name"] == "RTX 4090")
    assert VastProvider({}).parse([payload(nulls)]).prices
    both = _retyped("min_bid", str)  # an on-demand answer is not priced by min_bid: not its concern
    assert len(VastProvider({}).parse([payload(both)]).prices) == len(
        VastProvider({}).parse([payload((FIXTURES / "bundles_on_demand.json").read_bytes())]).prices
    )


def test_offers_that_all_lost_their_country_fail_the_answer_instead_of_loading_a_country_less_market():
    """``geolocation: null`` in every offer loaded (exit 0) with every listing's country "unknown": null passed
    the presence check, as a key that is there. A form the parser cannot read in every offer ("Germany" for
    "DE") is the same fault. Some offers without a country stay odd listings, read as "unknown"."""
    with pytest.raises(ParseError, match=r"^vastai: .* \(on_demand\): none of its 430 items has 'geolocation': "):
        VastProvider({}).parse([payload(_retyped("geolocation", lambda v: None))])
    with pytest.raises(ParseError) as caught:
        VastProvider({}).parse([payload(_retyped("geolocation", lambda v: "Germany"))])
    assert str(caught.value) == (
        "vastai: none of 426 on-demand offers has a readable country (e.g. geolocation 'Germany', read as "
        "'Region, CC'): the offers' fields changed"
    )
    some = _retyped("geolocation", lambda v: None, which=lambda o: o["gpu_name"] == "RTX 4090")
    prices = VastProvider({}).parse([payload(some)]).prices
    assert {x.country for r in prices if r.gpu == "RTX-4090" for x in r.stats.listings} == {"unknown"}
    assert {"US", "DE"} <= {x.country for r in prices for x in r.stats.listings}


def test_a_retyped_field_in_a_refresh_keeps_yesterdays_prices(tmp_path, db_path):
    """The whole path: yesterday's prices from the recorded answers, then an answer with ``hosting_type``
    as a string: the provider fails with one line, and no price is closed, re-filed or re-confirmed."""
    import shutil

    from scraper.refresh import refresh
    from warehouse.db import open_warehouse

    [first] = refresh(db_path, ["vastai"], replay=FIXTURES.parent)
    assert first.status == "ok"

    def prices():
        con = open_warehouse(db_path, read_only=True)
        try:
            return con.execute(
                "SELECT instance_type, pricing, usd_per_hour, observed_at FROM current_prices"
            ).fetchall()
        finally:
            con.close()

    before = prices()
    assert any(itype.endswith(".datacenter") for itype, *_ in before)
    recorded = tmp_path / "rec" / "vastai"
    shutil.copytree(FIXTURES, recorded)
    manifest = json.loads((recorded / "replay.json").read_text())
    manifest["recorded_at"] = "2026-11-21T03:00:00Z"
    (recorded / "replay.json").write_text(json.dumps(manifest))
    (recorded / "bundles_on_demand.json").write_bytes(_retyped("hosting_type", lambda v: "dc" if v == 1 else "cc"))
    [outcome] = refresh(db_path, ["vastai"], replay=recorded.parent)
    assert outcome.status == "failed" and "\n" not in outcome.error
    assert "'hosting_type' is str ('cc')" in outcome.error
    assert prices() == before


def test_require_fields_matches_types_exactly_and_reads_null_as_absence():
    from scraper.base import require_fields

    fields = [("num_gpus",)]
    require_fields([{"num_gpus": 1}, {"num_gpus": None}, {}], fields, "p", "w", types={"num_gpus": (int,)})
    with pytest.raises(ParseError, match=r"^p: w: none of its 2 items has 'num_gpus': the upstream's fields changed"):
        require_fields([{"num_gpus": None}, {}], fields, "p", "w")
    with pytest.raises(ParseError, match=r"^p: w: 'num_gpus' is bool \(True\) in 1 of its 2 items, where int is read"):
        require_fields([{"num_gpus": 1}, {"num_gpus": True}], fields, "p", "w", types={"num_gpus": (int,)})
    long = {"num_gpus": "x" * 100}
    with pytest.raises(ParseError, match=r"'num_gpus' is str \('x{36}\.\.\.\) in 1 of its 1 items"):
        require_fields([long], fields, "p", "w", types={"num_gpus": (int,)})
