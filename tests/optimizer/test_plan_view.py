"""``build_plan(view="default")`` (what ``costopt plan`` asks for unless --all-counts) makes only the default view's
rows, and they must be exactly the rows ``default_view`` picks from every option: same rows, same order, same
values, same key order, same count of options and same dropped list. Checked on the bundled snapshot (all six
providers) and on a small multi-night history of generated prices, for the constraint sets that change the ranking
(spot only, on-demand only, a deadline, a budget, a marketplace, one GPU with a checkpoint interval)."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from optimizer import inputs
from optimizer.estimate import Job
from optimizer.market import MarketPolicy
from optimizer.models import resolve_model
from optimizer.plan import Constraints, NoOptions, build_plan, default_view
from scraper.providers import NAMES
from scraper.refresh import refresh
from tests.conftest import REPO, script_module
from warehouse.db import open_warehouse
from warehouse.gpus import catalog

CASES = {
    "default": ("8B", "100B", Constraints()),
    "spot": ("8B", "100B", Constraints(spot=True)),
    "on-demand": ("8B", "100B", Constraints(spot=False)),
    "deadline": ("70B", "1T", Constraints(deadline_hours=24 * 60, max_gpus=512)),
    "budget": ("8B", "100B", Constraints(budget_usd=20_000)),
    "marketplace": ("1B", "10B", Constraints(providers=("vastai",), market=MarketPolicy(price="min", min_listings=1))),
    "one GPU": ("8B", "100B", Constraints(gpus=("H100",), checkpoint_interval_hours=2.0)),
}


def _offers(db: Path) -> tuple[list[dict], dict]:
    con = open_warehouse(db, read_only=True)
    try:
        return inputs.current_offers(con), inputs.spot_risk(con)
    finally:
        con.close()


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict]:
    db = tmp_path_factory.mktemp("view") / "snapshot.duckdb"
    outcomes = refresh(db, list(NAMES), replay=REPO / "fixtures", mode="snapshot", keep_raw=False, env={})
    assert {o.status for o in outcomes} == {"ok"}
    return _offers(db)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], dict]:
    """Eight nights of bench/warehouse_year.py's generated prices (moving spot prices, offers briefly missing)."""
    year = script_module(REPO / "bench" / "warehouse_year.py", "warehouse_year")
    db = tmp_path_factory.mktemp("view") / "history.duckdb"
    rng = random.Random(3)
    offers = year.offers(300, rng)
    prices = year.first_prices(offers)
    con = open_warehouse(db)
    try:
        for night in range(8):
            year.load_night(con, offers, prices, rng, datetime(2026, 3, 1, 3, tzinfo=UTC) + timedelta(days=night))
    finally:
        con.close()
    return _offers(db)


def _plans(offers: list[dict], risk: dict, model: str, tokens: str, constraints: Constraints):  # type: ignore[no-untyped-def]
    from cli.commands.estimate import build_job

    job = build_job(model, tokens, None, "full", "bf16", None, 1, "auto", "typical")
    try:
        every = build_plan(job, offers, catalog(), constraints, spot_risk=risk)
    except NoOptions as exc:
        with pytest.raises(NoOptions, match=re.escape(str(exc))):
            build_plan(job, offers, catalog(), constraints, spot_risk=risk, view="default")
        return None, None
    return every, build_plan(job, offers, catalog(), constraints, spot_risk=risk, view="default")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("source", ["snapshot", "history"])
def test_the_default_view_is_the_view_of_every_option(case, source, request):
    offers, risk = request.getfixturevalue(source)
    every, shown = _plans(offers, risk, *CASES[case])
    if every is None:
        pytest.fail(f"{case} on the {source} has no options: the case checks nothing")
        return
    assert every.total == len(every.options) == shown.total
    expected = default_view(every.options)
    assert 0 < len(shown.options) == len(expected) <= len(every.options)
    assert shown.options == expected
    assert [list(r) for r in shown.options] == [list(r) for r in expected]  # key order too
    assert shown.dropped == every.dropped


def test_view_must_be_known(snapshot):
    offers, risk = snapshot
    with pytest.raises(ValueError, match="view must be"):
        build_plan(Job(resolve_model("8B"), 100e9), offers, catalog(), Constraints(), spot_risk=risk, view="some")
