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
