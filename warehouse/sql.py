"""Read-only SQL for users: the connection is read-only and cannot reach other files either."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
        cursor = con.execute(query)
        if cursor.description is None:
            return [], []
        columns = unique_names([d[0] for d in cursor.description])
        try:
            data = cursor.fetchall()
        except (ValueError, OverflowError, TypeError):
            # a value Python cannot hold (a date beyond year 9999 on older DuckDB releases): as DuckDB's text
            data = con.execute(f"SELECT COLUMNS(*)::VARCHAR FROM ({query.strip().rstrip(';')})").fetchall()
    except Exception as exc:  # a DuckDB error, whichever module raised it (the package or its engine)
        if not is_duckdb_error(exc):
            raise
        message = str(exc).splitlines()[0]
        if "read-only" in message or "read only" in message:
            raise UsageError(f"costopt sql is read-only: {message}") from None
        if "external access" in message or "lock_configuration" in message or "locked" in message:
            raise UsageError(f"costopt sql cannot reach other files or settings: {message}") from None
        raise UsageError(f"SQL error: {message}") from None
    return columns, [dict(zip(columns, row, strict=True)) for row in data]
