"""The calibration set: published whole runs, the model's prediction for each, and the search behind the constants.

Shared by ``bench/calibration.py`` (the report), ``bench/fit_mfu.py`` (the search) and the tests, so all three
judge the same thing. The honest figure is leave-one-ORGANISATION-out: an organisation's runs share a software
stack, a cluster and a way of counting, so a run held out alone is still predicted by constants its siblings
chose. Each held-out organisation is predicted by the constants the same search picks from the others.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import itertools
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

from optimizer import measured as measured_model
from optimizer import mfu as mfu_model
from optimizer.estimate import Estimate, Job, estimate
from optimizer.mfu import FITTED, Fit
from optimizer.models import ModelSpec, derived_shape, resolve_model, with_shape
from warehouse.gpus import GpuSpec, catalog

BAND = (0.8, 1.25)  # the acceptance band for predicted / published GPU-hours (issues 4 and 14)


def rows(*, included_only: bool = True) -> list[dict[str, str]]:
    text = resources.files("optimizer").joinpath("data/calibration_runs.csv").read_text(encoding="utf-8")
    data = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    return [r for r in data if r["include"] == "yes" or not included_only]


def _model(row: dict[str, str]) -> ModelSpec:
    """The row's preset, or its parameter count with the published depth and width where the row gives them.

    The shape sets the attention FLOPs (12.L.d.S per token): a deep, thin model (MobileLLM 125M: 30 layers of 576)
    does 1.9x the attention work of the conventional shape ``derived_shape`` would give its parameter count. An
    untied input embedding (``tied`` = no: vocab x hidden parameters) is a lookup and leaves the FLOPs; a preset
    carries its own. ``attention_span`` (sliding windows) and ``lookup_params_b`` (value embeddings) let a row state
    a model such as nanochat's of 2026, whose own FLOP count a test reproduces.
    """
    if row["model"]:
        return resolve_model(row["model"])
    if row["active_params_b"]:
        spec = resolve_model(row["total_params_b"] + "B", active_params=row["active_params_b"] + "B")
    else:
        spec = derived_shape(float(row["total_params_b"]) * 1e9, row["run"])
    if row.get("tied") == "no" and not (row.get("vocab") and row.get("hidden")):
        raise ValueError(f"{row['run']}: an untied embedding needs the published vocab and hidden size")
    # the published shape by the rule --layers/--hidden/--vocab/--embeddings follow (models.with_shape), so a user who
    # types a run's shape gets the FLOPs it was calibrated with
    spec = with_shape(
        spec,
        layers=int(row["layers"]) if row.get("layers") else None,
        hidden=int(row["hidden"]) if row.get("hidden") else None,
        vocab=int(row["vocab"]) if row.get("vocab") else None,
        embeddings={"no": "untied", "yes": "tied"}.get(row.get("tied") or ""),
        heads=int(row["heads"]) if row.get("heads") else None,
        basis="published",
    )
    span = float(row.get("attention_span") or 1.0)
    lookups = float(row.get("lookup_params_b") or 0.0) * 1e9
    if not 0.0 < span <= 1.0 or not 0.0 <= lookups < spec.active_params - spec.input_embedding:
        raise ValueError(f"{row['run']}: attention_span must be in (0, 1] and lookup_params_b below the matmul count")
    return dataclasses.replace(spec, attention_span=span, lookup_params=lookups)


def job_of(row: dict[str, str], stack: str | None = None) -> Job:
    """The job a calibration row describes, run with the stack class its publication implies (or ``stack``)."""
    return Job(
        model=_model(row),
        tokens=float(row["tokens_b"]) * 1e9,
        precision=row["precision"] if row["precision"] in ("fp8", "fp16") else "bf16",
        seq_len=int(row["seq_len"]) if row["seq_len"] else None,
        recompute=row["recompute"] or "selective",
        stack=stack or row["stack"],
    )


@dataclass(frozen=True, slots=True)
class Case:
    """One calibration run, reduced to what the MFU model reads, so a search can re-predict it cheaply."""

    id: str
    name: str
    organisation: str
    stack: str
    published_gpu_hours: float
    job: Job
    gpu: GpuSpec
    gpus: int
    gpus_per_node: int
    fabric: str
    flops: float
    attention_share: float
    counted: float = 1.0  # the share of a whole run's GPU-hours the published figure counts (``counted_share``)
    attention: str = "fused"  # how the run computed attention (mfu.ATTENTION): read only by round 30's candidate term

    @classmethod
    def of(cls, row: dict[str, str]) -> Case:
        job = job_of(row)
        flops = job.flops()
        return cls(
            id=row["id"],
            name=row["run"],
            organisation=row["organisation"],
            stack=row["stack"],
            published_gpu_hours=float(row["gpu_hours"]),
            job=job,
            gpu=catalog().resolve(row["gpu"]),
            gpus=int(row["gpus"]),
            gpus_per_node=int(row["gpus_per_node"]),
            fabric=row["fabric"],
            flops=flops.total,
            attention_share=flops.attention / flops.total,
            counted=counted_share(row["basis"]),
            attention=attention_of(row),
        )

    def mfu(self, fit: Fit = FITTED, stack: str | None = None) -> mfu_model.Mfu:
        model = self.job.model
        return mfu_model.realized_mfu(
            self.gpu,
            active_params=model.active_params,
            gpus=self.gpus,
            gpus_per_node=self.gpus_per_node,
            fabric=self.fabric,
            moe=model.moe,
            precision=self.job.precision,
            recompute=self.job.recompute,
            stack=stack or self.stack,
            attention_share=self.attention_share,
            attention=self.attention,
            head_dim=model.hidden / model.heads,
            fit=fit,
        )

    def gpu_hours(self, mfu: float) -> float:
        """The GPU-hours the publication would show for a whole run at ``mfu``: the part of it its figure counts."""
        return self.flops / (mfu_model.peak_flops(self.gpu, self.job.precision) * mfu) / 3600 * self.counted

    def log_ratio(self, fit: Fit = FITTED, stack: str | None = None) -> float:
        """log(predicted expected GPU-hours / published GPU-hours)."""
        return math.log(self.gpu_hours(self.mfu(fit, stack).expected) / self.published_gpu_hours)

    def inside(self, fit: Fit = FITTED, stack: str | None = None) -> bool:
        """The published figure lies inside [low, high] (low = fastest plausible = highest MFU)."""
        m = self.mfu(fit, stack)
        return self.gpu_hours(m.high) <= self.published_gpu_hours <= self.gpu_hours(m.low)


def attention_of(row: dict[str, str]) -> str:
    """The row's ``attention`` label, blank read as fused (the calibration file's rule)."""
    attention = row.get("attention") or "fused"
    if attention not in mfu_model.ATTENTION:
        raise ValueError(f"{row['run']}: attention must be one of {', '.join(mfu_model.ATTENTION)} or blank")
    return attention


STEADY_BASIS = "iteration time x iterations"


def counted_share(basis: str) -> float:
    """The share of a whole run's GPU-hours a published figure counts, by how it was measured.

    Why: the model predicts a whole run (restarts, evaluation, checkpoints and stalls included), and most figures
    are one (GPU-hours as billed, or GPUs x wall-clock days). A figure summed from step times (Pythia's logged step
    time, nanochat's "Total training time", a speedrun's step log) is the steady rate alone, which the project
    everywhere else reads as ``measured.GOODPUT`` of a whole run (``--measured``, the AMD factor's derivation), so
    it is compared with that share of the prediction. Stated, not fitted (round 28 of issue 14).
    """
    return measured_model.GOODPUT if basis.startswith(STEADY_BASIS) else 1.0


def whole_count(case: Case) -> Case:
    """The case with every parameter in 6.N.D, an untied input embedding and any other lookup table too: the FLOP
    count of rounds 1-4 of issue 14, kept so that an ablation can measure what leaving the lookups out is worth."""
    model = dataclasses.replace(case.job.model, input_embedding=0.0, lookup_params=0.0)
    job = dataclasses.replace(case.job, model=model)
    flops = job.flops()
    return dataclasses.replace(case, job=job, flops=flops.total, attention_share=flops.attention / flops.total)


def cases(data: Iterable[dict[str, str]] | None = None) -> list[Case]:
    return [Case.of(row) for row in (rows() if data is None else data)]


def as_typed(case: Case, row: dict[str, str], *, seq_len: bool, shape: bool = False) -> Case:
    """The case as a user would type it into ``costopt estimate``: a preset's name, or else the bare parameter count
    (and active count), with the published sequence length as ``--seq-len`` or (``seq_len=False``) without it, and
    (``shape=True``) with --layers/--hidden/--vocab/--embeddings where the row publishes them (``typed_shape``).

    The calibration reads everything a publication states; a user who gives less gets the conventional shape, a
    whole-count 6.N.D and the assumed sequence length (``models.ASSUMED_SEQ_LEN``), and these views measure what
    that costs, out of sample (``bench/calibration.py``). What the command line does not take is lost even with the
    shape options: sliding windows (``attention_span``), value embeddings (``lookup_params_b``) and the published
    head count (the head width of unfused attention's cost).
    """
    if row["model"]:
        return case
    count = row["total_params_b"] + "B"
    active = row["active_params_b"] + "B" if row["active_params_b"] else None
    model = resolve_model(count, active_params=active, **(typed_shape(row) if shape else {}))
    job = dataclasses.replace(case.job, model=model, seq_len=case.job.seq_len if seq_len else None)
    flops = job.flops()
    return dataclasses.replace(case, job=job, flops=flops.total, attention_share=flops.attention / flops.total)


def typed_shape(row: dict[str, str]) -> dict[str, Any]:
    """The shape options a user would type for a row, from what it publishes (config.json's num_hidden_layers,
    hidden_size, vocab_size, tie_word_embeddings): --layers, --hidden, --vocab, --embeddings; None where it does not."""
    return {
        "layers": int(row["layers"]) if row.get("layers") else None,
        "hidden": int(row["hidden"]) if row.get("hidden") else None,
        "vocab": int(row["vocab"]) if row.get("vocab") else None,
        "embeddings": {"no": "untied", "yes": "tied"}.get(row.get("tied") or ""),
    }


@dataclass(frozen=True, slots=True)
class Run:
    """A calibration run predicted through the full ``estimate`` path (memory fit included), for reports."""

    id: str
    name: str
    organisation: str
    stack: str
    published_gpu_hours: float
    basis: str
    source: str
    estimate: Estimate

    @property
    def counted(self) -> float:
        return counted_share(self.basis)

    @property
    def ratio(self) -> float:
        """Predicted (expected) over published GPU-hours, the prediction's share the publication counts."""
        return self.estimate.gpu_hours.expected * self.counted / self.published_gpu_hours

    @property
    def inside(self) -> bool:
        hours = self.estimate.gpu_hours
        return hours.low * self.counted <= self.published_gpu_hours <= hours.high * self.counted


def predict(row: dict[str, str], fit: Fit = FITTED, *, stack: str | None = None) -> Run:
    est = estimate(
        job_of(row, stack),
        catalog().resolve(row["gpu"]),
        int(row["gpus"]),
        gpus_per_node=int(row["gpus_per_node"]),
        fabric=row["fabric"],
        fit=fit,
    )
    return Run(
        row["id"], row["run"], row["organisation"], stack or row["stack"], float(row["gpu_hours"]), row["basis"],
        row["source"], est,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Summary:
    runs: int
    within_band: float  # share of runs with 0.8 <= predicted/published <= 1.25
    inside_range: float  # share with the published figure inside [low, high]
    median_width: float  # median of high / low
    median_ratio: float
    median_error: float  # median |predicted / published - 1|
    ratios: list[float]

    @property
    def counts(self) -> tuple[int, int]:
        """(runs within 0.8-1.25x, runs inside [low, high]): the counts the targets and the pins are stated in."""
        return round(self.within_band * self.runs), round(self.inside_range * self.runs)


def summary_of(ratios: Sequence[float], inside: Sequence[bool], widths: Sequence[float]) -> Summary:
    return Summary(
        runs=len(ratios),
        within_band=sum(BAND[0] <= x <= BAND[1] for x in ratios) / len(ratios),
        inside_range=sum(inside) / len(ratios),
        median_width=statistics.median(widths),
        median_ratio=statistics.median(ratios),
        median_error=statistics.median(abs(x - 1) for x in ratios),
        ratios=list(ratios),
    )


def summarize(runs: list[Run]) -> Summary:
    return summary_of(
        [r.ratio for r in runs],
        [r.inside for r in runs],
        [r.estimate.gpu_hours.high / r.estimate.gpu_hours.low for r in runs],
    )


def evaluate(data: Sequence[Case], fits: Sequence[Fit], stack: str | None = None) -> Summary:
    """Accuracy of each case predicted by its own fit (``fits[k]`` for ``data[k]``), as the targets count it."""
    ratios, inside, widths = [], [], []
    for case, fit in zip(data, fits, strict=True):
        m = case.mfu(fit, stack)
        ratios.append(case.gpu_hours(m.expected) / case.published_gpu_hours)
        inside.append(case.inside(fit, stack))
        widths.append(m.high / m.low)
    return summary_of(ratios, inside, widths)


# The search behind optimizer.mfu.FITTED (report: ``python bench/fit_mfu.py``). One grid per constant, searched
# by coordinate descent (each constant in turn, the others held, until a whole sweep changes nothing): eight
# constants on full grids would be 10^9 candidates. Deterministic, so a test can pin the shipped values to it.
# Stated, not searched: the small-model and older-GPU terms, the AMD factors and the FP8 gain (optimizer/mfu.py).
GRID: dict[str, list[float]] = {
    "base": [round(0.30 + 0.02 * i, 2) for i in range(21)],
    "bandwidth_exponent": [round(0.1 * i, 1) for i in range(11)],
    "thin_params_per_gpu": [1e5, 2e5, 3e5, 5e5, 7e5, 1e6, 1.4e6, 2e6],
    "moe": [round(0.50 + 0.05 * i, 2) for i in range(11)],
    "attention_cost": [1.0, 1.25, 1.5, 2.0, 2.5, 3.0],
    "large_lab": [round(1.00 + 0.05 * i, 2) for i in range(11)],
    "typical": [round(0.30 + 0.05 * i, 2) for i in range(15)],
    "basic": [round(0.10 + 0.05 * i, 2) for i in range(19)],
    "recipe": [round(1.0 + 0.05 * i, 2) for i in range(21)],
    "own_script": [round(0.30 + 0.05 * i, 2) for i in range(25)],
}
# The GRID entries that are stack-class multipliers (relative to "tuned"), which an ablation without classes holds at 1.
CLASS_MULTIPLIERS = ("large_lab", "typical", "basic", "recipe", "own_script")
# The FP8 gain is stated, no longer searched (round 5): round 4's search on the whole runs put it at 1.4, inside the
# published FP8/BF16 benchmarks (mfu.FP8_BENCHMARKS, 1.28-1.42), and START holds it there. Only two organisations
# published whole FP8 runs (Meta's Llama 4 pair, DeepSeek-V3), so each cross-validation fold that holds one out sets
# the gain from the other alone; and on round 4's grid (1.2-2.0) the search now takes it to 1.5, outside the
# benchmarks, standing in for the large-lab multiplier once Llama's untied embeddings left the FLOPs
# (bench/fit_mfu.py measures it).
# Where the search starts, and what a constant keeps when the data cannot move it (a fold of the cross-validation
# with no run of a class keeps that class's value here): round 4's shipped fit, no extra attention cost, the FP8 gain
# as stated, and priors for the classes: a typical team at 0.8 of a tuned one, and a basic script at the same 0.8 (the
# prior of rounds 2-4, when nanoGPT was the one basic run; round 5's three Hugging Face script runs moved it to 0.25,
# round 9's Zero-Chatgpt, a Trainer script two times faster than those, to 0.55).
START = Fit(
    base=0.52,
    bandwidth_exponent=0.6,
    thin_params_per_gpu=7e5,
    moe=0.75,
    fp8_gain=1.4,
    small_params=FITTED.small_params,
    attention_cost=1.0,
    older=FITTED.older,
    large_lab=1.0,
    typical=0.8,
    basic=0.8,
    band_low=FITTED.band_low,
    band_high=FITTED.band_high,
    own_script=0.8,  # round 32: its runs were typical until then, so typical's prior
)
BAND_QUANTILES = (0.10, 0.90)  # the band covers this span of the fitted runs' residuals, widened below
MIN_ORGANISATIONS_FOR_OWN_BAND = 3  # a stack class with runs from fewer organisations gets the default's wide band
MIN_RUNS_FOR_OWN_CLASS = 5  # rounds 1-4 (per_class=False): a stated class with fewer runs got the default's band
BAND_MARGIN = 1.13  # each edge moved out by 13 %: a band read off in-sample residuals is too narrow out of sample
# The shipped ranges (since round 18, ``cross_validated_bands``): this span of the runs' out-of-sample residuals,
# aimed at 90 % (what they hold is measured and shown as ``mfu.Fit.held``, round 26), and --measured's read off the
# same-team transfers of those residuals. The in-sample bands above stay for the quick judgement of a search
# (``leave_one_organisation_out``, the loss ranking, the ablations).
CV_BAND_QUANTILES = (0.05, 0.95)


# A run predicted more than LOSS_CAP times too fast or too slow costs the search no more than one at exactly that
# factor. Round 6 of issue 14 (2026-11-24), measured by ``python bench/fit_mfu.py --loss``: with the plain mean
# |log error| the typical teams three times slower than the model (Lucie-7B, Pleias 3B, Motif 2.6B, YaLM, the
# SberDevices runs; nothing in their publications sets them apart) pulled the typical multiplier to 0.8 and the
# large-lab one to 1.1, and the bulk of the runs paid for it. Capped, they stop pulling the constants; the bands,
# read off every run's residual, still carry them. The cap is the one the same cross-validation picks among
# LOSS_CAPS: 1.8x on round 6's 87 runs; 1.3x on round 7's 88 (OLMoE-1B-7B added), where 1.8x falls to 60 of 88
# within 0.8-1.25x and 1.3x keeps 63, with the very constants round 6 shipped (on the 87 runs 1.3x had found others
# and 58); 1.5x on round 8's 89 (MiniCPM-2.4B added), where 1.3x and 1.5x find those same constants on all the runs
# and as many within out of sample (62 of 89), and 1.5x puts more inside the range (82 against 80); 1.3x again on
# round 9's 94 (five runs added), where 1.3x and 1.5x put as many within (63) and inside (83) and 1.3x has the
# narrower range (2.45 against 2.46); 1.8x on round 10's 96 (tiny-llm-zh 92M and APT3-1B added), where 1.5x and 1.8x
# put 62 within and 85 inside and 1.8x has the narrower range (2.43 against 2.44; 1.3x: 61 and 86); 2x on round 11's
# 99 (the two Paloma 1B baselines and Doge-320M added), where 1.5x, 2x and 2.5x put 63 within and 2x puts 87 inside
# (1.5x 86, 2.5x 86; 1.8x falls to 60 within); 1.3x on round 12's 105 (the FlashAttention paper's six GPT-2 runs
# added, and the search bound by the published benchmarks, ``below_benchmarks``), where 1.3x puts 66 within against
# 65 for 1.5x and 63 for 2x (unbound, 1.5x had put 66 within with constants above the benchmarks); 1.3x again on round
# 14's (the attention FLOPs of Motif 2.6B, YaLM 100B and APT3-1B counted), 69 within against 67 for 1.5x; 1.5x on
# round 15's 106 (OpenEuroLLM's 0.7B data-mix run added), where 1.3x and 1.5x put as many within (69) and inside (94)
# and 1.5x has the narrower range (2.55 against 2.56), with the constants round 14 shipped (1.3x moves typical to 0.95);
# 1.5x again on round 17's 107 (NVIDIA's Nemotron-3 8B added, and AMD-OLMo-1B's steady rate made a benchmark the
# search respects, ``below_benchmarks``), where 1.5x puts 69 within against 68 for 1.3x and 67 for 1.8x, with new
# constants (bandwidth exponent 0.7, scale-out 3e5, MoE 0.75, typical 0.85, basic 0.3). Without that benchmark 1.8x
# won (66 within and 97 inside against 1.3x's 66 and 96) with constants under which AMD-OLMo-1B's whole run beat the
# steady rate AMD measured for it. 1.5x again on round 19's 108 (MicroLlama 300M added: one person on four rented RTX
# 4090s), 70 within against 68 for 1.3x and 67 for 1.8x, and the constants move back to round 16's (bandwidth exponent
# 0.6, scale-out 5e5, MoE 0.7, typical 0.9, basic 0.25). 1.5x again on round 20's 110 (one person's two MiniLLM-0.2B
# runs on his bert4torch added), 70 within against 68 for 1.3x and 65 for 1.8x, the constants unchanged. 1.8x on round
# 21's 111 (one person's GPT-2 small on one RTX 3090, a plain PyTorch script, added), 72 within and 98 inside against 71
# and 97 for 1.5x, with new constants (base 0.52, bandwidth exponent 0.7, MoE 0.75, large-lab 1.05 of tuned, basic 0.3;
# scale-out 5e5 and typical 0.9 as before). 1.3x with each organisation weighing one on round 22's 114 (three runs of
# individuals and small teams added: OCRonos-Vintage, PyGPT, Tricycle's GPT-2), 74 within and 98 inside against 74 and
# 97 for round 21's 1.8x with pairs and 73 and 98 for 1.3x with pairs, with round 19-20's constants back (base 0.54,
# bandwidth exponent 0.6, MoE 0.7, large-lab 1.0 of tuned); round 23's 118 (four nanochat runs added) kept it. 1.8x
# with pairs on round 24's 125 (Karpathy's six nanochat leaderboard runs and one person's d20 on one H100 added), 75
# within and 103 inside against 75 and 101 for 1.3x with organisation weights and for 1.3x and 1.5x with pairs, with
# round 23's constants but the scale-out one (5e5 -> 7e5 parameters per GPU); round 25's 134 (nine runs of individuals
# and small teams added) kept it and every constant, 77 within and 109 inside against 77 and 108; so did round 26's
# 137 (three runs added, and llm-foundry's 512-GPU and one-node H100 rows made benchmarks the search respects: without
# them the search moved the bandwidth exponent to 0.4 and beat MosaicML's MPT 30B on 8 H100), 57 % within and 81 %
# inside against 57 % and 80 % for 1.3x and 1.5x with pairs and 1.3x by organisation. 1.3x with pairs on round 27's
# 137 (the recipe class added: 23 runs of single-node speed recipes run with their own code), 67 % within and 86 %
# inside; 1.5x with pairs and 1.3x by organisation put as many within and inside at a range no narrower; 1.8x with
# pairs 64 % and 85 %; with the scale-out constant at 5e5 and basic at 0.25 (round 19-23's). 1.3x by organisation on
# round 28's 138 (steady figures compared with the prediction times the goodput, one run added), 69 % within and 86 %
# inside, tied in everything with 1.3x and 1.5x with pairs (the first wins); recipe 1.3, basic 0.3. Which cap wins, and
# which constants, moves with one run: the search has several near-equal optima. So a cap picked by the
# cross-validation that judges it is flattered, and the figure to quote is the nested one (the cap chosen inside each
# fold without the held-out organisation, ``bench/fit_mfu.py --nested``; README). Round 41's 143 runs (OpenCoder's two
# added in round 40; StableLM-Alpha-7B-v2, ruGPT-3.5 and Pleias-pico-350m in 41) keep 1.3x by organisation: 101
# within and 123 inside with quick ranges, tied with pairs at 1.3x and 1.5x. Round 42's 146 (Phi-4-mini, XGLM-7.5B
# and granite.13b.v1 added) choose 1.5x with pairs: 102 within and 126 inside with quick ranges, against 101 and 125
# for 1.3x with pairs and 98 and 126 for 1.5x by organisation; every constant as before but own-script, 1.05 of tuned.
# Round 43's 147 (StarCoder2-3B added) keep 1.5x with pairs and every constant: 102 within and 126 inside.
# Round 46's 149 (CodeChat 8B and 2B added) keep 1.5x with pairs and every constant: 105 within and 128 inside.
# Round 50's 162 (Baguettotron-350M and CodeParrot-small added) keep 1.5x with pairs and every constant: 110 within
# and 143 inside with quick ranges.
# Round 51's 178 (sixteen runs added, three rows' labels corrected) keep 1.5x with pairs and every constant: 112
# within and 153 inside with quick ranges (1.3x with pairs 106, 2.0x 108).
# Round 54's 188 (ten runs added) keep 1.5x with pairs; own-script's multiplier moves 1.1 -> 1.0: 115 within and 160
# inside with quick ranges (1.3x with pairs 112, 2.0x 111).
# Round 56's 191 (three runs added) keep 1.5x with pairs; own-script's multiplier moves 1.0 -> 1.05: 116 within
# and 162 inside with quick ranges (1.3x with pairs 112, 2.0x 113).
LOSS_CAP = 1.5
LOSS_CAPS = (1.3, 1.5, 1.8, 2.0, 2.5, 3.0, None)  # what bench/fit_mfu.py compares; None: the uncapped mean |log|
# Whether each organisation-and-class pair weighs one in the loss (``pair_weights``) instead of each organisation
# (rounds 1-11). Since round 12 the cross-validation chooses it with the cap, by the same rule: on round 12's 105 runs
# pair weights with the 1.3x cap put 70 within out of sample against 66 for organisation weights (nested, with
# both chosen inside each fold: 68 against 63, median error 14.8 % against 16.1 %; the folds chose pairs 36 times
# of 38). It moves ``basic`` to the slower of its two kinds of runs. Round 22's 114 runs choose organisation weights
# again (with the 1.3x cap: 74 within and 98 inside, pairs 73 and 98; ``bench/fit_mfu.py --loss``); round 24's 125
# choose pairs, with the 1.8x cap (LOSS_CAP's comment), and round 25's 134 keep them (72 within with organisation
# weights against 77); round 27's keep them with the 1.3x cap (organisation weights put as many within and inside, at a
# wider range); round 28's 138 choose organisation weights, tied in everything with pairs at the 1.3x cap (the first
# wins; pairs would put basic at 0.25 instead of 0.3). Round 42's 146 choose pairs again, with the 1.5x cap (LOSS_CAP's
# comment).
LOSS_WEIGHTING = "pairs"  # each organisation-and-class pair weighs one ("orgs": each organisation)
Loss = tuple[float | None, str]  # (cap, weighting)
LOSSES: tuple[Loss, ...] = tuple((cap, weighting) for weighting in ("orgs", "pairs") for cap in LOSS_CAPS)
# Round 33 of issue 14's candidate, not in the menu: each run weighing one (``run_weights``), as the target counts them.
# On round 32's 138 runs its 1.3x cap puts 103 within and 118 inside with quick ranges (organisation weights: 98 and
# 118), and the menu's rule would pick it; the whole procedure with it puts 103 within but 117 inside (84.8 %, below the
# 85 % target; shipped: 120), so by the rule its plan fixed it stays out (docs/calibration-history.md). bench/fit_mfu.py
# keeps it as an ablation, and round 34's: each run weighed by its organisation's effective number of runs
# (``effective_weights``), 100 within and 119 inside by the whole procedure with the 1.5x cap, one run fewer inside.
T = TypeVar("T")


def score(log_ratios: Sequence[float], weights: Sequence[float], cap: float | None = LOSS_CAP) -> float:
    """Higher is better: minus the weighted mean of |log(predicted / published)|, each capped at log ``cap``.

    The mean absolute log error is the median-seeking loss, and capped it is a redescending one: a run a factor of
    three off (a team whose publication counted more than the run, or whose run stalled for reasons it does not say)
    moves no constant, instead of moving each as far as its weight allows. The share within 0.8-1.25x (the objective
    of round 1) is a step function of the constants: coordinate descent stalled on its plateaus and out of sample it
    did no better (62 % against 64 %). ``cap=None`` is the uncapped loss of rounds 2-5.
    """
    limit = math.inf if cap is None else math.log(cap)
    total = sum(weights)
    return -sum(w * min(abs(x), limit) for x, w in zip(log_ratios, weights, strict=True)) / total


# What the search maximises: "loss" (``score``, as shipped) or, round 35 of issue 14's candidate, "within": the number
# of runs within 0.8-1.25x, the count the target makes, with ``score`` only breaking ties between fits that put as
# many runs within (docs/calibration-history.md).
OBJECTIVES = ("loss", "within")


WITHIN_LOG = (math.log(BAND[0]), math.log(BAND[1]))  # BAND as log(predicted / published), as the search sees errors


def is_within(log_ratio: float) -> bool:
    """Whether one run's log(predicted / published) lies within 0.8-1.25x (BAND)."""
    return WITHIN_LOG[0] <= log_ratio <= WITHIN_LOG[1]


def within_count(log_ratios: Sequence[float]) -> int:
    """How many runs land within 0.8-1.25x (BAND) of their published hours: the count issue 14's target makes."""
    return sum(map(is_within, log_ratios))


def organisation_weights(data: Sequence[Case]) -> list[float]:
    """Each organisation weighs as one: Meta's fourteen model cards must not outvote AMD's or Yandex's one run."""
    counts = Counter(c.organisation for c in data)
    return [1.0 / counts[c.organisation] for c in data]


def pair_weights(data: Sequence[Case]) -> list[float]:
    """Each organisation-and-stack-class pair weighs as one (``"pairs"``): Meta's fourteen cards still weigh as
    one, and a team that published runs of two stacks is two pieces of evidence about the classes, not one split
    between them. The FlashAttention paper trained one GPT-2 with three stacks; weighed as one organisation, its
    transformers runs counted a sixth each towards ``basic``, a class only six organisations stand behind."""
    counts = Counter((c.organisation, c.stack) for c in data)
    return [1.0 / counts[(c.organisation, c.stack)] for c in data]


def run_weights(data: Sequence[Case]) -> list[float]:
    """Each run weighs as one (``"runs"``, round 33 of issue 14's candidate, not in ``LOSSES``): the target counts
    runs, so the loss might as well. Out of sample it puts more runs within and fewer inside their ranges: Meta's and
    Karpathy's many runs pull the class multipliers and narrow the ranges read off the others' errors."""
    return [1.0] * len(data)


# Round 34 of issue 14's candidate: the intra-organisation correlation of the held-out log errors (a one-way analysis
# of variance of round 32's, ``cross_validated``: 0.47), stated rounded.
ERROR_CORRELATION = 0.5


def effective_weights(data: Sequence[Case], rho: float = ERROR_CORRELATION) -> list[float]:
    """Each run weighs 1 / (1 + (n - 1) rho), n its organisation's runs (``"effective"``): an organisation's runs
    carry the evidence of n / (1 + (n - 1) rho) independent ones (Kish's design effect) when their errors correlate
    at ``rho``. rho = 1 is organisation weights (one each), 0 run weights; Meta's fourteen weigh 1.87 at 0.5."""
    counts = Counter(c.organisation for c in data)
    return [1.0 / (1.0 + (counts[c.organisation] - 1) * rho) for c in data]


def weights_of(weighting: str, data: Sequence[Case]) -> list[float]:
    """The loss's run weights under ``weighting``: "orgs", "pairs", "runs" or "effective"."""
    makers = {"orgs": organisation_weights, "pairs": pair_weights, "runs": run_weights, "effective": effective_weights}
    return makers[weighting](data)


def band_for(log_ratios: Sequence[float], margin: float = BAND_MARGIN) -> tuple[float, float]:
    """band_low, band_high: the fitted runs' residual spread (``BAND_QUANTILES``), each edge widened by ``margin``."""
    return spread(log_ratios, BAND_QUANTILES, margin)


def cross_validated_band_for(log_ratios: Sequence[float]) -> tuple[float, float]:
    """A range from out-of-sample residuals: their ``CV_BAND_QUANTILES`` span as it is, with no margin."""
    return spread(log_ratios, CV_BAND_QUANTILES, 1.0)


def conformal_span(
    log_ratios: Sequence[float], quantiles: tuple[float, float] = CV_BAND_QUANTILES
) -> tuple[float, float]:
    """The residuals' span at split-conformal ranks, not interpolated percentiles: of n sorted, the low edge at rank
    max(1, floor((n + 1) q_low)), the high at min(n, ceil((n + 1) q_high)), so that a new run drawn like these falls
    inside with at least the stated chance (the extremes where n < 19 at 5-95 %). Never inside 1, rounded.

    Why (round 26 of issue 14): the interpolated 5-95 % span, called a 90 % range, held 84 % of round 25's runs
    cross-validated as a whole procedure: a percentile of n residuals undercovers a new draw by about 1/n a side,
    and a held-out organisation is not quite exchangeable with the rest. Round 26's plan (docs/calibration-history.md)
    judges this read as a candidate for the shipped ranges; ``bench/range_designs.py`` measures it."""
    ranked = sorted(log_ratios)
    n = len(ranked)
    low_pct, high_pct = (round(q * 100) for q in quantiles)
    low_rank = max(1, (n + 1) * low_pct // 100)
    high_rank = min(n, -(-(n + 1) * high_pct // 100))
    return widened(ranked[low_rank - 1], ranked[high_rank - 1], 1.0)


def spread(log_ratios: Sequence[float], quantiles: tuple[float, float], margin: float) -> tuple[float, float]:
    """The residuals' span between two percentiles (interpolated), never inside 1, each edge moved out by
    ``margin``, rounded."""
    q = statistics.quantiles(sorted(log_ratios), n=100, method="inclusive")
    return widened(q[round(quantiles[0] * 100) - 1], q[round(quantiles[1] * 100) - 1], margin)


def widened(lo: float, hi: float, margin: float = BAND_MARGIN) -> tuple[float, float]:
    """A band from the low and high log residuals: never inside 1, each edge moved out by ``margin``, rounded."""
    return round(min(math.exp(lo), 1.0) / margin, 2), round(max(math.exp(hi), 1.0) * margin, 2)


def search(
    data: Sequence[Case],
    start: Fit = START,
    *,
    grid: dict[str, list[float]] | None = None,
    max_sweeps: int = 12,
    per_class_bands: bool = True,
    loss_cap: float | None = LOSS_CAP,
    weighting: str = LOSS_WEIGHTING,
    objective: str = "loss",
) -> Fit:
    """The fit the search picks on ``data``: coordinate descent over ``grid`` (GRID) on ``score``, then the bands.
    Each run weighs as ``weighting`` says (``weights_of``: each run, each organisation-and-class pair, or each
    organisation weighing one). ``objective="within"`` (round 35's candidate, not shipped) climbs the number of runs
    within 0.8-1.25x instead, ``score`` breaking its ties.

    A stronger search was tried in round 4 and not kept: after each converged sweep, every pair of constants moved
    one grid step together. It finds a better fit in sample (mean |log error| 0.274 against 0.278) and a worse one
    out of sample (43-44 of 66 runs within 0.8-1.25x against 48, 86 % inside the range against 91 %): starting at the
    stated priors (START) and moving one constant at a time keeps the fit near them, which is what transfers.
    """
    judged = _Judge(data, weights_of(weighting, data), loss_cap, objective)

    fit, best = start, judged(start)
    for _ in range(max_sweeps):
        changed = False
        for name, values in (GRID if grid is None else grid).items():
            for value in values:
                change: dict[str, Any] = {name: value}
                trial = dataclasses.replace(fit, **change)
                if trial == fit or not ordered(trial) or not below_benchmarks(trial):
                    continue
                result = judged(trial)
                if result > best:
                    fit, best, changed = trial, result, True
        if not changed:
            break
    return with_bands(fit, data, per_class=per_class_bands)


# The Fit fields every run's expected MFU reads; each run reads one class multiplier besides (its own class's).
_SHARED_FIELDS = tuple(f.name for f in dataclasses.fields(Fit) if f.name not in CLASS_MULTIPLIERS)


class _Judge:
    """``score`` of a trial fit on ``data`` (after the within count, for ``objective="within"``), remembering each
    run's log error by the fields it reads.

    Why: a coordinate-descent sweep over a class multiplier changes the prediction of that class's runs only, yet
    every trial recomputed all of them; the cross-validations run the search thousands of times (1,653 searches
    for the shipped ranges), and remembering each run's error by (the shared fields, its class's multiplier) halves
    their time. The values are ``Case.log_ratio``'s, so the search picks the same fit (the tests pin it).
    """

    def __init__(
        self, data: Sequence[Case], weights: Sequence[float], cap: float | None, objective: str = "loss"
    ) -> None:
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
        self.data, self.weights, self.cap, self.objective = data, weights, cap, objective
        self.shared: dict[tuple[Any, ...], int] = {}
        self.seen: list[dict[tuple[int, float], float]] = [{} for _ in data]

    def __call__(self, fit: Fit) -> tuple[int, float]:
        """(runs within, ``score``) under the "within" objective; (0, ``score``) under "loss": compared as tuples."""
        shared = self.shared.setdefault(tuple(getattr(fit, name) for name in _SHARED_FIELDS), len(self.shared))
        multiplier = {stack: fit.stack(stack) for stack in mfu_model.STACKS}
        ratios = []
        for case, seen in zip(self.data, self.seen, strict=True):
            key = (shared, multiplier[case.stack])
            ratio = seen.get(key)
            if ratio is None:
                ratio = seen[key] = case.log_ratio(fit)
            ratios.append(ratio)
        return within_count(ratios) if self.objective == "within" else 0, score(ratios, self.weights, self.cap)


def with_bands(fit: Fit, data: Sequence[Case], *, per_class: bool = True, margin: float = BAND_MARGIN) -> Fit:
    """The bands read off the residuals of ``data``: each stack class its own where it can, and the default's.

    A class whose runs come from at least MIN_ORGANISATIONS_FOR_OWN_BAND organisations gets the spread of its own
    runs: large-lab teams differ little, typical teams a great deal (out of sample from 0.3x to 1.6x of the expected
    figure), and one pooled band was too wide for the first and too narrow for the second. A class with runs from
    fewer organisations (today "basic": Hugging Face and the University of Bonn) gets the default's band: a spread read
    off one or two teams is a within-team spread. The pooled band (``band_low``/``band_high``, all runs with their own
    class) stays as the fallback and is what rounds 1-4 gave every stated class (``per_class=False``).

    The default ("typical") band also covers what the runs show when every one is assumed typical, and is never
    narrower than the pooled band: a user who says nothing may run a tuned stack or a basic one.
    """
    default = mfu_model.DEFAULT_STACK
    own = [c.log_ratio(fit) for c in data]
    as_default = [c.log_ratio(fit, default) for c in data]
    if not per_class:  # rounds 1-4: the pooled band for a stated class, the default's for a class with few runs
        low, high = band_for(own, margin)
        d_low, d_high = band_for(as_default, margin)
        wide = (min(d_low, low), max(d_high, high))
        counts = Counter(c.stack for c in data)
        thin = [s for s in mfu_model.STACKS if s != default and counts[s] < MIN_RUNS_FOR_OWN_CLASS]
        bands = ((default, *wide), *((s, *wide) for s in thin))
        return dataclasses.replace(fit, band_low=low, band_high=high, bands=bands)
    fit = class_bands(fit, data, own, as_default, functools.partial(band_for, margin=margin))
    return dataclasses.replace(fit, measured_band=transfer_band(data, [fit] * len(data), BAND_QUANTILES, margin))


def class_bands(
    fit: Fit,
    data: Sequence[Case],
    own: Sequence[float],
    as_default: Sequence[float],
    band: Callable[[Sequence[float]], tuple[float, float]],
) -> Fit:
    """``fit`` with its pooled band and each class's band read by ``band`` off the runs' log residuals: ``own``
    with each run's stated class, ``as_default`` with every run assumed the default class (``with_bands``)."""
    default = mfu_model.DEFAULT_STACK
    low, high = band(own)
    d_low, d_high = band(as_default)
    per_stack: dict[str, tuple[float, float]] = {}
    for stack in mfu_model.STACKS:
        members = [k for k, c in enumerate(data) if c.stack == stack]
        if len({data[k].organisation for k in members}) >= MIN_ORGANISATIONS_FOR_OWN_BAND:
            per_stack[stack] = band([own[k] for k in members])
    t_low, t_high = per_stack.get(default, (low, high))
    wide = (min(d_low, low, t_low), max(d_high, high, t_high))
    bands = tuple((stack, *(wide if stack == default else per_stack.get(stack, wide))) for stack in mfu_model.STACKS)
    return dataclasses.replace(fit, band_low=low, band_high=high, bands=bands)


def cross_validated_bands(fit: Fit, held: Sequence[HeldOut]) -> Fit:
    """``fit`` with the ranges the shipped estimator uses: each class's read off its runs' OUT-OF-SAMPLE residuals
    (each run predicted by the constants picked without its organisation, ``held``), their ``CV_BAND_QUANTILES``
    span with no margin.

    Why (round 18 of issue 14): a range read off in-sample residuals is too narrow for a team the calibration has
    not seen, and rounds 1-17 widened each edge by a fixed 13 % (BAND_MARGIN, set in round 1 by judgement). That
    widened every class alike, though the classes do not shrink alike out of sample: large-lab teams carry over
    almost as well as they fit, typical teams do not. Residuals of organisations held out already carry that
    difference, so the range is read where it should be, aimed at 90 % of the runs of an organisation not in the
    calibration (the idea of cross-conformal prediction); what it holds is measured, not assumed (``Fit.held``).
    ``bench/calibration.py`` checks the claim by cross-validating the whole procedure (``cross_validated``): 85 % inside
    on round 22's runs (88 % on round 21's), at a narrower median
    range.
    ``--measured``'s range is read the same way off the same-team transfers of those residuals.
    """
    default = mfu_model.DEFAULT_STACK
    data = [h.case for h in held]
    own = [h.case.log_ratio(h.fit) for h in held]
    as_default = [h.case.log_ratio(h.fit, default) for h in held]
    fit = class_bands(fit, data, own, as_default, cross_validated_band_for)
    measured = transfer_band(data, [h.fit for h in held], CV_BAND_QUANTILES, 1.0)
    return dataclasses.replace(fit, measured_band=measured)


def same_team(data: Sequence[Case]) -> list[list[int]]:
    """For each run, the other runs of its organisation with the same stack class: what ``--measured`` stands for."""
    return [
        [j for j, other in enumerate(data) if j != k and (other.organisation, other.stack) == (c.organisation, c.stack)]
        for k, c in enumerate(data)
    ]


def transfer_log_ratios(data: Sequence[Case], fits: Sequence[Fit]) -> list[tuple[int, float, float]]:
    """(run, log(actual / predicted MFU), weight) for each run predicted from one other run of the same team.

    The team's factor read off run ``m`` (published over modelled MFU) applied to run ``r`` leaves
    log_ratio(r) - log_ratio(m): the stack multiplier cancels, what remains is how well the model's terms carry one
    team's efficiency across models, sizes, GPU counts and GPUs, plus how each publication counted. Each run weighs
    one, split over the teammates it can be predicted from; a run without one is left out. ``fits[k]`` predicts
    ``data[k]`` (out of sample: the fit that never saw the run's organisation).
    """
    logs = [c.log_ratio(f) for c, f in zip(data, fits, strict=True)]
    return [(k, logs[k] - logs[m], 1.0 / len(mates)) for k, mates in enumerate(same_team(data)) for m in mates]


def weighted_quantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The smallest value with at least ``q`` of the total weight at or below it."""
    total, seen = sum(weights), 0.0
    ranked = sorted(zip(values, weights, strict=True))
    for value, weight in ranked:
        seen += weight
        if seen >= q * total - 1e-12:
            return value
    return ranked[-1][0]


def transfer_band(
    data: Sequence[Case], fits: Sequence[Fit], quantiles: tuple[float, float], margin: float
) -> tuple[float, float] | None:
    """``Fit.measured_band``: the same-team transfers' spread, widened by ``margin``; ``fits[k]`` predicts
    ``data[k]``. In sample (one fit for every run, BAND_QUANTILES, BAND_MARGIN): the quick folds' (``with_bands``).
    Out of sample (each run's fold fit, ``CV_BAND_QUANTILES``, no margin): the shipped one
    (``cross_validated_bands``)."""
    pairs = transfer_log_ratios(data, fits)
    if not pairs:
        return None
    values, weights = [x for _, x, _ in pairs], [w for _, _, w in pairs]
    low, high = (weighted_quantile(values, weights, q) for q in quantiles)
    return widened(low, high, margin)


@dataclass(frozen=True, slots=True)
class TransferSummary:
    """``--measured`` judged on the calibration: each run predicted from a teammate's run (per-run weights)."""

    runs: int  # runs with at least one teammate
    organisations: int
    pairs: int
    within_band: float
    inside_range: float
    median_error: float


def evaluate_transfers(data: Sequence[Case], fits: Sequence[Fit]) -> TransferSummary:
    """Shares of (run, teammate) predictions within BAND and inside ``fits[k].transfer_band()``; a run weighs one.
    Runs without a teammate give no pairs, and then every figure is 0."""
    pairs = transfer_log_ratios(data, fits)
    if not pairs:
        return TransferSummary(runs=0, organisations=0, pairs=0, within_band=0.0, inside_range=0.0, median_error=0.0)
    total = sum(w for _, _, w in pairs)

    def share(keep: Callable[[int, float], bool]) -> float:
        return sum(w for k, x, w in pairs if keep(k, math.exp(x))) / total

    def inside(k: int, ratio: float) -> bool:
        low, high = fits[k].transfer_band()
        return low <= ratio <= high

    teamed = {k for k, _, _ in pairs}
    return TransferSummary(
        runs=len(teamed),
        organisations=len({data[k].organisation for k in teamed}),
        pairs=len(pairs),
        within_band=share(lambda _, ratio: BAND[0] <= ratio <= BAND[1]),
        inside_range=share(inside),
        median_error=weighted_quantile([abs(math.exp(x) - 1) for _, x, _ in pairs], [w for _, _, w in pairs], 0.5),
    )


def ordered(fit: Fit) -> bool:
    """The classes are ordered by definition: large-lab >= tuned (1) >= typical >= basic, a published speed recipe run
    with its own code is no slower than a typical team's stack (round 27; whether it beats ``tuned`` is the data's to
    say), and a team's own script with fused kernels no slower than one without (round 32)."""
    classes = fit.large_lab >= 1.0 >= fit.typical >= fit.basic
    return classes and fit.recipe >= fit.typical and fit.own_script >= fit.basic


@dataclass(frozen=True, slots=True)
class Benchmark:
    """A short steady-state throughput measurement by the team that develops the framework, or by the team that ran
    the job (AMD-OLMo-1B, the source of the stated CDNA 2 factor) (optimizer/data/throughput_benchmarks.csv)."""

    model: str
    gpu: GpuSpec
    gpus: int
    params: float
    mfu: float
    stack: str
    gpus_per_node: int = 8


def benchmarks() -> list[Benchmark]:
    text = resources.files("optimizer").joinpath("data/throughput_benchmarks.csv").read_text(encoding="utf-8")
    gpus = catalog()
    table = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return [
        Benchmark(
            r["model"],
            gpus.resolve(r["gpu"]),
            int(r["gpus"]),
            float(r["params"]),
            float(r["mfu_pct"]) / 100,
            r["stack"],
            int(r["gpus_per_node"]),
        )
        for r in table
    ]


BENCHMARKS = benchmarks()


def below_benchmarks(fit: Fit, marks: Sequence[Benchmark] | None = None) -> bool:
    """Whether no whole run is expected to beat a published short benchmark of the same job: the search's second rule
    of admissible constants, after ``ordered``.

    A whole run pays for restarts, evaluation, checkpoints and stalls that a benchmark of a few steps does not, so
    constants under which llm-foundry run by MosaicML would sustain more over a whole run than MosaicML measured in
    steady state are wrong however well they fit. Round 12 of issue 14 (105 runs) made it a rule of the search: the
    loss cap the cross-validation picked (1.5x) found base 0.56, which puts a tuned 70B on 64 A100-80GB at 54 % MFU
    against the benchmark's 53 %; until then a test checked the shipped constants against these benchmarks after
    the fact.
    """

    def expected(b: Benchmark) -> float:
        return mfu_model.realized_mfu(
            b.gpu, active_params=b.params, gpus=b.gpus, gpus_per_node=b.gpus_per_node, stack=b.stack, fit=fit
        ).expected

    return all(expected(b) <= b.mfu for b in (BENCHMARKS if marks is None else marks))


@dataclass(frozen=True, slots=True)
class HeldOut:
    case: Case
    fit: Fit  # the constants the search picked without this case's organisation


def leave_one_organisation_out(
    data: Sequence[Case], *, searcher: Callable[[Sequence[Case]], Fit] = search
) -> list[HeldOut]:
    """Each organisation's runs predicted by the constants the search picks from every other organisation."""
    out: dict[str, HeldOut] = {}
    for organisation in dict.fromkeys(c.organisation for c in data):
        fit = searcher([c for c in data if c.organisation != organisation])
        for c in data:
            if c.organisation == organisation:
                out[c.id] = HeldOut(c, fit)
    return [out[c.id] for c in data]


def calibrated(
    data: Sequence[Case], *, searcher: Callable[[Sequence[Case]], Fit] = search, held: Sequence[HeldOut] | None = None
) -> Fit:
    """What ships as ``FITTED``: the constants the search picks on every run, with the ranges read off the runs'
    leave-one-organisation-out residuals (``cross_validated_bands``; ``held``, when already computed)."""
    held = leave_one_organisation_out(data, searcher=searcher) if held is None else held
    return cross_validated_bands(searcher(data), held)


def cross_validated(
    data: Sequence[Case], *, searcher: Callable[[Sequence[Case]], Fit] = search, workers: int = 1
) -> list[HeldOut]:
    """Leave-one-organisation-out of the whole procedure that ships (``calibrated``): each organisation's runs
    predicted by the constants picked without it AND by ranges read off a leave-one-organisation-out of the others.

    ``leave_one_organisation_out`` gives its folds in-sample ranges (quick, and what the loss ranking compares);
    this is the figure to quote for the shipped ranges. It needs a search without each organisation and without
    every pair of organisations (``fold_fits``: 1,176 searches for round 24's 48 organisations).
    """
    fits = fold_fits(data, searcher=searcher, workers=workers)
    out: dict[str, HeldOut] = {}
    for o in dict.fromkeys(c.organisation for c in data):
        inner = [HeldOut(c, fits[frozenset((o, c.organisation))]) for c in data if c.organisation != o]
        fit = cross_validated_bands(fits[frozenset((o,))], inner)
        out.update((c.id, HeldOut(c, fit)) for c in data if c.organisation == o)
    return [out[c.id] for c in data]


def fold_fits(
    data: Sequence[Case], *, searcher: Callable[[Sequence[Case]], Fit] = search, workers: int = 1
) -> dict[frozenset[str], Fit]:
    """The fit the search picks without each organisation and without each pair of organisations, keyed by the
    organisations left out: what ``cross_validated`` assembles, and what ``bench/range_designs.py`` reads other
    range designs off. ``workers`` processes share the searches (``searcher`` must pickle: ``searcher_for``'s do)."""
    organisations = list(dict.fromkeys(c.organisation for c in data))
    subsets = [frozenset((o,)) for o in organisations]
    subsets += [frozenset(pair) for pair in itertools.combinations(organisations, 2)]
    jobs = [[c for c in data if c.organisation not in excluded] for excluded in subsets]
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(searcher, jobs, chunksize=8))
    else:
        found = [searcher(job) for job in jobs]
    return dict(zip(subsets, found, strict=True))


def held_by_class(held: Sequence[HeldOut]) -> tuple[tuple[str, int, int], ...]:
    """``Fit.held`` off ``cross_validated``'s runs: each class's runs inside their range out of sample, and
    ("default", ...) every run inside the default class's range when predicted as the default class."""
    counts = tuple(
        (stack, sum(h.case.inside(h.fit) for h in members), len(members))
        for stack in mfu_model.STACKS
        if (members := [h for h in held if h.case.stack == stack])
    )
    default = sum(h.case.inside(h.fit, mfu_model.DEFAULT_STACK) for h in held)
    return (*counts, ("default", default, len(held)))


def measured_held(held: Sequence[HeldOut]) -> float:
    """``Fit.measured_held`` off ``cross_validated``'s runs: --measured's same-team predictions inside its range."""
    return round(evaluate_transfers([h.case for h in held], [h.fit for h in held]).inside_range, 2)


def held_out_summary(held: Sequence[HeldOut], stack: str | None = None) -> Summary:
    """``evaluate`` of held-out runs, each by the fit that never saw its organisation."""
    return evaluate([h.case for h in held], [h.fit for h in held], stack)


def loss_rank(s: Summary) -> tuple[float, float, float]:
    """How a loss (cap, weighting) is chosen: most runs within 0.8-1.25x, then most inside the range, then the
    narrower range."""
    return round(s.within_band, 9), round(s.inside_range, 9), -s.median_width


def chosen_loss(data: Sequence[Case], losses: Sequence[Loss] = LOSSES) -> Loss:
    """The loss (cap, weighting) whose search predicts ``data`` best leave-one-organisation-out (ties: the first
    in ``losses``)."""
    if len(losses) == 1:
        return losses[0]
    return chosen_with_held_out(data, losses)[0]


def chosen_with_held_out(data: Sequence[Case], losses: Sequence[Loss] = LOSSES) -> tuple[Loss, list[HeldOut]]:
    """``chosen_loss``, and the leave-one-organisation-out of ``data`` under it (what its ranges are read off)."""
    judged = [(loss, leave_one_organisation_out(data, searcher=searcher_for(*loss))) for loss in losses]
    if len(losses) == 1:
        return judged[0]
    loss = best_loss([(loss, held_out_summary(held)) for loss, held in judged])
    return loss, dict(judged)[loss]


def best_loss(judged: Sequence[tuple[T, Summary]]) -> T:
    """The loss (a cap, or a cap with its weighting) of the best-ranked summary (``loss_rank``); ties go to the
    earlier one."""
    return max(enumerate(judged), key=lambda item: (loss_rank(item[1][1]), -item[0]))[1][0]


def searcher_for(
    cap: float | None, weighting: str = LOSS_WEIGHTING, objective: str = "loss"
) -> Callable[[Sequence[Case]], Fit]:
    """The search under one loss; a partial, not a lambda, so that ``cross_validated`` can send it to workers."""
    return functools.partial(search, loss_cap=cap, weighting=weighting, objective=objective)


def nested_fold(data: Sequence[Case], organisation: str, losses: Sequence[Loss] = LOSSES) -> tuple[Loss, list[HeldOut]]:
    """The loss chosen without ``organisation``, and its runs predicted by the constants that loss's search picks.

    The loss is a choice made by cross-validation, so judging it by the same cross-validation flatters it; nested,
    the held-out organisation neither chooses the loss nor sets the constants (``bench/fit_mfu.py --nested``), nor
    the ranges: they are read off the others' leave-one-organisation-out under the chosen loss, as ``calibrated``
    reads the shipped ones.
    """
    others = [c for c in data if c.organisation != organisation]
    loss, inner = chosen_with_held_out(others, losses)
    fit = calibrated(others, searcher=searcher_for(*loss), held=inner)
    return loss, [HeldOut(c, fit) for c in data if c.organisation == organisation]
