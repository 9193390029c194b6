"""The GPU reference table: complete for the brief, internally consistent, aliases unambiguous."""

from __future__ import annotations

import csv

import pytest

from tests.conftest import SHARED
from warehouse.errors import UnknownGpu
from warehouse.gpus import CSV_COLUMNS, INTRA_NODE_KINDS, catalog, read_rows

REQUIRED = [
    "V100-16GB",
    "T4",
    "A10G",
    "L4",
    "L40S",
    "A100-40GB",
    "A100-80GB",
    "A100-80GB-PCIe",
    "H100-SXM",
    "H100-PCIe",
    "H100-NVL",
    "H800",
    "H200",
    "B200",
    "GH200",
    "MI300X",
    "MI325X",
    "RTX-3090",
    "RTX-4090",
    "RTX-5090",
    "RTX-A6000",
    "RTX-6000-Ada",
]


def test_every_gpu_the_brief_names_is_present():
    assert set(REQUIRED) <= set(catalog().names)


def test_columns_are_the_documented_ones():
    assert tuple(read_rows()[0]) == CSV_COLUMNS


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("H100", "H100-SXM"),
        ("h100 sxm5", "H100-SXM"),
        ("A100", "A100-80GB"),
        ("A100 40GB", "A100-40GB"),
        ("A100 PCIe", "A100-80GB-PCIe"),
        ("V100", "V100-16GB"),
        ("RTX 4090", "RTX-4090"),
        ("rtx_4090", "RTX-4090"),
        ("RTX 6000 Ada", "RTX-6000-Ada"),
        ("MI300X", "MI300X"),
        ("H200 SXM", "H200"),
        # as nvidia-smi / rocm-smi print them: the brand words are dropped, the model's own words kept
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM"),
        ("NVIDIA H100 PCIe", "H100-PCIe"),
        ("Tesla V100-SXM2-32GB", "V100-32GB"),
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("AMD Instinct MI250X", "MI250X"),
        # the PCIe cards are their own rows (PCIe, lower clocks and power), never their SXM cousins
        ("Tesla V100-PCIE-32GB", "V100-PCIe-32GB"),
        ("Tesla V100-PCIE-16GB", "V100-PCIe-16GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-40GB-PCIe"),
        ("NVIDIA A30", "A30"),
        ("AMD Instinct MI210", "MI210"),
    ],
)
def test_aliases_resolve(spelling, canonical):
    assert catalog().resolve(spelling).name == canonical


@pytest.mark.parametrize(
    "other_device", ["Tesla P100-PCIE-16GB", "NVIDIA Quadro RTX 8000", "AMD Instinct MI100", "NVIDIA"]
)
def test_brand_words_do_not_make_a_device_the_table_lacks_resolve(other_device):
    # devices the table does not hold stay errors: a P100 is not its V100 successor, a Quadro not an RTX card
    with pytest.raises(UnknownGpu):
        catalog().resolve(other_device)


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(UnknownGpu) as info:
        catalog().resolve("H1000")
    assert "H100-SXM" in str(info.value)


def test_facts_are_plausible_and_sourced():
    for spec in catalog().specs:
        assert spec.intra_node in INTRA_NODE_KINDS
        assert 8 <= spec.memory_gb <= 300, spec.name
        assert 50 <= spec.fp16_tflops <= 3000, spec.name
        if spec.bf16_tflops is not None:  # one 16-bit rate from Ampere and CDNA 2 on; Volta and Turing have no BF16
            assert spec.bf16_tflops == spec.fp16_tflops, spec.name
        else:
            assert spec.architecture in ("Volta", "Turing"), spec.name
        # FP8 tensor cores run at twice the 16-bit rate (Hopper, Ada, Blackwell, CDNA 3)
        if spec.fp8_tflops is not None:
            assert spec.fp8_tflops >= 1.9 * spec.fp16_tflops, spec.name
        assert 50 <= spec.tdp_w <= 1500, spec.name
        assert spec.spec_source, spec.name
        if spec.purchase_price_usd is not None:
            assert spec.purchase_price_date and spec.purchase_price_source.startswith(("http", "NVIDIA")), spec.name


def test_volta_and_turing_have_fp16_tensor_cores_and_no_bf16():
    """V100 and T4 have FP16 tensor cores only: no bf16 figure, their FP16 rate in fp16_tflops; a bf16 job runs
    there in fp16 mixed precision at that rate. Every other GPU has no such gap."""
    gpus = catalog()
    for name, fp16 in (("V100-16GB", 125), ("V100-32GB", 125), ("T4", 65)):
        spec = gpus.resolve(name)
        assert (spec.bf16_tflops, spec.fp16_tflops, spec.tensor16_tflops) == (None, fp16, fp16)
        assert (spec.precision_used("bf16"), spec.precision_used("fp16")) == ("fp16", "fp16")
    without_bf16 = {s.name for s in gpus.specs if s.bf16_tflops is None}
    assert without_bf16 == {"V100-16GB", "V100-32GB", "V100-PCIe-16GB", "V100-PCIe-32GB", "T4"}
    assert gpus.resolve("A100-80GB").precision_used("bf16") == "bf16"


def test_known_datasheet_values():
    gpus = catalog()
    h100 = gpus.resolve("H100")
    assert (h100.memory_gb, h100.bf16_tflops, h100.fp8_tflops, h100.tdp_w) == (80, 989, 1979, 700)
    assert gpus.resolve("A100-80GB").fp8_tflops is None  # Ampere has no FP8
    assert gpus.resolve("RTX 4090").consumer and not gpus.resolve("H100").consumer
    assert gpus.resolve("MI300X").intra_node == "infinity_fabric"
    # the PCIe cards differ from their SXM cousins in rate, power and links, not in memory
    v100, v100_pcie = gpus.resolve("V100-16GB"), gpus.resolve("V100-PCIe-16GB")
    assert (v100.fp16_tflops, v100.tdp_w, v100.intra_node) == (125, 300, "nvlink")
    assert (v100_pcie.fp16_tflops, v100_pcie.tdp_w, v100_pcie.intra_node) == (112, 250, "pcie")
    a100_pcie = gpus.resolve("A100-40GB-PCIe")
    assert (a100_pcie.memory_gb, a100_pcie.bf16_tflops, a100_pcie.tdp_w, a100_pcie.intra_node) == (40, 312, 250, "pcie")
    assert (gpus.resolve("A30").bf16_tflops, gpus.resolve("MI210").bf16_tflops) == (165, 181)


@pytest.mark.skipif(not (SHARED / "gpu_specs.csv").exists(), reason="../shared not present")
def test_agrees_with_the_shared_reference_where_both_have_a_figure():
    pairs = {
        "T4": "T4",
        "L4": "L4",
        "L40S": "L40S",
        "A100 40GB (SXM4)": "A100-40GB",
        "A100 80GB (SXM4)": "A100-80GB",
        "H100 SXM": "H100-SXM",
        "H100 PCIe": "H100-PCIe",
        "H200 (SXM)": "H200",
        "MI300X": "MI300X",
        "GeForce RTX 4090": "RTX-4090",
        "RTX A6000": "RTX-A6000",
    }
    with open(SHARED / "gpu_specs.csv", encoding="utf-8") as handle:
        reference = {row["gpu_model"]: row for row in csv.DictReader(handle)}
    for theirs, ours in pairs.items():
        spec = catalog().resolve(ours)
        row = reference[theirs]
        assert spec.memory_gb == float(row["memory_gb"]), ours
        assert spec.tensor16_tflops == pytest.approx(float(row["bf16_fp16_dense_tensor_tflops"]), rel=0.01), ours


def test_the_table_gives_a_server_size_only_where_a_source_gives_one():
    """MI250/MI250X nodes hold 4 modules (LUMI, Frontier, AMD's own cards), the unit costopt counts; blank elsewhere,
    where the estimator assumes an 8-GPU server (optimizer/layout.py)."""
    sized = {g.name: g.gpus_per_node for g in catalog().specs if g.gpus_per_node is not None}
    assert sized == {"MI250X": 4, "MI250": 4}
    from importlib import resources

    text = resources.files("warehouse").joinpath("data/gpus.csv").read_text(encoding="utf-8")
    (comment,) = [line for line in text.splitlines() if line.startswith("# gpus_per_node:")]
    for source in ("docs.lumi-supercomputer.eu/hardware/lumig", "docs.olcf.ornl.gov", "amd/AMD-Llama-135m"):
        assert source in comment
