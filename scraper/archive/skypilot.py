"""SkyPilot's catalog format: ``vms.csv`` per cloud, one full snapshot per commit (pure: bytes in, prices out).

Where it lives: ``catalogs/v<N>/<cloud>/vms.csv`` in skypilot-org/skypilot-catalog (rewritten by a CI
job every few hours since 2022) and ``<cloud>/vms.csv`` in archives that copy the format, such as
anycloud-sh/catalog. Columns (v5 to v8; order and set vary by cloud and version, so they are read by
name): ``InstanceType, vCPUs, MemoryGiB, AcceleratorName, AcceleratorCount, GpuInfo, Region,
AvailabilityZone, Price, SpotPrice``.

What becomes a price (the rules the README states):

* GPU rows only (a non-empty ``AcceleratorName``); TPUs and CPU machines are left out. GPU names are
  mapped by ``gpu_names``; an unknown one is counted per name, never guessed.
* ``Price`` is on-demand; ``SpotPrice`` is spot (``interruptible`` on Vast.ai). Empty, zero or
  unreadable cells are no price.
* One price per region: AWS and GCP list one row per availability zone, and the region's price is
  the **lowest of its zones** (what a user who may pick the zone pays; on-demand rows rarely differ
  between zones, spot rows do). Lambda lists the same price in every region and is stored as region
  ``all``, like costopt's Lambda scraper. Vast.ai rows become the host's country code.
* GCP prices a GPU and its host VM in separate rows: a GPU row has no instance type, and machines
  such as ``a2-highgpu-1g`` have their own row priced without the GPU. Where costopt's GCP machine
  table (``gcp_machines``) says which GPU rows a machine holds and the VM row exists in that zone,
  the two are added into a machine price (A4's GPU row already prices the whole machine; A3 Ultra and
  A4 cannot be created on demand, so only their spot price is kept, as the GCP scraper does). GPU
  rows left over (T4, V100 and others that attach to any N1 machine) become GPU-part prices.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from typing import Any

from scraper.archive import gpu_names
from scraper.archive.snapshot import Attrs, Snapshot, machine_key, part_key, price
from warehouse.errors import ParseError

FORMAT = "skypilot"
# SkyPilot's cloud directory -> costopt provider
CLOUDS: dict[str, str] = {"aws": "aws", "gcp": "gcp", "azure": "azure", "lambda": "lambda", "vast": "vastai"}
PATHSPECS: tuple[str, ...] = ("*/vms.csv", "vms.csv")
REQUIRED = frozenset({"InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "Price"})
_LAYOUT = re.compile(r"^(?:catalogs/v(?P<version>\d+)/)?(?P<cloud>[A-Za-z0-9_-]+)/vms\.csv$")
_CONTINENTS = frozenset({"AF", "AN", "AS", "EU", "NA", "OC", "SA"})


@dataclass(frozen=True, slots=True)
class Layout:
    cloud: str
    version: int | None  # catalogs/v<N>/...; None for <cloud>/vms.csv

    @property
    def provider(self) -> str | None:
        return CLOUDS.get(self.cloud)


def layout(path: str) -> Layout | None:
    """The cloud and catalog version a path holds, or ``None`` when it is not a SkyPilot ``vms.csv``."""
    match = _LAYOUT.match(path)
    if match is None:
        return None
    version = match.group("version")
    return Layout(match.group("cloud"), int(version) if version else None)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None  # type: ignore[arg-type]
    except ValueError:
        return None


def _int(text: str | None) -> int | None:
    value = _number(text)
    return None if value is None else round(value)


def vast_country(region: str) -> str:
    """SkyPilot's Vast.ai region ``"Denmark, DK, EU"`` (city/country, ISO code, continent) -> ``DK``."""
    parts = [p.strip() for p in region.split(",")]
    codes = [p for p in parts[:-1] if re.fullmatch(r"[A-Z]{2}", p)] if len(parts) > 1 else []
    if codes:
        return codes[-1]
    if len(parts) == 1 and re.fullmatch(r"[A-Z]{2}", parts[0]) and parts[0] not in _CONTINENTS:
        return parts[0]
    return "unknown"


class _Rows:
    """Column access by name over one file's header."""

    def __init__(self, header: list[str]) -> None:
        self.index = {name.strip(): i for i, name in enumerate(header)}
        missing = REQUIRED - self.index.keys()
        if missing:
            raise ParseError(f"not a SkyPilot vms.csv: no column {', '.join(sorted(missing))}")

    def get(self, row: list[str], name: str) -> str | None:
        i = self.index.get(name)
        if i is None or i >= len(row):
            return None
        return row[i].strip()


# What one line of a file contributes, worked out once per distinct line (see ``Reader``):
#   ("x",)                                  not a GPU row (a CPU machine): nothing
#   ("s", reason, counted)                  skipped, with the reason; counted: it was a GPU row
#   ("u", name)                             a GPU row whose GPU is unknown (counted per name)
#   ("o", ((key, usd, attrs), ...))         prices
#   ("vm", zone, name, on-demand, spot, vcpus, memory)      GCP: a GPU machine's VM row
#   ("g", zone, accelerator, count, on-demand, spot)        GCP: a GPU row
Outcome = tuple[Any, ...]
_CPU: Outcome = ("x",)


class Reader:
    """Parses successive snapshots of one ``<cloud>/vms.csv``, remembering what each line meant.

    Consecutive snapshots of a catalog differ in a few percent of their lines, so a line seen in the
    previous snapshot is not parsed again: its outcome is reused, and only new lines go through the
    csv module and the GPU tables. Only the current snapshot's lines are remembered (memory stays at
    one file's worth). The result is exactly what parsing the file from scratch gives: pure, bytes in,
    prices out.
    """

    def __init__(self, cloud: str) -> None:
        provider = CLOUDS.get(cloud)
        if provider is None:
            raise ParseError(f"{cloud}: not a cloud costopt tracks")
        self.cloud, self.provider = cloud, provider
        self._header: str | None = None
        self._rows: _Rows | None = None
        self._memo: dict[str, Outcome] = {}
        self._zone_memo: dict[tuple[Outcome, ...], Snapshot] = {}
        self._hosts = _gcp_hosts() if provider == "gcp" else {}

    def parse(self, data: bytes) -> Snapshot:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"{self.cloud}/vms.csv is not UTF-8 text: {exc}") from None
        lines = text.splitlines()
        if not lines or not lines[0].strip():
            raise ParseError(f"{self.cloud}/vms.csv is empty")
        if lines[0] != self._header:
            self._rows = _Rows(next(csv.reader([lines[0]])))
            self._header, self._memo = lines[0], {}
        memo = self._memo
        fresh = [line for line in dict.fromkeys(lines[1:]) if line not in memo]
        known = {line: memo[line] for line in lines[1:] if line in memo}
        known.update(self._outcomes(fresh))
        self._memo = known
        return self._snapshot([known[line] for line in lines[1:]])

    def _outcomes(self, lines: list[str]) -> dict[str, Outcome]:
        rows = self._rows
        assert rows is not None
        acc, inst = rows.index["AcceleratorName"], rows.index["InstanceType"]
        quoted = min(rows.index.get(name, len(rows.index)) for name in ("GpuInfo", "Region"))
        out: dict[str, Outcome] = {}
        todo: list[str] = []
        if max(acc, inst) < quoted:  # a CPU row is recognised without the csv module
            cut = max(acc, inst) + 1
            for line in lines:
                cells = line.split(",", cut)
                if len(cells) < cut or not (cells[acc] or cells[inst] in self._hosts):
                    out[line] = _CPU
                else:
                    todo.append(line)
        else:
            todo = lines
        for line, row in zip(todo, csv.reader(todo), strict=True):
            out[line] = self._outcome(row, rows)
        return out

    def _outcome(self, row: list[str], rows: _Rows) -> Outcome:
        accelerator = rows.get(row, "AcceleratorName")
        region = rows.get(row, "Region") or ""
        on_demand, spot = price(rows.get(row, "Price")), price(rows.get(row, "SpotPrice"))
        if not accelerator:
            name = rows.get(row, "InstanceType") or ""
            if self.provider != "gcp" or name not in self._hosts:
                return _CPU
            zone = (region, rows.get(row, "AvailabilityZone") or region)
            vcpus, memory = _int(rows.get(row, "vCPUs")), _number(rows.get(row, "MemoryGiB"))
            return ("vm", zone, name, on_demand, spot, vcpus, memory)
        if accelerator.lower().startswith("tpu"):
            return ("s", "TPU (not a GPU)", False)
        if self.provider == "gcp":
            count = _number(rows.get(row, "AcceleratorCount"))
            if not count or count != int(count):
                return ("s", "GPU row without a whole GPU count", True)
            if accelerator not in gpu_names.GCP_ACCELERATORS:
                return ("u", accelerator)
            if on_demand is None and spot is None:
                return ("s", "no price", True)
            zone = (region, rows.get(row, "AvailabilityZone") or region)
            return ("g", zone, accelerator, int(count), on_demand, spot)
        return _row(self.provider, row, rows, accelerator, region, on_demand, spot)

    def _snapshot(self, outcomes: list[Outcome]) -> Snapshot:
        snapshot = Snapshot(self.provider)
        gcp: list[Outcome] = []
        for outcome in outcomes:
            kind = outcome[0]
            if kind == "x":
                continue
            if kind == "o":
                snapshot.rows += 1
                for key, usd, attrs in outcome[1]:
                    snapshot.offer(key, usd, attrs)
            elif kind == "u":
                snapshot.rows += 1
                snapshot.unknown[outcome[1]] += 1
            elif kind == "s":
                snapshot.rows += 1 if outcome[2] else 0
                snapshot.skipped[outcome[1]] += 1
            else:
                snapshot.rows += 1 if kind == "g" else 0
                gcp.append(outcome)
        if gcp:
            self._gcp_zones(gcp, snapshot)
        return snapshot

    def _gcp_zones(self, outcomes: list[Outcome], snapshot: Snapshot) -> None:
        """GCP machines are priced zone by zone; a zone whose rows did not change reuses its result."""
        zones: dict[object, list[Outcome]] = {}
        for outcome in outcomes:
            zones.setdefault(outcome[1], []).append(outcome)
        memo: dict[tuple[Outcome, ...], Snapshot] = {}
        for rows in zones.values():
            key = tuple(rows)
            part = self._zone_memo.get(key)
            if part is None:
                part = Snapshot(self.provider)
                _gcp(rows, part, self._hosts)
            memo[key] = part
            for price_key, usd in part.prices.items():
                snapshot.offer(price_key, usd, part.attrs[price_key])
            snapshot.skipped.update(part.skipped)
        self._zone_memo = memo


def parse(cloud: str, data: bytes) -> Snapshot:
    """Prices of one ``<cloud>/vms.csv`` snapshot. Raises ParseError on a file that is not this format."""
    return Reader(cloud).parse(data)


def _row(
    provider: str,
    row: list[str],
    rows: _Rows,
    accelerator: str,
    region: str,
    on_demand: float | None,
    spot: float | None,
) -> Outcome:
    instance_type = rows.get(row, "InstanceType") or ""
    vcpus, memory = _int(rows.get(row, "vCPUs")), _number(rows.get(row, "MemoryGiB"))
    count = _number(rows.get(row, "AcceleratorCount"))
    spot_kind = "spot"
    if provider in ("aws", "azure"):
        known = gpu_names.aws(instance_type) if provider == "aws" else gpu_names.azure(instance_type)
        if known is None:
            family = instance_type.split(".")[0] if provider == "aws" else instance_type
            return ("u", f"{accelerator} ({family})")
        attrs = Attrs(known[0], known[1], known[2], known[3])
    elif provider == "lambda":
        gpu = gpu_names.lambda_cloud(instance_type, gpu_names.memory_mib(rows.get(row, "GpuInfo")))
        if gpu is None or not count:
            return ("u", f"{accelerator} ({instance_type})")
        attrs, region = Attrs(gpu, count, vcpus, memory), "all"
    else:  # vastai
        gpu = gpu_names.vast(accelerator, gpu_names.memory_mib(rows.get(row, "GpuInfo")))
        if gpu is None or not count:
            return ("u", accelerator)
        attrs, region, spot_kind = Attrs(gpu, count, vcpus, memory), vast_country(region), "interruptible"
    if not region:
        return ("s", "no region", True)
    if on_demand is None and spot is None:
        return ("s", "no price", True)
    offers = []
    if on_demand is not None:
        offers.append((machine_key(region, instance_type, "on_demand"), on_demand, attrs))
    if spot is not None:
        offers.append((machine_key(region, instance_type, spot_kind), spot, attrs))
    return ("o", tuple(offers))


@dataclass(frozen=True, slots=True)
class _Host:
    accelerator: str  # SkyPilot's GPU row name
    gpu: str
    count: int
    whole_machine_in_gpu_row: bool  # A4: the GPU row prices the whole machine
    on_demand: bool


def _gcp_hosts() -> dict[str, _Host]:
    from scraper.providers.gcp_machines import MACHINES

    hosts = {}
    for name, machine in MACHINES.items():
        if "+" in name:  # costopt's own N1 + GPU pairings: not a machine type GCP lists
            continue
        accelerator = gpu_names.GCP_SKU_TO_ACCELERATOR.get(machine.gpu_sku, machine.gpu_sku)
        hosts[name] = _Host(accelerator, machine.gpu, machine.gpu_count, machine.family is None, machine.on_demand)
    return hosts


def _gcp(outcomes: list[Outcome], snapshot: Snapshot, hosts: dict[str, _Host]) -> None:
    """GCP's GPU rows and VM rows of one snapshot -> machine prices (GPU + VM, zone by zone) and GPU parts."""
    # zone -> {(accelerator, count): (on-demand, spot)} and zone -> [(machine, vm row)]
    gpus: dict[tuple[str, str], dict[tuple[str, int], tuple[float | None, float | None]]] = {}
    vms: dict[tuple[str, str], list[tuple[str, float | None, float | None, int | None, float | None]]] = {}
    for outcome in outcomes:
        if outcome[0] == "vm":
            _, zone, name, on_demand, spot, vcpus, memory = outcome
            vms.setdefault(zone, []).append((name, on_demand, spot, vcpus, memory))
        else:
            _, zone, accelerator, count, on_demand, spot = outcome
            gpus.setdefault(zone, {})[(accelerator, count)] = (on_demand, spot)
    for zone, machines in vms.items():
        zone_gpus = gpus.get(zone, {})
        used: set[tuple[str, int]] = set()
        for name, vm_on_demand, vm_spot, vcpus, memory in machines:
            host = hosts[name]
            part = zone_gpus.get((host.accelerator, host.count))
            if part is None:
                snapshot.skipped["GCP machine row without its GPU row in that zone"] += 1
                continue
            used.add((host.accelerator, host.count))
            attrs = Attrs(host.gpu, host.count, vcpus, memory)
            for pricing, gpu_part, vm_part in (("on_demand", part[0], vm_on_demand), ("spot", part[1], vm_spot)):
                if pricing == "on_demand" and not host.on_demand:
                    continue
                if gpu_part is None or (vm_part is None and not host.whole_machine_in_gpu_row):
                    continue  # never a partial sum
                total = gpu_part if host.whole_machine_in_gpu_row else gpu_part + (vm_part or 0.0)
                snapshot.offer(machine_key(zone[0], name, pricing), total, attrs)
        for key in used:
            zone_gpus.pop(key, None)
    for zone, left in gpus.items():
        for (accelerator, count), (on_demand, spot) in left.items():
            gpu = gpu_names.GCP_ACCELERATORS[accelerator]
            attrs = Attrs(gpu, count)
            if on_demand is not None:
                snapshot.offer(part_key(zone[0], gpu, count, "on_demand"), on_demand, attrs)
            if spot is not None:
                snapshot.offer(part_key(zone[0], gpu, count, "spot"), spot, attrs)
