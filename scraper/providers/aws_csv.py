"""Stream one region's EC2 Price List CSV and keep the Linux on-demand price of each GPU instance.

A per-region offer file is hundreds of MB to GBs, one row per (SKU x term x price dimension), and
almost every row is something we drop: reserved terms, Windows/RHEL/SUSE, dedicated hosts,
capacity-reservation rows, non-GPU instances. So the file is read line by line as bytes and two
cheap checks run before any CSV parsing:

1. the row must carry ``BoxUsage:<type>`` (the filter needs ``usageType`` to contain "BoxUsage"),
   and the ``<type>`` it names must not be one already seen to be a non-GPU, untracked type (GPU
   count is a product attribute, identical on every row of a type, so one parsed row decides it);
2. the bytes of the exact field values the filter demands (``"Linux"``, ``"Shared"``, ``"Used"``,
   ``"Hrs"``, ``"USD"``, ``"OnDemand"``) must all occur somewhere in the line.

Both are necessary conditions only; the real filter then runs on the parsed row, by column name
(never position, since AWS adds columns). Rows are one physical line each: the offer files have no
quoted newlines; a line whose field count does not match the header is counted as malformed, except
an unterminated last line, which means the download was cut short (a ParseError: half a region's
rows must not look like half its offers vanished).

The filter (gpuhunt ``PRICING_FILTERS``, SkyPilot, ec2instances.info): TermType=OnDemand,
Tenancy=Shared, Operating System=Linux, CapacityStatus=Used, Unit=Hrs, Currency=USD,
Pre Installed S/W in {"", "NA"}, MarketOption in {"", "OnDemand"} (drops Capacity Blocks),
usageType contains BoxUsage (drops DedicatedUsage, UnusedBox, HostBoxUsage via Tenancy), price > 0,
and Region Code equal to the file's region (per-region files also list Local/Wavelength Zones).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from warehouse.errors import ParseError

PREAMBLE_MAX = 10  # the files have 5 preamble rows; look a little further before giving up
BOX = b"BoxUsage:"  # 9 bytes
NEEDLES = (b'"Linux"', b'"Shared"', b'"Used"', b'"Hrs"', b'"USD"', b'"OnDemand"')

TERM = "TermType"
TENANCY = "Tenancy"
OS = "Operating System"
CAPACITY = "CapacityStatus"
UNIT = "Unit"
CURRENCY = "Currency"
SOFTWARE = "Pre Installed S/W"
MARKET = "MarketOption"
USAGE = "usageType"
PRICE = "PricePerUnit"
INSTANCE = "Instance Type"
GPU = "GPU"
REGION = "Region Code"
REQUIRED = (TERM, TENANCY, OS, CAPACITY, UNIT, CURRENCY, SOFTWARE, USAGE, PRICE, INSTANCE)
OPTIONAL = (MARKET, GPU, REGION)

EXPECT: dict[str, frozenset[str]] = {
    TERM: frozenset({"OnDemand"}),
    TENANCY: frozenset({"Shared"}),
    OS: frozenset({"Linux"}),
    CAPACITY: frozenset({"Used"}),
    UNIT: frozenset({"Hrs"}),
    CURRENCY: frozenset({"USD"}),
    SOFTWARE: frozenset({"", "NA"}),
    MARKET: frozenset({"", "OnDemand"}),
}


@dataclass(frozen=True, slots=True)
class OnDemandRow:
    """One row that passed the filter: a Linux on-demand price of one instance type."""

    instance_type: str
    usd_per_hour: float
    gpu_count: float | None  # the file's GPU column, None when empty
    region: str


@dataclass(slots=True)
class CsvScan:
    """What one scan saw besides the kept rows (for the provider's skip counts and notes)."""

    preamble: dict[str, str]
    lines: int = 0
    parsed: int = 0
    malformed: int = 0
    malformed_example: str = ""


def _gpu_count(value: str) -> float | None:
    value = value.strip()
    if not value or value.upper() == "NA":
        return None
    try:
        count = float(value)
    except ValueError:
        return None
    return count if count > 0 else None


def _price(value: str) -> float | None:
    try:
        price = float(value)
    except ValueError:
        return None
    return price if price > 0 else None


def _read_header(handle: BinaryIO, source: str) -> tuple[dict[str, str], dict[str, int], int]:
    preamble: dict[str, str] = {}
    for _ in range(PREAMBLE_MAX):
        raw = handle.readline()
        if not raw:
            break
        row = next(csv.reader([raw.decode("utf-8", "replace")]), [])
        if INSTANCE in row and TERM in row:
            columns = {name: i for i, name in enumerate(row)}
            missing = [c for c in REQUIRED if c not in columns]
            if missing:
                raise ParseError(f"aws: {source}: CSV header lacks column(s) {', '.join(missing)}")
            return preamble, columns, len(row)
        if len(row) >= 2:
            preamble[row[0]] = row[1]
    raise ParseError(
        f"aws: {source}: not an EC2 Price List CSV -- no header row with {INSTANCE!r} and {TERM!r} "
        f"in its first {PREAMBLE_MAX} lines"
    )


def scan(path: Path, region: str | None, source: str, tracked: frozenset[str]) -> tuple[list[OnDemandRow], CsvScan]:
    """Stream ``path``; return the Linux on-demand rows of GPU instances (tracked or not) and a tally.

    ``tracked`` is the set of instance types the caller has a table entry for; rows of other types
    are returned only when the file says they have GPUs, so the caller can report them.
    """
    rows: list[OnDemandRow] = []
    with path.open("rb", buffering=1 << 20) as handle:
        preamble, columns, width = _read_header(handle, source)
        stats = CsvScan(preamble)
        rows.extend(_rows(handle, columns, width, region, tracked, stats))
    return rows, stats


def _rows(
    handle: BinaryIO,
    columns: dict[str, int],
    width: int,
    region: str | None,
    tracked: frozenset[str],
    stats: CsvScan,
) -> Iterator[OnDemandRow]:
    checks = [(columns[name], allowed) for name, allowed in EXPECT.items() if name in columns]
    i_usage, i_price, i_type = columns[USAGE], columns[PRICE], columns[INSTANCE]
    i_gpu, i_region = columns.get(GPU), columns.get(REGION)
    # instance types (as bytes from usageType) already decided: worth parsing, or never
    wanted: set[bytes] = {t.encode() for t in tracked}
    no_gpu: set[bytes] = set()
    linux, shared, used, hrs, usd, on_demand = NEEDLES
    lines = 0
    for line in handle:
        lines += 1
        if not line.endswith(b"\n") and len(next(csv.reader([line.decode("utf-8", "replace")]), [])) != width:
            # the offer files end with a newline: a last line that stops mid-row is a download cut short
            raise ParseError(
                f"aws: the offer file for {region or 'a region'} ends in the middle of a row after {lines} lines "
                "(truncated download)"
            )
        at = line.find(BOX)
        if at < 0:
            continue
        kind = line[at + 9 : line.find(b'"', at)]
        if kind in no_gpu:
            continue
        if kind in wanted and not (
            linux in line and shared in line and used in line and on_demand in line and hrs in line and usd in line
        ):
            continue
        row = next(csv.reader([line.decode("utf-8", "replace")]), [])
        stats.parsed += 1
        if len(row) != width:
            stats.malformed += 1
            stats.malformed_example = stats.malformed_example or line[:120].decode("utf-8", "replace")
            continue
        instance_type = row[i_type]
        gpus = _gpu_count(row[i_gpu]) if i_gpu is not None else None
        if gpus is None and instance_type not in tracked:
            no_gpu.add(kind)
            continue
        wanted.add(kind)
        if any(row[i] not in allowed for i, allowed in checks) or "BoxUsage" not in row[i_usage]:
            continue
        row_region = row[i_region] if i_region is not None and row[i_region] else region
        if row_region is None or (region is not None and row_region != region):
            continue
        price = _price(row[i_price])
        if price is None:
            continue
        yield OnDemandRow(instance_type, price, gpus, row_region)
    stats.lines = lines
