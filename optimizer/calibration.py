"""The calibration set: published whole runs, and the model's prediction for each.

Shared by ``bench/calibration.py`` (the report) and the tests, so both judge the same thing.
"""

from __future__ import annotations

import csv
import dataclasses
import itertools
import math
import statistics
from dataclasses import dataclass
from importlib import resources

from optimizer.estimate import Estimate, Job, estimate
from optimizer.mfu import FITTED, Fit
from optimizer.models import derived_shape, resolve_model
from warehouse.gpus import catalog

BAND = (0.8, 1.25)  # issue 4's acceptance band for predicted / published GPU-hours


@dataclass(frozen=True, slots=True)
class Run:
    id: str
    name: str
    published_gpu_hours: float
    basis: str
    source: str
    estimate: Estimate

    @property
    def ratio(self) -> float:
        """Predicted (expected) over published GPU-hours."""
        return self.estimate.gpu_hours.expected / self.published_gpu_hours

    @property
    def inside(self) -> bool:
        return self.estimate.gpu_hours.low <= self.published_gpu_hours <= self.estimate.gpu_hours.high


def rows(*, included_only: bool = True) -> list[dict[str, str]]:
    text = resources.files("optimizer").joinpath("data/calibration_runs.csv").read_text(encoding="utf-8")
    data = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    return [r for r in data if r["include"] == "yes" or not included_only]


def predict(row: dict[str, str], fit: Fit = FITTED) -> Run:
    if row["model"]:
        model = resolve_model(row["model"])
    else:
        model = derived_shape(float(row["total_params_b"]) * 1e9, row["run"])
        if row["active_params_b"]:
            model = resolve_model(row["total_params_b"] + "B", active_params=row["active_params_b"] + "B")
    job = Job(
        model=model,
        tokens=float(row["tokens_b"]) * 1e9,
        precision="fp8" if row["precision"] == "fp8" else "bf16",
        seq_len=int(row["seq_len"]) if row["seq_len"] else None,
        recompute=row["recompute"] or "selective",
    )
    est = estimate(
        job,
        catalog().resolve(row["gpu"]),
        int(row["gpus"]),
        gpus_per_node=int(row["gpus_per_node"]),
        fabric=row["fabric"],
        fit=fit,
    )
    return Run(row["id"], row["run"], float(row["gpu_hours"]), row["basis"], row["source"], est)


@dataclass(frozen=True, slots=True)
class Summary:
    runs: int
    within_band: float  # share of runs with 0.8 <= predicted/published <= 1.25
    inside_range: float  # share with the published figure inside [low, high]
    median_width: float  # median of high / low
    median_ratio: float
    ratios: list[float]


def summarize(runs: list[Run]) -> Summary:
    ratios = [r.ratio for r in runs]
    return Summary(
        runs=len(runs),
        within_band=sum(BAND[0] <= x <= BAND[1] for x in ratios) / len(runs),
        inside_range=sum(r.inside for r in runs) / len(runs),
        median_width=statistics.median(r.estimate.gpu_hours.high / r.estimate.gpu_hours.low for r in runs),
        median_ratio=statistics.median(ratios),
        ratios=ratios,
    )


# The search behind optimizer.mfu.FITTED (report: ``python bench/fit_mfu.py``). Coarse on purpose: a few values
# per constant is all that some forty runs can support. The band (band_low, band_high) is not searched: it
# does not move the expected value, only the range around it.
GRID: dict[str, list[float]] = {
    "base": [round(0.40 + 0.02 * i, 2) for i in range(11)],
    "bandwidth_exponent": [round(0.1 * i, 1) for i in range(9)],
    "thin_params_per_gpu": [0.5e6, 0.7e6, 1e6, 1.4e6, 2e6, 3e6],
    "moe": [round(0.60 + 0.05 * i, 2) for i in range(9)],
}


def candidates() -> list[Fit]:
    grid = itertools.product(*GRID.values())
    return [dataclasses.replace(FITTED, **dict(zip(GRID, values, strict=True))) for values in grid]


def score(log_ratios: list[float]) -> tuple[int, float]:
    """Higher is better: runs within the acceptance band, then the smaller mean |log(predicted / published)|.

    The first term is the acceptance criterion itself; the second breaks its many ties toward the fit that
    also keeps the near-misses near, rather than one that parks them just inside an edge.
    """
    low, high = (math.log(x) for x in BAND)
    return sum(low <= x <= high for x in log_ratios), -statistics.fmean(abs(x) for x in log_ratios)


@dataclass(frozen=True, slots=True)
class Search:
    fits: list[Fit]
    log_ratios: list[list[float]]  # one row per fit, one column per run

    def best(self, *, without: int | None = None) -> int:
        """Index of the best fit, judged on every run or on every run but ``without`` (leave-one-out)."""

        def judged(i: int) -> tuple[int, float]:
            row = self.log_ratios[i]
            return score(row if without is None else row[:without] + row[without + 1 :])

        return max(range(len(self.fits)), key=judged)

    def leave_one_out(self) -> list[tuple[int, float]]:
        """Per run: the fit chosen without it, and that fit's log(predicted / published) for it."""
        chosen = [self.best(without=k) for k in range(len(self.log_ratios[0]))]
        return [(i, self.log_ratios[i][k]) for k, i in enumerate(chosen)]


def search(data: list[dict[str, str]]) -> Search:
    fits = candidates()
    return Search(fits, [[math.log(predict(row, fit).ratio) for row in data] for fit in fits])
