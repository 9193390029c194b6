"""A real ``costopt schedule --cron`` that waits for the wall clock, started early so the wait overlaps the suite.

Cron has minute resolution: an expression "a few seconds ahead" means the next minute boundary, up
to a minute away. ``tests/conftest.py`` starts this schedule when the session's tests are collected
(if the cron test is among them) and runs the cron test last, so the suite's other tests fill the
wait instead of a sleep.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
LEAD_SECONDS = 8  # the process needs a few seconds to start before its cron minute


@dataclass
class CronSchedule:
    process: subprocess.Popen[bytes]
    fires_at: datetime
    expression: str
    db: Path
    log: Path
    scratch: Path | None = None  # a directory start() made, removed at session end

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return -9

    def remove(self) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)


def start(workdir: Path | None = None) -> CronSchedule:
    """``costopt schedule --cron 'M H * * *'`` for the next minute at least LEAD_SECONDS away, no --run-now."""
    scratch = None if workdir else Path(tempfile.mkdtemp(prefix="costopt-cron-"))
    workdir = workdir or scratch
    assert workdir is not None
    now = datetime.now(UTC)
    fires_at = (now + timedelta(minutes=1)).replace(second=0, microsecond=0)
    if (fires_at - now).total_seconds() < LEAD_SECONDS:
        fires_at += timedelta(minutes=1)
    expression = f"{fires_at.minute} {fires_at.hour} * * *"
    db, log = workdir / "cron.duckdb", workdir / "cron.log"
    command = [sys.executable, "-c", "from cli.app import main; main()", "schedule", "--cron", expression]
    command += ["--timezone", "UTC", "--jitter", "0", "--replay", str(REPO / "fixtures"), "--provider", "lambda"]
    env = {**os.environ, "COSTOPT_DATA_DIR": str(workdir / "data"), "COSTOPT_DB": str(db)}
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
    return CronSchedule(process, fires_at, expression, db, log, scratch)
