"""Which network joins several instances of an offer: a cluster network (RDMA) or the ordinary one (Ethernet), and
how fast it is where its provider says.

A plan that rents several instances charges the scale-out term of the fabric between them
(``optimizer.mfu.NODE_PENALTY``) and, where the instance's network bandwidth is known, the time that network takes to
carry the job's traffic (``optimizer.network``). Whether an instance has a cluster network is a fact of its family,
stated by its provider (``optimizer/data/cluster_networks.csv``, with sources), not of its GPU: Lambda's on-demand 8x
H100 instances, GCP's A2 and AWS's p3.16xlarge have NVLink inside and no RDMA between them, and an 8-GPU NVLink box
was assumed to have one until an audit showed rows costed as InfiniBand clusters that no provider sells that way. The
bandwidth is a fact of the size, not only of the family: p5.4xlarge (one H100) has a 32nd of p5.48xlarge's.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from importlib import resources

from optimizer.network import Bandwidth

RDMA, ETHERNET = "rdma", "ethernet"


@functools.cache
def _rows() -> tuple[dict[str, str], ...]:
    text = resources.files("optimizer").joinpath("data/cluster_networks.csv").read_text(encoding="utf-8")
    lines = "".join(line for line in text.splitlines(True) if not line.startswith("#"))
    return tuple(csv.DictReader(io.StringIO(lines)))


@functools.cache
def _families() -> dict[str, re.Pattern[str]]:
    patterns: dict[str, list[str]] = {}
    for row in _rows():
        if row["fabric"] == RDMA:
            patterns.setdefault(row["provider"], []).append(row["instance_pattern"])
    return {provider: re.compile("|".join(f"(?:{p})" for p in found)) for provider, found in patterns.items()}


def fabric_of(provider: str, instance_type: str) -> str:
    """``rdma`` when the provider documents a cluster network for the instance's family, else ``ethernet``."""
    pattern = _families().get(provider)
    return RDMA if pattern is not None and pattern.match(instance_type) else ETHERNET


def bandwidth_of(provider: str, instance_type: str) -> Bandwidth | None:
    """The instance's network bandwidth to the others as the file states it (the first matching row that gives one),
    or None where it states none."""
    for row in _rows():
        if row["provider"] == provider and row["gbps"] and re.match(row["instance_pattern"], instance_type):
            return Bandwidth(float(row["gbps"]), row["source"])
    return None
