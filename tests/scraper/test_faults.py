"""The fault matrix: every provider's sources against a misbehaving upstream, over real HTTP.

For each source (AWS price file, spot feed and Spot Advisor; an Azure region; the GCP catalog; the
Lambda and CoreWeave pages; a Vast.ai search) and each fault of ``tests/scraper/upstream.py``, a
refresh on top of yesterday's prices must end with yesterday's prices exactly as they were (or,
after a 429 that clears, with today's), and a one-line reason that says what went wrong.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime

import pytest

from scraper.base import RawPayload
from scraper.http import RetryPolicy
from scraper.job import exit_code
from scraper.providers.vastai import VastProvider
from scraper.refresh import refresh
from tests.scraper.upstream import FAULTS, FIXTURES, TARGETS, Target, Upstream
from warehouse.db import open_warehouse
from warehouse.errors import ParseError

RETRY = RetryPolicy(attempts=2, base_seconds=0)

# what the one-line reason must say, per source and fault (the same for every source where not listed)
REASONS: dict[str, dict[str, str]] = {
    "*": {
        "persistent_500": "HTTP 500 from ",
        "timeout": "timeout",
    },
    "aws-prices": {
        "truncated": "ends in the middle of a row after",
        "html_error_200": "not an EC2 Price List CSV",
        "layout_changed": "CSV header lacks column(s) PricePerUnit",
        "empty": "suspect: on_demand/us-east-1: 0 offers, last good run",
        "tenth": "suspect: on_demand/us-east-1: ",
    },
    "aws-spot": {
        "truncated": "is not valid JSON",
        "html_error_200": "is not valid JSON",
        "layout_changed": "no GPU size has a 'linux' price column",
        "empty": "spot feed lists no region at all",
        "tenth": "suspect: spot/",
    },
    "aws-advisor": {
        "truncated": "is not valid JSON",
        "html_error_200": "is not valid JSON",
        "layout_changed": "no GPU entry has an 'r' interruption bucket",
        "empty": "Spot Advisor data lists no region at all",
        "tenth": "suspect: spot_risk/",
    },
    "azure": {
        "truncated": "is not JSON",
        "html_error_200": "is not JSON",
        "layout_changed": "none of its 100 items has 'armSkuName': the upstream's fields changed",
        "empty": "suspect: on_demand/eastus: 0 offers, last good run",
        "tenth": "suspect: on_demand/eastus: ",
    },
    "gcp": {
        "truncated": "is not JSON",
        "html_error_200": "is not JSON",
        "layout_changed": "none of its 83 items has 'description': the upstream's fields changed",
        "empty": "the catalog returned no SKUs at all",
        "tenth": "no GPU machine could be priced",
    },
    "lambda": {
        "truncated": "the page was cut short",
        "html_error_200": "no 'Instances pricing' heading",
        "layout_changed": "no priced rows under 'Instances pricing'",
        "empty": "no priced rows under 'Instances pricing'",
        "tenth": "suspect: on_demand: ",
    },
    "coreweave": {
        "truncated": "the page was cut short",
        "html_error_200": "no 'On-demand GPU instances' <h2>",
        "layout_changed": "no price rows (div role=listitem .table-row-v2)",
        "empty": "no price rows (div role=listitem .table-row-v2)",
        "tenth": "suspect: ",
    },
    "vastai": {
        "truncated": "is not JSON",
        "html_error_200": "is not JSON",
        "layout_changed": "(on_demand): none of its 430 items has 'gpu_name': the upstream's fields changed",
        "empty": "suspect: on_demand: 0 offers, last good run",
        "tenth": "suspect: on_demand: ",
    },
}


def reason_for(target: Target, fault: str) -> str:
    return REASONS[target.key].get(fault) or REASONS["*"][fault]


@pytest.fixture(scope="module")
def upstream():
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def yesterday(upstream, tmp_path_factory):
    """Per provider, a warehouse holding yesterday's prices from the fake upstream (built once, copied per test)."""
    built = {}

    def get(provider: str):
        if provider not in built:
            db = tmp_path_factory.mktemp(f"yesterday-{provider}") / "wh.duckdb"
            upstream.inject(None, None)
            [outcome] = refresh(db, [provider], env=upstream.env(), retry=RETRY, timeout=upstream.timeout_seconds)
            assert outcome.status == "ok", outcome.error
            built[provider] = db
        return built[provider]

    return get


def snapshot(db, provider):
    con = open_warehouse(db, read_only=True)
    try:
        prices = con.execute(
            """SELECT region, instance_type, pricing, usd_per_hour, observed_at FROM current_prices
               WHERE provider = ? ORDER BY ALL""",
            [provider],
        ).fetchall()
        risk = con.execute("SELECT * FROM spot_risk WHERE provider = ? ORDER BY ALL", [provider]).fetchall()
        runs = con.execute(
            "SELECT status, error FROM scrape_runs WHERE provider = ? ORDER BY run_id", [provider]
        ).fetchall()
        alerts = con.execute("SELECT kind, severity FROM alerts WHERE provider = ? ORDER BY ALL", [provider]).fetchall()
    finally:
        con.close()
    return prices, risk, runs, alerts


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("target", TARGETS, ids=[t.key for t in TARGETS])
def test_a_faulty_source_never_loses_or_distorts_a_price(target, fault, upstream, yesterday, tmp_path):
    db = tmp_path / "wh.duckdb"
    shutil.copy(yesterday(target.provider), db)
    before, risk_before, _, _ = snapshot(db, target.provider)
    assert before  # yesterday had prices to lose
    upstream.inject(target, fault)
    try:
        [outcome] = refresh(db, [target.provider], env=upstream.env(), retry=RETRY, timeout=upstream.timeout_seconds)
        hits = [upstream.hits[name] for name in target.files]
    finally:
        upstream.inject(None, None)
    after, risk_after, runs, alerts = snapshot(db, target.provider)

    if fault == "429_then_ok":  # the retry gets today's answer: the same offers, confirmed today
        assert (outcome.status, outcome.error) == ("ok", None)
        assert [row[:4] for row in after] == [row[:4] for row in before]
        assert min(row[4] for row in after) > max(row[4] for row in before)
        assert max(hits) == 2  # one 429, then the answer
        assert exit_code([outcome], requested=True) == 0  # the same offers at the same prices: nothing to flag
        return

    assert outcome.status == "failed"
    assert after == before and risk_after == risk_before  # yesterday's prices intact, not even re-confirmed
    assert outcome.error is not None and "\n" not in outcome.error
    assert reason_for(target, fault) in outcome.error
    assert runs[-1] == ("failed", outcome.error)
    assert exit_code([outcome], requested=True) == 1
    if "suspect" in outcome.error:
        assert ("suspect_drop", "error") in alerts and "--accept-drop " + target.provider in outcome.error


@pytest.mark.parametrize("field", ["geolocation", "verification", "hosting_type", "num_gpus", "dph_total"])
def test_a_renamed_field_that_decides_a_group_fails_instead_of_misfiling_every_offer(field):
    """Without this, a renamed ``geolocation`` would move every Vast.ai offer to country "unknown" (the
    listing count unchanged, so no drop to see) and close every country's prices."""
    offers = json.loads((FIXTURES / "vastai" / "bundles_on_demand.json").read_text())["offers"]
    renamed = [{(f"{k}_v2" if k == field else k): v for k, v in offer.items()} for offer in offers]
    body = json.dumps({"offers": renamed}).encode()
    url = "https://console.vast.ai/api/v0/bundles/"
    payload = RawPayload(url, datetime.now(UTC), 200, body, scope=("*", "on_demand"))
    with pytest.raises(ParseError, match=f"none of its {len(offers)} items has [^:]*'{field}'[^:]*: the upstream"):
        VastProvider.from_env({}).parse([payload])
