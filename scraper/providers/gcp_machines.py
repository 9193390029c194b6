"""GCP GPU machine shapes: what each one holds and which SKUs bill it, written down because the catalog does not say.

The Cloud Billing Catalog prices components, not machine types; the shapes come from Compute
Engine's ``machineTypes.list`` (which needs a project and credentials) or from the documentation.
A table in code is short, reviewed like code and tested. Figures from the Compute Engine
documentation "GPU machine types" and "Accelerator-optimized machine family" (A2, A3, A4, G2) and
"GPUs on N1" (T4, V100 limits), as of November 2026. Memory is in GiB (the docs write "GB" for the
same binary unit; ``machineTypes.list`` reports a2-highgpu-1g as 87040 MB = 85 GiB).

How each series is billed:

* A2 High / Mega (A100 40 GB) and A2 Ultra (A100 80 GB): GPUs + "A2 Instance" vCPU and RAM; the
  Ultra shapes also pay for their bundled Local SSD (375 GiB per GPU).
* A3 High (H100), A3 Mega (H100 "Mega"/"Plus" GPU, "A3Plus" vCPU/RAM), A3 Ultra (H200, "A3Ultra"
  vCPU/RAM): GPUs + vCPU + RAM + bundled Local SSD (16 x 375 GiB on A3 High/Mega, 32 x 375 GiB on
  A3 Ultra).
* A4 (B200): the "A4 Nvidia B200 (1 gpu slice)" SKU is one eighth of the whole machine, vCPUs, RAM
  and its 12 TiB of Local SSD included; Google publishes no A4 vCPU/RAM SKUs (gpuhunt, SkyPilot).
* G2 (L4): GPUs + "G2 Instance" vCPU and RAM; Local SSD is optional there, so not counted.
* N1 + T4 / V100: the GPU is attached to an N1 machine the user picks, so there is no canonical
  shape; costopt prices a few standard ones (``N1_SHAPES``), each named ``<n1 type>+<GPU>x<count>``.

A3 Ultra and A4 cannot be created on demand (only Spot, Flex-start/DWS or reservations; Compute
Engine "consumption options"), although the catalog lists on-demand rates for their parts; they are
marked ``on_demand=False`` and get spot prices only, as gpuhunt does.
"""

from __future__ import annotations

from dataclasses import dataclass

from scraper.providers.gcp_skus import SSD, Component, core, gpu, ram

LSSD_DISK_GIB = 375  # one Local SSD disk


@dataclass(frozen=True, slots=True)
class GcpMachine:
    gpu: str  # canonical GPU name (warehouse/data/gpus.csv)
    gpu_count: int
    vcpus: int
    memory_gib: float
    gpu_sku: str  # GPU SKU key (gcp_skus.GPU_SKUS values)
    family: str | None  # vCPU/RAM SKU family; None when the GPU SKU prices the whole machine (A4)
    local_ssd_gib: int = 0  # bundled Local SSD billed on top (0 when none, or when included as on A4)
    on_demand: bool = True  # False: Spot / DWS / reservations only

    def components(self) -> list[tuple[Component, int | float]]:
        """(component, quantity) pairs whose unit prices add up to the machine's hourly price."""
        parts: list[tuple[Component, int | float]] = [(gpu(self.gpu_sku), self.gpu_count)]
        if self.family is not None:
            parts += [(core(self.family), self.vcpus), (ram(self.family), self.memory_gib)]
        if self.local_ssd_gib:
            parts.append((SSD, self.local_ssd_gib))
        return parts


def _a2(gpus: int, vcpus: int, gib: int, *, ultra: bool = False) -> GcpMachine:
    if ultra:
        return GcpMachine("A100-80GB", gpus, vcpus, gib, "A100-80GB", "a2", gpus * LSSD_DISK_GIB)
    return GcpMachine("A100-40GB", gpus, vcpus, gib, "A100", "a2")


def _g2(gpus: int, vcpus: int) -> GcpMachine:
    return GcpMachine("L4", gpus, vcpus, 4 * vcpus, "L4", "g2")  # 4 GiB per vCPU on every G2 shape


MACHINES: dict[str, GcpMachine] = {
    # A2 High and Mega: A100 40 GB, 12 vCPUs and 85 GiB per GPU (Mega: 16 GPUs on 96 vCPUs)
    "a2-highgpu-1g": _a2(1, 12, 85),
    "a2-highgpu-2g": _a2(2, 24, 170),
    "a2-highgpu-4g": _a2(4, 48, 340),
    "a2-highgpu-8g": _a2(8, 96, 680),
    "a2-megagpu-16g": _a2(16, 96, 1360),
    # A2 Ultra: A100 80 GB, 12 vCPUs, 170 GiB and one 375 GiB Local SSD per GPU
    "a2-ultragpu-1g": _a2(1, 12, 170, ultra=True),
    "a2-ultragpu-2g": _a2(2, 24, 340, ultra=True),
    "a2-ultragpu-4g": _a2(4, 48, 680, ultra=True),
    "a2-ultragpu-8g": _a2(8, 96, 1360, ultra=True),
    # A3: H100 80 GB (High), H100 80 GB with more network (Mega), H200 141 GB (Ultra)
    "a3-highgpu-8g": GcpMachine("H100-SXM", 8, 208, 1872, "H100", "a3", 16 * LSSD_DISK_GIB),
    "a3-megagpu-8g": GcpMachine("H100-SXM", 8, 208, 1872, "H100-MEGA", "a3-mega", 16 * LSSD_DISK_GIB),
    "a3-ultragpu-8g": GcpMachine("H200", 8, 224, 2952, "H200", "a3-ultra", 32 * LSSD_DISK_GIB, on_demand=False),
    # A4: B200; 224 vCPUs, 3968 GiB and 12 TiB Local SSD are inside the per-GPU slice price
    "a4-highgpu-8g": GcpMachine("B200", 8, 224, 3968, "B200-SLICE", None, on_demand=False),
    # G2: L4 24 GB
    "g2-standard-4": _g2(1, 4),
    "g2-standard-8": _g2(1, 8),
    "g2-standard-12": _g2(1, 12),
    "g2-standard-16": _g2(1, 16),
    "g2-standard-24": _g2(2, 24),
    "g2-standard-32": _g2(1, 32),
    "g2-standard-48": _g2(4, 48),
    "g2-standard-96": _g2(8, 96),
}

# N1 shapes priced with attached GPUs: n1-standard-N (N vCPUs, 3.75 GiB each) sized within GCP's
# per-count vCPU limits (T4: up to 48 vCPUs for 1-2 GPUs, 96 for 4; V100: 12 vCPUs per GPU),
# one vCPU-rich but common shape per GPU count, as a user would pick for a training job.
N1_SHAPES: tuple[tuple[int, str, int], ...] = (
    (8, "T4", 1),
    (16, "T4", 2),
    (32, "T4", 4),
    (8, "V100", 1),
    (16, "V100", 2),
    (32, "V100", 4),
    (64, "V100", 8),
)
_N1_GPUS = {"T4": "T4", "V100": "V100-16GB"}  # GCP's V100 is the 16 GB SXM2 card


def n1_name(vcpus: int, gpu_sku: str, count: int) -> str:
    return f"n1-standard-{vcpus}+{gpu_sku}x{count}"


MACHINES.update(
    {
        n1_name(vcpus, sku, count): GcpMachine(_N1_GPUS[sku], count, vcpus, 3.75 * vcpus, sku, "n1")
        for vcpus, sku, count in N1_SHAPES
    }
)


def lookup(name: str) -> GcpMachine | None:
    return MACHINES.get(name)
