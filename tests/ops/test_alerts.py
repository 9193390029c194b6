"""Alert values on crafted histories."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import T0
from warehouse.alerts import check_run
from warehouse.db import open_warehouse
from warehouse.load import RunRecord, load_run, record_failure

DAY = timedelta(days=1)


@pytest.fixture
def con(db_path):
    con = open_warehouse(db_path)
    yield con
    con.close()


def nightly(con, make_record, night, types, *, usd=1.0, provider="aws"):
    at = T0 + night * DAY
    recs = [make_record(t, usd, gpu="L4", gpu_count=1, provider=provider, at=at) for t in types]
    return load_run(con, RunRecord(provider, "live", at, at, prices=recs)).run_id


def kinds(alerts):
    return {a.kind: a for a in alerts}


def test_first_run_raises_nothing(con, make_record):
    assert check_run(con, nightly(con, make_record, 0, ["a", "b"])) == []


def test_large_move_names_the_biggest(con, make_record):
    nightly(con, make_record, 0, ["a"], usd=1.0)
    alerts = kinds(check_run(con, nightly(con, make_record, 1, ["a"], usd=2.5)))
    assert alerts["large_move"].severity == "warning"
    assert "1 price(s) moved" in alerts["large_move"].message and "+150 %" in alerts["large_move"].message


def test_offers_gone_and_new(con, make_record):
    nightly(con, make_record, 0, [f"t{i}" for i in range(10)])
    alerts = kinds(check_run(con, nightly(con, make_record, 1, [f"t{i}" for i in range(2, 10)] + ["new1"])))
    assert "2 price(s) no longer listed" in alerts["offers_gone"].message
    assert alerts["offers_gone"].severity == "info"  # 2 of 10
    assert alerts["offers_new"].message == "aws: 1 new offer(s)"


def test_far_fewer_offers_than_usual(con, make_record):
    for night in range(3):
        nightly(con, make_record, night, [f"t{i}" for i in range(10)])
    alerts = kinds(check_run(con, nightly(con, make_record, 3, ["t1", "t2", "t3"])))
    assert alerts["fewer_offers"].severity == "warning" and "3 offers, far fewer than usual (median 10" in (
        alerts["fewer_offers"].message
    )
    assert alerts["offers_gone"].severity == "warning"


def test_unchanged_sources_carried_forward_are_not_fewer_offers(con, make_record):
    """An AWS night where every region's publication was unchanged parses only the spot feed."""
    for night in range(3):
        nightly(con, make_record, night, [f"t{i}" for i in range(10)])
    at = T0 + 3 * DAY
    spot = [make_record("s1", 0.5, gpu="L4", gpu_count=1, pricing="spot", at=at)]
    region = make_record("t0", 1.0, gpu="L4", gpu_count=1, at=at).region
    run = load_run(con, RunRecord("aws", "live", at, at, prices=spot, carried={(region, "on_demand")}))
    assert "fewer_offers" not in kinds(check_run(con, run.run_id))


def test_a_new_parser_version_that_regroups_offers_is_not_fewer_offers(con, make_record):
    """Vast.ai's parser 2 groups listings without country: fewer, larger groups from the same market."""
    for night in range(3):
        nightly(con, make_record, night, [f"t{i}" for i in range(10)])
    at = T0 + 3 * DAY
    regrouped = [make_record(f"g{i}", 1.0, gpu="L4", gpu_count=1, at=at) for i in range(3)]
    run = load_run(con, RunRecord("aws", "live", at, at, prices=regrouped, parser_version="2"))
    assert "fewer_offers" not in kinds(check_run(con, run.run_id))
    at = T0 + 4 * DAY
    fewer = [make_record("g0", 1.0, gpu="L4", gpu_count=1, at=at)]
    again = load_run(con, RunRecord("aws", "live", at, at, prices=fewer, parser_version="2"))
    assert "1 offers, far fewer than usual (median 3" in kinds(check_run(con, again.run_id))["fewer_offers"].message


def test_failing_three_runs_in_a_row(con, make_record):
    nightly(con, make_record, 0, ["a"])
    ids = [record_failure(con, provider="aws", mode="live", started_at=T0, error=f"HTTP 503 #{i}") for i in range(3)]
    assert check_run(con, ids[1]) == []
    [alert] = check_run(con, ids[2])
    assert alert.kind == "failing" and alert.severity == "error"
    assert alert.message == "aws failed 3 runs in a row: HTTP 503 #2"


def test_replaying_the_same_recording_raises_nothing(con, make_record):
    nightly(con, make_record, 0, ["a", "b"])
    nightly(con, make_record, 1, ["a", "b", "c"])
    assert check_run(con, nightly(con, make_record, 1, ["a", "b", "c"])) == []
