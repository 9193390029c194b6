"""Cyclenerd's GCP ``pricing.yml``: per machine type and region, the hourly on-demand and spot price (pure).

Where it lives: ``pricing.yml`` at the root of Cyclenerd/google-cloud-pricing-cost-calculator,
rebuilt from Google's Cloud Billing catalog about once a week since February 2022. The part read:

```yaml
compute:
  instance:
    a2-highgpu-1g:
      a100: 1                 # GPUs and how many (keys below)
      cost:
        us-central1:
          hour: 3.673385      # on-demand, whole machine: vCPUs + RAM + GPUs (+ bundled Local SSD)
          hour_spot: 1.1      # spot (absent in the oldest files)
      cpu: 12
      ram: 85
```

Its build script today prices a machine in a region only when every part (vCPU, RAM and GPU) has a
SKU there. Older files did not: from 2022-02 to 2024-08 they priced A2 machines in regions without an
A100 SKU (northamerica-northeast2 and others) at vCPU + RAM alone, $0.81 an hour for a2-highgpu-1g
where the other regions ask $3.6 to $4.8. So a region whose on-demand price is below half the
machine's median over all its regions in the same file (``GPU_LESS``; GCP's regional prices differ
by tens of percent, not by a factor of two) is taken as priced without its GPUs: that region's
on-demand and spot rows are skipped and counted. Only machines with a GPU key are read; a machine whose
GPU key costopt does not know is counted, never guessed. The file is indented YAML of a fixed shape,
read with regular expressions rather than a YAML parser: a few megabytes per commit over hundreds of
commits, in seconds instead of minutes, and no new dependency.
"""

from __future__ import annotations

import re
import statistics

from scraper.archive.snapshot import Attrs, Snapshot, machine_key, price
from warehouse.errors import ParseError

FORMAT = "cyclenerd"
PATH = "pricing.yml"
PROVIDER = "gcp"

# Cyclenerd's GPU keys (its build/pricing.pl maps each to one GCP GPU SKU) -> canonical GPU.
GPU_KEYS: dict[str, str] = {
    "a100": "A100-40GB",  # "NVIDIA's Ampere A100 40GB GPUs" (A2 High / Mega)
    "a100-80gb": "A100-80GB",  # A2 Ultra
    "h100-80gb": "H100-SXM",  # A3 High
    "h100-80gb-mega": "H100-SXM",  # A3 Mega: the same H100 SXM, more network
    "l4": "L4",  # G2
}
# ``rtx6000`` appears only on G4 machines, whose GPU is the RTX PRO 6000 Blackwell Server Edition
# (Compute Engine "G4 machine series"); on any other family the key would be a guess, so it is not read.
FAMILY_GPU_KEYS: dict[tuple[str, str], str] = {("g4", "rtx6000"): "RTX-PRO-6000"}
# numeric keys of a machine that are not GPUs
NOT_GPUS = frozenset({"cpu", "ram", "bandwidth", "local-ssd", "local", "tier1"})
GPU_LESS = 0.5  # on-demand below this share of the machine's median over regions: priced without its GPUs

_INSTANCES = re.compile(r"^compute:\n  instance:\n(?P<body>(?:(?:    |\n).*\n?)*)", re.M)
_MACHINE = re.compile(r"^    (?P<name>[a-z0-9-]+):\n(?P<body>(?:      .*\n?)*)", re.M)
_NUMBER_KEY = re.compile(r"^      (?P<key>[a-z0-9-]+): (?P<value>[0-9.]+)\s*$", re.M)
_REGION = re.compile(r"^        (?P<region>[a-z0-9-]+):\n(?P<body>(?:          .*\n?)*)", re.M)
_HOUR = re.compile(r"^          (?P<key>hour|hour_spot): (?P<value>\S+)\s*$", re.M)


def _machines(text: str) -> str:
    match = _INSTANCES.search(text)
    if match is None:
        raise ParseError("not a Cyclenerd pricing.yml: no compute.instance section")
    return match.group("body")


def parse(data: bytes) -> Snapshot:
    """GPU machine prices of one ``pricing.yml`` snapshot. Raises ParseError on a file of another shape."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"pricing.yml is not UTF-8 text: {exc}") from None
    snapshot = Snapshot(PROVIDER)
    for machine in _MACHINE.finditer(_machines(text)):
        name, body = machine.group("name"), machine.group("body")
        numbers = {m.group("key"): float(m.group("value")) for m in _NUMBER_KEY.finditer(body)}
        gpu_keys = [k for k in numbers if k not in NOT_GPUS]
        if not gpu_keys:
            continue  # a CPU machine
        family = name.split("-")[0]
        if len(gpu_keys) != 1:
            snapshot.unknown["+".join(sorted(gpu_keys))] += 1
            continue
        key = gpu_keys[0]
        gpu = GPU_KEYS.get(key) or FAMILY_GPU_KEYS.get((family, key))
        count = numbers[key]
        if gpu is None or count <= 0:
            snapshot.unknown[f"{key} ({family})"] += 1
            continue
        attrs = Attrs(gpu, count, round(numbers["cpu"]) if "cpu" in numbers else None, numbers.get("ram"))
        _prices(snapshot, name, body, attrs)
    return snapshot


def _prices(snapshot: Snapshot, name: str, body: str, attrs: Attrs) -> None:
    from scraper.providers.gcp_machines import lookup

    machine = lookup(name)
    on_demand_allowed = machine is None or machine.on_demand  # A3 Ultra / A4: spot only (see gcp_machines)
    regions: list[tuple[str, dict[str, float | None]]] = []
    for match in _REGION.finditer(body):
        snapshot.rows += 1
        hours = {m.group("key"): price(m.group("value")) for m in _HOUR.finditer(match.group("body"))}
        regions.append((match.group("region"), hours))
    on_demand = sorted(v for _, hours in regions if (v := hours.get("hour")) is not None)
    floor = GPU_LESS * statistics.median(on_demand) if len(on_demand) >= 3 else 0.0
    for region, hours in regions:
        listed = hours.get("hour")
        if listed is not None and listed < floor:
            snapshot.skipped["priced without its GPUs (below half the median over regions)"] += 1
            continue
        found = False
        for key, pricing in (("hour", "on_demand"), ("hour_spot", "spot")):
            value = hours.get(key)
            if value is None or (pricing == "on_demand" and not on_demand_allowed):
                continue
            snapshot.offer(machine_key(region, name, pricing), value, attrs)
            found = True
        if not found:
            snapshot.skipped["no price"] += 1
