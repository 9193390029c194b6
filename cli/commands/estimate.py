"""``costopt estimate``: how long a training job takes on a given GPU count, and whether it fits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.completion import complete_gpu
from cli.options import ExactOption, FormatOption
from cli.output import Format

if TYPE_CHECKING:
    from optimizer.estimate import Estimate, Job
    from optimizer.models import ModelSpec

ModelOption = Annotated[
    str,
    typer.Option("--model", "-m", help="Preset (llama3-8b, mixtral-8x7b...) or parameter count (8B, 1.3b, 175e9)."),
]
TokensOption = Annotated[
    str, typer.Option("--tokens", "-t", help="Training tokens: 500M, 100B, 1.5T, 2e12; at least one sequence.")
]
ActiveOption = Annotated[
    str | None,
    typer.Option(
        "--active-params",
        help="Active parameters per token, for mixture-of-experts: with a total count (--model 47B) or an MoE preset; "
        "refused on a dense preset.",
    ),
]
LayersOption = Annotated[
    int | None,
    typer.Option(
        "--layers",
        help="Layers of a bare parameter count, with --hidden (config.json's num_hidden_layers): the shape behind the "
        "attention FLOPs and activation memory, in place of a conventional one; for an MoE its active path's; not with "
        "a preset.",
        show_default=False,
    ),
]
HiddenOption = Annotated[
    int | None,
    typer.Option(
        "--hidden", help="Width of a bare count, with --layers (config.json's hidden_size).", show_default=False
    ),
]
VocabOption = Annotated[
    int | None,
    typer.Option(
        "--vocab",
        help="Vocabulary of a bare parameter count (config.json's vocab_size): the logits' memory, and the input "
        "table an untied embedding leaves out of the FLOPs.",
        show_default=False,
    ),
]
EmbeddingsOption = Annotated[
    str | None,
    typer.Option(
        "--embeddings",
        help="tied | untied (config.json's tie_word_embeddings true | false): untied, with --vocab, leaves the vocab x "
        "hidden input table out of the FLOPs (a lookup); default for a bare count: the whole count in the matmuls.",
        show_default=False,
    ),
]
MethodOption = Annotated[str, typer.Option("--method", help="full | lora | qlora.")]
PrecisionOption = Annotated[
    str,
    typer.Option(
        "--precision",
        help="bf16 | fp16 | fp8 (FP8 only on GPUs that have it; bf16 runs as fp16 on V100/T4, which lack it).",
    ),
]
SeqLenOption = Annotated[
    int | None,
    typer.Option(
        "--seq-len",
        help="Sequence length: sets the attention FLOPs and activation memory (default: the preset's training "
        "length; for a bare parameter count an assumed length the output names).",
    ),
]
MfuOption = Annotated[
    float | None,
    typer.Option(
        "--mfu",
        help="Override the realized MFU (0-1): the whole run's MFU in model FLOPs, so --recompute full, QLoRA and a "
        "stack class are not applied on top; not with --stack or --measured.",
    ),
]
MicroBatchOption = Annotated[int, typer.Option("--micro-batch", help="Sequences per GPU per step (activation memory).")]
CheckpointOption = Annotated[bool, typer.Option("--checkpointing", help="The older spelling of --recompute full.")]
NoCheckpointOption = Annotated[
    bool, typer.Option("--no-checkpointing", help="The older spelling of --recompute selective.")
]
RecomputeOption = Annotated[
    str | None,
    typer.Option(
        "--recompute",
        help="Activation recomputation, for memory and time alike: auto (default: selective where it fits, else "
        "full) | selective (every layer's activations kept) | full (only layer inputs kept; every layer's forward "
        "pass recomputed: MFU x0.75).",
        show_default=False,
    ),
]
TensorParallelOption = Annotated[
    str,
    typer.Option(
        "--tensor-parallel",
        help="Tensor parallelism with sequence parallelism inside one node, for the memory verdict (activations / N): "
        "auto (default: none where the activations fit, else the smallest of 2, 4, 8 up to the node that fits; "
        "NVLink/Infinity Fabric GPUs only) | N, dividing --gpus-per-node. No time charged.",
    ),
]
StackOption = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="Software stack and team: recipe | large-lab | tuned | own-script | typical (default) | basic. "
        "README: Which --stack.",
        show_default=False,
    ),
]

MeasuredOption = Annotated[
    str | None,
    typer.Option(
        "--measured",
        help="Your stack's measured throughput on this model, in place of --stack: tokens/s per GPU @ GPUs x GPU, "
        "e.g. 3100@8xA100-80GB; across servers RDMA is assumed, add :ethernet if not (3100@16xA100-80GB:ethernet). "
        "README: 'Your own throughput'.",
    ),
]


CSV_WHOLE = frozenset({"assumptions.mfu_factors"})
"""The CSV's one JSON cell: the MFU's factors are named by what applies (``moe``, ``qlora``, ``override`` under --mfu,
``measured_steady`` under --measured), so spread into columns they would change the header from job to job."""


def build_job(
    model: str,
    tokens: str,
    active_params: str | None,
    method: str,
    precision: str,
    seq_len: int | None,
    micro_batch: int,
    recompute: str = "auto",
    stack: str | None = None,
    measured: str | None = None,
    tensor_parallel: str = "auto",
    *,
    layers: int | None = None,
    hidden: int | None = None,
    vocab: int | None = None,
    embeddings: str | None = None,
) -> Job:
    """The job the model options describe; shared by ``estimate`` and ``plan``. ``stack`` None: the default class;
    ``layers``, ``hidden``, ``vocab``, ``embeddings``: the shape options of a bare count (models.resolve_model)."""
    from optimizer import mfu as mfu_model
    from optimizer.estimate import Job
    from optimizer.measured import parse_measurement
    from optimizer.models import resolve_model
    from optimizer.units import parse_count

    return Job(
        model=resolve_model(
            model, active_params=active_params, layers=layers, hidden=hidden, vocab=vocab, embeddings=embeddings
        ),
        tokens=parse_count(tokens, what="--tokens"),
        method=method,
        precision=precision,
        seq_len=seq_len,
        micro_batch=micro_batch,
        recompute=recompute,
        tensor_parallel=tensor_parallel_setting(tensor_parallel),
        stack=stack if stack is not None else mfu_model.DEFAULT_STACK,
        measured=parse_measurement(measured) if measured is not None else None,
    )


def tensor_parallel_setting(text: str) -> int | None:
    """--tensor-parallel: ``auto`` (None) or a whole number; whether the node holds it is the estimate's check."""
    from warehouse.errors import UsageError

    if text == "auto":
        return None
    if not text.isdigit() or int(text) <= 0:
        raise UsageError(f"--tensor-parallel must be auto or a positive whole number, got {text!r}")
    return int(text)


def recompute_setting(recompute: str | None, checkpointing: bool, no_checkpointing: bool) -> str:
    """--recompute, or what the older --checkpointing / --no-checkpointing spell (full / selective: the memory they
    meant); a combination that asks for two strategies is refused (exit 2) rather than one of them guessed."""
    from cli.options import either

    older = either(checkpointing, no_checkpointing, "--checkpointing", "--no-checkpointing")
    if older is None:
        return recompute or "auto"
    flag, meant = ("--checkpointing", "full") if older else ("--no-checkpointing", "selective")
    if recompute is not None and recompute != meant:
        from warehouse.errors import UsageError

        raise UsageError(
            f"{flag} (--recompute {meant}) and --recompute {recompute} contradict each other: give --recompute only"
        )
    return meant


def estimate_command(
    model: ModelOption,
    tokens: TokensOption,
    gpu: Annotated[
        str,
        typer.Option("--gpu", help="GPU name or alias, e.g. A100-80GB, H100, RTX 4090.", autocompletion=complete_gpu),
    ],
    gpus: Annotated[int, typer.Option("--gpus", help="Number of GPUs in the job.")],
    gpus_per_node: Annotated[
        int | None,
        typer.Option(
            "--gpus-per-node",
            help="GPUs per server (default: the GPU table's count where it has one, e.g. 4 MI250X; else 8).",
            show_default=False,
        ),
    ] = None,
    fabric: Annotated[
        str | None,
        typer.Option(
            "--fabric",
            help="Network between servers: rdma (InfiniBand/EFA/RoCE) | ethernet (default: ethernet for PCIe cards, "
            "rdma for SXM/OAM modules; the answer says which).",
            show_default=False,
        ),
    ] = None,
    active_params: ActiveOption = None,
    layers: LayersOption = None,
    hidden: HiddenOption = None,
    vocab: VocabOption = None,
    embeddings: EmbeddingsOption = None,
    method: MethodOption = "full",
    precision: PrecisionOption = "bf16",
    seq_len: SeqLenOption = None,
    micro_batch: MicroBatchOption = 1,
    checkpointing: CheckpointOption = False,
    no_checkpointing: NoCheckpointOption = False,
    recompute: RecomputeOption = None,
    tensor_parallel: TensorParallelOption = "auto",
    stack: StackOption = None,
    measured: MeasuredOption = None,
    mfu: MfuOption = None,
    format: FormatOption = Format.table,
    exact: ExactOption = False,
) -> None:
    """Training FLOPs, realized MFU, GPU-hours and wall time (low / expected / high), and memory fit."""
    from cli.output import Column, print_table, say, to_rounded_json
    from optimizer.absurd import refuse_absurd_wall_time
    from optimizer.estimate import (
        estimate,
        precision_note,
        range_means,
        recompute_means,
        refuse_less_than_a_step,
        stack_class,
    )
    from optimizer.units import human_count, human_hours
    from warehouse.gpus import catalog

    setting = recompute_setting(recompute, checkpointing, no_checkpointing)
    stack = stack_class(stack, mfu)
    job = build_job(
        model,
        tokens,
        active_params,
        method,
        precision,
        seq_len,
        micro_batch,
        setting,
        stack,
        measured,
        tensor_parallel,
        layers=layers,
        hidden=hidden,
        vocab=vocab,
        embeddings=embeddings,
    )
    refuse_less_than_a_step(job, gpus)
    est = estimate(job, catalog().resolve(gpu), gpus, gpus_per_node=gpus_per_node, fabric=fabric, mfu_override=mfu)
    refuse_absurd_wall_time(est.wall_hours.expected, on=f"on {gpus} x {est.gpu.name}", remedy="or give more --gpus")
    data = est.as_dict()
    if format is Format.json:
        print(to_rounded_json(data, exact=exact))
        return
    if format is Format.csv:  # the JSON's one object flattened, as breakeven's: dotted columns, one row
        import sys

        from cli.output import to_rounded_csv_row

        sys.stdout.write(to_rounded_csv_row(data, exact=exact, whole=CSV_WHOLE))
        return
    m = est.job.model
    rows = [
        ["MFU (realized)", f"{est.mfu.low:.1%}", f"{est.mfu.expected:.1%}", f"{est.mfu.high:.1%}"],
        ["GPU-hours", *(f"{v:,.0f}" for v in (est.gpu_hours.low, est.gpu_hours.expected, est.gpu_hours.high))],
        ["wall time", *(human_hours(v) for v in (est.wall_hours.low, est.wall_hours.expected, est.wall_hours.high))],
    ]
    title = (
        f"{m.name} ({human_count(m.active_params)} active) x {human_count(job.tokens)} tokens on "
        f"{gpus} x {est.gpu.name}: {est.flops.total:.3g} FLOPs"
    )
    fit = est.memory
    verdict = "fits" if fit.fits else "DOES NOT FIT"
    columns = [Column("", "", "name"), *(Column(k, k, "figure") for k in ("low", "expected", "high"))]
    print_table(rows, columns, title=title)
    shape = shape_note(m)
    if shape:
        say(shape, indent="  ")
    say(
        f"memory: {verdict}: {fit.reason}; model+optimizer states {fit.total_gb:,.0f} GB in all; {_minimum(est)}",
        indent="  ",
    )
    used = est.gpu.precision_used(job.precision)
    say(
        f"assumes: {job.method} training, {used}{' mixed precision' if used != job.precision else ''}, "
        f"ZeRO-3/FSDP sharding, {_layout(est)}, {_team(est)}, {sequence_note(job)}; "
        f"range: {range_means(est)}",
        indent="  ",
    )
    say(f"activations: {recompute_means(est)}", indent="  ")
    why = precision_note(est.gpu, job.precision)
    if why:
        say(f"precision: {why} (--precision {job.precision} asked)", indent="  ")
    for line in est.scope.warnings:
        say(line, indent="  ")
    outside = "; ".join(est.scope.because)
    if job.measured is not None:
        f = est.factors
        say(
            f"MFU: your {f['measured_steady']:.1%} steady (--measured) x {f['goodput']:g} goodput "
            f"x {f['transfer']:.2f} from the measured GPUs to these (the model's terms); range: README, "
            "'Your own throughput'",
            indent="  ",
        )
        if outside:
            say(f"extrapolated: {outside}; the range is carried over, not held", indent="  ")
        return
    if est.given_mfu is not None:
        say(
            f"MFU: {est.given_mfu:.1%} as given (--mfu), not the calibrated model; read as the whole run's MFU in "
            "model FLOPs: recomputation, QLoRA and a stack class are not applied on top",
            indent="  ",
        )
        return
    if outside:  # as plan marks it (an MI300X or B200 row can top a plan): outside the calibration's coverage
        say(
            f"MFU: extrapolated: {outside}; the calibrated runs' range is carried over, not held; --mfu overrides",
            indent="  ",
        )
        return
    say(
        "MFU: calibrated on published whole training runs (see README, `python bench/calibration.py`); --mfu overrides",
        indent="  ",
    )


def _minimum(est: Estimate) -> str:
    """The fewest GPUs that hold the job; per strategy where --recompute auto could run either and they differ."""
    fit, name = est.memory, est.gpu.name
    full, selective = fit.min_gpus_by_recompute["full"], fit.min_gpus_by_recompute["selective"]
    if est.job.recompute == "auto" and full is not None and full != selective:
        other = f"{selective} with selective" if selective is not None else "selective fits on no count"
        return f"minimum {full} {name} GPUs with full recomputation, {other}"
    return f"minimum {fit.min_gpus or 'no number of'} {name} GPUs"


def _team(est: Estimate) -> str:
    from optimizer.mfu import article

    job = est.job
    if est.given_mfu is not None:
        return f"the MFU you gave (--mfu {est.given_mfu:g}: no stack class)"
    if job.measured is None:
        return f"{article(job.stack)} {job.stack} stack (--stack)"
    return f"your stack as measured, {job.measured} (--measured)"


def shape_note(model: ModelSpec) -> str | None:
    """The shape the user gave (--layers/--hidden, --vocab, --embeddings) and what it does to the FLOPs, named as
    given; None where nothing was given (a preset's or a bare count's shape is in the JSON, with its basis)."""
    given = [model.shape_basis, model.vocab_basis, model.embeddings_basis]
    if "given" not in given:
        return None
    parts = []
    if model.shape_basis == "given":
        parts.append(f"shape: {model.layers} x {model.hidden} (given)")
    if model.embeddings_basis == "given" and model.embeddings == "untied":
        parts.append(f"embeddings: untied, {model.vocab:,} x {model.hidden} left out of the FLOPs (given)")
    elif model.embeddings_basis == "given":
        vocab = f", vocabulary {model.vocab:,} (given)" if model.vocab_basis == "given" else ""
        parts.append(f"embeddings: tied (given), the whole count in the matmuls{vocab}")
    elif model.vocab_basis == "given":
        parts.append(f"vocabulary {model.vocab:,} (given); embeddings: the whole count in the matmuls (assumed)")
    return "; ".join(parts)


def sequence_note(job: Job) -> str:
    """The sequence length behind the attention FLOPs and activation memory, and where it comes from (estimate's
    assumes: line, plan's first lines and its --explain)."""
    where = {
        "--seq-len": "--seq-len",
        "preset": "the preset's training length",
        "preset-assumed": "assumed: the preset's source publishes no training length; --seq-len sets yours",
        "assumed": "assumed for a bare parameter count: --seq-len sets yours",
    }[job.seq_len_basis]
    return f"sequences of {job.sequence_length:,} tokens ({where})"


def _layout(est: Estimate) -> str:
    """How the job's GPUs sit: ``one GPU``, ``4 GPUs in one node``, ``8 GPUs per node, rdma between 4 nodes``; an
    assumed server size or network (optimizer/layout.py) is named as assumed, with the flag that sets it."""
    gpus, per_node = est.gpus, est.gpus_per_node
    if gpus == 1:
        return "one GPU"
    nodes = -(-gpus // per_node)
    if nodes == 1:
        return f"{gpus} GPUs in one node"
    size = f"{per_node} GPUs per node"
    if est.gpus_per_node_basis.startswith("the GPU table"):
        size += f" (as {est.gpu.name} nodes hold: GPU table)"
    elif not est.gpus_per_node_basis.startswith("given"):
        size += " (assumed: --gpus-per-node)"
    network = f"{est.fabric} between {nodes} nodes"
    if not est.fabric_basis.startswith("given"):
        other = "rdma" if est.fabric == "ethernet" else "ethernet"
        network += f" (assumed for {est.gpu.name} servers: --fabric {other} if yours differ)"
    return f"{size}, {network}"
