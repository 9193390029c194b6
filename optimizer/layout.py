"""Where a job's GPUs sit when the user does not say: GPUs per server and the network between servers.

``plan`` reads both from each offer (the instance's GPU count; its family's network, ``optimizer.fabric``).
``estimate`` has a GPU and no offer, and took 8 GPUs per server over RDMA for every GPU until an audit found
16 RTX 4090s costed as an InfiniBand cluster of two nodes, and MI250X jobs laid out 8 modules to a node where
LUMI's and Frontier's nodes hold 4 - so an estimate and a plan of the same job disagreed unless the user knew
which flags to pass. The defaults now follow the GPU, and the answer says what was assumed and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.defaults import Assumption
from optimizer.fabric import ETHERNET, RDMA
from warehouse.gpus import GpuSpec

SERVER_GPUS = Assumption(
    8,
    "GPUs per server",
    "assumption: an 8-GPU server, the HGX and OAM baseboards' count and the usual PCIe server's, where the GPU "
    "table gives no count (warehouse/data/gpus.csv, gpus_per_node)",
)

# How GPUs inside a server talk (gpus.csv intra_node) -> the network between servers they are sold with. Of the
# offers in an instance family with a cluster network (optimizer/data/cluster_networks.csv: AWS p3dn/p4/p5/p6, Azure's
# RDMA-capable ND/NC, GCP A3/A4, CoreWeave HGX/GB200), none has a PCIe card in the bundled price snapshot: they hold
# SXM or OAM modules (tests/cli/test_examples_and_formats.py checks it against the snapshot).
PCIE_SERVERS = ("pcie", "nvlink_pair")  # cards in PCIe slots (an NVLink bridge joins pairs, not servers)


@dataclass(frozen=True, slots=True)
class Layout:
    """GPUs per server and the network between servers, each with where it comes from (the answer shows both)."""

    gpus_per_node: int
    gpus_per_node_basis: str
    fabric: str
    fabric_basis: str


def layout(gpu: GpuSpec, *, gpus_per_node: int | None = None, fabric: str | None = None) -> Layout:
    """The layout of a job on ``gpu``: what the user gave, else what the GPU's servers usually are."""
    if gpus_per_node is not None:
        per_node, per_node_basis = gpus_per_node, "given: --gpus-per-node"
    elif gpu.gpus_per_node is not None:
        per_node = gpu.gpus_per_node
        per_node_basis = f"the GPU table: {gpu.name} servers hold {per_node} (warehouse/data/gpus.csv, its sources)"
    else:
        per_node = int(SERVER_GPUS.value)
        per_node_basis = f"{SERVER_GPUS.source}; --gpus-per-node sets yours"
    if fabric is not None:
        return Layout(per_node, per_node_basis, fabric, "given: --fabric")
    if gpu.intra_node in PCIE_SERVERS:
        why = (
            f"assumption: {gpu.name} is a PCIe card, and servers of PCIe cards are rented on the ordinary network "
            "(no offer with a cluster network in costopt's price data has one); --fabric rdma if yours has one"
        )
        return Layout(per_node, per_node_basis, ETHERNET, why)
    why = (
        f"assumption: {gpu.name} modules come in servers sold with a cluster network (InfiniBand, EFA, RoCE: "
        "optimizer/data/cluster_networks.csv); --fabric ethernet if yours has none"
    )
    return Layout(per_node, per_node_basis, RDMA, why)
