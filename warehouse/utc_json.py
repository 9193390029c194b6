"""UTC instants in the JSON manifests costopt writes (the bundled history's and the seed's): ISO 8601
with a ``Z``, read back as aware datetimes, so a manifest says the same instant on any host."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def instants_to_json(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with the datetimes under ``names`` written as ``2026-07-30T00:00:00Z`` (None stays None)."""
    out = dict(data)
    for name in names:
        value = out[name]
        out[name] = value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None
    return out


def instants_from_json(data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The inverse of ``instants_to_json``: the strings under ``names`` as aware UTC datetimes."""
    out = dict(data)
    for name in names:
        if out.get(name):
            out[name] = datetime.fromisoformat(out[name].replace("Z", "+00:00"))
    return out
