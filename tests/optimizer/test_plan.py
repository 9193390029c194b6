"""Plan, spot and breakeven: arithmetic against hand-computed values, filters, Pareto, JSON and CLI."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from optimizer.estimate import Job, estimate
from optimizer.memory import state_bytes
from optimizer.models import resolve_model
from optimizer.plan import (
    Constraints,
    NoOptions,
    build_plan,
    default_view,
    instance_counts,
    smallest_meeting,
    stale_prices,
)
from optimizer.spot import hazard_from_bucket, spot_overhead
from warehouse.errors import UsageError
from warehouse.gpus import catalog

GPUS = catalog()
JOB = Job(resolve_model("8B"), 100e9)


def offer(provider="aws", region="us-east-1", instance="p4de.24xlarge", gpu="A100-80GB", count=8, pricing="on_demand",
          price=40.0, **extra):  # fmt: skip
    return {"provider": provider, "region": region, "instance_type": instance, "gpu": gpu, "gpu_count": count,
            "pricing": pricing, "usd_per_hour": price, "age_hours": 1.0, "source": "https://example/x",
            "observed_at": "2026-11-20", **extra}  # fmt: skip


def test_cost_is_wall_hours_times_price_times_instances():
    plan = build_plan(JOB, [offer(price=40.0)], GPUS, Constraints(max_gpus=16))
    est = estimate(JOB, GPUS.resolve("A100-80GB"), 8, gpus_per_node=8, fabric="rdma")
    one = next(r for r in plan.options if r["instances"] == 1)
    assert one["wall_expected"] == pytest.approx(est.wall_hours.expected)
    assert one["cost_expected"] == pytest.approx(est.wall_hours.expected * 40.0)
    assert one["cost_low"] == pytest.approx(est.wall_hours.low * 40.0)
    two = next(r for r in plan.options if r["instances"] == 2)
    est2 = estimate(JOB, GPUS.resolve("A100-80GB"), 16, gpus_per_node=8, fabric="rdma")
    assert two["cost_expected"] == pytest.approx(est2.wall_hours.expected * 40.0 * 2)


def test_spot_savings_against_the_same_instance_on_demand_with_advisor_hazard():
    offers = [offer(price=40.0), offer(pricing="spot", price=16.0)]
    risk = {("aws", "us-east-1", "p4de.24xlarge"): (5.0, 10.0)}
    plan = build_plan(JOB, offers, GPUS, Constraints(max_gpus=8), spot_risk=risk)
    rows = {r["pricing"]: r for r in plan.options}
    spot, od = rows["spot"], rows["on_demand"]
    over = spot_overhead(hazard=hazard_from_bucket(5, 10), hazard_source="", instances=1,
                         checkpoint_bytes=state_bytes(JOB.model, "full"))  # fmt: skip
    assert spot["wall_expected"] == pytest.approx(od["wall_expected"] * over.factor)
    assert spot["savings_usd"] == pytest.approx(od["cost_expected"] - spot["cost_expected"])
    assert spot["on_demand_cost_usd"] == pytest.approx(od["cost_expected"])
    assert spot["added_hours"] == pytest.approx(od["wall_expected"] * over.overhead)
    assert "Spot Advisor" in spot["hazard_source"]


def test_a_spot_price_that_costs_more_than_on_demand_saves_nothing_not_a_negative_amount():
    """Interruptions paid, a spot (or Vast.ai bid) price just under on-demand costs more: the plan showed
    "spot saves -$308 (-4%)"; now the saving is 0 and the table says "no saving"."""
    from cli.plan_table import cells

    offers = [offer(price=40.0), offer(pricing="spot", price=39.9)]
    risk = {("aws", "us-east-1", "p4de.24xlarge"): (15.0, 20.0)}
    rows = {r["pricing"]: r for r in build_plan(JOB, offers, GPUS, Constraints(max_gpus=8), spot_risk=risk).options}
    spot, od = rows["spot"], rows["on_demand"]
    assert spot["cost_expected"] > od["cost_expected"]  # dearer once interrupted
    assert spot["on_demand_cost_usd"] == pytest.approx(od["cost_expected"])
    assert spot["savings_usd"] == 0.0
    assert cells(dict(spot, notes=[]))["saves"] == "no saving"
    cheaper = build_plan(JOB, [offer(price=40.0), offer(pricing="spot", price=16.0)], GPUS, Constraints(max_gpus=8))
    spot = next(r for r in cheaper.options if r["pricing"] == "spot")
    share = spot["savings_usd"] / spot["on_demand_cost_usd"]
    assert (
        spot["savings_usd"] > 0 and cells(dict(spot, notes=[]))["saves"] == f"${spot['savings_usd']:,.0f} ({share:.0%})"
    )


def test_filters_name_the_one_that_removed_the_last_offer():
    offers = [offer(), offer(provider="vastai", instance="H100-SXMx8.verified.datacenter", gpu="H100-SXM",
                             region="US", pricing="interruptible", price=10.0, offer_count=3)]  # fmt: skip
    with pytest.raises(NoOptions, match="--region removed the last"):
        build_plan(JOB, offers, GPUS, Constraints(regions=("mars-1",)))
    with pytest.raises(NoOptions, match="--deadline"):
        build_plan(JOB, offers, GPUS, Constraints(deadline_hours=1, max_gpus=16))
    with pytest.raises(UsageError):
        build_plan(JOB, offers, GPUS, Constraints(gpus=("H1000",)))
    only_spot = build_plan(JOB, offers, GPUS, Constraints(spot=True, max_gpus=64))
    assert {r["pricing"] for r in only_spot.options} == {"interruptible"}
    # a marketplace listing is one host: never rented several times over into one job
    assert max(r["instances"] for r in only_spot.options) == 1


def test_budget_filter_and_pareto_marking():
    offers = [offer(price=40.0), offer(provider="lambda", instance="gpu_8x_h100_sxm5", gpu="H100-SXM", price=24.0,
                                       region="us-west-1")]  # fmt: skip
    plan = build_plan(JOB, offers, GPUS, Constraints(max_gpus=64))
    rows = plan.options
    costs = [r["cost_expected"] for r in rows]
    assert costs == sorted(costs)
    for row in rows:
        dominated = any(
            r["cost_expected"] <= row["cost_expected"] and r["wall_expected"] < row["wall_expected"] for r in rows
        )
        assert row["pareto"] == (not dominated)
    cap = costs[0] * 1.01
    kept = build_plan(JOB, offers, GPUS, Constraints(budget_usd=cap, max_gpus=64)).options
    assert len(kept) == len([c for c in costs if c <= cap]) < len(rows)
    assert max(r["cost_expected"] for r in kept) <= cap


def test_offers_that_cannot_hold_the_job_are_dropped_with_the_reason():
    offers = [offer(provider="vastai", instance="RTX-4090x1.verified.datacenter", gpu="RTX-4090", count=1,
                    region="US", price=0.4, offer_count=100)]  # fmt: skip
    big = Job(resolve_model("llama3-70b"), 1e12)
    with pytest.raises(NoOptions, match="needs more than --max-gpus 8: its smallest option needs 190 GPUs"):
        build_plan(big, offers, GPUS, Constraints(max_gpus=8))
    # the listings are what stops it under a high cap: 190 x 1-GPU (24 GiB) listings wanted, 100 listed
    plan_error = "no offer can run the job: needs 190 listings, the market has 100"
    with pytest.raises(NoOptions, match=plan_error):
        build_plan(big, offers, GPUS, Constraints(max_gpus=4096))
    fractional = [offer(provider="azure", instance="Standard_NV6ads_A10_v5", gpu="A10", count=1 / 6, price=0.45)]
    with pytest.raises(NoOptions, match=r"no offer can run the job: fractional GPU \(0.166667 per instance\)"):
        build_plan(JOB, fractional, GPUS, Constraints())


def test_instance_counts_reach_the_cap_with_no_hidden_limit():
    assert instance_counts(1, 256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert instance_counts(3, 100) == [3, 6, 12, 24, 48, 96, 100]
    assert instance_counts(1, 4096)[-1] == 4096 and len(instance_counts(1, 4096)) == 13  # O(log) counts
    assert instance_counts(2, 50, extra=(37, 80, 1)) == [2, 4, 8, 16, 32, 37, 50]
    assert instance_counts(5, 4) == []


def test_smallest_count_meeting_a_deadline_by_bisection():
    hours = lambda n: 1000.0 / n  # noqa: E731
    assert smallest_meeting(1, 512, hours, 10.0) == 100
    assert smallest_meeting(1, 512, hours, 1.0) is None
    assert smallest_meeting(200, 512, hours, 10.0) == 200


def test_max_gpus_is_searched_all_the_way_up():
    """The issue's case: 8B on H100 with a 12 h deadline fits under --max-gpus 4096 (no 32x cap any more)."""
    offers = [offer(instance="p5.48xlarge", gpu="H100-SXM", price=55.04)]
    plan = build_plan(JOB, offers, GPUS, Constraints(max_gpus=4096, deadline_hours=12))
    assert max(r["instances"] for r in plan.options) == 512  # 4096 GPUs / 8
    fastest_needed = min(r["instances"] for r in plan.options)
    est = estimate(JOB, GPUS.resolve("H100-SXM"), fastest_needed * 8, gpus_per_node=8, fabric="rdma")
    below = estimate(JOB, GPUS.resolve("H100-SXM"), (fastest_needed - 1) * 8, gpus_per_node=8, fabric="rdma")
    assert est.wall_hours.expected <= 12 < below.wall_hours.expected  # the smallest count that meets it


def test_a_job_too_big_for_the_cap_says_so():
    big = Job(resolve_model("2T"), 100e9)
    with pytest.raises(NoOptions, match=r"needs more than --max-gpus 256: its smallest option needs \d+ GPUs"):
        build_plan(big, [offer(instance="p5.48xlarge", gpu="H100-SXM", price=55.04)], GPUS, Constraints())


def test_absurd_inputs_are_refused():
    with pytest.raises(UsageError, match="more than 100 years: check --tokens"):
        build_plan(Job(resolve_model("8B"), 1e40), [offer()], GPUS, Constraints())


def test_spot_keeps_its_on_demand_baseline():
    offers = [offer(price=40.0), offer(pricing="spot", price=16.0)]
    spot_only = build_plan(JOB, offers, GPUS, Constraints(spot=True, max_gpus=16)).options
    assert {r["pricing"] for r in spot_only} == {"spot"}
    full = build_plan(JOB, offers, GPUS, Constraints(max_gpus=16)).options
    od = {r["instances"]: r["cost_expected"] for r in full if r["pricing"] == "on_demand"}
    for r in spot_only:
        assert r["on_demand_cost_usd"] == pytest.approx(od[r["instances"]])
        assert r["savings_usd"] == pytest.approx(od[r["instances"]] - r["cost_expected"])
        assert r["savings_basis"] is None  # the same instance, not a fallback


def test_identical_offers_in_several_regions_collapse_into_one_row():
    offers = [
        offer(region="us-east-1", price=40.0),
        offer(region="us-west-2", price=40.0),
        offer(region="eu-west-1", price=40.0),
        offer(region="ap-south-1", price=44.0),
    ]
    rows = build_plan(JOB, offers, GPUS, Constraints(max_gpus=8)).options
    assert len(rows) == 2
    same = next(r for r in rows if r["usd_per_instance_hour"] == 40.0)
    assert same["regions"] == ["eu-west-1", "us-east-1", "us-west-2"] and same["region"] == "eu-west-1"
    assert [r["regions"] for r in rows if r["usd_per_instance_hour"] == 44.0] == [["ap-south-1"]]


def test_options_slower_than_the_horizon_come_last_and_are_flagged():
    slow_cheap = offer(provider="vastai", instance="V100-32GBx8.verified.datacenter", gpu="V100-32GB", region="all",
                       price=1.2, offer_count=5)  # fmt: skip
    fast = offer(instance="p5.48xlarge", gpu="H100-SXM", price=55.04)
    rows = build_plan(JOB, [slow_cheap, fast], GPUS, Constraints(max_gpus=8)).options
    first, last = rows[0], rows[-1]
    assert first["gpu"] == "H100-SXM" and not first["slow"] and first["wall_expected"] <= 90 * 24
    assert last["gpu"] == "V100-32GB" and last["slow"] and last["wall_expected"] > 90 * 24
    assert last["cost_expected"] < first["cost_expected"]  # cheaper, but not what the table leads with
    shorter = build_plan(JOB, [slow_cheap, fast], GPUS, Constraints(max_gpus=8, horizon_hours=1e6)).options
    assert shorter[0]["gpu"] == "V100-32GB"


def test_default_view_keeps_each_offers_cheapest_count_and_the_front():
    offers = [offer(price=40.0), offer(provider="lambda", instance="gpu_8x_h100_sxm5", gpu="H100-SXM", price=24.0,
                                       region="all")]  # fmt: skip
    rows = build_plan(JOB, offers, GPUS, Constraints(max_gpus=64)).options
    view = default_view(rows)
    assert {r["instance_type"] for r in view} == {"p4de.24xlarge", "gpu_8x_h100_sxm5"}
    for kind in ("p4de.24xlarge", "gpu_8x_h100_sxm5"):
        shown = [r["cost_expected"] for r in view if r["instance_type"] == kind]
        assert min(shown) == min(r["cost_expected"] for r in rows if r["instance_type"] == kind)
    assert {r["instances"] for r in view if not r["pareto"]} <= {1}
    assert [r for r in rows if r["pareto"]] == [r for r in view if r["pareto"]]
    assert view == [r for r in rows if r in view]  # the ranking is kept


def test_stale_prices_count_from_the_source_time():
    rows = [
        {"provider": "aws", "source_age_hours": 31 * 24.0, "source_time": "2026-10-01", "source_basis": "published",
         "data_origin": "live"},
        {"provider": "aws", "source_age_hours": 40 * 24.0, "source_time": "2026-09-20", "source_basis": "published",
         "data_origin": "live"},
        {"provider": "lambda", "source_age_hours": 2.0, "source_time": "2026-11-20", "source_basis": "observed",
         "data_origin": "live"},
    ]  # fmt: skip
    stale = stale_prices(rows, stale_days=30)
    assert [(s["provider"], s["age_hours"], s["source_time"]) for s in stale] == [("aws", 960.0, "2026-09-20")]
    assert stale_prices(rows, stale_days=45) == []


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.app", *args], capture_output=True, text=True, timeout=120,
                          env=env)  # fmt: skip


@pytest.fixture
def cli_env(tmp_path):
    import os

    return {**os.environ, "COSTOPT_DATA_DIR": str(tmp_path / "data")}


def test_cli_plan_on_the_bundled_snapshot_json_contract(cli_env):
    out = run_cli("plan", "--model", "8B", "--tokens", "100B", "--format", "json", "--top", "5", env=cli_env)
    assert out.returncode == 0, out.stderr
    assert "bundled price snapshot" in out.stderr
    data = json.loads(out.stdout)
    assert data["job"]["flops"] == pytest.approx((6 * 8e9 + 12 * 35 * 4352 * 2048) * 100e9, rel=1e-3)  # 5.174e21
    assert data["prices_as_of"].startswith("2026-11-20")
    option = data["options"][0]
    keys = {"provider", "instance_type", "region", "gpu", "gpus_per_instance", "instances", "pricing",
            "usd_per_instance_hour", "wall_hours", "cost_usd", "on_demand_cost_usd", "savings_usd", "pareto",
            "notes"}  # fmt: skip
    assert keys <= set(option)
    costs = [o["cost_usd"]["expected"] for o in data["options"]]
    assert costs == sorted(costs)
    o = option
    # rounded to what each figure means: money to cents, hours to 4 significant digits, the price exact
    for figure in (*o["cost_usd"].values(), o["on_demand_cost_usd"], o["savings_usd"]):
        assert figure == round(figure, 2)
    for hours in o["wall_hours"].values():
        assert hours == float(f"{hours:.4g}")
    assert o["cost_usd"]["expected"] == pytest.approx(
        o["wall_hours"]["expected"] * o["usd_per_instance_hour"] * o["instances"], rel=1e-3
    )
    # --exact: the figures unrounded, for which the contract's relation holds exactly
    exact = json.loads(
        run_cli("plan", "--model", "8B", "--tokens", "100B", "-f", "json", "--top", "1", "--exact", env=cli_env).stdout
    )["options"][0]
    assert exact["instance_type"] == o["instance_type"] and exact["usd_per_instance_hour"] == o["usd_per_instance_hour"]
    assert exact["cost_usd"]["expected"] == pytest.approx(
        exact["wall_hours"]["expected"] * exact["usd_per_instance_hour"] * exact["instances"]
    )
    assert round(exact["cost_usd"]["expected"], 2) == o["cost_usd"]["expected"]
    assert data["options"][0]["pareto"] is True
    # provenance: every figure says where it comes from and how old it is by its source's own time
    for o in data["options"]:
        assert o["data_origin"] in {"derived", "generated"}  # the bundled snapshot is no live recording
        assert o["price_source_time"] and o["price_age_hours"] > 24 * 30
        assert o["regions"] and o["region"] == o["regions"][0]
        if o["provider"] == "vastai":  # a marketplace price says how many listings stand behind it
            assert o["listings"] >= 3 and f"of {o['listings']} listings" in o["market_basis"]
            assert o["instances"] <= o["listings"]
    assert data["warnings"] and data["warnings"][0].startswith("warning: prices older than 30 days")
    assert data["horizon_days"] == 90 and data["market_price"] == "median"


def test_cli_plan_bad_input_is_one_line(cli_env):
    for args, code in (
        (["--deadline", "tomorrow"], 2),
        (["--gpu", "H1000"], 2),
        (["--provider", "nosuch"], 2),
        (["--tokens", "100Q"], 2),
        (["--tokens", "1e40"], 2),
        (["--market-price", "max"], 2),
        (["--horizon", "soon"], 2),
    ):
        base = {"--model": "8B", "--tokens": "100B"}
        out = run_cli("plan", *[x for kv in base.items() for x in kv], *args, env=cli_env)
        assert out.returncode == code, (args, out.stderr)
        errors = [line for line in out.stderr.splitlines() if line.startswith("costopt: error")]
        assert len(errors) == 1 and "Traceback" not in out.stderr
    out = run_cli("plan", "--model", "8B", "--tokens", "100B", "--deadline", "tomorrow", env=cli_env)
    assert "14d" in out.stderr


def test_cli_breakeven(cli_env):
    out = run_cli("breakeven", "--gpu", "H100", "--count", "8", "--rent-price", "2.5", "-f", "json", env=cli_env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert {"capex_usd", "opex_usd_per_hour", "rent_usd_per_hour", "break_even_hours", "break_even_utilization",
            "months_to_break_even", "assumptions"} <= set(data)  # fmt: skip
    assert data["rent_usd_per_hour"] == pytest.approx(20.0)
    none = run_cli("breakeven", "--gpu", "MI325X", "--count", "8", "--server-cost", "300000", env=cli_env)
    assert none.returncode == 2 and "--rent-price" in none.stderr


def test_cli_breakeven_never_within_the_life(cli_env):
    out = run_cli("breakeven", "--gpu", "H100", "--count", "8", "--rent-price", "1.09", "-f", "json", env=cli_env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["months_to_break_even"] is None and data["break_even_utilization"] is None
    assert data["never"].startswith("never within the hardware's 4-year life: at 60% utilization it would take 125.7")
    assert data["months_needed"] == 125.7  # 4 significant digits; money in cents
    assert (data["capex_usd"], data["rent_usd_per_hour"], data["assumptions"]["recoverable_usd"]) == (
        312000.0,
        8.72,
        249600.0,
    )
    exact = run_cli("breakeven", "--gpu", "H100", "--count", "8", "--rent-price", "1.09", "-f", "json", "--exact",
                    env=cli_env)  # fmt: skip
    assert json.loads(exact.stdout)["months_needed"] == pytest.approx(125.72, abs=0.01)
    table = run_cli("breakeven", "--gpu", "H100", "--count", "8", "--rent-price", "1.09", env=cli_env)
    assert "never (125.7 months needed)" in table.stdout and "never within the hardware's 4-year life" in table.stdout


def test_cli_breakeven_compares_with_a_robust_rent(cli_env):
    out = run_cli("breakeven", "--gpu", "H100", "--count", "8", "-f", "json", env=cli_env)
    assert out.returncode == 0, out.stderr
    rent = json.loads(out.stdout)["rent"]
    cloud, market = rent["cloud_on_demand"], rent["marketplace_median"]
    assert cloud is not None and market is not None and market["listings"] >= 3
    assert rent["usd_per_gpu_hour"] == min(cloud["usd_per_gpu_hour"], market["usd_per_gpu_hour"])
    assert rent["source"] in (cloud["from"], market["from"])


def test_cli_spot_keeps_the_baseline_and_the_readme_examples_run(cli_env):
    out = run_cli("plan", "--model", "mixtral-8x7b", "--tokens", "200B", "--spot", "--top", "5", "--format", "json",
                  env=cli_env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    options = json.loads(out.stdout)["options"]
    assert {o["pricing"] for o in options} <= {"spot", "interruptible"}
    for o in options:
        assert o["on_demand_cost_usd"] is not None
        assert o["savings_usd"] == pytest.approx(max(o["on_demand_cost_usd"] - o["cost_usd"]["expected"], 0.0))
    big = run_cli("plan", "--model", "llama3-70b", "--tokens", "1T", "--gpu", "H100", "--deadline", "14d",
                  "--max-gpus", "2048", "--budget", "2000000", "--format", "json", env=cli_env)  # fmt: skip
    assert big.returncode == 0, big.stderr
    first = json.loads(big.stdout)["options"][0]
    assert first["wall_hours"]["expected"] <= 14 * 24 and first["gpus_per_instance"] * first["instances"] <= 2048
    buy = run_cli("plan", "--model", "8B", "--tokens", "100B", "--no-spot", "--provider", "aws", "--buy", "-f", "json",
                  env=cli_env)  # fmt: skip
    assert buy.returncode == 0, buy.stderr
    line = json.loads(buy.stdout)["buy"]
    assert (line["jobs_to_pay_off"] is None) == (line["never"] is not None)


@pytest.mark.parametrize(
    ("provider", "instance", "fabric"),
    [
        ("aws", "p5.48xlarge", "rdma"),  # EFA
        ("aws", "p4de.24xlarge", "rdma"),
        ("aws", "p3dn.24xlarge", "rdma"),
        ("aws", "p3.16xlarge", "ethernet"),  # NVLink inside, no EFA between
        ("gcp", "a3-highgpu-8g", "rdma"),  # GPUDirect-TCPX
        ("gcp", "a2-highgpu-8g", "ethernet"),
        ("gcp", "n1-standard-64+V100x8", "ethernet"),
        ("azure", "Standard_ND96isr_H100_v5", "rdma"),  # 'r': InfiniBand
        ("azure", "Standard_NC24rs_v3", "rdma"),
        ("azure", "Standard_NC96ads_A100_v4", "ethernet"),
        ("lambda", "gpu_8x_h100_sxm", "ethernet"),  # on-demand instances: no InfiniBand between them
        ("coreweave", "hgx-h100", "rdma"),
        ("coreweave", "gb200-nvl72", "rdma"),
        ("coreweave", "l40s", "ethernet"),
        ("vastai", "H100-SXMx8.verified.datacenter", "ethernet"),
    ],
)
def test_the_fabric_between_instances_is_the_instance_familys_not_the_gpus(provider, instance, fabric):
    from optimizer.fabric import fabric_of

    assert fabric_of(provider, instance) == fabric


def test_an_8_gpu_nvlink_box_without_a_cluster_network_scales_out_over_ethernet():
    """Lambda's 8x H100 on-demand instances were costed as an InfiniBand cluster when rented several at once."""
    lambda_ = offer(provider="lambda", region="all", instance="gpu_8x_h100_sxm", gpu="H100-SXM", price=31.92)
    aws = offer(instance="p5.48xlarge", gpu="H100-SXM", price=55.04)
    plan = build_plan(JOB, [lambda_, aws], GPUS, Constraints(max_gpus=32))
    four = {r["provider"]: r for r in plan.options if r["instances"] == 4}
    assert (four["lambda"]["fabric"], four["aws"]["fabric"]) == ("ethernet", "rdma")
    ethernet = estimate(JOB, GPUS.resolve("H100-SXM"), 32, gpus_per_node=8, fabric="ethernet")
    assert four["lambda"]["wall_expected"] == pytest.approx(ethernet.wall_hours.expected)
    assert four["lambda"]["wall_expected"] > four["aws"]["wall_expected"] * 1.2


def test_spot_saves_only_against_the_same_providers_on_demand():
    """A GCP spot offer with no on-demand twin was compared with a marketplace's generated on-demand price."""
    gcp_spot = offer(provider="gcp", region="us-central1", instance="a4-highgpu-8g", gpu="B200", pricing="spot",
                     price=32.6)  # fmt: skip
    other = offer(provider="coreweave", region="US-EAST", instance="hgx-b200", gpu="B200", price=68.8)
    plan = build_plan(JOB, [gcp_spot, other], GPUS, Constraints(max_gpus=8))
    spot = next(r for r in plan.options if r["provider"] == "gcp")
    assert spot["on_demand_cost_usd"] is None and spot["savings_usd"] is None
    own = offer(provider="gcp", region="us-central1", instance="a4-highgpu-8g-od", gpu="B200", price=80.0)
    plan = build_plan(JOB, [gcp_spot, other, own], GPUS, Constraints(max_gpus=8))
    spot = next(r for r in plan.options if r["provider"] == "gcp" and r["pricing"] == "spot")
    od = next(r for r in plan.options if r["instance_type"] == "a4-highgpu-8g-od")
    assert spot["on_demand_cost_usd"] == pytest.approx(od["cost_expected"])
    assert spot["savings_basis"] == "vs gcp's cheapest on-demand of the same GPU count"


def test_no_option_names_the_reason_most_offers_share_not_a_fractional_gpu():
    fractional = offer(provider="azure", instance="Standard_NV6ads_A10_v5", gpu="A10", count=1 / 6, price=0.45)
    long = Job(resolve_model("8B"), 100e9, seq_len=1_000_000)
    offers = [fractional, offer(), offer(instance="p5.48xlarge", gpu="H100-SXM", price=55.0)]
    with pytest.raises(NoOptions) as caught:
        build_plan(long, offers, GPUS, Constraints())
    message = str(caught.value)
    assert message.startswith("no offer can run the job: one micro-batch's activations")
    assert "(2 offers)" in message and "fractional" not in message


def test_a_plan_whose_every_option_is_slow_says_to_raise_max_gpus():
    from optimizer.plan import every_option_slow

    big = Job(resolve_model("405B"), 15e12)
    plan = build_plan(big, [offer(instance="p5.48xlarge", gpu="H100-SXM", price=55.0)], GPUS, Constraints())
    assert all(r["slow"] for r in plan.options)
    warning = every_option_slow(plan.options, Constraints())
    assert warning is not None and warning.endswith("raise --max-gpus for faster options")
    assert "with up to --max-gpus 256 (the fastest: " in warning and "on 256 x H100-SXM" in warning
    assert every_option_slow(build_plan(JOB, [offer()], GPUS, Constraints()).options, Constraints()) is None


def test_a_deadline_met_below_the_largest_count_is_found():
    """Spot wall time rises again past some count (interruptions of many instances): the largest count misses a
    deadline a smaller one meets. Bisecting from the largest alone found none."""

    def hours(n: int) -> float:
        return 1000 / n + n / 20  # falls to a minimum near n = 141, then rises

    assert hours(512) > 15.0  # the largest count misses
    assert smallest_meeting(1, 512, hours, 15.0) == 100  # 1000/100 + 100/20 = 15; 99 gives 15.05
    assert smallest_meeting(1, 512, hours, 14.0) is None  # the minimum, 14.1 at 141, misses


def test_each_option_runs_and_is_charged_the_recomputation_that_fits_its_gpus():
    """8B at 2,048 tokens on one-GPU A100-40GB instances: 4 GPUs hold it only with full recomputation, 5 without
    (test_memory.py). The 4-instance option is charged for full recomputation, and 5 instances, not a doubling of
    the minimum, is tried: from there on the job does a third less work, and it is the offer's cheapest count."""
    one_gpu = offer(provider="gcp", region="us-central1", instance="a2-highgpu-1g", gpu="A100-40GB", count=1, price=3.0)
    plan = build_plan(JOB, [one_gpu], GPUS, Constraints(max_gpus=8))
    rows = {r["instances"]: r for r in plan.options}
    assert sorted(rows) == [4, 5, 8]
    assert {n: r["recompute"] for n, r in rows.items()} == {4: "full", 5: "selective", 8: "selective"}
    a100 = GPUS.resolve("A100-40GB")
    for n, row in rows.items():
        est = estimate(JOB, a100, n, gpus_per_node=1, fabric="ethernet")
        assert est.recompute == row["recompute"] and row["wall_expected"] == pytest.approx(est.wall_hours.expected)
    full = estimate(Job(JOB.model, JOB.tokens, recompute="full"), a100, 4, gpus_per_node=1, fabric="ethernet")
    assert rows[4]["wall_expected"] == pytest.approx(full.wall_hours.expected)
    assert min(plan.options, key=lambda r: r["cost_expected"])["instances"] == 5


def test_cli_plan_says_per_option_which_recomputation_it_runs(cli_env):
    """llama3-70b at 8,192 tokens keeps 186.7 GB of activations per GPU without full recomputation (test_memory.py):
    every L40S option (PCIe: no tensor parallelism) runs it, says so in its JSON, CSV and notes, and the table and
    --explain say it was charged. On H100 nodes (NVLink) tensor parallelism 4 keeps selective (test_tensor_parallel.py):
    the options say which degree."""
    args = ("plan", "--model", "llama3-70b", "--tokens", "1T", "--gpu", "L40S", "--max-gpus", "512", "--top", "3")
    data = json.loads(run_cli(*args, "-f", "json", env=cli_env).stdout)
    assert data["job"]["recompute"] == "auto"
    assert [(o["recompute"], "full recompute" in o["notes"]) for o in data["options"]] == [("full", True)] * 3
    assert [o["tensor_parallel"] for o in data["options"]] == [1] * 3
    rows = list(csv.DictReader(io.StringIO(run_cli(*args, "-f", "csv", env=cli_env).stdout)))
    assert [r["recompute"] for r in rows] == ["full"] * 3
    text = " ".join(run_cli(*args, "--explain", "--wide", env=cli_env).stdout.split())
    assert "3 of these rows recompute every layer's forward pass (note 'full recompute'): the job fits their GPUs " \
        "only that way, their MFU charged x0.75" in text  # fmt: skip
    assert "--recompute auto: per option, selective where it fits the option's GPUs, else full" in text
    assert "else the smallest of 2, 4, 8 that fits, on NVLink/Infinity Fabric GPUs only; no time charged" in text
    h100 = ("plan", "--model", "llama3-70b", "--tokens", "1T", "--gpu", "H100", "--max-gpus", "512", "--top", "3")
    nvlink = json.loads(run_cli(*h100, "-f", "json", env=cli_env).stdout)["options"]
    assert [(o["recompute"], o["tensor_parallel"], "TP4" in o["notes"]) for o in nvlink] == [("selective", 4, True)] * 3
    rows = list(csv.DictReader(io.StringIO(run_cli(*h100, "-f", "csv", env=cli_env).stdout)))
    assert [r["tensor_parallel"] for r in rows] == ["4"] * 3
    small = json.loads(
        run_cli("plan", "--model", "8B", "--tokens", "100B", "--top", "3", "-f", "json", env=cli_env).stdout
    )
    assert [o["recompute"] for o in small["options"]] == ["selective"] * 3


def test_the_plan_runs_with_the_cyclic_collector_paused_and_restores_it(monkeypatch):
    """build_plan pauses the cyclic garbage collector while it ranks (its full passes rescanned every live option,
    so planning time grew faster than the options: bench/plan_scale.py) and gives it back as it found it, after an
    answer, after an error, and left off where the caller had switched it off."""
    import gc

    from optimizer import plan as plan_module

    seen: list[bool] = []
    real = plan_module.estimate

    def watching(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(plan_module, "estimate", watching)
    assert gc.isenabled()
    build_plan(JOB, [offer()], GPUS, Constraints(max_gpus=16))
    assert seen and not any(seen)  # every estimate of the plan ran with the collector paused
    assert gc.isenabled()
    with pytest.raises(ValueError, match="view must be"):
        build_plan(JOB, [offer()], GPUS, Constraints(max_gpus=16), view="wrong")
    assert gc.isenabled()
    gc.disable()
    try:
        build_plan(JOB, [offer()], GPUS, Constraints(max_gpus=16))
        assert not gc.isenabled()
    finally:
        gc.enable()
