"""Where costopt keeps its data: ``COSTOPT_DB`` / ``COSTOPT_DATA_DIR`` override a per-user default."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
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


def raw_relative(root: Path, file: Path) -> str:
    """How ``raw_payloads.path`` records a file kept under the raw folder ``root``: relative to it (``ab/<sha>.gz``).

    Absolute paths, recorded until this was fixed, tied a warehouse to the folder it was written beside: a copy's
    ``--keep-raw-days`` deleted the original's files, and a warehouse moved with its ``.raw/`` lost them all.
    """
    return file.relative_to(root).as_posix()


def raw_own_file(root: Path, stored: str) -> Path | None:
    """The file in the raw folder ``root`` (this warehouse's) that holds the payload recorded as ``stored``.

    Every kept file sits at ``<raw folder>/<first two hex digits of its sha256>/<sha256>.<ext>``, so the last two
    parts of any recorded path place it here: a relative path (``ab/<sha>.gz``) and an older absolute one (or one
    relative to the working directory of the refresh that wrote it) alike. None when ``stored`` does not end in
    that layout (a hand-edited row): then nothing of this warehouse's holds it, and nothing may be deleted for it.
    """
    parts = Path(stored).parts
    if len(parts) < 2 or len(parts[-2]) != 2 or any(c not in "0123456789abcdef" for c in parts[-2]):
        return None
    if not parts[-1].startswith(parts[-2]) or "/" in parts[-1] or parts[-1] in (".", ".."):
        return None
    return root / parts[-2] / parts[-1]


def raw_file(root: Path, stored: str) -> Path | None:
    """Where to read the payload recorded as ``stored``, or None when it is no longer kept.

    This warehouse's own copy first; else, for a row recorded before paths were relative, the path it recorded if
    that file still exists (a copied warehouse reads the original's files; it never deletes them, see
    ``warehouse.prune``). A file is named by its content's hash, so both hold the same bytes.
    """
    own = raw_own_file(root, stored)
    if own is not None and own.is_file():
        return own
    recorded = Path(stored)
    if (recorded.is_absolute() or len(recorded.parts) > 2) and recorded.is_file():  # never ab/<sha>: cwd's
        return recorded
    return None


def snapshot_dir() -> Path:
    """The bundled snapshot: ``fixtures/`` of the source tree, shipped in the wheel as warehouse/snapshot."""
    packaged = Path(__file__).parent / "snapshot"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "fixtures"


@contextlib.contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Run the block with Ctrl-C held off: one that arrives meanwhile is raised again once the block is done.

    For the few steps that must not stop halfway because nothing would finish them later: tempfile's probe of the
    temporary directory (``temp_root``) and the removal of a scratch directory (``remove_tree``). It is held by a
    Python handler that notes the Ctrl-C. Blocking the signal (``pthread_sigmask``, until round 15 of issue 14)
    blocks it for the calling thread only: with any other thread alive (DuckDB's, the scheduler's) the kernel hands
    SIGINT to that thread and Python raises it in the main thread at once. A handler is the process's, whichever
    thread the kernel picks. Off the main thread nothing is held: only the main thread may set a handler, and only
    it is interrupted by a Ctrl-C.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)  # None: not set from Python
        if caught:
            signal.raise_signal(signal.SIGINT)  # the Ctrl-C, now, to whatever handled it before


def temp_root() -> str:
    """The system's temporary directory, found with Ctrl-C held off.

    tempfile finds it on first use by writing and deleting a randomly named probe file there; a Ctrl-C between the
    two leaves that file behind (seen under load: tests/cli/test_failures.py interrupts a refresh at 0.3 s). Held,
    the Ctrl-C lands just after the probe, where the caller's clean-up already covers it. A scratch directory made
    with ``dir=temp_root()`` needs no probe of its own.
    """
    import tempfile  # here, not at the top: most commands never need it

    with ctrl_c_held():
        return tempfile.gettempdir()


def remove_tree(path: Path) -> None:
    """Remove a scratch directory whole, with Ctrl-C held off.

    A refresh's downloads wait in a fresh directory under the system's temporary one until the refresh ends; a
    Ctrl-C that lands inside ``shutil.rmtree`` stops it halfway and leaves the rest there for good, since the next
    refresh makes a directory of its own. The one path by which tests/cli/test_failures.py, interrupting a replayed
    refresh at 1.6 s under load, can have found AWS's downloaded price files behind (round 17 of issue 14): every
    other way out of a refresh passes this removal. Held, the Ctrl-C lands once the directory is gone.
    """
    import shutil

    with ctrl_c_held():
        shutil.rmtree(path, ignore_errors=True)
