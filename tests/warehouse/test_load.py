"""Interval logic, idempotent replay and atomicity of the one load API."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import T0
from warehouse import load as load_module
from warehouse.db import open_warehouse
from warehouse.errors import WarehouseError
from warehouse.load import RunRecord, load_run
from warehouse.records import MarketStats, PriceRecord

DAY = timedelta(days=1)


@pytest.fixture
def con(db_path):
    con = open_warehouse(db_path)
    yield con
    con.close()


def run(con, records, at, *, provider="aws", carried=frozenset()):
    return load_run(con, RunRecord(provider, "live", at, at, prices=list(records), carried=set(carried)))


def intervals(con, instance_type):
    return con.execute(
        "SELECT usd_per_hour, valid_from, valid_to FROM price_history WHERE instance_type = ? ORDER BY valid_from",
        [instance_type],
    ).fetchall()


def test_unchanged_price_extends_the_open_interval(con, make_record):
    run(con, [make_record(usd=55.04)], T0)
    summary = run(con, [make_record(usd=55.04, at=T0 + DAY)], T0 + DAY)
    assert summary.prices_changed == 0
    rows = con.execute("SELECT valid_from, valid_to, last_seen, first_run, last_run FROM prices").fetchall()
    assert len(rows) == 1
    valid_from, valid_to, last_seen, first_run, last_run = rows[0]
    assert (valid_from, valid_to, last_seen) == (T0, None, T0 + DAY)
    assert first_run < last_run


def test_changed_price_closes_and_opens(con, make_record):
    run(con, [make_record(usd=98.32)], T0)
    summary = run(con, [make_record(usd=55.04, at=T0 + DAY)], T0 + DAY)
    assert summary.prices_changed == 1
    assert intervals(con, "p5.48xlarge") == [(98.32, T0, T0 + DAY), (55.04, T0 + DAY, None)]


def test_disappeared_offer_is_closed_and_reappears_as_new_interval(con, make_record):
    run(con, [make_record(), make_record("p4d.24xlarge", 21.96, gpu="A100-40GB")], T0)
    summary = run(con, [make_record(at=T0 + DAY)], T0 + DAY)
    assert summary.prices_closed == 1
    assert intervals(con, "p4d.24xlarge") == [(21.96, T0, T0 + DAY)]
    assert con.execute("SELECT count(*) FROM current_prices").fetchone()[0] == 1
    run(con, [make_record(at=T0 + 2 * DAY), make_record("p4d.24xlarge", 21.96, gpu="A100-40GB")], T0 + 2 * DAY)
    assert intervals(con, "p4d.24xlarge") == [(21.96, T0, T0 + DAY), (21.96, T0 + 2 * DAY, None)]


def test_carried_scope_is_not_closed(con, make_record):
    run(con, [make_record(), make_record(region="us-west-2")], T0)
    summary = run(con, [make_record(at=T0 + DAY)], T0 + DAY, carried={("us-west-2", "on_demand")})
    assert summary.prices_closed == 0
    last_seen = con.execute("SELECT last_seen FROM price_history WHERE region = 'us-west-2'").fetchone()[0]
    assert last_seen == T0 + DAY


def test_other_providers_are_untouched(con, make_record):
    run(con, [make_record()], T0)
    run(con, [make_record("gpu_8x_h100_sxm5", 23.92, provider="lambda", region="us")], T0, provider="lambda")
    run(con, [], T0 + DAY, provider="lambda")  # lambda lost everything; aws keeps its price
    assert con.execute("SELECT provider FROM current_prices").fetchall() == [("aws",)]


def test_replaying_the_same_records_changes_nothing(con, make_record):
    records = [make_record(), make_record("p4d.24xlarge", 21.96, gpu="A100-40GB", pricing="spot")]
    run(con, records, T0)
    before = con.execute("SELECT * FROM prices ORDER BY offer_id, pricing").fetchall()
    summary = run(con, records, T0)
    after = con.execute("SELECT offer_id, pricing, usd_per_hour, valid_from, valid_to FROM prices").fetchall()
    assert summary.prices_changed == summary.prices_closed == 0
    assert [r[:5] for r in before] == sorted(after)


def test_older_recording_is_not_loaded_over_newer_prices(con, make_record):
    run(con, [make_record(usd=55.04, at=T0 + DAY)], T0 + DAY)
    summary = run(con, [make_record(usd=98.32)], T0)
    assert summary.status == "skipped"
    assert intervals(con, "p5.48xlarge") == [(55.04, T0 + DAY, None)]


def test_large_move_is_loaded_and_flagged(con, make_record):
    run(con, [make_record(usd=10.0)], T0)
    summary = run(con, [make_record(usd=20.0, at=T0 + DAY)], T0 + DAY)
    assert summary.flags == 1
    old, new, change = con.execute("SELECT old_usd, new_usd, change_pct FROM price_flags").fetchone()
    assert (old, new, change) == (10.0, 20.0, 1.0)


def test_market_stats_are_kept_per_run(con):
    record = PriceRecord(
        "vastai", "US", "RTX-4090x1.verified.datacenter", "RTX-4090", 1, "on_demand", 0.40, "u", T0,
        stats=MarketStats(offer_count=12, min=0.30, p10=0.32, median=0.40, max=0.90),
    )  # fmt: skip
    run(con, [record], T0, provider="vastai")
    assert con.execute("SELECT offer_count, p10_usd, median_usd FROM market_current").fetchone() == (12, 0.32, 0.40)


def test_failure_mid_load_leaves_nothing(con, make_record, monkeypatch):
    run(con, [make_record(usd=98.32)], T0)
    before = con.execute("SELECT * FROM prices").fetchall()
    runs_before = con.execute("SELECT count(*) FROM scrape_runs").fetchone()

    def explode(*args, **kwargs):
        raise RuntimeError("disk full")

    original = con.execute

    class Boom:
        """Let the load run until it inserts the new interval, then fail."""

        def __getattr__(self, name):
            return getattr(con, name)

        def execute(self, sql, *args):
            if sql.lstrip().startswith("INSERT INTO market_stats"):
                explode()
            return original(sql, *args)

    with pytest.raises(RuntimeError, match="disk full"):
        load_module.load_run(Boom(), RunRecord("aws", "live", T0 + DAY, T0 + DAY, prices=[make_record(usd=55.04)]))
    assert con.execute("SELECT * FROM prices").fetchall() == before
    assert con.execute("SELECT count(*) FROM scrape_runs").fetchone() == runs_before


def test_duplicate_keys_are_refused(con, make_record):
    with pytest.raises(WarehouseError, match="duplicate"):
        run(con, [make_record(), make_record(usd=1.0)], T0)
    assert con.execute("SELECT count(*) FROM prices").fetchone()[0] == 0
