"""The slowest link a GPU's share of the ZeRO-3 traffic crosses: PCIe inside a server, a lone GPU's PCIe path to its
NIC, and the servers' network bandwidth (optimizer/mfu.py ``slowest_link``, optimizer/network.py)."""

from __future__ import annotations

import math

import pytest

from optimizer import calibration, network
from optimizer.estimate import Job, estimate
from optimizer.fabric import bandwidth_of
from optimizer.mfu import PCIE_PENALTY, realized_mfu
from optimizer.models import resolve_model
from warehouse.gpus import catalog

GPUS = catalog()
JOB = Job(resolve_model("8B"), 100e9)  # a bare count: 2,048-token sequences, one per micro-batch


@pytest.mark.parametrize("gpu", ["H100-PCIe", "RTX-4090", "A100-80GB-PCIe", "L40S"])
@pytest.mark.parametrize("gpus", [2, 4, 8])
@pytest.mark.parametrize("fabric", ["rdma", "ethernet"])
def test_one_gpu_per_server_is_never_faster_than_the_same_gpus_in_one_pcie_server(gpu, gpus, fabric):
    """8 H100 PCIe one per server over RDMA were estimated 24 % faster (36.7 d) than in one PCIe server (48.4 d)."""
    spec = GPUS.resolve(gpu)
    together = estimate(JOB, spec, gpus, gpus_per_node=gpus, fabric=fabric)
    apart = estimate(JOB, spec, gpus, gpus_per_node=1, fabric=fabric)
    assert apart.wall_hours.expected > together.wall_hours.expected


def test_a_gpu_alone_in_its_server_is_charged_at_least_the_pcie_term_of_all_the_jobs_gpus():
    """With no bandwidth known the lone GPUs' floor is the PCIe server's own term: 1 / (1 + 0.12 x log2 8)."""
    h100 = GPUS.resolve("H100-SXM")
    apart = realized_mfu(h100, active_params=8e9, gpus=8, gpus_per_node=1)
    together = realized_mfu(GPUS.resolve("H100-PCIe"), active_params=8e9, gpus=8, gpus_per_node=8)
    assert apart.factors["slowest_link"] == pytest.approx(1 / (1 + 0.12 * 3))
    assert together.factors["slowest_link"] == pytest.approx(1 / (1 + 0.12 * 3))
    assert PCIE_PENALTY == 0.12
    in_one_hgx = realized_mfu(h100, active_params=8e9, gpus=8, gpus_per_node=8)
    assert in_one_hgx.factors["slowest_link"] == 1.0


def test_the_network_term_is_compute_over_network_time_of_a_micro_batch():
    """64 servers of 100 Gbit/s: 48 GB x 63/64 in 3.78 s against 1e14 FLOPs at 3e14 FLOP/s (0.333 s)."""
    traffic = network.Traffic(network.Bandwidth(100, "test"), bytes=48e9, flops=1e14)
    factor = network.bandwidth_factor(traffic, servers=64, flops_per_second=3e14)
    assert factor == pytest.approx((1e14 / 3e14) / (48e9 * 63 / 64 / 12.5e9))
    assert factor == pytest.approx(0.0882, abs=1e-4)
    assert network.bandwidth_factor(traffic, servers=1, flops_per_second=3e14) == 1.0
    fast = network.Traffic(network.Bandwidth(3200, "test"), bytes=48e9, flops=1e14)
    assert network.bandwidth_factor(fast, servers=8, flops_per_second=3e14) == 1.0  # 0.105 s of network: hidden


def test_zero3_traffic_per_parameter_by_method():
    """Two bf16 gathers and a bf16 reduce-scatter; LoRA and QLoRA reduce only their adapters (0.5 % of the weights)."""
    expected = {"full": 6.0, "lora": 4.01, "qlora": 1.01}
    assert {k: round(v, 6) for k, v in network.TRAFFIC_BYTES_PER_PARAM.items()} == expected
    dense = resolve_model("8B")
    assert network.traffic_bytes(dense, "full") == pytest.approx(6 * dense.total_params)
    moe = resolve_model("deepseek-v3")
    assert moe.moe
    assert network.traffic_bytes(moe, "full") == pytest.approx(6 * moe.active_params)


def test_a_single_h100_vm_cluster_pays_for_its_100_gbit_network():
    """p5.4xlarge x64 was costed 3 % from p5.48xlarge x8. Hand arithmetic for 8B at 2,048 tokens a micro-batch:
    6 x 8e9 x 63/64 = 4.725e10 bytes through 12.5 GB/s = 3.78 s; 5.17e10 FLOPs a token x 2,048 = 1.059e14 FLOPs at
    989 TFLOPS x 0.54 x 0.9 x 0.674 x 0.981 (the compute's factors) = 0.335 s; 0.335 / 3.78 = 0.0886."""
    h100 = GPUS.resolve("H100-SXM")
    p5_4xl = bandwidth_of("aws", "p5.4xlarge")
    assert p5_4xl is not None and p5_4xl.gbps == 100
    apart = estimate(JOB, h100, 64, gpus_per_node=1, fabric="rdma", bandwidth=p5_4xl)
    assert apart.factors["slowest_link"] == pytest.approx(0.0886, abs=5e-4)
    hgx = estimate(JOB, h100, 64, gpus_per_node=8, fabric="rdma", bandwidth=bandwidth_of("aws", "p5.48xlarge"))
    assert hgx.factors["slowest_link"] == 1.0
    ratio = apart.wall_hours.expected / hgx.wall_hours.expected
    nodes = (1 + 0.01 * math.log2(8)) / (1 + 0.01 * math.log2(64))  # the between-node term, as before
    assert ratio == pytest.approx(1 / 0.0886 * (1 / nodes), rel=1e-2)
    assert apart.as_dict()["assumptions"]["server_network_gbps"] == 100


def test_bigger_micro_batches_cover_the_network_time_with_more_compute():
    h100 = GPUS.resolve("H100-SXM")
    link = network.Bandwidth(100, "test")
    one = estimate(JOB, h100, 64, gpus_per_node=1, bandwidth=link)
    four = estimate(Job(JOB.model, JOB.tokens, micro_batch=4), h100, 64, gpus_per_node=1, bandwidth=link)
    assert four.factors["slowest_link"] == pytest.approx(4 * one.factors["slowest_link"])


@pytest.mark.parametrize(
    ("provider", "instance", "gbps"),
    [
        ("aws", "p5.4xlarge", 100),  # one H100
        ("aws", "p5.48xlarge", 3200),
        ("aws", "p5en.48xlarge", 3200),
        ("aws", "p4d.24xlarge", 400),
        ("aws", "p3dn.24xlarge", None),  # the file states no figure: plan assumes the default per GPU
        ("azure", "Standard_ND96isr_H100_v5", None),
        ("lambda", "gpu_8x_h100_sxm", None),
    ],
)
def test_the_servers_bandwidth_is_the_instance_sizes(provider, instance, gbps):
    found = bandwidth_of(provider, instance)
    assert (found.gbps if found is not None else None) == gbps


def test_estimate_says_where_its_servers_bandwidth_comes_from():
    h100 = GPUS.resolve("H100-SXM")
    lone = estimate(JOB, h100, 64, gpus_per_node=1, fabric="rdma").as_dict()["assumptions"]
    assert lone["server_network_gbps"] == 400
    assert lone["server_network_source"].startswith("assumption:")
    hgx = estimate(JOB, h100, 64, gpus_per_node=8, fabric="rdma").as_dict()["assumptions"]
    assert hgx["server_network_gbps"] is None  # the calibrated between-node term covers NVLink servers
    assert hgx["server_network_source"].startswith("not stated")
    ethernet = estimate(JOB, h100, 64, gpus_per_node=8, fabric="ethernet").as_dict()["assumptions"]
    assert ethernet["server_network_gbps"] is None
    one = estimate(JOB, h100, 8, gpus_per_node=8).as_dict()["assumptions"]
    assert one["server_network_gbps"] is None
    assert one["server_network_source"] == "one server: no network between servers"


def test_no_calibration_run_is_charged_a_network_it_did_not_state():
    """The calibration's runs state no bandwidth and none of its runs across servers had one GPU per server, so estimate
    (calibration.predict) charges them what the calibration's own path does: bench/calibration.py is unchanged."""
    spanning = [row for row in calibration.rows() if int(row["gpus"]) > int(row["gpus_per_node"])]
    assert len(spanning) > 90
    assert min(int(row["gpus_per_node"]) for row in spanning) >= 2
    for row in spanning:
        est = calibration.predict(row).estimate
        without = calibration.Case.of(row).mfu()  # the calibration's own path: no traffic, no network term
        assert est.factors == without.factors, row["run"]
