"""``costopt import``: years of price history from a public price archive kept in git."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cli.options import DbOption, FormatOption, WideOption
from cli.output import Column, Format

COLUMNS = [
    "path",
    "provider",
    "snapshots",
    "first",
    "last",
    "prices",
    "intervals",
    "gpu_parts",
    "missing",
    "unknown_gpus",
]
TABLE_COLUMNS = [
    Column("path", kind="name"),
    Column("provider", kind="name"),
    Column("snapshots", kind="count"),
    Column("first", kind="name", drop=2),
    Column("last", kind="name", drop=2),
    Column("prices", kind="count"),
    Column("intervals", kind="count"),
    Column("gpu_parts", "GPU parts", "count", drop=1),
    Column("missing", kind="count", drop=1),
    Column("unknown_gpus", "unknown GPUs", "text", drop=3),
]


def import_command(
    clone: Annotated[
        Path | None, typer.Argument(help="A local git clone of the archive (bare or not).", show_default=False)
    ] = None,
    bundled: Annotated[
        bool,
        typer.Option("--bundled", help="Load the history bundled with costopt (for a warehouse started by refresh)."),
    ] = False,
    repository: Annotated[
        str | None,
        typer.Option("--repository", help="Name the archive (default: from its origin URL, e.g. github.com/o/r)."),
    ] = None,
    daily: Annotated[
        bool, typer.Option("--daily", help="Read only the last commit of each UTC day (faster on busy archives).")
    ] = False,
    path: Annotated[
        list[str] | None,
        typer.Option("--path", help="Only files matching this pattern (repeatable), e.g. 'catalogs/v7/*'."),
    ] = None,
    db: DbOption = None,
    format: FormatOption = Format.table,
    wide: WideOption = False,
) -> None:
    """Import GPU price history from a git clone of a price archive (SkyPilot catalog format, Cyclenerd GCP).

    Reads only commits newer than the last import of the same archive; a second run changes nothing.
    """
    import signal
    import sys

    from cli.output import emit, note
    from cli.warehouse_access import ensure_prices
    from scraper.archive.importer import import_archive

    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM as Ctrl-C: staging removed, nothing loaded, exit 130

    signal.signal(signal.SIGTERM, stop)
    from warehouse.errors import UsageError

    if bundled == (clone is not None):
        raise UsageError("give a clone to import, or --bundled for the history bundled with costopt (not both)")
    if bundled and (repository or daily or path):
        given = [f for f, v in (("--repository", repository), ("--daily", daily), ("--path", path)) if v]
        raise UsageError(f"{', '.join(given)} only apply to a clone, not to --bundled")
    target = ensure_prices(db)  # the default warehouse gets the bundled snapshot and history first
    if clone is None:
        from cli.warehouse_access import ensure_history

        if not ensure_history(target):
            note(f"costopt: the bundled history is already in {target}; nothing to do")
        return
    assert clone is not None
    progress = _progress() if sys.stderr.isatty() and format is Format.table else None
    try:
        result = import_archive(
            target, clone.expanduser(), repository=repository, only_daily=daily, paths=path, progress=progress
        )
    finally:
        if progress is not None:
            progress.stop()  # type: ignore[attr-defined]
    stage = result.stage
    loaded = {item.path: item for item in result.loaded}
    rows = []
    for item in stage.staged:
        done = loaded.get(item.path)
        rows.append(
            {
                "path": item.path,
                "provider": item.provider,
                "snapshots": item.observations,
                "first": item.first_observed,
                "last": item.last_observed if item.observations else None,
                "prices": item.keys,
                "intervals": done.prices if done else 0,
                "gpu_parts": done.gpu_parts if done else 0,
                "missing": item.blobs_missing + item.malformed,
                "unknown_gpus": _unknown(item.unknown),
                "run_id": done.run_id if done else None,
                "unknown": item.unknown,
            }
        )
    tip = f"{stage.tip.short} ({stage.tip.time:%Y-%m-%d %H:%M} UTC)"
    if format is not Format.table:
        if format is Format.json:
            from cli.output import to_json

            sys.stdout.write(
                to_json(
                    {
                        "repository": stage.repository,
                        "tip": stage.tip.sha,
                        "tip_time": stage.tip.time,
                        "up_to_date": stage.up_to_date,
                        "seconds": round(stage.seconds, 2),
                        "files": rows,
                        "ignored": stage.ignored,
                    }
                )
                + "\n"
            )
        else:
            emit(rows, [*COLUMNS, "run_id"], format)
        return
    if stage.up_to_date:
        note(f"costopt: {stage.repository} is already imported up to {tip}; nothing to do")
        return
    emit(
        rows,
        TABLE_COLUMNS,
        format,
        wide=wide,
        title=f"Imported {stage.repository} up to {tip}",
        caption=(
            f"{sum(x.prices for x in result.loaded)} price intervals and {sum(x.gpu_parts for x in result.loaded)} "
            "GPU-part "
            f"intervals in {stage.seconds:.1f} s; prices = offers x pricing kinds priced; missing = snapshots the "
            "clone lacks or that could not be read; unknown_gpus = GPU names not mapped (rows in one snapshot)"
        ),
    )
    for ignored, why in sorted(stage.ignored.items()):
        note(f"costopt: not imported: {ignored}: {why}")


def _unknown(names: dict[str, int]) -> str:
    """Unmapped GPU names, summed over the instance types they came with ("M60 (NV12s v3)" -> "M60")."""
    totals: dict[str, int] = {}
    for name, rows in names.items():
        base = name.split(" (")[0]
        totals[base] = totals.get(base, 0) + rows
    return ", ".join(f"{name} ({rows})" for name, rows in sorted(totals.items(), key=lambda kv: -kv[1])[:4])


def _progress():  # type: ignore[no-untyped-def]
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
    )
    tasks: dict[str, int] = {}
    bar.start()

    def show(path: str, done: int, total: int, at: object) -> None:
        if path not in tasks:
            tasks[path] = bar.add_task(path, total=total)
        when = f" {at:%Y-%m-%d}" if at is not None else ""  # type: ignore[str-format]
        bar.update(tasks[path], completed=done, description=f"{path}{when}")

    show.stop = bar.stop  # type: ignore[attr-defined]
    return show
