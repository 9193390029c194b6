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

import contextlib
import itertools
import signal
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from warehouse.errors import CostoptError, UsageError

MISFIRE_GRACE_SECONDS = 6 * 3600
RETRY_SECONDS, RETRIES = 600, 3  # a run that found the warehouse busy: tried again 10 minutes later, 3 times at most
STOP_POLL_SECONDS = 0.5  # how soon a stop is seen, whichever thread the kernel handed the signal to
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
    from apscheduler.triggers.interval import IntervalTrigger

    try:
        import zoneinfo

        tz = zoneinfo.ZoneInfo(timezone)
    except Exception:
        raise UsageError(f"unknown --timezone {timezone!r}; use an IANA name such as UTC or Europe/Berlin") from None
    if jitter is not None and jitter < 0:
        raise UsageError("--jitter must be 0 or more seconds")
    if every and timezone != "UTC":  # it was silently ignored: an interval counts from the start, in no zone
        raise UsageError("--timezone applies to --cron; --every counts its interval from the start")
    if every:
        trigger = IntervalTrigger(seconds=parse_every(every).total_seconds(), timezone=tz)
    else:
        expression = cron or DEFAULT_CRON
        fields = expression.split()
        if len(fields) != 5:
            raise UsageError(f"--cron {expression!r} needs 5 fields: minute hour day month weekday, e.g. '0 3 * * *'")
        try:
            standard = " ".join([*fields[:4], crontab_weekdays(fields[4])])
            trigger = _wall_clock_cron().from_crontab(standard, timezone=tz)
        except ValueError as exc:
            raise UsageError(f"--cron {expression!r}: {exc}") from None
        if trigger.get_next_fire_time(None, datetime.now(UTC)) is None:
            raise UsageError(f"--cron {expression!r} never fires")
    trigger.jitter = effective_jitter(jitter, shortest_gap(trigger)) or None
    return trigger


_CRON_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab's weekday numbers: 0 (and 7) is Sunday


def crontab_weekdays(field: str) -> str:
    """crontab's weekday field (0 or 7 Sunday, 1 Monday, names; lists, ranges, steps) as APScheduler's day names.

    APScheduler 3's ``from_crontab`` reads the weekday numbers as its own (0 = Monday), so ``0 3 * * 1`` fired on
    Tuesdays and ``1-5`` on Tuesday to Saturday; names mean the same to both, so the field is written in names.
    """
    if field == "*":
        return field
    days: set[int] = set()
    for part in field.lower().split(","):
        body, slash, step_text = part.partition("/")
        step = int(step_text) if slash else 1  # ValueError: reported as a bad --cron
        if step < 1:
            raise ValueError(f"weekday step {step_text!r} must be 1 or more")
        if body == "*":
            low, high = 0, 6
        elif "-" in body:
            first, last = body.split("-", 1)
            low, high = _weekday(first), _weekday(last)
            high = 7 if high == 0 and low > 0 else high  # sat-sun, 5-0: Sunday ends the week as 7
        else:
            low = _weekday(body)
            high = 6 if slash else low
        if low > high:
            raise ValueError(f"weekday range {body!r} runs backwards")
        days.update(day % 7 for day in range(low, high + 1, step))
    return "*" if len(days) == 7 else ",".join(_CRON_DAYS[day] for day in sorted(days))


def _weekday(text: str) -> int:
    if text.isdigit() and int(text) <= 7:
        return int(text)
    if text[:3] in _CRON_DAYS:
        return _CRON_DAYS.index(text[:3])
    raise ValueError(f"unknown weekday {text!r}: use 0-7 (0 and 7 are Sunday) or sun-sat")


def _wall_clock_cron() -> Any:
    """CronTrigger that fires once at a wall-clock time the time zone repeats (the night clocks go back).

    APScheduler 3 fires ``30 2 * * *`` in Europe/Berlin twice that night, at 02:30 summer time and again at 02:30
    winter time an hour later; cron runs a job at a fixed hour once. With a fixed hour (not ``*`` or ``*/n``), a
    firing at the previous firing's wall-clock time (to within the jitter) is skipped; an hourly job still runs
    in both of the repeated hours, as cron's does.
    """
    from apscheduler.triggers.cron import CronTrigger

    def wall(moment: datetime, zone: Any) -> datetime:
        return moment.astimezone(zone).replace(tzinfo=None)  # naive: the fold (which 02:30) is ignored

    class WallClockCron(CronTrigger):  # type: ignore[misc]
        def _apply_jitter(self, next_fire_time: datetime | None, jitter: Any, now: datetime) -> datetime | None:
            return next_fire_time  # applied once below, after the repeat check: APScheduler's own, inside its
            # wall-clock arithmetic, could give back a time before the previous firing on the night of the fold

        def get_next_fire_time(self, previous_fire_time: datetime | None, now: datetime) -> datetime | None:
            upcoming = self._once(previous_fire_time, now)
            return CronTrigger._apply_jitter(self, upcoming, self.jitter, now)

        def _once(self, previous_fire_time: datetime | None, now: datetime) -> datetime | None:
            upcoming = super().get_next_fire_time(previous_fire_time, now)
            hour = str(self.fields[self.FIELD_NAMES.index("hour")])
            if previous_fire_time is None or hour.startswith("*"):
                return upcoming
            slack = timedelta(seconds=self.jitter or 0)
            before, after = wall(previous_fire_time, self.timezone), previous_fire_time.astimezone(UTC)
            for _ in range(1000):  # bounded: a repeated hour holds at most 60 x 60 firings of a fixed-hour cron
                # in UTC: two aware times in one ZoneInfo subtract as wall-clock times, and 02:30 - 02:30 is 0
                # across the fold
                if upcoming is None or (
                    upcoming.astimezone(UTC) - after > slack and abs(wall(upcoming, self.timezone) - before) > slack
                ):
                    return upcoming
                upcoming = super().get_next_fire_time(None, upcoming.astimezone(UTC) + timedelta(seconds=1))
            return upcoming

    return WallClockCron


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
    """A BackgroundScheduler around the refresh job, with a clean stop."""

    def __init__(
        self, job: Callable[[threading.Event], int], trigger: Any, *, run_now: bool, log: Callable[[str], None]
    ) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.job = job
        self.log = log
        self.stop = threading.Event()
        self.idle = threading.Event()
        self.idle.set()
        self.last_code = 0
        self.runs = 0
        self.signal: int | None = None
        self.signalled = 0  # the signal serve() is to act on
        self.retries = 0
        self.retry_seconds = RETRY_SECONDS
        self.scheduler = BackgroundScheduler(timezone=UTC)
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
        from scraper.refresh import Cancelled

        if self.stop.is_set():
            return
        self.idle.clear()
        try:
            self.last_code = self.job(self.stop)
            self.runs += 1
        except Exception as exc:  # a crashed run is logged; the schedule goes on
            reason = exc.one_line() if isinstance(exc, CostoptError) else f"{type(exc).__name__}: {exc}"
            stopped = self.stop.is_set() and isinstance(exc, Cancelled)  # a stop asked for, not a failure
            self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} run {'stopped' if stopped else 'failed'}: {reason}")
            self.last_code = 1
            self.runs += 1
            self._retry_if_busy(exc)
        else:
            self.retries = 0
        finally:
            self.idle.set()
        upcoming = self.next_run()
        if upcoming is not None and not self.stop.is_set():
            when = upcoming.astimezone(UTC)
            self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} next run at {when:%Y-%m-%dT%H:%M:%SZ}")

    def _retry_if_busy(self, exc: Exception) -> None:
        """A run that found the warehouse busy (a long read held it past the wait) is tried again a little later,
        up to RETRIES times, unless the next regular run comes first: the night's prices are not given up on."""
        from warehouse.errors import WarehouseLocked

        if not isinstance(exc, WarehouseLocked) or self.retries >= RETRIES or self.stop.is_set():
            return
        when = datetime.now(UTC) + timedelta(seconds=self.retry_seconds)
        upcoming = self.next_run()
        if upcoming is not None and upcoming <= when + timedelta(seconds=self.retry_seconds):
            return
        self.retries += 1
        self.scheduler.add_job(self._run, "date", run_date=when, id="retry", name="costopt refresh (retry)",
                               replace_existing=True, misfire_grace_time=MISFIRE_GRACE_SECONDS)  # fmt: skip
        stamp = f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}"
        self.log(f"{stamp} retry {self.retries} of {RETRIES} at {when:%Y-%m-%dT%H:%M:%SZ}: the warehouse was busy")

    def request_stop(self, signum: int | None = None, _frame: object = None) -> None:
        """Stop: no new run starts, a run still fetching drops its downloads, a load in progress commits."""
        from apscheduler.schedulers import SchedulerNotRunningError

        name = signal.Signals(signum).name if signum else "stop"
        self.signal = self.signal or signum
        doing = "no run in progress, exiting" if self.idle.is_set() else "finishing the load in progress, then exiting"
        self.log(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {name}: {doing}")
        self.stop.set()
        with contextlib.suppress(SchedulerNotRunningError):
            self.scheduler.shutdown(wait=False)

    def _on_signal(self, signum: int, _frame: object = None) -> None:
        # only a note: the handler runs in the main thread between two bytecodes, possibly inside the lock of an
        # event it would set (a deadlock, seen once in 16 SIGTERMs while the scheduler waited); serve() acts on it
        self.signalled = self.signalled or signum

    def next_run(self) -> datetime | None:
        job = self.scheduler.get_job("refresh")
        return getattr(job, "next_run_time", None)

    def serve(self, announce: str = "") -> int:
        # the handlers first, then the line that says the schedule has started: a stop that follows that
        # line is always this clean stop, never the default handler's abrupt one
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        if announce:
            self.log(announce)
        self.scheduler.start()  # the scheduler's own thread; this one waits for a signal
        # in short sleeps: the kernel may hand a SIGTERM to another thread of the process (the Ctrl-C watcher's, a
        # job's, DuckDB's), and Python runs the handler only when the main thread next runs bytecode. Blocked in
        # the scheduler's wait until the next firing (an hour, a day), the stop was not seen until then.
        while not self.signalled and not self.stop.is_set():
            time.sleep(STOP_POLL_SECONDS)
        if self.signalled:
            self.request_stop(self.signalled)
        while not self.idle.wait(STOP_POLL_SECONDS):  # a run in progress finishes its load
            pass
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

    log = _resilient_log()

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
    _check_warehouse(db_path)
    lock = _hold_schedule_lock(db_path)
    schedule = Schedule(job, trigger, run_now=run_now, log=log)
    what = f"every {every}" if every else f"cron '{cron or DEFAULT_CRON}' ({timezone})"
    now = datetime.now(UTC)
    planned = make_trigger(cron, every, timezone, 0).get_next_fire_time(None, now)  # without the random part
    first = "now" if run_now else f"at {planned.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"
    try:
        return schedule.serve(
            f"{now:%Y-%m-%dT%H:%M:%SZ} costopt schedule: refreshing {db_path} {what}, "
            f"jitter up to {trigger.jitter or 0}s; first run {first}"
        )
    finally:
        lock.close()


def _resilient_log() -> Callable[[str], None]:
    """A log line to stdout that never stops the schedule: a reader of stdout that went away (a closed pipe, a log
    collector restarting) raised BrokenPipeError in every run, which skipped its pruning, publishing and
    notification. The line then goes to stderr, or nowhere."""
    streams = [sys.stdout, sys.stderr]

    def log(line: str) -> None:
        while streams:
            try:
                streams[0].write(line + "\n")
                streams[0].flush()
                return
            except (OSError, ValueError):
                streams.pop(0)

    return log


def _check_warehouse(db_path: Path) -> None:
    """Refuse at start, not at every run for months, a --db that is not a costopt warehouse. A missing file is
    fine (the first run creates it); a busy one too (a reader may hold it for a while), and one an older costopt
    wrote (the first run migrates it)."""
    from warehouse.db import open_warehouse
    from warehouse.errors import NeedsMigrating, WarehouseLocked

    if not db_path.exists():
        return
    with contextlib.suppress(WarehouseLocked, NeedsMigrating):
        open_warehouse(db_path, read_only=True, wait_seconds=0).close()


def _hold_schedule_lock(db_path: Path) -> Any:
    """One schedule per warehouse: a second one doubled every run, and their raw-payload writes collided. The lock
    is an advisory lock on ``<db>.schedule.lock``, released by the kernel when the process ends (kill -9 too), so
    it never goes stale."""
    import fcntl
    import os

    path = db_path.with_name(db_path.name + ".schedule.lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise UsageError(f"another costopt schedule ({holder}) already refreshes {db_path}; stop it first") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"PID {os.getpid()}")
    handle.flush()
    return handle
