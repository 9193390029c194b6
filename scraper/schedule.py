"""``costopt schedule``: the long-running nightly refresh.

The scheduler only triggers: each run calls the same job as ``costopt refresh``. Runs coalesce and
never overlap (``max_instances=1``); a run missed while the machine slept still runs within a wide
grace period; a little jitter keeps many installs from hitting the providers at the same second.
SIGTERM or SIGINT lets a load in progress commit (each provider is one transaction) and loads nothing
more. SIGTERM is how a service manager stops a service, so it exits 0; SIGINT is a person's Ctrl-C,
which exits 130 as every other command does, so a shell or a wrapper script can tell it was interrupted.

Jitter rule: a random delay of up to ``--jitter`` seconds, never more than a tenth of the time
between two firings; by default 120 s when runs are an hour or more apart and none below that, so
``--every 2s`` fires every 2 s.

The job is added without ``next_run_time`` unless ``--run-now``: in APScheduler 3.x passing
``next_run_time=None`` adds the job *paused*, and a paused nightly job never fires.
"""

from __future__ import annotations

import itertools
import signal
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from warehouse.errors import CostoptError, UsageError

MISFIRE_GRACE_SECONDS = 6 * 3600
INTERRUPTED = 130  # a Ctrl-C, as for every other command (128 + SIGINT)
JITTER_SECONDS = 120  # default jitter when firings are at least JITTER_FROM_SECONDS apart
JITTER_FROM_SECONDS = 3600
JITTER_MAX_SHARE = 0.1  # jitter never exceeds this share of the time between two firings
DEFAULT_CRON = "0 3 * * *"


def parse_every(text: str) -> timedelta:
    """``--every``: costopt's one duration grammar (``warehouse.durations``): ``2s``, ``30min``, ``6h``, ``1d``."""
    from warehouse.durations import parse_duration

    return parse_duration(text, what="--every")


def make_trigger(cron: str | None, every: str | None, timezone: str, jitter: int | None = None) -> Any:
    """The APScheduler trigger for ``--cron`` or ``--every``, with the jitter rule applied (see the module doc)."""
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    try:
        import zoneinfo

        tz = zoneinfo.ZoneInfo(timezone)
    except Exception:
        raise UsageError(f"unknown --timezone {timezone!r}; use an IANA name such as UTC or Europe/Berlin") from None
    if jitter is not None and jitter < 0:
        raise UsageError("--jitter must be 0 or more seconds")
    if every:
        trigger = IntervalTrigger(seconds=parse_every(every).total_seconds(), timezone=tz)
    else:
        expression = cron or DEFAULT_CRON
        fields = expression.split()
        if len(fields) != 5:
            raise UsageError(f"--cron {expression!r} needs 5 fields: minute hour day month weekday, e.g. '0 3 * * *'")
        try:
            trigger = CronTrigger.from_crontab(expression, timezone=tz)
        except ValueError as exc:
            raise UsageError(f"--cron {expression!r}: {exc}") from None
        if trigger.get_next_fire_time(None, datetime.now(UTC)) is None:
            raise UsageError(f"--cron {expression!r} never fires")
    trigger.jitter = effective_jitter(jitter, shortest_gap(trigger)) or None
    return trigger


def shortest_gap(trigger: Any, firings: int = 12) -> float:
    """Seconds between the closest two of the trigger's next firings (its interval, for --every)."""
    interval = getattr(trigger, "interval", None)
    if isinstance(interval, timedelta):
        return interval.total_seconds()
    times: list[datetime] = []
    previous = None
    now = datetime.now(UTC)
    for _ in range(firings):
        nxt = trigger.get_next_fire_time(previous, previous or now)
        if nxt is None:
            break
        times.append(nxt)
        previous = nxt
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
    return min(gaps) if gaps else float(JITTER_FROM_SECONDS)


def effective_jitter(requested: int | None, gap_seconds: float) -> int:
    """The jitter rule: default 120 s for runs >= 1 h apart, else 0; never over a tenth of the gap."""
    default = JITTER_SECONDS if gap_seconds >= JITTER_FROM_SECONDS else 0
    wanted = default if requested is None else requested
    return int(min(wanted, gap_seconds * JITTER_MAX_SHARE))


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
        self.signal: int | None = None
        self.scheduler = BlockingScheduler(timezone=UTC)
        # next_run_time=None would add the job paused (APScheduler 3.x): leave it out unless running now
        first: dict[str, Any] = {"next_run_time": datetime.now(UTC)} if run_now else {}
        self.scheduler.add_job(
            self._run,
            trigger,
            id="refresh",
            name="costopt refresh",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=MISFIRE_GRACE_SECONDS,
            **first,
        )

    def _run(self) -> None:
        if self.stop.is_set():
            return
        self.idle.clear()
        try:
            self.last_code = self.job(self.stop)
            self.runs += 1
        except Exception as exc:  # a crashed run is logged; the schedule goes on
            reason = exc.one_line() if isinstance(exc, CostoptError) else f"{type(exc).__name__}: {exc}"
            self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} run failed: {reason}")
            self.last_code = 1
            self.runs += 1
        finally:
            self.idle.set()
        upcoming = self.next_run()
        if upcoming is not None and not self.stop.is_set():
            when = upcoming.astimezone(UTC)
            self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} next run at {when:%Y-%m-%dT%H:%M:%SZ}")

    def request_stop(self, signum: int | None = None, _frame: object = None) -> None:
        name = signal.Signals(signum).name if signum else "stop"
        self.signal = self.signal or signum
        doing = "no run in progress, exiting" if self.idle.is_set() else "finishing the load in progress, then exiting"
        self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {name}: {doing}")
        self.stop.set()
        if self.scheduler.running:  # a signal before the scheduler started: serve() does not start it
            self.scheduler.shutdown(wait=False)

    def next_run(self) -> datetime | None:
        job = self.scheduler.get_job("refresh")
        return getattr(job, "next_run_time", None)

    def serve(self, announce: str = "") -> int:
        # the handlers first, then the line that says the schedule has started: a stop that follows that
        # line is always this clean stop, never the default handler's abrupt one
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)
        if announce:
            self.log(announce)
        if not self.stop.is_set():
            self.scheduler.start()  # blocks until request_stop
        self.idle.wait()
        self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} stopped after {self.runs} run(s)")
        return INTERRUPTED if self.signal == signal.SIGINT else 0


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
    jitter: int | None = None,
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

    trigger = make_trigger(cron, every, timezone, jitter)
    schedule = Schedule(job, trigger, run_now=run_now, log=log)
    what = f"every {every}" if every else f"cron '{cron or DEFAULT_CRON}' ({timezone})"
    now = datetime.now(UTC)
    planned = make_trigger(cron, every, timezone, 0).get_next_fire_time(None, now)  # without the random part
    first = "now" if run_now else f"at {planned.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    return schedule.serve(
        f"{now:%Y-%m-%dT%H:%M:%SZ} costopt schedule: refreshing {db_path} {what}, "
        f"jitter up to {trigger.jitter or 0}s; first run {first}"
    )
