"""What the calibration covers, and whether a job lies inside it.

The realized-MFU model's constants and its ranges were read off published whole runs
(optimizer/data/calibration_runs.csv): a range "held 30 of 33 typical runs" only for jobs like those runs. A job
outside them (a LoRA fine-tune when every run is full pre-training, 100,000 GPUs when the largest run used 16,384,
a 32K sequence when the longest was 8,192, a 1M-parameter model when the smallest was 70M) gets the same
arithmetic, but no published run tested it there: the estimate is extrapolated, and the output says so with the
reason instead of quoting the range as held. The bounds are computed from the calibration files themselves
(``coverage``), so a run added to the file moves them; each names the run that sets it.

The global batch (tokens per optimizer step) comes from optimizer/data/calibration_batches.csv, which the MFU model
does not read. costopt assumes plain data parallelism (ZeRO-3/FSDP) with ``--micro-batch`` sequences per GPU per
step, so a job's global batch is at least GPUs x micro-batch x sequence length, and its optimizer steps at most
tokens / that. Above the largest batch any calibration run used, or below the fewest steps any took, the
estimate is extrapolated and a warning says why such a job is doubtful as training, not only as a time.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from optimizer import mfu as mfu_model
from optimizer.models import ASSUMED_SEQ_LEN, resolve_model
from optimizer.units import human_count

if TYPE_CHECKING:
    from optimizer.estimate import Job
    from warehouse.gpus import GpuSpec


@dataclass(frozen=True, slots=True)
class Bound:
    """One edge of the calibration's coverage and the run that sets it."""

    value: float
    run: str


@dataclass(frozen=True, slots=True)
class ClassSpan:
    """How far a stack class's own runs reach: its range was read off them alone."""

    gpus: Bound  # the most GPUs any of its runs used at once
    across_nodes: bool  # whether any of its runs spanned more than one node


@dataclass(frozen=True, slots=True)
class Coverage:
    """What the included calibration runs span (``coverage()``)."""

    runs: int
    gpus: Bound  # the most GPUs at once
    smallest: Bound  # the fewest active parameters (what the small-model term reads)
    largest: Bound  # the most active parameters
    largest_total: Bound  # the most parameters in all (mixture-of-experts)
    seq_len: Bound  # the longest sequence (a row's own, else its preset's, else the assumed length)
    methods: frozenset[str]  # training methods (full, lora, qlora) of the runs: a row without a method is full
    batch_tokens: Bound  # the largest global batch a run with a known batch used
    steps: Bound  # the fewest optimizer steps a run with a known batch took (its tokens / its batch)
    classes: dict[str, ClassSpan]


def _rows(name: str) -> list[dict[str, str]]:
    text = resources.files("optimizer").joinpath(f"data/{name}").read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def _active_params(row: dict[str, str]) -> tuple[float, float]:
    """(active, total) parameters of a calibration row, as ``calibration._model`` reads them (a test compares)."""
    if row["model"]:
        spec = resolve_model(row["model"])
        return spec.active_params, spec.total_params
    total = float(row["total_params_b"]) * 1e9
    return float(row["active_params_b"] or row["total_params_b"]) * 1e9, total


def _seq_len(row: dict[str, str]) -> int:
    if row["seq_len"]:
        return int(row["seq_len"])
    return resolve_model(row["model"]).train_seq_len if row["model"] else ASSUMED_SEQ_LEN


def _nodes(row: dict[str, str]) -> int:
    gpus = int(row["gpus"])
    return math.ceil(gpus / max(1, min(gpus, int(row["gpus_per_node"]))))


def _most(items: Iterable[tuple[float, str]]) -> Bound:
    value, run = max(items, key=lambda item: item[0])
    return Bound(value, run)


def _fewest(items: Iterable[tuple[float, str]]) -> Bound:
    value, run = min(items, key=lambda item: item[0])
    return Bound(value, run)


@functools.cache
def coverage() -> Coverage:
    """The calibration's coverage, from optimizer/data/calibration_runs.csv (included runs) and
    calibration_batches.csv (their global batches, where found)."""
    runs = [r for r in _rows("calibration_runs.csv") if r["include"] == "yes"]
    by_id = {r["id"]: r for r in runs}
    params = {r["id"]: _active_params(r) for r in runs}
    batches = [
        (float(b["global_batch_tokens"]), by_id[b["id"]])
        for b in _rows("calibration_batches.csv")
        if b["global_batch_tokens"] and b["id"] in by_id
    ]
    classes = {
        stack: ClassSpan(
            gpus=_most((float(r["gpus"]), r["run"]) for r in runs if r["stack"] == stack),
            across_nodes=any(_nodes(r) > 1 for r in runs if r["stack"] == stack),
        )
        for stack in sorted({r["stack"] for r in runs})
    }
    return Coverage(
        runs=len(runs),
        gpus=_most((float(r["gpus"]), r["run"]) for r in runs),
        smallest=_fewest((params[r["id"]][0], r["run"]) for r in runs),
        largest=_most((params[r["id"]][0], r["run"]) for r in runs),
        largest_total=_most((params[r["id"]][1], r["run"]) for r in runs),
        seq_len=_most((float(_seq_len(r)), r["run"]) for r in runs),
        methods=frozenset(r.get("method") or "full" for r in runs),
        batch_tokens=_most((tokens, r["run"]) for tokens, r in batches),
        steps=_fewest((float(r["tokens_b"]) * 1e9 / tokens, r["run"]) for tokens, r in batches),
        classes=classes,
    )


@dataclass(frozen=True, slots=True)
class Reason:
    """One way a job lies outside the calibration: ``text`` with the job's figures (estimate, JSON), ``summary``
    without them, the same for every option of a plan that has it (plan's footer), ``kind`` what it is about."""

    kind: str  # gpu, method, small, fastest, large, seq_len, gpus, nodes, batch, steps
    text: str
    summary: str


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a job lies against the calibration: the reasons it is outside (empty: inside), and warnings about the
    job itself (a batch no run used)."""

    reasons: tuple[Reason, ...]
    warnings: tuple[str, ...]
    batch_tokens: int  # the smallest global batch the layout implies: GPUs x micro-batch x sequence length
    steps: float  # the most optimizer steps the job can take: tokens / batch_tokens

    @property
    def extrapolated(self) -> bool:
        return bool(self.reasons)

    @property
    def because(self) -> list[str]:
        """The reasons as the JSON lists them (``extrapolated_because``)."""
        return [r.text for r in self.reasons]


def gpu_reason(gpu: GpuSpec) -> str | None:
    """Why a GPU family's speed is extrapolated (no published whole run on it), or None (``mfu.speed_basis``)."""
    if mfu_model.speed_basis(gpu) == "calibrated":
        return None
    stated = f" and {mfu_model.describe_software_factor(gpu)}" if mfu_model.amd_factor(gpu) is not None else ""
    return (
        f"no published whole training run on {gpu.architecture} ({gpu.name}) is in the calibration; the time rests "
        f"on the datasheet{stated}"
    )


def judge(job: Job, gpu: GpuSpec, gpus: int, gpus_per_node: int, *, given: bool = False) -> Scope:
    """Where ``job`` on ``gpus`` x ``gpu`` lies against ``coverage()``.

    ``given`` (--mfu): the user's MFU replaces the model, so only the batch and step bounds, which are about the job
    and not the model, apply. Under --measured the user's own run sets the team, so the method (measured with it)
    and the stack class's span do not apply; the rest does: the model carries the measurement to this GPU and count.
    """
    cover = coverage()
    seq = job.sequence_length
    batch = gpus * job.micro_batch * seq
    steps = job.tokens / batch
    reasons = [] if given else _model_reasons(job, gpu, gpus, gpus_per_node, cover)
    most, fewest = cover.batch_tokens, cover.steps
    wide = batch > most.value
    few = steps < fewest.value
    if wide:
        reasons.append(
            Reason(
                "batch",
                f"at least {human_count(batch)} tokens per optimizer step ({gpus:,} GPUs x micro-batch "
                f"{job.micro_batch} x {seq:,} tokens), more than any calibration run used "
                f"({human_count(most.value)}, {most.run})",
                f"more tokens per optimizer step than any calibration run used ({human_count(most.value)}, {most.run})",
            )
        )
    if few:
        reasons.append(
            Reason(
                "steps",
                f"at most {_whole(steps)} optimizer steps, fewer than any calibration run took "
                f"({_whole(fewest.value)}, {fewest.run})",
                f"fewer optimizer steps than any calibration run took ({_whole(fewest.value)}, {fewest.run})",
            )
        )
    warnings = []
    if wide or few:
        warnings.append(
            f"warning: data parallelism on {gpus:,} GPUs takes at least {human_count(batch)} tokens per optimizer "
            f"step, so {human_count(job.tokens)} tokens are at most {_whole(steps)} steps; no calibration run used "
            f"more than {human_count(most.value)} tokens per step or fewer than {_whole(fewest.value)} steps. The "
            "time assumes every GPU stays busy; whether a model trains well on so large a batch, or in so few steps, "
            "is not in it (beyond the critical batch size a larger batch stops saving steps: McCandlish et al. 2018, "
            "arXiv:1812.06162): fewer GPUs, or more tokens"
        )
    return Scope(reasons=tuple(reasons), warnings=tuple(warnings), batch_tokens=batch, steps=steps)


def _model_reasons(job: Job, gpu: GpuSpec, gpus: int, gpus_per_node: int, cover: Coverage) -> list[Reason]:
    """The reasons that concern the MFU model: GPU family, method, model size, sequence length and scale."""
    model = job.model
    reasons = []
    family = gpu_reason(gpu)
    if family is not None:
        reasons.append(Reason("gpu", family, f"no published whole training run on {gpu.architecture}"))
    if job.measured is None and job.method not in cover.methods:
        guess = f"; QLoRA's x{mfu_model.QLORA:g} for dequantization is a stated guess" if job.method == "qlora" else ""
        text = f"{job.method} fine-tuning: every calibration run is full training from random weights{guess}"
        reasons.append(Reason("method", text, text))
    fastest = mfu_model.fastest_size(gpu, gpus, gpus_per_node, stack=job.stack)
    below_floor = model.active_params < cover.smallest.value
    held = ": the time per token is held at that size's" if below_floor and fastest <= cover.smallest.value else ""
    if model.active_params < fastest and fastest > cover.smallest.value:
        text = (
            f"{human_count(model.active_params)} active parameters on {gpus:,} GPUs across servers, fewer than "
            f"{human_count(fastest)}, below which the model's small-model and scale-out terms would make a smaller "
            "model slower (no calibration run is there)"
        )
        summary = (
            "across servers, fewer active parameters than the size below which the model's small-model and scale-out"
            " terms would make a smaller model slower (no calibration run is there): the time per token is held there"
        )
        reasons.append(Reason("fastest", text + ": the time per token is held at that size's", summary))
    for kind, outside, what, bound in (
        ("small", model.active_params < cover.smallest.value, "active parameters, fewer", cover.smallest),
        ("large", model.active_params > cover.largest.value, "active parameters, more", cover.largest),
        (
            "large",
            model.active_params <= cover.largest.value and model.total_params > cover.largest_total.value,
            "parameters in all, more",
            cover.largest_total,
        ),
    ):
        if outside:
            count = model.active_params if what.startswith("active") else model.total_params
            text = f"{human_count(count)} {what} than any calibration run's ({human_count(bound.value)}, {bound.run})"
            reasons.append(Reason(kind, text + (held if kind == "small" else ""), text))
    if job.sequence_length > cover.seq_len.value:
        text = (
            f"sequences of {job.sequence_length:,} tokens, longer than any calibration run's "
            f"({cover.seq_len.value:,.0f}, {cover.seq_len.run})"
        )
        reasons.append(Reason("seq_len", text, text))
    # a class's range was read off its own runs; the default class's also off every run predicted as it
    # (mfu.range_claim), so all runs bound it, as they bound --measured's model terms
    span = cover.classes.get(job.stack) if job.measured is None and job.stack != mfu_model.DEFAULT_STACK else None
    most = span.gpus if span is not None else cover.gpus
    who = f"any {job.stack} run in the calibration" if span is not None else "any calibration run"
    nodes = math.ceil(gpus / max(1, min(gpus, gpus_per_node)))
    if gpus > most.value:
        reasons.append(
            Reason(
                "gpus",
                f"{gpus:,} GPUs, more than {who} used ({most.value:,.0f}, {most.run})",
                f"more GPUs than {who} used ({most.value:,.0f}, {most.run})",
            )
        )
    elif span is not None and nodes > 1 and not span.across_nodes:
        reasons.append(
            Reason(
                "nodes",
                f"{nodes} nodes: every {job.stack} run in the calibration ran on one node",
                f"more than one node: every {job.stack} run in the calibration ran on one",
            )
        )
    return reasons


def _whole(value: float) -> str:
    return f"{value:,.0f}" if value >= 1 else f"{value:.2g}"
