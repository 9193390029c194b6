"""Realized MFU: the share of a GPU's dense peak that a whole training run sustains.

Short benchmarks report 40-60 % MFU; whole published runs, which pay for restarts, evaluation,
checkpoints, stragglers and data stalls, sustain less. The model is a product of a few causes,
each a single stated constant, calibrated on published whole runs (optimizer/data/calibration_runs.csv,
report: ``python bench/calibration.py``; the search behind the constants: ``python bench/fit_mfu.py``):

    mfu = BASE                               whole-run MFU of a dense model on A100-80GB nodes
        x (bandwidth per FLOP / A100's)^A    faster tensor cores outrun their memory: H100 has half
                                             the bytes per FLOP of A100 and sustains ~2/3 of its MFU
        x 1 / (1 + (T x GPUs / N_active)^2)  strong-scaling limit: a model spread below ~T active
                                             parameters per GPU has too little work per step to hide
                                             the per-step gradient synchronization (Llama 3 8B on
                                             8192 H100s ran at about 60 % of the MFU of Llama 3 70B)
        x 6/8 if every layer is recomputed   full activation recomputation runs each forward pass
                                             twice: 8.N.D FLOPs of work for 6.N.D of model FLOPs
                                             (``--recompute full``; the default, selective
                                             recomputation, costs a few per cent and is in BASE)
        x 1 / (1 + P x log2(GPUs per node))  only for PCIe-connected GPUs (no NVLink/NVSwitch)
        x 1 / (1 + S x log2(nodes))          gradient traffic and failures grow with the cluster;
                                             small on InfiniBand/EFA, large over plain Ethernet
        x MOE                                mixture-of-experts: all-to-all routing and imbalance
        x QLORA                              4-bit weights are dequantized on every matmul
        x AMD                                ROCm software maturity (no whole-run data: a stated guess)

No separate small-model penalty: once the runs that recomputed every layer are charged for it
(BLOOM, GPT-NeoX-20B, Pythia, BloombergGPT, MPT-7B: their published configs), the 0.4-3B runs
sustain the same MFU as 7-70B ones, within the scatter. Benchmarks on one software stack agree
(llm-foundry's table: flat from 1B to 70B on A100); only at ~125M does it drop, and there the two
published whole runs of GPT-2 124M disagree by 2x (nanoGPT vs llm.c), so no term can be fitted.

FP8 is peak_fp8 x mfu x FP8_GAIN: published FP8 training runs 1.28-1.32x faster than BF16 at the
same scale (torchtitan Llama 3.1 8B: 8532 vs 6667 tokens/s/GPU; OLMo-core Llama 8B: 12500 vs 9500),
not the 2x of the datasheet.

BASE, A, T and MOE (``Fit``) are chosen by a coarse grid search (``optimizer.calibration.search``)
maximizing the share of calibration runs predicted within 0.8-1.25x: four global numbers for 44
runs, no per-run adjustment. Leave-one-out cross-validation measures them on runs they were not
fitted to (``bench/fit_mfu.py``). RECOMPUTE_FULL is arithmetic, not fitted; S for InfiniBand matches
the Llama 3 report's ~90 % effective training time on 16K GPUs; P, QLORA and AMD are stated guesses.
The band: low and high MFU are the expected value x band_low and x band_high, asymmetric because real
runs lose time (failed nodes, restarts, slow storage) far more often than they beat a good estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from warehouse.gpus import GpuSpec

REFERENCE_BYTES_PER_FLOP = 2039 / 312  # A100-80GB SXM: GB/s per dense BF16 TFLOPS
PCIE_PENALTY = 0.12
NODE_PENALTY = {"rdma": 0.01, "ethernet": 0.15}  # Ethernet: no calibration run, a stated guess
RECOMPUTE_FULL = 6 / 8  # full activation recomputation: one more forward pass, 8.N.D FLOPs for 6.N.D of model work
RECOMPUTE = ("selective", "full")
QLORA = 0.70
AMD = 0.85
FP8_GAIN = 1.3
FABRICS = tuple(NODE_PENALTY)


@dataclass(frozen=True, slots=True)
class Fit:
    """The only numbers chosen by looking at the calibration runs; the rest of this module is
    arithmetic or a stated guess. ``python bench/fit_mfu.py`` searches them and cross-validates."""

    base: float  # whole-run MFU of a dense model on A100-80GB nodes
    bandwidth_exponent: float  # how strongly bytes per FLOP carry over to MFU
    thin_params_per_gpu: float  # strong-scaling limit: near this many active parameters per GPU, sync dominates
    moe: float  # mixture-of-experts routing and imbalance
    band_low: float  # the slowest plausible run sustains this share of the expected MFU
    band_high: float  # the fastest plausible run (asymmetric: runs go wrong more often than better)


FITTED = Fit(base=0.52, bandwidth_exponent=0.6, thin_params_per_gpu=7e5, moe=0.75, band_low=0.59, band_high=1.29)


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
    recompute: str = "selective",
    fit: Fit = FITTED,
) -> Mfu:
    """Expected whole-run MFU with its band, relative to the dense peak of ``precision``."""
    per_node = max(1, min(gpus, gpus_per_node))
    nodes = math.ceil(gpus / per_node)
    factors = {
        "base": fit.base,
        "bandwidth": (gpu.memory_bandwidth_gb_s / gpu.bf16_tflops / REFERENCE_BYTES_PER_FLOP) ** fit.bandwidth_exponent,
        "intra_node": 1.0,
        "nodes": 1.0 / (1.0 + NODE_PENALTY[fabric] * math.log2(nodes)),
    }
    factors["scale_out"] = 1.0 / (1.0 + (fit.thin_params_per_gpu * gpus / active_params) ** 2)
    if recompute == "full":
        factors["recompute"] = RECOMPUTE_FULL
    if per_node > 1 and gpu.intra_node == "pcie":
        factors["intra_node"] = 1.0 / (1.0 + PCIE_PENALTY * math.log2(per_node))
    elif per_node > 2 and gpu.intra_node == "nvlink_pair":
        factors["intra_node"] = 1.0 / (1.0 + PCIE_PENALTY * math.log2(per_node / 2))
    if moe:
        factors["moe"] = fit.moe
    if method == "qlora":
        factors["qlora"] = QLORA
    if gpu.vendor.upper() == "AMD":
        factors["software"] = AMD
    if precision == "fp8":
        assert gpu.fp8_tflops is not None
        factors["fp8"] = FP8_GAIN * gpu.bf16_tflops / gpu.fp8_tflops
    expected = min(math.prod(factors.values()), 0.75)
    high = min(expected * fit.band_high, 0.85)
    return Mfu(low=expected * fit.band_low, expected=expected, high=high, factors=factors)


def peak_flops(gpu: GpuSpec, precision: str) -> float:
    """Dense peak FLOP/s per GPU for the precision (FP8 only where the GPU has it)."""
    tflops = gpu.fp8_tflops if precision == "fp8" else gpu.bf16_tflops
    assert tflops is not None
    return tflops * 1e12
