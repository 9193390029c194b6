"""Reading a git clone: which commits changed which files, and the bytes of those files.

The only code that runs git. It drives the real ``git`` program through two pipes rather than a
library: ``git log --raw`` lists, in one streaming pass, every commit that touched the archive's
files together with the blob id each file had after it, and one long-lived ``git cat-file --batch``
process hands back exactly those blobs. Nothing else is read, so a file that did not change in a
commit costs nothing, and git resolves packs, deltas and alternates in C. git is already on every
machine that holds a clone; pygit2 would add a compiled libgit2 dependency pinned to its version,
and dulwich, pure Python, resolves delta chains an order of magnitude slower on archives of
thousands of multi-megabyte snapshots (the reason SkyPilot's own catalog tooling shells out to git).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import IO

from warehouse.errors import CostoptError, UsageError

EMPTY_BLOB = "0" * 40


class GitError(CostoptError):
    """git failed on a clone (not a repository, an unknown commit, a corrupt object store)."""


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    time: datetime  # committer time, UTC: when the snapshot entered the archive

    @property
    def short(self) -> str:
        return self.sha[:7]


@dataclass(frozen=True, slots=True)
class Change:
    """One file as one commit left it: its blob, or ``None`` when the commit deleted it."""

    commit: Commit
    path: str
    blob: str | None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_LAZY_FETCH": "1",  # a partial clone must not reach for the network
            "GIT_PAGER": "cat",
        }
    )
    return env


def _time(epoch: str) -> datetime:
    return datetime.fromtimestamp(int(epoch), tz=UTC)


class GitArchive:
    """A local clone (bare or not) read through the ``git`` program."""

    def __init__(self, clone: Path) -> None:
        self.clone = clone
        if not clone.exists():
            raise UsageError(f"{clone} does not exist (clone the archive first, e.g. git clone URL)")
        self.git_dir = Path(self._run("rev-parse", "--absolute-git-dir", what=f"{clone} is not a git clone").strip())

    def _command(self, *args: str) -> list[str]:
        return ["git", "-c", "core.quotepath=off", "-C", str(self.clone), *args]

    def _run(self, *args: str, what: str | None = None) -> str:
        try:
            done = subprocess.run(  # noqa: S603 - fixed program, arguments are ours
                self._command(*args), capture_output=True, text=True, env=_env(), check=False
            )
        except FileNotFoundError:
            raise UsageError("git is not installed; costopt import reads archives with git") from None
        if done.returncode != 0:
            detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise GitError(what or f"git {args[0]} failed in {self.clone}: {detail}")
        return done.stdout

    def commit(self, ref: str = "HEAD") -> Commit:
        out = self._run("log", "-1", "--format=%H %ct", ref, "--", what=f"{self.clone}: no commit {ref!r}")
        if not out.strip():
            raise GitError(f"{self.clone}: {ref!r} has no commits")
        sha, epoch = out.split()
        return Commit(sha, _time(epoch))

    def first_parent_chain(self, tip: str) -> list[str]:
        """The commits of the tip's first-parent history, oldest first: the archive's own timeline."""
        return self._run("rev-list", "--first-parent", "--reverse", tip).split()

    def files(self, tip: str) -> dict[str, str]:
        """Every file in the tip's tree, with its blob id."""
        out = {}
        for line in self._run("ls-tree", "-r", "--full-tree", tip).splitlines():
            meta, _, path = line.partition("\t")
            fields = meta.split()
            if len(fields) == 3 and fields[1] == "blob":
                out[path] = fields[2]
        return out

    def remote_url(self) -> str | None:
        try:
            return self._run("config", "--get", "remote.origin.url").strip() or None
        except GitError:
            return None

    def changes(self, tip: str, pathspecs: Sequence[str], since: str | None = None) -> Iterator[Change]:
        """Every change to a file matching ``pathspecs`` on the first-parent line up to ``tip``, oldest first.

        With ``since``, only commits after it. A merge counts as the change it made to its first parent.
        """
        revision = f"{since}..{tip}" if since else tip
        args = self._command(
            "log",
            "--first-parent",
            "-m",
            "--reverse",
            "--no-renames",
            "--raw",
            "--no-abbrev",
            "--format=%x00%H %ct",
            revision,
            "--",
            *pathspecs,
        )
        try:
            process = subprocess.Popen(  # noqa: S603 - fixed program, arguments are ours
                args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()
            )
        except FileNotFoundError:
            raise UsageError("git is not installed; costopt import reads archives with git") from None
        assert process.stdout is not None
        commit: Commit | None = None
        try:
            for line in process.stdout:
                if line.startswith("\0"):
                    sha, epoch = line[1:].split()
                    commit = Commit(sha, _time(epoch))
                elif line.startswith(":") and commit is not None:
                    meta, _, path = line.rstrip("\n").partition("\t")
                    fields = meta.split()
                    blob, status = fields[3], fields[4]
                    yield Change(commit, path, None if status.startswith("D") or blob == EMPTY_BLOB else blob)
            error = process.stderr.read() if process.stderr else ""
            if process.wait() != 0:
                detail = (error.strip().splitlines() or ["no message"])[-1]
                raise GitError(f"git log failed in {self.clone}: {detail}")
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            process.stdout.close()
            if process.stderr:
                process.stderr.close()

    def blobs(self) -> BlobReader:
        return BlobReader(self._command("cat-file", "--batch"))


class BlobReader:
    """One ``git cat-file --batch`` process: blob id in, bytes out (``None`` for an object the clone lacks)."""

    def __init__(self, command: list[str]) -> None:
        try:
            self._process = subprocess.Popen(  # noqa: S603 - fixed program, arguments are ours
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env()
            )
        except FileNotFoundError:
            raise UsageError("git is not installed; costopt import reads archives with git") from None
        assert self._process.stdin is not None and self._process.stdout is not None
        self._in: IO[bytes] = self._process.stdin
        self._out: IO[bytes] = self._process.stdout
        self.bytes_read = 0

    def read(self, blob: str) -> bytes | None:
        self._in.write(blob.encode() + b"\n")
        self._in.flush()
        header = self._out.readline()
        if not header:
            raise GitError("git cat-file stopped answering")
        parts = header.split()
        if len(parts) == 2 and parts[1] == b"missing":
            return None  # e.g. a shallow or partial clone, or a mirror without its largest files
        if len(parts) != 3:
            raise GitError(f"git cat-file: unexpected answer {header[:80]!r}")
        size = int(parts[2])
        data = self._out.read(size)
        self._out.read(1)  # the newline after the content
        if len(data) != size:
            raise GitError(f"git cat-file: {blob} cut short ({len(data)} of {size} bytes)")
        self.bytes_read += size
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._in.close()
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._out.close()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
