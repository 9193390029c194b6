"""Marketplace pricing: the price of k instances from a group's reliable listings, against hand-computed values."""

from __future__ import annotations

import pytest

from optimizer.estimate import Job
from optimizer.market import MarketPolicy, market_of
from optimizer.models import resolve_model
from optimizer.plan import Constraints, NoOptions, build_plan
from warehouse.errors import UsageError
from warehouse.gpus import catalog

GPUS = catalog()
JOB = Job(resolve_model("8B"), 100e9)


def listing(usd: float, country: str = "US", reliability: float | None = 0.99) -> dict:
    return {"usd_per_hour": usd, "country": country, "reliability": reliability}


FIVE = [listing(p) for p in (10.0, 1.0, 4.0, 3.0, 2.0)]  # sorted: 1 2 3 4 10; median 3, p10 1 + 0.4 x 1 = 1.4


def test_a_listing_is_rented_at_the_groups_quantile():
    market = market_of(FIVE, MarketPolicy(), interruptible=False)
    assert market is not None and market.prices == (1.0, 2.0, 3.0, 4.0, 10.0) and market.reference == 3.0
    assert (market.rule, market.basis) == ("median", "median of 5 listings")


def test_min_and_p10_policies():
    cheapest = market_of(FIVE, MarketPolicy(price="min"), interruptible=False)
    assert cheapest is not None and cheapest.reference == 1.0
    assert cheapest.basis == "cheapest of 5 listings"
    p10 = market_of(FIVE, MarketPolicy(price="p10"), interruptible=False)
    assert p10 is not None and p10.reference == pytest.approx(1.4)
    assert p10.basis == "p10 of 5 listings"


def test_reliability_country_and_bid_premium():
    items = [
        listing(1.0, reliability=0.90),  # below 0.95
        listing(2.0, reliability=None),  # no score: not eligible
        listing(3.0, "DE", 0.97),
        listing(4.0, "US", 0.95),  # at the threshold: kept
        listing(5.0, "US", 0.999),
    ]
    market = market_of(items, MarketPolicy(), interruptible=False)
    assert market is not None and market.prices == (3.0, 4.0, 5.0) and market.total == 5
    assert market.countries == ("DE", "US")
    us = market_of(items, MarketPolicy(countries=("US",)), interruptible=False)
    assert us is not None and us.prices == (4.0, 5.0)
    strict = market_of(items, MarketPolicy(min_reliability=0.98), interruptible=False)
    assert strict is not None and strict.prices == (5.0,)
    bids = market_of(items, MarketPolicy(), interruptible=True)
    assert bids is not None and bids.prices == pytest.approx((3.75, 5.0, 6.25))  # min_bid x 1.25
    assert bids.basis == "bid floor+25%, median of 3 listings"
    assert market_of(None, MarketPolicy(), interruptible=False) is None


def test_policy_rejects_bad_values():
    for bad in ({"price": "max"}, {"min_reliability": 1.5}, {"min_listings": 0}, {"bid_premium": -0.1}):
        with pytest.raises(UsageError):
            MarketPolicy(**bad)


def vast(pricing="on_demand", listings=FIVE, count=8, gpu="H100-SXM"):
    return {"provider": "vastai", "region": "all", "instance_type": f"{gpu}x{count}.verified.datacenter",
            "gpu": gpu, "gpu_count": count, "pricing": pricing, "usd_per_hour": 3.0, "age_hours": 1.0,
            "source": "https://console.vast.ai/api/v0/bundles/", "observed_at": "2026-11-20",
            "offer_count": len(listings), "listings": listings, "data_origin": "generated"}  # fmt: skip


def test_plan_rents_one_listing_at_the_groups_price_never_several_hosts():
    """Listings are separate hosts with no cluster network between them: an option is one listing."""
    plan = build_plan(JOB, [vast()], GPUS, Constraints(max_gpus=256))
    [row] = plan.options
    assert row["instances"] == 1 and row["usd_per_instance_hour"] == 3.0 and row["listings"] == 5  # max(1, median 3)
    assert row["cost_expected"] == pytest.approx(row["wall_expected"] * 3.0)
    assert row["market_basis"] == "median of 5 listings" and row["data_origin"] == "generated"
    big = Job(resolve_model("llama3-70b"), 1e12)  # needs more GPUs than one 8-GPU listing holds
    with pytest.raises(NoOptions, match="needs 3 machines at once; marketplace listings are separate hosts"):
        build_plan(big, [vast()], GPUS, Constraints(max_gpus=256))


def test_a_group_with_too_few_reliable_listings_is_not_offered():
    thin = [listing(1.0), listing(2.0), listing(3.0, reliability=0.5)]
    with pytest.raises(NoOptions, match="no offer can run the job"):
        build_plan(JOB, [vast(listings=thin)], GPUS, Constraints())
    plan = build_plan(JOB, [vast(listings=thin)], GPUS, Constraints(market=MarketPolicy(min_listings=2)))
    assert [(r["listings"], r["instances"]) for r in plan.options] == [(2, 1)]


def test_region_filters_marketplace_listings_by_country():
    items = [listing(1.0, "DE"), listing(2.0, "DE"), listing(3.0, "DE"), listing(4.0, "US")]
    plan = build_plan(JOB, [vast(listings=items)], GPUS, Constraints(regions=("DE",)))
    first = plan.options[0]
    assert first["listings"] == 3 and first["countries"] == ["DE"] and first["usd_per_instance_hour"] == 2.0
    with pytest.raises(NoOptions, match="--region removed the last"):
        build_plan(JOB, [vast(listings=items)], GPUS, Constraints(regions=("FR",)))
