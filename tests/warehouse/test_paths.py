"""The temporary directory is found, and a scratch directory removed, with Ctrl-C held off (warehouse.paths)."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import threading
import time

import pytest

from warehouse.paths import remove_tree, temp_root

NOT_ON_WINDOWS = pytest.mark.skipif(sys.platform == "win32", reason="os.kill(SIGINT) ends the process on Windows")


def interrupted_inside(monkeypatch, module, name: str, guarded) -> None:
    """``guarded()`` with a Ctrl-C arriving inside ``module.name``, which then finishes its work: the Ctrl-C must
    surface as KeyboardInterrupt from ``guarded()``, after that work, not in the middle of it."""
    real = getattr(module, name)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives as the step starts
        time.sleep(0.05)  # the step's own work: time for whichever thread got SIGINT to pass it on
        return real(*args, **kwargs)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(module, name, interrupted)
    try:
        with pytest.raises(KeyboardInterrupt):
            guarded()
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupted_mid_probe(monkeypatch) -> list[str]:
    """temp_root() with a Ctrl-C arriving inside tempfile's probe; what the probe got to do before it ended."""
    finished: list[str] = []

    def probe() -> str:
        finished.append("probe deleted its file")
        return "/scratch"

    monkeypatch.setattr(tempfile, "gettempdir", probe)
    interrupted_inside(monkeypatch, tempfile, "gettempdir", temp_root)
    return finished


@NOT_ON_WINDOWS
def test_a_ctrl_c_during_the_temp_dir_probe_lands_after_it(monkeypatch):
    """tempfile's first use writes and deletes a probe file; a Ctrl-C in between must wait for the delete."""
    assert interrupted_mid_probe(monkeypatch) == ["probe deleted its file"]


@NOT_ON_WINDOWS
def test_the_ctrl_c_waits_with_another_thread_alive(monkeypatch):
    """With another thread running (DuckDB's, the scheduler's), the kernel may hand SIGINT to it: blocking the signal
    in the calling thread (round 14's hold) let the Ctrl-C through mid-probe, and the full suite failed once so."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)  # SIGINT not blocked here: the kernel's candidate
    other.start()
    try:
        assert interrupted_mid_probe(monkeypatch) == ["probe deleted its file"]
    finally:
        stop.set()
        other.join()


def test_temp_root_is_the_system_temp_dir():
    assert temp_root() == tempfile.gettempdir()


@NOT_ON_WINDOWS
def test_a_ctrl_c_during_the_removal_of_a_scratch_dir_lands_after_it(tmp_path, monkeypatch):
    """A Ctrl-C inside shutil.rmtree stopped it halfway: a refresh's downloaded price files stayed in the system's
    temporary directory for good. Held, the removal finishes and the Ctrl-C is raised after it."""
    import shutil

    scratch = tmp_path / "costopt-fetch-x" / "aws"
    scratch.mkdir(parents=True)
    for k in range(3):
        (scratch / f"tmp{k}.part").write_bytes(b"x" * 1000)
    interrupted_inside(monkeypatch, shutil, "rmtree", lambda: remove_tree(tmp_path / "costopt-fetch-x"))
    assert not (tmp_path / "costopt-fetch-x").exists()
