"""The provider contract: ``fetch`` touches the network, ``parse`` is pure.

A provider is a small class with a ``name``, a ``from_env`` that raises ``MissingCredentials`` when
a key it needs is absent, an async ``fetch`` that returns raw payloads and a pure ``parse`` that turns
them into records. Keeping the two apart lets a parser run on fixtures, on yesterday's stored raw
payloads (``costopt reparse``) and on replayed files, with no socket anywhere near it.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Self

from warehouse.records import PriceRecord, SpotRisk
from warehouse.volume import SPOT_RISK_SCOPE

if TYPE_CHECKING:
    from scraper.http import Fetcher


def regions_from(
    env: Mapping[str, str], variable: str, default: tuple[str, ...], pattern: re.Pattern[str], example: str
) -> tuple[str, ...]:
    """The regions a comma-separated variable names (deduplicated, lower-cased), else ``default``.

    A name that is not a region code is refused up front, so a typo fails the run with the variable's
    name instead of as an empty or missing download later.
    """
    from warehouse.errors import ProviderError

    raw = env.get(variable, "").strip()
    if not raw:
        return default
    regions = tuple(dict.fromkeys(r.strip().lower() for r in raw.split(",") if r.strip()))
    bad = [r for r in regions if not pattern.match(r)]
    if bad or not regions:
        raise ProviderError(f"{variable}: {', '.join(bad) or raw!r} is not a region code such as {example}")
    return regions


# one dollar amount and nothing else: thousands grouped by commas, a footnote mark ("*", "^1") may follow
_DOLLARS = re.compile(r"\$\s*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*(?:\^\s*\d+|\*+)?")


def dollar_amount(text: str) -> float | None:
    """The USD figure of a web page's price cell ("$3.99", "$1,008.00", "$20.00*"); None unless the cell is exactly
    one non-negative dollar amount.

    Searching a cell for its first number read ``$-3.99`` as 3.99, ``Was $4.49 now $3.99`` as 4.49 and ``8x $2.99``
    as 8 (Lambda's page: a whole page of negative prices loaded as yesterday's confirmed). Which figure of a cell
    holding several is the price would be a guess, so none is. Zero is returned as 0.0: whether "$0.00" is a price
    is the parser's call.
    """
    match = _DOLLARS.fullmatch(text.strip())
    return None if match is None else float(match.group(1).replace(",", ""))


def require_whole_html(markup: bytes | str, provider: str, url: str) -> None:
    """Refuse an HTML page that stops before its closing tags: a download cut short.

    An HTML parser happily reads the first half of a page, and half the rows would then look like
    half the offers disappeared. Pages costopt reads end with ``</body></html>``; a page that opens
    ``<html>`` or ``<body>`` and closes neither was cut short. (Something that is no page at all is
    left to the parser, which says the layout is not the one it knows.)
    """
    text = (markup.encode("utf-8", "replace") if isinstance(markup, str) else markup).lower()
    opened = b"<html" in text or b"<body" in text
    if opened and b"</html" not in text and b"</body" not in text:
        from warehouse.errors import ParseError

        raise ParseError(f"{provider}: {url} ends before </body></html>: the page was cut short (truncated download)")


def require_fields(
    items: Sequence[object],
    fields: Iterable[tuple[str, ...]],
    provider: str,
    where: str,
    types: Mapping[str, tuple[type, ...]] | None = None,
) -> None:
    """Refuse a list of upstream objects in which *no* object carries a field the parser reads, or in
    which a field holds a value of a type the parser cannot read.

    Each entry of ``fields`` lists alternatives (``("verified", "verification")``: either will do).
    One item without a field (or with it null) is an odd row and is skipped by the parser; every item
    without it means the upstream renamed or dropped the field, and reading on would misfile every offer
    (an unverified host, country "unknown") instead of failing. A field that every item sends as
    ``null`` is dropped as surely as a missing one (Vast.ai's ``geolocation: null`` in every offer loaded
    with every listing's country "unknown").

    ``types`` gives, for the fields the parser groups or prices by, the decoded JSON types it reads
    (matched exactly: ``bool`` is no ``int`` here); ``None`` is absence, left to the parser as above.
    Unlike absence, ONE item of another type refuses the whole list: an upstream changes how it writes
    a field for all its items at once, and the parser would silently read each changed item as
    something else (Vast.ai's ``hosting_type: "dc"`` as a community host), which no count notices.
    One pass per typed field builds the set of types seen, so a list of thousands costs milliseconds.
    """
    objects = [item for item in items if isinstance(item, Mapping)]
    if not objects:
        return
    # null is absence here too: every item with ``"geolocation": null`` is the field gone, not a list of odd rows
    missing = [names for names in fields if not any(item.get(name) is not None for item in objects for name in names)]
    if missing:
        from warehouse.errors import ParseError

        named = ", ".join(" or ".join(repr(n) for n in names) for names in missing)
        raise ParseError(
            f"{provider}: {where}: none of its {len(objects)} items has {named}: the upstream's fields changed"
        )
    for name, readable in (types or {}).items():
        seen = {type(item.get(name)) for item in objects}
        seen.discard(type(None))
        if seen.issubset(readable):
            continue
        from warehouse.errors import ParseError

        wrong = [item[name] for item in objects if type(item.get(name)) not in readable and item.get(name) is not None]
        example = repr(wrong[0])
        example = example if len(example) <= 40 else example[:37] + "..."
        raise ParseError(
            f"{provider}: {where}: {name!r} is {type(wrong[0]).__name__} ({example}) in {len(wrong)} of its "
            f"{len(objects)} items, where {' or '.join(t.__name__ for t in readable)} is read: "
            "the upstream's fields changed"
        )


@dataclass(frozen=True, slots=True)
class RawPayload:
    """One HTTP response as received, with where and when it came from.

    Small bodies are held in ``body``; bulk files (AWS offer CSVs) are streamed to ``path`` and
    never held in memory. ``not_modified`` marks a source that a conditional GET or a publication
    version showed unchanged since the last successful run: its body is empty and the prices it
    covers (``scope``: region and pricing kind) are carried forward, not closed.
    """

    url: str
    fetched_at: datetime
    status: int
    body: bytes = b""
    path: Path | None = None
    content_type: str = ""
    method: str = "GET"
    request_body: bytes | None = None
    not_modified: bool = False
    scope: tuple[str, ...] = ()
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        if self.path is not None:
            return self.path.stat().st_size
        return len(self.body)

    def text(self) -> str:
        if self.path is not None:
            return self.path.read_text(encoding="utf-8")
        return self.body.decode("utf-8")


@dataclass(slots=True)
class ParseResult:
    """What a provider's parser found in one run's payloads."""

    prices: list[PriceRecord] = field(default_factory=list)
    spot_risk: list[SpotRisk] = field(default_factory=list)
    # (region, pricing) pairs whose open prices stay open because their source was unchanged
    carried: set[tuple[str, str]] = field(default_factory=set)
    # (region, instance_type, pricing) of offers whose row this run could not trust (refused by the shared
    # invariants, or a price the parser could not read): a bad row is no news about the offer, so its open
    # price is neither confirmed nor closed as "no longer listed" (an observation of the same offer wins)
    held: set[tuple[str, str, str]] = field(default_factory=set)
    # upstream items the parser did not recognise, by a short reason ("unknown SKU", ...)
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_examples: list[str] = field(default_factory=list)

    def skip(self, reason: str, example: str) -> None:
        """Count an upstream item the parser will not guess at, keeping a few distinct examples to log (an offer
        that every search returns, Vast.ai's on-demand and bid, is counted once per search but listed once)."""
        self.skipped[reason] += 1
        line = f"{reason}: {example}"
        if len(self.skipped_examples) < 20 and line not in self.skipped_examples:
            self.skipped_examples.append(line)


class Provider(ABC):
    """Base class of every price source. Subclasses live in ``scraper/providers/``."""

    name: ClassVar[str]
    parser_version: ClassVar[str] = "1"
    # environment variable -> default base URL, one per upstream host, so mirrors, proxies and
    # local test servers can stand in for the real host with the real paths and query strings
    base_urls: ClassVar[dict[str, str]] = {}
    # variables that say *what* to read (regions), as opposed to where from (base URLs) or with
    # which credential: honoured in replay and re-parse too, so those read what a refresh reads
    config_vars: ClassVar[tuple[str, ...]] = ()
    # the credential this provider reads (an environment variable), whether it cannot run without it, and
    # what it reads without it: what `costopt status` reports (never the value)
    credential_var: ClassVar[str | None] = None
    credential_required: ClassVar[bool] = False
    without_credential: ClassVar[str] = ""

    def configured_regions(self) -> tuple[str, ...] | None:
        """The regions this provider is configured to read (None: every region its source lists).

        A bad value of the region variable raises ``ProviderError`` naming the variable.
        """
        return None

    # bodies whose decoded form a fetch may hand to the parse of the same run (see ``remember_decoded``)
    DECODED_BUDGET_BYTES: ClassVar[int] = 4 * 1024 * 1024

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env: Mapping[str, str] = os.environ if env is None else env
        self._decoded: dict[int, tuple[bytes, object]] = {}
        self._decoded_bytes = 0

    def remember_decoded(self, payload: RawPayload, value: object) -> None:
        """Keep what a fetch decoded from ``payload`` (to find the next page) for this run's parse.

        A fetch that must read a page to know what to ask next (GCP's page token, Azure's next-page
        link, whether a Vast.ai search was cut off) decodes the JSON the parse decodes again: 15-40 ms
        of a replay per provider.
        Kept only for bodies held in memory, within ``DECODED_BUDGET_BYTES`` of body per run (a decoded
        document is several times its text), and handed over once: ``recall_decoded`` forgets it.
        """
        body = payload.body
        if payload.path is not None or not body or self._decoded_bytes + len(body) > self.DECODED_BUDGET_BYTES:
            return
        self._decoded[id(body)] = (body, value)
        self._decoded_bytes += len(body)

    def recall_decoded(self, payload: RawPayload) -> object | None:
        """What ``remember_decoded`` kept for this very body (None: decode it), and forget it."""
        kept = self._decoded.pop(id(payload.body), None)
        if kept is None or kept[0] is not payload.body:
            return None
        self._decoded_bytes -= len(kept[0])
        return kept[1]

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, replay: bool = False) -> Self:
        """Build the provider from the environment; raise MissingCredentials if a key is needed.

        In replay mode (recorded responses, or ``costopt reparse`` of stored ones) credentials are
        not needed and base URLs are the real hosts, which the replay transport serves; only the
        ``config_vars`` (which regions) are taken from the environment.
        """
        if not replay:
            return cls(env)
        source = os.environ if env is None else env
        return cls({k: source[k] for k in cls.config_vars if k in source})

    def scope_of(self, region: str, pricing: str) -> str:
        """The upstream source a price of this region and pricing kind was read from.

        The mass-disappearance guard (``warehouse.volume``) counts offers per source and compares
        each with its last good run, so one broken source is caught even while the provider's other
        sources are fine. Default: one source per pricing kind. Providers that fetch one document
        per region say so by overriding this.
        """
        return pricing

    def expects(self, scope: str) -> bool:
        """Whether this provider, as configured now, reads ``scope`` (a region dropped from the config is not gone)."""
        return True

    def scope_counts(self, result: ParseResult) -> tuple[Counter[str], set[str]]:
        """Offers read per source in ``result`` (a marketplace group counts its listings), and the
        sources that were unchanged and carried forward (not read, so not counted)."""
        counts: Counter[str] = Counter()
        for record in result.prices:
            counts[self.scope_of(record.region, record.pricing)] += record.stats.offer_count if record.stats else 1
        for risk in result.spot_risk:
            counts[self.scope_of(risk.region, SPOT_RISK_SCOPE)] += 1
        carried = {self.scope_of(region, pricing) for region, pricing in result.carried}
        return counts, carried

    def base_url(self, variable: str) -> str:
        default = self.base_urls[variable]
        return self.env.get(variable, default).rstrip("/")

    @abstractmethod
    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        """Download this provider's sources. The only method that may touch the network."""

    @abstractmethod
    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        """Turn payloads into records. Pure: no I/O besides reading ``payload.path``, no clock."""
