"""``--notify URL``: POST a JSON summary of a run's failures and alerts to a webhook.

A notification that cannot be delivered is logged and never fails the refresh: the prices are
already safely loaded, and the monitor still has the exit code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from scraper.refresh import Outcome


def summary(outcomes: list[Outcome], *, started_at: datetime, db: str, exit_code: int) -> dict[str, Any]:
    return {
        "event": "costopt.refresh",
        "started_at": started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "warehouse": db,
        "exit_code": exit_code,
        "ok": [o.provider for o in outcomes if o.status == "ok"],
        "failures": [
            {"provider": o.provider, "status": o.status, "error": o.error}
            for o in outcomes
            if o.status in ("failed", "cancelled")
        ],
        "alerts": [a.as_dict() for o in outcomes for a in o.alerts],
        "providers": [o.as_dict() for o in outcomes],
    }


def should_notify(body: dict[str, Any], *, always: bool = False) -> bool:
    return always or bool(body["failures"]) or any(a["severity"] != "info" for a in body["alerts"])


def post(url: str, body: dict[str, Any], *, timeout: float = 10.0) -> str | None:
    """Deliver ``body``; return None on success, else a one-line reason."""
    import httpx

    from scraper.http import user_agent

    try:
        response = httpx.post(url, json=body, timeout=timeout, headers={"User-Agent": user_agent()})
    except httpx.HTTPError as exc:
        return f"notify {url}: {type(exc).__name__}: {exc}"
    if response.status_code >= 400:
        return f"notify {url}: HTTP {response.status_code}"
    return None
