"""A fake upstream for every provider: the recorded responses of fixtures/ served over real HTTP, with faults.

The providers are pointed at it through their base-URL variables (``COSTOPT_*_URL``), so a refresh
runs exactly as it does against the real hosts: real sockets, the real client, retries, timeouts,
conditional GET. One *target* (a source: an AWS region's price file, the spot feed, the Spot
Advisor, an Azure region, the GCP catalog, a pricing page, a Vast.ai search) can be given one
*fault*:

=================  ==========================================================================
persistent_500     every request answers HTTP 500
429_then_ok        the first request answers 429 (Retry-After: 0), later ones are served
timeout            the server waits longer than the client's timeout before answering
truncated          a 200 whose document stops at 60 % (with a matching Content-Length)
html_error_200     a 200 carrying an HTML error page instead of the document
layout_changed     keys, columns or classes renamed (per format, see ``RENAMES``)
empty              a valid document with nothing in it
tenth              a valid document with a tenth of the offers
=================  ==========================================================================

The faulted documents are derived from the recordings here, in memory: no fixture copies.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from bs4 import BeautifulSoup

from tests.conftest import REPO

FIXTURES = REPO / "fixtures"
FAULTS = (
    "persistent_500",
    "429_then_ok",
    "timeout",
    "truncated",
    "html_error_200",
    "layout_changed",
    "empty",
    "tenth",
)
HTML_ERROR = (
    b"<!DOCTYPE html><html><head><title>503 Service Unavailable</title></head>"
    b"<body><h1>Service Unavailable</h1><p>The server is temporarily unable to service your request.</p>"
    b"</body></html>"
)
SECRET = {"key", "api_key", "apikey", "token"}
NEW_PUBLICATION = "20261120221500"
OLD_PUBLICATION = "20261119221500"


@dataclass
class Route:
    method: str
    path: str
    params: tuple[tuple[str, str], ...]
    request_json: Any
    status: int
    headers: dict[str, str]
    body: bytes
    name: str  # provider/file, for targeting

    def matches(self, method: str, path: str, params: tuple[tuple[str, str], ...], body: bytes) -> bool:
        if (self.method, self.path, self.params) != (method, path, params):
            return False
        if self.request_json is None:
            return True
        try:
            return json.loads(body or b"null") == self.request_json
        except ValueError:
            return False


def _params(query: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k.lower() not in SECRET))


def load_routes() -> list[Route]:
    routes = []
    for manifest in sorted(FIXTURES.glob("*/replay.json")):
        data = json.loads(manifest.read_text())
        for item in data["responses"]:
            url = urlsplit(item["url"])
            routes.append(
                Route(
                    method=item.get("method", "GET").upper(),
                    path=url.path,
                    params=_params(url.query),
                    request_json=item.get("request_json"),
                    status=int(item.get("status", 200)),
                    headers={k.lower(): v for k, v in item.get("headers", {}).items()},
                    body=(manifest.parent / item["file"]).read_bytes(),
                    name=f"{manifest.parent.name}/{item['file']}",
                )
            )
    return routes


# --- targets: which recorded responses make up one source --------------------------------------------


@dataclass(frozen=True)
class Target:
    key: str  # e.g. "aws-spot"
    provider: str
    files: tuple[str, ...]  # provider/file names of the routes that make up the source
    kind: str  # document format: csv | aws_spot | aws_advisor | azure | gcp | lambda_page | coreweave_page | vast


TARGETS: tuple[Target, ...] = (
    Target("aws-prices", "aws", ("aws/index_us-east-1.csv",), "csv"),
    Target("aws-spot", "aws", ("aws/spot.json",), "aws_spot"),
    Target("aws-advisor", "aws", ("aws/spot-advisor-data.json",), "aws_advisor"),
    Target("azure", "azure", ("azure/prices_eastus_1.json", "azure/prices_eastus_2.json"), "azure"),
    Target("gcp", "gcp", ("gcp/skus_page1.json", "gcp/skus_page2.json"), "gcp"),
    Target("lambda", "lambda", ("lambda/pricing.html",), "lambda_page"),
    Target("coreweave", "coreweave", ("coreweave/pricing.html",), "coreweave_page"),
    Target("vastai", "vastai", ("vastai/bundles_on_demand.json",), "vast"),
)


# --- document transformations -------------------------------------------------------------------------


def _json(body: bytes) -> Any:
    return json.loads(body)


def _dump(data: Any) -> bytes:
    return json.dumps(data).encode()


def _every_tenth(items: list[Any], counter: list[int]) -> list[Any]:
    kept = []
    for item in items:
        if counter[0] % 10 == 0:
            kept.append(item)
        counter[0] += 1
    return kept


def _rename_key(data: Any, old: str, new: str) -> Any:
    if isinstance(data, dict):
        return {(new if k == old else k): _rename_key(v, old, new) for k, v in data.items()}
    if isinstance(data, list):
        return [_rename_key(v, old, new) for v in data]
    return data


def _csv_lines(body: bytes) -> tuple[list[bytes], list[bytes]]:
    lines = body.splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if b'"Instance Type"' in line)
    return lines[: header + 1], lines[header + 1 :]


def _html_rows(body: bytes, kind: str) -> tuple[BeautifulSoup, list[Any]]:
    soup = BeautifulSoup(body, "html.parser")
    if kind == "lambda_page":
        rows = soup.find_all("tr", attrs={"data-plan": True})
    else:
        rows = [
            div
            for div in soup.find_all("div", attrs={"role": "listitem"})
            if "table-row-v2" in (div.get("class") or [])
        ]
    return soup, rows


def empty(kind: str, body: bytes) -> bytes:
    if kind == "csv":
        head, _ = _csv_lines(body)
        return b"".join(head)
    if kind == "aws_spot":
        data = _json(body)
        data["config"]["regions"] = []
        return _dump(data)
    if kind == "aws_advisor":
        data = _json(body)
        data["spot_advisor"] = {}
        return _dump(data)
    if kind == "azure":
        data = _json(body)
        data.update(Items=[], NextPageLink=None, Count=0)
        return _dump(data)
    if kind == "gcp":
        return _dump({"skus": []})
    if kind == "vast":
        return _dump({"offers": []})
    soup, rows = _html_rows(body, kind)
    for row in rows:
        row.decompose()
    return str(soup).encode()


def tenth(kind: str, body: bytes, counter: list[int]) -> bytes:
    if kind == "csv":
        head, rows = _csv_lines(body)
        return b"".join(head + _every_tenth(rows, counter))
    if kind == "aws_spot":
        data = _json(body)
        for region in data["config"]["regions"]:
            for group in region["instanceTypes"]:
                group["sizes"] = _every_tenth(group["sizes"], counter)
        return _dump(data)
    if kind == "aws_advisor":
        data = _json(body)
        for systems in data["spot_advisor"].values():
            for os_name, table in systems.items():
                systems[os_name] = dict(_every_tenth(list(table.items()), counter))
        return _dump(data)
    if kind == "azure":
        data = _json(body)
        data["Items"] = _every_tenth(data["Items"], counter)
        return _dump(data)
    if kind == "gcp":
        data = _json(body)
        data["skus"] = _every_tenth(data["skus"], counter)
        return _dump(data)
    if kind == "vast":
        data = _json(body)
        data["offers"] = _every_tenth(data["offers"], counter)
        return _dump(data)
    soup, rows = _html_rows(body, kind)
    for row in rows:
        if counter[0] % 10:
            row.decompose()
        counter[0] += 1
    return str(soup).encode()


# what a redesign upstream renames, per format: a column, a JSON key, an attribute or a class
RENAMES: dict[str, tuple[str, str]] = {
    "csv": ('"PricePerUnit"', '"PricePerUnitUSD"'),
    "aws_spot": ("valueColumns", "columns"),
    "aws_advisor": ("r", "rate"),
    "azure": ("armSkuName", "armSku"),
    "gcp": ("description", "displayName"),
    "lambda_page": ("data-plan=", "data-sku="),
    "coreweave_page": ("table-row-v2", "table-row-v3"),
    "vast": ("gpu_name", "gpu_model"),
}


def layout_changed(kind: str, body: bytes) -> bytes:
    old, new = RENAMES[kind]
    if kind in ("aws_spot", "aws_advisor", "azure", "gcp", "vast"):
        return _dump(_rename_key(_json(body), old, new))
    return body.replace(old.encode(), new.encode())


def truncated(body: bytes) -> bytes:
    cut = int(len(body) * 0.6)
    while cut > 1 and body[cut - 1 : cut] == b"\n":  # stop inside a line, not at its end
        cut -= 1
    return body[:cut]


# --- the server ---------------------------------------------------------------------------------------


@dataclass
class Upstream:
    """One fake upstream; ``fault`` and ``target`` may be changed between refreshes."""

    timeout_seconds: float = 0.5
    routes: list[Route] = field(default_factory=load_routes)
    target: Target | None = None
    fault: str | None = None
    hits: Counter[str] = field(default_factory=Counter)
    _server: ThreadingHTTPServer | None = None
    _counter: list[int] = field(default_factory=lambda: [0])

    def start(self) -> Upstream:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                upstream.handle(self, "GET")

            def do_POST(self) -> None:
                upstream.handle(self, "POST")

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # a client that gave up (the timeout fault) resets its connection: expected

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_port}"

    def env(self) -> dict[str, str]:
        """Every provider's base URL pointed here, under a prefix naming the provider (two providers
        both serve ``/pricing``), and the GCP key it needs to run at all."""
        variables = {
            "COSTOPT_AWS_PRICING_URL": "aws",
            "COSTOPT_AWS_SPOT_URL": "aws",
            "COSTOPT_AWS_SPOT_ADVISOR_URL": "aws",
            "COSTOPT_AZURE_URL": "azure",
            "COSTOPT_GCP_URL": "gcp",
            "COSTOPT_LAMBDA_URL": "lambda",
            "COSTOPT_LAMBDA_WEB_URL": "lambda",
            "COSTOPT_COREWEAVE_URL": "coreweave",
            "COSTOPT_VASTAI_URL": "vastai",
        }
        return {**{v: f"{self.url}/{p}" for v, p in variables.items()}, "COSTOPT_GCP_API_KEY": "test-key"}

    def inject(self, target: Target | None, fault: str | None) -> None:
        """From now on ``target`` answers with ``fault`` (None: everything served as recorded).

        An AWS price file is read again only when AWS publishes a new version of it, so while the
        target is ``aws-prices`` the region index names a new publication for us-east-1."""
        self.target, self.fault = target, fault
        self.hits.clear()
        self._counter = [0]

    def _document(self, route: Route, target: Target, fault: str | None) -> bytes:
        kind = target.kind
        if fault == "truncated":
            return truncated(route.body)
        if fault == "layout_changed":
            return layout_changed(kind, route.body)
        if fault == "empty":
            return empty(kind, route.body)
        if fault == "tenth":
            return tenth(kind, route.body, self._counter)
        return route.body

    def handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        target, fault = self.target, self.fault  # as injected when the request came in
        parts = urlsplit(request.path)
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        params = _params(parts.query)
        provider, _, rest = parts.path.lstrip("/").partition("/")
        path = "/" + rest
        new_publication = target is not None and target.key == "aws-prices"
        if new_publication:
            path = path.replace(f"/{NEW_PUBLICATION}/us-east-1/", f"/{OLD_PUBLICATION}/us-east-1/")
        route = next(
            (r for r in self.routes if r.name.startswith(provider + "/") and r.matches(method, path, params, body)),
            None,
        )
        if route is None:
            self._send(request, 404, {"content-type": "text/plain"}, b"nothing recorded here")
            return
        self.hits[route.name] += 1
        status, headers, document = route.status, dict(route.headers), route.body
        if route.name == "aws/region_index.json" and new_publication:
            document = document.replace(
                f"/{OLD_PUBLICATION}/us-east-1/".encode(), f"/{NEW_PUBLICATION}/us-east-1/".encode()
            )
        if target is not None and route.name in target.files:
            if fault == "persistent_500":
                self._send(request, 500, {"content-type": "text/plain"}, b"internal error")
                return
            if fault == "429_then_ok" and self.hits[route.name] == 1:
                self._send(request, 429, {"content-type": "text/plain", "retry-after": "0"}, b"slow down")
                return
            if fault == "timeout":
                time.sleep(self.timeout_seconds * 2.5)
            if fault == "html_error_200":
                headers, document = {"content-type": "text/html; charset=utf-8"}, HTML_ERROR
            else:
                document = self._document(route, target, fault)
        if "etag" in headers:
            etag = headers["etag"] if document == route.body else f'"{hashlib.sha256(document).hexdigest()[:16]}"'
            headers["etag"] = etag
            if request.headers.get("If-None-Match") == etag:
                self._send(request, 304, {"etag": etag}, b"")
                return
        self._send(request, status, headers, document)

    @staticmethod
    def _send(request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        try:
            request.send_response(status)
            for name, value in headers.items():
                if name not in ("content-length", "transfer-encoding", "content-encoding"):
                    request.send_header(name, value)
            request.send_header("Content-Length", str(len(body)))
            request.end_headers()
            if body:
                request.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout fault)
            pass
