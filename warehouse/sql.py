"""Read-only SQL for users: the connection is read-only and cannot reach other files either."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warehouse.errors import UsageError, is_duckdb_error

if TYPE_CHECKING:
    import duckdb


def run_read_only(con: duckdb.DuckDBPyConnection, query: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Run ``query`` on a read-only connection; any write, ATTACH or COPY is refused."""
    if not query.strip():
        raise UsageError("empty SQL query")
    # the file is opened read-only; also forbid reaching other files (ATTACH ... , COPY ... TO)
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    try:
        cursor = con.execute(query)
        if cursor.description is None:
            return [], []
        columns = [d[0] for d in cursor.description]
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
