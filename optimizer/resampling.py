"""How sure the estimator's accuracy figures are, given how few organisations stand behind them.

The headline shares (runs within 0.8-1.25x, runs inside [low, high]) are counted on runs of a few dozen
organisations, and one organisation's runs miss together: its stack, its cluster and how it reports hours are shared
by all of them. So the uncertainty of a share comes from which organisations happened to publish, and it is
resampled by organisation, never by run (a run bootstrap would treat Meta's fourteen cards as fourteen independent
draws and report an interval too narrow).

Three figures, each on outcomes already computed (one True/False per run, from the held-out predictions), so no fold
is searched again:

* ``organisation_interval``: the interval of a share over organisations drawn with replacement (a percentile
  bootstrap of the cluster).
* ``organisation_share``: the share with each organisation weighing one, a team's view rather than a run's.
* ``check_of_runs``: what a small check like issue 14's twelve published runs would count, drawing that many
  organisations without replacement and one run of each.

The draws are seeded, so a report prints the same figures every time.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

DRAWS = 2000


@dataclass(frozen=True, slots=True)
class Interval:
    share: float  # the share on the runs as they are
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class Check:
    runs: int  # runs in each drawn check
    low: int  # counts of hits: the lower percentile of the draws rounded down, the upper rounded up, the median
    median: int
    high: int


def _by_organisation(organisations: Sequence[str], hits: Sequence[bool]) -> dict[str, list[bool]]:
    if len(organisations) != len(hits):
        raise ValueError("one organisation per run")
    if not hits:
        raise ValueError("no runs")
    grouped: dict[str, list[bool]] = {}
    for organisation, hit in zip(organisations, hits, strict=True):
        grouped.setdefault(organisation, []).append(hit)
    return grouped


def _ends(values: Sequence[float], level: float) -> tuple[float, float]:
    """The lower and upper percentile of ``values`` that leave ``(1 - level) / 2`` outside each end (the standard
    library's inclusive method, as ``calibration.spread`` reads its ranges; ``level`` 0.95 and 0.90 cut evenly)."""
    cuts = statistics.quantiles(values, n=round(2 / (1 - level)), method="inclusive")
    return cuts[0], cuts[-1]


def organisation_share(organisations: Sequence[str], hits: Sequence[bool]) -> float:
    """The share with each organisation weighing one (the mean of its runs' hits): what a team picked at random, not
    a run picked at random, can expect. It is below the run share when the organisations with many runs hit more."""
    grouped = _by_organisation(organisations, hits)
    return sum(sum(runs) / len(runs) for runs in grouped.values()) / len(grouped)


def organisation_interval(
    organisations: Sequence[str], hits: Sequence[bool], *, level: float = 0.95, draws: int = DRAWS, seed: int = 0
) -> Interval:
    """The share of runs that hit, with a ``level`` interval from drawing as many organisations as there are, with
    replacement, each bringing all its runs (organisations with many runs weigh as many runs, as in the share)."""
    grouped = _by_organisation(organisations, hits)
    names = list(grouped)
    rng = random.Random(seed)  # noqa: S311 - a seeded resample, not a secret
    shares = []
    for _ in range(draws):
        drawn = [grouped[rng.choice(names)] for _ in names]
        shares.append(sum(sum(runs) for runs in drawn) / sum(len(runs) for runs in drawn))
    low, high = _ends(shares, level)
    return Interval(share=sum(hits) / len(hits), low=low, high=high)


def check_of_runs(
    organisations: Sequence[str],
    hits: Sequence[bool],
    *,
    runs: int = 12,
    level: float = 0.90,
    draws: int = DRAWS,
    seed: int = 0,
) -> Check:
    """How many of ``runs`` published runs would hit, each from a different organisation drawn at random and one run
    of it at random: the median and the ``level`` range over the draws."""
    grouped = _by_organisation(organisations, hits)
    if runs > len(grouped):
        raise ValueError(f"a check of {runs} runs needs {runs} organisations; there are {len(grouped)}")
    names = list(grouped)
    rng = random.Random(seed)  # noqa: S311 - a seeded resample, not a secret
    counts = [sum(rng.choice(grouped[name]) for name in rng.sample(names, runs)) for _ in range(draws)]
    low, high = _ends(counts, level)
    return Check(runs=runs, low=math.floor(low), median=round(statistics.median(counts)), high=math.ceil(high))
