"""The project's error taxonomy.

Every error a user can cause or meet derives from :class:`CostoptError`, so the CLI can turn any of
them into a one-line message and a non-zero exit without ever printing a traceback. ``transient``
says whether trying again later may succeed (a 503, a lock) or not (a changed page layout).
"""

from __future__ import annotations


class CostoptError(Exception):
    """Base of every error costopt raises on purpose."""

    transient: bool = False
    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        text = str(self).replace("\n", " ").strip()
        return f"{text} ({self.hint})" if self.hint else text


class UsageError(CostoptError):
    """A value on the command line or in a call that cannot be understood."""

    exit_code = 2


class UnknownGpu(UsageError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown GPU {name!r}; known GPUs: {', '.join(known)}")
        self.name = name
        self.known = known


class WarehouseError(CostoptError):
    """The DuckDB file cannot be opened, read, migrated or written."""


class WarehouseLocked(WarehouseError):
    transient = True


class NeedsMigrating(WarehouseError):
    """A read-only open of a warehouse written by an older costopt: a read-write open migrates it."""


class ProviderError(CostoptError):
    """Fetching from a provider failed (HTTP status, timeout, size cap)."""


class TransientProviderError(ProviderError):
    transient = True


class ParseError(CostoptError):
    """A provider's response is not in the shape its parser knows (a changed page, bad JSON)."""


class MissingCredentials(CostoptError):
    """A provider needs a credential that is not configured; the provider is skipped."""


class ValidationError(CostoptError):
    """Parsed records break an invariant (price <= 0, unknown GPU, duplicate key)."""


class Interrupted(CostoptError):
    """Ctrl-C (SIGINT). Every load is one transaction, so nothing is half-written; exit 130 as shells expect."""

    exit_code = 130


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a Ctrl-C, including the form DuckDB gives it.

    DuckDB consumes SIGINT while a query runs and raises ``RuntimeError("Query interrupted")``
    instead of ``KeyboardInterrupt`` (or ``duckdb.InterruptException`` when the CLI's Ctrl-C watcher
    interrupted it); code that isolates failures with ``except Exception`` must not mistake that for
    an ordinary error and carry on.
    """
    if isinstance(exc, KeyboardInterrupt | Interrupted):
        return True
    if type(exc).__name__ == "InterruptException" and is_duckdb_error(exc):  # connection.interrupt()
        return True
    return type(exc) is RuntimeError and "interrupted" in str(exc).lower()


def is_duckdb_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from DuckDB (checked by module, so callers need not import duckdb)."""
    return type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb")


DAMAGED_MARKERS = ("could not read enough bytes", "corrupt", "checksum", "not a valid duckdb", "invalid block")


def from_duckdb(exc: BaseException, path: object = None) -> WarehouseError:
    """A DuckDB error met while reading or writing the warehouse, as one line with what to do.

    DuckDB reads a file's blocks lazily, so a truncated or damaged file may open fine and fail
    on the first query that touches a missing block ("Could not read enough bytes").
    """
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    where = f" {path}" if path else ""
    if any(marker in first.lower() for marker in DAMAGED_MARKERS):
        return WarehouseError(
            f"the warehouse file{where} is damaged or truncated: {first}",
            hint="restore it from a backup, or move it aside and run `costopt refresh` to build a new one",
        )
    return WarehouseError(f"warehouse error{where}: {first}")
