"""Scratch directories that outlive a killed process only until the next run.

A refresh downloads into a fresh directory under the system's temporary one (AWS's price files run to gigabytes) and
removes it on every way out it can see: success, failure, Ctrl-C, SIGTERM. A SIGKILL (an OOM kill, a supervisor's
timeout, ``kill -9``) runs no clean-up, so that directory stayed for good; a nightly job killed now and then fills
``/tmp`` over months. So each directory holds a lock file its owner keeps locked (``flock``) while it lives; the kernel
drops the lock when the owner dies, however it dies, and the next run removes every directory of its kind whose lock
it can take. A directory with no lock file (made by a version before this, or killed between ``mkdtemp`` and the
lock) goes once it is a day old, which no run of costopt lasts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from warehouse.paths import ctrl_c_held, remove_tree

LOCK_NAME = ".costopt-owner.lock"
UNLOCKED_GRACE_SECONDS = 24 * 3600


@contextlib.contextmanager
def owned_scratch(prefix: str, parent: str | Path) -> Iterator[Path]:
    """A fresh directory under ``parent``, locked as this process's while the block runs, removed after it.

    Orphans of earlier, killed runs with the same prefix are removed first.
    """
    sweep_orphans(Path(parent), prefix)
    with ctrl_c_held():  # a Ctrl-C between the two would leave a directory no lock marks as this run's
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        try:
            lock = _hold(path)
        except BaseException:
            remove_tree(path)
            raise
    try:
        yield path
    finally:
        try:
            remove_tree(path)
        finally:
            lock.close()


def sweep_orphans(parent: Path, prefix: str, now: float | None = None) -> list[Path]:
    """Remove the directories under ``parent`` named ``prefix*`` whose owner is gone; return them.

    Never raises: a directory that cannot be read or locked (another user's, a permission error) is left alone, and
    a sweep that cannot list ``parent`` removes nothing. The sweep is housekeeping; it must not fail a refresh.
    """
    removed: list[Path] = []
    now = time.time() if now is None else now
    try:
        candidates = [entry for entry in os.scandir(parent) if entry.name.startswith(prefix)]
    except OSError:
        return removed
    for entry in candidates:
        try:
            if not entry.is_dir(follow_symlinks=False) or not _orphaned(Path(entry.path), now):
                continue
        except OSError:
            continue
        remove_tree(Path(entry.path))
        removed.append(Path(entry.path))
    return removed


def _orphaned(path: Path, now: float) -> bool:
    lock_path = path / LOCK_NAME
    if not lock_path.exists():
        return now - path.stat().st_mtime > UNLOCKED_GRACE_SECONDS
    with lock_path.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its owner holds it: a run in progress, in this process or another
        return True  # the lock is released when this handle closes; the directory goes next


def _hold(directory: Path) -> IO[str]:
    """Lock ``directory``'s lock file for this process: locked under another name first, then renamed into place, so
    a sweep never finds the lock file before it is locked (and takes a live run's directory for an orphan)."""
    staging = directory / f"{LOCK_NAME}.{os.getpid()}"
    handle = staging.open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        handle.write(f"PID {os.getpid()}\n")
        handle.flush()
        staging.rename(directory / LOCK_NAME)
    except BaseException:
        handle.close()
        raise
    return handle
