"""Realized MFU: the share of a GPU's dense peak that a whole training run sustains.

Short benchmarks report 40-60 % MFU; whole published runs, which pay for restarts, evaluation,
checkpoints, stragglers and data stalls, sustain less, and how much less depends most on who runs the
job with what software. The model is a product of a few causes, each a single stated constant,
calibrated on published whole runs (optimizer/data/calibration_runs.csv, report:
``python bench/calibration.py``; the search behind the constants: ``python bench/fit_mfu.py``):

    mfu = BASE                                 whole-run MFU of a dense model on A100-80GB nodes with a
                                               tuned open framework (GPT-NeoX, llm-foundry, nanotron...)
        x STACK[--stack]                       the software stack and the team behind it (STACKS below):
                                               recipe, large-lab, tuned (1), own-script, typical (the
                                               default), basic; or,
                                               with --measured, the user's own throughput sets it
                                               (optimizer/measured.py)
        x (bandwidth per FLOP / A100's)^A      faster tensor cores outrun their memory: H100 has half
                                               the bytes per FLOP of A100 and sustains ~0.67 of its MFU
        x 1 / (1 + peak/312 x N_s / N)        small matrices: below ~1B parameters the memory-bound
                                               work (norms, activations, softmax, optimizer) and kernel
                                               launches no longer hide behind the matmuls; worse on a
                                               faster GPU. Stated from llm-foundry's throughput tables
                                               (A100: 125M at 0.70x the MFU of 7B; H100: 1.3B at 0.87x
                                               of 7B): N_s = 5e7, overhead ~ 1/N fits them best
        x (W + A) / (W + C x A)                attention runs slower than dense matmuls: A is the
                                               attention share of the FLOPs (12.L.d.S per token, grows
                                               with the sequence length), C its relative cost
        x OLDER on Volta/Turing                no FlashAttention-2 (it needs Ampere), no bf16 (fp16 with
                                               loss scaling), older kernels. Stated at 0.55: Megatron-LM
                                               sustained ~30 % of V100's peak (2019 paper: 39 of 125
                                               TFLOPS on one GPU) against ~52 % of A100's (2021 paper:
                                               163 of 312), and V100's bandwidth term is ~1.06
        x 1 / (1 + T x GPUs / N_active)        strong-scaling limit, for jobs on more than one node: the
                                               exposed gradient synchronization of a step costs a fixed
                                               time while each GPU's share of the step's compute shrinks
                                               as N_active / GPUs, so efficiency = compute / (compute +
                                               sync). Inside one NVLink node the all-reduce runs at NVLink
                                               speed behind the backward pass: no charge
        x 6/8 if every layer is recomputed     full activation recomputation runs each forward pass
                                               twice: 8.N.D FLOPs of work for 6.N.D of model FLOPs
        x the slowest link                     each GPU's share of the ZeRO-3 traffic crosses every link
                                               it has; the slowest one's term is charged (``slowest_link``):
            1 / (1 + P x log2(GPUs per node))  PCIe inside a server (no NVLink/NVSwitch);
            1 / (1 + P x log2(GPUs))           a GPU alone in its server, one per server: it reaches
                                               the others over its own PCIe link to the NIC and then the
                                               network, so it is never charged less than the same GPUs
                                               in one PCIe server;
            compute / network time             across servers: one micro-batch's ZeRO-3 traffic through
                                               a server's network against its compute, at most 1
                                               (optimizer/network.py: arithmetic, from the server's
                                               stated or assumed bandwidth)
        x 1 / (1 + S x log2(nodes))            gradient traffic and failures grow with the cluster;
                                               small on InfiniBand/EFA, large over plain Ethernet
        x MOE                                  mixture-of-experts: all-to-all routing and imbalance
        x QLORA                                4-bit weights are dequantized on every matmul
        x AMD[architecture]                    ROCm software maturity (below)

FP8 runs at BF16's tensor rate x the FP8 gain (``Fit.fp8_gain``, stated at 1.4): an FP8 run is not twice as fast as
BF16, as the datasheet's peaks would say, because attention, norms, the optimizer and communication stay in higher
precision and the casts cost time. Published benchmarks put it at 1.28-1.42x (torchtitan Llama 3.1 8B: 8532 vs
6667 tokens/s/GPU; OLMo-core Llama 8B: 12500 vs 9500; Megatron-LM with Transformer Engine, a 13B GPT on H100:
0.34 -> 0.24 s/step, NVIDIA/Megatron-LM issue #396). Round 3 stated 1.3 from the first two; searched on the whole
runs (Llama 4 Scout and Maverick, DeepSeek-V3) round 4 found 1.4, inside the benchmarks' range; round 5 states it
there, because two organisations' FP8 runs cannot set it in a cross-validation fold that holds one of them out
(cross-validated worth: README). fp16 on Ampere or newer costs nothing measurable (the Pythia suite ran
fp16 on A100 at the MFU of bf16 runs), so precision enters only through OLDER.

Which constants are fitted: the ``Fit`` fields the search sets (``optimizer.calibration.GRID``: BASE, A,
T, MOE, C and the five stack multipliers) and the bands (each stack class's own once three organisations stand
behind it: the 5-95 % spread of its runs' out-of-sample errors, labelled by what it held (``Fit.held``),
``calibration.calibrated``), chosen on the calibration runs with each run
predicted with the stack class its publication implies, a steady published figure against the steady part of the
prediction (``calibration.counted_share``; the loss: mean |log error| with each organisation, or each
organisation-and-class pair, weighing one, ``LOSS_WEIGHTING``, and each run's capped at ``LOSS_CAP``: the loss the
cross-validation picks), among
the constants that keep every whole run at or below the steady-state benchmarks llm-foundry's developers published for
the same jobs (``optimizer.calibration.below_benchmarks``: a whole run pays for restarts and stalls a benchmark does
not), and judged by leave-one-ORGANISATION-out cross-validation (an organisation's runs share a stack, so holding out
one run at a time flatters a model). Stated, not fitted, so that the whole-run data test them instead of absorbing
them: the small-matrix and older-GPU terms (benchmarks, above), the scale-out term's form (compute / (compute + sync),
only across nodes; its T is fitted), RECOMPUTE_FULL (arithmetic), S for InfiniBand (the
Llama 3 report's ~90 % effective training time on 16K GPUs), P, QLORA, the AMD factors, the FP8 gain and
MFU_CEILING. The FLOPs the MFU divides leave an untied input embedding out (a lookup: optimizer.compute).
The search's data leave C at 1 (no attention cost beyond its FLOPs is visible in whole runs; the
attention FLOPs themselves, which grow with the sequence length, are always counted when it is known). Round 30 of
issue 14 tried a cost for attention computed unfused (the scores written to memory: ``unfused_attention_cost``,
arithmetic that reproduces the FlashAttention paper's Megatron-LM baselines) on the runs labelled so; it lost four runs
inside out of sample and is kept only as an ablation (``Fit.unfused_attention``, off here). Round 36 tried the other
side: a fused causal kernel computes about half the scores PaLM's count charges (``CAUSAL_WORK``,
``Fit.causal_credit``); no loss of the menu put more runs within, and it is an ablation too.

AMD: a GPU is what the publication counts; for MI250/MI250X that is the OAM module of two GCDs (AMD's
and LUMI's model cards count modules; ROCm shows each GCD as a device). CDNA 2 (MI250, MI250X) is
AMD_FACTOR["CDNA 2"], stated from AMD's own steady-state throughput for AMD-OLMo-1B on 64 MI250
(12,200 tokens/s/GPU: 0.27 of peak with attention counted) against what this model expects of the same
job on NVIDIA-class software, a whole run's MFU being the steady one times the goodput (optimizer.measured:
0.9, range 0.75-1.0; a test checks the derivation). With round 24's constants the rate alone says 0.46 at the stated
goodput and 0.38-0.51 over its range (rounds 22-23's: 0.45 and 0.38-0.50, as with rounds 11-16 and 19-20's;
rounds 17-18 and 21: 0.46, 0.38-0.51; round 10's: 0.46, 0.39-0.52), and since round 17 the search keeps that job's
whole run at or below AMD's steady rate (``optimizer.calibration.below_benchmarks``), so the stated 0.5 stays inside
that range whatever constants the search picks. The whole CDNA 2 runs found (AMD-Llama-135m on 16 MI250,
OpenEuroLLM's 2B on 256 MI250X and, since round 15, its 0.7B on 64, AI2's Paloma 1B baseline on 64 MI250X; Motif's
2.6B, 0.35x, is a typical team's slow run) check it, they do not set it, and at 0.5 land at 1.04x, 1.00x, 1.12x and
0.96x of their published hours out of sample (rounds 40-43, 140-147 runs; round 32: 1.17x, 1.13x, 1.26x, 0.96x).
CDNA 3 (MI300X, MI325X) has no published whole run with a duration (Instella-3B gives none), so no whole run checks its
factor: AMD_FACTOR["CDNA 3"] is stated from published training benchmarks of a few steps, MI300X against H100 or H200 on
the same workload (``optimizer.rocm_benchmarks``, sources and dates there): the MLPerf Training v5.0 Llama 2 70B LoRA
entries (0.65), SemiAnalysis' 2024 single-node runs (GPT-2 1.5B FP8 on one GPU 0.51 and on eight 0.44; Llama 3 8B BF16
on eight, against this model's expectation, 0.65 since round 47's own-script multiplier, 0.68 before) and a 2026
single-GPU 8B BF16 comparison with H200 (0.62). Each is the MI300X's share of its peak over the NVIDIA GPU's, divided by
the ratio this model expects of the two without the factor (their bandwidth and small-model terms). They spread from
0.44 to 0.65 (FP8 lowest: ROCm's FP8 path was the less mature); 0.6 is stated, under their median 0.62 because
benchmarks leave out what a whole run on a younger stack also pays. That range is AMD_FACTOR_RANGE: where no whole run
checks a factor, the MFU band of such a GPU is widened to span it (``software_spread``), so the range of an MI300X row
says how little is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from optimizer import memory as memory_model
from optimizer import network as network_model
from warehouse.errors import UsageError
from warehouse.gpus import GpuSpec

REFERENCE_BYTES_PER_FLOP = 2039 / 312  # A100-80GB SXM: GB/s per dense BF16 TFLOPS
REFERENCE_TFLOPS = 312.0  # A100's dense BF16 peak: the small-matrix term scales with peak / this
SMALL_EXPONENT = 1.0  # llm-foundry's A100 and H100 tables (125M-70B): overhead ~ 1/N fits them best
PCIE_PENALTY = 0.12
NODE_PENALTY = {"rdma": 0.01, "ethernet": 0.15}  # Ethernet: no calibration run, a stated guess
RECOMPUTE_FULL = 6 / 8  # full activation recomputation: one more forward pass, 8.N.D FLOPs for 6.N.D of model work
RECOMPUTE = memory_model.RECOMPUTE  # the strategies (optimizer/memory.py)
QLORA = 0.70
OLDER_ARCHITECTURES = ("Volta", "Turing")  # no FlashAttention-2, no bf16
# How a calibration run computed attention (its ``attention`` column): "fused" (FlashAttention, xFormers, PyTorch SDPA,
# cuDNN, Transformer Engine: what every current framework does by default) or "unfused" (softmax(QK^T) by separate
# kernels, the scores written out: Megatron-LM before 2023, Hugging Face's "eager" attention, a hand-written softmax).
ATTENTION = ("fused", "unfused")
# The arithmetic of unfused attention's cost (``unfused_attention_cost``), per score element of one head, forward and
# backward, in bf16/fp16: QK^T writes 2 bytes; a fused scale-mask-softmax reads 2 and writes 2; dropout reads 2,
# writes 2 and a 1-byte mask; AV reads 2 (13 forward); backward, dP written 2, dropout 5, softmax reads P and dP and
# writes dS 6, dQ and dK read dS 4, dV reads P 2 (19).
UNFUSED_BYTES_PER_SCORE = 32
DENSE_STEP_MFU = 0.5  # the share of peak the rest of a step runs at (benchmarks: 40-60 %), against which the
ELEMENTWISE_BANDWIDTH = 0.8  # memory time is added; the share of its datasheet bandwidth an elementwise kernel reaches
# The FlashAttention paper (Dao et al. 2022, Table 2): days to train GPT-2 on 8 A100-40GB with Megatron-LM's unfused
# attention over the days with FlashAttention; a test checks the arithmetic against them, they do not set it.
FLASH_ATTENTION_PAPER_SLOWDOWN = {"GPT-2 small": 4.7 / 2.7, "GPT-2 medium": 11.5 / 6.9}
# Round 36 of issue 14's candidate (``Fit.causal_credit``): the share of PaLM's 12.L.d.S attention FLOPs a fused causal
# kernel (FlashAttention, xFormers, SDPA is_causal, cuDNN, Transformer Engine) computes: it skips the tiles above the
# diagonal, n(n + 1)/2 of n^2 (53 % at 2,048 tokens in 128-wide tiles; FlashAttention-2 counts a causal pass as half).
CAUSAL_WORK = 0.5
AMD_FACTOR = {"CDNA 2": 0.5, "CDNA 3": 0.6}  # see the module docstring; other AMD architectures: CDNA 3's
# The plausible range of a stated factor that no whole run checks (CDNA 3: the benchmarks' spread, module docstring);
# the band of a GPU with such a factor spans it. CDNA 2's is checked by its whole runs and has none.
AMD_FACTOR_RANGE = {"CDNA 3": (0.44, 0.68)}  # round 56 (0.44-0.72 in r54, 0.44-0.65 in r47-51): own-script moved
FP8_BENCHMARKS = (1.28, 1.42)  # published FP8/BF16 throughput ratios (docstring): the stated gain lies inside
# No published whole run sustained more (llm.c GPT-2 124M and Falcon-RW-1B: ~0.6 with attention); nanochat's d20 on
# 8 A100 (round 23) reads 0.66, but on a step-time total that leaves out its evaluations and compilation.
MFU_CEILING = 0.65
FABRICS = tuple(NODE_PENALTY)

# --stack: the software stack and the team behind it. The words are what a user recognises; the
# calibration file labels every published run with the class its publication implies, by the same words.
STACKS: dict[str, str] = {
    "recipe": "a published single-node speed recipe run with its own code (nanochat, llm.c and its PyTorch trainer, "
    "nanoGPT, llama2.c): compiled or hand-fused, tuned by its authors for time to a target on one node",
    "large-lab": "a lab's in-house stack at thousand-GPU scale (Meta, Microsoft, DeepSeek, TII; NVIDIA with "
    "Megatron-Core): kernels, parallelism and failure handling by a dedicated infrastructure team",
    "tuned": "an open framework run by the team that develops it, or its own maintained fork (EleutherAI with "
    "GPT-NeoX, MosaicML with llm-foundry, Hugging Face with nanotron, AI2 with OLMo-core, BigCode, llm.c): fused "
    "kernels, measured throughput",
    "own-script": "your team's own training script for the one model, with fused kernels (PyTorch SDPA or "
    "FlashAttention, torch.compile) on plain data parallelism (DDP, FSDP or ZeRO over a node or a few): no framework",
    "typical": "someone else's open framework (Megatron-LM, NeMo, DeepSpeed, GPT-NeoX, llm-foundry, torchtitan...) run "
    "as documented or adapted for the model, often on rented GPUs (the default)",
    "basic": "Hugging Face Trainer / Accelerate or a plain PyTorch DDP/FSDP script: little profiling, teams two times "
    "apart (a 2021 script without fused kernels, or a 2024 one with DeepSpeed and PyTorch fused attention)",
}
DEFAULT_STACK = "typical"
# Where a class's calibration runs cover less than the jobs a user may ask about, its range label says so
# (``range_claim``): every recipe run of the calibration file trained on one node (round 27; a test keeps it so), every
# own-script run on 16 GPUs or fewer (round 32; its test too).
CLASS_SCOPE: dict[str, str] = {
    "recipe": "its runs were all on one node of 1-8 GPUs, so across nodes it is extrapolated",
    "own-script": "its runs were all on 1-16 GPUs, so on more it is extrapolated",
}


@dataclass(frozen=True, slots=True)
class Fit:
    """The numbers the calibration search sets (``optimizer.calibration.GRID``) and the bands read off its
    residuals, plus two stated terms kept here so that an ablation can switch them off. The rest of this
    module is arithmetic or stated. ``python bench/fit_mfu.py`` runs the search and cross-validates it."""

    base: float  # whole-run MFU of a dense model on A100-80GB nodes, tuned open framework
    bandwidth_exponent: float  # how strongly bytes per FLOP carry over to MFU
    thin_params_per_gpu: float  # strong-scaling limit: near this many active parameters per GPU, sync dominates
    moe: float  # mixture-of-experts routing and imbalance
    fp8_gain: float  # stated (START): an FP8 run's throughput over the same run in BF16 (not the datasheet's 2x)
    small_params: float  # stated, not searched (ablations switch it off): an A100 model this size loses half its MFU
    attention_cost: float  # attention FLOPs cost this many times a dense matmul FLOP
    older: float  # stated, not searched: Volta/Turing (no FlashAttention-2, fp16 with loss scaling)
    large_lab: float  # stack multipliers relative to "tuned"
    typical: float
    basic: float
    band_low: float  # the slowest plausible run sustains this share of the expected MFU (all runs pooled)
    band_high: float  # the fastest plausible run (asymmetric: runs go wrong more often than better)
    # (stack, low, high): each class's own; shipped: read off out-of-sample residuals (calibration.calibrated)
    bands: tuple[tuple[str, float, float], ...] = ()
    # --measured: one team's run predicted from another of its runs (calibration.transfer_log_ratios); None: pooled
    measured_band: tuple[float, float] | None = None
    # The scale-out term's form, stated (ablations restore round 1's): 1 / (1 + (T x GPUs / N)^exponent), with or
    # without a charge inside a single node. Round 1 had exponent 2 on every job: a sharp knee that over-charged
    # Meta's 8B on 8,192 GPUs and under-charged 1-2B models on 256-512 GPUs.
    scale_out_exponent: float = 1.0
    scale_out_in_node: bool = False
    # What the shipped ranges HELD out of sample, the whole procedure cross-validated by organisation
    # (``calibration.cross_validated``, bench/calibration.py): (stack, runs inside, runs) for each class's own runs
    # and ("default", inside, runs) for every run predicted as the default class; ``measured_held`` the share of
    # --measured's same-team predictions inside its range. Set by hand from the bench with FITTED and checked by
    # tests/optimizer/test_calibration.py; empty for a Fit the search makes. Why (round 26 of issue 14): the range
    # was called "a 90 % range" while it held 84 % of the runs, so a label says what was measured, not what was aimed.
    held: tuple[tuple[str, int, int], ...] = ()
    measured_held: float | None = None
    recipe: float = 1.0  # the recipe class's multiplier, relative to "tuned" (round 27 of issue 14)
    own_script: float = 1.0  # the own-script class's multiplier, relative to "tuned" (round 32 of issue 14)
    # Round 30 of issue 14's candidate, not shipped: unfused attention's cost (``unfused_attention_cost``) on the
    # calibration runs labelled ``unfused``; bench/fit_mfu.py's ablation measures it (docs/calibration-history.md)
    unfused_attention: bool = False
    # Round 36 of issue 14's candidate: a fused run's attention charged at CAUSAL_WORK of its counted FLOPs (times
    # attention_cost); unfused and Volta/Turing runs as before
    causal_credit: bool = False
    # Round 52 of issue 14: whether the small-model term weighs on attention's FLOPs too (True, rounds 5-51) or on the
    # dense share only (False): a fused attention kernel's work grows with the sequence and pays no per-parameter
    # launches, norms or optimizer steps (``small_model_share``)
    small_model_attention: bool = True

    def stack(self, name: str) -> float:
        return {
            "recipe": self.recipe,
            "large-lab": self.large_lab,
            "tuned": 1.0,
            "own-script": self.own_script,
            "typical": self.typical,
            "basic": self.basic,
        }[name]

    def band(self, stack: str) -> tuple[float, float]:
        """The band of a stack class: its own where the calibration has organisations enough for one, else the
        default's; the pooled one for a Fit without bands.

        "typical", the default, also covers what the runs show when every one of them is assumed typical: a user
        who says nothing may be a tuned team or a basic one, and the band has to cover both.
        """
        for name, low, high in self.bands:
            if name == stack:
                return low, high
        return self.band_low, self.band_high

    def held_by(self, name: str) -> tuple[int, int] | None:
        """(inside, runs) out of sample for a class (or "default"), if the calibration measured it."""
        return next(((inside, runs) for key, inside, runs in self.held if key == name), None)

    def transfer_band(self) -> tuple[float, float]:
        """How far a team's whole run falls from what one of its other runs, carried over by the model, predicts."""
        return self.measured_band if self.measured_band is not None else (self.band_low, self.band_high)


FITTED = Fit(
    base=0.54,
    bandwidth_exponent=0.6,
    thin_params_per_gpu=5e5,
    moe=0.7,
    fp8_gain=1.4,
    small_params=5e7,
    attention_cost=1.0,
    older=0.55,
    large_lab=1.0,
    typical=0.9,
    basic=0.3,
    band_low=0.43,
    band_high=1.61,
    bands=(
        ("recipe", 0.44, 1.12),
        ("large-lab", 0.7, 1.28),
        ("tuned", 0.48, 1.38),
        ("own-script", 0.87, 2.13),
        ("typical", 0.31, 1.78),
        ("basic", 0.61, 2.28),
    ),
    measured_band=(0.52, 1.91),
    held=(
        ("recipe", 25, 30),
        ("large-lab", 29, 33),
        ("tuned", 37, 43),
        ("own-script", 14, 18),
        ("typical", 46, 50),
        ("basic", 14, 17),
        ("default", 168, 191),
    ),
    measured_held=0.9,
    recipe=1.1,
    own_script=1.05,
)
FP8_GAIN = FITTED.fp8_gain  # the shipped gain under the name --explain reads


@dataclass(frozen=True, slots=True)
class Mfu:
    low: float
    expected: float
    high: float
    factors: dict[str, float]  # each cause's multiplier, for --explain and the JSON assumptions


def check_stack(stack: str) -> str:
    if stack not in STACKS:
        raise UsageError(f"--stack must be one of {', '.join(STACKS)}, got {stack!r}")
    return stack


# Classes whose code fuses what the small-model term charges (round 48 of issue 14): a published single-node speed
# recipe is compiled or hand-fused (torch.compile, llm.c's kernels, fused optimizers), so a small model's norms,
# activations, softmax, optimizer steps and launches do not run as separate kernels as in llm-foundry's tables, which
# state the term. Measured, not assumed: without the term for `recipe` the whole procedure puts 109 runs within out of
# sample against 107 with it, at a median range of x2.77 against x2.87 (docs/calibration-history.md, round 48).
FUSED_STACKS = ("recipe",)


def small_model_overhead(gpu: GpuSpec, active_params: float, fit: Fit = FITTED, stack: str = DEFAULT_STACK) -> float:
    """What a model this small pays besides its matmuls, as a share of their time: memory-bound work and launches
    (0 for the classes whose code fuses them, ``FUSED_STACKS``)."""
    if fit.small_params <= 0 or stack in FUSED_STACKS:
        return 0.0
    return gpu.tensor16_tflops / REFERENCE_TFLOPS * (fit.small_params / active_params) ** SMALL_EXPONENT


def small_model_factor(
    gpu: GpuSpec, active_params: float, fit: Fit = FITTED, stack: str = DEFAULT_STACK, attention_share: float = 0.0
) -> float:
    """Share of the MFU a model this small keeps (``small_model_overhead``, on ``small_model_share`` of the FLOPs)."""
    return 1.0 / (1.0 + small_model_overhead(gpu, active_params, fit, stack) * small_model_share(attention_share, fit))


def small_model_share(attention_share: float, fit: Fit = FITTED) -> float:
    """The share of a job's FLOPs the small-model term weighs on: all of them, or the dense share only where
    ``fit.small_model_attention`` is off (round 52 of issue 14: time per FLOP (1 - s)(1 + o) + s = 1 + o(1 - s))."""
    return 1.0 if fit.small_model_attention else 1.0 - attention_share


def scale_out_overhead(active_params: float, gpus: int, gpus_per_node: int, fit: Fit = FITTED) -> float:
    """The exposed gradient sync of a step as a share of its compute, across servers (inside one NVLink node it hides
    behind the backward pass, unless ``fit.scale_out_in_node``): (5e5 x GPUs / N_active)^exponent."""
    if gpus <= max(1, min(gpus, gpus_per_node)) and not fit.scale_out_in_node:
        return 0.0
    return (fit.thin_params_per_gpu * gpus / active_params) ** fit.scale_out_exponent


def fastest_size(gpu: GpuSpec, gpus: int, gpus_per_node: int, fit: Fit = FITTED, stack: str = DEFAULT_STACK) -> float:
    """The active parameter count below which the calibrated form would make a smaller model slower per token on
    these GPUs (0 where it does not: one server, or no small-model term).

    Across servers the MFU carries two overheads that fall as 1/N, the small model's (a = peak/312 x ``small_params``)
    and the scale-out's (b = ``thin_params_per_gpu`` x GPUs), as a product, so the time per token goes as
    N (1 + (a/N)^e1)(1 + (b/N)^e2): with both exponents 1, N + a + b + ab/N, which falls until N* = sqrt(ab) and rises
    after. The cross term ab/N is the form's, not a cost a run measured: no calibration run lies below its own N*
    (a test keeps it so), and every cost of a step, the matmuls and the gradients' traffic alike, shrinks with the
    model. Without a hold, 300M parameters on 1,024 H100 took 0.59 of a 70M model's GPU-hours for the same tokens
    (estimator audit, stop 59); the estimator holds a smaller model's time per token at N*'s (``estimate``)."""
    a = small_model_overhead(gpu, 1.0, fit, stack)  # each overhead at one parameter: its constant
    b = scale_out_overhead(1.0, gpus, gpus_per_node, fit)
    if a == 0.0 or b == 0.0:
        return 0.0
    if SMALL_EXPONENT == 1.0 and fit.scale_out_exponent == 1.0:
        return math.sqrt(a * b)

    def per_token(log_n: float) -> float:
        n = math.exp(log_n)
        return (
            n * (1 + small_model_overhead(gpu, n, fit, stack)) * (1 + scale_out_overhead(n, gpus, gpus_per_node, fit))
        )

    low, high = math.log(1e3), math.log(1e13)  # golden-section search on log N: the product is unimodal there
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        left, right = high - ratio * (high - low), low + ratio * (high - low)
        if per_token(left) <= per_token(right):
            high = right
        else:
            low = left
    return math.exp((low + high) / 2)


def unfused_attention_cost(gpu: GpuSpec, head_dim: float) -> float:
    """C_u: what one attention FLOP costs, in dense FLOPs, when the scores are written out (round 30 of issue 14's
    candidate term, ``Fit.unfused_attention``: not shipped).

    Per token and layer an unfused attention moves UNFUSED_BYTES_PER_SCORE bytes for each of its seq x heads scores
    and does 12 x hidden x seq attention FLOPs, so 32 / (12 x head_dim) bytes per FLOP; at ELEMENTWISE_BANDWIDTH of
    the datasheet's bandwidth against a dense step at DENSE_STEP_MFU of peak, each such byte costs the time of
    peak / bandwidth x DENSE_STEP_MFU / ELEMENTWISE_BANDWIDTH dense FLOPs. A100-40GB with 64-wide heads: 6.2. Why
    arithmetic and not a searched constant: the runs that pay it are few and mostly of 2021-22, too few to set it in
    a fold that holds some of them out; the FlashAttention paper's two ratios check it (a test). Not shipped: with it
    the search raises ``basic`` to 0.4 (the transformers GPT-2 runs no longer hold it down) and TeenyTinyLlama's two
    runs, which used FlashAttention-2 and are as slow, fall outside their range; four runs fewer inside.
    """
    flops_per_byte = gpu.tensor16_tflops * 1e12 / (gpu.memory_bandwidth_gb_s * 1e9)
    bytes_per_flop = UNFUSED_BYTES_PER_SCORE / (12.0 * head_dim)
    return 1.0 + bytes_per_flop * flops_per_byte * DENSE_STEP_MFU / ELEMENTWISE_BANDWIDTH


# The GPU families with published whole runs in the calibration file (a test keeps this equal to it). On any other
# GPU the estimate is extrapolated: the bandwidth term from the datasheet and, for AMD, a stated software factor
# (CDNA 3's from benchmarks only, its range widening the band). plan and estimate say which, so a top row on an
# uncalibrated GPU is read as such.
CALIBRATED_ARCHITECTURES = frozenset(
    {"Ampere", "Ampere (GA102)", "Ada Lovelace", "Hopper", "Volta", "Turing", "CDNA 2"}
)


def speed_basis(gpu: GpuSpec) -> str:
    """``calibrated``: published whole runs on this GPU family set the estimate; ``extrapolated``: none did."""
    return "calibrated" if gpu.architecture in CALIBRATED_ARCHITECTURES else "extrapolated"


def amd_factor(gpu: GpuSpec) -> float | None:
    if gpu.vendor.upper() != "AMD":
        return None
    return AMD_FACTOR.get(gpu.architecture, AMD_FACTOR["CDNA 3"])


def amd_factor_range(gpu: GpuSpec) -> tuple[float, float] | None:
    """The plausible range of this GPU's ROCm factor where no whole run checks it (CDNA 3 and, like its factor, any
    other AMD architecture without one of its own); None where the calibration's whole runs check it (CDNA 2)."""
    factor = amd_factor(gpu)
    if factor is None or gpu.architecture in CALIBRATED_ARCHITECTURES:
        return None
    return AMD_FACTOR_RANGE.get(gpu.architecture, AMD_FACTOR_RANGE["CDNA 3"])


def software_spread(gpu: GpuSpec) -> tuple[float, float]:
    """How far the band of ``gpu`` widens for a stated factor no whole run checks: (low, high) over the stated value,
    multiplying the calibrated band's ends. Why widen and not only label: the calibrated band is what runs of a
    correct model scatter by; an unchecked factor can be off as a whole, and a renter reading an MI300X row's range
    should see both (1, 1) for every other GPU."""
    span = amd_factor_range(gpu)
    factor = amd_factor(gpu)
    if span is None or factor is None:
        return 1.0, 1.0
    return span[0] / factor, span[1] / factor


def describe_software_factor(gpu: GpuSpec) -> str:
    """The words plan and estimate use for a stated ROCm factor no whole run checks, with its range and what the range
    does to the band (``software_spread``)."""
    factor, span = amd_factor(gpu), amd_factor_range(gpu)
    assert factor is not None and span is not None
    return (
        f"a ROCm factor of {factor:g} stated from short training benchmarks (optimizer/rocm_benchmarks.py), not from "
        f"whole runs; its range, {span[0]:g}-{span[1]:g}, widens the time's range beyond what the calibration held"
    )


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
    stack: str = DEFAULT_STACK,
    attention_share: float = 0.0,
    attention: str = "fused",
    head_dim: float = 128.0,
    traffic: network_model.Traffic | None = None,
    fit: Fit = FITTED,
) -> Mfu:
    """Expected whole-run MFU with its band, relative to the dense peak of ``precision``.

    ``attention_share`` is the attention term's share of the job's FLOPs (0 when it is not counted); ``attention``
    says whether its scores stay on chip (``ATTENTION``), ``head_dim`` how many attention FLOPs each score carries.
    ``traffic``: what a micro-batch asks of each server's network (None: not charged, as for the calibration's runs,
    which state no bandwidth).
    """
    per_node = max(1, min(gpus, gpus_per_node))
    nodes = math.ceil(gpus / per_node)
    factors = {
        "base": fit.base,
        "stack": fit.stack(stack),
        "bandwidth": (gpu.memory_bandwidth_gb_s / gpu.tensor16_tflops / REFERENCE_BYTES_PER_FLOP)
        ** fit.bandwidth_exponent,
        "small_model": small_model_factor(gpu, active_params, fit, stack, attention_share),
        "slowest_link": 1.0,
        "nodes": 1.0 / (1.0 + NODE_PENALTY[fabric] * math.log2(nodes)),
    }
    factors["scale_out"] = 1.0 / (1.0 + scale_out_overhead(active_params, gpus, gpus_per_node, fit))
    if attention_share > 0:
        cost = fit.attention_cost
        if fit.causal_credit and attention == "fused" and gpu.architecture not in OLDER_ARCHITECTURES:
            cost *= CAUSAL_WORK  # a fused causal kernel skips the tiles above the diagonal
        factors["attention"] = 1.0 / (1.0 + (cost - 1.0) * attention_share)
    if gpu.architecture in OLDER_ARCHITECTURES:
        factors["older_gpu"] = fit.older  # its basis, Megatron-LM on V100, had no fused attention: it carries that
    elif attention == "unfused" and attention_share > 0 and fit.unfused_attention:
        cost = unfused_attention_cost(gpu, head_dim)
        factors["unfused_attention"] = 1.0 / (1.0 + (cost - 1.0) * attention_share)
    if recompute == "full":
        factors["recompute"] = RECOMPUTE_FULL
    if moe:
        factors["moe"] = fit.moe
    if method == "qlora":
        factors["qlora"] = QLORA
    amd = amd_factor(gpu)
    if amd is not None:
        factors["software"] = amd
    if precision == "fp8":
        assert gpu.fp8_tflops is not None
        factors["fp8"] = fit.fp8_gain * gpu.tensor16_tflops / gpu.fp8_tflops
    factors["slowest_link"] = slowest_link(gpu, gpus, per_node, precision, factors, traffic)
    expected = min(math.prod(factors.values()), MFU_CEILING)
    band_low, band_high = fit.band(stack)
    spread_low, spread_high = software_spread(gpu)
    high = min(expected * band_high * spread_high, MFU_CEILING)
    return Mfu(low=expected * band_low * spread_low, expected=expected, high=high, factors=factors)


COMMUNICATION = ("slowest_link", "nodes", "scale_out")  # the terms of the communication; the rest are the compute's


def slowest_link(
    gpu: GpuSpec,
    gpus: int,
    per_node: int,
    precision: str,
    factors: dict[str, float],
    traffic: network_model.Traffic | None,
) -> float:
    """The term of the slowest link a GPU's share of the ZeRO-3 traffic crosses (module docstring), 1 if none.

    Inside a server: PCIe for PCIe cards, PCIe between the NVLink pairs of pair-bridged cards. A GPU alone in its
    server reaches the others over its PCIe link to the NIC and then the network: the PCIe term of the job's whole GPU
    count is its floor, so splitting a PCIe server's GPUs one per server never reads as faster. Across servers with
    ``traffic`` known: compute / network time of a micro-batch, the compute at the MFU of the other, non-communication
    ``factors``.
    """
    nodes = math.ceil(gpus / per_node)
    links = [1.0]
    if per_node > 1 and gpu.intra_node == "pcie":
        links.append(1.0 / (1.0 + PCIE_PENALTY * math.log2(per_node)))
    elif per_node > 2 and gpu.intra_node == "nvlink_pair":
        links.append(1.0 / (1.0 + PCIE_PENALTY * math.log2(per_node / 2)))
    if nodes > 1 and per_node == 1:
        links.append(1.0 / (1.0 + PCIE_PENALTY * math.log2(gpus)))
    if nodes > 1 and traffic is not None:
        compute = math.prod(value for name, value in factors.items() if name not in COMMUNICATION)
        rate = peak_flops(gpu, precision) * compute
        links.append(network_model.bandwidth_factor(traffic, servers=nodes, flops_per_second=rate))
    return min(links)


def peak_flops(gpu: GpuSpec, precision: str) -> float:
    """Dense peak FLOP/s per GPU for the precision the job runs in on this GPU (``GpuSpec.precision_used``):
    FP8 only where the GPU has it; BF16, or FP16 mixed precision where the GPU has no BF16 (V100, T4)."""
    used = gpu.precision_used(precision)
    tflops = {"fp8": gpu.fp8_tflops, "fp16": gpu.fp16_tflops, "bf16": gpu.bf16_tflops}[used]
    assert tflops is not None
    return tflops * 1e12


def range_claim(stack: str, fit: Fit = FITTED) -> str:
    """What a stack class's range is, in words a user can check: the share of the calibration's published runs it
    held out of sample (``Fit.held``), not the share it was read at. The default class says both its own runs' share
    and the share of every run predicted as the default, since a user who says nothing may be any kind of team."""
    aim = "read at 5-95 % of its out-of-sample errors"
    own = fit.held_by(stack)
    if own is None:
        return f"a range {aim}"
    claim = f"{own[0]} of {own[1]} {stack} runs ({_percent(own)})"
    everyone = fit.held_by("default")
    if stack == DEFAULT_STACK and everyone is not None:
        claim += f" and {everyone[0]} of {everyone[1]} of any class ({_percent(everyone)})"
    scope = f"; {CLASS_SCOPE[stack]}" if stack in CLASS_SCOPE else ""
    return f"a range that held {claim} from teams the calibration had not seen; {aim}{scope}"


def transfer_claim(fit: Fit = FITTED) -> str:
    """--measured's range in the same words: the share of same-team predictions it held out of sample."""
    if fit.measured_held is None:
        return "a range read at 5-95 % of same-team errors"
    return f"a range that held {round(fit.measured_held * 100)} % of the calibration's same-team predictions"


def article(stack: str) -> str:
    """The article a class name takes in a sentence: "a tuned stack", "an own-script stack"."""
    return "an" if stack[:1] in "aeiou" else "a"


def _percent(held: tuple[int, int]) -> str:
    return f"{round(100 * held[0] / held[1])} %"


def describe_stack(stack: str, fit: Fit = FITTED) -> str:
    """One line for --explain: the class, what it means, its multiplier and its band."""
    low, high = fit.band(stack)
    return (
        f"software stack: {stack} ({STACKS[stack]}): MFU x{fit.stack(stack)} of a tuned open framework, "
        f"band x{low}-x{high}; --stack {' | '.join(STACKS)}"
    )
