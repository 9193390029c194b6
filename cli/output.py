"""Rendering for humans (rich tables) and for scripts (JSON, CSV), shared by every command.

Heavy modules (rich) are imported inside the functions so that ``costopt --help`` stays fast.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from enum import StrEnum
from typing import Any


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_json(data: Any) -> str:
    return json.dumps(data, default=_plain, indent=2, sort_keys=False)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.2f}"
        return f"{value:.4g}" if abs(value) < 1 else f"{value:.3f}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


def emit(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str],
    fmt: Format | str,
    *,
    title: str | None = None,
    caption: str | None = None,
    headers: Mapping[str, str] | None = None,
    out: Any = None,
) -> None:
    """Print rows as a table, JSON (a list of objects) or CSV, with a stable column order."""
    out = out or sys.stdout
    fmt = Format(fmt)
    if fmt is Format.json:
        out.write(to_json([{c: _plain(r.get(c)) for c in columns} for r in rows]) + "\n")
        return
    if fmt is Format.csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_plain(r.get(c)) for c in columns] for r in rows])
        out.write(buffer.getvalue())
        return
    print_table(
        ([_cell(r.get(c)) for c in columns] for r in rows),
        [(headers or {}).get(c, c) for c in columns],
        title=title,
        caption=caption,
        out=out,
    )


def print_table(
    rows: Iterable[Sequence[str]],
    header: Sequence[str],
    *,
    title: str | None = None,
    caption: str | None = None,
    out: Any = None,
) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, caption=caption, header_style="bold", show_lines=False)
    for name in header:
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*row)
    stream = out or sys.stdout
    interactive = out is None and stream.isatty()
    Console(file=stream, width=None if interactive else 200).print(table)  # pipes and logs get full rows


def note(message: str) -> None:
    """A notice for humans on stderr, so stdout stays clean for --format json/csv."""
    sys.stderr.write(message.rstrip() + "\n")
