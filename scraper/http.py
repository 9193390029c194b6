"""The one HTTP client factory and the one retry policy.

Every request costopt makes goes through :class:`Fetcher`: explicit timeouts, a User-Agent naming
costopt and its version, a per-host concurrency limit, a response size cap, gzip, conditional GET
(ETag / Last-Modified) and retries on 429, 5xx and connection errors with exponential backoff and
jitter, honouring ``Retry-After`` up to 60 s (a longer one fails the request at once, see ``RetryPolicy``).
Providers never build their own client, so none of them can forget one of these.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from scraper.base import RawPayload
from warehouse.errors import ProviderError, TransientProviderError

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})  # 408: the server timed the request out; try again
MAX_BODY_BYTES = 256 * 1024 * 1024  # in-memory bodies
WHOLE_ANSWER_TIMEOUTS = 4  # an in-memory answer must arrive whole within this many COSTOPT_HTTP_TIMEOUTs
MAX_FILE_BYTES = 8 * 1024 * 1024 * 1024  # bulk files streamed to disk


def user_agent() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("costopt")
    except PackageNotFoundError:  # running from a source tree
        v = "0+unknown"
    return f"costopt/{v} (+https://github.com/costopt/costopt)"


def make_client(*, timeout: float = 30.0, transport: httpx.AsyncBaseTransport | None = None) -> httpx.AsyncClient:
    """The project's HTTP client: explicit timeouts, our User-Agent, gzip, proxies from the env."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)),
        headers={"User-Agent": user_agent(), "Accept-Encoding": "gzip"},
        follow_redirects=True,
        transport=transport,
        trust_env=True,
    )


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait. ``cap_seconds`` bounds every wait, a ``Retry-After`` too: a refresh gathers
    every provider, so one server asking for an hour would hold the whole night's run (until the provider's
    30-minute cap). A server that asks for longer is not asked again sooner than it said (that earns another 429
    or 503): the request fails at once, transient, and the next run tries again (``Fetcher._with_retries``)."""

    attempts: int = 4
    base_seconds: float = 1.0
    cap_seconds: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.cap_seconds)
        backoff = self.base_seconds * (2**attempt)
        return min(backoff * (0.5 + random.random()), self.cap_seconds)  # noqa: S311 - jitter


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


@dataclass(slots=True)
class Validators:
    """What a previous successful run saw of one URL, for conditional GET."""

    etag: str | None = None
    last_modified: str | None = None


@dataclass
class Fetcher:
    """One provider run's view of the network: requests, retries, validators and tallies."""

    client: httpx.AsyncClient
    provider: str
    validators: dict[str, Validators] = field(default_factory=dict)
    state: dict[str, str] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    per_host: int = 4
    max_body_bytes: int = MAX_BODY_BYTES
    max_file_bytes: int = MAX_FILE_BYTES
    workdir: Path | None = None
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    bytes_downloaded: int = 0
    new_validators: dict[str, Validators] = field(default_factory=dict)
    new_state: dict[str, str] = field(default_factory=dict)
    urls: list[str] = field(default_factory=list)
    _host_limits: dict[str, asyncio.Semaphore] = field(default_factory=dict)

    def remember(self, key: str, value: str) -> None:
        """Keep a provider-specific change marker (e.g. an AWS publication version) on success."""
        self.new_state[key] = value

    def recall(self, key: str) -> str | None:
        return self.state.get(key)

    async def get(
        self,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        conditional: bool = False,
        scope: tuple[str, ...] = (),
        to_file: bool = False,
    ) -> RawPayload:
        return await self.request(
            "GET",
            url,
            params=params,
            headers=headers,
            conditional=conditional,
            scope=scope,
            to_file=to_file,
        )

    async def post(
        self,
        url: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        scope: tuple[str, ...] = (),
    ) -> RawPayload:
        return await self.request("POST", url, json=json, headers=headers, scope=scope)

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        conditional: bool = False,
        scope: tuple[str, ...] = (),
        to_file: bool = False,
    ) -> RawPayload:
        request = self.client.build_request(method, url, params=params, headers=headers, json=json)
        public_url = _public_url(request.url)
        if conditional and (known := self.validators.get(public_url)):
            if known.etag:
                request.headers["If-None-Match"] = known.etag
            if known.last_modified:
                request.headers["If-Modified-Since"] = known.last_modified
        host = request.url.host
        limit = self._host_limits.setdefault(host, asyncio.Semaphore(self.per_host))
        async with limit:
            return await self._with_retries(request, public_url, scope, to_file)

    async def _with_retries(
        self, request: httpx.Request, url: str, scope: tuple[str, ...], to_file: bool
    ) -> RawPayload:
        # httpx's timeout bounds each wait for bytes, not the whole answer: a server sending a page a few bytes
        # every two seconds held one request 60 s under COSTOPT_HTTP_TIMEOUT=3. An answer read into memory (an
        # API page) must come whole within WHOLE_ANSWER_TIMEOUTS timeouts; a bulk file streamed to disk (an AWS
        # offer file, hundreds of MB) is bounded by its provider's cap instead.
        whole = None if to_file else WHOLE_ANSWER_TIMEOUTS * (self.client.timeout.read or 30.0)
        for attempt in range(self.retry.attempts):
            last = attempt == self.retry.attempts - 1
            try:
                try:
                    # asyncio.timeout, not wait_for: no task of its own, so a Ctrl-C's cancellation reaches the
                    # request where it is (a wait_for task could still send on a client already closed)
                    async with asyncio.timeout(whole):
                        return await self._once(request, url, scope, to_file)
                except TimeoutError:
                    raise _Retryable(f"no whole answer within {whole:g}s") from None
            except _Retryable as exc:
                if exc.retry_after is not None and exc.retry_after > self.retry.cap_seconds:
                    raise TransientProviderError(
                        f"{self.provider}: {exc.reason} from {url} asking to retry after {exc.retry_after:g}s, "
                        f"longer than the {self.retry.cap_seconds:g}s a refresh waits; the next run tries again"
                    ) from None
                if last:
                    raise TransientProviderError(
                        f"{self.provider}: {exc.reason} from {url} after {self.retry.attempts} attempts"
                    ) from None
                await self.sleep(self.retry.delay(attempt, exc.retry_after))
        raise AssertionError("unreachable")

    async def _once(self, request: httpx.Request, url: str, scope: tuple[str, ...], to_file: bool) -> RawPayload:
        fetched_at = self.clock()
        try:
            response = await self.client.send(request, stream=True)
        except httpx.TooManyRedirects:
            raise ProviderError(f"{self.provider}: too many redirects from {url}") from None
        except httpx.TimeoutException:
            raise _Retryable("timeout") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection error ({type(exc).__name__})") from None
        try:
            if response.status_code in RETRY_STATUSES:
                raise _Retryable(
                    f"HTTP {response.status_code}",
                    parse_retry_after(response.headers.get("Retry-After")),
                )
            if response.status_code == 304:
                self.urls.append(url)
                self._keep_validators(url, response)
                return RawPayload(
                    url=url,
                    fetched_at=fetched_at,
                    status=304,
                    method=request.method,
                    not_modified=True,
                    scope=scope,
                    headers=dict(response.headers),
                )
            if response.status_code >= 400:
                raise ProviderError(f"{self.provider}: HTTP {response.status_code} from {url}")
            body, path = await self._read_body(response, url, to_file)
        except httpx.TimeoutException:
            raise _Retryable("timeout while reading") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"connection dropped ({type(exc).__name__})") from None
        except httpx.DecodingError:
            raise _Retryable("a body that does not decode (truncated or corrupt compression)") from None
        finally:
            await response.aclose()
        self.urls.append(url)
        self._keep_validators(url, response)
        return RawPayload(
            url=url,
            fetched_at=fetched_at,
            status=response.status_code,
            body=body,
            path=path,
            content_type=response.headers.get("content-type", ""),
            method=request.method,
            request_body=request.content or None,
            scope=scope,
            headers=dict(response.headers),
        )

    async def _read_body(self, response: httpx.Response, url: str, to_file: bool) -> tuple[bytes, Path | None]:
        cap = self.max_file_bytes if to_file else self.max_body_bytes
        declared = response.headers.get("Content-Length")
        if (
            declared
            and declared.isdigit()
            and int(declared) > cap
            and "gzip" not in (response.headers.get("Content-Encoding") or "")
        ):
            raise ProviderError(f"{self.provider}: {url} is {int(declared)} bytes, over the {cap}-byte cap")
        size = 0
        if to_file:
            directory = self.workdir or Path(tempfile.gettempdir())
            directory.mkdir(parents=True, exist_ok=True)
            handle = tempfile.NamedTemporaryFile(dir=directory, suffix=".part", delete=False)  # noqa: SIM115
            path = Path(handle.name)
            try:
                with handle:
                    async for chunk in response.aiter_bytes(1 << 20):
                        size += len(chunk)
                        if size > cap:
                            raise ProviderError(f"{self.provider}: {url} exceeds the {cap}-byte cap")
                        handle.write(chunk)
            except BaseException:
                path.unlink(missing_ok=True)
                raise
            self.bytes_downloaded += response.num_bytes_downloaded or size  # replayed bodies are not counted by httpx
            return b"", path
        chunks: list[bytes] = []
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > cap:
                raise ProviderError(f"{self.provider}: {url} exceeds the {cap}-byte cap")
            chunks.append(chunk)
        self.bytes_downloaded += response.num_bytes_downloaded or size  # replayed bodies are not counted by httpx
        return b"".join(chunks), None

    def _keep_validators(self, url: str, response: httpx.Response) -> None:
        etag = response.headers.get("ETag")
        modified = response.headers.get("Last-Modified")
        if etag or modified:
            self.new_validators[url] = Validators(etag=etag, last_modified=modified)
        elif url in self.validators and response.status_code == 304:
            self.new_validators[url] = self.validators[url]


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


SECRET_PARAMS = frozenset({"key", "api_key", "apikey", "token"})


def _public_url(url: httpx.URL) -> str:
    """The URL without credentials in its query string, safe to store and to show."""
    if not url.query:
        return str(url)
    params = [(k, v) for k, v in url.params.multi_items() if k.lower() not in SECRET_PARAMS]
    return str(url.copy_with(params=params)) if params else str(url.copy_with(query=None))


def host_of(url: str) -> str:
    return urlsplit(url).netloc
