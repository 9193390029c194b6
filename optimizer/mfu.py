"""Realized MFU: the share of a GPU's dense peak that a whole training run sustains.

Short benchmarks report 40-60 % MFU; whole published runs, which pay for restarts, evaluation,
checkpoints, stragglers and data stalls, sustain less. The model is a product of a few causes,
each a single stated constant, calibrated on published whole runs (optimizer/data/calibration_runs.csv,
report: ``python bench/calibration.py``):

    mfu = BASE                               whole-run MFU of a 7B+ dense model on A100-80GB nodes
        x (bandwidth per FLOP / A100's)^A    faster tensor cores outrun their memory: H100 has half
                                             the bytes per FLOP of A100 and sustains ~70 % of its MFU
        x min(1, (N_active / 7B)^G)          small models: thin matmuls and more non-matmul time
        x 1 / (1 + P x log2(GPUs per node))  only for PCIe-connected GPUs (no NVLink/NVSwitch)
        x 1 / (1 + S x log2(nodes))          gradient traffic and failures grow with the cluster;
                                             small on InfiniBand/EFA, large over plain Ethernet
        x MOE                                mixture-of-experts: all-to-all routing and imbalance
        x QLORA                              4-bit weights are dequantized on every matmul
        x AMD                                ROCm software maturity (no whole-run data: a stated guess)

FP8 is peak_fp8 x mfu x FP8_GAIN: published FP8 training runs 1.28-1.32x faster than BF16 at the
same scale (torchtitan Llama 3.1 8B: 8532 vs 6667 tokens/s/GPU; OLMo-core Llama 8B: 12500 vs 9500),
not the 2x of the datasheet.

The constants were chosen by a coarse grid search over BASE, A, G, MOE and S (four to five values
each) maximizing the share of calibration runs predicted within 0.8-1.25x: five global numbers for
30 runs, no per-run adjustment. The band: low and high MFU are the expected value x BAND_LOW and
x BAND_HIGH, asymmetric because real runs lose time (failed nodes, restarts, slow storage) far
more often than they beat a well-tuned estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from warehouse.gpus import GpuSpec

BASE = 0.50
REFERENCE_BYTES_PER_FLOP = 2039 / 312  # A100-80GB SXM: GB/s per dense BF16 TFLOPS
BANDWIDTH_EXPONENT = 0.5
REFERENCE_PARAMS = 7e9
SIZE_EXPONENT = 0.08
PCIE_PENALTY = 0.12
NODE_PENALTY = {"rdma": 0.01, "ethernet": 0.15}  # Ethernet: no calibration run, a stated guess
MOE = 0.80
QLORA = 0.70
AMD = 0.85
FP8_GAIN = 1.3
BAND_LOW = 0.59  # the slowest plausible run sustains this share of the expected MFU
BAND_HIGH = 1.29  # the fastest plausible run (asymmetric: runs go wrong more often than better)
FABRICS = tuple(NODE_PENALTY)


@dataclass(frozen=True, slots=True)
class Mfu:
    low: float
    expected: float
    high: float
    factors: dict[str, float]  # each cause's multiplier, for --explain and the JSON assumptions


def realized_mfu(
    gpu: GpuSpec,
    *,
    active_params: float,
    gpus: int,
    gpus_per_node: int,
    fabric: str = "rdma",
    moe: bool = False,
    method: str = "full",
    precision: str = "bf16",
) -> Mfu:
    """Expected whole-run MFU with its band, relative to the dense peak of ``precision``."""
    per_node = max(1, min(gpus, gpus_per_node))
    nodes = math.ceil(gpus / per_node)
    factors = {
        "base": BASE,
        "bandwidth": (gpu.memory_bandwidth_gb_s / gpu.bf16_tflops / REFERENCE_BYTES_PER_FLOP) ** BANDWIDTH_EXPONENT,
        "model_size": min(1.0, (active_params / REFERENCE_PARAMS) ** SIZE_EXPONENT),
        "intra_node": 1.0,
        "nodes": 1.0 / (1.0 + NODE_PENALTY[fabric] * math.log2(nodes)),
    }
    if per_node > 1 and gpu.intra_node == "pcie":
        factors["intra_node"] = 1.0 / (1.0 + PCIE_PENALTY * math.log2(per_node))
    elif per_node > 2 and gpu.intra_node == "nvlink_pair":
        factors["intra_node"] = 1.0 / (1.0 + PCIE_PENALTY * math.log2(per_node / 2))
    if moe:
        factors["moe"] = MOE
    if method == "qlora":
        factors["qlora"] = QLORA
    if gpu.vendor.upper() == "AMD":
        factors["software"] = AMD
    if precision == "fp8":
        assert gpu.fp8_tflops is not None
        factors["fp8"] = FP8_GAIN * gpu.bf16_tflops / gpu.fp8_tflops
    expected = min(math.prod(factors.values()), 0.75)
    return Mfu(low=expected * BAND_LOW, expected=expected, high=min(expected * BAND_HIGH, 0.85), factors=factors)


def peak_flops(gpu: GpuSpec, precision: str) -> float:
    """Dense peak FLOP/s per GPU for the precision (FP8 only where the GPU has it)."""
    tflops = gpu.fp8_tflops if precision == "fp8" else gpu.bf16_tflops
    assert tflops is not None
    return tflops * 1e12
