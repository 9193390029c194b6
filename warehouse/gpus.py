"""The GPU reference table: hardware facts every other module reads.

The facts live in ``warehouse/data/gpus.csv`` (shipped in the wheel), each row citing its sources.
Names resolve loosely -- case, spaces, dashes and underscores are ignored, and every GPU has aliases
-- because users, providers and papers all spell them differently ("H100", "h100-sxm5", "H100 SXM").
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from warehouse.errors import UnknownGpu

CSV_COLUMNS = (
    "name",
    "aliases",
    "vendor",
    "architecture",
    "form_factor",
    "memory_gb",
    "memory_bandwidth_gb_s",
    "bf16_tflops",
    "fp16_tflops",
    "fp8_tflops",
    "tdp_w",
    "intra_node",
    "interconnect",
    "purchase_price_usd",
    "purchase_price_date",
    "purchase_price_source",
    "spec_source",
    "notes",
    "gpus_per_node",
)
INTRA_NODE_KINDS = ("nvlink", "nvlink_pair", "infinity_fabric", "pcie")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    name: str
    aliases: tuple[str, ...]
    vendor: str
    architecture: str
    form_factor: str
    memory_gb: float
    memory_bandwidth_gb_s: float
    bf16_tflops: float | None  # dense tensor TFLOPS; None where the GPU has no BF16 (Volta V100, Turing T4)
    fp16_tflops: float  # dense FP16 tensor TFLOPS (FP32 accumulate); the BF16 rate on Ampere/CDNA 2 and later
    fp8_tflops: float | None  # dense; None where the GPU has no FP8
    tdp_w: float
    intra_node: str  # one of INTRA_NODE_KINDS: how GPUs inside one server talk
    interconnect: str  # human description
    purchase_price_usd: float | None
    purchase_price_date: str
    purchase_price_source: str
    spec_source: str
    notes: str
    # GPUs in the server it usually comes in, where a source says so (MI250X: 4 modules per LUMI/Frontier node);
    # None: the table has no count (estimate then assumes 8, optimizer/layout.py). Not in the warehouse's gpus table.
    gpus_per_node: int | None = None

    @property
    def tensor16_tflops(self) -> float:
        """The dense 16-bit tensor rate mixed-precision training runs at: BF16, or FP16 where there is no BF16.

        The MFU model's GPU terms (bytes per FLOP, small-matrix overhead) are stated against this rate.
        """
        return self.bf16_tflops if self.bf16_tflops is not None else self.fp16_tflops

    def precision_used(self, precision: str) -> str:
        """The precision a job asked to run in ``precision`` runs in here: bf16 becomes fp16 mixed precision
        (with loss scaling) on a GPU without BF16 tensor cores; fp16 and fp8 stay (fp8 needs FP8 cores)."""
        return "fp16" if precision == "bf16" and self.bf16_tflops is None else precision

    @property
    def consumer(self) -> bool:
        return self.form_factor.lower().startswith("consumer")


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# The brand words nvidia-smi, rocm-smi and cloud consoles put around a model name ("NVIDIA A100-SXM4-80GB",
# "Tesla V100-SXM2-32GB", "AMD Instinct MI250X", "NVIDIA H100 80GB HBM3"): a name pasted from one of them
# resolves once they are dropped. Only tried after the name as given, so an alias that holds one still wins.
_BRAND_WORDS = re.compile(r"\b(nvidia|tesla|amd|instinct|geforce|radeon)\b", re.IGNORECASE)


def _float(value: str) -> float | None:
    value = value.strip()
    return float(value) if value else None


def _spec(row: dict[str, str]) -> GpuSpec:
    def required(column: str) -> float:
        value = _float(row[column])
        if value is None:
            raise ValueError(f"gpus.csv: {row['name']} has no {column}")
        return value

    if row["intra_node"] not in INTRA_NODE_KINDS:
        raise ValueError(f"gpus.csv: {row['name']} has intra_node {row['intra_node']!r}")
    per_node = row["gpus_per_node"].strip()
    if per_node and not (per_node.isdigit() and int(per_node) > 0):
        raise ValueError(f"gpus.csv: {row['name']} has gpus_per_node {per_node!r}")
    return GpuSpec(
        name=row["name"],
        aliases=tuple(a.strip() for a in row["aliases"].split(";") if a.strip()),
        vendor=row["vendor"],
        architecture=row["architecture"],
        form_factor=row["form_factor"],
        memory_gb=required("memory_gb"),
        memory_bandwidth_gb_s=required("memory_bandwidth_gb_s"),
        bf16_tflops=_float(row["bf16_tflops"]),
        fp16_tflops=required("fp16_tflops"),
        fp8_tflops=_float(row["fp8_tflops"]),
        tdp_w=required("tdp_w"),
        intra_node=row["intra_node"],
        interconnect=row["interconnect"],
        purchase_price_usd=_float(row["purchase_price_usd"]),
        purchase_price_date=row["purchase_price_date"],
        purchase_price_source=row["purchase_price_source"],
        spec_source=row["spec_source"],
        notes=row["notes"],
        gpus_per_node=int(per_node) if per_node else None,
    )


class GpuCatalog:
    """All known GPUs, resolvable by canonical name or alias."""

    def __init__(self, specs: list[GpuSpec]) -> None:
        self.specs = specs
        self._by_key: dict[str, GpuSpec] = {}
        for spec in specs:
            for name in (spec.name, *spec.aliases):
                other = self._by_key.setdefault(_key(name), spec)
                if other is not spec:
                    raise ValueError(f"gpus.csv: {name!r} names both {other.name} and {spec.name}")

    @property
    def names(self) -> list[str]:
        return [spec.name for spec in self.specs]

    def get(self, name: str) -> GpuSpec | None:
        return self._by_key.get(_key(name)) or self._by_key.get(_key(_BRAND_WORDS.sub(" ", name)))

    def resolve(self, name: str) -> GpuSpec:
        spec = self.get(name)
        if spec is None:
            raise UnknownGpu(name, self.names)
        return spec

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None


def read_rows() -> list[dict[str, str]]:
    text = resources.files("warehouse").joinpath("data/gpus.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    return rows


@cache
def catalog() -> GpuCatalog:
    """The shipped GPU table (read once per process)."""
    return GpuCatalog([_spec(row) for row in read_rows()])
