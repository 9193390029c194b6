"""The archive parsers: SkyPilot's vms.csv per cloud and Cyclenerd's pricing.yml, bytes in, prices out."""

from __future__ import annotations

import pytest

from scraper.archive import cyclenerd, skypilot
from scraper.archive.snapshot import machine_key, part_key, price
from tests.scraper.archive_support import GCP_HEADER, aws_csv, gcp_csv
from warehouse.errors import ParseError


def test_layouts_of_both_archive_shapes():
    assert skypilot.layout("catalogs/v7/aws/vms.csv") == skypilot.Layout("aws", 7)
    assert skypilot.layout("gcp/vms.csv") == skypilot.Layout("gcp", None)
    assert skypilot.layout("catalogs/v6/vast/vms.csv").provider == "vastai"
    assert skypilot.layout("catalogs/v7/fluidstack/vms.csv").provider is None
    assert skypilot.layout("catalogs/v7/aws/images.csv") is None
    assert skypilot.layout("README.md") is None


def test_no_price_cells_are_no_price_never_zero():
    assert [price(x) for x in ("", " ", "nan", "0", "0.0", "-1", "N/A", "1.5")] == [None] * 7 + [1.5]


def test_aws_region_price_is_the_lowest_zone_and_unknown_gpus_are_counted():
    snap = skypilot.parse("aws", aws_csv(55.04, spot_az=(30.0, 28.0)).encode())
    assert snap.provider == "aws"
    assert snap.prices == {
        machine_key("us-east-1", "p5.48xlarge", "on_demand"): 55.04,
        machine_key("us-east-1", "p5.48xlarge", "spot"): 28.0,
    }
    attrs = snap.attrs[machine_key("us-east-1", "p5.48xlarge", "on_demand")]
    assert (attrs.gpu, attrs.gpu_count, attrs.vcpus, attrs.memory_gib) == ("H100-SXM", 8, 192, 2048)
    assert dict(snap.unknown) == {"K80 (p2)": 1}
    assert snap.rows == 3  # two p5 zones and the K80; the CPU row is not a GPU row


def test_gcp_gpu_and_vm_rows_add_up_to_a_machine_and_leftover_gpus_are_parts():
    snap = skypilot.parse("gcp", gcp_csv(a100=2.93391, vm=0.73948, t4=0.35).encode())
    assert snap.prices[machine_key("us-central1", "a2-highgpu-1g", "on_demand")] == pytest.approx(3.67339)
    assert snap.prices[machine_key("us-central1", "a2-highgpu-1g", "spot")] == pytest.approx(0.36975 + 1.4341)
    assert snap.attrs[machine_key("us-central1", "a2-highgpu-1g", "on_demand")].gpu == "A100-40GB"
    assert snap.prices[part_key("us-central1", "T4", 1, "on_demand")] == 0.35
    assert snap.prices[part_key("us-central1", "T4", 1, "spot")] == 0.11
    # the A100 row went into the machine, so it is not also a part; the TPU is not a GPU
    assert not any(k[0] == "p" and k[2].startswith("A100") for k in snap.prices)
    assert snap.skipped["TPU (not a GPU)"] == 1


def test_gcp_machine_without_its_gpu_row_in_that_zone_gets_no_partial_price():
    text = "\n".join([GCP_HEADER, "a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,0.73948,0.36975", ""])
    snap = skypilot.parse("gcp", text.encode())
    assert snap.prices == {}
    assert snap.skipped["GCP machine row without its GPU row in that zone"] == 1


def test_gcp_a4_gpu_row_is_the_whole_machine_and_spot_only():
    text = "\n".join(
        [
            GCP_HEADER,
            "a4-highgpu-8g,224.0,3968.0,,,,us-central1,us-central1-b,0.0,0.0",
            ",,,B200,8,,us-central1,us-central1-b,90.216,34.0736",
            "",
        ]
    )
    snap = skypilot.parse("gcp", text.encode())
    assert snap.prices == {machine_key("us-central1", "a4-highgpu-8g", "spot"): 34.0736}


def test_lambda_is_one_region_and_pcie_is_told_from_sxm():
    header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"
    rows = [
        header,
        "gpu_1x_h100_pcie,H100,1.0,26.0,200.0,3.29,us-east-1,,",
        "gpu_1x_h100_pcie,H100,1.0,26.0,200.0,3.29,europe-central-1,,",
        "gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,23.92,us-east-1,,",
        "gpu_1x_rtx6000,RTX6000,1.0,14.0,46.0,0.5,us-east-1,,",
        "",
    ]
    snap = skypilot.parse("lambda", "\n".join(rows).encode())
    assert snap.prices == {
        machine_key("all", "gpu_1x_h100_pcie", "on_demand"): 3.29,
        machine_key("all", "gpu_8x_h100_sxm5", "on_demand"): 23.92,
    }
    assert snap.attrs[machine_key("all", "gpu_1x_h100_pcie", "on_demand")].gpu == "H100-PCIe"
    assert snap.attrs[machine_key("all", "gpu_8x_h100_sxm5", "on_demand")].gpu == "H100-SXM"
    assert dict(snap.unknown) == {"RTX6000 (gpu_1x_rtx6000)": 1}


def test_vast_rows_are_countries_interruptible_and_ambiguous_names_unknown():
    header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region"
    rows = [
        header,
        '1x-RTX_5090-32-65536,RTX5090,1,32,64.0,"{\'Gpus\': []}",0.44,0.20,"Denmark, DK, EU"',
        '1x-RTX_5090-32-65536,RTX5090,1,32,64.0,,0.40,0.00,", DK, EU"',
        '8x-H100-64-512,H100,8,64,512.0,,16.0,8.0,"Texas, US, NA"',
        "",
    ]
    snap = skypilot.parse("vast", "\n".join(rows).encode())
    assert snap.prices == {
        machine_key("DK", "1x-RTX_5090-32-65536", "on_demand"): 0.40,
        machine_key("DK", "1x-RTX_5090-32-65536", "interruptible"): 0.20,
    }
    assert snap.unknown["H100"] == 1  # SXM or PCIe? never guessed


def test_vast_country_codes():
    assert skypilot.vast_country("Denmark, DK, EU") == "DK"
    assert skypilot.vast_country(", CA, NA") == "CA"
    assert skypilot.vast_country("Somewhere") == "unknown"


def test_azure_uses_costopt_size_table_not_the_archive_name():
    header = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,Generation"
    rows = [
        header,
        "Standard_NC24ads_A100_v4,A100-80GB,1,24,220,,3.673,0.7346,eastus,V2",
        "Standard_NV6ads_A10_v5,A10,0.167,6,55,,0.454,0.0908,eastus,V2",
        "Standard_NV12s_v3,M60,1,12,112,,1.14,0.228,eastus,V1",
        "",
    ]
    snap = skypilot.parse("azure", "\n".join(rows).encode())
    a100 = snap.attrs[machine_key("eastus", "Standard_NC24ads_A100_v4", "on_demand")]
    assert a100.gpu == "A100-80GB-PCIe"  # the archive says A100-80GB; the size is the PCIe card
    assert snap.attrs[machine_key("eastus", "Standard_NV6ads_A10_v5", "on_demand")].gpu_count == pytest.approx(1 / 6)
    assert dict(snap.unknown) == {"M60 (Standard_NV12s_v3)": 1}


def test_a_file_of_another_shape_is_a_parse_error():
    with pytest.raises(ParseError, match="no column"):
        skypilot.parse("aws", b"name,price\na,1\n")
    with pytest.raises(ParseError, match="empty"):
        skypilot.parse("aws", b"")
    with pytest.raises(ParseError, match="UTF-8"):
        skypilot.parse("aws", b"\xff\xfe\x00")


PRICING_YML = """---
about:
  generated: Thu Jul 30 06:13:17 2026
compute:
  instance:
    a2-highgpu-1g:
      a100: 1
      cost:
        asia-east1:
          hour: 3.790142
          hour_spot: 0.444055
          month: 2766.80366
        northamerica-northeast2:
          hour: 0.8141
          hour_spot: 0.2
        us-central1:
          hour: 3.673385
          hour_spot: 1.92802
        us-east1:
          hour: 3.673385
      cpu: 12
      ram: 85
    a3-ultragpu-8g:
      cost:
        us-central1:
          hour: 84.8
          hour_spot: 37.9
      cpu: 224
      h200: 8
      ram: 2952
    c2-standard-4:
      cost:
        us-central1:
          hour: 0.2
      cpu: 4
      ram: 16
    g4-standard-48:
      cost:
        us-central1:
          hour: 4.5
      cpu: 48
      ram: 180
      rtx6000: 1
  license:
    foo:
      cost: 1
"""


def test_cyclenerd_machines_with_gpus_and_the_gpu_less_regions_left_out():
    snap = cyclenerd.parse(PRICING_YML.encode())
    assert snap.prices == {
        machine_key("asia-east1", "a2-highgpu-1g", "on_demand"): 3.790142,
        machine_key("asia-east1", "a2-highgpu-1g", "spot"): 0.444055,
        machine_key("us-central1", "a2-highgpu-1g", "on_demand"): 3.673385,
        machine_key("us-central1", "a2-highgpu-1g", "spot"): 1.92802,
        machine_key("us-east1", "a2-highgpu-1g", "on_demand"): 3.673385,
        machine_key("us-central1", "g4-standard-48", "on_demand"): 4.5,
    }
    a2 = snap.attrs[machine_key("us-central1", "a2-highgpu-1g", "on_demand")]
    assert (a2.gpu, a2.gpu_count, a2.vcpus, a2.memory_gib) == ("A100-40GB", 1, 12, 85)
    assert snap.attrs[machine_key("us-central1", "g4-standard-48", "on_demand")].gpu == "RTX-PRO-6000"
    assert snap.skipped["priced without its GPUs (below half the median over regions)"] == 1
    assert dict(snap.unknown) == {"h200 (a3)": 1}  # a GPU key costopt does not read yet: counted


def test_cyclenerd_refuses_a_file_without_the_instance_section():
    with pytest.raises(ParseError, match=r"compute\.instance"):
        cyclenerd.parse(b"---\nabout:\n  x: 1\n")


def test_the_reader_remembers_lines_and_gives_what_a_fresh_parse_gives():
    from scraper.archive.skypilot import Reader

    reader = Reader("gcp")
    first = reader.parse(gcp_csv(a100=2.9, vm=0.7, t4=0.35).encode())
    second = reader.parse(gcp_csv(a100=3.1, vm=0.7, t4=0.35).encode())  # one GPU row repriced
    assert first.prices[machine_key("us-central1", "a2-highgpu-1g", "on_demand")] == pytest.approx(3.6)
    assert second.prices[machine_key("us-central1", "a2-highgpu-1g", "on_demand")] == pytest.approx(3.8)
    fresh = skypilot.parse("gcp", gcp_csv(a100=3.1, vm=0.7, t4=0.35).encode())
    assert (second.prices, second.attrs, second.rows, second.skipped) == (
        fresh.prices,
        fresh.attrs,
        fresh.rows,
        fresh.skipped,
    )
    # a new column order is a new header: nothing remembered is reused
    aws = Reader("aws")
    aws.parse(aws_csv(98.32).encode())
    lines = aws_csv(55.04).splitlines()
    header = lines[0].split(",")
    moved = [",".join(header[::-1])] + [",".join(line.split(",")[::-1]) for line in lines[1:] if line]
    again = aws.parse(("\n".join(moved) + "\n").encode())
    assert again.prices[machine_key("us-east-1", "p5.48xlarge", "on_demand")] == 55.04
