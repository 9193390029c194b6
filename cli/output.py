"""Rendering for humans (tables) and for scripts (JSON, CSV), shared by every command.

Tables are laid out for the width they are read at: the terminal's, ``$COLUMNS`` when set, else 100
columns on a pipe or in a file (never 200: a log line should read like the screen). A column is a
``Column`` with a *kind* that says how its values may be cut:

* ``name`` (names, ids, dates, URLs) and every number never wrap: a value is whole or its column is not
  shown. Columns marked ``drop`` are hidden, highest first, until the table fits, and the footer says
  which (``--wide`` shows every column at its full width, whatever the terminal);
* ``text`` (notes, messages) wraps between words.

Numbers are formatted per column, so one column never mixes ``0.57`` and ``1.090``: counts are integers,
prices (``money``) carry 2 to 4 decimals, other figures as many decimals (at most 4) as the column's
values need. An empty result says ``none``. Tables are drawn here, as plain text (a header, a rule, aligned
columns, footer lines): rich's import alone was ~30 ms of every read command, and a table this simple
needs none of it.
"""

from __future__ import annotations

import io
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from enum import StrEnum
from typing import Any

PIPE_WIDTH = 100  # a table written to a pipe or a file, when $COLUMNS does not say otherwise
GAP = 2  # spaces between two columns


# json, csv, decimal and uuid are imported where they are used (every command imports this module). A value can
# only be a Decimal or a UUID if its module was imported (DuckDB imports it to make one), so the checks look there.
def _decimal(value: Any) -> bool:
    module = sys.modules.get("decimal")
    return module is not None and isinstance(value, module.Decimal)


def _uuid(value: Any) -> bool:
    module = sys.modules.get("uuid")
    return module is not None and isinstance(value, module.UUID)


def _number(value: Any) -> bool:
    """An int, float or Decimal, not a bool."""
    return (isinstance(value, int | float) and not isinstance(value, bool)) or _decimal(value)


def _dumps(value: Any, **options: Any) -> str:
    import json

    return json.dumps(value, **options)


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


KINDS = ("auto", "text", "name", "figure", "int", "count", "number", "money")
RIGHT = ("figure", "int", "count", "number", "money")


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: the row key, its header, how values are formatted and cut.

    ``kind``: ``text`` wraps between words; ``name`` never wraps; ``figure`` a preformatted figure
    (``$1.11``, ``21.0d``: right-aligned, never wraps); ``int`` an integer as is (ids, years);
    ``count`` an integer with thousands separators; ``number`` a figure with the decimals the column
    needs (at most 4); ``money`` a price, 2 to 4 decimals; ``auto`` decides from the values.
    ``drop`` > 0: hidden on a narrow terminal, highest first. ``wide``: shown only with ``--wide``.
    """

    key: str
    header: str | None = None
    kind: str = "auto"
    drop: int = 0
    wide: bool = False

    @property
    def title(self) -> str:
        return self.key if self.header is None else self.header


def columns_of(spec: Sequence[str | Column], headers: Mapping[str, str] | None = None) -> list[Column]:
    out = []
    for c in spec:
        column = c if isinstance(c, Column) else Column(c)
        if headers and column.key in headers and column.header is None:
            column = Column(column.key, headers[column.key], column.kind, column.drop, column.wide)
        out.append(column)
    return out


# --- plain values, JSON and CSV ---------------------------------------------------------------------


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
    if _decimal(value):
        if not value.is_finite():
            return None
        number = float(value)
        return number if type(value)(repr(number)) == value else str(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return iso_duration(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return blob_text(value)
    if _uuid(value):
        return str(value)
    if isinstance(value, Mapping):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return str(value)


def _csv_field(value: Any) -> Any:
    plain = _plain(value)
    if isinstance(plain, list | dict):
        return _dumps(plain)
    if isinstance(plain, bool):
        return "true" if plain else "false"
    return plain


def flattened(data: Mapping[str, Any], prefix: str = "", *, whole: frozenset[str] = frozenset()) -> dict[str, Any]:
    """One JSON object as one CSV row: a nested object's fields become ``outer.inner`` columns, in the JSON's order.

    A list stays one cell (JSON text, as every CSV of costopt writes a list); an object that is null (no cloud
    price when ``--rent-price`` is given) is one empty cell under its own name, since it has no fields to spread.
    An object whose dotted path is in ``whole`` stays one cell of JSON text too: its keys differ from answer to
    answer (estimate's ``mfu_factors``), and spread out they would give every answer other columns.
    """
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and f"{prefix}{key}" not in whole:
            out.update(flattened(value, f"{prefix}{key}.", whole=whole))
        else:
            out[f"{prefix}{key}"] = value
    return out


def to_rounded_csv_row(data: Mapping[str, Any], *, exact: bool = False, whole: frozenset[str] = frozenset()) -> str:
    """A computed answer that is one JSON object (``breakeven``, ``estimate``) as CSV: a header of dotted paths and
    one row, the figures rounded as in its JSON (``to_rounded_json``); ``exact``: unrounded; ``whole``: objects
    kept as one JSON cell (``flattened``)."""
    import csv

    row = flattened(data if exact else rounded(_plain(data)), whole=whole)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(list(row))
    writer.writerow([_csv_field(v) for v in row.values()])
    return buffer.getvalue()


def to_json(data: Any) -> str:
    """JSON of data as it is (``sql``, ``prices``, ``history``: the warehouse's values, never rounded)."""
    return _dumps(_plain(data), indent=2, sort_keys=False, allow_nan=False)


# --- the JSON rounding contract of computed answers (plan, estimate, breakeven) ----------------------

EXACT_KEYS = frozenset({"usd_per_hour", "usd_per_instance_hour", "total_params", "active_params", "tokens"})
"""Figures read from the warehouse or typed by the user: never rounded."""


def round_sig(value: float, digits: int = 4) -> float:
    """``value`` to ``digits`` significant digits (1657.4142321195147 -> 1657.0, 0.35912 -> 0.3591)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


RATE_KEYS = frozenset({"rent_90d_median"})


def _rule(key: str) -> str | None:
    """How a JSON number under ``key`` is rounded: ``exact``, ``cents``, ``rate`` or None (inherit)."""
    if key in EXACT_KEYS:
        return "exact"
    if key.endswith("_usd") or "usd_per_month" in key or key.startswith("cost_"):
        return "cents"
    if "usd_per_" in key or key in RATE_KEYS:
        return "rate"
    return None


def rounded(data: Any, rule: str = "sig") -> Any:
    """``data`` with every float rounded to what it means (the README's JSON contract).

    Money amounts (keys ending ``_usd``, e.g. ``cost_usd``, ``capex_usd``; ``cost_*``; ``*_usd_per_month``) to
    cents; rates (``usd_per_gpu_hour``, ``*_usd_per_hour``, ``*_usd_per_kwh``) to 4 decimals (a hundredth
    of a cent); prices as the warehouse holds them (``usd_per_hour``, ``usd_per_instance_hour``) and the
    user's own counts exact;
    every other float (hours, days, ratios, shares, FLOPs, GB, TFLOPS) to 4 significant digits. A nested
    object inherits its key's rule (``cost_usd: {low, expected, high}`` in cents). Integers stay integers.
    """
    if isinstance(data, bool) or data is None or isinstance(data, int | str):
        return data
    if isinstance(data, float):
        if not math.isfinite(data) or rule == "exact":
            return data
        if rule == "cents":
            return round(data, 2)
        if rule == "rate":
            return round(data, 4)
        return round_sig(data)
    if isinstance(data, Mapping):
        return {k: rounded(v, _rule(str(k)) or rule) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [rounded(v, rule) for v in data]
    return data


def to_rounded_json(data: Any, *, exact: bool = False) -> str:
    """JSON of a computed answer with the rounding contract applied (see ``rounded``); ``exact``: unrounded."""
    return to_json(data if exact else rounded(_plain(data)))


# --- number formatting for tables -------------------------------------------------------------------


def _decimals_needed(value: Any, most: int) -> int:
    if isinstance(value, int):
        return 0
    if _decimal(value):  # exact: its own digits, no float noise to tolerate
        exponent = value.normalize().as_tuple().exponent
        return min(most, max(0, -exponent)) if isinstance(exponent, int) else 0
    for d in range(most + 1):
        if abs(round(value, d) - value) <= 1e-9 * max(1.0, abs(value)):
            return d
    return most


def number_format(values: Iterable[Any], kind: str) -> Any:
    """A formatter for one column's values, so the whole column shares one number of decimals."""
    finite = [v for v in values if _number(v) and math.isfinite(float(v))]
    low, high = (2, 4) if kind == "money" else (0, 4)
    decimals = max([low, *(_decimals_needed(v, high) for v in finite)]) if finite else low
    if kind == "money" and finite and max(abs(float(v)) for v in finite) >= 100:
        decimals = min(decimals, 2)  # $98.32 an hour: cents are enough beside it

    def fmt(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return str(value).lower()
        number = float(value)
        if not math.isfinite(number):
            return str(number)
        # an int or a Decimal is formatted as itself: through a float, a BIGINT above 2**53 (9007199254740993)
        # or a HUGEINT printed a neighbour (...992) while JSON and CSV had it right
        exact = value if isinstance(value, int) or _decimal(value) else number
        if kind in ("int", "count") or (kind == "number" and decimals == 0 and exact == int(exact)):
            return f"{int(exact):,}" if kind != "int" else str(int(exact))
        if number != 0 and abs(number) < 10 ** (-decimals) / 2:
            return f"{number:.3g}"  # too small for the column's decimals: say it, don't print 0.0000
        if isinstance(exact, int):  # format(int, ".2f") goes through a float too
            return f"{exact:,}" + (f".{'0' * decimals}" if decimals else "")
        return f"{exact:,.{decimals}f}"

    return fmt


def _kind_of(values: Sequence[Any]) -> str:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "int"
    if present and all(_number(v) for v in present):
        return "number"
    if any(isinstance(v, str) and " " in v.strip() for v in present) or any(
        isinstance(v, list | tuple | dict) for v in present
    ):
        return "text"
    return "name"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, bytes | bytearray | memoryview | timedelta | list | tuple | dict | float) or (
        _decimal(value) or _uuid(value)
    ):
        plain = _plain(value)
        return plain if isinstance(plain, str) else _dumps(plain)
    return str(value)


def format_cells(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column]) -> tuple[list[list[str]], list[Column]]:
    """Each row's cells as text, and the columns with their kind decided."""
    resolved = []
    formatters = []
    for column in columns:
        values = [r.get(column.key) for r in rows]
        kind = _kind_of(values) if column.kind == "auto" else column.kind
        if kind == "number" and values and not all(v is None or _number(v) for v in values):
            kind = "name"
        resolved.append(Column(column.key, column.header, kind, column.drop, column.wide))
        formatters.append(number_format(values, kind) if kind in ("int", "count", "number", "money") else _text)
    cells = [[f(r.get(c.key)) for f, c in zip(formatters, resolved, strict=True)] for r in rows]
    return cells, resolved


# --- tables -------------------------------------------------------------------------------------------


def table_width(stream: Any = None) -> int:
    """The width a table is laid out for: the terminal's, else ``$COLUMNS``, else 100."""
    stream = stream or sys.stdout
    env = os.environ.get("COLUMNS", "").strip()
    if env.isdigit() and int(env) >= 40:
        return int(env)
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        pass
    return PIPE_WIDTH


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


@dataclass(slots=True)
class _Layout:
    shown: list[int]  # indexes of the columns shown
    widths: list[int]  # one per shown column
    hidden: list[str]  # headers of the columns dropped to fit
    cut: bool  # some value could not be shown whole


def layout(cells: Sequence[Sequence[str]], columns: Sequence[Column], width: int | None) -> _Layout:
    """Which columns to show at which widths so the table fits ``width`` (None: no limit).

    Names and numbers keep their full width (their header may wrap between words); text columns
    shrink down to their longest word (at most 24) and wrap. Droppable columns go first, highest
    ``drop`` first, then the rightmost among equals.
    """
    natural, least = [], []
    for i, column in enumerate(columns):
        values = [row[i] for row in cells]
        content = max((len(v) for v in values), default=0)
        header_min = _longest_word(column.title)
        natural.append(max(content, len(column.title)))
        if column.kind == "text":
            least.append(min(natural[-1], max(header_min, min(24, max((_longest_word(v) for v in values), default=0)))))
        else:
            least.append(max(content, header_min))  # a name or a figure whole; its header may wrap between words
    shown = list(range(len(columns)))
    hidden: list[int] = []

    def need(indexes: list[int]) -> int:
        return sum(least[i] for i in indexes) + GAP * max(0, len(indexes) - 1)

    if width is not None:
        while need(shown) > width:
            droppable = [i for i in shown if columns[i].drop > 0]
            if not droppable:
                break
            victim = max(droppable, key=lambda i: (columns[i].drop, i))
            shown.remove(victim)
            hidden.append(victim)
    widths = [least[i] for i in shown]
    cut = width is not None and need(shown) > width
    room = (width if width is not None else 10**9) - need(shown)
    # share the room left among the text columns (water-filling: a column that needs less gives the rest back)
    growable = [k for k, i in enumerate(shown) if columns[i].kind == "text"]
    while room > 0 and (growable := [k for k in growable if widths[k] < natural[shown[k]]]):
        share = max(1, room // len(growable))
        for k in growable:
            extra = min(share, natural[shown[k]] - widths[k], room)
            widths[k] += extra
            room -= extra
    # then to headers that would wrap: one line each while the room lasts
    for k, i in enumerate(shown):
        extra = min(room, natural[i] - widths[k])
        if extra > 0:
            widths[k] += extra
            room -= extra
    names = [columns[i].title or columns[i].key for i in sorted(hidden)]
    return _Layout(shown, widths, names, cut)


def _settle(column: Column, cells: Sequence[str]) -> Column:
    """A preformatted column of kind ``auto``: free text (wraps) when its cells are phrases, else a name."""
    if column.kind != "auto":
        return column
    phrases = any(" " in c.strip() for c in cells) and max((len(c) for c in cells), default=0) > 16
    return Column(column.key, column.header, "text" if phrases else "name", column.drop, column.wide)


def print_table(
    rows: Sequence[Sequence[str]],
    columns: Sequence[Column | str],
    *,
    title: str | None = None,
    caption: str | Sequence[str] | None = None,
    wide: bool = False,
    out: Any = None,
    empty: str = "none",
) -> None:
    """Print preformatted cells as a table that fits the width it is read at (see the module docstring).

    ``caption`` lines go under the table, left-aligned; a note on hidden columns is added when the
    table had to drop some. No rows: the title and ``none``.
    """
    stream = out or sys.stdout
    spec = [_settle(c, [row[i] for row in rows]) for i, c in enumerate(columns_of(columns))]
    if not wide:
        keep = [i for i, c in enumerate(spec) if not c.wide]
        spec = [spec[i] for i in keep]
        rows = [[row[i] for i in keep] for row in rows]
    width = table_width(stream)
    lines = [caption] if isinstance(caption, str) else list(caption or [])
    bold = _bold(stream)
    text: list[str] = []
    if not rows:
        text += _wrap(f"{title}: {empty}" if title else empty, width)
        for line in lines:
            text += _wrap(line, width)
        stream.write("".join(f"{line}\n" for line in text))
        return
    plan = layout(rows, spec, None if wide else width)
    widths = plan.widths
    if plan.cut:  # nothing left to hide: names give up room before figures, values end with ...
        widths = _reduce(widths, sum(widths) + GAP * (len(widths) - 1) - width, [spec[i] for i in plan.shown])
    page = max(width, sum(widths) + GAP * (len(widths) - 1)) if wide else width
    if title:  # above the table, at the page's width (a title is not squeezed to a narrow table's)
        text += [bold(line) for line in _wrap(title, page)]
    shown = [spec[i] for i in plan.shown]
    header = [_header_cell(column, w) for column, w in zip(shown, widths, strict=True)]
    text += [bold(line) for line in _join(header, shown, widths, valign_bottom=True)]
    text.append("\u2500" * (sum(widths) + GAP * (len(widths) - 1)))
    for row in rows:
        cells = [_cell(row[i], column, w) for i, column, w in zip(plan.shown, shown, widths, strict=True)]
        text += _join(cells, shown, widths, valign_bottom=False)
    if plan.hidden:
        lines.append(f"hidden to fit {width} columns: {', '.join(plan.hidden)} (--wide shows every column)")
    elif plan.cut:
        lines.append(f"values cut with ... to fit {width} columns: --wide or --format csv shows them whole")
    for line in lines:
        text += _wrap(line, page)
    stream.write("".join(f"{line}\n" for line in text))


# --- the plain-text table: no rich on the read paths (its import was ~30 ms of every command) ----------

ELLIPSIS = "\u2026"


def _bold(stream: Any) -> Callable[[str], str]:
    """Bold titles and headers on a terminal that takes colour (not with ``NO_COLOR`` or ``TERM=dumb``)."""
    if _isatty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb":
        return lambda line: f"\x1b[1m{line}\x1b[0m" if line.strip() else line
    return lambda line: line


def _wrap(text: str, width: int) -> list[str]:
    """A line of prose wrapped between words at ``width``; a word longer than a whole line starts a line of
    its own and is folded (a URL is not split after a few characters at the end of a line)."""
    width = max(1, width)
    out: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split():
            joined = f"{line} {word}" if line else word
            if len(joined) <= width:
                line = joined
                continue
            if line:
                out.append(line)
            while len(word) > width:
                out.append(word[:width])
                word = word[width:]
            line = word
        out.append(line)
    return out


def _reduce(widths: list[int], excess: int, columns: Sequence[Column]) -> list[int]:
    """Take ``excess`` characters off the columns (each keeps at least one): names and text first, in proportion
    to their widths (a long name gives up more than a short one), figures only when that is not enough."""
    widths = list(widths)
    for kinds in ({"name", "text", "auto"}, None):
        pool = [k for k, c in enumerate(columns) if kinds is None or c.kind in kinds]
        while excess > 0 and (spare := sum(widths[k] - 1 for k in pool)) > 0:
            cuts = {k: min(widths[k] - 1, excess * (widths[k] - 1) // spare) for k in pool}
            if not any(cuts.values()):  # the remainder: one from the widest
                cuts = {max(pool, key=lambda k: widths[k]): 1}
            for k, cut in cuts.items():
                widths[k] -= cut
                excess -= cut
    return widths


def _header_cell(column: Column, width: int) -> list[str]:
    """A header on one line, or wrapped between its words when its column is narrower than it."""
    title = column.title
    if len(title) <= width:
        return [title]
    import textwrap

    lines = textwrap.wrap(title, width=max(1, width), break_long_words=False, break_on_hyphens=False)
    return [_fit(line, width) for line in lines or [""]]


def _cell(value: str, column: Column, width: int) -> list[str]:
    """A value's lines: text wraps between words; a name or a figure is whole, or cut with an ellipsis when
    even hiding every droppable column left no room for it."""
    if column.kind == "text":
        return _wrap(value, width) if len(value) > width or "\n" in value else [value]
    return [_fit(value.replace("\n", " "), width)]


def _fit(value: str, width: int) -> str:
    """``value`` whole when it fits, else cut to ``width`` ending with an ellipsis."""
    if len(value) <= width:
        return value
    return value[: width - 1] + ELLIPSIS if width > 1 else ELLIPSIS


def _join(cells: list[list[str]], columns: list[Column], widths: list[int], *, valign_bottom: bool) -> list[str]:
    """One table row of (possibly several-line) cells as text lines: figures right-aligned, the rest left;
    a header's lines sit at the bottom of its row, a body cell's at the top."""
    height = max(len(c) for c in cells)
    gap = " " * GAP
    out = []
    for n in range(height):
        parts = []
        for cell, column, width in zip(cells, columns, widths, strict=True):
            k = n - (height - len(cell)) if valign_bottom else n
            piece = cell[k] if 0 <= k < len(cell) else ""
            parts.append(piece.rjust(width) if column.kind in RIGHT else piece.ljust(width))
        out.append(gap.join(parts).rstrip())
    return out


def emit(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str | Column],
    fmt: Format | str,
    *,
    title: str | None = None,
    caption: str | Sequence[str] | None = None,
    headers: Mapping[str, str] | None = None,
    out: Any = None,
    wide: bool = False,
    total: int | None = None,
    limit_flag: str = "--limit",
    empty: str = "none",
) -> None:
    """Print rows as a table, JSON (a list of objects) or CSV, with a stable column order.

    ``total``: how many rows there were before a limit; a table's footer says when rows were cut,
    and JSON/CSV say it on stderr (never silently).
    """
    out = out or sys.stdout
    fmt = Format(fmt)
    spec = columns_of(columns, headers)
    cut = total is not None and total > len(rows)
    if fmt is Format.json:
        out.write(to_json([{c.key: _plain(r.get(c.key)) for c in spec} for r in rows]) + "\n")
    elif fmt is Format.csv:
        buffer = io.StringIO()
        import csv

        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([c.key for c in spec])
        writer.writerows([[_csv_field(r.get(c.key)) for c in spec] for r in rows])
        out.write(buffer.getvalue())
    if fmt is not Format.table:
        if cut:
            note(f"costopt: {len(rows)} of {total} rows ({limit_flag} {len(rows)}); leave out {limit_flag} for all")
        return
    lines = [caption] if isinstance(caption, str) else list(caption or [])
    if cut:
        lines.append(f"showing {len(rows)} of {total}; {limit_flag} to change")
    cells, resolved = format_cells(rows, spec)
    print_table(cells, resolved, title=title, caption=lines, wide=wide, out=out, empty=empty)


def limited(rows: list[Any], limit: int | None, fmt: Format | str, default: int) -> tuple[list[Any], int]:
    """The rows a command shows and how many there were: tables default to ``default`` rows, JSON and
    CSV to all of them; an explicit ``--limit`` applies to every format."""
    if limit is None:
        limit = default if Format(fmt) is Format.table else None
    return (rows if limit is None else rows[:limit]), len(rows)


def say(text: str, *, indent: str = "", out: Any = None) -> None:
    """A line of prose wrapped at the table width (``indent`` before continuation lines), never mid-word."""
    import textwrap

    stream = out or sys.stdout
    width = table_width(stream)
    wrapped = textwrap.fill(text, width=width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    stream.write(wrapped + "\n")


def age_text(hours: float | None) -> str:
    """An age at a glance: ``9h`` under two days, else ``188d``."""
    if hours is None:
        return ""
    return f"{hours:.0f}h" if hours < 48 else f"{hours / 24:.0f}d"


def note(message: str) -> None:
    """A notice for humans on stderr, so stdout stays clean for --format json/csv."""
    sys.stderr.write(message.rstrip() + "\n")
