"""The calibration set, the search behind the MFU constants, its leave-one-organisation-out figures, and the
causes issue 14 added (software stack, small models, older GPUs, AMD), each against a hand-computed value."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import pytest

from optimizer import calibration
from optimizer import mfu as mfu_model
from optimizer.calibration import (
    Case,
    HeldOut,
    cases,
    evaluate,
    held_out_summary,
    job_of,
    leave_one_organisation_out,
    predict,
    rows,
    search,
)
from optimizer.estimate import Job, estimate
from optimizer.measured import GOODPUT, GOODPUT_RANGE
from optimizer.models import resolve_model
from tests.conftest import run_costopt
from warehouse.errors import UsageError
from warehouse.gpus import catalog

GPUS = catalog()
FIT = mfu_model.FITTED


@pytest.fixture(scope="module")
def data() -> list[Case]:
    return cases()


@pytest.fixture(scope="module")
def held_out(data) -> list[HeldOut]:
    return leave_one_organisation_out(data)


def test_every_included_run_names_its_organisation_stack_source_and_a_known_gpu():
    included = rows()
    assert len(included) >= 66
    for row in included:
        assert row["organisation"] and row["source"] and row["software"], row["run"]
        assert row["stack"] in mfu_model.STACKS, row["run"]
        assert float(row["gpu_hours"]) > 0 and int(row["gpus"]) > 0, row["run"]
        GPUS.resolve(row["gpu"])  # raises for a GPU the table does not have
    excluded = [r for r in rows(included_only=False) if r["include"] != "yes"]
    assert all(r["notes"].startswith("excluded:") for r in excluded)
    assert {r["stack"] for r in included} == set(mfu_model.STACKS)


def test_the_shipped_constants_are_what_the_search_picks(data, held_out):
    """A run added to the calibration file without a refit fails here: FITTED must follow the data, its constants
    the search on every run, its ranges the runs' out-of-sample residuals (round 18)."""
    unlabelled = dataclasses.replace(FIT, held=(), measured_held=None)  # the labels: the next test
    assert calibration.calibrated(data, held=held_out) == unlabelled
    picked = search(data)
    ranges = {
        "band_low": FIT.band_low,
        "band_high": FIT.band_high,
        "bands": FIT.bands,
        "measured_band": FIT.measured_band,
    }
    assert dataclasses.replace(picked, **ranges) == unlabelled


def test_each_range_is_labelled_by_what_it_held_out_of_sample(shipped_held_out):
    """Round 26: the range was called "a 90 % range" while it held 84 % of the runs out of sample. FITTED now carries
    what each class's range held (the whole procedure cross-validated by organisation), and the labels of plan and
    estimate read it, so a label is a measurement. A refit that moves what a range holds fails here until FITTED says
    it."""
    assert calibration.held_by_class(shipped_held_out) == FIT.held
    assert calibration.measured_held(shipped_held_out) == FIT.measured_held
    typical, everyone = FIT.held_by("typical"), FIT.held_by("default")
    assert typical is not None and everyone is not None
    inside, runs = typical
    claim = mfu_model.range_claim("typical")
    assert f"held {inside} of {runs} typical runs ({round(100 * inside / runs)} %)" in claim
    assert f"{everyone[0]} of {everyone[1]} of any class" in claim
    assert "of any class" not in mfu_model.range_claim("tuned")
    assert mfu_model.range_claim("recipe").endswith("one node of 1-8 GPUs, so across nodes it is extrapolated")
    assert "extrapolated" not in mfu_model.range_claim("tuned")
    assert mfu_model.range_claim("tuned", dataclasses.replace(FIT, held=())).startswith("a range read at 5-95 %")


def test_a_conformal_span_takes_the_finite_sample_ranks():
    """calibration.conformal_span, round 26's candidate read of a range: of n sorted residuals the low edge at rank
    max(1, floor((n + 1) x 0.05)) and the high at min(n, ceil((n + 1) x 0.95)), never interpolated; the extremes
    below 19 runs; never inside 1."""
    ratios = [1 + i / 100 for i in range(-40, 59)]  # 99 runs: ranks 5 and 95
    assert calibration.conformal_span([math.log(r) for r in ratios]) == (0.64, 1.54)
    few = [0.6, 0.7, 0.9, 1.1, 1.3, 1.5]  # 6 runs: the extremes
    assert calibration.conformal_span([math.log(r) for r in few]) == (0.6, 1.5)
    assert calibration.conformal_span([math.log(r) for r in (1.1, 1.2, 1.3)]) == (1.0, 1.3)
    # the interpolated 5-95 % read of the same 99 runs sits inside the conformal one
    low, high = calibration.cross_validated_band_for([math.log(r) for r in ratios])
    assert low > 0.64 and high < 1.54


def test_the_shipped_ranges_cover_what_they_claim_out_of_sample(held_out, shipped_held_out):
    """Round 46 (CodeChat 8B and 2B added, 149 runs): 105 within, 129 inside, x2.415, 14.55 %, default 134. Round 43
    (StarCoder2-3B added, 147 runs): 102 within, 128 inside, x2.432, 14.55 %, default 132. Round 42
    (Phi-4-mini, XGLM-7.5B and granite.13b.v1 added, 146 runs): 102 within, 127 inside, x2.423, 14.39 %,
    default 131. Round 40 (OpenCoder 1.5B and 8B added, 140 runs): 100 within, 122 inside, x2.394, 14.22 %, default
    126. Round 32 (the own-script class): 98 within, 120 inside, x2.394, 14.99 %, default 125 (round 31, Stable LM 2
    1.6B corrected to 4T tokens: 96, 120, x2.435, 14.99 %, 122).
    The headline (README, bench/calibration.py): the whole procedure that ships, constants AND ranges,
    cross-validated by organisation. Each range is read at the 5-95 % span of out-of-sample residuals, aimed at 90 %,
    and holds 120 of 138 (87.0 %; round 28: 119 of 138; round 27: 116 of 137, 84.7 %; round 26: 116 of 137 too; round
    25: 113 of 134, round 24: 106 of 125, round 23: 98 of 118, round 22: 97 of 114, round 21: 98 of 111; the labels say
    so since round 26, test above); the median range is x2.43 (round 28: x2.44; round 27: x2.45; round 26: x2.58; round
    25: x2.61; round 24: x2.61; round 23: x2.59; round 22: x2.53; round 21: x2.56; round 19: x2.31; round 20's two
    MiniLLM runs, tuned by the rule and about 0.5x out of sample, moved the tuned class's lower edge to about 0.5, and
    the median run is a tuned one).

    Issue 14's targets on round 29's 138 runs (round 28: a steady figure compared with the prediction times the
    goodput, Brandon Ong's nanochat runs added; round 29: the recipe multiplier's grid in steps of 0.05): >= 85 %
    inside: met (87.0 %; rounds 24-27 were one run short); with the default class for every run, >= 85 % inside: met
    (122 of 138, 88 %); median range <= x2.5: met (x2.43); median error <= 15 %: met at the edge (14.99 %; round 28:
    16.0 %, when the 0.1 grid let one run move the folds' recipe multiplier from 1.3 to 1.4; round 27: 14.8 %). Not
    met: within 0.8-1.25x (75 %): 71 %, 98 of 138 since round 32 (round 31: 96; round 29: 95; round 27: 92 of 137).
    Rounds 1-17's ranges (in-sample 10-90 % spread, each edge widened 13 %) hold 119 at a median x2.46; read off the
    in-sample residuals with no widening they hold only 107 (78 %, below the 80 % the span claims in sample).
    """
    s = held_out_summary(shipped_held_out)
    assert s.runs == 191  # round 56: three runs (round 54: ten; round 51: sixteen)
    assert s.counts == (116, 165)  # round 56 (round 54: 115, 163 of 188; round 51: 112, 155 of 178)
    assert s.median_width == pytest.approx(2.936, abs=0.001)  # round 54 (51: 2.944; 50: 2.800; 48: 2.770)
    assert s.median_error == pytest.approx(0.1591, abs=0.0001)  # round 56 (54: 0.1554; 51: 0.1465)
    default = held_out_summary(shipped_held_out, mfu_model.DEFAULT_STACK)
    assert default.counts[1] == 168  # round 56 (round 54: 166 of 188; round 51: 157 of 178)
    old = held_out_summary(held_out)  # each fold with the in-sample ranges widened by BAND_MARGIN
    assert (old.counts[1], round(old.median_width, 2)) == (162, 3.02)  # r56 (r54: 160, 3.02; r51: 153, 2.94)
    assert s.median_width < old.median_width  # round 54: the quick ranges are the wider (47-51: the narrower)
    assert [h.fit.base for h in shipped_held_out] == [h.fit.base for h in held_out]  # the same constants, per fold


def test_a_range_read_off_in_sample_residuals_is_too_narrow_out_of_sample(data, held_out):
    """Why the ranges are cross-validated: the in-sample 10-90 % spread, unwidened, holds 108 of 140 runs of
    organisations held out (77 %; round 32: 107 of 138;
    round 27: 105 of 137; round 26: 95 of 137; round 25: 92 of 134; round 24: 87 of 125;
    round 23: 89 of 118; round 22: 89 of 114; round 21: 84 of 111); the search fits what it sees. Round 1 answered with
    a 13 % margin on each edge, a judgement; the out-of-sample residuals measure it, per class."""
    organisations = {h.case.organisation: h.fit for h in held_out}
    others = {o: [c for c in data if c.organisation != o] for o in organisations}
    bare = {o: calibration.with_bands(f, others[o], margin=1.0) for o, f in organisations.items()}
    s = held_out_summary([HeldOut(h.case, bare[h.case.organisation]) for h in held_out])
    assert s.counts[1] == 146  # round 54: 146 of 188 (51: 136 of 178; 50: 124 of 162)


def test_in_sample_figures(data):
    """Round 42: 104 within, 131 inside of 146 (round 41: 102, 128 of 143; round 40: 101, 125 of 140; round 32: 100, 123
    of 138). What bench/calibration.py prints for the shipped constants on every run (README, Calibration)."""
    s = evaluate(data, [FIT] * len(data))
    assert len(data) == 191  # round 56 (round 54: 188; round 51: 178)
    assert s.counts == (120, 168)  # round 56 (round 54: 118, 165; round 51: 112, 158)
    assert s.median_width == pytest.approx(2.875, abs=0.001)  # round 54 (51: 2.809; 50: 2.745; 48: 2.671)
    assert s.median_error == pytest.approx(0.1464, abs=0.001)  # round 51 (48: 0.1243; 47: 0.1391)
    assert 0.9 <= s.median_ratio <= 1.1


def test_leave_one_organisation_out_figures(held_out):
    """Round 40's 140 runs: 100 within, 120 inside, x2.33, 14.2 %, default 127. Round 32's 138 runs: 98 within, 118
    inside, x2.32, 15.0 %, default 125 (round 31: 96, 119, x2.48, 15.0 %, 123).
    Each organisation predicted by constants chosen without any of its runs, each fold with the ranges its own runs
    show in sample, widened 13 % (BAND_MARGIN): the quick cross-validation every search variant and loss is compared by,
    and rounds 1-17's headline (round 29's 138 runs: 69 % within, 86 % inside, x2.46, 15.0 %, default 89 %; round 28's,
    steady figures compared with the prediction times the goodput, the recipe grid at 0.1: the same at 16.0 %; round
    27's 137 runs, with the recipe class: 67 % within, 86 % inside, x2.58, 14.8 %, default 86 %; round 26's 137 runs: 57
    % within, 81 % inside, x2.90, 19.0 %, default 86 %; round 25's 134 runs: 57 % within, 81 % inside, x2.90, 19.0 %,
    default 87 %; round 24's 125 runs: 60 % within, 82 % inside, x2.83, 17.5 %, default 87 %; round 23's 118 runs: 63 %
    within, 84 % inside, x2.65, 16.2 %, default 87 %; round 22's 114 runs: 65 % within, 86 % inside, x2.64, 15.6 %,
    default 90 %; round 21's 111 runs: 65 % within, 88 % inside, x2.57, 14.7 %, default 91 %; round 20's 110: 64 %
    within, 88 % inside, x2.58, 14.4 %, default 90 %; round 19's 108: 65 % within, 90 % inside, x2.56, 14.2 %, default
    90 %; round 17: 64 % within, 90 % inside, x2.53, 13.6 %, default 93 %; round 15: x2.55; round 12: x2.42). The
    shipped ranges' figure is ``cross_validated``'s (the test above); the nested one, the loss chosen without the
    held-out organisation too, is in the README."""
    s = held_out_summary(held_out)
    assert s.median_width == pytest.approx(3.021, abs=0.001)  # rounds 54-56 (51: 2.938; 50: 2.633)
    assert s.median_error == pytest.approx(0.1591, abs=0.001)  # round 56 (54: 0.1554; 51: 0.1465)
    assert s.counts == (116, 162)  # round 56's 191 runs (round 54: 115, 160 of 188; round 51: 112, 153 of 178)
    default = held_out_summary(held_out, mfu_model.DEFAULT_STACK)
    # round 56: this quick view's default range holds 162 of 191 (84.8 %), under 85 %; the shipped ranges, read by the
    # whole procedure (the test above), hold 168 (88.0 %)
    assert default.counts[1] == 162 and default.inside_range < 0.85  # round 56 (54: 160 of 188; 51: 153 of 178)


def test_the_capped_loss_earns_its_place_out_of_sample(data, held_out):
    """Round 42's 146 runs, each organisation-and-class pair weighing one: the 1.5x cap 102 and 126, the 1.3x cap 101
    and 125, the 1.8x and 2x caps 97 and 126, the uncapped loss 92 and 126; on every run the uncapped loss puts typical
    at 0.8 and recipe at 1.45. Round 40's 140 runs: the 1.3x cap 100 and 120, the uncapped loss 87 and 120 at 16.2 %,
    the 1.5x, 1.8x and 2x caps
    96, 92 and 92 within, 120 inside; on every run the uncapped loss puts typical at 0.75, large-lab at 1.0 and recipe
    at 1.4, the 1.8x cap typical at 0.9. Round 32's 138 runs: the 1.3x cap 98 and 118, the uncapped loss 85 and 117
    at 16.3 %, the 1.5x, 1.8x and 2x caps
    93, 90 and 90 within, 118 inside; searched on every run the uncapped loss puts typical at 0.75, the 1.8x cap at
    0.85 (round 31: 96 and 119; 80 and 117 at 18.7 %; 92, 90 and 90, 119).
    Rounds 2-5's loss, the plain mean |log error|, searched and cross-validated the same way: runs far
    off weigh in full, on either side, and 22 runs fewer land within 0.8-1.25x (73 of 138), fewer inside the range (112
    against 119), at a larger median error (20.1 % against 15.0 %); searched on every run it puts typical at 0.85 of
    tuned, large-lab at 1.1 and recipe at 1.4. On round 28's 138 runs, with each organisation weighing one, the 1.3x cap
    puts 95 within and 119 inside, 1.5x 90 and 119, 1.8x and 2x 88 and 118 (with pairs 1.3x puts as many within and
    inside at the same range, and the tie goes to the first). On round 27's 137 runs (the recipe class added), with each
    organisation-and-class pair weighing one, the 1.3x cap puts 92 within and 118 inside, 1.5x the same at the same
    median range (the tie goes to the first), 1.8x 88 and 116, 2x 91 and 116, so the rule (most within, then most
    inside, then the narrower range) picks 1.3x. (Round 26's 137 runs without the class: 1.8x 78 and 111, 1.3x and 1.5x
    78 and 110, 2x 78 and 111, the uncapped loss 74 and 109; round 25's 134: 77 and 109 against 77 and 108 for 1.3x and
    1.5x, 73 and 110 for 2x; round 24's 125: 75 and 103 against 75 and 101 for 1.3x and 1.5x; round 23's 118, with
    organisation weights: 1.3x 74, 1.5x 70, 1.8x 66, 2x 57 within; round 21's 111 runs, with pair weights: 1.8x 72, 1.5x
    71, 1.3x 69, 2x 64); searched on every run 1.8x and 1.3x both put typical at 0.9 of tuned."""
    uncapped = leave_one_organisation_out(data, searcher=calibration.searcher_for(None))
    old = held_out_summary(uncapped)
    shipped = held_out_summary(held_out)
    assert (old.counts, shipped.counts) == ((111, 162), (116, 162))  # round 56 (54: 111/160, 115/160)
    # round 56: the uncapped loss's median error is the lower, 15.8 % against 15.9 % (round 54: 15.5 % against 16.x %)
    assert old.median_error < shipped.median_error < old.median_error + 0.002
    plain = search(data, loss_cap=None)
    assert (plain.typical, plain.large_lab, plain.recipe) == (0.8, 1.05, 1.05)  # r48, pairs (r47: 0.75, 1.0, 1.35)
    assert (FIT.typical, FIT.large_lab, FIT.recipe) == (0.9, 1.0, 1.1)  # round 48 (1.35 with the small-model term)
    assert search(data, loss_cap=1.8).typical == 0.8  # round 54 (51: 0.85; 0.9 before)
    judged: list[tuple[float | None, calibration.Summary]] = [(calibration.LOSS_CAP, shipped), (None, old)]
    # round 56, pairs (round 54: 112/161, 111/161, 111/161)
    for cap, pinned in ((1.3, (112, 163)), (1.8, (112, 163)), (2.0, (113, 163))):
        other = held_out_summary(leave_one_organisation_out(data, searcher=calibration.searcher_for(cap)))
        assert other.counts == pinned
        judged.append((cap, other))
    assert calibration.best_loss(judged) == calibration.LOSS_CAP == 1.5  # round 42 (rounds 28-41: 1.3)


def test_a_capped_loss_ignores_a_run_beyond_the_cap():
    """A run three times off weighs as one at the cap: moving it further changes nothing, inside the cap it counts."""
    cap = math.log(calibration.LOSS_CAP)
    assert calibration.score([0.1, math.log(3)], [1, 1]) == calibration.score([0.1, math.log(30)], [1, 1])
    assert calibration.score([0.1, math.log(3)], [1, 1]) == pytest.approx(-(0.1 + cap) / 2)
    assert calibration.score([0.1, 0.2], [1, 1]) > calibration.score([0.1, 0.3], [1, 1])
    assert calibration.score([0.1, math.log(3)], [1, 1], cap=None) == pytest.approx(-(0.1 + math.log(3)) / 2)


def test_an_organisation_is_held_out_whole(data, held_out):
    """Every run of the held-out organisation is predicted by one fit, and that fit never saw any of them."""
    meta = [h for h in held_out if h.case.organisation == "Meta"]
    assert len(meta) == 15 and len({h.fit for h in meta}) == 1  # round 42: XGLM-7.5B is Meta's 15th
    assert meta[0].fit == search([c for c in data if c.organisation != "Meta"])


def test_the_stack_classes_earn_their_place_out_of_sample(data, held_out):
    """Round 40's 140 runs: 100 and 120 with the classes, 79 and 123 without, at x2.33 against x2.59, 14.2 % against
    18.9 %. Round 32's 138 runs: 98 and 118 with the classes, 78 and 121 without, at x2.32 against x2.59 (round 31:
    96 and 119, 78 and 122, x2.48 against x2.74).
    Without classes (every run 'tuned') the same search puts fewer runs within 0.8-1.25x (78 against 95 of 138) at a
    larger median error (18.9 % against 15.0 %); it puts two more inside its range (121 against 119), at a wider
    median range (2.64 against 2.46). (Round 27's 137 runs: 70 against 92 within, 21.5 % against 14.8 %, 120 against
    118 inside, 2.82 against 2.58. Round 26's 137 runs, before the recipe class: 70 against 78 within, 115 against
    111 inside, 2.96 against 2.90; round 25's 134 runs: 63 against 77 within, 25.7 % against 19.0 %, 110 against
    109 inside at 2.86 against 2.90; round 24's 125 runs: 68 against 75 within,
    2.89 against 2.83, 17.9 % against 17.5 %). (Round 23's 118 runs: 68 against 74 within; round 22's 114 runs: 68
    against 74; round 21's 111 runs: 62 against 72; round 20's 110 runs: 67 against 70; round 19's 108 runs: 67
    against 70; round 17's 107 runs: 66 against 69; round 11's 99 runs: 61 against 63 within, 19.9 % against
    16.0 %.)"""
    flat = dataclasses.replace(calibration.START, typical=1.0, basic=1.0, own_script=1.0)
    grid = {k: v for k, v in calibration.GRID.items() if k not in calibration.CLASS_MULTIPLIERS}
    without = leave_one_organisation_out(data, searcher=lambda d: search(d, start=flat, grid=grid))
    flat_s = held_out_summary(without)
    shipped = held_out_summary(held_out)
    assert (shipped.counts, flat_s.counts) == ((116, 162), (105, 165))  # round 56 (54: 115/160, 105/163)
    assert shipped.median_width == pytest.approx(3.021, abs=0.001)  # round 54 (51: 2.938; 50: 2.633)
    assert flat_s.median_width == pytest.approx(3.063, abs=0.001)  # round 54 (51: 2.960; 48: 2.780)
    assert shipped.median_error < flat_s.median_error - 0.02  # round 54: 15.5 % against 18.0 % (51: 14.6 %, 17.9 %)


def test_the_recipe_class_earns_its_place_out_of_sample(data, held_out):
    """Round 40's 140 runs: 100 and 120 with the class, 86 and 120 labelled as before (x2.67, 16.9 %). Round 32's 138
    runs: 98 and 118 with the class, 84 and 119 with the recipe runs labelled as before (round 31: 96
    and 119, 82 and 118).
    Round 27: the 23 runs of single-node speed recipes run with their own code (nanochat, llm.c and its PyTorch
    trainer, nanoGPT, llama2.c), labelled as rounds 1-26 had them (tuned for their author's, typical for others') and
    searched with the same loss without the class, put 78 runs within 0.8-1.25x against 92, 110 inside against 118,
    at a wider median range (2.88 against 2.58) and a larger median error (19.4 % against 14.8 %); on round 28's 138
    runs (Brandon Ong's added; steady figures compared with the prediction times the goodput) 81 against 95 within,
    117 against 119 inside, 2.73 against 2.46, 18.6 % against 15.0 % (16.0 % in round 28). The class was
    written, its runs listed and the rule that decides it fixed before any of these figures was computed
    (docs/calibration-history.md, round 27's plan)."""
    recipe = [c for c in data if c.stack == "recipe"]
    assert (
        len(recipe) == 30 and len({c.organisation for c in recipe}) == 14
    )  # round 47: Parameter Golf, nanuGPT, d34, 1.5B
    assert all(c.gpus <= c.gpus_per_node for c in recipe)  # every one on one node, as the class says
    before = [
        dataclasses.replace(c, stack="tuned" if c.organisation == "Andrej Karpathy" else "typical")
        if c.stack == "recipe" else c
        for c in data
    ]  # fmt: skip
    grid = {k: v for k, v in calibration.GRID.items() if k != "recipe"}
    old = held_out_summary(leave_one_organisation_out(before, searcher=lambda d: search(d, grid=grid)))
    shipped = held_out_summary(held_out)
    assert (old.counts, shipped.counts) == ((102, 158), (116, 162))  # round 56 (54: 101/156, 115/160)
    assert old.median_width == pytest.approx(3.167, abs=0.001)  # round 54 (51: 3.170; 50: 3.028)
    assert old.median_error == pytest.approx(0.1943, abs=0.001)  # round 56 (54: 0.1927; 51: 0.1953)


def test_the_own_script_class_earns_its_place_out_of_sample(data, held_out, shipped_held_out):
    """Round 32: the runs whose training code is the team's own script for the one model, with fused kernels, on plain
    data parallelism (the Tucano models, Mini-Llama2-Chinese, PyGPT, anw-g01's GPT-2, the Alpha compiler's nanochat
    d24), typical until round 31, land together at 1.09-1.45x of their published GPU-hours out of sample as typical, and
    the other typical runs from 0.25x to 1.23x. Labelled as before and searched without the class, the quick
    cross-validation puts 96 within and 119 inside (round 31's figures exactly) against 98 and 118; the whole procedure
    that ships, 96 and 120 (round 31) against 98 and 120 (the test above), the rule round 32's plan fixed first (more
    within, no fewer inside). The class's multiplier is tuned's (1.0), typical's stays 0.9, and its runs' out-of-sample
    range is x0.90-1.25 of the expected MFU, which held 7 of its 8 runs. Round 40 (140 runs): 97 and 120 labelled as
    before against 100 and 120; the whole procedure 100 and 122."""
    own = [c for c in data if c.stack == "own-script"]
    assert len(own) == 18 and len({c.organisation for c in own}) == 11  # round 56: two runs (54: 16, 11; 51: 13, 9)
    assert max(c.gpus for c in own) == 16  # as the class's range label says (mfu.CLASS_SCOPE)
    assert mfu_model.range_claim("own-script").endswith("its runs were all on 1-16 GPUs, so on more it is extrapolated")
    assert sorted(c.id for c in own) == sorted(
        [
            "103",
            "104",
            "105",
            "106",
            "135",
            "185",
            "209",
            "217",
            "228",
            "229",
            "232",
            "253",
            "254",
            "266",
            "267",
            "268",
            "270",
            "271",
        ]
    )
    before = [dataclasses.replace(c, stack="typical") if c.stack == "own-script" else c for c in data]
    grid = {k: v for k, v in calibration.GRID.items() if k != "own_script"}
    old = held_out_summary(leave_one_organisation_out(before, searcher=lambda d: search(d, grid=grid)))
    shipped = held_out_summary(held_out)
    assert (old.counts, shipped.counts) == ((113, 160), (116, 162))  # round 56 (54: 112/158, 115/160)
    assert old.median_width == pytest.approx(3.194, abs=0.001)  # round 56 (54: 3.174; 51: 3.109)
    assert held_out_summary(shipped_held_out).counts == (116, 165)  # round 56 (54: 115, 163; 51: 112, 155)
    assert (FIT.own_script, FIT.typical) == (1.05, 0.9) and FIT.band("own-script") == (
        0.87,
        2.13,
    )  # r56: 1.05 (r54: 1.0, 0.84-2.18; r51: 1.1, 0.74-1.86)
    ratios = [math.exp(h.case.log_ratio(h.fit)) for h in shipped_held_out if h.case.stack == "own-script"]
    assert sum(0.8 <= r <= 1.25 for r in ratios) == 10  # round 46 (round 43: 7 of 8)


def test_the_scale_out_form_earns_its_place_out_of_sample(data, held_out):
    """Round 40's 140 runs: the knee puts one fewer within (99 against 100) and one fewer inside (119 against 120), at a
    wider range (2.36 against 2.33), 14.3 % against 14.2 %. Round 32's 138 runs: the knee puts as many within (98) and
    one fewer inside (117 against 118), at a range
    narrower by 0.002 (2.319) and a median error of 14.4 %: the stated form stays by one run inside (round 31: 93 and
    117 against 96 and 119, 15.9 %).
    Round 1's sharp knee, 1 / (1 + (T.G/N)^2) on every job, searched the same way, against compute / (compute + sync)
    charged only across nodes. On round 29's 138 runs the knee puts two runs fewer within 0.8-1.25x (93 against 95), as
    many inside its range (119) at a wider median range (2.49 against 2.46), with as large a median error (15.0 %) and
    as many inside the default class's range (123); on round 28's, one fewer (94) at 16.4 % against 16.0 %. On round
    27's 137 runs it put fewer within (84 against 92), two fewer inside (116 against 118) at a wider median range (2.60
    against 2.58), 15.1 % against 14.8 %, and three more inside the default class's range (121 against 118). On round
    26's 137 runs it put 75 against 78 within, 105 against 111 inside, one fewer inside the default's range. On round
    25's 134 runs it put 74 against 77 within, 105 against 109 inside, 19.9 % against 19.0 %. On round 24's 125 runs it
    put 71 against 75 within, 95 against 103 inside, 18.9 % against 17.5 %. On round 23's 118 runs it put 68 against 74
    within, one fewer inside (98 against 99), 15.5 % against 16.2 %. On round 22's 114 runs it put 68 against 74 within,
    as many inside (98), 14.8 % against 15.6 %. On round 21's 111 runs it put fewer within (64 against 72) and fewer
    inside (94 against 98), at a larger median error (18.3 % against 14.7 %). On round 20's 110 it put as many within
    (70) and inside (97) at a wider range (2.61 against 2.58). On round 19's 108 it put 70 within and one fewer inside
    (96 against 97) at a narrower range (2.50 against 2.56). Before, it put fewer within: round 17's 67 against 69 of
    107, round 15's 68 against 69 of 106, round 14's 64 against 69 of 105, round 12's 66 against 70, 60 against 63 of
    round 11's 99, 56 against 63 of round 9's 94, 42 against 48 of round 4's 66. The rule the search's other choices
    follow (most within, then most inside, then the narrower range) keeps the stated form, by two runs within in round
    29 (one in round 28, eight in round 27, three in round 26, four in round 24, six in rounds 22 and 23, eight in round
    21, by its range in round 20, by one run inside in round 19): a form the data test, not a knob."""
    knee = dataclasses.replace(calibration.START, scale_out_exponent=2.0, scale_out_in_node=True)
    round_1 = leave_one_organisation_out(data, searcher=lambda d: search(d, start=knee))
    old = held_out_summary(round_1)
    shipped = held_out_summary(held_out)
    assert (shipped.counts, old.counts) == ((116, 162), (108, 157))  # round 56 (54: 115/160, 108/155)
    assert old.median_width == pytest.approx(3.133, abs=0.001)  # round 56 (54: 3.242; 51: 3.157)
    assert calibration.best_loss([("stated", shipped), ("knee", old)]) == "stated"
    assert old.median_error == pytest.approx(0.1670, abs=0.001)  # round 56 (51-54: 0.1657; 47: 0.1469)
    old_default = held_out_summary(round_1, mfu_model.DEFAULT_STACK)
    default = held_out_summary(held_out, mfu_model.DEFAULT_STACK)
    assert (default.counts[1], old_default.counts[1]) == (162, 162)  # round 56 (54: 160, 160; 51: 153, 150)


def test_the_fp8_gain_is_stated_inside_the_published_benchmarks(data, held_out):
    """Round 40's 140 runs: 98 within at 1.3 against 100 at the stated 1.4, at 12.8 % against 14.2 %. Round 32's 138
    runs: 96 within at 1.3 against 98 at the stated 1.4 (round 31: 94 against 96).
    Round 4's search on the whole runs put the FP8 gain at 1.4, inside the published FP8/BF16 throughput ratios
    (torchtitan, OLMo-core, Megatron-LM with Transformer Engine: 1.28-1.42); round 5 states it there (two organisations'
    FP8 runs cannot set it in a fold that holds one out). The whole runs barely tell it from the round-1-3 value 1.3:
    held there, the same search cross-validates to two runs fewer within 0.8-1.25x on round 29's 138 runs (93 against
    95) at a smaller median error (13.9 % against 15.0 %; round 28: 93 against 95, 14.4 % against 16.0 %); on round 27's
    137 it put one MORE (93 against 92) at 14.2 % against 14.8 %, where on round 26's 137 it put three fewer (75 against
    78) at a larger one (19.4 % against 19.0 %; round 25's 134: 74 against 77; round 24's 125: 72 against 75; round 23's
    118 runs and round 22's 114: 72 against 74); round 24's five FP8 nanochat runs are Karpathy's, one organisation
    again; on round 21's 111 it put two more (74 against 72), on round 20's 110 one fewer (69 against 70). The
    difference comes through the other constants the search picks around it, not the three FP8 runs, and moves with one
    run, so the gain stays stated where the benchmarks put it. Searched on round 4's grid it goes to 1.6, outside every
    benchmark (bench/fit_mfu.py)."""
    low, high = mfu_model.FP8_BENCHMARKS
    assert low <= FIT.fp8_gain <= high and FIT.fp8_gain == mfu_model.FP8_GAIN == calibration.START.fp8_gain
    assert "fp8_gain" not in calibration.GRID
    older = dataclasses.replace(calibration.START, fp8_gain=1.3)
    stated = leave_one_organisation_out(data, searcher=lambda d: search(d, start=older))
    old = held_out_summary(stated)
    shipped = held_out_summary(held_out)
    assert (shipped.counts[0], old.counts[0]) == (116, 113)  # round 56 (54: 115, 113; 51: 112, 108)
    assert (round(shipped.median_error, 3), round(old.median_error, 3)) == (0.159, 0.161)  # r56 (r54: 0.155, 0.159)
    scout = next(c for c in data if c.name == "Llama 4 Scout")
    assert scout.mfu(FIT).factors["fp8"] == pytest.approx(FIT.fp8_gain * 989 / 1979)


def test_leaving_untied_input_embeddings_out_of_the_flops_earns_its_place(data, held_out):
    """Round 5's FLOP count (an untied input embedding is a lookup) against rounds 1-4's (every parameter in 6.N.D),
    each searched and cross-validated the same way: the lookup-free count predicts more runs within 0.8-1.25x (95
    against 73 of 138) with a smaller median error (16.0 % against 20.5 %; round 27's 137: 92 against 74, 14.8 % against
    21.2 %; round 25's 134 runs: 77 against 66; round
    24's 125 runs: 75 against 65); since
    round 24 the whole count also takes
    in nanochat's value embeddings."""
    old_cases = [calibration.whole_count(c) for c in data]
    assert sum(o.flops > c.flops for o, c in zip(old_cases, data, strict=True)) >= 40
    counted = leave_one_organisation_out(old_cases)
    old = held_out_summary(counted)
    shipped = held_out_summary(held_out)
    assert shipped.within_band > old.within_band
    assert shipped.median_error < old.median_error


def test_a_class_with_runs_from_three_organisations_gets_its_own_band(data, held_out):
    """Large-lab teams differ little and typical ones a great deal: each class's band is read off its own runs once
    three organisations stand behind it (basic since round 9: Hugging Face, the University of Bonn, AI-Study-Han, and
    since round 10 tiny-llm-zh's author, since round 11 SmallDoges, since round 12 the FlashAttention paper's authors,
    since round 21 Giles Thomas; recipe since round 27: eleven organisations, twelve since round 28). One pooled band
    for every stated class (rounds 1-4) cross-validates to a wider median band (2.78 against 2.46 of round 28's 138
    runs) and a default band covering fewer runs (117 against 123), with two more inside the stated classes' ranges (121
    against 119; round 27's 137: 2.78 against 2.58, 112 against 118, 118 each; round 25's 134: 3.22 against 2.90, 109
    against 117, 114 against 109; round 24's 125 runs: 2.98 against 2.83, 107 against 109, 108 against 103)."""
    ll_low, ll_high = FIT.band("large-lab")
    ty_low, ty_high = FIT.band("typical")
    assert ll_high / ll_low < FIT.band("tuned")[1] / FIT.band("tuned")[0] < ty_high / ty_low
    assert FIT.band("basic") != FIT.band("typical") and FIT.band("basic") == (0.61, 2.28)  # r56 (51: 0.61-2.3)
    assert FIT.band("recipe") == (0.44, 1.12)  # round 48 (round 47: 0.64-3.23; round 46: 0.68-1.6)
    assert ty_low <= FIT.band_low and ty_high >= FIT.band_high  # the default never narrower than the pooled band
    pooled = leave_one_organisation_out(data, searcher=lambda d: search(d, per_class_bands=False))
    old = held_out_summary(pooled)
    shipped = held_out_summary(held_out)
    assert shipped.median_width < old.median_width
    old_default = held_out_summary(pooled, mfu_model.DEFAULT_STACK)
    default = held_out_summary(held_out, mfu_model.DEFAULT_STACK)
    assert default.inside_range > old_default.inside_range


def test_a_published_shape_sets_the_attention_flops():
    """TinyLlama's row gives 22 layers of 2048: 12 x 22 x 2048 x 2048 attention FLOPs per token, not the
    conventional shape of 1.1B parameters (a deep, thin MobileLLM-like shape would be off by twice that)."""
    row = next(r for r in rows() if r["run"] == "TinyLlama 1.1B")
    flops = job_of(row).flops()
    assert flops.attention == pytest.approx(12 * 22 * 2048 * 2048 * 3000e9)
    assert flops.weights == pytest.approx(6 * (1.1e9 - 32000 * 2048) * 3000e9)  # its untied input table is a lookup
    bare = job_of({**row, "layers": "", "hidden": "", "tied": ""}).flops()
    assert bare.attention != pytest.approx(flops.attention)
    assert bare.weights == pytest.approx(6 * 1.1e9 * 3000e9)  # tying not given: every parameter counts


def test_a_row_states_sliding_windows_and_value_embeddings_as_nanochat_counts_them():
    """Karpathy's nanochat leaderboard Run 1, row 191 (d24 at commit 348fbb3, 16,704 steps of 524,288 tokens): 24
    layers of 1,536, vocabulary 32,768 untied, value embeddings of 32,768 x 1,536 on 12 layers (lookups, as the input
    table), the "SSSL" pattern of half-length windows with the last layer long (6 long, 18 short: span 0.625).
    nanochat's own count, logged by wandb as total_training_flops, is 4.330784131228946e+19; costopt's differs only
    by the 48 residual scalars nanochat leaves out (6 x 48 FLOPs per token)."""
    row = next(r for r in rows() if r["id"] == "191")
    case = Case.of(row)
    assert case.flops == pytest.approx(4.330784131228946e19 + 6 * 48 * 8.757706752e9, rel=1e-12)
    assert case.job.flops().attention == pytest.approx(12 * 1536 * (6 * 2048 + 18 * 1024) * 8.757706752e9)
    assert calibration.predict(row).estimate.flops.total == pytest.approx(case.flops)  # the estimate path agrees
    assert calibration.whole_count(case).flops > case.flops + 6 * 0.6e9 * 8.7e9  # rounds 1-4 counted the lookups
    for bad in ({"attention_span": "1.5"}, {"attention_span": "0"}, {"lookup_params_b": "2"}):
        with pytest.raises(ValueError, match="attention_span"):
            Case.of({**row, **bad})


def test_the_nanochat_rows_count_the_flops_nanochat_counts():
    """Rows 191-197 (round 24): each row's FLOPs per token, from its parameters, value embeddings, vocabulary, width
    and window span, is nanochat's own ``estimate_flops`` at the run's commit (worked from the code, and for Run 1
    checked against its logged total) plus the residual scalars nanochat leaves out (42-74 of them, 6 FLOPs each)."""
    nanochat = {"191": 4_945_112_064, "192": 6_185_320_128, "193": 6_185_320_128, "194": 4_945_112_064,
                "195": 4_860_160_128, "196": 4_775_225_472, "197": 2_886_212_784}  # fmt: skip
    by_id = {r["id"]: r for r in rows()}
    for run_id, per_token in nanochat.items():
        row = by_id[run_id]
        counted = Case.of(row).flops / (float(row["tokens_b"]) * 1e9)
        assert 0 < counted - per_token < 6 * 80, (run_id, counted - per_token)


def test_the_rows_whose_reports_print_flops_per_token_count_them():
    """Every row whose source quotes nanochat's report line "Number of FLOPs per token" (rows 187, 200 and 219: the
    autumn-2025 d20, full attention, no value embeddings or residual scalars) gives that figure from its own
    parameters, untied vocabulary, depth, width and sequence, to the digits printed; row 200's report also prints its
    total, "Total training flops: 3.917670e+19", and its 171.99 minutes on 8 GPUs."""
    quoted = re.compile(r"FLOPs per token: ([0-9.]+e[+-]?[0-9]+)")
    printed = {r["id"]: (r, float(m.group(1))) for r in rows() if (m := quoted.search(r["source"]))}
    assert set(printed) == {"187", "200", "219"}
    for row, per_token in printed.values():
        assert Case.of(row).flops / (float(row["tokens_b"]) * 1e9) == pytest.approx(per_token, rel=1e-6), row["id"]
    case = Case.of(printed["200"][0])
    assert case.flops == pytest.approx(3.917670e19, rel=1e-6)
    assert case.published_gpu_hours == pytest.approx(171.99 / 60 * 8, abs=0.001)


def test_a_steady_figure_is_compared_with_the_steady_part_of_the_prediction(data):
    """Round 28: 26 rows publish a time summed from their steps (Pythia's logged step time, nanochat's "Total training
    time", which leaves out evaluation, the speedrun logs), a steady rate; the model predicts a whole run. The project
    reads a steady rate as ``measured.GOODPUT`` (0.9) of a whole run everywhere else (``--measured``, the AMD factor),
    so these rows are compared with that share of the prediction; every other figure (billed GPU-hours, GPUs x
    wall-clock days) with all of it. What a user sees stays the whole run."""
    steady = [c for c in data if c.counted != 1.0]
    assert len(steady) == 31 and {c.counted for c in steady} == {GOODPUT}  # round 47: 26 and five
    romero = "Tyler Romero (one person; nanogpt-speedrun worklog)"
    assert {c.organisation for c in steady} >= {"EleutherAI", "Andrej Karpathy", romero}
    for basis in ("GPUs x days x 24", "published GPU-hours", "GPUs x days x 24 (summed over stages)"):
        assert calibration.counted_share(basis) == 1.0
    row = next(r for r in rows() if r["id"] == "200")
    case = Case.of(row)
    whole = dataclasses.replace(case, counted=1.0)
    assert case.gpu_hours(0.4) == pytest.approx(whole.gpu_hours(0.4) * 0.9)
    run = calibration.predict(row)
    assert run.ratio == pytest.approx(math.exp(case.log_ratio()))
    assert run.estimate.gpu_hours.expected == pytest.approx(whole.gpu_hours(case.mfu().expected))  # the user's: whole
    assert run.inside == case.inside()


def test_the_steady_reading_out_of_sample(data, held_out):
    """Round 40's 140 runs: with it 100 and 120 at x2.33, read as whole runs 99 and 120 at x2.44 (default class 127
    against 122). Round 32's 138 runs: with it 98 and 118 at x2.32, read as whole runs 98 and 118 at x2.41 (a tie but
    for the
    range and the default class, 125 against 120; round 31: 96 and 119, 95 and 119 at x2.58).
    What the steady reading does, each way searched with the shipped loss and cross-validated the quick way (each
    organisation held out, in-sample ranges widened 13 %) on round 29's 138 runs: with it 95 within 0.8-1.25x and 119
    inside at a median range of x2.46 and a median error of 15.0 %, 123 inside the default class's range; read as whole
    runs (rounds 23-27), 95 and 119 at x2.59 and 16.1 %, 118 for the default class (the search then puts recipe at 1.5
    of tuned; round 28, on the 0.1 grid: 96 and 119 at 15.0 % against 95 and 119 at 16.0 %). The rule that shipped it
    (round 28's plan) judged the whole procedure on round 27's 137 runs: 94 within and 119 inside against round 27's 92
    and 116 (and against 92 and 118 with this loss and no steady reading). With Brandon Ong's row added the whole
    procedure puts 95 and 119 at x2.44 and 16.0 % with it, 96 and 119 at x2.50 and 15.0 % without: one run moves the
    folds' recipe multiplier across a step of its grid; on round 29's finer grid, 95 and 120 at x2.43 and 15.0 % with
    it, 95 and 118 at x2.50 and 16.1 % without. It is a reading of what the figures measure, stated, not a fitted
    knob."""
    whole = [dataclasses.replace(c, counted=1.0) for c in data]
    held = leave_one_organisation_out(whole)
    old, shipped = held_out_summary(held), held_out_summary(held_out)
    # rounds 48-54: read as whole runs one more lands within (116 against 115 in round 54) and, since round 51, one
    # fewer inside at the same range; the reading is of what the figures measure, stated, and stays (history, round 48)
    assert (old.counts, shipped.counts) == ((117, 161), (116, 162))  # round 56 (54: 116/159, 115/160)
    assert old.median_width == pytest.approx(3.021, abs=0.001) and shipped.median_width <= old.median_width  # r54
    assert old.median_error == pytest.approx(0.1487, abs=0.001)  # round 54 (51: 0.1462; 50: 0.1286)
    old_default = held_out_summary(held, mfu_model.DEFAULT_STACK)
    default = held_out_summary(held_out, mfu_model.DEFAULT_STACK)
    assert (default.counts[1], old_default.counts[1]) == (162, 162)  # round 56 (54: 160, 160; 51: 153, 152)
    assert search(whole).recipe == 1.2  # round 48 (1.5 with the small-model term)


def test_an_untied_row_names_its_vocabulary_and_width():
    """An untied input embedding leaves vocab x hidden parameters out of the FLOPs: a row that says so without the
    published vocabulary and width cannot be computed, and says which row."""
    row = next(r for r in rows() if r["run"] == "Pythia 1B")
    assert job_of(row).model.input_embedding == 50304 * 2048
    with pytest.raises(ValueError, match="Pythia 1B"):
        job_of({**row, "hidden": ""})
    for r in rows():
        if r["tied"] == "no":
            assert r["vocab"] and r["hidden"], r["run"]
        assert r["tied"] in ("yes", "no", ""), r["run"]


def test_stack_classes_are_ordered_and_scale_the_mfu_by_their_multiplier():
    assert FIT.large_lab >= 1.0 >= FIT.typical >= FIT.basic > 0 and FIT.recipe >= FIT.typical
    assert FIT.own_script >= FIT.basic
    assert not calibration.ordered(dataclasses.replace(FIT, own_script=FIT.basic - 0.05))
    assert not calibration.ordered(dataclasses.replace(FIT, recipe=FIT.typical - 0.1))
    assert Job(resolve_model("8B"), 1e9).stack == mfu_model.DEFAULT_STACK == "typical"
    a100 = GPUS.resolve("A100")
    by_stack = {s: estimate(Job(resolve_model("8B"), 100e9, stack=s), a100, 64).mfu.expected for s in mfu_model.STACKS}
    for stack, value in by_stack.items():
        unfused = 1 / mfu_model.small_model_factor(a100, 8e9) if stack in mfu_model.FUSED_STACKS else 1.0  # round 48
        assert value == pytest.approx(min(by_stack["tuned"] * FIT.stack(stack) * unfused, mfu_model.MFU_CEILING))
    assert by_stack["recipe"] == pytest.approx(by_stack["tuned"] * 1.1 / mfu_model.small_model_factor(a100, 8e9))
    with pytest.raises(UsageError, match="--stack"):
        Job(resolve_model("8B"), 1e9, stack="fast")


def test_the_default_band_covers_more_than_a_stated_stack():
    """A user who says nothing may run any stack: the default's band contains the stated classes' band."""
    low, high = FIT.band("typical")
    assert low <= FIT.band("tuned")[0] and high > FIT.band("tuned")[1]
    a100 = GPUS.resolve("A100")
    typical = estimate(Job(resolve_model("8B"), 100e9), a100, 8)
    tuned = estimate(Job(resolve_model("8B"), 100e9, stack="tuned"), a100, 8)
    assert typical.mfu.high / typical.mfu.low > tuned.mfu.high / tuned.mfu.low


def test_small_model_term_reproduces_the_benchmark_tables_it_is_stated_from():
    """llm-foundry's throughput tables: A100 125M at 0.70x the MFU of 7B, H100 1.3B at 0.87x of 7B."""
    a100, h100 = GPUS.resolve("A100"), GPUS.resolve("H100")

    def ratio(gpu, small, big):
        return mfu_model.small_model_factor(gpu, small) / mfu_model.small_model_factor(gpu, big)

    assert ratio(a100, 0.125e9, 6.66e9) == pytest.approx(44.79 / 64.23, rel=0.06)
    assert ratio(h100, 1.316e9, 6.66e9) == pytest.approx(36.65 / 42.2, rel=0.06)
    # by hand: 1 / (1 + 989/312 x 5e7/135e6) on H100
    assert mfu_model.small_model_factor(h100, 135e6) == pytest.approx(1 / (1 + 989 / 312 * 5e7 / 135e6))
    # a slower GPU keeps small matrices busier: the same 350M model loses less on a V100 than on an H100
    v100 = GPUS.resolve("V100")
    assert mfu_model.small_model_factor(v100, 350e6) > mfu_model.small_model_factor(a100, 350e6)
    assert mfu_model.small_model_factor(a100, 350e6) > mfu_model.small_model_factor(h100, 350e6)


def test_older_gpus_and_attention_pay_their_stated_factors():
    v100 = mfu_model.realized_mfu(GPUS.resolve("V100"), active_params=1.1e9, gpus=96, gpus_per_node=8)
    a100 = mfu_model.realized_mfu(GPUS.resolve("A100"), active_params=1.1e9, gpus=96, gpus_per_node=8)
    assert v100.factors["older_gpu"] == FIT.older and "older_gpu" not in a100.factors
    costly = dataclasses.replace(FIT, attention_cost=2.0)
    m = mfu_model.realized_mfu(
        GPUS.resolve("A100"), active_params=7e9, gpus=8, gpus_per_node=8, attention_share=0.25, fit=costly
    )
    assert m.factors["attention"] == pytest.approx(1 / 1.25)  # (W + A) / (W + 2A) with A = a quarter of the FLOPs
    long_seq = Job(resolve_model("llama3-8b"), 1e12, seq_len=32768).flops()
    short_seq = Job(resolve_model("llama3-8b"), 1e12, seq_len=2048).flops()
    assert long_seq.attention / long_seq.total > 4 * short_seq.attention / short_seq.total


def test_unfused_attention_cost_is_its_arithmetic_and_only_where_scores_are_written_out():
    """Round 30's candidate term (not shipped). C_u by hand for A100-40GB (312 TFLOPS, 1,555 GB/s) and 64-wide heads:
    1 + 32 / (12 x 64) x 312e12 / 1555e9 x 0.5 / 0.8; a fused job, one on Volta (where the older-GPU factor carries
    it) and any job under the shipped constants pay nothing."""
    a100 = GPUS.resolve("A100-40GB")
    assert mfu_model.unfused_attention_cost(a100, 64) == pytest.approx(1 + 32 / 768 * 312e12 / 1555e9 * 0.625)
    assert mfu_model.unfused_attention_cost(a100, 64) == pytest.approx(6.22, abs=0.01)
    # wider heads carry more FLOPs per score; a GPU with more FLOPs per byte pays more
    assert mfu_model.unfused_attention_cost(a100, 128) < mfu_model.unfused_attention_cost(a100, 64)
    h100 = GPUS.resolve("H100-SXM")
    assert mfu_model.unfused_attention_cost(h100, 64) > mfu_model.unfused_attention_cost(a100, 64)
    candidate = dataclasses.replace(FIT, unfused_attention=True)

    def factors(gpu: str, attention: str, fit: mfu_model.Fit = candidate) -> dict[str, float]:
        return mfu_model.realized_mfu(
            GPUS.resolve(gpu), active_params=1e9, gpus=8, gpus_per_node=8, attention_share=0.2, attention=attention,
            head_dim=64, fit=fit,
        ).factors  # fmt: skip

    cost = mfu_model.unfused_attention_cost(a100, 64)
    assert factors("A100-40GB", "unfused")["unfused_attention"] == pytest.approx(1 / (1 + (cost - 1) * 0.2))
    assert "unfused_attention" not in factors("A100-40GB", "fused")
    assert "unfused_attention" not in factors("V100", "unfused") and "older_gpu" in factors("V100", "unfused")
    assert "unfused_attention" not in factors("A100-40GB", "unfused", FIT)  # the shipped model does not charge it


def test_unfused_attention_reproduces_the_flashattention_papers_megatron_baselines():
    """Stated by arithmetic, checked (not set) against the FlashAttention paper's Table 2: Megatron-LM's GPT-2 small
    and medium on 8 A100-40GB took 4.7 and 11.5 days where FlashAttention took 2.7 and 6.9. The term alone, on the
    calibration rows of those runs, gives 1.69x and 1.65x: within 5 % of the paper's 1.74x and 1.67x."""
    candidate = dataclasses.replace(FIT, unfused_attention=True)
    by_name = {case.name: case for case in cases()}
    for size, slowdown in mfu_model.FLASH_ATTENTION_PAPER_SLOWDOWN.items():
        megatron = by_name[f"{size} (Megatron-LM; FlashAttention paper)"]
        flash = by_name[f"{size} (FlashAttention; FlashAttention paper)"]
        assert megatron.attention == "unfused" and flash.attention == "fused"
        assert 1 / megatron.mfu(candidate).factors["unfused_attention"] == pytest.approx(slowdown, rel=0.05)
        assert "unfused_attention" not in flash.mfu(candidate).factors


def test_unfused_attention_is_not_charged_because_it_loses_runs_out_of_sample(data, held_out):
    """Round 40's 140 runs: 97 and 119 against 100 and 120 (x2.32; default class 128). Round 32's 138 runs: 96 and
    117 against 98 and 118 (round 31: 93 and 118 against 96 and 119).
    Round 30's candidate, searched and cross-validated the quick way with the shipped loss: 92 runs within
    0.8-1.25x against 95 and 118 inside against 119, at a narrower median range (2.42 against 2.46) and more inside the
    default class's range (125 against 123). The search puts ``basic`` at 0.4 with it, and TeenyTinyLlama's two runs,
    which used FlashAttention-2 and are as slow as the transformers GPT-2 runs, fall out of their range; so the shipped
    constants do not charge it (the whole procedure, docs/calibration-history.md: 95 and 118, or 97 and 116 with the
    loss the cross-validation picks for it, against 95 and 120)."""
    start = dataclasses.replace(calibration.START, unfused_attention=True)
    candidate = leave_one_organisation_out(data, searcher=lambda d: search(d, start=start))
    tried, shipped = held_out_summary(candidate), held_out_summary(held_out)
    assert (shipped.counts, tried.counts) == ((116, 162), (114, 163))  # round 56 (54: 115/160, 112/162)
    assert calibration.best_loss([("shipped", shipped), ("unfused", tried)]) == "shipped"
    assert tried.median_width == pytest.approx(2.848, abs=0.001)  # round 56 (54: 2.924; 51: 2.834)
    assert held_out_summary(candidate, mfu_model.DEFAULT_STACK).counts[1] == 164  # round 56 (54: 162; 51: 155)
    assert not FIT.unfused_attention


def test_the_batch_sizes_gathered_for_a_later_round_name_real_runs():
    """optimizer/data/calibration_batches.csv (round 30's groundwork for a per-step-overhead candidate, not read by
    the model): one line for every included run, by id, each a whole positive number of tokens with how it was
    found, or marked not found."""
    import csv
    from importlib import resources

    text = resources.files("optimizer").joinpath("data/calibration_batches.csv").read_text(encoding="utf-8")
    batches = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    assert sorted(b["id"] for b in batches) == sorted(r["id"] for r in rows())
    for b in batches:
        assert b["how"] in ("stated", "derived", "not found") and b["source"]
        assert (b["how"] == "not found") == (b["global_batch_tokens"] == "")
        if b["how"] != "not found":
            assert int(b["global_batch_tokens"]) >= 1024
    teeny = next(b for b in batches if b["id"] == "108")
    assert int(teeny["global_batch_tokens"]) == 8192  # TeenyTinyLlama's Table 3: the lead the batches are for


def test_attention_labels_are_fused_unfused_or_blank():
    """A label outside the calibration file's two words is a data error, not a silent "fused"."""
    row = next(r for r in rows() if r["id"] == "154")
    assert calibration.attention_of(row) == "unfused"
    assert calibration.attention_of({**row, "attention": ""}) == "fused"
    with pytest.raises(ValueError, match="attention must be one of fused, unfused"):
        calibration.attention_of({**row, "attention": "eager"})


def test_amd_cdna2_factor_reproduces_amd_olmo_published_throughput():
    """Stated from AMD-OLMo-1B's 12,200 tokens/s per MI250 (64 GPUs), a steady rate: the model's whole-run MFU for that
    job is that rate less the time a whole run spends off it, so the steady MFU must lie where the stated goodput range
    (optimizer.measured, 0.75-1.0) puts it. At the stated goodput, 0.9, the rate alone says 0.46 with round 24's
    constants (0.45 with rounds 22-23's, 0.46 with round 21's, 0.45 with rounds 19-20's, 0.46 with rounds 17-18's,
    0.45 with rounds 12-16's; the whole CDNA 2 runs say 0.5: AMD-Llama-135m, OpenEuroLLM's 2B and AI2's Paloma 1B
    baseline land at 1.10x, 1.06x and 0.97x of their hours out of sample). Since round 17 the search keeps this
    whole run below the steady rate (``below_benchmarks``), so the first check holds by construction for any
    constants the search picks."""
    row = next(r for r in rows(included_only=False) if r["run"] == "AMD-OLMo-1B")
    case = Case.of({**row, "gpu_hours": "1"})
    published = (6 * 1.18e9 + 12 * 16 * 2048 * 2048) * 12_200 / 362.1e12
    assert published == pytest.approx(0.266, abs=0.001)
    bound = next(b for b in calibration.BENCHMARKS if b.model == "AMD-OLMo-1B")  # the search's copy of the same rate
    assert bound.mfu == pytest.approx(published, abs=5e-5)
    whole_run = case.mfu(FIT).expected
    low, high = GOODPUT_RANGE
    assert whole_run / high <= published <= whole_run / low
    factor = mfu_model.AMD_FACTOR["CDNA 2"]
    assert factor * published / (whole_run / GOODPUT) == pytest.approx(0.456, abs=0.005)
    assert case.mfu(FIT).factors["software"] == factor


def test_mi250_and_mi250x_are_counted_per_module():
    for name, tflops in (("MI250X", 383.0), ("MI250", 362.1)):
        gpu = GPUS.resolve(name.lower())
        assert (gpu.vendor, gpu.architecture, gpu.memory_gb, gpu.bf16_tflops) == ("AMD", "CDNA 2", 128.0, tflops)
        assert "two GCDs" in gpu.notes and gpu.fp8_tflops is None
    amd135 = next(c for c in cases() if c.name == "AMD-Llama-135m")
    assert amd135.gpus == 16  # 4 nodes x 4 MI250 modules, as AMD counts them (8 GCDs per node)


def test_a_search_candidate_moves_the_prediction_as_its_constant_says():
    row = next(r for r in rows() if r["run"] == "Llama 2 70B")
    shipped = predict(row)
    halved = predict(row, dataclasses.replace(FIT, base=FIT.base / 2))
    assert halved.estimate.gpu_hours.expected == pytest.approx(2 * shipped.estimate.gpu_hours.expected)
    assert halved.ratio == pytest.approx(2 * shipped.ratio)
    as_typical = predict(row, stack="typical")
    assert as_typical.ratio == pytest.approx(shipped.ratio * FIT.large_lab / FIT.typical)


def test_the_fast_path_agrees_with_estimate(data):
    """The search re-predicts runs through Case, not estimate(): both must give the same GPU-hours."""
    by_id = {r["id"]: r for r in rows()}
    for case in data[::7]:
        assert math.exp(case.log_ratio()) == pytest.approx(predict(by_id[case.id]).ratio)


def test_cli_stack_option():
    base = ["estimate", "--model", "8B", "--tokens", "100B", "--gpu", "A100", "--gpus", "8", "-f", "json", "--exact"]
    typical = json.loads(run_costopt(*base).stdout)
    tuned = json.loads(run_costopt(*base, "--stack", "tuned").stdout)
    assert typical["assumptions"]["stack"] == "typical" and tuned["assumptions"]["stack"] == "tuned"
    assert tuned["mfu"]["expected"] == pytest.approx(typical["mfu"]["expected"] / FIT.typical)
    bad = run_costopt(*base, "--stack", "fast")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--stack must be one of" in bad.stderr


def test_plan_prices_the_stack_the_job_names():
    """plan runs estimate() for every option with the job's stack: a tuned team's option is 1/typical as long."""
    from optimizer.plan import Constraints, build_plan

    offer = {"provider": "aws", "region": "us-east-1", "instance_type": "p4de.24xlarge", "gpu": "A100-80GB",
             "gpu_count": 8, "pricing": "on_demand", "usd_per_hour": 40.0, "age_hours": 1.0,
             "source": "https://example/x", "observed_at": "2026-11-20"}  # fmt: skip
    walls = {}
    for stack in ("typical", "tuned"):
        plan = build_plan(Job(resolve_model("8B"), 100e9, stack=stack), [offer], GPUS, Constraints(max_gpus=8))
        walls[stack] = plan.options[0]["wall_expected"]
    assert walls["typical"] == pytest.approx(walls["tuned"] / FIT.typical)


def test_the_calibrated_gpu_families_are_those_with_published_whole_runs():
    """plan and estimate call a GPU's speed 'calibrated' only where whole runs on its family are in the file."""
    families = {GPUS.resolve(r["gpu"]).architecture for r in rows()}
    assert families == mfu_model.CALIBRATED_ARCHITECTURES
    assert mfu_model.speed_basis(GPUS.resolve("H200")) == "calibrated"  # Hopper: H100 and H800 runs
    assert mfu_model.speed_basis(GPUS.resolve("L40S")) == "calibrated"  # Ada Lovelace: APT3-1B on one RTX 4090
    for name in ("MI300X", "B200", "GB200"):
        assert mfu_model.speed_basis(GPUS.resolve(name)) == "extrapolated", name
    est = estimate(Job(resolve_model("8B"), 100e9), GPUS.resolve("MI300X"), 8)
    assert est.as_dict()["assumptions"]["speed_basis"] == "extrapolated"
    assert "stated ROCm factor" in est.as_dict()["assumptions"]["speed_basis_means"]


def test_plan_flags_an_option_whose_speed_is_extrapolated():
    """MI300X rows' time rests on a ROCm factor stated from benchmarks, not on whole runs
    (optimizer/rocm_benchmarks.py), and the row says so (JSON speed_basis, the table's notes); an H100 row does not."""
    out = run_costopt("plan", "--model", "8B", "--tokens", "100B", "--gpu", "MI300X", "--gpu", "H100", "-f", "json")
    assert out.returncode == 0, out.stderr
    options = json.loads(out.stdout)["options"]
    by_gpu = {o["gpu"]: o for o in options}
    assert by_gpu["MI300X"]["speed_basis"] == "extrapolated"
    assert "speed extrapolated" in by_gpu["MI300X"]["notes"]
    h100 = next(o for o in options if o["gpu"].startswith("H100"))
    assert h100["speed_basis"] == "calibrated" and "speed extrapolated" not in h100["notes"]


def test_the_loss_cap_is_chosen_by_within_then_inside_then_the_narrower_range():
    def judged(within: float, inside: float, width: float) -> calibration.Summary:
        return calibration.Summary(87, within, inside, width, 1.0, 0.15, [])

    assert calibration.best_loss([(1.3, judged(0.70, 0.95, 2.0)), (1.8, judged(0.71, 0.85, 2.4))]) == 1.8
    assert calibration.best_loss([(1.3, judged(0.71, 0.85, 2.0)), (1.8, judged(0.71, 0.90, 2.4))]) == 1.8
    assert calibration.best_loss([(1.8, judged(0.71, 0.90, 2.35)), (2.5, judged(0.71, 0.90, 2.43))]) == 1.8
    assert calibration.best_loss([(2.0, judged(0.71, 0.90, 2.35)), (None, judged(0.71, 0.90, 2.35))]) == 2.0


def test_the_search_never_picks_constants_above_the_published_benchmarks(data):
    """A whole run cannot beat a few steady steps of the same job: constants that put llm-foundry's own 70B on 64
    A100-80GB above MosaicML's measured 53.33 % MFU are not admissible, however well they fit (round 12's 1.5x cap
    found base 0.56 unbound, 54.3 % there). Since round 17 AMD's own steady rate for AMD-OLMo-1B on 64 MI250 (26.6 %
    MFU, the source of the stated CDNA 2 factor) binds too: the constants the 1.8x cap found without it (bandwidth
    exponent 0.8, base 0.52) put that job's whole run at 27.1 %. Since round 26 llm-foundry's H100 rows at 512 GPUs
    and on one node bind too: without them round 26's refit moved the bandwidth exponent to 0.4 and put MPT 30B on 8
    H100 at 41.3 %, against MosaicML's 38.11 %."""
    marks = calibration.BENCHMARKS
    mpt30_h100 = next(b for b in marks if b.model == "MPT 30B" and b.gpu.name == "H100-SXM" and b.gpus == 8)
    assert mpt30_h100.mfu == 0.3811
    round_26_unbound = dataclasses.replace(FIT, bandwidth_exponent=0.4, thin_params_per_gpu=1.4e6, moe=0.65)
    assert not calibration.below_benchmarks(round_26_unbound, [mpt30_h100])
    assert calibration.below_benchmarks(round_26_unbound, [b for b in marks if b.gpu.name != "H100-SXM"])
    assert len(marks) == 28 and {b.gpu.name for b in marks} == {"A100-80GB", "A100-40GB", "H100-SXM", "MI250"}
    mpt70 = next(b for b in marks if b.model == "MPT 70B" and b.gpu.name == "A100-80GB")
    assert (mpt70.gpus, mpt70.mfu) == (64, 0.5333)
    amd = next(b for b in marks if b.model == "AMD-OLMo-1B")
    assert (amd.gpus, amd.gpus_per_node, amd.mfu, amd.stack) == (64, 4, 0.2657, "typical")
    assert calibration.below_benchmarks(FIT) and calibration.below_benchmarks(calibration.START)
    too_fast = dataclasses.replace(FIT, base=0.56)
    assert not calibration.below_benchmarks(too_fast)
    others = [b for b in marks if b is not mpt70 and b is not amd and b.model != "MPT 30B"]
    assert calibration.below_benchmarks(too_fast, others)
    unbound_1_8 = dataclasses.replace(
        FIT, base=0.52, bandwidth_exponent=0.8, thin_params_per_gpu=5e5, large_lab=1.15, typical=0.9, basic=0.3
    )
    assert not calibration.below_benchmarks(unbound_1_8)
    assert calibration.below_benchmarks(unbound_1_8, [b for b in marks if b is not amd])
    # the search rejects it even where it would fit better: started there, it moves to admissible constants
    assert calibration.below_benchmarks(search(data, start=dataclasses.replace(calibration.START, base=0.54)))
    for cap in (1.3, 2.0):
        assert calibration.below_benchmarks(search(data, loss_cap=cap))


def test_the_recipe_multiplier_steps_as_the_other_classes(data, held_out):
    """Round 40's 140 runs: 100 and 120 on either grid, 14.7 % against 14.2 %. Round 32's 138 runs: 98 and 118 on
    either grid (round 31: 96 and 119).
    Round 29: ``GRID["recipe"]`` steps by 0.05 like the other class multipliers (round 27 wrote it at 0.1). On the
    138 runs the 0.1 grid puts recipe at 1.3 and, cross-validated the quick way, as many within (95) and inside (119)
    at the same median range, at a median error of 16.0 % against 15.0 %: with one grid step the folds that hold out a
    recipe runner jump between 1.3 and 1.4, and fifteen runs' held-out ratios with them (the whole procedure: 16.0 %
    against 14.99 %, 119 inside against 120; README)."""
    grid = calibration.GRID
    steps = {name: round(grid[name][1] - grid[name][0], 4) for name in calibration.CLASS_MULTIPLIERS}
    assert set(steps.values()) == {0.05}
    coarse = {**grid, "recipe": [round(1.0 + 0.1 * i, 1) for i in range(11)]}
    old = held_out_summary(leave_one_organisation_out(data, searcher=lambda d: search(d, grid=coarse)))
    shipped = held_out_summary(held_out)
    assert old.counts == shipped.counts == (116, 162)  # round 56 (54: 115, 160; 51: 112, 153)
    assert old.median_error == pytest.approx(0.1591, abs=0.001)  # round 56 (54: 0.1554; 51: 0.1465)
    assert shipped.median_error == pytest.approx(0.1591, abs=0.001)  # round 56 (54: 0.1554; 51: 0.1465)
    assert search(data, grid=coarse).recipe == 1.1 and FIT.recipe == 1.1  # round 48 (47: 1.3, 1.35)


def test_the_run_weights_are_the_ones_the_cross_validation_picks(data, held_out):
    """Round 42's 146 runs: with the 1.5x cap pairs put 102 within and organisation weights 98 (126 inside either way),
    so pairs ship again, and own-script moves to 1.05 of tuned (1.0 by organisation). Round 40's 140 runs: 100 and 120
    either way, a tie. Round 32's 138 runs: 98 and 118 either way (round 31: 96 and 119).
    Whether each organisation (rounds 1-11, 22-23 and 28-41) or each organisation-and-class pair (rounds 12-21, 24-27
    and since round 42) weighs one in the loss is chosen by the cross-validation with the cap. On rounds 28 and 29's 138
    runs pair weights with the 1.3x cap put as many within 0.8-1.25x (95) and inside (119) at the same median range and
    error, and move ``basic`` to 0.25 of ``tuned`` (0.3 by organisation): a tie in everything, which goes to the first
    of ``LOSSES``, organisation weights. On round 27's 137 runs organisation weights put as many within (92) and inside
    (118) at a wider median range (2.59 against 2.58), so pairs stayed; on round 26's, with the 1.8x cap, they put 72
    within against 78, at 20.1 % against 19.0 % (round 25's 134: 72 against 77; round 24's 125: 66 against 75); on round
    23's 118 runs, with the 1.3x cap then shipped, pairs had put 73 within against 74."""
    assert calibration.LOSS_WEIGHTING == "pairs" and (calibration.LOSS_CAP, "pairs") in calibration.LOSSES
    order = calibration.LOSSES.index
    assert order((calibration.LOSS_CAP, "orgs")) < order((calibration.LOSS_CAP, "pairs"))
    assert calibration.pair_weights(data) != calibration.organisation_weights(data)
    by_org = leave_one_organisation_out(data, searcher=calibration.searcher_for(calibration.LOSS_CAP, "orgs"))
    orgs, shipped = held_out_summary(by_org), held_out_summary(held_out)
    assert (shipped.counts, orgs.counts) == ((116, 162), (107, 162))  # round 56 (54: 115/160, 107/160)
    assert search(data, weighting="orgs").own_script == 1.0 and FIT.own_script == 1.05  # round 56 (54: 1.0, 1.0)
    judged = [((calibration.LOSS_CAP, "orgs"), orgs), ((calibration.LOSS_CAP, "pairs"), shipped)]
    assert calibration.best_loss(judged) == (calibration.LOSS_CAP, calibration.LOSS_WEIGHTING)


def test_each_run_weighing_one_is_round_33s_candidate_and_not_in_the_menu(data):
    """Round 33 of issue 14: each run weighing one (``run_weights``) put 103 within out of sample but 117 inside the
    ranges by the whole procedure (round 32's shipped loss: 98 and 120), below the 85 % target, so by its plan it
    stays out of ``LOSSES``. Searched on every run it moves the constants the history records: scale-out 7e5, MoE 0.75,
    basic 0.25, recipe 1.25 and own-script 1.1 of tuned (shipped: 5e5, 0.7, 0.3, 1.35, 1.0)."""
    assert calibration.run_weights(data) == [1.0] * len(data)
    assert calibration.weights_of("runs", data) != calibration.weights_of("orgs", data)
    assert all(weighting != "runs" for _, weighting in calibration.LOSSES)
    by_run = search(data, weighting="runs")
    moved = (by_run.thin_params_per_gpu, by_run.moe, by_run.basic, by_run.recipe, by_run.own_script)
    assert moved == (7e5, 0.75, 0.3, 1.1, 1.15)  # round 54 (48-51: 5e5; round 42, the 1.5x cap: recipe 1.3)
    assert (FIT.thin_params_per_gpu, FIT.moe, FIT.basic, FIT.recipe, FIT.own_script) == (5e5, 0.7, 0.3, 1.1, 1.05)


def test_causal_credit_halves_the_attention_of_fused_runs_only_and_is_off_as_shipped():
    """Round 36 of issue 14's candidate (``Fit.causal_credit``, not shipped): a fused causal kernel computes about half
    the scores, so with the credit on a fused run's attention costs CAUSAL_WORK x C of its counted FLOPs; an unfused
    run, or one on Volta (whose ``older`` factor carries its attention), is charged as before."""
    a100, v100 = GPUS.resolve("A100"), GPUS.resolve("V100")
    on = dataclasses.replace(FIT, causal_credit=True)

    def attention(fit, gpu=a100, kind="fused"):
        m = mfu_model.realized_mfu(gpu, active_params=1e9, gpus=8, gpus_per_node=8, attention_share=0.2,
                                   attention=kind, fit=fit)  # fmt: skip
        return m.factors["attention"]

    assert not FIT.causal_credit and mfu_model.CAUSAL_WORK == 0.5
    assert attention(FIT) == 1.0  # C = 1: attention FLOPs cost what dense ones do
    assert attention(on) == pytest.approx(1 / (1 - 0.5 * 0.2))  # 0.2 of the FLOPs at half the cost: 1/0.9
    assert attention(on, kind="unfused") == attention(FIT, kind="unfused") == 1.0
    assert attention(on, gpu=v100) == 1.0


def test_the_within_count_counts_the_runs_inside_the_acceptance_band_edges_included():
    """``calibration.within_count``, what round 35's objective climbs: 0.8x and 1.25x count, 0.79x and 1.26x do not."""
    ratios = [0.79, 0.8, 1.0, 1.25, 1.26, 0.3, 3.0]
    assert calibration.within_count([math.log(r) for r in ratios]) == 3
    assert calibration.within_count([]) == 0


def test_searching_on_the_within_count_is_round_35s_candidate_and_not_shipped(data):
    """Round 35 of issue 14: the search climbing the number of runs within 0.8-1.25x (``objective="within"``, the
    shipped loss breaking ties) puts 105 within on every run, in sample, against the shipped constants' 100, and 102
    out of sample; but 117 inside by the whole procedure (shipped: 120), so by its plan it is not shipped. On every run
    it moves scale-out to 7e5, large-lab to 1.05 and own-script to 1.05 of tuned (shipped 5e5, 1.0, 1.0). Round 40's
    140 runs: the same constants, 106 within in sample against the shipped 101."""
    by_count = search(data, objective="within")
    assert (by_count.thin_params_per_gpu, by_count.large_lab, by_count.own_script) == (
        7e5,
        1.05,
        1.1,
    )  # r56 (r54: 1.05)
    assert (by_count.base, by_count.typical, by_count.basic, by_count.recipe) == (FIT.base, FIT.typical, 0.3, 1.1)
    assert calibration.within_count([c.log_ratio(by_count) for c in data]) == 126  # round 56 (54: 123; 51: 116)
    assert calibration.within_count([c.log_ratio(FIT) for c in data]) == 120  # round 56 (54: 118; 51: 112)
    assert search(data).thin_params_per_gpu == FIT.thin_params_per_gpu  # the default objective is the shipped loss
    with pytest.raises(ValueError, match="objective must be one of loss, within"):
        search(data, objective="count")


def test_the_search_remembers_each_runs_error_only_by_what_it_reads(data):
    """The search's judge (``calibration._Judge``) remembers each run's log error by the shared constants and its own
    class's multiplier: moving one class's multiplier, or a shared constant, must give what computing every run afresh
    gives, and moving back must give the first score again."""
    weights = calibration.organisation_weights(data)
    judge = calibration._Judge(data, weights, calibration.LOSS_CAP)
    trials = [
        FIT,
        dataclasses.replace(FIT, basic=0.5),
        dataclasses.replace(FIT, basic=0.5, typical=0.6),
        dataclasses.replace(FIT, base=0.4, basic=0.5),
        dataclasses.replace(FIT, moe=0.9),
        FIT,
    ]
    for fit in trials:
        afresh = calibration.score([c.log_ratio(fit) for c in data], weights, calibration.LOSS_CAP)
        assert judge(fit) == (0, afresh)
    assert judge(trials[1]) != judge(FIT)


def test_effective_weights_count_an_organisations_runs_by_their_correlation(data):
    """Round 34 of issue 14's candidate (not in the menu: 100 within, 119 inside by the whole procedure): n runs whose
    errors correlate at rho weigh n / (1 + (n - 1) rho) together; rho 1 is organisation weights, 0 run weights."""
    meta = [c for c in data if c.organisation == "Meta"]
    assert len(meta) == 15  # round 42: XGLM-7.5B added
    assert sum(calibration.effective_weights(meta)) == pytest.approx(15 / 8)
    assert calibration.effective_weights(data, rho=1.0) == pytest.approx(calibration.organisation_weights(data))
    assert calibration.effective_weights(data, rho=0.0) == calibration.run_weights(data)
    assert calibration.ERROR_CORRELATION == 0.5
    assert all(weighting != "effective" for _, weighting in calibration.LOSSES)


def test_the_cross_validation_of_the_ranges_never_lets_an_organisation_see_itself(data):
    """``cross_validated`` on five organisations: making one organisation's runs ten times slower must not move the
    constants or the ranges that predict it (they come from the others and the others' own cross-validation), and
    must move the ranges of the others, which read its out-of-sample residuals."""
    kept = list(dict.fromkeys(c.organisation for c in data))[:5]
    small = [c for c in data if c.organisation in kept]
    slowed = [dataclasses.replace(c, published_gpu_hours=c.published_gpu_hours * 10) if c.organisation == kept[1] else c
              for c in small]  # fmt: skip
    before = calibration.cross_validated(small)
    after = calibration.cross_validated(slowed)
    for b, a in zip(before, after, strict=True):
        if b.case.organisation == kept[1]:
            assert a.fit == b.fit
    others = [(b.fit, a.fit) for b, a in zip(before, after, strict=True) if b.case.organisation != kept[1]]
    assert any(b.bands != a.bands for b, a in others)


def test_the_small_model_term_weighs_on_attention_too_because_the_whole_procedure_does_not_pick_the_dense_only_reading(
    data, held_out
):
    """Round 52 of issue 14's candidate (``Fit.small_model_attention`` off, not shipped): the small-model term charged
    on the dense FLOPs only, since a fused attention kernel pays no per-parameter launches, norms or optimizer steps.
    It was suggested by round 51's JHU rows, whose paper times four models at seven sequence lengths on the same GPUs:
    the shipped model grows a 20M model's time 1.78x from 2K to 8K where the paper's grew 1.12x, and the candidate
    1.27x. Searched and cross-validated the quick way it puts 111 within and 151 inside against the shipped 112 and
    153; the whole procedure 111 and 153 against 112 and 155 (docs/calibration-history.md, round 52): one run fewer
    within, so by the rule it does not ship. Round 55, on round 54's 188 runs, where the quick view below leads: the
    whole procedure puts 118 within and 162 inside at x2.97 (median error 14.6 %) against the shipped 115 and 163 at
    x2.94 (15.5 %); one run fewer inside and a wider range, so by the rule fixed before it was run it does not ship."""
    start = dataclasses.replace(calibration.START, small_model_attention=False)
    candidate = leave_one_organisation_out(data, searcher=lambda d: search(d, start=start))
    tried, shipped = held_out_summary(candidate), held_out_summary(held_out)
    assert (shipped.counts, tried.counts) == (
        (116, 162),
        (118, 162),
    )  # round 56 (54: 115/160, 118/160; 52: 112/153, 111/151)
    # round 54's 188 runs turn the quick view: three more within, as many inside; the rule judges a candidate by the
    # whole procedure, which round 55 ran: 118 within but 162 inside at x2.97 (docs/calibration-history.md)
    assert calibration.best_loss([("shipped", shipped), ("dense only", tried)]) == "dense only"
    assert FIT.small_model_attention
    # round 53: with round 36's causal credit too, fewer within than either, and a median error over the 15 % target
    both = dataclasses.replace(start, causal_credit=True)
    paired = held_out_summary(leave_one_organisation_out(data, searcher=lambda d: search(d, start=both)))
    assert paired.counts == (115, 159) and paired.median_error > 0.15  # round 56 (54: 113, 158; round 53: 111, 152)
    assert calibration.best_loss([("shipped", shipped), ("paired", paired)]) == "shipped"


def test_the_dense_only_reading_charges_the_small_model_term_on_the_dense_share():
    """(1 - s)(1 + o) + s = 1 + o(1 - s): with the switch off, a job whose FLOPs are 40 % attention pays 60 % of the
    overhead; with it on (shipped) all of it; a job with no attention counted is the same either way."""
    a100 = GPUS.resolve("A100")
    off = dataclasses.replace(FIT, small_model_attention=False)
    o = mfu_model.small_model_overhead(a100, 20e6)
    kw = {"active_params": 20e6, "gpus": 2, "gpus_per_node": 2}
    on_f = mfu_model.realized_mfu(a100, attention_share=0.4, **kw).factors["small_model"]
    off_f = mfu_model.realized_mfu(a100, attention_share=0.4, fit=off, **kw).factors["small_model"]
    assert on_f == pytest.approx(1 / (1 + o)) and off_f == pytest.approx(1 / (1 + 0.6 * o))
    bare = mfu_model.realized_mfu(a100, **kw).factors["small_model"]
    assert mfu_model.realized_mfu(a100, fit=off, **kw).factors["small_model"] == bare == pytest.approx(1 / (1 + o))
