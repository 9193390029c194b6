"""A fetch hands what it decoded to the parse of the same run, once, for that very body only."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from scraper.base import RawPayload
from scraper.providers.vastai import VastProvider

AT = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)


def payload(body: bytes) -> RawPayload:
    return RawPayload("https://example.test/p", AT, 200, body=body)


def test_the_parse_gets_what_the_fetch_decoded_once_and_only_for_the_same_body():
    provider = VastProvider({})
    first = payload(b'{"offers": []}')
    provider.remember_decoded(first, ["decoded"])
    assert provider.recall_decoded(payload(bytes(bytearray(first.body)))) is None  # equal bytes, another response
    assert provider.recall_decoded(first) == ["decoded"]
    assert provider.recall_decoded(first) is None  # handed over once: a second parse decodes again


def test_only_bodies_in_memory_and_within_the_budget_are_kept():
    provider = VastProvider({})
    provider.DECODED_BUDGET_BYTES = 10
    small, big = payload(b"[1, 2, 3]"), payload(b"[1, 2, 3, 4, 5]")
    provider.remember_decoded(small, [1, 2, 3])
    provider.remember_decoded(big, [1, 2, 3, 4, 5])  # 9 + 15 bytes > 10: not kept
    assert provider.recall_decoded(big) is None and provider.recall_decoded(small) == [1, 2, 3]
    streamed = RawPayload("https://example.test/f", AT, 200, path=Path(__file__))
    provider.remember_decoded(streamed, "x")
    assert provider.recall_decoded(streamed) is None
