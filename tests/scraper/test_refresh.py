"""Refresh orchestration with a stand-in provider: failures isolate, loads are atomic, replay works."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from scraper import providers as registry
from scraper.base import ParseResult, Provider, RawPayload
from scraper.http import Fetcher, RetryPolicy
from scraper.refresh import refresh
from warehouse.db import open_warehouse
from warehouse.errors import MissingCredentials, ParseError, UsageError
from warehouse.records import PriceRecord

HOST = "https://fake.example.test"


class FakeProvider(Provider):
    """Reads {"items": [{"type", "gpu", "count", "usd"}]} from one URL."""

    name = "fake"
    base_urls: ClassVar[dict[str, str]] = {"COSTOPT_FAKE_URL": HOST}

    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        return [
            await http.get(
                f"{self.base_url('COSTOPT_FAKE_URL')}/prices.json", conditional=True, scope=("r1", "on_demand")
            )
        ]

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = ParseResult()
        for payload in payloads:
            if payload.not_modified:
                result.carried.add(("r1", "on_demand"))
                continue
            try:
                items = json.loads(payload.body)["items"]
            except (ValueError, KeyError) as exc:
                raise ParseError(f"fake: malformed body: {exc}") from None
            for item in items:
                if item["gpu"] == "??":
                    result.skip("unknown GPU", item["type"])
                    continue
                result.prices.append(
                    PriceRecord(
                        "fake",
                        "r1",
                        item["type"],
                        item["gpu"],
                        item["count"],
                        "on_demand",
                        item["usd"],
                        payload.url,
                        payload.fetched_at,
                    )
                )
        return result


class KeyedProvider(FakeProvider):
    name = "keyed"

    @classmethod
    def from_env(cls, env=None, *, replay=False):
        raise MissingCredentials("keyed: set COSTOPT_KEYED_KEY to enable it")


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch):
    table = {"fake": "tests.scraper.test_refresh:FakeProvider", "keyed": "tests.scraper.test_refresh:KeyedProvider"}
    monkeypatch.setattr(registry, "REGISTRY", table)
    monkeypatch.setattr("scraper.refresh.NAMES", tuple(table))


def record_dir(tmp_path, items, *, etag='"v1"', recorded_at="2026-11-20T03:00:00Z", body=None):
    directory = tmp_path / "rec" / "fake"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "prices.json").write_text(body if body is not None else json.dumps({"items": items}))
    manifest = {
        "provider": "fake",
        "recorded_at": recorded_at,
        "responses": [
            {
                "method": "GET",
                "url": f"{HOST}/prices.json",
                "file": "prices.json",
                "status": 200,
                "headers": {"content-type": "application/json", "etag": etag},
            }
        ],
    }
    (directory / "replay.json").write_text(json.dumps(manifest))
    return tmp_path / "rec"


ITEMS = [
    {"type": "big", "gpu": "H100-SXM", "count": 8, "usd": 40.0},
    {"type": "small", "gpu": "L4", "count": 1, "usd": 0.7},
    {"type": "odd", "gpu": "??", "count": 1, "usd": 1.0},
    {"type": "absurd", "gpu": "T4", "count": 1, "usd": 900.0},
]


def current(db_path):
    con = open_warehouse(db_path, read_only=True)
    try:
        return dict(con.execute("SELECT instance_type, usd_per_hour FROM current_prices").fetchall())
    finally:
        con.close()


def test_replay_loads_valid_records_and_counts_the_rest(tmp_path, db_path):
    root = record_dir(tmp_path, ITEMS)
    [outcome] = refresh(db_path, ["fake"], replay=root)
    assert (outcome.status, outcome.offers, outcome.unknown) == ("ok", 2, 2)
    assert current(db_path) == {"big": 40.0, "small": 0.7}
    con = open_warehouse(db_path, read_only=True)
    observed, mode, notes = con.execute("SELECT observed_at, mode, notes FROM scrape_runs").fetchone()
    raw = con.execute("SELECT url, sha256, bytes FROM raw_payloads").fetchall()
    con.close()
    assert observed == datetime(2026, 11, 20, 3, tzinfo=UTC) and mode == "replay"
    assert "unknown GPU" in notes and "above ceiling" in notes
    assert raw[0][0] == f"{HOST}/prices.json" and len(raw[0][1]) == 64 and raw[0][2] > 0


def test_second_refresh_of_unchanged_source_downloads_nothing(tmp_path, db_path):
    root = record_dir(tmp_path, ITEMS)
    refresh(db_path, ["fake"], replay=root)
    [again] = refresh(db_path, ["fake"], replay=root)
    assert again.status == "ok" and again.bytes_downloaded == 0 and again.prices_changed == 0
    assert current(db_path) == {"big": 40.0, "small": 0.7}  # carried, not closed


def test_malformed_body_fails_the_provider_and_keeps_yesterday(tmp_path, db_path):
    refresh(db_path, ["fake"], replay=record_dir(tmp_path, ITEMS))
    broken = record_dir(tmp_path, [], etag='"v2"', recorded_at="2026-11-21T03:00:00Z", body="{not json")
    [outcome] = refresh(db_path, ["fake"], replay=broken)
    assert outcome.status == "failed" and "malformed body" in outcome.error
    assert current(db_path) == {"big": 40.0, "small": 0.7}
    con = open_warehouse(db_path, read_only=True)
    assert con.execute("SELECT status FROM scrape_runs ORDER BY run_id").fetchall() == [("ok",), ("failed",)]
    con.close()


def test_http_failure_is_recorded_with_its_reason(tmp_path, db_path, monkeypatch):
    refresh(db_path, ["fake"], replay=record_dir(tmp_path, ITEMS))
    import httpx
    import respx

    with respx.mock:
        respx.get(f"{HOST}/prices.json").mock(return_value=httpx.Response(500))
        [outcome] = refresh(db_path, ["fake"], retry=RetryPolicy(attempts=2, base_seconds=0))
    assert outcome.status == "failed" and "HTTP 500" in outcome.error and "after 2 attempts" in outcome.error
    assert current(db_path) == {"big": 40.0, "small": 0.7}


def test_missing_credentials_skip_the_provider_not_the_run(tmp_path, db_path):
    outcomes = refresh(db_path, ["fake", "keyed"], replay=record_dir(tmp_path, ITEMS))
    assert {o.provider: o.status for o in outcomes} == {"fake": "ok", "keyed": "skipped"}
    assert "COSTOPT_KEYED_KEY" in outcomes[1].error


def test_unknown_provider_and_missing_replay_dir(tmp_path, db_path):
    with pytest.raises(UsageError, match="unknown provider 'nope'"):
        refresh(db_path, ["nope"])
    with pytest.raises(UsageError, match="not a directory"):
        refresh(db_path, ["fake"], replay=tmp_path / "missing")


def test_a_stop_during_the_fetch_leaves_no_unretrieved_asyncio_error(tmp_path, db_path, monkeypatch, caplog):
    """The scheduler's SIGTERM sets the cancel event while providers are still fetching. The cancelled
    fetches must be awaited: asyncio otherwise prints "_GatheringFuture exception was never retrieved"
    and a CancelledError traceback on stderr when the future is collected (seen on a SIGTERM 1-8 s
    into a scheduled run)."""
    import asyncio
    import gc
    import threading

    from scraper.refresh import Cancelled

    refresh(db_path, ["fake"], replay=record_dir(tmp_path, ITEMS))
    fetch = FakeProvider.fetch

    async def slow_fetch(self, http):
        await asyncio.sleep(30)
        return await fetch(self, http)

    monkeypatch.setattr(FakeProvider, "fetch", slow_fetch)
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    with pytest.raises(Cancelled, match="nothing was written"):
        refresh(db_path, ["fake"], replay=record_dir(tmp_path / "t", ITEMS), cancel=stop)
    gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    assert current(db_path) == {"big": 40.0, "small": 0.7}


@pytest.mark.parametrize(("usd", "reason"), [(900.0, "above ceiling"), (0.001, "below floor")])
def test_a_row_rejected_by_validation_keeps_the_offers_previous_price(tmp_path, db_path, usd, reason):
    """A3: a rejected row vanished from the run and the load closed that offer's price as "no longer
    listed" (4 Lambda B200 rows over the ceiling closed 4 good prices). A rejected row says nothing about
    the offer: its previous price stays current, neither confirmed (observed_at, last_seen) nor closed."""
    yesterday = [
        {"type": "big", "gpu": "H100-SXM", "count": 8, "usd": 40.0},
        {"type": "small", "gpu": "L4", "count": 1, "usd": 0.7},
    ]
    [first] = refresh(db_path, ["fake"], replay=record_dir(tmp_path / "d1", yesterday))
    assert first.status == "ok" and current(db_path) == {"big": 40.0, "small": 0.7}
    today = [
        {"type": "big", "gpu": "H100-SXM", "count": 8, "usd": 44.0},
        {"type": "small", "gpu": "L4", "count": 1, "usd": usd},
    ]
    root = record_dir(tmp_path / "d2", today, etag='"v2"', recorded_at="2026-11-21T03:00:00Z")
    [outcome] = refresh(db_path, ["fake"], replay=root)
    assert (outcome.status, outcome.offers, outcome.prices_changed, outcome.prices_closed) == ("ok", 1, 1, 0)
    assert outcome.unknown == 1
    con = open_warehouse(db_path, read_only=True)
    try:
        rows = con.execute(
            """SELECT instance_type, usd_per_hour, valid_from, valid_to, last_seen FROM price_history
               ORDER BY instance_type, valid_from"""
        ).fetchall()
        observed = dict(con.execute("SELECT instance_type, observed_at FROM current_prices").fetchall())
        notes = con.execute("SELECT notes FROM scrape_runs ORDER BY run_id DESC LIMIT 1").fetchone()[0]
        alerts = [m for (m,) in con.execute("SELECT message FROM alerts").fetchall()]
    finally:
        con.close()
    day1, day2 = datetime(2026, 11, 20, 3, tzinfo=UTC), datetime(2026, 11, 21, 3, tzinfo=UTC)
    assert rows == [
        ("big", 40.0, day1, day2, day1),
        ("big", 44.0, day2, None, day2),
        ("small", 0.7, day1, None, day1),  # still open, and not confirmed by a run that refused its row
    ]
    assert current(db_path) == {"big": 44.0, "small": 0.7}
    assert observed == {"big": day2, "small": day1}
    assert f"1 skipped: {reason}" in notes and "fake/r1/small/on_demand" in notes
    assert "1 offer(s) not updated: their new row was rejected, any previous price kept" in notes
    assert not any("no longer listed" in m for m in alerts)

    def small_interval():
        con = open_warehouse(db_path, read_only=True)
        try:
            query = "SELECT valid_from, valid_to, last_seen FROM price_history WHERE instance_type = 'small'"
            return con.execute(query).fetchall()
        finally:
            con.close()

    # the same document the next night: its ETag was not kept, so it is read again (a 304 would carry the
    # source forward and confirm the held price that the unchanged document still refuses)
    root = record_dir(tmp_path / "d3", today, etag='"v2"', recorded_at="2026-11-22T03:00:00Z")
    [same] = refresh(db_path, ["fake"], replay=root)
    assert (same.status, same.prices_closed, same.unknown) == ("ok", 0, 1) and same.bytes_downloaded > 0
    assert small_interval() == [(day1, None, day1)]

    # the next good row confirms the kept interval as usual
    root = record_dir(tmp_path / "d4", yesterday, etag='"v3"', recorded_at="2026-11-23T03:00:00Z")
    [again] = refresh(db_path, ["fake"], replay=root)
    assert (again.status, again.prices_changed, again.prices_closed) == ("ok", 1, 0)
    assert small_interval() == [(day1, None, datetime(2026, 11, 23, 3, tzinfo=UTC))]


def test_a_price_that_moved_tenfold_is_held_back_and_said(tmp_path, db_path):
    """A page with every price x30 (an H100 at $128.70/h, under the $150/GPU-h ceiling) was loaded as today's prices
    with only a flag. A tenfold move against the current price is held: the previous price stays, and a warning
    says which."""
    from scraper.job import run_job

    refresh(db_path, ["fake"], replay=record_dir(tmp_path / "y", ITEMS))
    today = [dict(item, usd=item["usd"] * (20 if item["type"] == "big" else 0.9)) for item in ITEMS]
    [outcome], code = run_job(
        db_path, ["fake"], replay=record_dir(tmp_path / "t", today, etag='"v2"', recorded_at="2026-11-21T03:00:00Z")
    )
    assert current(db_path) == {"big": 40.0, "small": pytest.approx(0.63)}  # big held at yesterday's, small moved
    assert code == 3 and outcome.status == "ok" and outcome.prices_closed == 0
    [alert] = [a for a in outcome.alerts if a.kind == "implausible_move"]
    assert alert.severity == "warning" and alert.message == (
        "fake: 1 price(s) moved more than 10-fold against the current one and were not loaded, the previous price "
        "kept; largest big r1 on_demand $40 -> $800"
    )
