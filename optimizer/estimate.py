"""``costopt estimate``: FLOPs, realized MFU, GPU-hours and wall time with a range, and memory fit.

The one place where a model, a token count, a GPU and a GPU count become hours. ``costopt plan``
calls ``estimate`` once per (GPU, GPUs per instance, instances, fabric) it considers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optimizer import measured as measured_model
from optimizer import mfu as mfu_model
from optimizer import network as network_model
from optimizer import scope as scope_model
from optimizer.compute import METHODS, Flops, training_flops
from optimizer.layout import layout
from optimizer.measured import Measurement
from optimizer.memory import (
    RECOMPUTE_SETTINGS,
    TENSOR_PARALLEL_LINKS,
    MemoryFit,
    activation_bytes,
    memory_fit,
    tensor_parallel_reach,
)
from optimizer.models import ModelSpec, derived_shape
from warehouse.errors import UsageError
from warehouse.gpus import GpuSpec

PRECISIONS = ("bf16", "fp16", "fp8")


@dataclass(frozen=True, slots=True)
class Range:
    low: float
    expected: float
    high: float

    def scaled(self, factor: float) -> Range:
        return Range(self.low * factor, self.expected * factor, self.high * factor)

    def as_dict(self) -> dict[str, float]:
        return {"low": self.low, "expected": self.expected, "high": self.high}


@dataclass(frozen=True, slots=True)
class Job:
    """What is being trained, independent of where."""

    model: ModelSpec
    tokens: float
    method: str = "full"
    precision: str = "bf16"
    seq_len: int | None = None  # None: the preset's training length, or models.ASSUMED_SEQ_LEN for a bare count
    micro_batch: int = 1
    # Activation recomputation, for memory and time alike (memory.py): "selective", "full" (every layer's forward
    # pass again, a third more FLOPs) or "auto", the cheapest that fits on the GPUs at hand (memory.choose)
    recompute: str = "auto"
    # tensor parallelism with sequence parallelism inside one node (memory.py): a degree, or None, auto's choice
    tensor_parallel: int | None = None
    stack: str = mfu_model.DEFAULT_STACK  # MFU: the software stack and team (mfu.STACKS)
    measured: Measurement | None = None  # MFU: the user's own throughput, in place of the stack class (measured.py)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UsageError(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.precision not in PRECISIONS:
            raise UsageError(f"--precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        if self.tokens <= 0:
            raise UsageError("--tokens must be positive")
        if self.seq_len is not None and self.seq_len <= 0:
            raise UsageError("--seq-len must be positive")
        if self.tokens < self.sequence_length:  # --tokens 0.5 or 1e-3 gave wall times of 1e-11 hours, exit 0
            raise UsageError(
                f"--tokens {self.tokens:g} is less than one sequence of {self.sequence_length:,} tokens "
                f"({_length_source(self)}), the least a training step reads: give the job's whole token count "
                "(500M, 100B, 1.5T)"
            )
        if self.micro_batch <= 0:
            raise UsageError("--micro-batch must be positive")
        if self.recompute not in RECOMPUTE_SETTINGS:
            # "none": with fused attention the scores are never kept, so keeping every other activation is selective
            hint = "; keeping every activation is selective (fused attention never keeps the scores)"
            raise UsageError(
                f"--recompute must be one of {', '.join(RECOMPUTE_SETTINGS)}, got {self.recompute!r}"
                + (hint if self.recompute == "none" else "")
            )
        if self.tensor_parallel is not None and self.tensor_parallel <= 0:
            raise UsageError(f"--tensor-parallel must be a positive whole number, got {self.tensor_parallel}")
        mfu_model.check_stack(self.stack)
        if self.measured is not None and self.precision == "fp8" and self.measured.gpu.fp8_tflops is None:
            raise UsageError(f"--measured: {self.measured.gpu.name} has no FP8 tensor cores; measure an fp8 job on FP8")

    @property
    def team(self) -> str:
        """The stack class, or ``measured`` when the user's own throughput sets the MFU."""
        return "measured" if self.measured is not None else self.stack

    @property
    def sequence_length(self) -> int:
        """The one sequence length of the job's attention FLOPs and activation memory (``seq_len_basis``: whence)."""
        return self.seq_len or self.model.train_seq_len

    @property
    def seq_len_basis(self) -> str:
        """Where the sequence length (attention FLOPs, activation memory) comes from: ``--seq-len``, the preset's
        published training length (``preset``), a length the preset assumes because its source publishes none
        (``preset-assumed``: mistral-7b, llama4-scout and -maverick, whose sources say "8K assumed"), or the length
        assumed for a bare parameter count (``assumed``)."""
        if self.seq_len is not None:
            return "--seq-len"
        if not self.model.preset:
            return "assumed"
        return "preset" if self.model.train_seq_len_published else "preset-assumed"

    def flops(self) -> Flops:
        return training_flops(self.model, self.tokens, method=self.method, seq_len=self.sequence_length)


def _length_source(job: Job) -> str:
    return {
        "--seq-len": "--seq-len",
        "preset": f"{job.model.name}'s training length",
        "assumed": "assumed for a bare count",
    }[job.seq_len_basis]


def step_tokens(job: Job, gpus: int) -> int:
    """The tokens of the smallest optimizer step on ``gpus`` data-parallel GPUs: one micro-batch on each."""
    return gpus * job.micro_batch * job.sequence_length


def refuse_less_than_a_step(job: Job, gpus: int) -> None:
    """``estimate``'s floor on --tokens: a job shorter than one step on its GPUs leaves GPUs idle, and the time the
    model gives (tokens over the GPUs' throughput) is then not what the job takes. ``plan`` does not call it: it
    tries many counts, and one too large for a small job is not an input error."""
    step = step_tokens(job, gpus)
    if job.tokens < step:
        raise UsageError(
            f"--tokens {job.tokens:g} is less than one optimizer step on {gpus} GPUs ({gpus} x {job.micro_batch} "
            f"sequence{'s' if job.micro_batch > 1 else ''} x {job.sequence_length:,} tokens = {step:,}): give more "
            "--tokens or fewer --gpus"
        )


@dataclass(frozen=True, slots=True)
class Estimate:
    job: Job
    gpu: GpuSpec
    gpus: int
    gpus_per_node: int
    fabric: str
    flops: Flops
    mfu: Range
    gpu_hours: Range  # low = fastest plausible outcome
    wall_hours: Range
    memory: MemoryFit
    scope: scope_model.Scope  # where the job lies against what the calibration covers (optimizer/scope.py)
    factors: dict[str, float] = field(default_factory=dict)
    gpus_per_node_basis: str = "given"  # optimizer/layout.py: --gpus-per-node, the GPU table or the 8-GPU assumption
    fabric_basis: str = "given"  # optimizer/layout.py: --fabric, or what the GPU's servers are sold with
    bandwidth: network_model.Bandwidth | None = None  # each server's network to the others, where the job spans some

    @property
    def recompute(self) -> str:
        """The recomputation strategy the job runs here, the memory verdict's and the time's: the one asked, or
        --recompute auto's choice for this GPU and count (memory.choose)."""
        return self.memory.recompute

    @property
    def tensor_parallel(self) -> int:
        """The tensor-parallel degree of the memory verdict: the one asked, or --tensor-parallel auto's choice."""
        return self.memory.tensor_parallel

    @property
    def given_mfu(self) -> float | None:
        """The MFU the user gave (--mfu), or None when the model or --measured set it."""
        return self.factors.get("override")

    def as_dict(self) -> dict[str, Any]:
        model = self.job.model
        return {
            "model": {
                "name": model.name,
                "preset": model.preset,
                "total_params": model.total_params,
                "active_params": model.active_params,
                "layers": model.layers,
                "hidden": model.hidden,
                # where the shape, the vocabulary and the tying come from: preset, derived / assumed (a bare count's
                # conventional ones), given (--layers/--hidden, --vocab, --embeddings)
                "shape_basis": model.shape_basis,
                "vocab": model.vocab,
                "vocab_basis": model.vocab_basis,
                "embeddings": model.embeddings,
                "embeddings_basis": model.embeddings_basis,
                "input_embedding_params": model.input_embedding,  # an untied input table: out of the FLOPs
                "moe": model.moe,
                "source": model.source,
            },
            "tokens": self.job.tokens,
            "flops": self.flops.total,
            "gpu": self.gpu.name,
            "gpus": self.gpus,
            "mfu": self.mfu.as_dict(),
            "gpu_hours": self.gpu_hours.as_dict(),
            "wall_hours": self.wall_hours.as_dict(),
            "memory": self.memory.as_dict(),
            "assumptions": assumptions(self),
        }


def precision_note(gpu: GpuSpec, precision: str) -> str | None:
    """Why the job runs in another precision than asked on ``gpu`` (bf16 on V100/T4), or None."""
    used = gpu.precision_used(precision)
    if used == precision:
        return None
    return f"{gpu.name} has no bf16 tensor cores: the job runs in fp16 mixed precision (loss scaling), at its fp16 peak"


GIVEN_MFU_MEANS = (
    "the whole run's MFU in model FLOPs (the job's FLOPs as costopt counts them, of the GPU's datasheet peak): "
    "recomputation, QLoRA's dequantization and the stack class are inside it, none is applied on top"
)
"""How --mfu is read. A figure people quote (a paper's MFU, a log's) counts model FLOPs, so the work it leaves out
(a recomputed forward pass, QLoRA's dequantization) is already in its slowness: multiplying it by --recompute full's
x0.75 or QLoRA's x0.7 again would charge that work twice."""


def stack_class(stack: str | None, mfu_override: float | None) -> str:
    """The --stack class of a job, refused beside --mfu: --mfu replaces the whole MFU model, stack class included,
    and a --stack given with it was dropped without a word (as --measured with --mfu is refused in ``estimate``)."""
    if stack is not None and mfu_override is not None:
        raise UsageError(
            f"--mfu and --stack both set the MFU: give one of them (--mfu {mfu_override:g} is the whole run's MFU in "
            "model FLOPs, the stack class's share included)"
        )
    return stack if stack is not None else mfu_model.DEFAULT_STACK


def mfu_source(est: Estimate) -> str:
    """Where the MFU figures come from: the user's --mfu, the user's --measured, or the calibrated model."""
    if est.given_mfu is not None:
        return f"given: --mfu {est.given_mfu:g}, not the calibrated model; {GIVEN_MFU_MEANS}"
    if est.job.measured is not None:
        beyond = ", extrapolated beyond what the calibration covers" if est.scope.extrapolated else ""
        return (
            f"your measurement, {est.job.measured} (--measured), carried to this GPU and count by the model's terms"
            + beyond
        )
    beyond = ", extrapolated beyond what they cover" if est.scope.extrapolated else ""
    return f"calibrated on published whole training runs (optimizer/data/calibration_runs.csv){beyond}"


def range_means(est: Estimate) -> str:
    """What low and high stand for, so that a range is read as what it claims (README, *What the estimates
    assume*): a single figure under --mfu; the goodput's and the teammate transfers' spread under --measured; else
    the stack class's range, read off the calibration runs' out-of-sample errors (round 18 of issue 14) and labelled
    by what it held out of sample (round 26)."""
    if est.given_mfu is not None:
        return "none: --mfu gives one MFU, so low = expected = high"
    fastest = "low GPU-hours and wall time = the fastest plausible outcome (the high MFU)"
    outside = (
        "extrapolated: the job lies outside what the calibration covers, so this range is carried over, not held; "
        if est.scope.extrapolated
        else ""
    )
    if est.job.measured is not None:
        distance = est.factors.get("doublings")
        if distance is None:
            return (
                f"{outside}on another GPU than measured, {mfu_model.transfer_claim()} of a team's run predicted from "
                f"another of its runs; {fastest}"
            )
        if distance == 0:
            return f"{outside}on the measured GPUs and count the goodput's range; {fastest}"
        t_low = min(mfu_model.FITTED.transfer_band()[0], measured_model.GOODPUT_RANGE[0] / measured_model.GOODPUT)
        return (
            f"{outside}on the measured GPU, {distance:.3g} doubling(s) of GPUs, servers or network from the measured "
            f"layout: the goodput's range, its slow end x{measured_model.DOUBLING_STEP:g} per doubling (stated; not "
            f"below x{t_low:g}), its fast end your steady rate times the model's transfer; {fastest}"
        )
    stack = est.job.stack
    within = "inside it, " if outside else ""
    span = mfu_model.amd_factor_range(est.gpu)
    widened = (
        f"; on {est.gpu.name} widened to span its ROCm factor's range, {span[0]:g}-{span[1]:g} (benchmarks, no whole "
        "run), which the calibration did not test"
        if span is not None
        else ""
    )
    return (
        f"for {mfu_model.article(stack)} {stack} team, {outside}{within}{mfu_model.range_claim(stack)}{widened}; "
        f"{fastest}"
    )


def mfu_ceiling(est: Estimate) -> float | None:
    """The MFU no figure of the answer may exceed: ``mfu.MFU_CEILING``, or under --measured the higher of it and the
    user's own whole-run figure (``_from_measurement``); None under --mfu, which is taken as given."""
    if est.given_mfu is not None:
        return None
    if est.job.measured is not None:
        return max(mfu_model.MFU_CEILING, est.factors["measured_steady"] * est.factors["goodput"])
    return mfu_model.MFU_CEILING


def ceiling_binds(est: Estimate) -> list[str]:
    """Which MFU figures the ceiling set (``expected``, ``high``): there the range is not the band's multiple of the
    expected figure (an A100 job's fastest plausible is x0.74 of the expected time, not the band's x0.65), and the
    product of ``mfu_factors`` exceeds the expected MFU when ``expected`` is listed."""
    ceiling = mfu_ceiling(est)
    if ceiling is None:
        return []
    return [name for name, value in (("expected", est.mfu.expected), ("high", est.mfu.high)) if value >= ceiling]


def network_source(est: Estimate) -> str:
    """Where the servers' network bandwidth behind the estimate comes from, or why there is none."""
    if est.gpus <= est.gpus_per_node:
        return "one server: no network between servers"
    if est.given_mfu is not None:
        return "not used: the MFU is given (--mfu)"
    if est.bandwidth is not None:
        return est.bandwidth.source
    if est.fabric != "rdma":
        return "none stated or assumed over Ethernet: only its stated scale-out guess applies"
    return "not stated for these servers of several GPUs: the calibrated between-node term applies, as for its runs"


RECOMPUTE_KEEPS = {  # memory.py: what each strategy keeps and recomputes
    "selective": "34 x width bytes kept per layer and token; attention scores recomputed in the fused kernel",
    "full": "2 x width bytes kept per layer and token; every layer's forward pass run twice",
}


def measured_recompute(job: Job) -> str:
    """The strategy the --measured run is taken to have run: the one asked, or auto's choice on its GPUs."""
    measurement = job.measured
    assert measurement is not None
    return _fit(job, measurement.gpu, measurement.gpus, measured_model.NODE_GPUS).recompute


def recompute_means(est: Estimate) -> str:
    """Which activation recomputation the job runs, why, and what its time was charged for it: one sentence for the
    table and the JSON (``recompute_means``), so that the memory verdict and the time are read as one choice."""
    job, strategy = est.job, est.recompute
    if job.recompute != "auto":
        why = f"as asked (--recompute {strategy})"
    elif strategy == "selective":
        why = "--recompute auto: the cheapest that fits"
    else:
        selective = est.memory.min_gpus_by_recompute.get("selective")
        t = est.tensor_parallel
        kept = activation_bytes(job.model, seq_len=job.sequence_length, micro_batch=job.micro_batch,
                                recompute="selective", tensor_parallel=t) / 1e9  # fmt: skip
        at = f" even at tensor parallelism {t}" if t > 1 else ""
        why = "--recompute auto: selective " + (
            f"needs {selective} GPUs" if selective is not None else f"keeps {kept:.1f} GB per GPU{at}, more than fits"
        )
    if est.given_mfu is not None:
        charge = "not charged: the MFU you gave (--mfu) is taken to include it" if strategy == "full" else "no charge"
    elif job.measured is not None:
        charge = (
            f"charged through the transfer: your measurement is taken to have run {measured_recompute(job)} "
            f"recomputation (on {job.measured.gpus} x {job.measured.gpu.name})"
        )
    elif strategy == "full":
        charge = f"charged: MFU x{mfu_model.RECOMPUTE_FULL:g} (8.N.D FLOPs of work for 6.N.D)"
    else:
        charge = "no charge: its small cost is inside the calibrated MFU"
    return f"{strategy} recomputation ({RECOMPUTE_KEEPS[strategy]}); {why}; {charge}; {tensor_parallel_means(est)}"


def tensor_parallel_means(est: Estimate) -> str:
    """The tensor-parallel degree the memory verdict assumes, why, and why its time is not charged (the estimate's
    activations line, the JSON's ``tensor_parallel_means``, plan's --explain)."""
    t, job = est.tensor_parallel, est.job
    if job.tensor_parallel is not None:
        why = "as asked (--tensor-parallel)"
    elif t > 1 and est.recompute == "full" and job.recompute == "auto":
        why = "--tensor-parallel auto: the largest the node allows, selective fitting at none"
    elif t > 1:
        why = "--tensor-parallel auto: the smallest degree at which the activations fit"
    elif est.gpu.intra_node not in TENSOR_PARALLEL_LINKS:
        why = f"--tensor-parallel auto: none over {est.gpu.name}'s PCIe (no NVLink)"
    else:
        why = "--tensor-parallel auto: not needed"
    if t == 1:
        return f"tensor parallelism 1 ({why})"
    return (
        f"tensor parallelism {t} inside each node, with sequence parallelism (activations / {t}; {why}); "
        "no time charged for it: the calibrated MFU comes from published runs at scale that used it"
    )


def assumptions(est: Estimate) -> dict[str, Any]:
    job = est.job
    given = est.given_mfu is not None
    basis = "given" if given else "extrapolated" if est.scope.extrapolated else "calibrated"
    family = mfu_model.speed_basis(est.gpu)
    return {
        "method": job.method,
        "precision": job.precision,
        "precision_used": est.gpu.precision_used(job.precision),
        "precision_note": precision_note(est.gpu, job.precision),
        "peak_tflops_per_gpu": mfu_model.peak_flops(est.gpu, job.precision) / 1e12,
        "flops_weights": est.flops.weights,
        "flops_attention": est.flops.attention,
        "attention_seq_len": job.sequence_length,  # one length for both since round 14 (a bare count's is assumed)
        "memory_seq_len": job.sequence_length,
        "seq_len_basis": job.seq_len_basis,
        "micro_batch": job.micro_batch,
        "recompute": est.recompute,
        "recompute_asked": job.recompute,
        "recompute_means": recompute_means(est),
        "tensor_parallel": est.tensor_parallel,
        "tensor_parallel_asked": job.tensor_parallel,
        "stack": None if given else job.team,
        "stack_means": (
            "no stack class: the MFU is given (--mfu)"
            if given
            else mfu_model.STACKS[job.stack]
            if job.measured is None
            else f"your measurement, {job.measured}, carried to this GPU and count by the model (--measured)"
        ),
        "gpus_per_node": est.gpus_per_node,
        "gpus_per_node_basis": est.gpus_per_node_basis,
        "inter_node_fabric": est.fabric,
        "inter_node_fabric_basis": est.fabric_basis,
        "intra_node": est.gpu.intra_node,
        "server_network_gbps": est.bandwidth.gbps if est.bandwidth is not None else None,
        "server_network_source": network_source(est),
        "mfu_factors": est.factors,
        "mfu_ceiling": mfu_ceiling(est),
        "mfu_ceiling_binds": ceiling_binds(est),
        "mfu_basis": mfu_source(est),
        "range_means": range_means(est),
        "speed_basis": basis,
        "speed_basis_means": (
            "your --mfu of the GPU's datasheet peak"
            if given
            else (
                f"published whole runs on {est.gpu.architecture} GPUs are in the calibration"
                if family == "calibrated"
                else f"no published whole run on {est.gpu.architecture} GPUs: extrapolated from the datasheet"
                + (" and a stated ROCm factor" if mfu_model.amd_factor(est.gpu) is not None else "")
            )
            + (
                ", but the job lies outside what the calibration covers (extrapolated_because)"
                if family == "calibrated" and basis == "extrapolated"
                else ""
            )
        ),
        # why the job is outside the calibration's coverage (empty: inside it; under --mfu only the batch and steps)
        "extrapolated_because": est.scope.because,
        "global_batch_tokens_min": est.scope.batch_tokens,  # GPUs x micro-batch x sequence length
        "optimizer_steps_max": est.scope.steps,  # tokens / that batch
        "warnings": list(est.scope.warnings),
        # the plausible range of a stated ROCm factor no whole run checks (CDNA 3), which the MFU band spans; else null
        "software_factor_range": None if given or job.measured is not None else mfu_model.amd_factor_range(est.gpu),
        "sharding": "ZeRO-3/FSDP across all GPUs of the job"
        + (f", tensor parallelism {est.tensor_parallel} inside each node" if est.tensor_parallel > 1 else ""),
    }


# (GPU, GPUs, GPUs per node, fabric, stack, recomputation strategy) -> the model's MFU
Modelled = Callable[[GpuSpec, int, int, str, str, str], mfu_model.Mfu]


def check_tensor_parallel(job: Job, gpu: GpuSpec, gpus: int, gpus_per_node: int) -> None:
    """Refuse, in one line, a --tensor-parallel degree the node cannot hold: a group must sit inside one node, on a
    link that carries it (memory.TENSOR_PARALLEL_LINKS), and the job must be whole groups."""
    t = job.tensor_parallel
    if t is None or t == 1:
        return
    if gpu.intra_node not in TENSOR_PARALLEL_LINKS:
        raise UsageError(
            f"--tensor-parallel {t}: {gpu.name} GPUs talk over PCIe inside a node (no NVLink); "
            "tensor parallelism needs NVLink/NVSwitch or Infinity Fabric: give --tensor-parallel 1 or leave it out"
        )
    if gpus_per_node % t:
        raise UsageError(f"--tensor-parallel {t} does not divide the {gpus_per_node} GPUs per node (--gpus-per-node)")
    reach = tensor_parallel_reach(gpu.intra_node, gpus_per_node)
    if t > reach:
        raise UsageError(f"--tensor-parallel {t}: {gpu.name} GPUs are NVLink-bridged in pairs; at most {reach}")
    if gpus % t:
        raise UsageError(f"--tensor-parallel {t} does not divide the job's {gpus} GPUs (--gpus)")


def _fit(job: Job, gpu: GpuSpec, gpus: int, gpus_per_node: int) -> MemoryFit:
    """The memory verdict of ``job`` on ``gpus`` x ``gpu`` in nodes of ``gpus_per_node``, with the strategy and
    tensor-parallel degree it runs there (a group needs as many GPUs in the job; the minimum counts are over every
    degree the node allows)."""
    return memory_fit(
        job.model,
        method=job.method,
        gpu_memory_gb=gpu.memory_gb,
        gpus=gpus,
        seq_len=job.sequence_length,
        micro_batch=job.micro_batch,
        recompute=job.recompute,
        tensor_parallel=job.tensor_parallel,
        reach=tensor_parallel_reach(gpu.intra_node, gpus_per_node),
        gpus_per_node=gpus_per_node,
    )


def _from_measurement(
    job: Job,
    flops: Flops,
    gpu: GpuSpec,
    gpus: int,
    gpus_per_node: int,
    fabric: str,
    recompute: str,
    modelled: Modelled,
    fit: mfu_model.Fit,
) -> tuple[Range, dict[str, float]]:
    """The MFU range of ``job`` on ``gpus`` x ``gpu`` from the user's measured throughput (optimizer/measured.py).

    The team's factor is the measured steady MFU, less the goodput, over what the model expects of a tuned stack on
    the measured layout (the measured GPU and count on servers of ``measured.NODE_GPUS``, over the measurement's own
    network, so a target on another network is charged the model's difference, and with the recomputation strategy the
    job runs there, ``measured_recompute``); the model carries it to the target, which runs ``recompute``. The two
    model figures are not capped (a cap would not cancel in their ratio); the result is capped at the higher of the
    published ceiling and the user's own whole-run figure. On the measured GPU the band is the goodput's, widened on
    the slow side by the distance to the measured layout (``measured.band``); the fast end never passes the measured
    steady rate times the model's transfer. From one architecture to another the band is the transfer's, widened by
    any software factor no whole run checks on either side (``mfu.software_spread``: MI300X).
    """
    measurement = job.measured
    assert measurement is not None
    peak = mfu_model.peak_flops(measurement.gpu, job.precision)
    steady = measured_model.steady_mfu(measurement, flops.total / job.tokens, peak)
    there = measured_recompute(job)
    measured_layout = (measurement.gpu, measurement.gpus, measurement.gpus_per_node, measurement.fabric)
    reference = math.prod(modelled(*measured_layout, "tuned", there).factors.values())
    target = math.prod(modelled(gpu, gpus, gpus_per_node, fabric, "tuned", recompute).factors.values())
    whole_run = steady * measured_model.GOODPUT
    ceiling = max(mfu_model.MFU_CEILING, whole_run)
    expected = min(whole_run * target / reference, ceiling)
    factors = {"measured_steady": steady, "goodput": measured_model.GOODPUT, "transfer": target / reference}
    same_gpu = measurement.gpu.name == gpu.name
    distance = 0.0
    if same_gpu:
        distance = measured_model.doublings(measurement, gpus, gpus_per_node, fabric)
        factors["doublings"] = distance
    low, high = measured_model.band(fit.transfer_band(), same_gpu=same_gpu, distance=distance)
    if measurement.gpu.architecture != gpu.architecture:
        # a stated software factor no whole run checks (ROCm on CDNA 3: mfu.software_spread) widens the band of a plain
        # estimate; carried from one architecture to another it is off by as much, on the target's side or, when the
        # measurement is the unchecked one, inverted on the measurement's
        target_low, target_high = mfu_model.software_spread(gpu)
        measured_low, measured_high = mfu_model.software_spread(measurement.gpu)
        low, high = low * target_low / measured_high, high * target_high / measured_low
    return Range(expected * low, expected, min(expected * high, ceiling)), factors


def _sized_for_speed(
    job: Job, flops: Flops, gpu: GpuSpec, gpus: int, gpus_per_node: int, fit: mfu_model.Fit
) -> tuple[ModelSpec, Flops, str | None]:
    """The model whose speed the MFU model reads, its FLOPs, and why it is not the job's own (None when it is).

    Two holds, each on a model smaller than a size below which the calibrated form would make a smaller model slower
    per token: a bare count of that size, with the job's sequence length and method, stands in.

    * ``below_smallest_model``: fewer active parameters than any calibration run (``scope.coverage().smallest``:
      Pythia 70M). Below it the small-model term (1 / (1 + peak/312 x 5e7 / N), stated from llm-foundry's 125M-70B
      tables) is extrapolated, and with a conventional shape it made a smaller model slower: the term's overhead grows
      as 1/N on all of a token's FLOPs, and the attention FLOPs (12.L.d.S, width at least 128, one layer at least) do
      not shrink with the count, so 100K parameters took 3.6x as long as 10M and ``--model 1`` four years on 8 A100
      (estimator audit, Issue 7). Every calibration run is at or above the size, so none of them moves.
    * ``below_fastest_size``: across servers, fewer active parameters than ``mfu.fastest_size`` (N* = sqrt(ab) of the
      small-model and scale-out terms), below which the form's cross term made a smaller model slower: 70M on 1,024
      H100 took 1.7x the GPU-hours of 300M. No calibration run lies below its N*, so none of them moves either.
    """
    floor = scope_model.coverage().smallest.value
    fastest = mfu_model.fastest_size(gpu, gpus, gpus_per_node, fit, job.stack)
    size, why = max((floor, "below_smallest_model"), (fastest, "below_fastest_size"))
    if job.model.active_params >= size:
        return job.model, flops, None
    sized = derived_shape(size, job.model.name)
    return sized, training_flops(sized, job.tokens, method=job.method, seq_len=job.sequence_length), why


def _held(m: mfu_model.Mfu, share: float, why: str) -> mfu_model.Mfu:
    """The MFU of a job whose time per token is held at a larger model's: that model's MFU x the job's share of its
    FLOPs per token (``why``: ``below_smallest_model`` or ``below_fastest_size``, with the larger model's factors)."""
    return mfu_model.Mfu(
        low=m.low * share,
        expected=m.expected * share,
        high=m.high * share,
        factors={**m.factors, why: share},
    )


def estimate(
    job: Job,
    gpu: GpuSpec,
    gpus: int,
    *,
    gpus_per_node: int | None = None,
    fabric: str | None = None,
    bandwidth: network_model.Bandwidth | None = None,
    mfu_override: float | None = None,
    fit: mfu_model.Fit = mfu_model.FITTED,
) -> Estimate:
    """Time and memory of ``job`` on ``gpus`` of ``gpu``; ``fabric`` is the network between nodes, ``bandwidth`` each
    node's (None: ``network.default_bandwidth``). ``gpus_per_node`` or ``fabric`` left None follows the GPU
    (optimizer/layout.py: the GPU table's servers, PCIe cards on Ethernet), and the answer says so.

    Both with one activation recomputation strategy: the memory verdict picks it (``job.recompute``, or auto's
    choice for this GPU and count) and the MFU is charged for it."""
    if gpus <= 0:
        raise UsageError(f"--gpus must be a positive whole number, got {gpus}")
    if gpus_per_node is not None and gpus_per_node <= 0:
        raise UsageError("--gpus-per-node must be positive")
    if fabric is not None and fabric not in mfu_model.FABRICS:
        raise UsageError(f"--fabric must be one of {', '.join(mfu_model.FABRICS)}, got {fabric!r}")
    where = layout(gpu, gpus_per_node=gpus_per_node, fabric=fabric)
    gpus_per_node, fabric = where.gpus_per_node, where.fabric
    if job.precision == "fp8" and gpu.fp8_tflops is None:
        raise UsageError(f"{gpu.name} has no FP8 tensor cores; use --precision bf16 or fp16")
    model = job.model
    flops = job.flops()
    per_node = max(1, min(gpus_per_node, gpus))
    spans_nodes = gpus > per_node
    micro_batch_flops = flops.total / job.tokens * job.sequence_length * job.micro_batch
    link = bandwidth or network_model.default_bandwidth(fabric, per_node)
    check_tensor_parallel(job, gpu, gpus, gpus_per_node)
    memory = _fit(job, gpu, gpus, gpus_per_node)
    if mfu_override is not None and job.measured is not None:
        raise UsageError("--mfu and --measured both set the MFU: give one of them")
    if mfu_override is not None:
        if not 0 < mfu_override <= 1:
            raise UsageError(f"--mfu must be between 0 and 1, got {mfu_override:g}")
        mfu = Range(mfu_override, mfu_override, mfu_override)
        factors = {"override": mfu_override}
    else:

        def modelled(on: GpuSpec, count: int, per_node: int, network: str, stack: str, recompute: str) -> mfu_model.Mfu:
            sized, sized_flops, why = _sized_for_speed(job, flops, on, count, per_node, fit)
            # the bandwidth given is the target's servers'; another layout (--measured's) gets the default
            given = bandwidth if (count, per_node, network) == (gpus, gpus_per_node, fabric) else None
            server = given or network_model.default_bandwidth(network, max(1, min(per_node, count)))
            traffic = None
            if server is not None:
                traffic = network_model.Traffic(
                    server, network_model.traffic_bytes(model, job.method), micro_batch_flops
                )
            m = mfu_model.realized_mfu(
                on,
                active_params=sized.active_params,
                gpus=count,
                gpus_per_node=per_node,
                fabric=network,
                traffic=traffic,
                moe=model.moe,
                method=job.method,
                precision=job.precision,
                recompute=recompute,
                stack=stack,
                attention_share=sized_flops.attention / sized_flops.total,
                fit=fit,
            )
            return m if why is None else _held(m, flops.total / sized_flops.total, why)

        if job.measured is None:
            m = modelled(gpu, gpus, gpus_per_node, fabric, job.stack, memory.recompute)
            mfu, factors = Range(m.low, m.expected, m.high), m.factors
        else:
            mfu, factors = _from_measurement(
                job, flops, gpu, gpus, gpus_per_node, fabric, memory.recompute, modelled, fit
            )
    peak = mfu_model.peak_flops(gpu, job.precision)
    # GPU-hours are inversely proportional to MFU: the high MFU gives the low (fastest) figure
    gpu_hours = Range(*(flops.total / (peak * u) / 3600 for u in (mfu.high, mfu.expected, mfu.low)))
    return Estimate(
        job=job,
        gpu=gpu,
        gpus=gpus,
        gpus_per_node=per_node,
        fabric=fabric,
        flops=flops,
        mfu=mfu,
        gpu_hours=gpu_hours,
        wall_hours=gpu_hours.scaled(1 / gpus),
        memory=memory,
        scope=scope_model.judge(job, gpu, gpus, gpus_per_node, given=mfu_override is not None),
        factors=factors,
        gpus_per_node_basis=where.gpus_per_node_basis,
        fabric_basis=where.fabric_basis,
        bandwidth=link if spans_nodes and mfu_override is None else None,
    )
