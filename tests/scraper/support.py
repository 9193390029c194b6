"""What every provider's tests need: a Fetcher that never sleeps, and a replay of the recordings."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx

from scraper.base import ParseResult, RawPayload
from scraper.http import Fetcher, RetryPolicy
from scraper.providers import provider_class
from scraper.replay import ReplayTransport, load_manifest, recorded_at
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"
T0 = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)  # when every recording in fixtures/ was made


def make_fetcher(
    client: httpx.AsyncClient | None, provider: str, *, attempts: int = 3, **extra: Any
) -> tuple[Fetcher, list[float]]:
    """A Fetcher at T0 whose back-off sleeps are recorded instead of slept."""
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    fetcher = Fetcher(
        client=client or httpx.AsyncClient(),
        provider=provider,
        retry=RetryPolicy(attempts=attempts, base_seconds=1.0),
        sleep=sleep,
        clock=lambda: T0,
        **extra,
    )
    return fetcher, slept


def replay(name: str, transport: httpx.AsyncBaseTransport | None = None, attempts: int = 1) -> list[RawPayload]:
    """The payloads a provider fetches from its recordings in fixtures/<name>/ (credentials dropped)."""
    provider = provider_class(name).from_env({}, replay=True)
    directory = FIXTURES / name

    async def go() -> list[RawPayload]:
        client = httpx.AsyncClient(transport=transport or ReplayTransport(load_manifest(directory)))
        fetcher, _ = make_fetcher(client, name, attempts=attempts)
        fetcher.clock = lambda: recorded_at(directory)
        try:
            return await provider.fetch(fetcher)
        finally:
            await client.aclose()

    return asyncio.run(go())


def replay_parse(name: str) -> tuple[list[RawPayload], ParseResult]:
    payloads = replay(name)
    return payloads, provider_class(name).from_env({}, replay=True).parse(payloads)
