"""Serve providers' requests from recorded files instead of the network.

Layout of a replay directory (``fixtures/`` is one, and the bundled snapshot is a replay of it)::

    DIR/<provider>/replay.json     the manifest
    DIR/<provider>/<file>          recorded response bodies in the provider's real format

``replay.json``::

    {"provider": "aws", "recorded_at": "2026-11-20T03:00:00Z",
     "about": "where the figures come from",
     "origin": "derived", "figures_as_of": "2026-01-21T00:00:00Z",
     "responses": [
        {"method": "GET", "url": "https://host/path?query", "file": "body.json",
         "status": 200, "headers": {"content-type": "application/json", "etag": "\\"abc\\""},
         "request_json": null}]}

A request matches an entry on method, host, path and query (parameters in any order; credentials
such as ``key`` ignored) and, where ``request_json`` is given, on the JSON body. An entry with an
``etag`` answers 304 to a matching ``If-None-Match``, so conditional GET can be exercised offline.
An unmatched request is a 404 naming the URL, so a provider that asks for something new fails loudly.

``origin`` says what the recorded bodies are: ``recorded`` (real responses, the default), ``derived``
(published prices written into the provider's real format by a script) or ``generated`` (sampled or
invented data, e.g. marketplace listings reproducing published statistics). ``figures_as_of`` is the
vintage of derived or generated figures; the loaded prices count their age from it (not from
``recorded_at``, which is when the recording was assembled), and every plan row built on them says
what they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from scraper.http import SECRET_PARAMS
from warehouse.errors import UsageError
from warehouse.records import PriceRecord

MANIFEST = "replay.json"


@dataclass(frozen=True, slots=True)
class Recorded:
    method: str
    match_key: tuple[str, str, str, tuple[tuple[str, str], ...]]
    path: Path
    status: int
    headers: dict[str, str]
    request_json: Any
    fetched_at: datetime


def _match_key(method: str, url: httpx.URL) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    params = tuple(sorted((k, v) for k, v in url.params.multi_items() if k.lower() not in SECRET_PARAMS))
    return (method.upper(), url.host, url.path, params)


def _parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def load_manifest(directory: Path) -> list[Recorded]:
    manifest = directory / MANIFEST
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        recorded_at = _parse_time(data["recorded_at"])
        entries = []
        for item in data["responses"]:
            path = directory / item["file"]
            if not path.is_file():
                raise UsageError(f"replay: {manifest} names {item['file']}, which does not exist")
            entries.append(
                Recorded(
                    method=item.get("method", "GET").upper(),
                    match_key=_match_key(item.get("method", "GET"), httpx.URL(item["url"])),
                    path=path,
                    status=int(item.get("status", 200)),
                    headers={k.lower(): v for k, v in item.get("headers", {}).items()},
                    request_json=item.get("request_json"),
                    fetched_at=_parse_time(item["fetched_at"]) if "fetched_at" in item else recorded_at,
                )
            )
        return entries
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"replay: cannot read {manifest}: {exc}") from None


ORIGINS = ("recorded", "derived", "generated")


@dataclass(frozen=True, slots=True)
class Origin:
    """What a recording is: real responses, or prices derived from publications, or generated data."""

    kind: str  # one of ORIGINS
    figures_as_of: datetime | None = None


def origin_of(directory: Path) -> Origin:
    """The manifest's declared origin (default: recorded); a bad declaration is a UsageError."""
    manifest = directory / MANIFEST
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        kind = data.get("origin", "recorded")
        as_of = data.get("figures_as_of")
        when = _parse_time(as_of) if as_of else None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise UsageError(f"replay: cannot read {manifest}: {exc}") from None
    if kind not in ORIGINS:
        raise UsageError(f"replay: {manifest}: origin {kind!r} is not one of {', '.join(ORIGINS)}")
    return Origin(kind, when)


def apply_origin(records: list[PriceRecord], origin: Origin) -> list[PriceRecord]:
    """Records whose age counts from the recording's declared vintage, where it is older than their own time."""
    if origin.figures_as_of is None:
        return records
    out = []
    for r in records:
        if r.vouched_at > origin.figures_as_of:
            r = replace(r, source_time=origin.figures_as_of, source_basis="declared")
        out.append(r)
    return out


def recorded_at(directory: Path) -> datetime:
    data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    return _parse_time(data["recorded_at"])


class ReplayTransport(httpx.AsyncBaseTransport):
    """An httpx transport that answers from a provider's recorded files."""

    def __init__(self, entries: list[Recorded]) -> None:
        self.entries = entries
        self.served: list[str] = []

    def fetched_at(self, request: httpx.Request) -> datetime | None:
        entry = self._find(request)
        return entry.fetched_at if entry else None

    def _find(self, request: httpx.Request) -> Recorded | None:
        key = _match_key(request.method, request.url)
        for entry in self.entries:
            if entry.match_key != key:
                continue
            if entry.request_json is not None:
                try:
                    if json.loads(request.content or b"null") != entry.request_json:
                        continue
                except ValueError:
                    continue
            return entry
        return None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        entry = self._find(request)
        if entry is None:
            return httpx.Response(404, text=f"replay: nothing recorded for {request.method} {request.url}")
        self.served.append(str(request.url))
        etag = entry.headers.get("etag")
        if etag and request.headers.get("if-none-match") == etag:
            return httpx.Response(304, headers=entry.headers)
        body = entry.path.read_bytes()
        headers = {k: v for k, v in entry.headers.items() if k != "content-length"}
        return httpx.Response(entry.status, headers=headers, content=body)


def provider_dirs(root: Path) -> dict[str, Path]:
    """Provider name -> its recorded directory, for every provider recorded under ``root``."""
    if not root.is_dir():
        raise UsageError(f"replay: {root} is not a directory")
    return {p.name: p for p in sorted(root.iterdir()) if (p / MANIFEST).is_file()}
