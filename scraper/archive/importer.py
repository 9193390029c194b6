"""``costopt import``: walk an archive's commits, parse each snapshot, stage intervals, load them at once.

Two phases, as a refresh has: reading and parsing run with the warehouse closed (minutes for a large
archive; readers are not blocked), and the load is one transaction (seconds). Ctrl-C in either phase
leaves the warehouse exactly as it was; the staging directory is removed either way.

Which files: every path in the clone's history that a known format claims -- SkyPilot's
``catalogs/v<N>/<cloud>/vms.csv`` and ``<cloud>/vms.csv`` for the clouds costopt tracks, and
Cyclenerd's ``pricing.yml``. Files are loaded newest catalog version first, and an interval only fills
time nothing already stored covers, so where SkyPilot kept several catalog versions up to date side by
side, the newest one speaks for each moment and the older ones fill in the years before it existed.

What is an observation: each commit that changed the file, at the commit's time (``--daily``: only the
last change of each UTC day), and the archive's tip, which still holds the last snapshot (so a price
nobody changed for a month is known to have held for that month). A snapshot the clone does not hold
(a shallow clone, a mirror without its largest objects) or that the parser refuses is skipped and
counted; the intervals around it simply span it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from scraper.archive import cyclenerd, skypilot
from scraper.archive.git import BlobReader, Change, Commit, GitArchive, GitError
from scraper.archive.intervals import Carried, Interval, IntervalBuilder
from scraper.archive.snapshot import Attrs, Key, Snapshot
from scraper.scratch import owned_scratch
from warehouse.archive import LoadedPath, StagedPath, StageWriter
from warehouse.errors import ParseError, UsageError

Progress = Callable[[str, int, int, datetime | None], None]  # (path, snapshots done, snapshots total, at)
PATHSPECS: tuple[str, ...] = (*skypilot.PATHSPECS, cyclenerd.PATH)


@dataclass(frozen=True, slots=True)
class ArchiveFile:
    """A file of the archive that a known format claims."""

    path: str
    format: str
    provider: str
    order: tuple[int, str]  # load order: newest catalog version first

    def reader(self) -> Callable[[bytes], Snapshot]:
        """A parser for this file's successive snapshots (SkyPilot's remembers unchanged lines)."""
        if self.format == cyclenerd.FORMAT:
            return cyclenerd.parse
        found = skypilot.layout(self.path)
        assert found is not None
        return skypilot.Reader(found.cloud).parse


def classify(path: str) -> ArchiveFile | str:
    """The format of ``path``, or why it is not imported."""
    if path == cyclenerd.PATH:
        return ArchiveFile(path, cyclenerd.FORMAT, cyclenerd.PROVIDER, (0, path))
    found = skypilot.layout(path)
    if found is None:
        return "not a known archive format"
    if found.provider is None:
        return f"cloud {found.cloud!r} is not one costopt tracks"
    version = found.version if found.version is not None else 0
    return ArchiveFile(path, skypilot.FORMAT, found.provider, (-version, path))


@dataclass(slots=True)
class StageResult:
    repository: str
    tip: Commit
    staged: list[StagedPath] = field(default_factory=list)
    ignored: dict[str, str] = field(default_factory=dict)  # path -> why it is not imported
    up_to_date: bool = False
    seconds: float = 0.0
    bytes_read: int = 0


@dataclass(slots=True)
class ImportResult:
    stage: StageResult
    loaded: list[LoadedPath] = field(default_factory=list)


def daily(changes: list[Change]) -> list[Change]:
    """The last change of each UTC day (the commit order is kept)."""
    last: dict[object, Change] = {}
    for change in changes:
        last[change.commit.time.astimezone(UTC).date()] = change
    return list(last.values())


def _carried(rows: list[tuple[object, ...]]) -> dict[Key, Carried]:
    out: dict[Key, Carried] = {}
    for kind, region, name, pricing, gpu, count, vcpus, memory, usd, valid_from, commit, last_seen in rows:
        if kind == "p":
            name = f"{gpu}x{float(count):g}"  # type: ignore[arg-type]
        key: Key = (str(kind), str(region), str(name), str(pricing))
        attrs = Attrs(str(gpu), float(count), None if vcpus is None else int(vcpus), memory)  # type: ignore[arg-type,call-overload]
        out[key] = Carried(float(usd), valid_from, str(commit), attrs, last_seen)  # type: ignore[arg-type]
    return out


def _write(writer: StageWriter, intervals: list[Interval]) -> None:
    for i in intervals:
        writer.add(
            kind=i.key[0],
            region=i.key[1],
            name=i.key[2],
            pricing=i.key[3],
            gpu=i.attrs.gpu,
            gpu_count=float(i.attrs.gpu_count),
            vcpus=i.attrs.vcpus,
            memory_gib=None if i.attrs.memory_gib is None else float(i.attrs.memory_gib),
            usd_per_hour=i.usd,
            valid_from=i.valid_from,
            valid_to=i.valid_to,
            last_seen=i.last_seen,
            commit=i.commit,
            last_commit=i.last_commit,
            continues=i.continues,
        )


def stage_file(
    file: ArchiveFile,
    changes: list[Change],
    *,
    blobs: BlobReader,
    repository: str,
    tip: Commit,
    tip_blob: str | None,
    carried: dict[Key, Carried],
    out: Path,
    progress: Progress | None = None,
) -> StagedPath:
    """Read, parse and turn into intervals the given changes of one file; write them to ``out`` (Parquet).

    ``tip_blob`` is the file's blob at the archive's tip: when it is the last snapshot read (or nothing
    changed since the import that left ``carried``), the tip confirms every open price at its time.
    """
    staged = StagedPath(repository, file.path, file.format, file.provider, tip.sha, tip.time, file=out.name)
    staged.commits = len(changes)
    builder = IntervalBuilder(carried)
    writer = StageWriter(out)
    keys: set[Key] = set(carried)
    unknown: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    last_tick = 0.0
    last_blob: str | None = None
    parse = file.reader()
    try:
        for n, change in enumerate(changes, 1):
            if change.blob is None:
                snapshot = Snapshot(file.provider)  # the file was deleted: every price ends here
            else:
                data = blobs.read(change.blob)
                if data is None:
                    staged.blobs_missing += 1
                    continue
                try:
                    snapshot = parse(data)
                except ParseError as exc:
                    staged.malformed += 1
                    staged.malformed_example = staged.malformed_example or f"{change.commit.short}: {exc.one_line()}"
                    continue
            if staged.first_commit is None:
                staged.first_commit, staged.first_observed = change.commit.sha, change.commit.time
            staged.observations += 1
            last_blob = change.blob
            staged.gpu_rows += snapshot.rows
            keys.update(snapshot.prices)
            unknown |= snapshot.unknown  # the most rows any one snapshot had, per name
            skipped |= snapshot.skipped
            _write(writer, builder.observe(change.commit.time, change.commit.sha, snapshot.prices, snapshot.attrs))
            if progress is not None and (time.monotonic() - last_tick > 0.5 or n == len(changes)):
                last_tick = time.monotonic()
                progress(file.path, n, len(changes), change.commit.time)
        confirmed = last_blob is not None and last_blob == tip_blob
        if tip_blob is not None and (confirmed or (not changes and carried)):
            _write(writer, builder.confirm(tip.time, tip.sha))
        _write(writer, builder.finish())
    finally:
        writer.close()
    staged.glitches = builder.glitches
    staged.keys = len(keys)
    staged.rows = writer.rows
    staged.unknown = dict(unknown.most_common())
    staged.skipped = dict(skipped.most_common())
    if not writer.rows:
        staged.file = None
    return staged


def stage_archive(
    clone: Path,
    workdir: Path,
    *,
    repository: str | None = None,
    state: dict[str, tuple[str, datetime]] | None = None,
    carried: Callable[[str], dict[Key, Carried]] | None = None,
    only_daily: bool = False,
    paths: list[str] | None = None,
    progress: Progress | None = None,
) -> StageResult:
    """Stage every importable file of ``clone`` under ``workdir``; nothing touches the warehouse.

    ``state`` (path -> tip and time of the last import) makes the import incremental; ``carried`` gives,
    per path, the intervals that import left open at its tip. ``paths`` (shell patterns) limits the files.
    """
    import fnmatch

    started = time.monotonic()
    archive = GitArchive(clone)
    tip = archive.commit("HEAD")
    repository = repository or _repository(archive, clone)
    state = state or {}
    result = StageResult(repository, tip)

    def wanted(path: str) -> bool:
        return not paths or any(fnmatch.fnmatch(path, pattern) for pattern in paths)

    position = {sha: n for n, sha in enumerate(archive.first_parent_chain(tip.sha))}
    for path, (commit, _) in state.items():
        if commit not in position:
            raise GitError(
                f"{repository}: {path} was imported up to {commit[:7]}, which is no longer in the archive's "
                "history (rewritten?); import it into a fresh warehouse"
            )
    at_tip = {p: blob for p, blob in archive.files(tip.sha).items() if not isinstance(classify(p), str)}
    unseen = {p for p in at_tip if p not in state and wanted(p)}
    if state and not unseen and all(commit == tip.sha for commit, _ in state.values()):
        result.up_to_date = True
        result.seconds = time.monotonic() - started
        return result
    # one pass over the history since the oldest import (all of it on a first import)
    since = min((commit for commit, _ in state.values()), key=position.__getitem__) if state else None
    changes: dict[str, list[Change]] = {}
    for change in archive.changes(tip.sha, PATHSPECS, since=since):
        changes.setdefault(change.path, []).append(change)
    earlier = sorted(p for p in unseen if since is not None and p not in changes)
    if earlier:  # files last changed before ``since`` and never imported: their whole history
        for change in archive.changes(tip.sha, earlier):
            changes.setdefault(change.path, []).append(change)
    files: list[ArchiveFile] = []
    for path in sorted(set(changes) | (set(state) & set(at_tip))):
        if not wanted(path):
            continue
        found = classify(path)
        if isinstance(found, str):
            result.ignored[path] = found
        elif not (path in state and state[path][0] == tip.sha):
            files.append(found)
    if not files and not state and not result.ignored:
        raise UsageError(
            f"{clone}: no price archive found (looked for catalogs/v<N>/<cloud>/vms.csv, <cloud>/vms.csv "
            "and pricing.yml in its history)"
        )
    files.sort(key=lambda f: (f.provider, f.order))
    with archive.blobs() as blobs:
        for number, file in enumerate(files):
            done = position[state[file.path][0]] if file.path in state else -1
            todo = [c for c in changes.get(file.path, []) if position.get(c.commit.sha, -1) > done]
            if only_daily:
                todo = daily(todo)
            staged = stage_file(
                file,
                todo,
                blobs=blobs,
                repository=repository,
                tip=tip,
                tip_blob=at_tip.get(file.path),
                carried=carried(file.path) if (carried and file.path in state) else {},
                out=workdir / f"{number:03d}-{file.path.replace('/', '_')}.parquet",
                progress=progress,
            )
            if staged.observations or file.path in state:
                result.staged.append(staged)
            else:  # nothing readable (every snapshot missing or refused): no state, so a later import retries
                result.ignored[file.path] = (
                    f"no readable snapshot ({staged.blobs_missing} missing, {staged.malformed} unreadable)"
                )
        result.bytes_read = blobs.bytes_read
    result.up_to_date = not result.staged
    result.seconds = time.monotonic() - started
    return result


def _repository(archive: GitArchive, clone: Path) -> str:
    from warehouse.archive import repository_id

    return repository_id(archive.remote_url(), str(clone.resolve()))


def import_archive(
    db_path: Path,
    clone: Path,
    *,
    repository: str | None = None,
    only_daily: bool = False,
    paths: list[str] | None = None,
    progress: Progress | None = None,
) -> ImportResult:
    """Import ``clone`` into the warehouse at ``db_path``: only what is new since the last import of it."""
    from warehouse.archive import carried_intervals, import_state, load_staged
    from warehouse.db import open_warehouse

    archive = GitArchive(clone)
    repository = repository or _repository(archive, clone)
    con = open_warehouse(db_path)
    try:
        state = import_state(con, repository)
        held = {path: carried_intervals(con, repository, path, end) for path, (_, end) in state.items()}
    finally:
        con.close()
    with owned_scratch("costopt-import-", db_path.parent) as workdir:
        staged = stage_archive(
            clone,
            workdir,
            repository=repository,
            state=state,
            carried=lambda path: _carried(held.get(path, [])),
            only_daily=only_daily,
            paths=paths,
            progress=progress,
        )
        result = ImportResult(staged)
        if not staged.staged:
            return result
        con = open_warehouse(db_path)
        try:
            if import_state(con, repository) != state:
                raise UsageError(f"{repository} was imported by another process meanwhile; run the import again")
            result.loaded = load_staged(con, staged.staged, workdir)
        finally:
            con.close()
        return result
