"""End to end through the warehouse: one Spot Advisor bucket definition, and every price's source time and origin."""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from optimizer import inputs
from optimizer.estimate import Job
from optimizer.memory import state_bytes
from optimizer.models import resolve_model
from optimizer.plan import Constraints, build_plan
from optimizer.spot import spot_overhead
from scraper.providers.aws import published_at
from scraper.refresh import refresh
from scraper.replay import Origin, apply_origin, origin_of
from warehouse import spot_buckets
from warehouse.db import open_warehouse
from warehouse.errors import UsageError
from warehouse.gpus import catalog
from warehouse.load import RunRecord, load_run

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
JOB = Job(resolve_model("8B"), 100e9)


@pytest.fixture(scope="module")
def snapshot_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled recordings of AWS and Vast.ai, loaded as the snapshot is."""
    db = tmp_path_factory.mktemp("prov") / "wh.duckdb"
    outcomes = refresh(db, ["aws", "vastai"], replay=FIXTURES, mode="snapshot", keep_raw=False)
    assert [o.status for o in outcomes] == ["ok", "ok"]
    return db


def test_the_open_advisor_bucket_is_stored_and_planned_with_one_definition(snapshot_db):
    """Scraper -> warehouse -> optimizer: p5.48xlarge us-east-1 is in ">20%" (AWS June 2025 data)."""
    con = open_warehouse(snapshot_db, read_only=True)
    try:
        stored = con.execute(
            "SELECT label, interruption_pct_min, interruption_pct_max FROM spot_risk "
            "WHERE region = 'us-east-1' AND instance_type = 'p5.48xlarge'"
        ).fetchone()
        offers = [
            o
            for o in inputs.current_offers(con)
            if (o["region"], o["instance_type"]) == ("us-east-1", "p5.48xlarge")
            and o["pricing"] in ("spot", "on_demand")
        ]
        risk = inputs.spot_risk(con)
    finally:
        con.close()
    top = spot_buckets.AWS_BUCKETS[4]
    assert stored == (top.label, top.pct_min, top.pct_max) == (">20%", 20.0, 100.0)
    plan = build_plan(JOB, offers, catalog(), Constraints(spot=True, max_gpus=8), spot_risk=risk)
    row = plan.options[0]
    lam = -math.log(1 - 0.30) / 730  # read as 30 %/month, not the 60 % midpoint of 20-100 %
    assert spot_buckets.hazard_per_hour(20.0, 100.0) == pytest.approx(lam)
    expected = spot_overhead(hazard=lam, hazard_source="", instances=1, checkpoint_bytes=state_bytes(JOB.model, "full"))
    assert row["spot_overhead"] == pytest.approx(expected.overhead)
    assert row["hazard_source"] == "AWS Spot Advisor >20%/month (read as 30 %: assumption)"


def test_the_readme_states_the_same_buckets():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for b in spot_buckets.AWS_BUCKETS:
        stored = f"{b.pct_min:g}–{b.pct_max:g}"
        row = f"| `{b.label}` | {stored} | {b.planning_pct:g} % |"
        assert row in readme, row


def test_prices_carry_their_source_time_and_origin(snapshot_db):
    con = open_warehouse(snapshot_db, read_only=True)
    try:
        rows = con.execute(
            """SELECT provider, pricing, source_basis, min(source_time), max(source_time), any_value(data_origin)
               FROM current_prices GROUP BY ALL ORDER BY ALL"""
        ).fetchall()
        runs = dict(con.execute("SELECT provider, data_origin FROM scrape_runs WHERE status = 'ok'").fetchall())
    finally:
        con.close()
    by = {(p, k): (basis, lo, hi, origin) for p, k, basis, lo, hi, origin in rows}
    jan21 = datetime(2026, 1, 21, tzinfo=UTC)
    # AWS's offer files say 2026-11-19 22:15 (the recording's stamp); the manifest declares the figures' vintage
    assert by[("aws", "on_demand")] == ("declared", jan21, jan21, "derived")
    assert by[("aws", "spot")] == ("declared", jan21, jan21, "derived")
    nov16 = datetime(2025, 11, 16, 6, 47, 3, tzinfo=UTC)
    assert by[("vastai", "on_demand")] == ("declared", nov16, nov16, "generated")
    assert runs == {"aws": "derived", "vastai": "generated"}


def test_aws_offer_file_publication_time():
    url = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/20261119221500/us-east-1/index.csv"
    assert published_at(url) == datetime(2026, 11, 19, 22, 15, tzinfo=UTC)
    assert (
        published_at("https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/region_index.json")
        is None
    )


def test_manifest_origin_is_declared_or_recorded(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "replay.json").write_text(json.dumps({"provider": "x", "recorded_at": "2026-11-20T03:00:00Z"}))
    assert origin_of(plain) == Origin("recorded", None)
    assert origin_of(FIXTURES / "vastai") == Origin("generated", datetime(2025, 11, 16, 6, 47, 3, tzinfo=UTC))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "replay.json").write_text(json.dumps({"recorded_at": "2026-11-20T03:00:00Z", "origin": "guessed"}))
    with pytest.raises(UsageError, match="origin 'guessed' is not one of recorded, derived, generated"):
        origin_of(bad)


def test_apply_origin_keeps_an_older_source_time(make_record):
    old = datetime(2025, 1, 1, tzinfo=UTC)
    as_of = datetime(2026, 1, 21, tzinfo=UTC)
    kept = make_record().__class__(**{**_fields(make_record()), "source_time": old, "source_basis": "published"})
    newer = make_record(usd=10.0, instance_type="p4d.24xlarge")
    out = apply_origin([kept, newer], Origin("derived", as_of))
    assert (out[0].source_time, out[0].source_basis) == (old, "published")
    assert (out[1].source_time, out[1].source_basis) == (as_of, "declared")
    assert apply_origin([newer], Origin("recorded", None)) == [newer]


def _fields(record) -> dict:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


def test_a_confirmed_price_takes_the_sources_newer_time(db_path, make_record):
    """An unchanged price re-read from a newer publication keeps its interval and moves its source time."""
    first_time = datetime(2026, 11, 1, tzinfo=UTC)
    second_time = datetime(2026, 11, 8, tzinfo=UTC)
    con = open_warehouse(db_path)
    try:
        for when, published in ((first_time, datetime(2026, 10, 30, tzinfo=UTC)), (second_time, second_time)):
            record = make_record(at=when)
            record = record.__class__(**{**_fields(record), "source_time": published, "source_basis": "published"})
            load_run(con, RunRecord(provider="aws", mode="live", started_at=when, observed_at=when, prices=[record]))
        rows = con.execute("SELECT valid_from, source_time, source_basis FROM prices").fetchall()
    finally:
        con.close()
    assert rows == [(first_time, second_time, "published")]


def test_pricing_age_counts_from_the_source_time_in_the_plan_json(snapshot_db):
    con = open_warehouse(snapshot_db, read_only=True)
    try:
        offers = [o for o in inputs.current_offers(con) if o["provider"] == "aws" and o["pricing"] == "on_demand"]
    finally:
        con.close()
    assert offers and all(o["source_time"].startswith("2026-01-21") for o in offers)
    assert all(o["source_age_hours"] > o["age_hours"] for o in offers)  # older by source than by observation
    assert all(re.match(r"\d{4}-\d\d-\d\d", o["observed_at"]) for o in offers)


def test_a_reparse_keeps_the_recordings_origin(tmp_path):
    from scraper.reparse import reparse

    db = tmp_path / "wh.duckdb"
    refresh(db, ["vastai"], replay=FIXTURES)  # raw payloads kept
    [outcome] = reparse(db, ["vastai"])
    assert outcome.status in ("ok", "skipped"), outcome.error
    con = open_warehouse(db, read_only=True)
    try:
        runs = con.execute("SELECT mode, data_origin, figures_as_of FROM scrape_runs ORDER BY run_id").fetchall()
        bases = {r[0] for r in con.execute("SELECT DISTINCT source_basis FROM current_prices").fetchall()}
    finally:
        con.close()
    nov16 = datetime(2025, 11, 16, 6, 47, 3, tzinfo=UTC)
    assert runs[0] == ("replay", "generated", nov16)
    assert runs[-1][1:] == ("generated", nov16) and bases == {"declared"}
