"""The unattended refresh: scheduling, overlap, signals mid-load, readers during a load, the webhook."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from scraper.job import exit_code, run_job
from scraper.schedule import Schedule, make_trigger, parse_every
from tests.conftest import REPO
from tests.scraper.test_refresh import ITEMS, fake_registry, record_dir  # noqa: F401 - fixture
from warehouse.db import open_warehouse
from warehouse.errors import UsageError


def test_two_runs_happen_and_overlapping_runs_are_coalesced():
    active, most, runs = [0], [0], []
    lock = threading.Lock()

    def job(stop):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.35)  # longer than the interval: the next firing must not overlap
        with lock:
            active[0] -= 1
        runs.append(time.monotonic())
        return 0

    schedule = Schedule(job, make_trigger(None, "0.1s", "UTC", 0), run_now=True, log=lambda _: None)
    schedule.scheduler.start()  # its own thread (a BackgroundScheduler): returns once that thread runs
    time.sleep(1.3)
    schedule.request_stop()
    schedule.idle.wait(5)
    assert len(runs) >= 2  # it ran repeatedly ...
    assert most[0] == 1  # ... never two at once ...
    assert len(runs) <= 5  # ... and missed firings were coalesced, not queued (1.3 s / 0.1 s would be 13)


def test_trigger_and_interval_parsing():
    assert parse_every("6h").total_seconds() == 21600 and parse_every("30min").total_seconds() == 1800
    assert parse_every("2s").total_seconds() == 2 and parse_every("1d").total_seconds() == 86400
    for bad in ("often", "0h", "-1h", "6"):
        with pytest.raises(UsageError, match="--every"):
            parse_every(bad)
    with pytest.raises(UsageError, match="ambiguous: write 30min for minutes or 30mo for months"):
        parse_every("30m")
    with pytest.raises(UsageError, match="5 fields"):
        make_trigger("0 3 * *", None, "UTC", 0)
    with pytest.raises(UsageError, match="timezone"):
        make_trigger(None, None, "Mars/Olympus", 0)
    trigger = make_trigger("30 2 * * *", None, "Europe/Berlin", 60)
    assert str(trigger.timezone) == "Europe/Berlin" and trigger.jitter == 60


WRITER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {repo!r})
    from pathlib import Path
    from scraper import providers
    providers.REGISTRY = {{"fake": "tests.scraper.test_refresh:FakeProvider"}}
    import scraper.refresh
    scraper.refresh.NAMES = ("fake",)
    from scraper.schedule import serve
    sys.exit(serve(Path({db!r}), cron=None, every="1h", timezone="UTC", run_now=True, replay=Path({replay!r}),
                   providers=None, notify=None, keep_raw_days=None, jitter=0))
    """
)


def start_writer(db_path, replay, delay):
    # its scratch directory goes under the test's own temporary folder: a killed writer's stays behind there
    scratch = db_path.parent / "tmp"
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, "COSTOPT_TEST_LOAD_DELAY": str(delay), "TMPDIR": str(scratch)}
    script = WRITER.format(repo=str(REPO), db=str(db_path), replay=str(replay))
    proc = subprocess.Popen(
        [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "load transaction open" in line:
            return proc
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"writer never reached its load: {proc.stderr.read()}")


def prices(db_path):
    con = open_warehouse(db_path, read_only=True)
    try:
        return dict(con.execute("SELECT instance_type, usd_per_hour FROM current_prices").fetchall()), con.execute(
            "SELECT count(*) FROM scrape_runs"
        ).fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def yesterday(tmp_path, db_path):
    """A warehouse holding yesterday's prices, and a recording of today's (changed) prices."""
    from scraper.refresh import refresh

    refresh(db_path, ["fake"], replay=record_dir(tmp_path / "y", ITEMS))
    today = [dict(item, usd=item["usd"] * 0.9) for item in ITEMS]
    return record_dir(tmp_path / "t", today, etag='"v2"', recorded_at="2026-11-21T03:00:00Z")


@pytest.mark.slow
def test_sigterm_during_a_load_commits_it_then_exits_zero(db_path, yesterday):
    proc = start_writer(db_path, yesterday, delay=2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "SIGTERM: finishing the load in progress" in out and "stopped after 1 run(s)" in out
    current, runs = prices(db_path)
    assert current == {"big": 36.0, "small": pytest.approx(0.63)} and runs == 2  # committed whole


@pytest.mark.slow
def test_kill_during_a_load_leaves_no_partial_run_and_the_next_run_sweeps_its_scratch(db_path, yesterday, monkeypatch):
    from scraper.refresh import refresh

    proc = start_writer(db_path, yesterday, delay=30)
    proc.kill()
    proc.wait(timeout=30)
    current, runs = prices(db_path)
    assert current == {"big": 40.0, "small": 0.7} and runs == 1  # yesterday intact, nothing half-written
    scratch = db_path.parent / "tmp"
    assert len(list(scratch.glob("costopt-fetch-*"))) == 1  # SIGKILL runs no clean-up: its downloads stay ...
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    refresh(db_path, ["fake"], replay=yesterday)
    assert list(scratch.iterdir()) == []  # ... until the next refresh, which sweeps them and removes its own


@pytest.mark.slow
def test_a_reader_answers_while_a_writer_is_mid_load(db_path, yesterday):
    proc = start_writer(db_path, yesterday, delay=3)
    try:
        reader = subprocess.run(
            [
                sys.executable,
                "-c",
                "from cli.app import main; main()",
                "sql",
                "--db",
                str(db_path),
                "SELECT count(*) AS n FROM current_prices",
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert reader.returncode == 0, reader.stderr
    assert json.loads(reader.stdout) == [{"n": 2}]
    assert "waiting for" in reader.stderr and "PID" in reader.stderr


class _Hook(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []

    def do_POST(self):
        length = int(self.headers["Content-Length"])
        _Hook.bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_webhook_receives_failures_and_alerts(db_path, tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/hook"
    try:
        run_job(db_path, ["fake"], replay=record_dir(tmp_path / "a", ITEMS), notify=url)
        assert _Hook.bodies == []  # all well: nothing to say
        broken = record_dir(tmp_path / "b", [], etag='"v9"', recorded_at="2026-11-22T03:00:00Z", body="{oops")
        lines = []
        _, code = run_job(db_path, ["fake"], replay=broken, notify=url, log=lines.append)
    finally:
        server.shutdown()
    assert code == 1 and f"notified 127.0.0.1:{server.server_port}" in [line.split(" ", 1)[1] for line in lines]
    assert not [line for line in lines if "/hook" in line]  # the URL is the webhook's secret: host only
    [body] = _Hook.bodies
    assert body["event"] == "costopt.refresh" and body["exit_code"] == 1 and body["ok"] == []
    assert body["failures"][0]["provider"] == "fake" and "malformed body" in body["failures"][0]["error"]


def test_exit_codes_for_monitors():
    from scraper.refresh import Outcome
    from warehouse.alerts import Alert

    ok = Outcome("aws", "ok")
    warned = Outcome("gcp", "ok", alerts=[Alert(1, "gcp", "fewer_offers", "warning", "x")])
    noted = Outcome("gcp", "ok", alerts=[Alert(1, "gcp", "offers_new", "info", "x")])
    assert exit_code([ok, noted], requested=False) == 0
    assert exit_code([ok, warned], requested=False) == 3
    assert exit_code([ok, Outcome("azure", "failed")], requested=False) == 1
    assert exit_code([Outcome("gcp", "skipped")], requested=False) == 0
    assert exit_code([Outcome("gcp", "skipped")], requested=True) == 1


def test_the_jitter_rule():
    from scraper.schedule import effective_jitter

    def jitter(cron=None, every=None, requested=None):
        return make_trigger(cron, every, "UTC", requested).jitter or 0

    assert jitter(every="2s") == 0 and jitter(every="4s") == 0 and jitter(every="30min") == 0  # none below an hour
    assert jitter(every="1h") == 120 and jitter() == 120  # the default nightly cron
    assert jitter(every="4s", requested=120) == 0  # never more than a tenth of the interval (0.4 s -> 0)
    assert jitter(every="1h", requested=600) == 360
    assert jitter(cron="*/5 * * * *", requested=100) == 30
    assert effective_jitter(None, 86400) == 120 and effective_jitter(7, 86400) == 7


@pytest.mark.parametrize("cron", [None, "30 2 * * *", "*/5 * * * *"])
def test_a_cron_job_is_scheduled_not_paused(cron):
    """APScheduler 3.x adds a job with next_run_time=None paused: a nightly job that never fires."""
    from datetime import UTC, datetime

    schedule = Schedule(lambda stop: 0, make_trigger(cron, None, "UTC", 0), run_now=False, log=lambda _: None)
    schedule.scheduler.start()  # its own thread (a BackgroundScheduler): returns once that thread runs
    try:
        deadline = time.monotonic() + 10
        while schedule.scheduler.state == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        upcoming = schedule.next_run()
    finally:
        schedule.request_stop()
    expected = make_trigger(cron, None, "UTC", 0).get_next_fire_time(None, datetime.now(UTC))
    assert upcoming is not None and abs((upcoming - expected).total_seconds()) < 1


def costopt_command(*args: str) -> list[str]:
    return [sys.executable, "-c", "from cli.app import main; main()", *args]


def runs_started(db_path, provider):
    con = open_warehouse(db_path, read_only=True)
    try:
        return [r[0] for r in con.execute(
            "SELECT started_at FROM scrape_runs WHERE provider = ? ORDER BY run_id", [provider]
        ).fetchall()]  # fmt: skip
    finally:
        con.close()


@pytest.mark.slow
def test_costopt_schedule_every_fires_by_itself_without_run_now(tmp_path):
    from datetime import UTC, datetime

    db, log = tmp_path / "wh.duckdb", tmp_path / "schedule.log"
    args = ["schedule", "--every", "2s", "--jitter", "0", "--replay", str(REPO / "fixtures"), "--provider", "lambda"]
    started = datetime.now(UTC)
    with log.open("w") as out:
        proc = subprocess.Popen(costopt_command(*args, "--db", str(db)), stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        deadline = time.monotonic() + 30
        while log.read_text().count(" lambda ok ") < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    text = log.read_text()
    assert code == 0 and "Traceback" not in text
    assert "jitter up to 0s; first run at " in text and "stopped after" in text
    fired = runs_started(db, "lambda")
    assert len(fired) >= 2
    assert (fired[0] - started).total_seconds() >= 1.5  # not at start: no --run-now, the first interval elapsed
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(fired)]
    assert all(1.0 <= gap <= 4.0 for gap in gaps), gaps  # every 2 s (the first run also imports), not once a minute


@pytest.mark.slow
@pytest.mark.wallclock
def test_costopt_schedule_cron_fires_by_itself_at_its_minute(request, tmp_path):
    from datetime import UTC, datetime, timedelta

    from tests.conftest import CRON_SCHEDULE
    from tests.ops import wallclock

    schedule = request.config.stash.get(CRON_SCHEDULE, None) or wallclock.start(tmp_path)
    deadline = schedule.fires_at + timedelta(seconds=40)
    while datetime.now(UTC) < deadline and schedule.process.poll() is None:
        if " lambda ok " in schedule.log.read_text():
            break
        time.sleep(0.5)
    code = schedule.stop()
    text = schedule.log.read_text()
    assert code == 0 and "Traceback" not in text, text
    planned = f"{schedule.fires_at:%Y-%m-%dT%H:%M:%SZ}"
    assert f"cron '{schedule.expression}' (UTC), jitter up to 0s; first run at {planned}" in text
    [fired] = runs_started(schedule.db, "lambda")
    assert schedule.fires_at <= fired < schedule.fires_at + timedelta(seconds=10)


def test_the_webhook_url_is_never_shown():
    from scraper.notify import check_url, post

    secret = "http://127.0.0.1:1/services/T000/B000/XXXXsecretXXXX"
    problem = post(secret, {"event": "x"})  # nothing listens on port 1
    assert problem is not None and problem.startswith("notify 127.0.0.1:1: ConnectError")
    assert "XXXXsecretXXXX" not in problem and "/services" not in problem
    for bad in ("hooks.example.com/x", "ftp://hooks.example.com/x", "https://"):
        with pytest.raises(UsageError, match=r"^--notify needs an http:// or https:// webhook URL$"):
            check_url(bad)


def test_schedule_refuses_bad_settings_when_it_starts_not_at_3am(tmp_path):
    env = {**os.environ, "COSTOPT_GUARD_MIN_SHARE_AWS": "most"}
    out = subprocess.run(
        costopt_command("schedule", "--db", str(tmp_path / "wh.duckdb")),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (
        "costopt: error: COSTOPT_GUARD_MIN_SHARE_AWS='most': give a share between 0 and 1, e.g. 0.5 "
        "(under half is suspect)\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "code", "err"), [(signal.SIGTERM, 0, ""), (signal.SIGINT, 130, "costopt: interrupted\n")]
)
def test_a_stop_while_idle_says_so_and_ctrl_c_exits_130(tmp_path, signum, code, err):
    """SIGTERM is a service manager's normal stop (exit 0); Ctrl-C is a person's interruption and exits
    130 as every other command does. Idle, nothing is loading, and the log says so rather than claim a
    load is being finished."""
    args = ["schedule", "--every", "1h", "--replay", str(REPO / "fixtures"), "--db", str(tmp_path / "wh.duckdb")]
    proc = subprocess.Popen(costopt_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert "first run at" in proc.stdout.readline()  # started and waiting for its first run
        proc.send_signal(signum)
        out, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    name = signal.Signals(signum).name
    assert (proc.returncode, stderr) == (code, err)
    assert f"{name}: no run in progress, exiting" in out and "stopped after 0 run(s)" in out


@pytest.mark.parametrize(
    ("field", "days"),
    [("1", "mon"), ("1-5", "mon,tue,wed,thu,fri"), ("0", "sun"), ("7", "sun"), ("0,6", "sun,sat"),
     ("sat-sun", "sun,sat"), ("5-7", "sun,fri,sat"), ("*/2", "sun,tue,thu,sat"), ("0-6", "*"), ("MON", "mon")],
)  # fmt: skip
def test_cron_weekdays_mean_what_crontab_means(field, days):
    """APScheduler 3 reads crontab weekday numbers as 0 = Monday: '0 3 * * 1' fired on Tuesdays."""
    from scraper.schedule import crontab_weekdays

    assert crontab_weekdays(field) == days


def test_a_monday_cron_fires_on_monday():
    from datetime import UTC, datetime

    trigger = make_trigger("0 3 * * 1", None, "UTC", 0)
    sunday = datetime(2026, 11, 29, 4, tzinfo=UTC)
    first = trigger.get_next_fire_time(None, sunday)
    assert first == datetime(2026, 11, 30, 3, tzinfo=UTC) and first.strftime("%a") == "Mon"
    with pytest.raises(UsageError, match="unknown weekday"):
        make_trigger("0 3 * * 8", None, "UTC", 0)


def _firings(trigger, start, count):  # type: ignore[no-untyped-def]
    """The next ``count`` firings in UTC, to the minute (the jitter, at most 120 s here, taken off)."""
    from datetime import UTC, timedelta

    out, previous = [], None
    for _ in range(count):
        previous = trigger.get_next_fire_time(previous, previous or start)
        on_time = previous.astimezone(UTC) - timedelta(seconds=(previous.minute % 30) * 60 + previous.second)
        out.append(on_time.strftime("%m-%d %H:%M"))
    return out


@pytest.mark.parametrize("jitter", [0, 120])
def test_a_nightly_cron_fires_once_on_the_night_the_clocks_go_back(jitter):
    """APScheduler fired '30 2 * * *' in Europe/Berlin at 02:30 summer time and again at 02:30 winter time."""
    from datetime import UTC, datetime

    trigger = make_trigger("30 2 * * *", None, "Europe/Berlin", jitter)
    autumn = _firings(trigger, datetime(2027, 10, 29, tzinfo=UTC), 4)
    assert autumn == ["10-29 00:30", "10-30 00:30", "10-31 00:30", "11-01 01:30"]  # 31 Oct: once, at 02:30 CEST
    spring = _firings(trigger, datetime(2027, 3, 26, tzinfo=UTC), 4)
    assert spring == ["03-26 01:30", "03-27 01:30", "03-28 01:30", "03-29 00:30"]
    hourly = make_trigger("30 * * * *", None, "Europe/Berlin", 0)  # an hourly job runs in both repeated hours
    assert _firings(hourly, datetime(2027, 10, 30, 23, tzinfo=UTC), 4) == [
        "10-30 23:30", "10-31 00:30", "10-31 01:30", "10-31 02:30"]  # fmt: skip


def _started(args):  # type: ignore[no-untyped-def]
    return subprocess.Popen(costopt_command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


@pytest.mark.slow
def test_a_second_schedule_on_the_same_warehouse_is_refused(tmp_path):
    db = str(tmp_path / "wh.duckdb")
    args = ["schedule", "--every", "1h", "--replay", str(REPO / "fixtures"), "--db", db]
    first = _started(args)
    try:
        assert "first run at" in first.stdout.readline()
        second = subprocess.run(costopt_command(*args), capture_output=True, text=True, cwd=REPO, timeout=60)
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr == (
        f"costopt: error: another costopt schedule (PID {first.pid}) already refreshes {db}; stop it first\n"
    )
    again = _started(args)
    try:
        assert "first run at" in again.stdout.readline()  # the lock went with the process: never stale
    finally:
        again.send_signal(signal.SIGTERM)
        again.communicate(timeout=60)


def test_a_file_that_is_not_a_warehouse_is_refused_at_start(tmp_path):
    db = tmp_path / "notes.duckdb"
    db.write_text("not a database\n")
    out = subprocess.run(costopt_command("schedule", "--db", str(db)), capture_output=True, text=True, cwd=REPO,
                         timeout=60)  # fmt: skip
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == f"costopt: error: {db} is not a costopt warehouse (not a valid DuckDB file); left untouched\n"


def test_a_run_that_found_the_warehouse_busy_is_tried_again():
    from warehouse.errors import WarehouseLocked

    calls = []

    def job(stop):
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise WarehouseLocked("wh.duckdb is busy: held by PID 1 for more than 30s")
        return 0

    lines = []
    schedule = Schedule(job, make_trigger(None, "1h", "UTC", 0), run_now=True, log=lines.append)
    schedule.retry_seconds = 0.5
    schedule.scheduler.start()  # its own thread (a BackgroundScheduler): returns once that thread runs
    try:
        deadline = time.monotonic() + 20
        while len(calls) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        schedule.request_stop()
    assert len(calls) == 2 and 0.4 <= calls[1] - calls[0] <= 5
    assert any("retry 1 of 3" in line and "the warehouse was busy" in line for line in lines)
    assert schedule.retries == 0  # the retry succeeded


STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")


def test_every_line_of_the_job_log_starts_with_its_utc_time(db_path, tmp_path):
    """The run lines had a time, the prune and notification lines none: a night's log read by time lost them."""
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    broken = record_dir(tmp_path / "b", [], body="{oops")
    lines: list[str] = []
    try:
        run_job(db_path, ["fake"], replay=broken, notify=f"http://127.0.0.1:{server.server_port}/h", keep_raw_days=7,
                log=lines.append)  # fmt: skip
    finally:
        server.shutdown()
    told = [STAMP.sub("", line, count=1) for line in lines]
    assert [line.split(" ", 1)[0] for line in told] == ["fake", "pruned", "notified"]
    assert told[1] == "pruned 0 raw payload file(s), 0.0 MB, older than 7 days"
    assert all(STAMP.match(line) for line in lines), lines


def test_a_whole_run_failure_reaches_the_webhook(tmp_path):
    """A run that fails before any provider is loaded leaves nothing in `costopt runs`: the webhook must say so."""
    from warehouse.errors import WarehouseError

    db = tmp_path / "notes.duckdb"
    db.write_text("not a database\n")
    _Hook.bodies.clear()
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    lines = []
    try:
        with pytest.raises(WarehouseError, match="not a costopt warehouse"):
            run_job(db, ["fake"], replay=record_dir(tmp_path, ITEMS), notify=f"http://127.0.0.1:{server.server_port}/h",
                    log=lines.append)  # fmt: skip
    finally:
        server.shutdown()
    [body] = _Hook.bodies
    assert body["exit_code"] == 1 and body["ok"] == []
    assert body["failures"] == [
        {"provider": "all", "status": "failed", "error": f"{db} is not a costopt warehouse (not a valid DuckDB file); "
         "left untouched"}]  # fmt: skip
    assert [line.split(" ", 1)[1] for line in lines] == [f"notified 127.0.0.1:{server.server_port}"]
    assert all(STAMP.match(line) for line in lines)


def test_the_log_survives_a_reader_of_stdout_that_went_away(monkeypatch, capsys):
    from scraper.schedule import _resilient_log

    class Gone:
        def write(self, _text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Gone())
    log = _resilient_log()
    log("2026-11-29T03:00:00Z aws ok")
    log("2026-11-29T03:00:01Z pruned 0 raw payload file(s)")
    assert capsys.readouterr().err == "2026-11-29T03:00:00Z aws ok\n2026-11-29T03:00:01Z pruned 0 raw payload file(s)\n"


def test_a_timezone_with_every_is_refused_not_ignored():
    with pytest.raises(UsageError, match="--timezone applies to --cron; --every counts its interval from the start"):
        make_trigger(None, "6h", "Europe/Berlin", 0)
    assert make_trigger(None, "6h", "UTC", 0).interval.total_seconds() == 6 * 3600


@pytest.mark.slow
def test_a_warehouse_an_older_costopt_wrote_is_scheduled_not_refused(tmp_path):
    """The start's check opened the warehouse read-only, which refuses an older schema ("needs migrating"): every
    warehouse in use when a migration ships would have been refused. The first run migrates it."""
    from warehouse.migrations import LATEST

    db = tmp_path / "wh.duckdb"
    con = open_warehouse(db)
    con.execute("DELETE FROM schema_migrations WHERE version = ?", [LATEST])  # as the previous costopt left it
    con.close()
    proc = _started(["schedule", "--every", "1h", "--replay", str(REPO / "fixtures"), "--db", str(db)])
    try:
        assert "first run at" in proc.stdout.readline()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and err == ""
