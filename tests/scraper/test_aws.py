"""AWS: Price List CSV filter and streaming, GPU table, spot feed, Spot Advisor, change detection, errors."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

import httpx
import pytest
import respx

from scraper.base import RawPayload
from scraper.http import Fetcher, Validators
from scraper.providers import aws_csv, aws_instances, aws_spot
from scraper.providers.aws import DEFAULT_REGIONS, AwsProvider, csv_url_of, regions_from_env, version_key
from scraper.replay import ReplayTransport, load_manifest
from tests.conftest import script_module
from tests.scraper import support
from tests.scraper.support import T0
from warehouse import spot_buckets
from warehouse.errors import ParseError, ProviderError, TransientProviderError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "aws"
CAPTURES = REPO.parent / "shared" / "reference" / "captures" / "aws"
PRICING = "https://pricing.us-east-1.amazonaws.com"
INDEX_URL = f"{PRICING}/offers/v1.0/aws/AmazonEC2/current/region_index.json"
VERSION = "20261119221500"
SPOT_URL = "https://website.spot.ec2.aws.a2z.com/spot.json"
ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
CANONICAL = {
    "V100-16GB", "V100-32GB", "T4", "A10", "A10G", "L4", "L40", "L40S", "A40", "A100-40GB", "A100-80GB",
    "A100-80GB-PCIe", "H100-SXM", "H100-PCIe", "H100-NVL", "H800", "H200", "H200-NVL", "B200", "GB200", "GH200",
    "MI300X", "MI325X", "RTX-3090", "RTX-4090", "RTX-5090", "RTX-A4000", "RTX-A5000", "RTX-A6000", "RTX-6000-Ada",
    "RTX-PRO-6000",
}  # fmt: skip


def csv_url(region: str, version: str = VERSION) -> str:
    return f"{PRICING}/offers/v1.0/aws/AmazonEC2/{version}/{region}/index.csv"


def make_fetcher(state: dict[str, str] | None = None, validators: dict[str, Validators] | None = None, tmp=None):
    return support.make_fetcher(None, "aws", state=state or {}, validators=validators or {}, workdir=tmp)


def fetch(provider: AwsProvider, fetcher: Fetcher) -> list[RawPayload]:
    async def go():
        try:
            return await provider.fetch(fetcher)
        finally:
            await fetcher.client.aclose()

    return asyncio.run(go())


def generator():
    """The fixture script, imported for its published price table (the figures the replay is built from)."""
    return script_module(FIXTURES / "make_fixtures.py", "aws_make_fixtures")


def record_dict(r) -> dict:
    return {
        "region": r.region,
        "instance_type": r.instance_type,
        "pricing": r.pricing,
        "gpu": r.gpu,
        "gpu_count": r.gpu_count,
        "usd_per_hour": r.usd_per_hour,
        "vcpus": r.vcpus,
        "memory_gib": r.memory_gib,
    }


def risk_dict(r) -> dict:
    return {
        "region": r.region,
        "instance_type": r.instance_type,
        "savings_pct": r.savings_pct,
        "bucket": r.bucket,
        "label": r.label,
        "interruption_pct_min": r.interruption_pct_min,
        "interruption_pct_max": r.interruption_pct_max,
    }


def by_key(items: list[dict]) -> list[dict]:
    return sorted(items, key=lambda d: (d["region"], d["instance_type"], d.get("pricing", "")))


# --- recorded parser cases: one test per <case>.<ext> / <case>.expected.json pair -------------------

CASES = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))


def test_there_are_parser_cases():
    assert {"case_csv_filters", "case_spot_feed", "case_spot_advisor"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_parser_case(case: str):
    expected = json.loads((FIXTURES / f"{case}.expected.json").read_text())
    (source,) = [p for p in FIXTURES.glob(f"{case}.*") if not p.name.endswith(".expected.json")]
    provider = AwsProvider({"COSTOPT_AWS_REGIONS": expected["regions"]})
    common = {"url": expected["url"], "fetched_at": T0, "status": 200, "scope": tuple(expected["scope"])}
    if source.suffix == ".csv":
        payload = RawPayload(path=source, **common)
    else:
        payload = RawPayload(body=source.read_bytes(), **common)
    result = provider.parse([payload])
    assert by_key([record_dict(r) for r in result.prices]) == by_key(expected["records"])
    assert by_key([risk_dict(r) for r in result.spot_risk]) == by_key(expected["spot_risk"])
    assert dict(result.skipped) == expected["skipped"]
    for record in result.prices:
        assert record.source == expected["url"] and record.observed_at == T0 and record.provider == "aws"


# --- the replay set: fetch + parse through the recorded responses ----------------------------------


def replay(env: dict[str, str] | None = None, state: dict[str, str] | None = None, tmp=None):
    transport = ReplayTransport(load_manifest(FIXTURES))
    fetcher, _ = make_fetcher(state=state, tmp=tmp)
    fetcher.client = httpx.AsyncClient(transport=transport)
    provider = AwsProvider(env or {})
    payloads = fetch(provider, fetcher)
    return provider.parse(payloads), fetcher, transport


def test_replay_keeps_exactly_the_published_linux_on_demand_prices(tmp_path):
    """Every decoy row in every region CSV is dropped: the on-demand records ARE the published table."""
    result, fetcher, _ = replay(tmp=tmp_path)
    published = {
        (region, itype): price
        for region, prices in generator().PRICES.items()
        for itype, price in prices.items()
        if itype in aws_instances.INSTANCES
    }
    on_demand = {(r.region, r.instance_type): r.usd_per_hour for r in result.prices if r.pricing == "on_demand"}
    assert on_demand == published
    assert {r for r, _ in on_demand} == set(DEFAULT_REGIONS)
    p5 = next(r for r in result.prices if r.key == ("aws", "us-east-1", "p5.48xlarge", "on_demand"))
    assert (p5.gpu, p5.gpu_count, p5.usd_per_hour, p5.usd_per_gpu_hour, p5.vcpus, p5.memory_gib) == (
        "H100-SXM", 8, 55.04, 6.88, 192, 2048,
    )  # fmt: skip
    assert p5.source == csv_url("us-east-1") and p5.observed_at == T0
    # known-but-untracked GPU families are counted, never priced
    assert result.skipped == {"GPU not in catalog (K80)": 24, "fractional GPU": 1, "GPU not in catalog (B300)": 1}
    assert result.carried == set()
    # each region's version is remembered for the next run
    assert fetcher.new_state == {version_key(r): csv_url(r) for r in DEFAULT_REGIONS}


def test_replay_spot_prices_and_risk(tmp_path):
    result, _, _ = replay(tmp=tmp_path)
    spot = {(r.region, r.instance_type): r.usd_per_hour for r in result.prices if r.pricing == "spot"}
    assert {region for region, _ in spot} == {"us-east-1", "us-west-2"}  # af-south-1 is not configured
    assert spot[("us-east-1", "p5.48xlarge")] == pytest.approx(26.4192)  # 55.04 x (100 - 52) / 100
    assert spot[("us-west-2", "g6e.2xlarge")] == pytest.approx(1.5246)  # 2.24208 x 0.68, rounded
    risk = {(r.region, r.instance_type): r for r in result.spot_risk}
    assert ("us-east-1", "g5g.xlarge") not in risk and ("us-east-1", "p2.xlarge") not in risk
    p5 = risk[("us-east-1", "p5.48xlarge")]
    assert (p5.savings_pct, p5.bucket, p5.label, p5.interruption_pct_min, p5.interruption_pct_max) == (
        52, 4, ">20%", 20, 100,
    )  # fmt: skip
    p4de = risk[("us-east-1", "p4de.24xlarge")]
    assert (p4de.bucket, p4de.interruption_pct_min, p4de.interruption_pct_max) == (0, 0, 5)
    assert len(result.spot_risk) == 2 * 41


def test_replay_fixtures_are_regenerable(tmp_path, monkeypatch):
    module = generator()
    monkeypatch.setattr(module, "HERE", tmp_path)
    module.replay()
    module.cases()
    for written in tmp_path.iterdir():
        assert written.read_bytes() == (FIXTURES / written.name).read_bytes(), written.name


def test_replay_csvs_have_the_real_layout():
    with (FIXTURES / "index_us-east-1.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert [r[0] for r in rows[:5]] == ["FormatVersion", "Disclaimer", "Publication Date", "Version", "OfferCode"]
    header = rows[5]
    for column in (*aws_csv.REQUIRED, *aws_csv.OPTIONAL):
        assert column in header
    assert all(len(r) == len(header) for r in rows[6:])
    assert 100 < len(rows) < 400


# --- the GPU table ----------------------------------------------------------------------------------


def test_instance_table_values():
    table = aws_instances.INSTANCES
    assert all(spec.gpu in CANONICAL for spec in table.values())
    assert all(spec.gpu_count >= 1 and spec.vcpus > 0 and spec.memory_gib > 0 for spec in table.values())
    expect = {
        "p3.2xlarge": ("V100-16GB", 1, 8, 61),
        "p3.16xlarge": ("V100-16GB", 8, 64, 488),
        "p3dn.24xlarge": ("V100-32GB", 8, 96, 768),
        "p4d.24xlarge": ("A100-40GB", 8, 96, 1152),
        "p4de.24xlarge": ("A100-80GB", 8, 96, 1152),
        "p5.48xlarge": ("H100-SXM", 8, 192, 2048),
        "p5.4xlarge": ("H100-SXM", 1, 16, 256),
        "p5e.48xlarge": ("H200", 8, 192, 2048),
        "p5en.48xlarge": ("H200", 8, 192, 2048),
        "p6-b200.48xlarge": ("B200", 8, 192, 2048),
        "g4dn.xlarge": ("T4", 1, 4, 16),
        "g4dn.16xlarge": ("T4", 1, 64, 256),
        "g4dn.metal": ("T4", 8, 96, 384),
        "g5.48xlarge": ("A10G", 8, 192, 768),
        "g6.12xlarge": ("L4", 4, 48, 192),
        "gr6.8xlarge": ("L4", 1, 32, 256),
        "g6e.xlarge": ("L40S", 1, 4, 32),
        "g6e.48xlarge": ("L40S", 8, 192, 1536),
        "g7e.12xlarge": ("RTX-PRO-6000", 2, 48, 512),
    }
    for itype, (gpu, count, cpus, mem) in expect.items():
        spec = table[itype]
        assert (spec.gpu, spec.gpu_count, spec.vcpus, spec.memory_gib) == (gpu, count, cpus, mem), itype


def test_untracked_families_are_not_in_the_table():
    families = {aws_instances.family_of(t) for t in aws_instances.INSTANCES}
    assert families.isdisjoint(aws_instances.UNTRACKED)
    assert aws_instances.lookup("g5g.xlarge") is None
    assert aws_instances.untracked_reason("g5g.xlarge") == "GPU not in catalog (T4G, Arm host)"
    assert aws_instances.untracked_reason("g6f.large") == "fractional GPU"
    assert aws_instances.untracked_reason("p7.48xlarge") is None


def test_table_matches_the_specs_the_fixture_rows_carry():
    """The fixture script's product attributes (GPU count, vCPU, memory) agree with the table."""
    specs = generator().SPECS
    for itype, spec in aws_instances.INSTANCES.items():
        if itype in specs:
            gpus, cpus, gib, _ = specs[itype]
            assert (spec.gpu_count, spec.vcpus, spec.memory_gib) == (gpus, cpus, gib), itype


# --- spot feed and advisor helpers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "price"),
    [("0.2452", 0.2452), ("9.0E-4", 0.0009), ("1.893E-1", 0.1893), ("N/A*", None), ("N/A", None), ("0", None),
     ("0.0000", None), ("", None), (None, None), ("nan", None), ("-1", None), ("n/a", None)],
)  # fmt: skip
def test_spot_price_strings(raw, price):
    assert aws_spot.spot_price(raw) == (pytest.approx(price) if price is not None else None)


def test_jsonp_wrapper_is_stripped_and_plain_json_untouched():
    assert aws_spot.load_json(b'callback({"a": 1});', "x") == {"a": 1}
    assert aws_spot.load_json(b'  callback({"a": [1, 2]})\n', "x") == {"a": [1, 2]}
    assert aws_spot.load_json(b'{"a": "callback(1);"}', "x") == {"a": "callback(1);"}
    with pytest.raises(ParseError, match="not valid JSON"):
        aws_spot.load_json(b'callback({"a": 1', "https://h/spot.json")


def test_legacy_region_names():
    assert [aws_spot.region_code(n) for n in ("us-east", "us-west", "eu-ireland", "apac-tokyo", "apac-syd")] == [
        "us-east-1", "us-west-1", "eu-west-1", "ap-northeast-1", "ap-southeast-2",
    ]  # fmt: skip
    assert aws_spot.region_code("us-west-2") == "us-west-2"


def test_bucket_bounds_from_the_real_ranges_are_the_shared_definition():
    bounds = aws_spot.bucket_bounds(generator().RANGES)
    # the parsed ranges are exactly the one definition the optimizer plans with (warehouse.spot_buckets)
    assert tuple(bounds[i] for i in sorted(bounds)) == spot_buckets.AWS_BUCKETS
    assert [(b.label, b.pct_min, b.pct_max, b.open) for b in bounds.values()] == [
        ("<5%", 0, 5, False),
        ("5-10%", 5, 10, False),
        ("10-15%", 10, 15, False),
        ("15-20%", 15, 20, False),
        (">20%", 20, 100, True),
    ]
    # an unreadable label falls back to the previous bucket's upper bound and AWS's max
    odd = aws_spot.bucket_bounds([{"index": 0, "label": "low", "max": 5}, {"index": 1, "label": "?", "max": 11}])
    assert [(b.label, b.pct_min, b.pct_max) for b in odd.values()] == [("low", 0, 5), ("?", 5, 11)]


# --- configuration --------------------------------------------------------------------------------------


def test_regions_from_env():
    assert regions_from_env({}) == DEFAULT_REGIONS
    assert regions_from_env({"COSTOPT_AWS_REGIONS": " us-east-1, us-west-2 ,us-east-1"}) == ("us-east-1", "us-west-2")
    with pytest.raises(ProviderError, match="us_east_1"):
        regions_from_env({"COSTOPT_AWS_REGIONS": "us_east_1"})


def test_csv_url_of():
    assert csv_url_of(PRICING, f"/offers/v1.0/aws/AmazonEC2/{VERSION}/us-east-1/index.json") == csv_url("us-east-1")
    assert csv_url_of(PRICING, "https://mirror.test/x/index.json") == "https://mirror.test/x/index.csv"


def test_no_credentials_needed():
    provider = AwsProvider.from_env({})
    assert provider.regions == DEFAULT_REGIONS
    assert set(AwsProvider.base_urls) == {
        "COSTOPT_AWS_PRICING_URL",
        "COSTOPT_AWS_SPOT_URL",
        "COSTOPT_AWS_SPOT_ADVISOR_URL",
    }


# --- change detection and HTTP error flows (respx: an unmatched request fails) -------------------------


def region_index(*regions: str, version: str = VERSION) -> dict:
    return {
        "formatVersion": "v1.0",
        "publicationDate": "2026-11-19T22:15:00Z",
        "regions": {
            r: {"regionCode": r, "currentVersionUrl": f"/offers/v1.0/aws/AmazonEC2/{version}/{r}/index.json"}
            for r in regions
        },
    }


def small_csv(region: str) -> bytes:
    """The replay CSV of a region: real layout, real decoys."""
    return (FIXTURES / f"index_{region}.csv").read_bytes()


def spot_routes(mock: respx.MockRouter) -> None:
    mock.get(SPOT_URL).respond(200, content=(FIXTURES / "spot.json").read_bytes())
    mock.get(ADVISOR_URL).respond(200, content=(FIXTURES / "spot-advisor-data.json").read_bytes())


ENV = {"COSTOPT_AWS_REGIONS": "us-east-1,us-west-2"}


def test_unchanged_version_is_not_downloaded_and_is_carried(tmp_path):
    state = {version_key("us-east-1"): csv_url("us-east-1"), version_key("us-west-2"): csv_url("us-west-2", "2026")}
    with respx.mock(assert_all_called=False) as mock:
        mock.get(INDEX_URL).respond(200, json=region_index("us-east-1", "us-west-2"))
        east = mock.get(csv_url("us-east-1")).respond(200, content=small_csv("us-east-1"))
        west = mock.get(csv_url("us-west-2")).respond(200, content=small_csv("us-west-2"))
        spot_routes(mock)
        fetcher, _ = make_fetcher(state=state, tmp=tmp_path)
        provider = AwsProvider(ENV)
        payloads = fetch(provider, fetcher)
    assert not east.called, "an unchanged publication must not be downloaded"
    assert west.call_count == 1
    skipped = next(p for p in payloads if p.scope == ("us-east-1", "on_demand"))
    assert skipped.not_modified and skipped.url == csv_url("us-east-1") and skipped.body == b""
    result = provider.parse(payloads)
    assert result.carried == {("us-east-1", "on_demand")}
    assert {r.region for r in result.prices if r.pricing == "on_demand"} == {"us-west-2"}
    assert fetcher.new_state == {version_key("us-west-2"): csv_url("us-west-2")}


def test_conditional_get_304_on_a_new_version_url_is_carried(tmp_path):
    url = csv_url("us-west-2")
    with respx.mock(assert_all_called=True) as mock:
        mock.get(INDEX_URL).respond(200, json=region_index("us-west-2"))
        route = mock.get(url).respond(304, headers={"ETag": '"v1"'})
        spot_routes(mock)
        fetcher, _ = make_fetcher(validators={url: Validators(etag='"v1"')}, tmp=tmp_path)
        provider = AwsProvider({"COSTOPT_AWS_REGIONS": "us-west-2"})
        payloads = fetch(provider, fetcher)
    assert route.calls.last.request.headers["If-None-Match"] == '"v1"'
    result = provider.parse(payloads)
    assert result.carried == {("us-west-2", "on_demand")}
    assert fetcher.new_state == {version_key("us-west-2"): url}


def test_region_index_304_with_known_versions_downloads_nothing(tmp_path):
    state = {version_key(r): csv_url(r) for r in ("us-east-1", "us-west-2")}
    with respx.mock(assert_all_called=True) as mock:
        index = mock.get(INDEX_URL).respond(304)
        spot_routes(mock)
        fetcher, _ = make_fetcher(state=state, validators={INDEX_URL: Validators(etag='"i"')}, tmp=tmp_path)
        provider = AwsProvider(ENV)
        payloads = fetch(provider, fetcher)
    assert index.call_count == 1
    assert provider.parse(payloads).carried == {("us-east-1", "on_demand"), ("us-west-2", "on_demand")}


def test_region_index_304_with_a_new_region_asks_again_unconditionally(tmp_path):
    state = {version_key("us-east-1"): csv_url("us-east-1")}
    with respx.mock(assert_all_called=True) as mock:
        index = mock.get(INDEX_URL)
        index.side_effect = [httpx.Response(304), httpx.Response(200, json=region_index("us-east-1", "us-west-2"))]
        west = mock.get(csv_url("us-west-2")).respond(200, content=small_csv("us-west-2"))
        spot_routes(mock)
        fetcher, _ = make_fetcher(state=state, validators={INDEX_URL: Validators(etag='"i"')}, tmp=tmp_path)
        provider = AwsProvider(ENV)
        result = provider.parse(fetch(provider, fetcher))
    assert "If-None-Match" not in index.calls[1].request.headers
    assert west.call_count == 1
    assert result.carried == {("us-east-1", "on_demand")}


def test_429_then_200_honours_retry_after(tmp_path):
    with respx.mock(assert_all_called=True) as mock:
        mock.get(INDEX_URL).mock(
            side_effect=[
                httpx.Response(429, headers={"Retry-After": "7"}),
                httpx.Response(200, json=region_index("us-west-2")),
            ]
        )
        mock.get(csv_url("us-west-2")).respond(200, content=small_csv("us-west-2"))
        spot_routes(mock)
        fetcher, slept = make_fetcher(tmp=tmp_path)
        provider = AwsProvider({"COSTOPT_AWS_REGIONS": "us-west-2"})
        result = provider.parse(fetch(provider, fetcher))
    assert slept == [7.0]
    assert any(r.key == ("aws", "us-west-2", "p5.48xlarge", "on_demand") for r in result.prices)


def test_5xx_exhausted_is_transient(tmp_path):
    with respx.mock(assert_all_called=False) as mock:
        route = mock.get(INDEX_URL).respond(503)
        fetcher, _ = make_fetcher(tmp=tmp_path)
        with pytest.raises(TransientProviderError, match=r"HTTP 503.*after 3 attempts"):
            fetch(AwsProvider(ENV), fetcher)
    assert route.call_count == 3


def test_csv_download_failure_fails_the_run_and_leaves_no_temp_file(tmp_path):
    with respx.mock(assert_all_called=False) as mock:
        mock.get(INDEX_URL).respond(200, json=region_index("us-east-1", "us-west-2"))
        mock.get(csv_url("us-east-1")).respond(200, content=small_csv("us-east-1"))
        mock.get(csv_url("us-west-2")).respond(500)
        spot_routes(mock)
        fetcher, _ = make_fetcher(tmp=tmp_path)
        with pytest.raises(TransientProviderError, match="us-west-2"):
            fetch(AwsProvider(ENV), fetcher)
    assert fetcher.new_state.get(version_key("us-west-2")) is None


def test_timeout_is_retried_then_transient(tmp_path):
    with respx.mock(assert_all_called=False) as mock:
        mock.get(INDEX_URL).respond(200, json=region_index("us-west-2"))
        mock.get(csv_url("us-west-2")).respond(200, content=small_csv("us-west-2"))
        spot = mock.get(SPOT_URL).mock(side_effect=httpx.ReadTimeout("slow"))
        mock.get(ADVISOR_URL).respond(200, content=(FIXTURES / "spot-advisor-data.json").read_bytes())
        fetcher, _ = make_fetcher(tmp=tmp_path)
        with pytest.raises(TransientProviderError, match="timeout"):
            fetch(AwsProvider({"COSTOPT_AWS_REGIONS": "us-west-2"}), fetcher)
    assert spot.call_count == 3


def test_region_missing_from_the_index_is_a_clear_error(tmp_path):
    with respx.mock(assert_all_called=False) as mock:
        mock.get(INDEX_URL).respond(200, json=region_index("us-east-1"))
        fetcher, _ = make_fetcher(tmp=tmp_path)
        with pytest.raises(ProviderError, match="us-west-2 not in the EC2 region index"):
            fetch(AwsProvider(ENV), fetcher)


def test_malformed_region_index_is_a_parse_error(tmp_path):
    with respx.mock(assert_all_called=False) as mock:
        mock.get(INDEX_URL).respond(200, content=b'{"regions": {"us-east-1": ')
        fetcher, _ = make_fetcher(tmp=tmp_path)
        with pytest.raises(ParseError, match=r"region_index.json is not valid JSON"):
            fetch(AwsProvider(ENV), fetcher)
    with respx.mock(assert_all_called=False) as mock:
        mock.get(INDEX_URL).respond(200, json={"offers": {}})
        fetcher, _ = make_fetcher(tmp=tmp_path)
        with pytest.raises(ParseError, match="no 'regions' object"):
            fetch(AwsProvider(ENV), fetcher)


def test_a_region_index_listing_no_region_is_an_upstream_fault_not_the_users_config(tmp_path):
    """Valid JSON with an empty ``regions`` object blamed COSTOPT_AWS_REGIONS ("not in the EC2 region index ...;
    known: " and nothing after it)."""
    with respx.mock(assert_all_called=False) as mock:
        mock.get(INDEX_URL).respond(200, json=region_index())
        fetcher, _ = make_fetcher(tmp=tmp_path)
        with pytest.raises(ParseError, match=r"region_index.json: the region index lists no region$"):
            fetch(AwsProvider(ENV), fetcher)


def payload(url: str, body: bytes = b"", path: Path | None = None, scope=()) -> RawPayload:
    return RawPayload(url=url, fetched_at=T0, status=200, body=body, path=path, scope=scope)


def test_malformed_spot_and_advisor_are_parse_errors():
    provider = AwsProvider(ENV)
    with pytest.raises(ParseError, match=r"spot.json is not valid JSON"):
        provider.parse([payload(SPOT_URL, b"<html>maintenance</html>")])
    with pytest.raises(ParseError, match=r"no config.regions"):
        provider.parse([payload(SPOT_URL, b'{"vers": 0.01}')])
    with pytest.raises(ParseError, match="no 'ranges'"):
        provider.parse([payload(ADVISOR_URL, b'{"spot_advisor": {}}')])


def test_csv_without_the_expected_header_is_a_parse_error(tmp_path):
    url = csv_url("us-east-1")
    html = tmp_path / "a.csv"
    html.write_text("<html><body>Access Denied</body></html>\n")
    with pytest.raises(ParseError, match=r"not an EC2 Price List CSV.*no header row"):
        AwsProvider(ENV).parse([payload(url, path=html, scope=("us-east-1", "on_demand"))])
    lines = small_csv("us-east-1").decode().splitlines()
    lines[5] = lines[5].replace('"PricePerUnit"', '"Price"')
    renamed = tmp_path / "b.csv"
    renamed.write_text("\n".join(lines) + "\n")
    with pytest.raises(ParseError, match=r"lacks column.*PricePerUnit"):
        AwsProvider(ENV).parse([payload(url, path=renamed, scope=("us-east-1", "on_demand"))])


def test_columns_are_found_by_name_not_position(tmp_path):
    """AWS adds columns: move PricePerUnit to the end and add an unknown column; same result."""
    rows = list(csv.reader((FIXTURES / "index_us-west-2.csv").read_text().splitlines()))
    header = rows[5]
    at = header.index("PricePerUnit")
    moved = [*rows[:5]]
    for row in rows[5:]:
        value = row.pop(at)
        moved.append([*row, "NewColumn" if row is rows[5] else "x", value])
    out = tmp_path / "moved.csv"
    with out.open("w", newline="") as handle:
        csv.writer(handle, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(moved)
    scope = ("us-west-2", "on_demand")
    provider = AwsProvider(ENV)
    before = provider.parse([payload(csv_url("us-west-2"), path=FIXTURES / "index_us-west-2.csv", scope=scope)])
    after = provider.parse([payload(csv_url("us-west-2"), path=out, scope=scope)])
    assert [record_dict(r) for r in after.prices] == [record_dict(r) for r in before.prices]
    assert len(after.prices) == 43


def test_malformed_rows_are_counted_not_fatal(tmp_path):
    lines = small_csv("us-east-1").decode().splitlines()
    broken = next(i for i, line in enumerate(lines) if "BoxUsage:p5.48xlarge" in line and '"OnDemand"' in line)
    lines[broken] = ",".join(lines[broken].split(",")[:-5])  # a truncated row: five fields short
    out = tmp_path / "cut.csv"
    out.write_text("\n".join(lines) + "\n")
    result = AwsProvider(ENV).parse([payload(csv_url("us-east-1"), path=out, scope=("us-east-1", "on_demand"))])
    assert result.skipped["malformed CSV row"] == 1
    assert not any(r.instance_type == "p5.48xlarge" for r in result.prices)
    assert any(r.instance_type == "p5.4xlarge" for r in result.prices)


def test_region_comes_from_the_url_when_the_payload_has_no_scope():
    result = AwsProvider(ENV).parse([payload(csv_url("us-west-2"), path=FIXTURES / "index_us-west-2.csv")])
    assert {r.region for r in result.prices} == {"us-west-2"}


# --- real captures (only when ../shared exists) --------------------------------------------------------

needs_captures = pytest.mark.skipif(not CAPTURES.exists(), reason="shared reference captures not present")
CAPTURE_CSV = CAPTURES / "pricelist_ec2_index_csv_sample_2025-09-12.csv"


@needs_captures
def test_capture_csv_every_row_is_a_look_alike():
    """The real sample's rows are reserved, Windows, RHEL, SUSE, dedicated/host and capacity-reservation rows."""
    result = AwsProvider(ENV).parse(
        [payload("https://h/offers/v1.0/aws/AmazonEC2/current/index.csv", path=CAPTURE_CSV)]
    )
    assert result.prices == [] and not result.skipped


@needs_captures
def test_capture_csv_g5_row_turned_into_a_plain_linux_row_is_kept(tmp_path):
    """Real column layout: flip the real g5.48xlarge row's decoy attributes and the parser keeps its price."""
    rows = list(csv.reader(CAPTURE_CSV.read_text().splitlines()))
    header = rows[5]
    col = {name: i for i, name in enumerate(header)}
    g5 = next(r for r in rows[6:] if r[col["Instance Type"]] == "g5.48xlarge")
    g5[col["Tenancy"]], g5[col["Operating System"]], g5[col["CapacityStatus"]] = "Shared", "Linux", "Used"
    g5[col["usageType"]] = "APS2-BoxUsage:g5.48xlarge"
    out = tmp_path / "g5.csv"
    with out.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([*rows[:6], g5])
    result = AwsProvider({"COSTOPT_AWS_REGIONS": "ap-southeast-2"}).parse(
        [payload("https://h/offers/v1.0/aws/AmazonEC2/current/index.csv", path=out)]
    )
    (record,) = result.prices
    assert (record.region, record.instance_type, record.gpu, record.gpu_count, record.usd_per_hour) == (
        "ap-southeast-2", "g5.48xlarge", "A10G", 8, 21.30264,
    )  # fmt: skip


@needs_captures
def test_capture_website_spot_json():
    body = (CAPTURES / "website_spot_json_afsouth1_excerpt.json").read_bytes()
    result = AwsProvider({"COSTOPT_AWS_REGIONS": "af-south-1"}).parse([payload(SPOT_URL, body)])
    prices = {r.instance_type: r.usd_per_hour for r in result.prices}
    assert prices == {
        "g4dn.12xlarge": 0.9625, "g4dn.16xlarge": 1.5179, "g4dn.2xlarge": 0.2708, "g4dn.4xlarge": 0.4347,
        "g4dn.8xlarge": 0.38, "g4dn.metal": 10.381, "g4dn.xlarge": 0.2452,
    }  # fmt: skip
    assert all(r.pricing == "spot" and r.region == "af-south-1" for r in result.prices)


@needs_captures
def test_capture_legacy_spot_js_regions_are_mapped():
    body = b"callback(" + (CAPTURES / "spot_js_payload_gpu_excerpt_2021-04.json").read_bytes() + b");"
    result = AwsProvider({"COSTOPT_AWS_REGIONS": "us-east-1,eu-west-1"}).parse(
        [payload("https://spot-price.s3.amazonaws.com/spot.js", body)]
    )
    prices = {(r.region, r.instance_type): r.usd_per_hour for r in result.prices}
    assert prices[("us-east-1", "p3.2xlarge")] == 0.918
    assert prices[("eu-west-1", "g4dn.xlarge")] == 0.1761
    assert prices[("us-east-1", "p4d.24xlarge")] == 9.8318
    assert {region for region, _ in prices} == {"us-east-1", "eu-west-1"}


@needs_captures
def test_capture_spot_advisor():
    body = (CAPTURES / "spot_advisor_data_gpu_excerpt_2025-06.json").read_bytes()
    result = AwsProvider({"COSTOPT_AWS_REGIONS": "us-east-1"}).parse([payload(ADVISOR_URL, body)])
    risk = {r.instance_type: r for r in result.spot_risk}
    assert {r.region for r in result.spot_risk} == {"us-east-1"}
    assert "g5g.xlarge" not in risk and "p2.xlarge" not in risk
    p5 = risk["p5.48xlarge"]
    assert (p5.savings_pct, p5.bucket, p5.label, p5.interruption_pct_min, p5.interruption_pct_max) == (
        52, 4, ">20%", 20, 100,
    )  # fmt: skip
    g6e = risk["g6e.xlarge"]
    assert (g6e.savings_pct, g6e.bucket, g6e.interruption_pct_min, g6e.interruption_pct_max) == (58, 1, 5, 10)
