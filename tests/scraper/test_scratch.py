"""Scratch directories: a live run's is kept, a killed run's is swept by the next, nothing else is touched."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from scraper.scratch import LOCK_NAME, owned_scratch, sweep_orphans
from tests.conftest import REPO

HOLDER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from scraper.scratch import owned_scratch
    with owned_scratch("costopt-fetch-", {root!r}) as path:
        print(path, flush=True)
        time.sleep(120)
    """
)


def test_a_killed_owners_directory_goes_and_a_live_ones_stays(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(repo=str(REPO), root=str(tmp_path))], stdout=subprocess.PIPE, text=True
    )
    try:
        theirs = tmp_path / os.path.basename(holder.stdout.readline().strip())
        assert theirs.is_dir() and (theirs / LOCK_NAME).read_text() == f"PID {holder.pid}\n"
        with owned_scratch("costopt-fetch-", tmp_path) as mine:
            assert sweep_orphans(tmp_path, "costopt-fetch-") == []  # both owners alive: another process, and this one
            assert theirs.is_dir() and mine.is_dir()
            holder.send_signal(signal.SIGKILL)  # no clean-up runs; the kernel drops the lock
            holder.wait(timeout=30)
            assert theirs.is_dir()
            assert sweep_orphans(tmp_path, "costopt-fetch-") == [theirs]
            assert not theirs.exists() and mine.is_dir()
        assert not mine.exists()  # the block's own way out removes it
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_directory_without_a_lock_goes_only_once_a_day_old(tmp_path):
    fresh, stale = tmp_path / "costopt-fetch-fresh", tmp_path / "costopt-fetch-stale"
    other, plain_file = tmp_path / "someone-elses-stale", tmp_path / "costopt-fetch-a-file"
    for directory in (fresh, stale, other):
        directory.mkdir()
        (directory / "aws.json").write_text("{}")
    plain_file.write_text("not a directory")
    two_days_ago = time.time() - 2 * 86400
    for path in (stale, other, plain_file):
        os.utime(path, (two_days_ago, two_days_ago))
    assert sweep_orphans(tmp_path, "costopt-fetch-") == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "costopt-fetch-a-file",
        "costopt-fetch-fresh",
        "someone-elses-stale",
    ]


def test_a_sweep_of_a_missing_or_unreadable_parent_removes_nothing_and_does_not_raise(tmp_path):
    assert sweep_orphans(tmp_path / "absent", "costopt-fetch-") == []
    locked = tmp_path / "costopt-fetch-x"
    locked.mkdir()
    (locked / LOCK_NAME).mkdir()  # a lock path that cannot be opened as a file
    assert sweep_orphans(tmp_path, "costopt-fetch-") == [] and locked.is_dir()
