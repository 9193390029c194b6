"""Lambda (lambda.ai): on-demand instance prices from the Cloud API when a key is set, else the pricing page.

Sources:

* ``GET {COSTOPT_LAMBDA_URL}/api/v1/instance-types`` with ``Authorization: Bearer $LAMBDA_API_KEY``
  (the key from the Lambda Cloud dashboard). ``data.<name>.instance_type.price_cents_per_hour`` is the
  whole instance in US cents (the vendor example types it as a string, so it is coerced);
  ``specs.gpus`` and ``gpu_description`` say what it holds. Preferred: it lists every type by its
  API name, and it is the source gpuhunt and SkyPilot read.
* Without a key: ``GET {COSTOPT_LAMBDA_WEB_URL}/pricing``, the public page. Only the
  "Instances pricing" section is read (the "1-Click Clusters" table above it is a different, reserved
  product); each ``<tr data-plan=...>`` row gives VRAM, vCPUs, RAM and a **per-GPU** hourly price,
  multiplied by the row's GPU count (its "8x" label or the tab it sits in) for the instance price.
  Page instance types are named like the API's (``gpu_8x_b200``) but are not guaranteed to match them.

Lambda prices a type the same in every region and has no spot market, so every price is
``on_demand`` in region ``all``; ``regions_with_capacity_available`` is current capacity, not price,
and is not recorded. Sales tax is added on Lambda's invoice and is not included.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from scraper.base import ParseResult, Provider, RawPayload, dollar_amount, require_whole_html
from scraper.soup import BeautifulSoup, Tag
from warehouse.errors import ParseError
from warehouse.records import PriceRecord

if TYPE_CHECKING:
    from scraper.http import Fetcher

API_PATH = "/api/v1/instance-types"
PAGE_PATH = "/pricing"
API_VARIABLE = "COSTOPT_LAMBDA_URL"
WEB_VARIABLE = "COSTOPT_LAMBDA_WEB_URL"
KEY_VARIABLE = "LAMBDA_API_KEY"
REGION = "all"  # one price list for every Lambda region
INSTANCES_HEADING = "instances pricing"

# (pattern over the lower-cased GPU description, canonical GPU); first match wins, so the specific
# spellings come before the general ones. Quadro RTX 6000 and anything else unknown is skipped.
GPU_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), gpu)
    for p, gpu in (
        (r"gh200", "GH200"),
        (r"b200", "B200"),
        (r"h200", "H200"),
        (r"h100.*pcie", "H100-PCIe"),
        (r"h100", "H100-SXM"),
        (r"a100.*pcie", "A100-80GB-PCIe"),
        (r"a100", "A100-80GB"),
        (r"\ba6000|rtx a6000", "RTX-A6000"),
        (r"\ba10\b", "A10"),
        (r"v100", "V100-16GB"),
    )
)


# The smaller of the two A100s, SXM4 and PCIe: a description or a memory size under 60 GB says which.
A100_40GB = {"A100-80GB": "A100-40GB", "A100-80GB-PCIe": "A100-40GB-PCIe"}


def canonical_gpu(description: str, vram_gb: float | None = None) -> str | None:
    """Canonical GPU for a Lambda description ("A100 (40 GB SXM4)", "NVIDIA A100 PCIe 40GB") or instance-type name;
    ``vram_gb`` when the caller knows the memory, else the size the description states."""
    text = description.lower()
    if "quadro" in text or re.search(r"\brtx 6000\b", text):
        return None  # Quadro RTX 6000 (24 GB, Turing): not in the GPU table
    if vram_gb is None and (stated := re.search(r"\b(\d+)\s*gb\b", text)):
        vram_gb = float(stated.group(1))
    for pattern, gpu in GPU_PATTERNS:
        if pattern.search(text):
            if gpu in A100_40GB and vram_gb is not None and vram_gb < 60:
                return A100_40GB[gpu]
            return gpu
    return None


def _number(text: str) -> float | None:
    """The first figure in a spec cell ("180 GB", "2900 GiB", "208"); never used for a price (``dollar_amount``)."""
    match = re.search(r"\d[\d,]*(?:\.\d+)?", text)
    return float(match.group().replace(",", "")) if match else None


def _gib(text: str) -> float | None:
    value = _number(text)
    if value is None:
        return None
    return value * 1024 if re.search(r"\bTi?B\b", text) else value


class LambdaProvider(Provider):
    name: ClassVar[str] = "lambda"
    parser_version: ClassVar[str] = "1"
    base_urls: ClassVar[dict[str, str]] = {
        API_VARIABLE: "https://cloud.lambda.ai",
        WEB_VARIABLE: "https://lambda.ai",
    }
    credential_var: ClassVar[str | None] = KEY_VARIABLE
    without_credential: ClassVar[str] = "reads the public pricing page instead of the Cloud API"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__(env)
        self.key = (self.env.get(KEY_VARIABLE) or "").strip()

    @property
    def api_url(self) -> str:
        return self.base_url(API_VARIABLE) + API_PATH

    @property
    def page_url(self) -> str:
        return self.base_url(WEB_VARIABLE) + PAGE_PATH

    async def fetch(self, http: Fetcher) -> list[RawPayload]:
        """The API with a key (one call; Lambda allows about one request a second), else the public page."""
        if self.key:
            return [await http.get(self.api_url, headers={"Authorization": f"Bearer {self.key}"})]
        return [await http.get(self.page_url, conditional=True)]

    def parse(self, payloads: list[RawPayload]) -> ParseResult:
        result = ParseResult()
        for payload in payloads:
            if payload.not_modified:
                result.carried.add((REGION, "on_demand"))
                continue
            if payload.url.split("?")[0].endswith(API_PATH):
                self._parse_api(payload, result)
            else:
                self._parse_page(payload, result)
        return result

    # --- the API ---------------------------------------------------------------------------------

    def _parse_api(self, payload: RawPayload, result: ParseResult) -> None:
        try:
            data = json.loads(payload.text())
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"lambda: {payload.url} is not JSON ({exc})") from None
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            error = data["error"]
            raise ParseError(f"lambda: the API answered {error.get('code')}: {error.get('message')}")
        types = data.get("data") if isinstance(data, dict) else None
        if not isinstance(types, dict):
            raise ParseError(f"lambda: {payload.url} has no 'data' object")
        for key in sorted(types):
            record = self._api_record(key, types[key], payload, result)
            if record is not None:
                result.prices.append(record)
        if types and not result.prices:
            raise ParseError(f"lambda: {len(types)} instance types but no GPU instance with a price")

    def _api_record(self, key: str, entry: Any, payload: RawPayload, result: ParseResult) -> PriceRecord | None:
        instance = entry.get("instance_type") if isinstance(entry, dict) else None
        if not isinstance(instance, dict):
            result.skip("malformed instance type", key)
            return None
        name = str(instance.get("name") or key)
        raw_specs = instance.get("specs")
        specs: dict[str, Any] = raw_specs if isinstance(raw_specs, dict) else {}
        gpus = specs.get("gpus")
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus <= 0:
            result.skip("no GPUs", name)  # cpu_* types
            return None
        gpu = canonical_gpu(str(instance.get("gpu_description") or instance.get("description") or ""))
        if gpu is None:
            result.skip("unknown GPU", f"{name}: {instance.get('gpu_description')!r}")
            return None
        try:
            cents = int(str(instance.get("price_cents_per_hour")).strip())
        except ValueError:
            result.skip("no price", f"{name}: {instance.get('price_cents_per_hour')!r}")
            return None
        if cents <= 0:
            result.skip("no price", f"{name}: {cents} cents")
            return None
        vcpus, memory = specs.get("vcpus"), specs.get("memory_gib")
        return PriceRecord(
            provider=self.name,
            region=REGION,
            instance_type=name,
            gpu=gpu,
            gpu_count=gpus,
            pricing="on_demand",
            usd_per_hour=cents / 100,
            source=payload.url,
            observed_at=payload.fetched_at,
            vcpus=vcpus if isinstance(vcpus, int) else None,
            memory_gib=float(memory) if isinstance(memory, int | float) else None,
        )

    # --- the public page -------------------------------------------------------------------------

    def _parse_page(self, payload: RawPayload, result: ParseResult) -> None:
        text = payload.text()
        require_whole_html(text, self.name, payload.url)
        soup = BeautifulSoup(text, "html.parser")
        heading = next(
            (h for h in soup.find_all(["h1", "h2", "h3"]) if INSTANCES_HEADING in h.get_text(" ", strip=True).lower()),
            None,
        )
        if heading is None:
            raise ParseError(f"lambda: no 'Instances pricing' heading on {payload.url}: the page layout changed")
        rows = [r for r in heading.find_all_next("tr") if isinstance(r, Tag) and r.has_attr("data-plan")]
        if not rows:
            raise ParseError(f"lambda: no priced rows under 'Instances pricing' on {payload.url}")
        seen: set[str] = set()
        for row in rows:
            record = self._page_record(row, payload, result)
            if record is None:
                continue
            if record.instance_type in seen:
                result.skip("duplicate row", record.instance_type)
                continue
            seen.add(record.instance_type)
            result.prices.append(record)
        if not result.prices:
            raise ParseError(f"lambda: {len(rows)} rows under 'Instances pricing' but none with a price")

    def _page_record(self, row: Tag, payload: RawPayload, result: ParseResult) -> PriceRecord | None:
        plan = str(row.get("data-plan") or "")
        cells = {
            str(td.get("data-label") or "").strip().upper(): td.get_text(" ", strip=True) for td in row.find_all("td")
        }
        price_text = next((v for k, v in cells.items() if k.startswith("PRICE")), "")
        per_gpu = dollar_amount(price_text)
        count = self._gpu_count(row)
        vram = _number(cells.get("VRAM/GPU", ""))
        gpu = canonical_gpu(plan, vram)
        if gpu is None:
            result.skip("unknown GPU", plan)
            return None
        if count is None:
            result.skip("no GPU count", plan)
            return None
        instance_type = f"gpu_{count}x_{gpu.lower().replace('-', '_')}"
        if per_gpu is None and "$" in price_text:
            # a dollar figure that is not one plain amount (negative, two of them): the page changed, not the
            # offer, so its previous price is held rather than closed ("Sold out" below is news: it closes)
            result.skip("unreadable price", f"{count}x {plan}: {price_text!r}")
            result.held.add((REGION, instance_type, "on_demand"))
            return None
        if per_gpu is None or per_gpu <= 0:
            result.skip("no price", f"{count}x {plan}: {price_text!r}")  # "Sold out", "Contact sales", $0
            return None
        vcpus = _number(cells.get("VCPUS", ""))
        memory = _gib(cells.get("RAM", ""))
        return PriceRecord(
            provider=self.name,
            region=REGION,
            instance_type=instance_type,
            gpu=gpu,
            gpu_count=count,
            pricing="on_demand",
            usd_per_hour=round(per_gpu * count, 6),
            source=payload.url,
            observed_at=payload.fetched_at,
            vcpus=int(vcpus) if vcpus is not None else None,
            memory_gib=memory,
        )

    @staticmethod
    def _gpu_count(row: Tag) -> int | None:
        """The row's GPU count: an "8x" in its header cell, else the "8x" tab it sits in."""
        header = row.find("th")
        if header is not None and (match := re.match(r"\s*(\d+)\s*x\b", header.get_text(" ", strip=True))):
            return int(match.group(1))
        for parent in row.parents:
            for attribute in ("data-w-tab", "data-tab", "aria-label"):
                value = parent.get(attribute) if isinstance(parent, Tag) else None
                if isinstance(value, str) and (match := re.match(r"\s*(\d+)\s*x\b", value, re.IGNORECASE)):
                    return int(match.group(1))
        return None
