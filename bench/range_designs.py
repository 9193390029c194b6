"""Other ways to read the ranges off the runs, each cross-validated by organisation as the shipped one is.

    python bench/range_designs.py           # every run (about 90 s on 2 cores)
    python bench/range_designs.py --nested  # and the scale cut chosen inside each fold by a stated rule (3 min)
    python bench/range_designs.py --quick   # 12 organisations, 3 search sweeps per fold (CI)

The shipped range of a stack class is the 5-95 % spread of its runs' out-of-sample residuals
(``calibration.cross_validated_bands``). Issue 14 asks for a median range of at most x2.5 with 85 % of the runs
inside it; on round 21's 111 runs the shipped ranges hold 88 % at x2.56, on round 22's 114 85 % at x2.53. Round 22
asked whether a range read differently is narrower where the runs allow it, without covering less than it claims:

* by class and scale: a class's runs on one node and on several nodes get a range each (where three organisations
  stand behind the cell; else the class's). The stated reason: a long run on a cluster averages its restarts and
  stalls, a short one on one machine either has none (a near-benchmark) or is dominated by them;
* by class and 64 GPUs or more, and by class and size (above 1.5B parameters): the same with another cut;
* by class, each team weighing one: each organisation-and-class pair's runs share one weight in the quantiles, as
  they do in the search's loss (``calibration.pair_weights``), so one person's two runs do not set an edge twice.

Every design is judged the way the shipped ranges are (``calibration.cross_validated``): each organisation's runs
against ranges read off the other organisations' own leave-one-organisation-out residuals. The ranges do not move
the expected figure, so "within 0.8-1.25x" is the same for all. The shipped design's line reproduces
``bench/calibration.py``'s leave-one-organisation-out figures (a test checks it on a few organisations).

What round 22 found: on round 21's runs the cuts narrowed the median range (x2.17-2.50) by leaving the tuned class
under-covered (30-31 of 39 inside against the shipped 34); on round 22's the scale cut put 98 inside at x2.16 with
the tuned class as covered as shipped. A design that looks right on one round's runs and wrong on the previous
round's is judged nested before it ships: ``--nested`` lets each fold choose between the shipped ranges and the
scale cut on its own runs, by a rule stated before it was run (``nested_choice``), and judges the choice on the
held-out organisation. On both rounds' runs every fold keeps the shipped ranges, so they stay. On round 23's 118
the scale cut holds 101 inside at x2.16 unnested, yet every fold still keeps the shipped ranges: inside each fold
neither design covers 80 % of ``basic`` (7 of 9; the two read it alike), so the rule falls back to the shipped one.
On round 24's 125 the scale cut holds fewer (102 inside at x2.30, against the shipped 106 at x2.61: Karpathy's six
one-node nanochat records widen one-node tuned runs' range and leave the multi-node ones under-covered), and all 48
folds keep the shipped ranges. On round 25's 134 the scale cut holds 110 inside at x2.46 against the shipped 113 at
x2.61, and all 53 folds keep the shipped ranges. Round 26 added round 26's candidate, the edges at split-conformal
ranks (``calibration.conformal_span``), judged by a rule written before it was measured (at least 85 % inside at a
median range no more than 10 % wider than the shipped read's): on round 26's 137 runs it holds 124 inside at x3.26
against the shipped 116 at x2.58, 26 % wider, so the shipped read stays. Round 49 let each fold choose among all six
designs by the same rule (``--nested``): on round 48's 160 runs the cut at 64 GPUs holds 138 at x2.25 unnested, but
58 of 65 folds choose the team-weighted read (the cuts, and mostly the shipped design, leave a class under 80 % inside
the fold), and the nested procedure holds 144 at x3.06, wider than the shipped 140 at x2.77, so the shipped read
stays; on round 50's 162, 149 at x4.44 against the shipped 141 at x2.80; on round 51's 178, 163 at x4.48 against 155 at
x2.94; on round 56's 191, 174 at x4.48 against 165 at x2.94 (73 of 77 folds choosing the conformal ranks).
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optimizer import calibration
from optimizer.calibration import BAND, MIN_ORGANISATIONS_FOR_OWN_BAND, Case
from optimizer.mfu import DEFAULT_STACK, MFU_CEILING, STACKS, Fit

QUICK_ORGANISATIONS = 12
Band = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Design:
    name: str
    cell: Callable[[Case], bool] | None = None  # a second cut inside each class; None: the class alone (shipped)
    team_weighted: bool = False  # each organisation-and-class pair's runs share one weight in the quantiles
    conformal: bool = False  # the edges at split-conformal ranks (calibration.conformal_span): round 26's candidate


DESIGNS = (
    Design("by class (shipped)"),
    Design("by class and scale (one node / several)", cell=lambda c: c.gpus > c.gpus_per_node),
    Design("by class and 64 GPUs or more", cell=lambda c: c.gpus >= 64),
    Design("by class and size (above 1.5B parameters)", cell=lambda c: c.job.model.active_params > 1.5e9),
    Design("by class, each team weighing one", team_weighted=True),
    Design("by class, conformal ranks (round 26)", conformal=True),
)


@dataclass(frozen=True, slots=True)
class Judged:
    inside: int
    runs: int
    median_width: float
    default_inside: int  # every run predicted as the default class, with the default's range
    inside_by_class: dict[str, tuple[int, int]]  # class: (inside, runs)


def read_band(design: Design, group: Sequence[tuple[Case, float]]) -> Band:
    """The CV_BAND_QUANTILES span of the log residuals of ``group``, as ``cross_validated_band_for`` reads it (or
    team-weighted, ``calibration.weighted_quantile``)."""
    logs = [x for _, x in group]
    if design.conformal:
        return calibration.conformal_span(logs)
    if not design.team_weighted:
        return calibration.cross_validated_band_for(logs)
    counts = Counter((c.organisation, c.stack) for c, _ in group)
    weights = [1.0 / counts[(c.organisation, c.stack)] for c, _ in group]
    low, high = (calibration.weighted_quantile(logs, weights, q) for q in calibration.CV_BAND_QUANTILES)
    return calibration.widened(low, high, 1.0)


def bands_of(
    design: Design, own: Sequence[tuple[Case, float]], as_default: Sequence[tuple[Case, float]]
) -> dict[tuple[str, bool], Band]:
    """Each (class, cell) range read off residuals, with ``calibration.class_bands``'s fallbacks: a cell or class
    with runs from fewer than three organisations takes its class's range, else the default's; the default's also
    spans every run predicted as the default class and the pooled range."""

    def enough(group: Sequence[tuple[Case, float]]) -> bool:
        return len({c.organisation for c, _ in group}) >= MIN_ORGANISATIONS_FOR_OWN_BAND

    pooled, as_default_band = read_band(design, own), read_band(design, as_default)
    bands: dict[tuple[str, bool], Band | None] = {}
    for stack in STACKS:
        members = [(c, x) for c, x in own if c.stack == stack]
        whole = read_band(design, members) if enough(members) else None
        for side in (False, True):
            cell = [(c, x) for c, x in members if design.cell is not None and design.cell(c) == side]
            band = read_band(design, cell) if design.cell is not None and enough(cell) else whole
            if stack == DEFAULT_STACK:
                t_low, t_high = band or pooled
                band = (min(as_default_band[0], pooled[0], t_low), max(as_default_band[1], pooled[1], t_high))
            bands[(stack, side)] = band
    return {
        key: band if band is not None else bands[(DEFAULT_STACK, key[1])]  # type: ignore[misc]
        for key, band in bands.items()
    }


def inside_and_width(case: Case, fit: Fit, band: Band, stack: str | None = None) -> tuple[bool, float]:
    """Whether the published figure lies in the range, and the range's width (high / low), the MFU ceiling
    applied as ``mfu.realized_mfu`` applies it."""
    expected = case.mfu(fit, stack).expected
    low, high = band[0], min(expected * band[1], MFU_CEILING) / expected
    ratio = math.exp(case.log_ratio(fit, stack))
    return low <= ratio <= high, high / low


Fits = dict[frozenset[str], Fit]


def _without(fits: Fits, organisation: str, case: Case) -> Fit:
    """The fit that saw neither ``organisation`` nor ``case``'s own: what predicts a residual inside a fold."""
    return fits[frozenset((organisation, case.organisation))]


def _same(design: Design, _organisation: str) -> Design:
    return design


def _held_without(fits: Fits, organisation: str, inner: str) -> Fit:
    """Inside the fold without ``organisation``: the fit that predicts the inner organisation ``inner``."""
    return fits[frozenset((organisation, inner))]


def _residual_without(fits: Fits, organisation: str, _inner: str, case: Case) -> Fit:
    """Inside the fold without ``organisation``: the fit behind ``case``'s residual (it never saw ``case``'s
    organisation; it did see the inner held-out one, as ``calibration.cross_validated``'s ranges do)."""
    return _without(fits, organisation, case)


def side_of(design: Design, case: Case) -> bool:
    """Which side of ``design``'s cut a run falls on (always False for a design without one)."""
    return design.cell(case) if design.cell is not None else False


def read_off(design: Design, runs: Sequence[Case], fit_of: Callable[[Case], Fit]) -> dict[tuple[str, bool], Band]:
    """``bands_of`` the residuals of ``runs``, each predicted by ``fit_of(run)``, as its class and as the default."""
    own = [(c, c.log_ratio(fit_of(c))) for c in runs]
    as_default = [(c, c.log_ratio(fit_of(c), DEFAULT_STACK)) for c in runs]
    return bands_of(design, own, as_default)


def held_out(
    data: Sequence[Case],
    design_of: Callable[[str], Design],
    held_fit: Callable[[str], Fit],
    residual_fit: Callable[[str, Case], Fit],
) -> Judged:
    """Each organisation's runs, predicted by ``held_fit(organisation)``, against the ranges ``design_of
    (organisation)`` reads off the other organisations' runs, each of those predicted by ``residual_fit
    (organisation, run)``."""
    inside = default_inside = 0
    widths: list[float] = []
    by_class: dict[str, list[int]] = {s: [0, 0] for s in STACKS}
    for o in dict.fromkeys(c.organisation for c in data):
        design, fit = design_of(o), held_fit(o)
        bands = read_off(design, [c for c in data if c.organisation != o], functools.partial(residual_fit, o))
        for c in data:
            if c.organisation != o:
                continue
            side = side_of(design, c)
            hit, width = inside_and_width(c, fit, bands[(c.stack, side)])
            inside += hit
            widths.append(width)
            by_class[c.stack][0] += hit
            by_class[c.stack][1] += 1
            default_inside += inside_and_width(c, fit, bands[(DEFAULT_STACK, side)], DEFAULT_STACK)[0]
    return Judged(
        inside=inside,
        runs=len(widths),
        median_width=statistics.median(widths),
        default_inside=default_inside,
        inside_by_class={s: (k, n) for s, (k, n) in by_class.items() if n},
    )


def judge(design: Design, data: Sequence[Case], fits: Fits) -> Judged:
    """Each organisation's runs against the ranges ``design`` reads off the others' out-of-sample residuals (as
    ``calibration.cross_validated`` judges the shipped ranges: a residual comes from the fit without the held-out
    organisation and the run's own)."""
    return held_out(
        data, functools.partial(_same, design), lambda o: fits[frozenset((o,))], functools.partial(_without, fits)
    )


def shipped_bands(design: Design, data: Sequence[Case], fits: Fits) -> dict[tuple[str, bool], Band]:
    """The ranges ``design`` would ship: read off every run's leave-one-organisation-out residual."""
    return read_off(design, data, lambda c: fits[frozenset((c.organisation,))])


def nested_choice(data: Sequence[Case], fits: Fits, candidates: Sequence[Design]) -> tuple[Judged, dict[str, str]]:
    """Each organisation's runs against the ranges of the design chosen without it, and each fold's choice.

    The rule, stated before it was first run (round 22): inside the fold, every other organisation's runs are
    judged against the ranges each candidate reads off the remaining organisations' residuals; the candidate with
    the narrower median range among those covering at least 85 % of the fold's runs and at least 80 % of each
    class's wins, else the first (the shipped design). A residual inside the fold comes from the fit without the
    held-out organisation and the run's own (``fold_fits``' pairs), so no search beyond ``fold_fits`` is needed.
    """
    chosen: dict[str, Design] = {}
    for o in dict.fromkeys(c.organisation for c in data):
        inner = [c for c in data if c.organisation != o]
        held_inner = functools.partial(_held_without, fits, o)  # an inner organisation, predicted without o too
        residual_inner = functools.partial(_residual_without, fits, o)
        ranked: list[tuple[float, int]] = []
        for k, design in enumerate(candidates):
            j = held_out(inner, functools.partial(_same, design), held_inner, residual_inner)
            if j.inside / j.runs >= 0.85 and all(hit / n >= 0.80 for hit, n in j.inside_by_class.values()):
                ranked.append((j.median_width, k))
        chosen[o] = candidates[min(ranked)[1]] if ranked else candidates[0]
    judged = held_out(data, chosen.__getitem__, lambda o: fits[frozenset((o,))], functools.partial(_without, fits))
    return judged, {o: design.name for o, design in chosen.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="12 organisations, 3 sweeps per fold (CI)")
    parser.add_argument("--nested", action="store_true", help="the design chosen inside each fold (nested_choice)")
    args = parser.parse_args()
    data = calibration.cases()
    searcher: Callable[[Sequence[Case]], Fit] = calibration.search
    if args.quick:
        kept = list(dict.fromkeys(c.organisation for c in data))[:QUICK_ORGANISATIONS]
        data = [c for c in data if c.organisation in kept]
        searcher = functools.partial(calibration.search, max_sweeps=3)
    fits = calibration.fold_fits(data, searcher=searcher, workers=os.cpu_count() or 1)
    within = sum(BAND[0] <= math.exp(c.log_ratio(fits[frozenset((c.organisation,))])) <= BAND[1] for c in data)
    n = len(data)
    print(f"{n} runs, {len({c.organisation for c in data})} organisations; within 0.8-1.25x out of sample: {within}")
    print(f"{'range design':44} {'inside':>8} {'median range':>13} {'default inside':>15}  inside by class")
    for design in DESIGNS:
        j = judge(design, data, fits)
        classes = ", ".join(f"{s} {k}/{m}" for s, (k, m) in j.inside_by_class.items())
        share = f"{j.inside:>4} {j.inside / n:>3.0%}"
        print(f"{design.name:44} {share} {j.median_width:>13.2f} {j.default_inside:>15}  {classes}")
    print("\nthe ranges each design would ship (read off every run's out-of-sample residual):")
    for design in DESIGNS:
        bands = shipped_bands(design, data, fits)
        sides = (False, True) if design.cell is not None else (False,)
        text = "; ".join(
            f"{s}{'' if design.cell is None else (' yes' if side else ' no')} {low}-{high}"
            for s in STACKS
            for side in sides
            for low, high in [bands[(s, side)]]
        )
        print(f"  {design.name}: {text}")
    if args.nested:
        judged, choices = nested_choice(data, fits, DESIGNS)
        classes = ", ".join(f"{s} {k}/{m}" for s, (k, m) in judged.inside_by_class.items())
        print(
            "\nthe design chosen inside each fold among all six (round 49; rounds 22-48: shipped or scale cut): "
            f"{judged.inside} inside ({judged.inside / n:.0%}), median range {judged.median_width:.2f}, "
            f"default class {judged.default_inside}; {classes}"
        )
        for name, count in Counter(choices.values()).most_common():
            print(f"  {count} of {len(choices)} folds chose {name}")


if __name__ == "__main__":
    main()
