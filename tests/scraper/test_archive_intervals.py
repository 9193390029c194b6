"""Snapshots -> intervals: the same semantics as nightly scrapes, glitches dropped, continuation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from scraper.archive.intervals import Carried, IntervalBuilder, build
from scraper.archive.snapshot import Attrs, machine_key

T = datetime(2024, 8, 15, 4, 0, tzinfo=UTC)
H = timedelta(hours=1)
D = timedelta(days=1)
K = machine_key("us-central1", "a3-highgpu-8g", "on_demand")
K2 = machine_key("us-east4", "a3-highgpu-8g", "on_demand")
A = Attrs("H100-SXM", 8, 208, 1872)


def obs(at, commit, **prices):
    keys = {"k": K, "k2": K2}
    data = {keys[name]: usd for name, usd in prices.items()}
    return at, commit, data, dict.fromkeys(data, A)


def spans(intervals):
    return sorted((i.key[1], i.usd, i.valid_from, i.valid_to, i.last_seen, i.commit) for i in intervals)


def test_confirm_change_and_disappear_close_like_a_scrape():
    out = build(
        [obs(T, "c1", k=88.0, k2=90.0), obs(T + D, "c2", k=88.0, k2=90.0), obs(T + 2 * D, "c3", k=80.0)],
        tip=(T + 5 * D, "tip"),
    )
    assert spans(out) == [
        ("us-central1", 80.0, T + 2 * D, T + 5 * D, T + 5 * D, "c3"),  # ends at the archive's tip
        ("us-central1", 88.0, T, T + 2 * D, T + D, "c1"),  # closed when the change was seen
        ("us-east4", 90.0, T, T + 2 * D, T + D, "c1"),  # closed when it was missing
    ]


def test_without_a_tip_the_last_interval_ends_at_its_last_observation():
    out = build([obs(T, "c1", k=88.0), obs(T + D, "c2", k=88.0)])
    assert spans(out) == [("us-central1", 88.0, T, T + D, T + D, "c1")]


def test_two_commits_at_one_instant_leave_no_zero_length_interval():
    out = build([obs(T, "c1", k=50.0), obs(T, "c2", k=88.0), obs(T + D, "c3", k=88.0)])
    assert spans(out) == [("us-central1", 88.0, T, T + D, T + D, "c2")]


def test_a_price_that_flips_for_one_snapshot_and_back_is_a_glitch():
    builder = IntervalBuilder()
    out = []
    for at, commit, prices, attrs in [
        obs(T, "c1", k=1.204),
        obs(T + 3 * H, "c2", k=1.94),
        obs(T + 6 * H, "c3", k=1.204),
        obs(T + D, "c4", k=1.204),
    ]:
        out += builder.observe(at, commit, prices, attrs)
    out += builder.finish()
    assert spans(out) == [("us-central1", 1.204, T, T + D, T + D, "c1")]
    assert builder.glitches == 1


def test_a_small_one_snapshot_move_is_history_not_a_glitch():
    builder = IntervalBuilder()
    out = []
    for item in [obs(T, "c1", k=1.20), obs(T + 3 * H, "c2", k=1.30), obs(T + 6 * H, "c3", k=1.20)]:
        out += builder.observe(*item)
    out += builder.confirm(T + D, "tip")
    out += builder.finish()
    assert [i.usd for i in sorted(out, key=lambda i: i.valid_from)] == [1.20, 1.30, 1.20]
    assert builder.glitches == 0


def test_a_new_price_withdrawn_within_hours_is_dropped():
    # Cyclenerd 6df5fae: a3-megagpu-8g appears at $10.12 (no GPUs) and is gone two hours later
    builder = IntervalBuilder()
    out = []
    for item in [obs(T, "c1"), obs(T + H, "c2", k=10.12), obs(T + 3 * H, "c3"), obs(T + 5 * D, "c4", k=88.25)]:
        out += builder.observe(*item)
    out += builder.confirm(T + 6 * D, "tip")
    out += builder.finish()
    assert spans(out) == [("us-central1", 88.25, T + 5 * D, T + 6 * D, T + 6 * D, "c4")]
    assert builder.glitches == 1


def test_a_weekly_price_that_changes_a_lot_is_kept():
    out = build(
        [obs(T, "c1", k=10.0), obs(T + 7 * D, "c2", k=20.0), obs(T + 14 * D, "c3", k=10.0)], tip=(T + 15 * D, "tip")
    )
    assert [i.usd for i in sorted(out, key=lambda i: i.valid_from)] == [10.0, 20.0, 10.0]


def test_continuing_an_earlier_import_extends_its_open_interval():
    carried = {K: Carried(88.0, T - 10 * D, "old", A, T)}
    builder = IntervalBuilder(carried)
    out = builder.observe(T + D, "c1", {K: 88.0}, {K: A})
    out += builder.observe(T + 2 * D, "c2", {K: 80.0}, {K: A})
    out += builder.confirm(T + 3 * D, "tip")
    out += builder.finish()
    first, second = sorted(out, key=lambda i: i.valid_from)
    assert (first.valid_from, first.valid_to, first.commit, first.continues) == (T - 10 * D, T + 2 * D, "old", True)
    assert (second.valid_from, second.usd, second.continues) == (T + 2 * D, 80.0, False)
