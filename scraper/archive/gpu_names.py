"""How archived rows name their GPUs, mapped to costopt's canonical names; anything else is unknown.

The archives write a GPU the way SkyPilot does ("A100", "H100-MEGA", "RTX5090"), which is not always
enough to tell two cards apart: SkyPilot's "H100" is an SXM part on GCP but a PCIe card on Lambda's
``gpu_1x_h100_pcie``, and its "A100" is the 40 GB part by SkyPilot's own convention ("A100-80GB" is
the other one). So a row is mapped, in this order, by what costopt already knows for certain:

1. the provider's instance-type table that costopt's scrapers use (AWS ``aws_instances``, Azure
   ``AZURE_VMS``, GCP ``gcp_machines``): the instance type fixes GPU and count;
2. Lambda: the instance-type name read like Lambda's own GPU descriptions
   (``lambda_cloud.canonical_gpu``, which tells PCIe, SXM, 40 and 80 GB apart);
3. Vast.ai: the marketplace names costopt's Vast.ai scraper knows (``vastai``), with SkyPilot's
   spacing removed; "H100" or "A100" alone (SXM or PCIe?) stay unknown;
4. GCP GPU rows: ``GCP_ACCELERATORS`` below.

A name none of these knows is counted per name and never guessed.
"""

from __future__ import annotations

import re

# SkyPilot's GCP accelerator names (its ``fetch_gcp.py``) -> canonical GPU. GCP attaches exactly one
# card per name: A100 = the 40 GB SXM4 part of A2 High/Mega, A100-80GB = A2 Ultra, H100 = A3 High,
# H100-MEGA = A3 Mega (the same H100 80 GB SXM with more network), H200 = A3 Ultra, B200 = A4,
# L4 = G2, T4 and V100 (16 GB SXM2) attach to N1 machines (Compute Engine "GPU machine types").
# P100, P4 and K80 are not in costopt's GPU table and are counted as unknown.
GCP_ACCELERATORS: dict[str, str] = {
    "A100": "A100-40GB",
    "A100-80GB": "A100-80GB",
    "H100": "H100-SXM",
    "H100-MEGA": "H100-SXM",
    "H200": "H200",
    "B200": "B200",
    "L4": "L4",
    "T4": "T4",
    "V100": "V100-16GB",
}

# costopt's GCP machine table names GPU SKUs; SkyPilot names the same GPU rows like this.
GCP_SKU_TO_ACCELERATOR: dict[str, str] = {"B200-SLICE": "B200"}


def aws(instance_type: str) -> tuple[str, int, int, float] | None:
    from scraper.providers.aws_instances import INSTANCES

    found = INSTANCES.get(instance_type)
    return None if found is None else (found.gpu, found.gpu_count, found.vcpus, found.memory_gib)


def azure(instance_type: str) -> tuple[str, float, int, float] | None:
    from scraper.providers.azure import AZURE_VMS

    found = AZURE_VMS.get(instance_type)
    return None if found is None else (found.gpu, found.gpu_count, found.vcpus, found.memory_gib)


def lambda_cloud(instance_type: str, memory_mib: float | None) -> str | None:
    from scraper.providers.lambda_cloud import canonical_gpu

    vram = None if memory_mib is None else memory_mib / 1024
    return canonical_gpu(instance_type.replace("_", " "), vram)


def vast(name: str, memory_mib: float | None) -> str | None:
    from scraper.providers.vastai import _canonical_gpu

    # SkyPilot writes Vast's names without spaces ("RTX5090", "RTXPRO6000WS"); vastai compares names
    # with spaces and punctuation removed, so the spellings meet. Memory decides A100/V100 only where
    # Vast's own name says SXM4 or PCIE, which SkyPilot's does not: those stay unknown.
    return _canonical_gpu(name, memory_mib)


_MEMORY = re.compile(r"['\"]SizeInMiB['\"]\s*:\s*([0-9.]+)")


def memory_mib(gpu_info: str | None) -> float | None:
    """Per-GPU memory from SkyPilot's ``GpuInfo`` cell (a Python-literal dict), if it says."""
    if not gpu_info:
        return None
    match = _MEMORY.search(gpu_info)
    return float(match.group(1)) if match else None
