"""``costopt schedule``: the long-running nightly refresh.

The scheduler only triggers: each run calls the same job as ``costopt refresh``. Runs coalesce and
never overlap (``max_instances=1``); a run missed while the machine slept still runs within a wide
grace period; a little jitter keeps many installs from hitting the providers at the same second.
SIGTERM or SIGINT lets a load in progress commit (each provider is one transaction), loads nothing
more, and exits 0.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from warehouse.errors import UsageError

MISFIRE_GRACE_SECONDS = 6 * 3600
JITTER_SECONDS = 120


def parse_every(text: str) -> timedelta:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*", text.lower())
    if not match:
        raise UsageError(f"cannot read --every {text!r}: use a number with s, m, h or d, e.g. 6h or 30m")
    value = float(match.group(1))
    if value <= 0:
        raise UsageError("--every must be positive")
    return timedelta(seconds=value * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)])


def make_trigger(cron: str | None, every: str | None, timezone: str, jitter: int) -> Any:
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    try:
        import zoneinfo

        tz = zoneinfo.ZoneInfo(timezone)
    except Exception:
        raise UsageError(f"unknown --timezone {timezone!r}; use an IANA name such as UTC or Europe/Berlin") from None
    if every:
        return IntervalTrigger(seconds=parse_every(every).total_seconds(), timezone=tz, jitter=jitter or None)
    expression = cron or "0 3 * * *"
    fields = expression.split()
    if len(fields) != 5:
        raise UsageError(f"--cron {expression!r} needs 5 fields: minute hour day month weekday, e.g. '0 3 * * *'")
    try:
        trigger = CronTrigger.from_crontab(expression, timezone=tz)
    except ValueError as exc:
        raise UsageError(f"--cron {expression!r}: {exc}") from None
    trigger.jitter = jitter or None
    return trigger


class Schedule:
    """A BlockingScheduler around the refresh job, with a clean stop."""

    def __init__(
        self, job: Callable[[threading.Event], int], trigger: Any, *, run_now: bool, log: Callable[[str], None]
    ) -> None:
        from apscheduler.schedulers.blocking import BlockingScheduler

        self.job = job
        self.log = log
        self.stop = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.last_code = 0
        self.runs = 0
        self.scheduler = BlockingScheduler(timezone=UTC)
        self.scheduler.add_job(
            self._run,
            trigger,
            id="refresh",
            name="costopt refresh",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=MISFIRE_GRACE_SECONDS,
            next_run_time=datetime.now(UTC) if run_now else None,
        )

    def _run(self) -> None:
        if self.stop.is_set():
            return
        self.idle.clear()
        try:
            self.last_code = self.job(self.stop)
            self.runs += 1
        except Exception as exc:  # a crashed run is logged; the schedule goes on
            self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} run failed: {type(exc).__name__}: {exc}")
            self.last_code = 1
        finally:
            self.idle.set()

    def request_stop(self, signum: int | None = None, _frame: object = None) -> None:
        name = signal.Signals(signum).name if signum else "stop"
        self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {name}: finishing the load in progress, then exiting")
        self.stop.set()
        self.scheduler.shutdown(wait=False)

    def next_run(self) -> datetime | None:
        job = self.scheduler.get_job("refresh")
        return getattr(job, "next_run_time", None)

    def serve(self) -> int:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        self.scheduler.start()  # blocks until request_stop
        self.idle.wait()
        self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} stopped after {self.runs} run(s)")
        return 0


def serve(
    db_path: Path,
    *,
    cron: str | None,
    every: str | None,
    timezone: str,
    run_now: bool,
    replay: Path | None,
    providers: list[str] | None,
    notify: str | None,
    keep_raw_days: int | None,
    jitter: int = JITTER_SECONDS,
    publish: Callable[[Callable[[str], None]], str | None] | None = None,
) -> int:
    from scraper.job import run_job

    def log(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    def job(stop: threading.Event) -> int:
        _, code = run_job(
            db_path,
            providers,
            replay=replay,
            notify=notify,
            keep_raw_days=keep_raw_days,
            cancel=stop,
            log=log,
            publish=publish,
        )
        return code

    schedule = Schedule(job, make_trigger(cron, every, timezone, jitter), run_now=run_now, log=log)
    what = f"every {every}" if every else f"cron '{cron or '0 3 * * *'}' ({timezone})"
    log(
        f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} costopt schedule: refreshing {db_path} {what}"
        + (", first run now" if run_now else "")
    )
    return schedule.serve()
