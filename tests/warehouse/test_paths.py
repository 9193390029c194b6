"""The temporary directory is found with Ctrl-C held off (warehouse.paths.temp_root)."""

from __future__ import annotations

import os
import signal
import sys
import tempfile

import pytest

from warehouse.paths import temp_root


@pytest.mark.skipif(sys.platform == "win32", reason="no pthread_sigmask on Windows")
def test_a_ctrl_c_during_the_temp_dir_probe_lands_after_it(monkeypatch):
    """tempfile's first use writes and deletes a probe file; a Ctrl-C in between must wait for the delete."""
    finished = []

    def probe() -> str:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives mid-probe
        finished.append("probe deleted its file")
        return "/scratch"

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(tempfile, "gettempdir", probe)
    try:
        with pytest.raises(KeyboardInterrupt):
            temp_root()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert finished == ["probe deleted its file"]


def test_temp_root_is_the_system_temp_dir():
    assert temp_root() == tempfile.gettempdir()
