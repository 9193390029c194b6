"""costopt reparse: a parser fix corrects history at the original observation time, leaving no trace of the bug."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pytest

from optimizer.inputs import rent_observed
from scraper import providers as registry
from scraper.base import ParseResult, RawPayload
from scraper.refresh import refresh
from scraper.reparse import reparse
from tests.scraper.test_refresh import FakeProvider, record_dir
from warehouse.db import open_warehouse
from warehouse.export import export_parquet
from warehouse.history import daily_cheapest
from warehouse.records import PriceRecord

DAY = timedelta(days=1)
BIG = [{"type": "big", "gpu": "H100-SXM", "count": 8, "usd": 40.0}]


class BuggyProvider(FakeProvider):
    """The fake provider with a parser bug that can be fixed: three times the price and half the GPUs."""

    bug = False

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = super().parse(payloads)
        if type(self).bug:
            result.prices = [self._wrong(r) for r in result.prices]
        return result

    @staticmethod
    def _wrong(r: PriceRecord) -> PriceRecord:
        wrong_count, wrong_price = r.gpu_count / 2, r.usd_per_hour * 3
        return PriceRecord(
            r.provider, r.region, r.instance_type, r.gpu, wrong_count, r.pricing, wrong_price, r.source, r.observed_at
        )


@pytest.fixture(autouse=True)
def buggy_registry(monkeypatch):
    monkeypatch.setattr(registry, "REGISTRY", {"fake": "tests.scraper.test_reparse:BuggyProvider"})
    monkeypatch.setattr("scraper.refresh.NAMES", ("fake",))
    monkeypatch.setattr("scraper.reparse.NAMES", ("fake",))
    BuggyProvider.bug = False
    yield
    BuggyProvider.bug = False


def test_a_corrected_reparse_leaves_no_trace_of_the_buggy_price(tmp_path, db_path):
    today = datetime.now(UTC).replace(hour=3, minute=0, second=0, microsecond=0)
    day1, day2 = today - 2 * DAY, today - DAY  # recent: the rent median looks back 90 days from today
    refresh(db_path, ["fake"], replay=record_dir(tmp_path / "1", BIG, recorded_at=day1.isoformat()))
    BuggyProvider.bug = True
    [buggy] = refresh(
        db_path, ["fake"], replay=record_dir(tmp_path / "2", BIG, etag='"v2"', recorded_at=day2.isoformat())
    )
    con = open_warehouse(db_path, read_only=True)
    assert con.execute("SELECT max(max_usd_per_gpu_hour) FROM gpu_hourly").fetchone() == (30.0,)  # the bug shows
    con.close()

    BuggyProvider.bug = False  # the parser fix
    [fixed] = reparse(db_path, ["fake"])
    assert (fixed.status, fixed.prices_changed, fixed.error) == ("ok", 1, None)

    con = open_warehouse(db_path, read_only=True)
    try:
        history = daily_cheapest(con, "H100-SXM", day1 - DAY)
        assert [(r["day"], r["min_usd_per_gpu_hour"]) for r in history] == [(day1.date(), 5.0), (day2.date(), 5.0)]
        hourly = con.execute(
            "SELECT day, min_usd_per_gpu_hour, max_usd_per_gpu_hour, offers FROM gpu_hourly ORDER BY day"
        ).fetchall()
        assert hourly == [(day1.date(), 5.0, 5.0, 1), (day2.date(), 5.0, 5.0, 1)]
        rent = rent_observed(con, "H100-SXM")
        assert (rent["current"], rent["median"], rent["median_days"]) == (5.0, 5.0, 2)
        assert con.execute("SELECT usd_per_hour, valid_from, valid_to, last_run FROM prices").fetchall() == [
            (40.0, day1, None, fixed.run_id)
        ]
        assert con.execute("SELECT gpu_count FROM offers").fetchall() == [(8.0,)]  # the count followed the fix
        assert con.execute("SELECT count(*) FROM price_flags WHERE run_id = ?", [fixed.run_id]).fetchone() == (0,)
        target = tmp_path / "export"
        export_parquet(con, target)
    finally:
        con.close()
    parquet = f"{target}/price_history/**/*.parquet"
    query = f"SELECT DISTINCT usd_per_hour, gpu_count, usd_per_gpu_hour FROM read_parquet('{parquet}')"
    exported = duckdb.connect().execute(query).fetchall()
    assert exported == [(40.0, 8.0, 5.0)]
    assert buggy.run_id < fixed.run_id


def test_reparse_reads_the_same_configuration_as_refresh(tmp_path, db_path, monkeypatch):
    monkeypatch.setattr(registry, "REGISTRY", {"aws": "scraper.providers.aws:AwsProvider"})
    from tests.scraper.support import FIXTURES

    two = {"COSTOPT_AWS_REGIONS": "us-east-1,us-west-2"}
    [loaded] = refresh(db_path, ["aws"], replay=FIXTURES, env=two)
    assert loaded.status == "ok"

    def regions():
        con = open_warehouse(db_path, read_only=True)
        try:
            return con.execute("SELECT DISTINCT region FROM current_prices ORDER BY 1").fetchall()
        finally:
            con.close()

    assert regions() == [("us-east-1",), ("us-west-2",)]
    [again] = reparse(db_path, ["aws"], env=two)
    assert (again.status, again.prices_changed, again.prices_closed) == ("ok", 0, 0)
    assert regions() == [("us-east-1",), ("us-west-2",)]  # not the eight default regions of an empty environment
