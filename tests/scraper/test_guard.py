"""The mass-disappearance guard: a source that suddenly answers with far fewer offers is refused, not loaded."""

from __future__ import annotations

import json
import threading
from http.server import HTTPServer

import pytest

from scraper.job import run_job
from scraper.refresh import refresh
from tests.ops.test_schedule import _Hook
from tests.scraper.test_refresh import fake_registry, record_dir  # noqa: F401 - fixture
from warehouse.db import open_warehouse
from warehouse.errors import UsageError
from warehouse.volume import DEFAULT_MIN_SHARE, min_share

TYPES = [f"t{i}" for i in range(10)]


def items(types, usd=1.0):
    return [{"type": t, "gpu": "L4", "count": 1, "usd": usd} for t in types]


def night(tmp_path, n, types, **kwargs):
    """A recording of night ``n`` (2026-11-2n 03:00 UTC) listing ``types``."""
    return record_dir(
        tmp_path / f"n{n}", items(types), etag=f'"v{n}"', recorded_at=f"2026-11-{20 + n}T03:00:00Z", **kwargs
    )


def current(db_path):
    con = open_warehouse(db_path, read_only=True)
    try:
        return sorted(r[0] for r in con.execute("SELECT instance_type FROM current_prices").fetchall())
    finally:
        con.close()


def log(db_path, sql):
    con = open_warehouse(db_path, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize(("listed", "kept"), [([], "0 offers"), (TYPES[:1], "1 offers")])
def test_a_source_that_drops_to_nothing_or_a_tenth_is_refused_and_yesterday_kept(tmp_path, db_path, listed, kept):
    [first] = refresh(db_path, ["fake"], replay=night(tmp_path, 0, TYPES))
    [outcome] = refresh(db_path, ["fake"], replay=night(tmp_path, 1, listed))
    assert outcome.status == "failed"
    assert outcome.error == (
        f"fake: suspect: on_demand: {kept}, last good run (run {first.run_id}) had 10 -- previous prices kept "
        "(rule: under 50% of the last good run is suspect; confirm a real change with --accept-drop fake)"
    )
    assert current(db_path) == TYPES
    assert [(a.kind, a.severity, a.message) for a in outcome.alerts] == [("suspect_drop", "error", outcome.error)]
    assert log(db_path, "SELECT kind, severity FROM alerts") == [("suspect_drop", "error")]
    # the refused run is logged with what it counted, and its raw payload kept as evidence
    runs = log(db_path, "SELECT run_id, status, offers FROM scrape_runs ORDER BY run_id")
    assert runs == [(first.run_id, "ok", 10), (outcome.run_id, "failed", len(listed))]
    assert log(db_path, f"SELECT scope, offers FROM run_scopes WHERE run_id = {outcome.run_id}") == (
        [("on_demand", 1)] if listed else []
    )
    assert log(db_path, f"SELECT count(*) FROM raw_payloads WHERE run_id = {outcome.run_id}") == [(1,)]


def test_half_or_more_is_loaded(tmp_path, db_path):
    refresh(db_path, ["fake"], replay=night(tmp_path, 0, TYPES))
    [outcome] = refresh(db_path, ["fake"], replay=night(tmp_path, 1, TYPES[:5]))
    assert (outcome.status, outcome.prices_closed) == ("ok", 5)
    assert current(db_path) == TYPES[:5]


def test_accept_drop_loads_it_and_becomes_the_new_baseline(tmp_path, db_path):
    refresh(db_path, ["fake"], replay=night(tmp_path, 0, TYPES))
    [refused] = refresh(db_path, ["fake"], replay=night(tmp_path, 1, TYPES[:2]))
    assert refused.status == "failed"
    [accepted] = refresh(db_path, ["fake"], replay=night(tmp_path, 1, TYPES[:2]), accept_drop=["fake"])
    assert (accepted.status, accepted.prices_closed) == ("ok", 8)
    assert current(db_path) == TYPES[:2]
    drop = [a for a in accepted.alerts if a.kind == "drop_accepted"]
    assert [(a.severity, a.message) for a in drop] == [
        ("info", "fake: drop accepted (--accept-drop): on_demand: 2 offers, last good run (run 1) had 10")
    ]
    # the next night compares with the accepted run, not with the old ten
    [next_night] = refresh(db_path, ["fake"], replay=night(tmp_path, 2, TYPES[:1]))
    assert (next_night.status, next_night.prices_closed) == ("ok", 1)


def test_an_empty_first_answer_is_suspect_too(tmp_path, db_path):
    [outcome] = refresh(db_path, ["fake"], replay=night(tmp_path, 0, []))
    assert outcome.status == "failed"
    assert outcome.error.startswith("fake: suspect: every source: 0 offers, and no earlier run to compare with")
    assert log(db_path, "SELECT count(*) FROM prices") == [(0,)]


def test_an_unchanged_source_carried_forward_is_not_a_drop(tmp_path, db_path):
    root = night(tmp_path, 0, TYPES)
    refresh(db_path, ["fake"], replay=root)
    [again] = refresh(db_path, ["fake"], replay=root)  # 304: nothing read, everything carried
    assert (again.status, again.bytes_downloaded) == ("ok", 0)
    assert current(db_path) == TYPES


def test_the_share_is_configured_per_provider(tmp_path, db_path):
    refresh(db_path, ["fake"], replay=night(tmp_path, 0, TYPES))
    strict = {"COSTOPT_GUARD_MIN_SHARE": "0.1", "COSTOPT_GUARD_MIN_SHARE_FAKE": "0.9"}
    [refused] = refresh(db_path, ["fake"], replay=night(tmp_path, 1, TYPES[:8]), env=strict)
    assert refused.status == "failed" and "(rule: under 90% of the last good run is suspect;" in refused.error
    lenient = {"COSTOPT_GUARD_MIN_SHARE": "0.1"}
    [loaded] = refresh(db_path, ["fake"], replay=night(tmp_path, 1, TYPES[:2]), env=lenient)
    assert (loaded.status, current(db_path)) == ("ok", TYPES[:2])
    only_empty = {"COSTOPT_GUARD_MIN_SHARE_FAKE": "0"}
    [zero] = refresh(db_path, ["fake"], replay=night(tmp_path, 2, []), env=only_empty)
    assert zero.status == "failed" and "(rule: none is suspect;" in zero.error


def test_share_values_are_checked():
    assert min_share({}, "aws") == DEFAULT_MIN_SHARE == 0.5
    assert min_share({"COSTOPT_GUARD_MIN_SHARE_AWS": "0.25", "COSTOPT_GUARD_MIN_SHARE": "0.75"}, "aws") == 0.25
    assert min_share({"COSTOPT_GUARD_MIN_SHARE": "0.75"}, "aws") == 0.75
    for bad in ("half", "1.5", "-0.1"):
        with pytest.raises(UsageError, match="COSTOPT_GUARD_MIN_SHARE_AWS"):
            min_share({"COSTOPT_GUARD_MIN_SHARE_AWS": bad}, "aws")


def test_notify_carries_the_suspect_run(tmp_path, db_path):
    _Hook.bodies.clear()
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        run_job(db_path, ["fake"], replay=night(tmp_path, 0, TYPES))
        _, code = run_job(
            db_path, ["fake"], replay=night(tmp_path, 1, []), notify=f"http://127.0.0.1:{server.server_port}/x"
        )
    finally:
        server.shutdown()
    assert code == 1
    [body] = _Hook.bodies
    assert body["exit_code"] == 1 and body["ok"] == []
    [failure] = body["failures"]
    assert failure["provider"] == "fake" and failure["error"].startswith("fake: suspect: on_demand: 0 offers")
    assert [(a["kind"], a["severity"]) for a in body["alerts"]] == [("suspect_drop", "error")]
    json.dumps(body)


def test_an_older_warehouse_without_source_counts_compares_with_its_open_prices(tmp_path, db_path):
    refresh(db_path, ["fake"], replay=night(tmp_path, 0, TYPES))
    con = open_warehouse(db_path)
    con.execute("DELETE FROM run_scopes")  # as a warehouse written before migration 3
    con.close()
    [outcome] = refresh(db_path, ["fake"], replay=night(tmp_path, 1, TYPES[:3]))
    assert outcome.status == "failed"
    assert "suspect: on_demand: 3 offers, last good run had 10 -- " in outcome.error


def aws_recording(tmp_path, name, recorded_at):
    """fixtures/aws with another recording time (the bodies are linked, not copied)."""
    from tests.scraper.support import FIXTURES

    directory = tmp_path / name / "aws"
    directory.mkdir(parents=True)
    for source in (FIXTURES / "aws").iterdir():
        if source.name != "replay.json":
            (directory / source.name).symlink_to(source)
    manifest = json.loads((FIXTURES / "aws" / "replay.json").read_text())
    manifest["recorded_at"] = recorded_at
    (directory / "replay.json").write_text(json.dumps(manifest))
    return tmp_path / name


def test_configuring_fewer_regions_is_not_a_drop(tmp_path, db_path, monkeypatch):
    monkeypatch.setattr("scraper.refresh.NAMES", ("aws",))
    monkeypatch.setattr("scraper.providers.REGISTRY", {"aws": "scraper.providers.aws:AwsProvider"})
    [full] = refresh(db_path, ["aws"], replay=aws_recording(tmp_path, "a", "2026-11-20T03:00:00Z"), env={})
    regions = {r for (r,) in log(db_path, "SELECT DISTINCT region FROM current_prices WHERE provider = 'aws'")}
    assert full.status == "ok" and len(regions) == 8
    one = {"COSTOPT_AWS_REGIONS": "us-east-1"}
    [narrow] = refresh(db_path, ["aws"], replay=aws_recording(tmp_path, "b", "2026-11-21T03:00:00Z"), env=one)
    assert narrow.status == "ok", narrow.error
    assert log(db_path, "SELECT DISTINCT region FROM current_prices WHERE provider = 'aws'") == [("us-east-1",)]
    # the other regions' sources were not compared: the run counted only what it was configured to read
    scopes = log(db_path, f"SELECT scope FROM run_scopes WHERE run_id = {narrow.run_id} ORDER BY scope")
    assert scopes == [("spot/us-east-1",), ("spot_risk/us-east-1",)]
