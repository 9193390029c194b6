"""What a sharded job sends between servers each micro-batch, and the share of its speed the servers' network lets
it keep.

costopt shards every job ZeRO-3/FSDP-style across all its GPUs (``optimizer.memory``). Each micro-batch then gathers
the weights twice (forward and backward pass) and reduce-scatters the gradients once: 2 + 2 + 2 bytes per parameter in
full bf16 training (``TRAFFIC_BYTES_PER_PARAM``; a reduction in fp32 would move 8). A ring collective brings each byte
into a server once, whatever its number of GPUs (those inside share it over NVLink or PCIe), so a server's network
carries that traffic times (servers - 1) / servers per micro-batch while its GPUs compute the micro-batch. With the
traffic prefetched behind the compute, the best case FSDP and ZeRO-3 aim at, a micro-batch takes the longer of the two:
the job keeps compute time / network time of its speed where the network is the slower (``bandwidth_factor``).

Why it is needed: the between-node term (``optimizer.mfu.NODE_PENALTY``) grows with the number of servers only, so 64
single-H100 VMs on 100 Gbit/s each (p5.4xlarge) were costed within 3 % of 8 HGX servers with 3,200 Gbit/s each
(p5.48xlarge). For an 8B model at 2,048 tokens a micro-batch, a p5.4xlarge moves ~47 GB in ~3.8 s against ~0.33 s of
compute; a p5.48xlarge moves the same in ~0.12 s.

Arithmetic, not fitted: the calibration's published runs state no bandwidth, so the term is charged where a server's
bandwidth is known (plan: the instance's, optimizer/data/cluster_networks.csv) and, with none known, only for a GPU
alone in its server on a cluster network, at ``defaults.LONE_GPU_RDMA_GBPS`` (no calibration run was such a server).
Servers of several GPUs with no stated bandwidth keep the calibrated between-node term alone, as the calibration's runs
across servers (2-16 GPUs each) did; over Ethernet no bandwidth is assumed and only its stated guess applies (README,
*What the estimates assume*).
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer import defaults
from optimizer.memory import LORA_TRAINABLE_FRACTION
from optimizer.models import ModelSpec

GATHERS = 2  # the weights are all-gathered for the forward pass and again for the backward pass
GATHERED_BYTES_PER_PARAM = {"full": 2.0, "lora": 2.0, "qlora": 0.5}  # bf16 weights; QLoRA's 4-bit NF4 weights
GRADIENT_BYTES_PER_PARAM = 2.0  # the reduce-scatter in bf16; LoRA and QLoRA reduce only their adapters' gradients
TRAFFIC_BYTES_PER_PARAM = {
    method: GATHERS * weights + GRADIENT_BYTES_PER_PARAM * (1.0 if method == "full" else LORA_TRAINABLE_FRACTION)
    for method, weights in GATHERED_BYTES_PER_PARAM.items()
}


@dataclass(frozen=True, slots=True)
class Bandwidth:
    """One server's network bandwidth to the others and where the figure comes from."""

    gbps: float
    source: str


@dataclass(frozen=True, slots=True)
class Traffic:
    """What one micro-batch asks of a server's network: the bytes it carries (before the ring's (n - 1) / n) over
    ``bandwidth``, and the model FLOPs each GPU computes meanwhile."""

    bandwidth: Bandwidth
    bytes: float
    flops: float


def traffic_bytes(model: ModelSpec, method: str) -> float:
    """ZeRO-3 bytes of one micro-batch: every parameter's gathered weights twice, plus the trained gradients once.

    A mixture-of-experts model counts its active parameters only: its experts stay where they are (expert
    parallelism) and the tokens travel to them, which the fitted mixture-of-experts term already charges; gathering
    all of DeepSeek-V3's 671B parameters for every micro-batch is not how any such run was trained.
    """
    params = model.active_params if model.moe else model.total_params
    return TRAFFIC_BYTES_PER_PARAM[method] * params


def default_bandwidth(fabric: str, gpus_per_server: int) -> Bandwidth | None:
    """The bandwidth assumed where nothing states one: ``LONE_GPU_RDMA_GBPS`` for a GPU alone in its server on a
    cluster network; none for a server of several GPUs (the calibrated between-node term covers them) or over Ethernet
    (its scale-out term is a stated guess that the calibration cannot check)."""
    if fabric != "rdma" or gpus_per_server != 1:
        return None
    lone = defaults.LONE_GPU_RDMA_GBPS
    return Bandwidth(lone.value, lone.source)


def bandwidth_factor(traffic: Traffic, *, servers: int, flops_per_second: float) -> float:
    """compute / network time of one micro-batch, at most 1: the share of its speed a job across ``servers`` keeps
    when each GPU computes at ``flops_per_second`` and the network's time is not hidden behind it."""
    if servers <= 1 or traffic.bytes <= 0:
        return 1.0
    network = traffic.bytes * (servers - 1) / servers / (traffic.bandwidth.gbps * 1e9 / 8)
    compute = traffic.flops / flops_per_second
    return min(1.0, compute / network)
