"""What every provider's tests need: a Fetcher that never sleeps, and a replay of the recordings."""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from scraper.base import ParseResult, RawPayload
from scraper.http import Fetcher, RetryPolicy
from scraper.providers import provider_class
from scraper.replay import ReplayTransport, load_manifest, recorded_at
from tests.conftest import REPO

FIXTURES = REPO / "fixtures"
T0 = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)  # when every recording in fixtures/ was made
# Where these Fetchers stream large bodies (AWS's price CSVs), removed when the test process ends. A Fetcher given no
# workdir writes them to the system temp dir and leaves them to its caller (refresh gives one and removes it); left
# there, every run of the suite put 56 tmp*.part files in /tmp.
SCRATCH = Path(tempfile.mkdtemp(prefix="costopt-test-fetch-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


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
        **{"workdir": SCRATCH, **extra},
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
