"""Where costopt keeps its data: ``COSTOPT_DB`` / ``COSTOPT_DATA_DIR`` override a per-user default."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    explicit = os.environ.get("COSTOPT_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("costopt", appauthor=False))


def default_db_path() -> Path:
    explicit = os.environ.get("COSTOPT_DB")
    if explicit:
        return Path(explicit).expanduser()
    return data_dir() / "costopt.duckdb"


def raw_dir(db_path: Path) -> Path:
    """Raw payloads live beside the database they belong to, so one warehouse moves as one folder."""
    return db_path.parent / f"{db_path.stem}.raw"


def snapshot_dir() -> Path:
    """The bundled snapshot: ``fixtures/`` of the source tree, shipped in the wheel as warehouse/snapshot."""
    packaged = Path(__file__).parent / "snapshot"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "fixtures"


def temp_root() -> str:
    """The system's temporary directory, found with Ctrl-C held off.

    tempfile finds it on first use by writing and deleting a randomly named probe file there; a Ctrl-C between the
    two leaves that file behind (seen under load: tests/cli/test_failures.py interrupts a refresh at 0.3 s). Held,
    the Ctrl-C lands just after the probe, where the caller's clean-up already covers it. A scratch directory made
    with ``dir=temp_root()`` needs no probe of its own.

    It is held by a Python handler that notes the Ctrl-C and raises it again once the probe is done. Blocking the
    signal (``pthread_sigmask``, until round 15 of issue 14) blocks it for the calling thread only: with any other
    thread alive (DuckDB's, the scheduler's) the kernel hands SIGINT to that thread and Python raises it in the
    main thread at once, mid-probe. A handler is the process's, whichever thread the kernel picks.
    """
    import signal
    import tempfile  # here, not at the top: most commands never need it
    import threading

    if threading.current_thread() is not threading.main_thread():
        return tempfile.gettempdir()  # only the main thread may set a handler; it also gets every Ctrl-C
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        return tempfile.gettempdir()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)  # None: not set from Python
        if caught:
            signal.raise_signal(signal.SIGINT)  # the Ctrl-C, now, to whatever handled it before
