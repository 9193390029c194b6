"""plan prices a job across instances with each instance's own network (optimizer/data/cluster_networks.csv)."""

from __future__ import annotations

import pytest

from optimizer.estimate import Job
from optimizer.models import resolve_model
from optimizer.plan import Constraints, build_plan
from warehouse.gpus import catalog

GPUS = catalog()
JOB = Job(resolve_model("8B"), 100e9)


def offer(instance: str, count: int, price: float) -> dict:
    return {"provider": "aws", "region": "us-east-1", "instance_type": instance, "gpu": "H100-SXM", "gpu_count": count,
            "pricing": "on_demand", "usd_per_hour": price, "age_hours": 1.0, "source": "https://example/x",
            "observed_at": "2026-11-20"}  # fmt: skip


def test_64_single_h100_vms_are_not_costed_like_8_hgx_servers():
    """p5.4xlarge x64 was 75.2 h against p5.48xlarge x8's 73.1 h (3 % apart): 64 VMs of 100 Gbit/s each carry a
    micro-batch's ZeRO-3 traffic in ~3.8 s against ~0.33 s of compute (the network term 0.0886, test_mfu_network)."""
    plan = build_plan(JOB, [offer("p5.4xlarge", 1, 6.88), offer("p5.48xlarge", 8, 55.04)], GPUS,
                      Constraints(max_gpus=64))  # fmt: skip
    at_64 = {r["instance_type"]: r for r in plan.options if r["gpus_per_instance"] * r["instances"] == 64}
    single, hgx = at_64["p5.4xlarge"], at_64["p5.48xlarge"]
    assert (single["instances"], hgx["instances"]) == (64, 8)
    assert single["wall_expected"] / hgx["wall_expected"] == pytest.approx(11.7, rel=0.02)
    assert single["cost_expected"] > 10 * hgx["cost_expected"]
