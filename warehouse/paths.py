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
    """
    import signal
    import tempfile  # here, not at the top: most commands never need it

    hold = getattr(signal, "pthread_sigmask", None)  # not on Windows
    if hold is None:
        return tempfile.gettempdir()
    previous = hold(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        return tempfile.gettempdir()
    finally:
        hold(signal.SIG_SETMASK, previous)
