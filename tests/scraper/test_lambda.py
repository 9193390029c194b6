"""Lambda: instance-types API with a key, the public pricing page without one; on-demand only."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path

import httpx
import pytest
import respx

from scraper.base import RawPayload
from scraper.http import Fetcher
from scraper.providers.lambda_cloud import LambdaProvider, canonical_gpu
from tests.scraper.support import T0, make_fetcher, replay_parse
from warehouse.errors import ParseError, ProviderError, TransientProviderError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "lambda"
API = "https://cloud.lambda.ai/api/v1/instance-types"
PAGE = "https://lambda.ai/pricing"


def payload(url: str, body: bytes | str | dict) -> RawPayload:
    raw = json.dumps(body).encode() if isinstance(body, dict) else body if isinstance(body, bytes) else body.encode()
    return RawPayload(url=url, fetched_at=T0, status=200, body=raw)


def prices(result) -> dict[str, tuple[str, float, float]]:
    return {r.instance_type: (r.gpu, r.gpu_count, r.usd_per_hour) for r in result.prices}


def fetcher(client: httpx.AsyncClient) -> Fetcher:
    return make_fetcher(client, "lambda", attempts=2)[0]


@pytest.mark.parametrize(
    ("description", "gpu"),
    [
        ("H100 (80 GB SXM5)", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("A100 (40 GB SXM4)", "A100-40GB"),
        ("A100 (80 GB SXM4)", "A100-80GB"),
        ("NVIDIA A100 PCIe 40GB", "A100-40GB-PCIe"),
        ("A100 (40 GB PCIe)", "A100-40GB-PCIe"),
        ("GH200 (96 GB)", "GH200"),
        ("B200 (180 GB SXM6)", "B200"),
        ("A10 (24 GB PCIe)", "A10"),
        ("RTX A6000 (48 GB)", "RTX-A6000"),
        ("Tesla V100 (16 GB)", "V100-16GB"),
        ("RTX 6000 (24 GB)", None),
        ("NVIDIA Quadro RTX 6000", None),
        ("Mystery X1", None),
    ],
)
def test_canonical_gpu(description, gpu):
    assert canonical_gpu(description) == gpu


def test_api_prices_are_whole_instances_in_cents():
    result = LambdaProvider.from_env({}).parse([payload(API, (FIXTURES / "instance_types.json").read_bytes())])
    got = prices(result)
    assert got["gpu_8x_h100_sxm5"] == ("H100-SXM", 8, 31.92)
    assert got["gpu_8x_b200_sxm6"] == ("B200", 8, 53.52)
    assert got["gpu_8x_a100_80gb_sxm4"] == ("A100-80GB", 8, 22.32)
    assert got["gpu_1x_a100_sxm4"] == ("A100-40GB", 1, 1.99)
    assert "gpu_1x_rtx6000" not in got and "cpu_4x_general" not in got
    assert result.skipped == {"no GPUs": 1, "unknown GPU": 1}
    assert {(r.region, r.pricing) for r in result.prices} == {("all", "on_demand")}
    record = next(r for r in result.prices if r.instance_type == "gpu_8x_h100_sxm5")
    assert (record.vcpus, record.memory_gib, record.source) == (208, 1800.0, API)


def test_api_price_given_as_a_string_is_coerced_and_a_bad_one_is_no_price():
    body = {
        "data": {
            "gpu_1x_a10": {"instance_type": {"name": "gpu_1x_a10", "gpu_description": "A10 (24 GB PCIe)",
                                             "price_cents_per_hour": "129", "specs": {"gpus": 1}}},
            "gpu_1x_h100_pcie": {"instance_type": {"name": "gpu_1x_h100_pcie", "gpu_description": "H100 (80 GB PCIe)",
                                                   "price_cents_per_hour": "n/a", "specs": {"gpus": 1}}},
        }
    }  # fmt: skip
    result = LambdaProvider.from_env({}).parse([payload(API, body)])
    assert prices(result) == {"gpu_1x_a10": ("A10", 1, 1.29)}
    assert result.skipped == {"no price": 1}


def test_page_prices_are_per_gpu_times_the_row_count():
    result = LambdaProvider.from_env({}).parse([payload(PAGE, (FIXTURES / "pricing.html").read_bytes())])
    got = prices(result)
    assert got["gpu_8x_b200"] == ("B200", 8, 53.52)  # $6.69 per GPU-hour on the page
    assert got["gpu_8x_h100_sxm"] == ("H100-SXM", 8, 31.92)
    assert got["gpu_1x_gh200"] == ("GH200", 1, 2.29)  # count from the "1x" row header
    assert got["gpu_4x_a100_40gb_pcie"] == ("A100-40GB-PCIe", 4, 7.96)  # PCIe cards: not the SXM4 A100
    # the 1-Click Clusters table ($4.49 B200) comes first and is a reserved product: not read
    assert all(usd != 4.49 for _, _, usd in got.values())
    assert result.skipped == {"no price": 1, "unknown GPU": 1}  # H200 "Sold out", Quadro RTX 6000
    # the page and the API agree on every GPU and count they both list
    api = LambdaProvider.from_env({}).parse([payload(API, (FIXTURES / "instance_types.json").read_bytes())])
    by_shape = {(r.gpu, r.gpu_count): r.usd_per_hour for r in api.prices}
    for gpu, count, usd in got.values():
        assert by_shape[(gpu, count)] == usd


@pytest.mark.parametrize(
    ("url", "body", "message"),
    [
        (API, b"<html>", "not JSON"),
        (API, {"error": {"code": "global/invalid-api-key", "message": "API key was invalid"}}, "invalid-api-key"),
        (API, {"instances": []}, "no 'data' object"),
        (API, {"data": {"cpu_4x_general": {"instance_type": {"name": "c", "specs": {"gpus": 0}}}}}, "no GPU instance"),
        (PAGE, "<html><h2>Pricing</h2><table><tr data-plan='x'></tr></table></html>", "layout changed"),
        (PAGE, "<html><h2>Instances pricing</h2><p>Coming soon</p></html>", "no priced rows"),
        (
            PAGE,
            "<h2>Instances pricing</h2><table><tr data-plan='NVIDIA A10'><th>1x A10</th>"
            "<td data-label='PRICE/GPU/HR*'>Contact sales</td></tr></table>",
            "none with a price",
        ),
    ],
)
def test_malformed_sources_are_parse_errors(url, body, message):
    with pytest.raises(ParseError, match=message):
        LambdaProvider.from_env({}).parse([payload(url, body)])


def test_replay_reads_the_public_page():
    assert LambdaProvider.from_env({"LAMBDA_API_KEY": "k"}, replay=True).key == ""  # replay sends no credentials
    payloads, result = replay_parse("lambda")
    assert [p.url for p in payloads] == [PAGE]
    assert len(result.prices) == 20


@respx.mock
def test_with_a_key_the_api_is_called_with_a_bearer_token_on_the_configured_host():
    route = respx.get("http://mirror.test/api/v1/instance-types").mock(
        return_value=httpx.Response(200, content=(FIXTURES / "instance_types.json").read_bytes())
    )
    provider = LambdaProvider.from_env({"LAMBDA_API_KEY": "secret", "COSTOPT_LAMBDA_URL": "http://mirror.test/"})

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client))

    (got,) = asyncio.run(go())
    assert route.calls[0].request.headers["Authorization"] == "Bearer secret"
    assert "secret" not in got.url
    assert len(provider.parse([got]).prices) == 20


@respx.mock
def test_without_a_key_the_page_host_can_be_overridden_and_errors_surface():
    route = respx.get("http://web.test/pricing").mock(side_effect=[httpx.Response(502), httpx.Response(502)])
    provider = LambdaProvider.from_env({"COSTOPT_LAMBDA_WEB_URL": "http://web.test"})

    async def go():
        async with httpx.AsyncClient() as client:
            return await provider.fetch(fetcher(client))

    with pytest.raises(TransientProviderError, match="HTTP 502"):
        asyncio.run(go())
    assert route.call_count == 2
    respx.get("http://web.test/pricing").mock(return_value=httpx.Response(403))
    with pytest.raises(ProviderError, match="HTTP 403"):
        asyncio.run(go())


def test_an_unchanged_page_carries_yesterdays_prices():
    unchanged = RawPayload(url=PAGE, fetched_at=T0, status=304, not_modified=True)
    result = LambdaProvider.from_env({}).parse([unchanged])
    assert result.prices == [] and result.carried == {("all", "on_demand")}


PRICE_CELL = '<td data-label="PRICE/GPU/HR*">$3.99</td>'  # the 8x H100 SXM row of the recorded page


@pytest.mark.parametrize(
    ("cell", "per_gpu"),
    [
        ("$3.99", 3.99),
        ("$ 3.99", 3.99),
        ("$3.99*", 3.99),  # a footnote mark
        ("$1,003.99", 1003.99),
        ("$-3.99", None),  # a negative figure is no price, never its absolute value
        ("-$3.99", None),
        ("Was $4.49 now $3.99", None),  # two figures: which one holds is a guess
        ("8x $2.99", None),  # a count before the price: not 8 dollars
        ("$3.99 - $4.49", None),
        ("$0.00", None),
    ],
)
def test_a_page_price_cell_is_exactly_one_positive_dollar_amount(cell, per_gpu):
    """A1: the page's price was read as the first number anywhere in the cell, sign dropped: a page of
    ``$-3.99`` loaded as $3.99 and re-confirmed yesterday's prices (run ok, exit 0)."""
    page = (FIXTURES / "pricing.html").read_text()
    assert page.count(PRICE_CELL) == 1
    before = LambdaProvider.from_env({}).parse([payload(PAGE, page)])
    page = page.replace(PRICE_CELL, f'<td data-label="PRICE/GPU/HR*">{cell}</td>')
    result = LambdaProvider.from_env({}).parse([payload(PAGE, page)])
    got = prices(result)
    others = {k: v for k, v in got.items() if k != "gpu_8x_h100_sxm"}
    assert others == {k: v for k, v in prices(before).items() if k != "gpu_8x_h100_sxm"}  # read as before
    if per_gpu is None:
        assert "gpu_8x_h100_sxm" not in got
        reason = "no price" if cell == "$0.00" else "unreadable price"
        assert result.skipped == before.skipped + Counter({reason: 1})
        assert f"{reason}: 8x NVIDIA H100 SXM: {cell!r}" in result.skipped_examples
        # an unreadable figure is no news about the offer: its previous price is held, not closed
        assert result.held == ({("all", "gpu_8x_h100_sxm", "on_demand")} if reason == "unreadable price" else set())
    else:
        assert got["gpu_8x_h100_sxm"] == ("H100-SXM", 8, pytest.approx(per_gpu * 8))
        assert result.skipped == before.skipped and result.held == set()


def test_a_page_whose_every_price_is_unreadable_fails_the_provider():
    """Every price negative is a broken page, not 20 free offers: the provider fails, yesterday's prices stay."""
    page = re.sub(r'(data-label="PRICE/GPU/HR\*">)\$', r"\1$-", (FIXTURES / "pricing.html").read_text())
    assert "$-6.69" in page
    with pytest.raises(ParseError, match=r"rows under 'Instances pricing' but none with a price"):
        LambdaProvider.from_env({}).parse([payload(PAGE, page)])
