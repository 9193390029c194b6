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


def test_a_confirmed_price_names_one_run_its_source_time_basis_and_origin(con, make_record):
    """A replay of derived figures, then a live run that reads the same price from another URL: the price is the
    live run's read, all four fields of it. The URL stayed the replay's while the time, basis and origin moved on
    (audit N5: `https://lambda.ai/pricing` from the replay labelled `live`, observed by the mirror)."""
    from dataclasses import replace

    vintage = T0 - 200 * DAY
    replayed = replace(
        make_record(provider="lambda", region="all", instance_type="gpu_1x_h100_sxm", gpu_count=1, usd=3.29),
        source="https://lambda.ai/pricing",
        source_time=vintage,
        source_basis="declared",
    )
    load_run(con, RunRecord("lambda", "replay", T0, T0, prices=[replayed], data_origin="derived"))
    live = replace(replayed, source="http://127.0.0.1:8080/lambda/pricing", source_time=None, source_basis="observed",
                   observed_at=T0 + DAY)  # fmt: skip
    load_run(con, RunRecord("lambda", "live", T0 + DAY, T0 + DAY, prices=[live]))
    provenance = "SELECT source, source_time, source_basis, data_origin, observed_at, price_since FROM current_prices"
    row = con.execute(provenance).fetchall()
    assert row == [("http://127.0.0.1:8080/lambda/pricing", T0 + DAY, "observed", "live", T0 + DAY, T0)]
    # a 304 (the page unchanged, not read again) keeps the four of one run too: the confirming run's
    load_run(con, RunRecord("lambda", "live", T0 + 2 * DAY, T0 + 2 * DAY, carried={("all", "on_demand")}))
    row = con.execute(provenance).fetchall()
    assert row == [("http://127.0.0.1:8080/lambda/pricing", T0 + 2 * DAY, "observed", "live", T0 + 2 * DAY, T0)]


def test_a_held_offer_is_neither_closed_nor_confirmed_even_in_a_carried_source(con, make_record):
    """``held`` (a row refused as invalid) keeps the open price exactly as it was; only the key matters,
    so the other offer of the same source is still closed, and a carried source does not confirm it."""
    run(
        con, [make_record(), make_record("p4d.24xlarge", 21.96, gpu="A100-40GB"), make_record("g5", 1.0, gpu="A10")], T0
    )
    held = {("us-east-1", "p4d.24xlarge", "on_demand")}
    summary = load_run(con, RunRecord("aws", "live", T0 + DAY, T0 + DAY, prices=[make_record(at=T0 + DAY)], held=held))
    assert summary.prices_closed == 1  # g5, missing; p4d held
    assert intervals(con, "p4d.24xlarge") == [(21.96, T0, None)] and intervals(con, "g5") == [(1.0, T0, T0 + DAY)]
    carried = {("us-east-1", "on_demand")}
    load_run(con, RunRecord("aws", "live", T0 + 2 * DAY, T0 + 2 * DAY, carried=carried, held=held))
    last_seen = dict(con.execute("SELECT instance_type, observed_at FROM current_prices").fetchall())
    assert last_seen == {"p5.48xlarge": T0 + 2 * DAY, "p4d.24xlarge": T0}


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


def zero_length(con):
    return con.execute("SELECT count(*) FROM prices WHERE valid_to IS NOT NULL AND valid_to <= valid_from").fetchone()


def test_a_same_time_reload_replaces_the_open_interval_in_place(con, make_record):
    run(con, [make_record(usd=98.32)], T0)
    run(con, [make_record(usd=55.04)], T0)  # a corrected parse of the same observation
    assert intervals(con, "p5.48xlarge") == [(55.04, T0, None)]
    assert zero_length(con) == (0,)


def test_a_same_time_correction_reopens_the_interval_a_wrong_parse_closed(con, make_record):
    run(con, [make_record(usd=55.04)], T0)
    wrong = run(con, [make_record(usd=550.4, at=T0 + DAY)], T0 + DAY)  # a parser bug: ten times the price
    assert wrong.flags == 1
    fixed = run(con, [make_record(usd=55.04, at=T0 + DAY)], T0 + DAY)
    assert fixed.flags == 0  # a correction is not a market move
    assert intervals(con, "p5.48xlarge") == [(55.04, T0, None)]
    assert con.execute("SELECT last_seen, last_run FROM prices").fetchall() == [(T0 + DAY, fixed.run_id)]
    assert zero_length(con) == (0,)


def test_a_same_time_reload_without_an_offer_removes_what_began_then(con, make_record):
    run(con, [make_record()], T0)
    run(con, [make_record(at=T0 + DAY), make_record("bogus.48xlarge", 1.0, at=T0 + DAY)], T0 + DAY)
    run(con, [make_record(at=T0 + DAY)], T0 + DAY)
    assert con.execute("SELECT instance_type FROM offers").fetchall() == [("p5.48xlarge",)]
    assert con.execute("SELECT count(*) FROM prices").fetchone() == (1,)
    assert zero_length(con) == (0,)


def test_a_same_time_reload_brings_back_an_offer_a_wrong_parse_dropped(con, make_record):
    run(con, [make_record(), make_record("p4d.24xlarge", 21.96, gpu="A100-40GB")], T0)
    run(con, [make_record(at=T0 + DAY)], T0 + DAY)  # the parse lost p4d
    run(con, [make_record(at=T0 + DAY), make_record("p4d.24xlarge", 21.96, gpu="A100-40GB")], T0 + DAY)
    assert intervals(con, "p4d.24xlarge") == [(21.96, T0, None)]


def test_offer_attributes_follow_the_newest_parse(con, make_record):
    run(con, [make_record("p5.4xlarge", 6.88, gpu_count=8)], T0)  # a table bug: p5.4xlarge has one H100
    fixed = PriceRecord("aws", "us-east-1", "p5.4xlarge", "H100-SXM", 1, "on_demand", 6.88, "u", T0, 16, 256.0)
    run(con, [fixed], T0)
    assert con.execute("SELECT gpu, gpu_count, vcpus, memory_gib FROM offers").fetchall() == [
        ("H100-SXM", 1.0, 16, 256.0)
    ]
    assert con.execute("SELECT usd_per_gpu_hour FROM price_history").fetchall() == [(6.88,)]


def test_spot_risk_and_carried_scopes_load_in_bulk(con, make_record):
    from warehouse.records import SpotRisk

    risk = [SpotRisk("aws", f"r{i % 4}", f"t{i}", 60.0 + i % 7, i % 5, "<5%", 0.0, 5.0, "u", T0) for i in range(82)]
    carried = {(f"c{i}", "on_demand") for i in range(40)}
    load_run(con, RunRecord("aws", "live", T0, T0, prices=[make_record()], spot_risk=risk, carried=carried))
    assert con.execute(
        "SELECT count(*), sum(bucket), min(savings_pct), max(savings_pct) FROM spot_risk"
    ).fetchone() == (
        82,
        sum(i % 5 for i in range(82)),
        60.0,
        66.0,
    )
    load_run(con, RunRecord("aws", "live", T0 + DAY, T0 + DAY, spot_risk=risk[:3]))  # replaced, not duplicated
    assert con.execute("SELECT count(*), max(observed_at) FROM spot_risk").fetchone() == (82, T0)


def test_migration_3_removes_zero_length_intervals(db_path, monkeypatch, make_record):
    from warehouse import migrations

    with monkeypatch.context() as version_2:
        version_2.setattr("warehouse.db.MIGRATIONS", migrations.MIGRATIONS[:2])
        version_2.setattr("warehouse.db.LATEST", 2)
        old = open_warehouse(db_path)
        old.execute("INSERT INTO offers VALUES (1, 'aws', 'r', 't', 'L4', 1, NULL, NULL, ?)", [T0])
        old.execute("INSERT INTO prices VALUES (1, 'on_demand', 9.0, ?, ?, ?, 1, 1, 'u')", [T0, T0, T0])
        old.execute("INSERT INTO prices VALUES (1, 'on_demand', 1.0, ?, NULL, ?, 1, 2, 'u')", [T0, T0])
        old.close()
    new = open_warehouse(db_path)
    assert new.execute("SELECT usd_per_hour, valid_to FROM prices").fetchall() == [(1.0, None)]
    assert new.execute("SELECT name FROM schema_migrations WHERE version = 3").fetchall() == [
        ("source counts per run; no zero-length intervals",)
    ]
    new.close()


def test_a_reparse_replaces_the_market_distributions_of_its_moment(db_path):
    """A reparse at the time of an earlier load kept that load's listings beside the corrected ones: an analyst saw
    two distributions for one instant, and breakeven's rent median pooled the wrong parse's listings."""
    from datetime import UTC, datetime

    from warehouse.db import open_warehouse
    from warehouse.load import RunRecord, load_run
    from warehouse.records import Listing, MarketStats, PriceRecord

    at = datetime(2026, 11, 20, 3, tzinfo=UTC)

    def group(usd: float) -> PriceRecord:
        listing = Listing(usd_per_hour=usd, country="US", reliability=0.99)
        stats = MarketStats(offer_count=1, min=usd, p10=usd, median=usd, max=usd, listings=(listing,))
        return PriceRecord("vastai", "all", "RTX-4090x1.verified.datacenter", "RTX-4090", 1, "on_demand", usd,
                           "https://console.vast.ai/api/v0/bundles/", at, stats=stats)  # fmt: skip

    con = open_warehouse(db_path)
    load_run(con, RunRecord("vastai", "live", at, at, prices=[group(1.20)]))  # a parser that tripled the price
    load_run(con, RunRecord("vastai", "reparse", at, at, prices=[group(0.40)]))  # the corrected parse
    rows = con.execute("SELECT observed_at, median_usd FROM market_stats").fetchall()
    con.close()
    assert rows == [(at, 0.40)]


def test_a_warehouse_of_imported_history_alone_has_prices(db_path):
    """sql, history and export refused a warehouse built with `costopt import` alone: 'holds no prices yet'."""
    from datetime import UTC, datetime

    from warehouse.db import has_prices, open_warehouse

    con = open_warehouse(db_path)
    assert not has_prices(con)
    at = datetime(2024, 5, 1, tzinfo=UTC)
    con.execute(
        "INSERT INTO scrape_runs (run_id, provider, mode, started_at, finished_at, observed_at, status) "
        "VALUES (1, 'gcp', 'import', ?, ?, ?, 'imported')",
        [at, at, at],
    )
    assert has_prices(con)
    con.close()


def test_breakeven_rent_ignores_a_marketplace_group_no_longer_listed(db_path):
    """market_current keeps a vanished group's last distribution: breakeven quoted a rent from 52 listings of a GPU
    no longer on the market."""
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta

    from optimizer.inputs import rent_observed
    from warehouse.db import open_warehouse
    from warehouse.load import RunRecord, load_run
    from warehouse.records import Listing, MarketStats, PriceRecord

    at = datetime(2026, 11, 20, 3, tzinfo=UTC)

    def group(gpu: str, usd: float) -> PriceRecord:
        listings = tuple(Listing(usd_per_hour=usd, country="US", reliability=0.99) for _ in range(3))
        stats = MarketStats(offer_count=3, min=usd, p10=usd, median=usd, max=usd, listings=listings)
        return PriceRecord("vastai", "all", f"{gpu}x1.verified.datacenter", gpu, 1, "on_demand", usd,
                           "https://console.vast.ai/api/v0/bundles/", at, stats=stats)  # fmt: skip

    con = open_warehouse(db_path)
    load_run(con, RunRecord("vastai", "live", at, at, prices=[group("RTX-4090", 0.4), group("H100-SXM", 2.0)]))
    assert rent_observed(con, "RTX-4090")["market"]["usd_per_gpu_hour"] == 0.4
    later = at + timedelta(days=1)
    h100 = replace(group("H100-SXM", 2.0), observed_at=later)
    load_run(con, RunRecord("vastai", "live", later, later, prices=[h100]))  # every RTX 4090 listing gone
    assert rent_observed(con, "RTX-4090")["market"] is None
    assert rent_observed(con, "H100-SXM")["market"]["usd_per_gpu_hour"] == 2.0
    con.close()


def test_gpu_hourly_counts_offers_and_sees_a_price_observed_at_midnight(db_path, make_record):
    """gpu_hourly counted price intervals as offers (an offer repriced that day counted twice, both prices in the
    median), and a price observed only at 00:00 UTC covered no time and was missing; history too."""
    from datetime import UTC, datetime, timedelta

    from warehouse.db import open_warehouse
    from warehouse.history import daily_cheapest
    from warehouse.load import RunRecord, load_run

    con = open_warehouse(db_path)
    noon = datetime(2026, 11, 20, 12, tzinfo=UTC)
    for at, p5 in ((noon, 98.32), (noon + timedelta(hours=6), 55.04)):  # repriced the same day
        load_run(con, RunRecord("aws", "live", at, at, prices=[make_record("p5.48xlarge", p5, at=at)]))
    midnight = datetime(2026, 11, 22, tzinfo=UTC)
    lambda_ = make_record("gpu_8x_h100_sxm5", 23.92, provider="lambda", region="us", at=midnight)
    load_run(con, RunRecord("lambda", "live", midnight, midnight, prices=[lambda_]))
    rows = con.execute(
        "SELECT provider, day::VARCHAR, offers, round(median_usd_per_gpu_hour, 2) FROM gpu_hourly "
        "WHERE gpu = 'H100-SXM' ORDER BY provider, day"
    ).fetchall()
    daily = daily_cheapest(con, "H100-SXM", datetime(2026, 11, 1, tzinfo=UTC))
    con.close()
    assert ("aws", "2026-11-20", 1, 6.88) in rows  # one offer; its cheapest price of the day
    assert ("lambda", "2026-11-22", 1, 2.99) in rows
    assert {(r["provider"], str(r["day"]), r["offers"]) for r in daily} >= {("aws", "2026-11-20", 1),
                                                                          ("lambda", "2026-11-22", 1)}  # fmt: skip
