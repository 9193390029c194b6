"""``costopt estimate``: how long a training job takes on a given GPU count, and whether it fits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli.options import FormatOption
from cli.output import Format

if TYPE_CHECKING:
    from optimizer.estimate import Job

ModelOption = Annotated[
    str,
    typer.Option("--model", "-m", help="Preset (llama3-8b, mixtral-8x7b...) or parameter count (8B, 1.3b, 175e9)."),
]
TokensOption = Annotated[str, typer.Option("--tokens", "-t", help="Training tokens: 500M, 100B, 1.5T, 2e12.")]
ActiveOption = Annotated[
    str | None, typer.Option("--active-params", help="Active parameters per token, for mixture-of-experts.")
]
MethodOption = Annotated[str, typer.Option("--method", help="full | lora | qlora.")]
PrecisionOption = Annotated[str, typer.Option("--precision", help="bf16 | fp8 (FP8 only on GPUs that have it).")]
SeqLenOption = Annotated[
    int | None,
    typer.Option(
        "--seq-len", help="Sequence length: adds the attention FLOPs (default: the preset's training length)."
    ),
]
MfuOption = Annotated[float | None, typer.Option("--mfu", help="Override the realized MFU (0-1).")]
MicroBatchOption = Annotated[int, typer.Option("--micro-batch", help="Sequences per GPU per step (activation memory).")]
CheckpointOption = Annotated[
    bool, typer.Option("--checkpointing/--no-checkpointing", help="Activation checkpointing (memory).")
]
RecomputeOption = Annotated[
    str,
    typer.Option(
        "--recompute",
        help="selective (default) | full: recompute every layer's forward pass, a third more compute (MFU x0.75).",
    ),
]
StackOption = Annotated[
    str,
    typer.Option(
        "--stack",
        help="Software stack and team: large-lab | tuned | typical (default) | basic. README: 'Which --stack'.",
    ),
]


def build_job(
    model: str,
    tokens: str,
    active_params: str | None,
    method: str,
    precision: str,
    seq_len: int | None,
    micro_batch: int,
    checkpointing: bool,
    recompute: str = "selective",
    stack: str = "typical",
) -> Job:
    """The job the model options describe; shared by ``estimate`` and ``plan``."""
    from optimizer.estimate import Job
    from optimizer.models import resolve_model
    from optimizer.units import parse_count

    return Job(
        model=resolve_model(model, active_params=active_params),
        tokens=parse_count(tokens, what="--tokens"),
        method=method,
        precision=precision,
        seq_len=seq_len,
        micro_batch=micro_batch,
        checkpointing=checkpointing,
        recompute=recompute,
        stack=stack,
    )


def estimate_command(
    model: ModelOption,
    tokens: TokensOption,
    gpu: Annotated[str, typer.Option("--gpu", help="GPU name or alias, e.g. A100-80GB, H100, RTX 4090.")],
    gpus: Annotated[int, typer.Option("--gpus", help="Number of GPUs in the job.")],
    gpus_per_node: Annotated[int, typer.Option("--gpus-per-node", help="GPUs per server.")] = 8,
    fabric: Annotated[
        str, typer.Option("--fabric", help="Network between servers: rdma (InfiniBand/EFA) | ethernet.")
    ] = "rdma",
    active_params: ActiveOption = None,
    method: MethodOption = "full",
    precision: PrecisionOption = "bf16",
    seq_len: SeqLenOption = None,
    micro_batch: MicroBatchOption = 1,
    checkpointing: CheckpointOption = True,
    recompute: RecomputeOption = "selective",
    stack: StackOption = "typical",
    mfu: MfuOption = None,
    format: FormatOption = Format.table,
) -> None:
    """Training FLOPs, realized MFU, GPU-hours and wall time (low / expected / high), and memory fit."""
    from cli.output import print_table, to_json
    from optimizer.estimate import estimate
    from optimizer.units import human_count, human_hours
    from warehouse.gpus import catalog

    job = build_job(
        model, tokens, active_params, method, precision, seq_len, micro_batch, checkpointing, recompute, stack
    )
    est = estimate(job, catalog().resolve(gpu), gpus, gpus_per_node=gpus_per_node, fabric=fabric, mfu_override=mfu)
    data = est.as_dict()
    if format is Format.json:
        print(to_json(data))
        return
    if format is Format.csv:
        import csv
        import sys

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["quantity", "low", "expected", "high"])
        for key in ("mfu", "gpu_hours", "wall_hours"):
            writer.writerow([key, *data[key].values()])
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
    print_table(rows, ["", "low", "expected", "high"], title=title)
    print(
        f"memory: {verdict}: {fit.reason}; model+optimizer states {fit.total_gb:,.0f} GB in all; "
        f"minimum {fit.min_gpus or 'no number of'} {est.gpu.name} GPUs"
    )
    print(
        f"assumes: {job.method} training, {job.precision}, ZeRO-3/FSDP sharding, {est.gpus_per_node} GPUs per node, "
        f"{fabric} between nodes, a {job.stack} stack (--stack); low = fastest plausible outcome"
    )
    print(
        "MFU: calibrated on published whole training runs (see README, `python bench/calibration.py`); --mfu overrides"
    )
