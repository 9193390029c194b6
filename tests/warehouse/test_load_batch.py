"""Loading several providers in one transaction (``load_runs``) writes exactly what loading each alone writes.

``scraper.refresh`` loads every provider that passed its checks as one batch, and falls back to one
transaction per provider when the batch fails; both paths must leave the same rows behind.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from scraper.providers import NAMES
from scraper.refresh import refresh
from tests.conftest import REPO, T0
from warehouse import load as load_module
from warehouse.db import open_warehouse
from warehouse.errors import WarehouseError
from warehouse.load import RunRecord, load_run, load_runs
from warehouse.records import MarketStats, PriceRecord

FIXTURES = REPO / "fixtures"
DAY = timedelta(days=1)
# what differs between two loads of the same data: when they ran and how long they took
VOLATILE = {"scrape_runs": "started_at, finished_at, seconds", "alerts": "created_at", "raw_payloads": "path"}
RUN_IDS = ("run_id", "first_run", "last_run")
TABLES = (
    "offers",
    "prices",
    "market_stats",
    "spot_risk",
    "price_flags",
    "http_validators",
    "provider_state",
    "run_scopes",
    "scrape_runs",
    "alerts",
    "raw_payloads",
)


def tables(db: Path, *, without_run_ids: bool = False) -> dict[str, list[tuple[object, ...]]]:
    con = open_warehouse(db, read_only=True)
    try:
        dumped = {}
        for table in TABLES:
            excluded = [VOLATILE[table]] if table in VOLATILE else []
            if without_run_ids:
                excluded += [c for c in RUN_IDS if c in con.table(table).columns]
            columns = f"* EXCLUDE ({', '.join(excluded)})" if excluded else "*"
            dumped[table] = con.execute(f"SELECT {columns} FROM {table} ORDER BY ALL").fetchall()
        return dumped
    finally:
        con.close()


def test_a_batched_refresh_writes_what_one_load_per_provider_writes(tmp_path, monkeypatch):
    batched, alone = tmp_path / "batched.duckdb", tmp_path / "alone.duckdb"
    calls: list[list[str]] = []
    real = load_module._stage

    def spy(con, runs):
        calls.append([run.provider for run in runs])
        return real(con, runs)

    monkeypatch.setattr(load_module, "_stage", spy)
    for _ in range(2):  # a first load, then unchanged recordings (carried forward, confirmed)
        assert {o.status for o in refresh(batched, replay=FIXTURES)} == {"ok"}
        for name in NAMES:
            assert [o.status for o in refresh(alone, [name], replay=FIXTURES)] == ["ok"]
    assert calls == [list(NAMES), *([name] for name in NAMES)] * 2
    got, expected = tables(batched), tables(alone)
    assert {t: len(rows) for t, rows in got.items()} == {t: len(rows) for t, rows in expected.items()}
    assert len(got["prices"]) > 1000 and len(got["market_stats"]) > 100 and len(got["spot_risk"]) > 50
    for table in TABLES:
        assert got[table] == expected[table], table


def test_a_failed_batch_falls_back_to_one_transaction_per_provider(tmp_path, monkeypatch):
    """vastai's load fails (in the batch, then alone): the others load as if loaded alone, vastai keeps nothing."""
    fallback, alone = tmp_path / "fallback.duckdb", tmp_path / "alone.duckdb"
    real = load_module._stage

    def failing(con, runs):
        if any(run.provider == "vastai" for run in runs):
            raise duckdb.IOException("IO Error: No space left on device")
        return real(con, runs)

    monkeypatch.setattr(load_module, "_stage", failing)
    outcomes = {o.provider: o for o in refresh(fallback, replay=FIXTURES)}
    assert {p: o.status for p, o in outcomes.items()} == {**{n: "ok" for n in NAMES}, "vastai": "failed"}
    assert outcomes["vastai"].error == "vastai: not loaded: warehouse error: IO Error: No space left on device"
    for name in NAMES:
        if name != "vastai":
            refresh(alone, [name], replay=FIXTURES)
    # run ids differ: the failed batch drew six from the sequence (DuckDB sequences do not roll back)
    got, expected = tables(fallback, without_run_ids=True), tables(alone, without_run_ids=True)
    for table in ("offers", "prices", "market_stats", "spot_risk", "price_flags", "http_validators", "provider_state"):
        assert got[table] == expected[table], table
    assert len(got["prices"]) > 1000 and not got["market_stats"]  # vastai's stats never landed
    # vastai's failure is logged, with its source counts
    assert sorted((r[0], r[3]) for r in got["scrape_runs"]) == [(n, "failed" if n == "vastai" else "ok") for n in NAMES]
    assert [r for r in got["scrape_runs"] if r[0] != "vastai"] == expected["scrape_runs"]
    assert [r for r in got["run_scopes"] if r[0] != "vastai"] == expected["run_scopes"]
    assert {r[0] for r in got["run_scopes"]} == set(NAMES)


@pytest.fixture
def con(db_path):
    con = open_warehouse(db_path)
    yield con
    con.close()


def record(provider, instance_type, usd, at, **kwargs):
    return PriceRecord(provider, "r1", instance_type, "H100-SXM", 8, "on_demand", usd, "u", at, **kwargs)


def current(con):
    return con.execute(
        "SELECT provider, instance_type, usd_per_hour, valid_from, valid_to FROM price_history ORDER BY ALL"
    ).fetchall()


def test_one_batch_holds_a_skipped_run_a_change_a_disappearance_and_a_same_time_correction(con):
    load_runs(
        con,
        [
            RunRecord("aws", "live", T0, T0, prices=[record("aws", "a", 10.0, T0), record("aws", "b", 5.0, T0)]),
            RunRecord("azure", "live", T0, T0, prices=[record("azure", "x", 7.0, T0)]),
            RunRecord("lambda", "live", T0 + DAY, T0 + DAY, prices=[record("lambda", "l", 2.0, T0 + DAY)]),
        ],
    )
    later = T0 + 2 * DAY
    summaries = load_runs(
        con,
        [
            # aws: a changed, b gone
            RunRecord("aws", "live", later, later, prices=[record("aws", "a", 12.0, later)]),
            # azure: an older recording than held? no: held is T0, this is newer and unchanged
            RunRecord("azure", "live", later, later, prices=[record("azure", "x", 7.0, later)]),
            # lambda: a recording older than the prices held is not loaded
            RunRecord("lambda", "replay", T0, T0, prices=[record("lambda", "l", 3.0, T0)]),
        ],
    )
    assert [(s.status, s.offers, s.prices_changed, s.prices_closed) for s in summaries] == [
        ("ok", 1, 1, 1),
        ("ok", 1, 0, 0),
        ("skipped", 0, 0, 0),
    ]
    assert "older than prices already held" in (summaries[2].note or "")
    # a parser fix reloads aws at the same time: the interval opened then is replaced, not doubled
    [fixed] = load_runs(con, [RunRecord("aws", "reparse", later, later, prices=[record("aws", "a", 11.0, later)])])
    assert fixed.status == "ok"
    assert current(con) == [
        ("aws", "a", 10.0, T0, later),
        ("aws", "a", 11.0, later, None),
        ("aws", "b", 5.0, T0, later),
        ("azure", "x", 7.0, T0, None),
        ("lambda", "l", 2.0, T0 + DAY, None),
    ]
    runs = con.execute("SELECT run_id, provider, status, prices_changed FROM scrape_runs ORDER BY run_id").fetchall()
    assert [r[1:] for r in runs] == [
        ("aws", "ok", 2),
        ("azure", "ok", 1),
        ("lambda", "ok", 1),
        ("aws", "ok", 1),
        ("azure", "ok", 0),
        ("lambda", "skipped", 0),
        ("aws", "ok", 1),
    ]
    last_run = con.execute(
        "SELECT p.last_run FROM prices p JOIN offers o USING (offer_id) WHERE o.provider = 'azure'"
    ).fetchall()
    assert last_run == [(runs[4][0],)]  # each provider's rows carry its own run id


def test_a_batch_keeps_each_runs_market_stats_and_carried_scopes(con):
    stats = MarketStats(offer_count=3, min=0.3, p10=0.3, median=0.4, max=0.5)
    vast = record("vastai", "g", 0.4, T0, stats=stats)
    load_runs(
        con,
        [
            RunRecord("aws", "live", T0, T0, prices=[record("aws", "a", 10.0, T0)]),
            RunRecord("vastai", "live", T0, T0, prices=[vast]),
        ],
    )
    later = T0 + DAY
    load_runs(
        con,
        [
            RunRecord("aws", "live", later, later, carried={("r1", "on_demand")}),  # unchanged source: carried
            RunRecord("vastai", "live", later, later, prices=[record("vastai", "g", 0.4, later, stats=stats)]),
        ],
    )
    assert current(con) == [("aws", "a", 10.0, T0, None), ("vastai", "g", 0.4, T0, None)]
    assert con.execute("SELECT provider, last_seen FROM price_history ORDER BY ALL").fetchall() == [
        ("aws", later),
        ("vastai", later),
    ]
    assert con.execute("SELECT run_id, offer_count FROM market_stats ORDER BY run_id").fetchall() == [(2, 3), (4, 3)]


def test_a_batch_is_one_transaction(con, monkeypatch):
    load_run(con, RunRecord("aws", "live", T0, T0, prices=[record("aws", "a", 10.0, T0)]))
    before = current(con), con.execute("SELECT count(*) FROM scrape_runs").fetchone()
    real = con.execute

    class Boom:
        def __getattr__(self, name):
            return getattr(con, name)

        def execute(self, sql, *args):
            if sql.lstrip().startswith("INSERT INTO market_stats"):
                raise RuntimeError("disk full")
            return real(sql, *args)

    later = T0 + DAY
    with pytest.raises(RuntimeError, match="disk full"):
        load_runs(
            Boom(),
            [
                RunRecord("aws", "live", later, later, prices=[record("aws", "a", 12.0, later)]),
                RunRecord("azure", "live", later, later, prices=[record("azure", "x", 7.0, later)]),
            ],
        )
    assert (current(con), con.execute("SELECT count(*) FROM scrape_runs").fetchone()) == before


def test_a_batch_takes_one_run_per_provider(con):
    run = RunRecord("aws", "live", T0, T0, prices=[record("aws", "a", 10.0, T0)])
    with pytest.raises(WarehouseError, match="one run per provider in a batch"):
        load_runs(con, [run, run])
    assert load_runs(con, []) == []


def test_raw_payloads_that_cannot_be_kept_fail_their_provider_whatever_the_parse_says(tmp_path):
    """The raw payloads are kept on a thread beside the parse; a failure to keep them is still the provider's."""
    db = tmp_path / "wh.duckdb"
    (tmp_path / "wh.raw").write_text("a file where the raw payload directory should be")
    outcomes = refresh(db, ["coreweave", "lambda"], replay=FIXTURES)
    assert [(o.provider, o.status) for o in outcomes] == [("coreweave", "failed"), ("lambda", "failed")]
    for o in outcomes:
        assert o.error is not None
        assert o.error.startswith(f"{o.provider}: cannot keep the raw payloads under {tmp_path / 'wh.raw'}: ")
    rows = tables(db)
    assert rows["prices"] == [] and [r[4] for r in rows["scrape_runs"]] == ["failed", "failed"]
