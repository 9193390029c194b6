"""The organisation bootstrap and the small-check draw behind the accuracy intervals (optimizer/resampling.py)."""

from __future__ import annotations

import math

import pytest

from optimizer.resampling import Check, Interval, check_of_runs, organisation_interval, organisation_share


def test_every_run_hitting_leaves_no_doubt() -> None:
    assert organisation_interval(["a", "a", "b", "c"], [True] * 4) == Interval(1.0, 1.0, 1.0)
    assert check_of_runs([f"o{k}" for k in range(12)], [True] * 12) == Check(runs=12, low=12, median=12, high=12)


def test_two_organisations_span_everything_between_their_draws() -> None:
    # a: three hits, b: one miss. Drawing two organisations gives aa (1.0), ab or ba (0.75) or bb (0.0), each of the
    # ends with probability 1/4, so a 95 % interval runs from 0 to 1 while the share as it is stays 3/4.
    interval = organisation_interval(["a", "a", "a", "b"], [True, True, True, False])
    assert interval == Interval(0.75, 0.0, 1.0)


def test_runs_of_one_organisation_are_drawn_together() -> None:
    # The same 200 runs, half hitting: in 40 organisations of five alike runs, or in 200 organisations of one run.
    # Drawing organisations must see the first as 40 draws, not 200, so its interval is about sqrt(5) times wider.
    clustered = organisation_interval([f"o{k // 5}" for k in range(200)], [(k // 5) % 2 == 0 for k in range(200)])
    single = organisation_interval([f"o{k}" for k in range(200)], [k % 2 == 0 for k in range(200)])
    assert clustered.share == single.share == 0.5
    widths = clustered.high - clustered.low, single.high - single.low
    assert widths[0] / widths[1] == pytest.approx(math.sqrt(5), rel=0.2)
    assert single.low == pytest.approx(0.5 - 1.96 * math.sqrt(0.25 / 200), abs=0.015)


def test_a_check_of_twelve_from_half_hitting_organisations() -> None:
    # 24 one-run organisations, 12 hitting: twelve drawn without replacement hit a hypergeometric number of times,
    # median 6, and 90 % of draws between 4 and 8 (P(X <= 3) = P(X >= 9) = 0.0196, P(X <= 4) = 0.110).
    check = check_of_runs([f"o{k}" for k in range(24)], [k % 2 == 0 for k in range(24)])
    assert check == Check(runs=12, low=4, median=6, high=8)


def test_the_same_seed_gives_the_same_figures() -> None:
    organisations = [f"o{k % 7}" for k in range(30)]
    hits = [k % 3 != 0 for k in range(30)]
    assert organisation_interval(organisations, hits) == organisation_interval(organisations, hits)
    assert check_of_runs(organisations, hits, runs=5) == check_of_runs(organisations, hits, runs=5)


def test_impossible_requests_are_refused() -> None:
    with pytest.raises(ValueError, match="needs 12 organisations; there are 3"):
        check_of_runs(["a", "b", "c"], [True, False, True])
    with pytest.raises(ValueError, match="one organisation per run"):
        organisation_interval(["a"], [True, False])
    with pytest.raises(ValueError, match="no runs"):
        organisation_interval([], [])


def test_each_organisation_weighs_one_in_the_team_share() -> None:
    # a: nine runs, all hitting; b, c: one miss each. By run 9 of 11 hit; by team a hits, b and c miss: 1 of 3.
    organisations = ["a"] * 9 + ["b", "c"]
    hits = [True] * 9 + [False, False]
    assert organisation_interval(organisations, hits).share == pytest.approx(9 / 11)
    assert organisation_share(organisations, hits) == pytest.approx(1 / 3)
    assert organisation_share(["a", "a", "b"], [True, False, True]) == pytest.approx((0.5 + 1) / 2)
