"""Plan, spot and breakeven: arithmetic against hand-computed values, filters, Pareto, JSON and CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from optimizer import defaults
from optimizer.breakeven import Inputs, breakeven, jobs_to_pay_off
from optimizer.estimate import Job, estimate
from optimizer.memory import state_bytes
from optimizer.models import resolve_model
from optimizer.plan import Constraints, NoOptions, build_plan
from optimizer.spot import hazard_from_bucket, overhead_fraction, spot_overhead, young_interval
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
    one = plan.options.filter(plan.options["instances"] == 1).row(0, named=True)
    assert one["wall_expected"] == pytest.approx(est.wall_hours.expected)
    assert one["cost_expected"] == pytest.approx(est.wall_hours.expected * 40.0)
    assert one["cost_low"] == pytest.approx(est.wall_hours.low * 40.0)
    two = plan.options.filter(plan.options["instances"] == 2).row(0, named=True)
    est2 = estimate(JOB, GPUS.resolve("A100-80GB"), 16, gpus_per_node=8, fabric="rdma")
    assert two["cost_expected"] == pytest.approx(est2.wall_hours.expected * 40.0 * 2)


def test_young_daly_interval_minimizes_the_overhead():
    c, lam = 0.05, 0.01
    tau = young_interval(c, lam)
    assert tau == pytest.approx(math.sqrt(2 * c / lam))
    best = overhead_fraction(c, 0.3, lam, tau)
    assert best == pytest.approx(math.sqrt(2 * c * lam) + lam * 0.3)
    for other in (tau * 0.5, tau * 0.8, tau * 1.25, tau * 2):
        assert overhead_fraction(c, 0.3, lam, other) > best


def test_spot_overhead_closed_form_and_k_instances_fail_k_times_as_often():
    states = state_bytes(resolve_model("8B"), "full")  # 128 GB
    one = spot_overhead(hazard=0.01, hazard_source="t", instances=1, checkpoint_bytes=states)
    c = states / 1e9 / 3600  # 1 GB/s per instance
    assert one.checkpoint_hours == pytest.approx(c)
    r = defaults.RESTART_HOURS.value + c
    assert one.overhead == pytest.approx(math.sqrt(2 * c * 0.01) + 0.01 * r)
    four = spot_overhead(hazard=0.01, hazard_source="t", instances=4, checkpoint_bytes=states)
    c4 = c / 4
    assert four.overhead == pytest.approx(math.sqrt(2 * c4 * 0.04) + 0.04 * (defaults.RESTART_HOURS.value + c4))


def test_hazard_from_aws_buckets():
    assert hazard_from_bucket(5, 10) == pytest.approx(-math.log(1 - 0.075) / 730)
    assert hazard_from_bucket(20, 0) == pytest.approx(-math.log(1 - 0.30) / 730)  # open top bucket: 20-40 %


def test_spot_savings_against_the_same_instance_on_demand_with_advisor_hazard():
    offers = [offer(price=40.0), offer(pricing="spot", price=16.0)]
    risk = {("aws", "us-east-1", "p4de.24xlarge"): (5.0, 10.0)}
    plan = build_plan(JOB, offers, GPUS, Constraints(max_gpus=8), spot_risk=risk)
    rows = {r["pricing"]: r for r in plan.options.iter_rows(named=True)}
    spot, od = rows["spot"], rows["on_demand"]
    over = spot_overhead(hazard=hazard_from_bucket(5, 10), hazard_source="", instances=1,
                         checkpoint_bytes=state_bytes(JOB.model, "full"))  # fmt: skip
    assert spot["wall_expected"] == pytest.approx(od["wall_expected"] * over.factor)
    assert spot["savings_usd"] == pytest.approx(od["cost_expected"] - spot["cost_expected"])
    assert spot["on_demand_cost_usd"] == pytest.approx(od["cost_expected"])
    assert spot["added_hours"] == pytest.approx(od["wall_expected"] * over.overhead)
    assert "Spot Advisor" in spot["hazard_source"]


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
    assert set(only_spot.options["pricing"]) == {"interruptible"}
    # a marketplace group with 3 listings cannot be rented 4 times over
    assert only_spot.options["instances"].max() == 2


def test_budget_filter_and_pareto_marking():
    offers = [offer(price=40.0), offer(provider="lambda", instance="gpu_8x_h100_sxm5", gpu="H100-SXM", price=24.0,
                                       region="us-west-1")]  # fmt: skip
    plan = build_plan(JOB, offers, GPUS, Constraints(max_gpus=64))
    frame = plan.options
    assert frame["cost_expected"].is_sorted()
    for row in frame.iter_rows(named=True):
        dominated = (
            frame.filter(
                (frame["cost_expected"] <= row["cost_expected"]) & (frame["wall_expected"] < row["wall_expected"])
            ).height
            > 0
        )
        assert row["pareto"] == (not dominated)
    cap = float(frame["cost_expected"][0]) * 1.01
    kept = build_plan(JOB, offers, GPUS, Constraints(budget_usd=cap, max_gpus=64)).options
    assert kept.height == frame.filter(frame["cost_expected"] <= cap).height < frame.height
    assert kept["cost_expected"].max() <= cap


def test_offers_that_cannot_hold_the_job_are_dropped_with_the_reason():
    offers = [offer(provider="vastai", instance="RTX-4090x1.verified.datacenter", gpu="RTX-4090", count=1,
                    region="US", price=0.4, offer_count=100)]  # fmt: skip
    big = Job(resolve_model("llama3-70b"), 1e12)
    with pytest.raises(NoOptions, match="no offer can hold the job"):
        build_plan(big, offers, GPUS, Constraints(max_gpus=8))
    fractional = [offer(provider="azure", instance="Standard_NV6ads_A10_v5", gpu="A10", count=1 / 6, price=0.45)]
    with pytest.raises(NoOptions):
        build_plan(JOB, fractional, GPUS, Constraints())


def test_breakeven_identity_and_values():
    h100 = GPUS.resolve("H100")
    result = breakeven(Inputs(gpu=h100, count=8, rent_usd_per_gpu_hour=2.5, rent_source="test"))
    capex = 30000 * 8 * (1 + defaults.SERVER_SHARE.value)
    assert result.capex_usd == pytest.approx(capex)
    kw = 700 * 8 * defaults.SERVER_POWER_OVERHEAD.value / 1000
    opex = kw * 1.3 * 0.12 + kw * 150 * 12 / (8760 * 0.6)
    assert result.opex_usd_per_hour == pytest.approx(opex)
    assert result.rent_usd_per_hour == pytest.approx(20.0)
    assert result.break_even_hours * (result.rent_usd_per_hour - result.opex_usd_per_hour) == pytest.approx(
        capex * (1 - 0.2)
    )
    assert result.break_even_utilization == pytest.approx(result.break_even_hours / (4 * 8760))
    assert result.months_to_break_even == pytest.approx(result.break_even_hours / (0.6 * 730))
    cheap = breakeven(Inputs(gpu=h100, count=8, rent_usd_per_gpu_hour=0.3, rent_source="test"))
    assert cheap.break_even_hours is None and cheap.assumptions["never"]
    assert jobs_to_pay_off(result, 100.0, 2000.0) == pytest.approx(
        math.ceil(capex * 0.8 / (2000 - opex * 100) * 10) / 10
    )


def test_breakeven_rejects_bad_values_and_unknown_prices():
    h100 = GPUS.resolve("H100")
    for bad in ({"utilization": 1.5}, {"pue": 0.9}, {"count": 0}, {"residual": -0.1}, {"life_years": 0}):
        with pytest.raises(UsageError):
            breakeven(Inputs(**{"gpu": h100, "count": 8, "rent_usd_per_gpu_hour": 2.0, "rent_source": "t", **bad}))
    with pytest.raises(UsageError, match="--server-cost"):
        breakeven(Inputs(gpu=GPUS.resolve("H100-PCIe"), count=8, rent_usd_per_gpu_hour=2.0, rent_source="t"))


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
    assert data["job"]["flops"] == pytest.approx(4.8e21)
    assert data["prices_as_of"].startswith("2026-11-20")
    option = data["options"][0]
    keys = {"provider", "instance_type", "region", "gpu", "gpus_per_instance", "instances", "pricing",
            "usd_per_instance_hour", "wall_hours", "cost_usd", "on_demand_cost_usd", "savings_usd", "pareto",
            "notes"}  # fmt: skip
    assert keys <= set(option)
    costs = [o["cost_usd"]["expected"] for o in data["options"]]
    assert costs == sorted(costs)
    o = option
    assert o["cost_usd"]["expected"] == pytest.approx(
        o["wall_hours"]["expected"] * o["usd_per_instance_hour"] * o["instances"]
    )
    assert data["options"][0]["pareto"] is True


def test_cli_plan_bad_input_is_one_line(cli_env):
    for args, code in (
        (["--deadline", "tomorrow"], 2),
        (["--gpu", "H1000"], 2),
        (["--provider", "nosuch"], 1),
        (["--tokens", "100Q"], 2),
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
