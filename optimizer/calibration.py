"""The calibration set: published whole runs, and the model's prediction for each.

Shared by ``bench/calibration.py`` (the report) and the tests, so both judge the same thing.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass
from importlib import resources

from optimizer.estimate import Estimate, Job, estimate
from optimizer.models import derived_shape, resolve_model
from warehouse.gpus import catalog


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


def predict(row: dict[str, str]) -> Run:
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
        within_band=sum(0.8 <= x <= 1.25 for x in ratios) / len(runs),
        inside_range=sum(r.inside for r in runs) / len(runs),
        median_width=statistics.median(r.estimate.gpu_hours.high / r.estimate.gpu_hours.low for r in runs),
        median_ratio=statistics.median(ratios),
        ratios=ratios,
    )
