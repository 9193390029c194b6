"""The one HTTP client: retries, Retry-After, size cap, conditional GET, credentials kept out of URLs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import respx

from scraper.http import Fetcher, RetryPolicy, Validators, make_client, parse_retry_after, user_agent
from warehouse.errors import ProviderError, TransientProviderError

URL = "https://prices.example.test/api/items"


def fetcher(**kwargs) -> tuple[Fetcher, list[float]]:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    kwargs.setdefault("retry", RetryPolicy(attempts=3, base_seconds=1.0))
    return Fetcher(client=make_client(), provider="test", sleep=sleep, **kwargs), slept


def run(coro):
    return asyncio.run(coro)


@respx.mock
def test_429_then_200_honours_retry_after():
    route = respx.get(URL).mock(
        side_effect=[httpx.Response(429, headers={"Retry-After": "7"}), httpx.Response(200, json={"ok": 1})]
    )
    f, slept = fetcher()
    payload = run(f.get(URL))
    assert payload.status == 200 and payload.body == b'{"ok":1}'
    assert slept == [7.0] and route.call_count == 2


@respx.mock
def test_a_retry_after_longer_than_the_cap_fails_at_once_instead_of_asking_sooner():
    """A Retry-After over RetryPolicy.cap_seconds was cut to the cap: the server was asked again after 60 s, three
    times, when it had said 120, and the README said "honouring Retry-After"."""
    route = respx.get(URL).mock(return_value=httpx.Response(503, headers={"Retry-After": "120"}))
    f, slept = fetcher()
    with pytest.raises(TransientProviderError) as raised:
        run(f.get(URL))
    assert str(raised.value) == (
        f"test: HTTP 503 from {URL} asking to retry after 120s, longer than the 60s a refresh waits; "
        "the next run tries again"
    )
    assert slept == [] and route.call_count == 1


@respx.mock
def test_a_retry_after_at_the_cap_is_waited_exactly():
    route = respx.get(URL).mock(
        side_effect=[httpx.Response(429, headers={"Retry-After": "60"}), httpx.Response(200, json={"ok": 1})]
    )
    f, slept = fetcher()
    assert run(f.get(URL)).status == 200
    assert slept == [60.0] and route.call_count == 2


@respx.mock
def test_5xx_exhausted_is_transient_with_the_url():
    respx.get(URL).mock(return_value=httpx.Response(503))
    f, slept = fetcher()
    with pytest.raises(TransientProviderError, match=r"HTTP 503 from https://prices.example.test/api/items after 3"):
        run(f.get(URL))
    assert len(slept) == 2 and all(0.5 <= s <= 4.0 for s in slept)  # exponential backoff with jitter


@respx.mock
def test_timeout_is_retried_then_reported():
    respx.get(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    f, _ = fetcher()
    with pytest.raises(TransientProviderError, match="timeout"):
        run(f.get(URL))


@respx.mock
def test_404_is_terminal_without_retry():
    route = respx.get(URL).mock(return_value=httpx.Response(404))
    f, slept = fetcher()
    with pytest.raises(ProviderError, match="HTTP 404"):
        run(f.get(URL))
    assert route.call_count == 1 and slept == []


@respx.mock
def test_size_cap():
    respx.get(URL).mock(return_value=httpx.Response(200, content=b"x" * 5000))
    f, _ = fetcher(max_body_bytes=1000)
    with pytest.raises(ProviderError, match="cap"):
        run(f.get(URL))


@respx.mock
def test_conditional_get_sends_validators_and_reports_304():
    route = respx.get(URL).mock(return_value=httpx.Response(304, headers={"ETag": '"v1"'}))
    f, _ = fetcher(validators={URL: Validators(etag='"v1"', last_modified="Wed, 18 Nov 2026 03:00:00 GMT")})
    payload = run(f.get(URL, conditional=True, scope=("us-east-1", "on_demand")))
    request = route.calls.last.request
    assert request.headers["If-None-Match"] == '"v1"'
    assert request.headers["If-Modified-Since"] == "Wed, 18 Nov 2026 03:00:00 GMT"
    assert payload.not_modified and payload.body == b"" and payload.scope == ("us-east-1", "on_demand")
    assert f.bytes_downloaded == 0 and f.new_validators[URL].etag == '"v1"'


@respx.mock
def test_new_validators_are_kept_and_bytes_counted():
    respx.get(URL).mock(return_value=httpx.Response(200, content=b"abc", headers={"ETag": '"v2"'}))
    f, _ = fetcher()
    run(f.get(URL, conditional=True))
    assert f.new_validators[URL].etag == '"v2"' and f.bytes_downloaded == 3


@respx.mock
def test_stream_to_file(tmp_path):
    respx.get(URL).mock(return_value=httpx.Response(200, content=b"a,b\n1,2\n"))
    f, _ = fetcher(workdir=tmp_path)
    payload = run(f.get(URL, to_file=True))
    assert payload.body == b"" and payload.path is not None and payload.path.read_bytes() == b"a,b\n1,2\n"


@respx.mock
def test_api_key_is_sent_but_not_stored():
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={}))
    f, _ = fetcher()
    payload = run(f.get(URL, params={"key": "SECRET", "pageSize": 5000}))
    assert "key=SECRET" in str(route.calls.last.request.url)
    assert "SECRET" not in payload.url and "pageSize=5000" in payload.url and "SECRET" not in str(f.urls)


def test_user_agent_names_costopt():
    assert user_agent().startswith("costopt/")
    assert make_client().headers["User-Agent"] == user_agent()


def test_retry_after_http_date():
    now = datetime(2026, 11, 20, 3, 0, tzinfo=UTC)
    later = (now + timedelta(seconds=30)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after(later, now) == pytest.approx(30)
    assert parse_retry_after("garbage") is None


class _Drip(httpx.AsyncByteStream):
    """A body a few bytes at a time, each within any read timeout, the whole far slower than one."""

    async def __aiter__(self):
        for _ in range(50):
            await asyncio.sleep(0.1)
            yield b'{"x": 1}' * 2

    async def aclose(self) -> None:
        pass


@respx.mock
def test_an_answer_that_never_arrives_whole_is_a_timeout():
    """A server dripping a page held a request 60 s under COSTOPT_HTTP_TIMEOUT=3 (httpx's timeout is per read)."""
    route = respx.get(URL).mock(side_effect=lambda request: httpx.Response(200, stream=_Drip()))
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    f = Fetcher(client=make_client(timeout=0.25), provider="test", sleep=sleep, retry=RetryPolicy(attempts=2))
    started = asyncio.run(_timed(f.get(URL)))
    assert isinstance(started[1], TransientProviderError)
    assert str(started[1]) == f"test: no whole answer within 1s from {URL} after 2 attempts"
    assert route.call_count == 2 and started[0] < 4  # two attempts of 1 s, not two of 5 s


async def _timed(coro):  # type: ignore[no-untyped-def]
    import time

    start = time.monotonic()
    try:
        await coro
    except TransientProviderError as exc:
        return time.monotonic() - start, exc
    return time.monotonic() - start, None


@respx.mock
def test_a_redirect_loop_is_one_line_naming_the_url():
    """It was 'unexpected TooManyRedirects' with no URL."""
    respx.get(URL).mock(return_value=httpx.Response(302, headers={"Location": URL}))
    f, _ = fetcher()
    with pytest.raises(ProviderError) as caught:
        run(f.get(URL))
    assert caught.value.one_line() == f"test: too many redirects from {URL}"


@respx.mock
def test_408_is_retried():
    route = respx.get(URL).mock(side_effect=[httpx.Response(408), httpx.Response(200, json={"ok": 1})])
    f, slept = fetcher()
    assert run(f.get(URL)).status == 200 and route.call_count == 2 and len(slept) == 1
