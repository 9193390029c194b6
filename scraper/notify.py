"""``--notify URL``: POST a JSON summary of a run's failures and alerts to a webhook.

A notification that cannot be delivered is logged and never fails the refresh: the prices are
already safely loaded, and the monitor still has the exit code. The URL is never printed: a Slack
or Teams webhook URL is itself the credential, so logs name only its host.
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


def check_url(url: str) -> None:
    """Refuse a --notify value that cannot be a webhook before anything runs (not after a night's loads)."""
    from urllib.parse import urlsplit

    from warehouse.errors import UsageError

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise UsageError("--notify needs an http:// or https:// webhook URL")  # the value itself may be a secret


def should_notify(body: dict[str, Any], *, always: bool = False) -> bool:
    return always or bool(body["failures"]) or any(a["severity"] != "info" for a in body["alerts"])


def public_host(url: str) -> str:
    """What may be shown of a webhook URL: its host (and port), never its path or query."""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
        port = urlsplit(url).port
    except ValueError:
        return "the webhook"
    if not host:
        return "the webhook"
    return f"{host}:{port}" if port else host


def _path_of(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return parts.path + (f"?{parts.query}" if parts.query else "")


def post(url: str, body: dict[str, Any], *, timeout: float = 10.0) -> str | None:
    """Deliver ``body``; return None on success, else a one-line reason that does not contain the URL."""
    import httpx

    from scraper.http import user_agent

    where = public_host(url)
    try:
        response = httpx.post(url, json=body, timeout=timeout, headers={"User-Agent": user_agent()})
    except httpx.HTTPError as exc:
        detail = (str(exc).splitlines() or [""])[0]
        for secret in {url, url.split("://", 1)[-1], _path_of(url)} - {"", "/"}:
            detail = detail.replace(secret, "...")
        return f"notify {where}: {type(exc).__name__}" + (f": {detail}" if detail else "")
    except Exception as exc:  # not a URL httpx can send to (InvalidURL is no HTTPError): never fail the refresh
        return f"notify {where}: not a usable webhook URL ({type(exc).__name__})"
    if response.status_code >= 400:
        return f"notify {where}: HTTP {response.status_code}"
    return None
