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


def _lines(text: str, rows: _Rows, keep_instance_types: frozenset[str]) -> list[str]:
    """The lines worth parsing: GPU rows (and, for GCP, the host VM rows of GPU machines).

    A CPU row is recognised without the csv module when the columns it needs come before the first
    column that may hold quoted commas (``GpuInfo``, Vast's ``Region``), which is every layout seen.
    """
    lines = text.splitlines()[1:]
    acc, inst = rows.index["AcceleratorName"], rows.index["InstanceType"]
    quoted = min(rows.index.get(name, len(rows.index)) for name in ("GpuInfo", "Region"))
    if max(acc, inst) >= quoted:
        return lines
    cut = max(acc, inst) + 1
    kept = []
    for line in lines:
        cells = line.split(",", cut)
        if len(cells) <= cut - 1:
            continue
        if cells[acc] or cells[inst] in keep_instance_types:
            kept.append(line)
    return kept


def parse(cloud: str, data: bytes) -> Snapshot:
    """Prices of one ``<cloud>/vms.csv`` snapshot. Raises ParseError on a file that is not this format."""
    provider = CLOUDS.get(cloud)
    if provider is None:
        raise ParseError(f"{cloud}: not a cloud costopt tracks")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{cloud}/vms.csv is not UTF-8 text: {exc}") from None
    first = text.split("\n", 1)[0]
    if not first.strip():
        raise ParseError(f"{cloud}/vms.csv is empty")
    rows = _Rows(next(csv.reader([first])))
    snapshot = Snapshot(provider)
    hosts = _gcp_hosts() if provider == "gcp" else {}
    lines = _lines(text, rows, frozenset(hosts))
    if provider == "gcp":
        _gcp(csv.reader(lines), rows, snapshot, hosts)
        return snapshot
    for row in csv.reader(lines):
        accelerator = rows.get(row, "AcceleratorName")
        if not accelerator:
            continue
        if accelerator.lower().startswith("tpu"):
            snapshot.skipped["TPU (not a GPU)"] += 1
            continue
        snapshot.rows += 1
        _row(provider, row, rows, accelerator, snapshot)
    return snapshot


def _row(provider: str, row: list[str], rows: _Rows, accelerator: str, snapshot: Snapshot) -> None:
    instance_type = rows.get(row, "InstanceType") or ""
    region = rows.get(row, "Region") or ""
    on_demand, spot = price(rows.get(row, "Price")), price(rows.get(row, "SpotPrice"))
    vcpus, memory = _int(rows.get(row, "vCPUs")), _number(rows.get(row, "MemoryGiB"))
    count = _number(rows.get(row, "AcceleratorCount"))
    spot_kind = "spot"
    attrs: Attrs | None = None
    if provider in ("aws", "azure"):
        known = gpu_names.aws(instance_type) if provider == "aws" else gpu_names.azure(instance_type)
        if known is None:
            family = instance_type.split(".")[0] if provider == "aws" else instance_type
            snapshot.unknown[f"{accelerator} ({family})"] += 1
            return
        attrs = Attrs(known[0], known[1], known[2], known[3])
    elif provider == "lambda":
        gpu = gpu_names.lambda_cloud(instance_type, gpu_names.memory_mib(rows.get(row, "GpuInfo")))
        if gpu is None or not count:
            snapshot.unknown[f"{accelerator} ({instance_type})"] += 1
            return
        attrs, region = Attrs(gpu, count, vcpus, memory), "all"
    else:  # vastai
        gpu = gpu_names.vast(accelerator, gpu_names.memory_mib(rows.get(row, "GpuInfo")))
        if gpu is None or not count:
            snapshot.unknown[accelerator] += 1
            return
        attrs, region, spot_kind = Attrs(gpu, count, vcpus, memory), vast_country(region), "interruptible"
    if not region:
        snapshot.skipped["no region"] += 1
        return
    if on_demand is None and spot is None:
        snapshot.skipped["no price"] += 1
        return
    if on_demand is not None:
        snapshot.offer(machine_key(region, instance_type, "on_demand"), on_demand, attrs)
    if spot is not None:
        snapshot.offer(machine_key(region, instance_type, spot_kind), spot, attrs)


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


def _gcp(reader: object, rows: _Rows, snapshot: Snapshot, hosts: dict[str, _Host]) -> None:
    # zone -> {(accelerator, count): (on-demand, spot)} and zone -> [(machine, vm row)]
    gpus: dict[tuple[str, str], dict[tuple[str, int], tuple[float | None, float | None]]] = {}
    vms: dict[tuple[str, str], list[tuple[str, float | None, float | None, int | None, float | None]]] = {}
    for row in reader:  # type: ignore[attr-defined]
        accelerator = rows.get(row, "AcceleratorName")
        region = rows.get(row, "Region") or ""
        zone = (region, rows.get(row, "AvailabilityZone") or region)
        on_demand, spot = price(rows.get(row, "Price")), price(rows.get(row, "SpotPrice"))
        if not accelerator:
            name = rows.get(row, "InstanceType") or ""
            if name not in hosts:
                continue  # a CPU machine
            vcpus, memory = _int(rows.get(row, "vCPUs")), _number(rows.get(row, "MemoryGiB"))
            vms.setdefault(zone, []).append((name, on_demand, spot, vcpus, memory))
            continue
        if accelerator.lower().startswith("tpu"):
            snapshot.skipped["TPU (not a GPU)"] += 1
            continue
        snapshot.rows += 1
        count = _number(rows.get(row, "AcceleratorCount"))
        if not count or count != int(count):
            snapshot.skipped["GPU row without a whole GPU count"] += 1
            continue
        if accelerator not in gpu_names.GCP_ACCELERATORS:
            snapshot.unknown[accelerator] += 1
            continue
        if on_demand is None and spot is None:
            snapshot.skipped["no price"] += 1
            continue
        gpus.setdefault(zone, {})[(accelerator, int(count))] = (on_demand, spot)
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
