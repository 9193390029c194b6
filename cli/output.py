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
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any
from uuid import UUID


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def iso_duration(value: timedelta) -> str:
    """ISO 8601 duration of a DuckDB INTERVAL as Python sees it (months arrive as 30-day blocks)."""
    if value < timedelta(0):
        return "-" + iso_duration(-value)
    hours, rest = divmod(value.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    second = f"{seconds + value.microseconds / 1e6:g}"
    clock = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
    clock += f"{second}S" if seconds or value.microseconds else ""
    out = f"P{value.days}D" if value.days else "P"
    return out + (f"T{clock}" if clock else ("" if value.days else "T0S"))


def blob_text(value: bytes | bytearray | memoryview) -> str:
    """A BLOB as DuckDB prints it: printable ASCII as is, every other byte as ``\\xHH``."""
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in bytes(value))


def _plain(value: Any) -> Any:
    """Any value DuckDB hands to Python as something JSON can hold, recursively (lists, structs, maps).

    DECIMAL becomes a number when a float holds it exactly, else its exact text; INTERVAL an ISO 8601
    duration; BLOB DuckDB's escaped text; TIME, DATE, TIMESTAMP ISO 8601; UUID its text; NaN and
    infinities null; MAP keys text.
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        number = float(value)
        return number if Decimal(repr(number)) == value else str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return iso_duration(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return blob_text(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, Mapping):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return str(value)


def _csv_field(value: Any) -> Any:
    plain = _plain(value)
    if isinstance(plain, list | dict):
        return json.dumps(plain)
    if isinstance(plain, bool):
        return "true" if plain else "false"
    return plain


def to_json(data: Any) -> str:
    return json.dumps(_plain(data), indent=2, sort_keys=False, allow_nan=False)


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
    if isinstance(value, bytes | bytearray | memoryview | timedelta | list | tuple | dict):
        plain = _plain(value)
        return plain if isinstance(plain, str) else json.dumps(plain)
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
        writer.writerows([[_csv_field(r.get(c)) for c in columns] for r in rows])
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
