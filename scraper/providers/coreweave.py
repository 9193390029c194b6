"""CoreWeave: node prices read from the public pricing page, per region, on-demand and spot.

CoreWeave has no public price API (capacity is sold through sales; docs.coreweave.com only explains
the capacity plans). The one public source is ``GET {COSTOPT_COREWEAVE_URL}/pricing``: static Webflow
HTML, no JavaScript or credentials needed. No capture of that page exists; the structure below is the
one documented by the 2026 peer parsers that checked it against the live page.

Fencing: only the part of the page from the ``<h2>`` "On-demand GPU instances" to the ``<h2>``
"On-demand CPU instances" is read; the CPU section below reuses the same row markup. Headings are
matched as ``<h2>`` elements, never as bare text: a JSON-LD ``OfferCatalog`` script repeats them.
No GPU ``<h2>``, or no price row under it, is a :class:`ParseError` (the layout changed). Should the
CPU ``<h2>`` be renamed, the section ends at the next ``<h2>`` of any kind.

Regions: each table is introduced by a text "REGION: NORTH AMERICA" / "REGION: EUROPE". The region
is recorded as a lowercase slug of CoreWeave's own geography, ``north-america`` and ``europe``:
the page names no data centre, and prices are quoted per geography. Regions come from the explicit
``REGIONS`` table; a table under an unknown region is skipped (counted), not slugged on the fly,
because an unchanged page (HTTP 304) carries forward exactly the regions in that table.

Rows: ``<div role="listitem" class="table-row-v2 w-dyn-item ...">``, each holding the model heading
``<h3 data-product="hgx-h100" class="table-model-name">`` twice (desktop grid and mobile card) and
deduplicated by ``data-product`` per region. Only labelled figures are read: the meta cells
(``<div class="table-meta-value">8</div><div>GPU Count</div>``, VRAM, vCPUs, System RAM) and the
``instance-price`` / ``spot-price`` spans (``On-Demand Price: <span class="item-value">$49.24</span>``).
The unlabelled desktop cells repeat those numbers next to a per-GPU price and are ignored, as is the
``inference-price`` span (a different product). Elements Webflow marks ``w-condition-invisible``
(conditional visibility: not shown to visitors) count as absent.

* Prices are per instance (node), USD per hour, and include the node's vCPUs, RAM and local disk.
* ``instance_type`` is the ``data-product`` slug; ``gpu_count`` the labelled GPU Count, whose
  leading integer is taken (GB200/GB300 NVL72 show "4^1": one node = 2 superchips = 4 GPUs).
* ``gpu``: an explicit table from the model name (or, failing that, the slug) to the canonical name;
  A100 is split by the labelled VRAM. Anything else is skipped as "unknown GPU".
* A price that is "N/A", empty, "Contact sales", zero or not a dollar figure is no price for that
  pricing kind: counted in ``skipped``, never recorded as $0.
* ``memory_gib`` is the labelled System RAM; CoreWeave writes GB for power-of-two sizes (2048, 960)
  and it is read as GiB. VRAM and local storage are not stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from scraper.base import ParseResult, Provider, RawPayload, dollar_amount, require_whole_html
from scraper.soup import BeautifulSoup, NavigableString, Tag
from warehouse.errors import ParseError
from warehouse.records import PriceRecord

if TYPE_CHECKING:
    from scraper.http import Fetcher

PRICING_PATH = "/pricing"
URL_VARIABLE = "COSTOPT_COREWEAVE_URL"
GPU_HEADING = "on-demand gpu instances"
CPU_HEADING = "on-demand cpu instances"
# the page's region label (after "REGION:", upper-cased) -> the region we record
REGIONS: dict[str, str] = {"NORTH AMERICA": "north-america", "EUROPE": "europe"}
# our pricing kind -> class of the labelled span holding it
PRICE_CLASSES: dict[str, str] = {"on_demand": "instance-price", "spot": "spot-price"}
HIDDEN_CLASS = "w-condition-invisible"  # Webflow conditional visibility: rendered, not shown
A100_80GB_MIN_GB = 60.0  # VRAM cell in GB: 40 or 80


def _key(text: str) -> str:
    """Lowercase letters and digits only, without a leading vendor name ("NVIDIA HGX H100" -> "hgxh100")."""
    key = re.sub(r"[^a-z0-9]", "", text.lower())
    return key.removeprefix("nvidia")


# Model names (h3 text) and data-product slugs -> canonical GPU. A pair is (>= 60 GB VRAM, < 60 GB VRAM),
# decided by the row's VRAM cell; without one the first is taken ("A100" means the 80 GB card in gpus.csv).
GPU_MODELS: dict[str, str | tuple[str, str]] = {
    "HGX H100": "H100-SXM",
    "H100": "H100-SXM",
    "H100 SXM": "H100-SXM",
    "H100 PCIe": "H100-PCIe",
    "HGX H200": "H200",
    "H200": "H200",
    "HGX B200": "B200",
    "B200": "B200",
    "GB200 NVL72": "GB200",
    "GB200": "GB200",
    "GH200": "GH200",
    "GH200 Superchip": "GH200",
    "HGX A100": ("A100-80GB", "A100-40GB"),
    "A100": ("A100-80GB", "A100-40GB"),
    "A100 80GB": "A100-80GB",
    "HGX A100 80GB": "A100-80GB",
    "A100 40GB": "A100-40GB",
    "A100 PCIe": ("A100-80GB-PCIe", "A100-40GB-PCIe"),
    "A100 80GB PCIe": "A100-80GB-PCIe",
    "L40S": "L40S",
    "L40": "L40",
    "A40": "A40",
    "RTX PRO 6000": "RTX-PRO-6000",
    "RTX PRO 6000 Blackwell": "RTX-PRO-6000",
    "RTX PRO 6000 Blackwell Server Edition": "RTX-PRO-6000",
    "RTX 6000 Ada": "RTX-6000-Ada",
    "RTX 6000 Ada Generation": "RTX-6000-Ada",
    "RTX A6000": "RTX-A6000",
    "RTX A5000": "RTX-A5000",
    "RTX A4000": "RTX-A4000",
}
_BY_KEY: dict[str, str | tuple[str, str]] = {_key(name): gpu for name, gpu in GPU_MODELS.items()}


def canonical_gpu(model: str, slug: str, vram_gb: float | None) -> str | None:
    """Canonical GPU of a row from its model name, else its slug; None when neither is known."""
    found = _BY_KEY.get(_key(model))
    if found is None:
        found = _BY_KEY.get(_key(slug))
    if found is None or isinstance(found, str):
        return found
    big, small = found
    return small if vram_gb is not None and vram_gb < A100_80GB_MIN_GB else big


_COUNT = re.compile(r"(\d+)\s*(?:\^\s*\d+|\*+)?")
_NUMBER = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*([a-z]*)", re.IGNORECASE)
_REGION = re.compile(r"region\s*:\s*(.+)", re.IGNORECASE)


def parse_price(text: str) -> float | None:
    """USD figure of a price cell ("$49.24", "$1,008.00"); None for N/A, empty, Contact sales, $0."""
    value = dollar_amount(text)
    return value if value is not None and value > 0 else None


def parse_gpu_count(text: str) -> int | None:
    """Leading integer of a GPU Count cell: "8" -> 8, "4^1" (NVL72 footnote) -> 4; else None."""
    match = _COUNT.fullmatch(text.strip())
    if match is None:
        return None
    count = int(match.group(1))
    return count if count > 0 else None


def parse_gib(text: str) -> float | None:
    """A memory cell in GB ("2048", "2,048 GB", "2 TB" -> 2048.0); None when not a plain size."""
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        return None
    value = float(match.group(1).replace(",", ""))
    unit = match.group(2).lower()
    if unit in ("tb", "tib"):
        return value * 1024
    return value if unit in ("", "gb", "gib") else None


def _text(tag: Tag) -> str:
    """Visible text of an element without comments or footnote markers in <sup> ("4<sup>1</sup>" -> "4")."""
    parts = [
        s
        for s in tag.find_all(string=True)
        if type(s) is NavigableString and not (isinstance(s.parent, Tag) and s.parent.name == "sup")
    ]
    return re.sub(r"\s+", " ", "".join(parts)).strip()


def _hidden(tag: Tag, row: Tag) -> bool:
    """Whether Webflow hides the element (or an ancestor up to its row) by conditional visibility."""
    node: Tag | None = tag
    while node is not None:
        if HIDDEN_CLASS in (node.get("class") or []):
            return True
        if node is row:
            return False
        node = node.parent
    return False


def _is_row(tag: Tag) -> bool:
    return tag.name == "div" and tag.get("role") == "listitem" and "table-row-v2" in (tag.get("class") or [])


def _heading(tag: Tag) -> str:
    return re.sub(r"\s+", " ", tag.get_text(" ")).strip().lower()


@dataclass(frozen=True, slots=True)
class _Row:
    """The labelled figures of one row, as text, before any interpretation."""

    slug: str
    model: str
    meta: tuple[tuple[str, str], ...]  # (label key, value) in page order, first of each label
    prices: tuple[tuple[str, str | None], ...]  # (pricing kind, item-value text or None when absent)

    def value(self, label: str) -> str | None:
        return next((v for k, v in self.meta if k.startswith(label)), None)


def _read_row(row: Tag) -> _Row | None:
    heading = row.find("h3", attrs={"data-product": True})
    if not isinstance(heading, Tag):
        return None
    slug = str(heading.get("data-product") or "").strip().lower()
    if not slug:
        return None
    meta: dict[str, str] = {}
    for cell in row.find_all("div", class_="table-meta-value"):
        label = cell.find_next_sibling()
        if not isinstance(label, Tag) or _hidden(cell, row):
            continue
        meta.setdefault(_key(_text(label)), _text(cell))
    prices: list[tuple[str, str | None]] = []
    for pricing, css_class in PRICE_CLASSES.items():
        found: str | None = None
        for span in row.find_all("span", class_=css_class):
            value = span.find("span", class_="item-value")
            if isinstance(value, Tag) and not _hidden(value, row):
                found = _text(value)
                break
        prices.append((pricing, found))
    return _Row(slug=slug, model=_text(heading), meta=tuple(meta.items()), prices=tuple(prices))


class CoreWeaveProvider(Provider):
    name: ClassVar[str] = "coreweave"
    parser_version: ClassVar[str] = "1"
    base_urls: ClassVar[dict[str, str]] = {URL_VARIABLE: "https://www.coreweave.com"}

    @property
    def url(self) -> str:
        return self.base_url(URL_VARIABLE) + PRICING_PATH

    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        """One conditional GET of the pricing page; a 304 carries every region's prices forward."""
        return [await http.get(self.url, conditional=True)]

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = ParseResult()
        for payload in payloads:
            if payload.not_modified:
                result.carried.update((region, pricing) for region in REGIONS.values() for pricing in PRICE_CLASSES)
                continue
            self._parse_page(payload, result)
        return result

    def _parse_page(self, payload: RawPayload, result: ParseResult) -> None:
        markup = payload.path.read_bytes() if payload.path is not None else payload.body
        require_whole_html(markup, self.name, payload.url)
        soup = BeautifulSoup(markup, "html.parser")
        rows = self._gpu_rows(soup, payload.url)
        seen: dict[tuple[str, str], _Row] = {}
        records_before = len(result.prices)
        for label, row in rows:
            read = _read_row(row)
            if read is None:
                result.skip("row without data-product", row.get_text(" ", strip=True)[:60])
                continue
            if label is None:
                result.skip("row outside a region table", read.slug)
                continue
            region = REGIONS.get(label)
            if region is None:
                result.skip("unknown region", f"{label}: {read.slug}")
                continue
            first = seen.setdefault((region, read.slug), read)
            if first is not read:
                if first != read:  # the same product twice in one region with other figures: keep the first
                    result.skip("conflicting duplicate row", f"{region}/{read.slug}")
                continue
            self._records(read, region, payload, result)
        if len(result.prices) == records_before:
            reasons = ", ".join(f"{k}: {v}" for k, v in sorted(result.skipped.items())) or "none"
            raise ParseError(
                f"coreweave: {len(rows)} GPU rows in {payload.url} but no price could be read "
                f"(skipped {reasons}); the pricing page layout changed"
            )

    @staticmethod
    def _gpu_rows(soup: BeautifulSoup, url: str) -> list[tuple[str | None, Tag]]:
        """(region label, row) for every row between the GPU and the CPU section headings."""
        headings = soup.find_all("h2")
        starts = [i for i, h in enumerate(headings) if _heading(h) == GPU_HEADING]
        if not starts:
            raise ParseError(f"coreweave: no 'On-demand GPU instances' <h2> in {url}; the pricing page layout changed")
        after = headings[starts[0] + 1 :]
        end = next((h for h in after if _heading(h) == CPU_HEADING), after[0] if after else None)
        rows: list[tuple[str | None, Tag]] = []
        label: str | None = None
        for element in headings[starts[0]].next_elements:
            if element is end:
                break
            if isinstance(element, Tag):
                if _is_row(element) and element.find_parent(_is_row) is None:
                    rows.append((label, element))
                continue
            if type(element) is not NavigableString or "region" not in element.lower():
                continue  # comments, script and style text (the JSON-LD) never set a region
            parent = element.parent
            if not isinstance(parent, Tag) or parent.name in ("script", "style") or parent.find_parent(_is_row):
                continue
            # "REGION: EUROPE" in one text node, or split as "Region: <span>Europe</span>"
            match = _REGION.fullmatch(re.sub(r"\s+", " ", element).strip()) or _REGION.fullmatch(_text(parent))
            if match:
                label = match.group(1).strip().upper()
        if not rows:
            raise ParseError(
                f"coreweave: no price rows (div role=listitem .table-row-v2) under 'On-demand GPU instances' "
                f"in {url}; the pricing page layout changed"
            )
        return rows

    def _records(self, row: _Row, region: str, payload: RawPayload, result: ParseResult) -> None:
        example = f"{region}/{row.slug}"
        vram = parse_gib(row.value("vram") or "")
        gpu = canonical_gpu(row.model, row.slug, vram)
        if gpu is None:
            result.skip("unknown GPU", f"{example}: {row.model}")
            return
        count_text = row.value("gpucount")
        gpu_count = parse_gpu_count(count_text or "")
        if gpu_count is None:
            result.skip("no GPU count", f"{example}: {count_text!r}")
            return
        vcpus_text = (row.value("vcpu") or "").replace(",", "")
        vcpus = int(vcpus_text) if vcpus_text.isdigit() else None
        memory = parse_gib(row.value("systemram") or "")
        for pricing, text in row.prices:
            price = parse_price(text or "")
            if price is None:
                result.skip(f"no {pricing} price", f"{example}: {text!r}")
                continue
            result.prices.append(
                PriceRecord(
                    provider=self.name,
                    region=region,
                    instance_type=row.slug,
                    gpu=gpu,
                    gpu_count=gpu_count,
                    pricing=pricing,  # type: ignore[arg-type]
                    usd_per_hour=price,
                    source=payload.url,
                    observed_at=payload.fetched_at,
                    vcpus=vcpus,
                    memory_gib=memory,
                )
            )
