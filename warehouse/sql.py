"""Read-only SQL for users: the connection is read-only and cannot reach other files either."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from warehouse.errors import UsageError, is_duckdb_error

if TYPE_CHECKING:
    import duckdb


def unique_names(names: list[str]) -> list[str]:
    """``names`` with each repeat renamed as DuckDB renames it in a subquery: ``a, a, a_1`` -> ``a, a_1, a_1_1``.

    A result may repeat a column name (``SELECT o.gpu, p.gpu``), but a row is an object keyed by name: keyed by
    the raw names, the second column's value overwrote the first's in every format. DuckDB's own rule (a per-name
    counter, names compared without case) keeps the names the ones a user would reference after wrapping the
    query in ``SELECT * FROM (...)``.
    """
    taken: set[str] = set()
    counters: dict[str, int] = {}
    out = []
    for name in names:
        candidate = name
        if candidate.lower() in taken:
            n = counters.get(name.lower(), 0)
            while True:
                n += 1
                candidate = f"{name}_{n}"
                if candidate.lower() not in taken:
                    break
            counters[name.lower()] = n
        taken.add(candidate.lower())
        out.append(candidate)
    return out


def run_read_only(con: duckdb.DuckDBPyConnection, query: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Run ``query`` on a read-only connection; any write, ATTACH or COPY is refused.

    Returns the column names, made unique (``unique_names``), and each row as an object keyed by them.
    """
    if not query.strip():
        raise UsageError("empty SQL query")
    # the file is opened read-only; also forbid reaching other files (ATTACH ... , COPY ... TO)
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    try:
        select = _one_select(con, query)
        exact = _exact_rows(con, select) if select is not None else None
        if exact is not None:
            columns, data = exact
        else:
            cursor = con.execute(query)
            if cursor.description is None:
                return [], []
            columns = unique_names([d[0] for d in cursor.description])
            data = cursor.fetchall()
    except (ValueError, OverflowError, TypeError) as exc:
        if is_duckdb_error(exc):
            _raise_usage(exc)
        # a value Python cannot hold (a date before year 1): as DuckDB's text
        try:
            cursor = con.execute(f"SELECT COLUMNS(*)::VARCHAR FROM ({query.strip().rstrip(';')})")
            columns = unique_names([d[0] for d in cursor.description or ()])
            data = cursor.fetchall()
        except Exception as text_exc:
            _raise_usage(text_exc)
    except Exception as exc:  # a DuckDB error, whichever module raised it (the package or its engine)
        _raise_usage(exc)
    return columns, [dict(zip(columns, row, strict=True)) for row in data]


def _raise_usage(exc: Exception) -> NoReturn:
    if not is_duckdb_error(exc):
        raise exc
    message = str(exc).splitlines()[0]
    if "read-only" in message or "read only" in message:
        raise UsageError(f"costopt sql is read-only: {message}") from None
    if "external access" in message or "lock_configuration" in message or "locked" in message:
        raise UsageError(f"costopt sql cannot reach other files or settings: {message}") from None
    raise UsageError(f"SQL error: {message}") from None


# --- values Python's types would change, as exact text ---------------------------------------------------------
#
# DuckDB hands an INTERVAL to Python as a timedelta, which has no months: a month became 30 days and a year 360
# (DATE '2026-01-31' + INTERVAL 1 MONTH is not 30 days later). An infinite DATE or TIMESTAMP became date.max or
# datetime.max, a real-looking 9999-12-31 (the TIMESTAMPTZ one without its offset), and a TIMESTAMP_NS lost its
# nanoseconds. A single query's columns of those types are read exactly, in the same execution: INTERVAL as an
# ISO 8601 duration with its months, an infinite date or timestamp as DuckDB writes it ('infinity',
# '-infinity'), a TIMESTAMP_NS as ISO 8601 text with its nine digits. Values inside a list, struct or map are
# read as Python reads them.

_POINTS_IN_TIME = frozenset(
    {"DATE", "TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ"}
)


def _one_select(con: duckdb.DuckDBPyConnection, query: str) -> str | None:
    """The text of ``query`` when it is one SELECT (SELECT, WITH, FROM, VALUES, SHOW ...), without its ``;``."""
    statements = con.extract_statements(query)
    if len(statements) != 1 or getattr(statements[0].type, "name", None) != "SELECT":
        return None
    return str(statements[0].query).strip().rstrip(";")


def _exact_rows(con: duckdb.DuckDBPyConnection, select: str) -> tuple[list[str], list[tuple[Any, ...]]] | None:
    """The columns and rows of one SELECT, the columns of the types above read exactly, in one execution; None
    when the statement cannot be described (then it is run as it is)."""
    try:
        described = con.execute(f"DESCRIBE {select}").fetchall()  # binds, does not run the query
    except Exception:
        return None
    columns = unique_names([str(row[0]) for row in described])
    kinds = [str(row[1]) for row in described]
    fix = [i for i, kind in enumerate(kinds) if kind in ("INTERVAL", "TIMESTAMP_NS") or kind in _POINTS_IN_TIME]
    if not fix:
        return columns, con.execute(select).fetchall()
    # every column as it is (#n: by position, as names may repeat), then one exact companion per column to fix;
    # the newlines keep a trailing -- comment of the query inside it
    refs = [f"#{i + 1}" for i in range(len(kinds))] + [_companion(kinds[i], f"#{i + 1}") for i in fix]
    rows = con.execute(f"SELECT {', '.join(refs)} FROM (\n{select}\n) AS q").fetchall()
    out = []
    for row in rows:
        values = list(row[: len(kinds)])
        for i, exact in zip(fix, row[len(kinds) :], strict=True):
            if kinds[i] == "INTERVAL":
                values[i] = None if exact is None else iso_duration(*exact)
            elif exact is not None:  # an infinite point in time, or a TIMESTAMP_NS
                values[i] = exact
        out.append(tuple(values))
    return columns, out


def _companion(kind: str, ref: str) -> str:
    if kind == "INTERVAL":  # the three fields DuckDB keeps: months, days, microseconds
        parts = f"datepart(['year', 'month', 'day', 'hour', 'minute', 'microsecond'], {ref})"
        return (
            f"CASE WHEN {ref} IS NOT NULL THEN [{parts}.year * 12 + {parts}.month, {parts}.day, "
            f"({parts}.hour * 60 + {parts}.minute) * 60000000 + {parts}.microsecond] END"
        )
    if kind == "TIMESTAMP_NS":
        return f"CASE WHEN isinf({ref}) THEN {ref}::VARCHAR ELSE replace({ref}::VARCHAR, ' ', 'T') END"
    return f"CASE WHEN isinf({ref}) THEN {ref}::VARCHAR END"


def iso_duration(months: int, days: int, micros: int) -> str:
    """ISO 8601 duration of DuckDB's interval fields: ``P1Y2M3DT4H5M6.5S``; ``-P1M2D`` when every field is negative.

    DuckDB keeps months, days and microseconds apart (a month is not 30 days, a day not always 24 hours in a time
    zone), and so does this: a year is 12 months, an hour 3,600 s. Fields of different signs each carry their own
    (``P1M-1D``, as DuckDB's ``1 month -1 day``), the extension Java's Period and PostgreSQL read.
    """
    if (months, days, micros) != (0, 0, 0) and months <= 0 and days <= 0 and micros <= 0:
        return "-" + iso_duration(-months, -days, -micros)
    years, months = int(months / 12), months - 12 * int(months / 12)  # toward zero: each keeps the field's sign
    sign = "-" if micros < 0 else ""
    hours, rest = divmod(abs(micros), 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    second = f"{seconds}.{fraction:06d}".rstrip("0") if fraction else f"{seconds}"
    date = "".join(f"{n}{unit}" for n, unit in ((years, "Y"), (months, "M"), (days, "D")) if n)
    clock = "".join(f"{sign}{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
    clock += f"{sign}{second}S" if seconds or fraction else ""
    if not date and not clock:
        return "PT0S"
    return "P" + date + (f"T{clock}" if clock else "")
