"""The published MI300X training benchmarks behind the CDNA 3 ROCm factor (``mfu.AMD_FACTOR["CDNA 3"]``).

Why a module: CDNA 3 has no published whole training run with a duration, so no calibration run checks its factor.
What stands behind it is a handful of short benchmarks (a few steps, or MLPerf's minutes to a target), each measured
on MI300X and on an NVIDIA GPU running the same workload, by the same source. Kept here with their sources so that a
test re-derives the factor and its range from them, as the CDNA 2 factor is re-derived from AMD-OLMo's rate.

The factor means what CDNA 2's does (mfu.py docstring): the MFU measured on the AMD GPU over what this model expects of
the same job on NVIDIA-class software. With an NVIDIA measurement of the same workload the stack, the batch and the
goodput cancel, and

    factor = (MI300X share of its dense peak / NVIDIA share of its peak) / (the model's ratio of the two, factor aside)

where the model's ratio is its bandwidth and small-model terms (``realized_mfu`` on one node, tuned stack). One figure
has no NVIDIA twin from its source: it is set against the model's own expectation of the job (``AnchoredBenchmark``),
as AMD-OLMo's is.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer import measured as measured_model
from optimizer import mfu as mfu_model
from warehouse.gpus import GpuCatalog, GpuSpec

NODE_GPUS = 8  # every benchmark below ran on one 8-GPU server (or one GPU of it)


@dataclass(frozen=True, slots=True)
class PairedBenchmark:
    """One workload timed on MI300X and on an NVIDIA GPU by the same source. ``mi300x`` and ``reference`` are in the
    same unit, larger is faster (TFLOP/s per GPU, or 1 / minutes to train)."""

    name: str
    source: str
    date: str
    precision: str  # bf16 | fp8: the peak each share is read against
    active_params: float
    gpus: int
    mi300x: float
    reference_gpu: str
    reference: float
    note: str

    def factor(self, gpus: GpuCatalog) -> float:
        amd, nvidia = gpus.resolve("MI300X"), gpus.resolve(self.reference_gpu)
        shares = (self.mi300x / mfu_model.peak_flops(amd, self.precision)) / (
            self.reference / mfu_model.peak_flops(nvidia, self.precision)
        )
        return shares / model_ratio(amd, nvidia, self.active_params, self.gpus)


@dataclass(frozen=True, slots=True)
class AnchoredBenchmark:
    """A steady MI300X rate with no NVIDIA twin from its source, set against the model's expectation of the same job
    on NVIDIA-class software in ``stack`` (the class its setup reads as), a whole run being steady x GOODPUT."""

    name: str
    source: str
    date: str
    precision: str
    active_params: float
    gpus: int
    tflops_per_gpu: float  # model FLOPs with attention, as the source counts them
    stack: str
    note: str

    def factor(self, gpus: GpuCatalog) -> float:
        amd = gpus.resolve("MI300X")
        steady = self.tflops_per_gpu * 1e12 / mfu_model.peak_flops(amd, self.precision)
        mfu = _tuned(amd, self.active_params, self.gpus, self.stack)
        expected_whole_run = mfu.expected / mfu.factors["software"]
        return steady / (expected_whole_run / measured_model.GOODPUT)


def _tuned(gpu: GpuSpec, active_params: float, gpus: int, stack: str = "tuned") -> mfu_model.Mfu:
    return mfu_model.realized_mfu(gpu, active_params=active_params, gpus=gpus, gpus_per_node=NODE_GPUS, stack=stack)


def model_ratio(amd: GpuSpec, nvidia: GpuSpec, active_params: float, gpus: int) -> float:
    """The share of peak this model expects of ``amd`` over ``nvidia`` on the same job, the ROCm factor aside."""
    on_amd = _tuned(amd, active_params, gpus)
    return on_amd.expected / on_amd.factors["software"] / _tuned(nvidia, active_params, gpus).expected


MLPERF_V50 = "https://rocm.blogs.amd.com/artificial-intelligence/mlperf-training-v5.0/README.html"
SEMIANALYSIS = "https://github.com/ROCm/TransformerEngine/issues/{}"  # SemiAnalysis' runs behind its Dec 2024 article

PAIRED: tuple[PairedBenchmark, ...] = (
    PairedBenchmark(
        "MLPerf Training v5.0 Llama 2 70B LoRA, 8 GPUs, minutes to target (IDs 5.0-0027 and 4.1-0050)",
        MLPERF_V50, "2025-06-04", "fp8", 70e9, 8, 1 / 29.25, "H100", 1 / 27.93,
        "fine-tuning, not pre-training; tuned by each vendor; the MI300X entry recomputes activations to fit one GPU",
    ),
    PairedBenchmark(
        "GPT-2 XL 1.5B, 1 GPU, batch 8, TFLOP/s (MI300X after AMD's fused-attention fix)",
        SEMIANALYSIS.format(72), "2024-10-17", "fp8", 1.5e9, 1, 250.0, "H100", 345.41,
        "at H100's best batch (14: 490 TFLOP/s) the factor would be 0.36",
    ),
    PairedBenchmark(
        "GPT-2 1.5B, 8 GPUs DDP, TFLOP/s (MI300X with AMD's unmerged Transformer Engine PR #66)",
        SEMIANALYSIS.format(76), "2024-10-17", "fp8", 1.5e9, 8, 324.0, "H100", 398 / 0.78,
        "H100's figure inferred: MI300X 'needs 398 TFLOP/s' to match H100 per TCO at 78 % of its TCO",
    ),
    PairedBenchmark(
        "8B dense, 1 GPU, BF16 training against H200 (H200 1.32-1.40x: the middle, 1.36)",
        "https://github.com/alpharomercoma/MI300X-vs-H200 (REPORT.md)", "2026", "bf16", 8e9, 1, 1.0, "H200", 1.36,
        "one person's benchmark; 0.61-0.64 over the published spread",
    ),
)  # fmt: skip

ANCHORED: tuple[AnchoredBenchmark, ...] = (
    AnchoredBenchmark(
        "Llama 3 8B, 8 GPUs FSDP, torch.compile (public PyTorch nightly), batch 4",
        SEMIANALYSIS.format(79), "2024-10-15", "bf16", 8e9, 8, 410.42, "own-script",
        "a benchmark script with fused kernels on plain FSDP: own-script (0.68; as tuned 0.71, typical 0.79)",
    ),
)  # fmt: skip


def estimates(gpus: GpuCatalog) -> dict[str, float]:
    """Each benchmark's factor, by name."""
    benchmarks: tuple[PairedBenchmark | AnchoredBenchmark, ...] = (*PAIRED, *ANCHORED)
    return {b.name: b.factor(gpus) for b in benchmarks}
