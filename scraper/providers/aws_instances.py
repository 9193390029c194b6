"""EC2 GPU instance types: what each one holds, written down because the price files do not say.

The Price List CSV gives a GPU *count* but no GPU *name*; peers (gpuhunt, SkyPilot) ask
``ec2:DescribeInstanceTypes``, which needs credentials and still gets some of them wrong (p4de
missing, p5en named "NVIDIA", L4 memory misreported, p5.4xlarge count). A table in code is shorter
than those workarounds and is reviewed like any other code. Figures from the AWS instance-type pages
(accelerated computing: P3, P4, P5, P6, G4dn, G5, G6, G6e, Gr6, G7e), as of November 2026.

Families AWS still lists but costopt does not track are named in ``UNTRACKED`` with the reason, so
the parser can tell "known and deliberately left out" from "new: add it to the table".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuInstance:
    gpu: str  # canonical GPU name (warehouse/data/gpus.csv)
    gpu_count: int
    vcpus: int
    memory_gib: float


def _family(gpu: str, sizes: dict[str, tuple[int, int, float]], family: str) -> dict[str, GpuInstance]:
    return {f"{family}.{size}": GpuInstance(gpu, n, cpus, mem) for size, (n, cpus, mem) in sizes.items()}


# size -> (GPUs, vCPUs, GiB); G5, G6 and G4dn share AWS's shape ladder (one GPU up to 16xlarge)
_G_LADDER: dict[str, tuple[int, int, float]] = {
    "xlarge": (1, 4, 16),
    "2xlarge": (1, 8, 32),
    "4xlarge": (1, 16, 64),
    "8xlarge": (1, 32, 128),
    "16xlarge": (1, 64, 256),
    "12xlarge": (4, 48, 192),
    "24xlarge": (4, 96, 384),
    "48xlarge": (8, 192, 768),
}

INSTANCES: dict[str, GpuInstance] = {
    # P3: V100 16 GB (SXM2); p3dn: V100 32 GB
    **_family("V100-16GB", {"2xlarge": (1, 8, 61), "8xlarge": (4, 32, 244), "16xlarge": (8, 64, 488)}, "p3"),
    "p3dn.24xlarge": GpuInstance("V100-32GB", 8, 96, 768),
    # P4: A100 SXM4, 40 GB (p4d) and 80 GB (p4de)
    "p4d.24xlarge": GpuInstance("A100-40GB", 8, 96, 1152),
    "p4de.24xlarge": GpuInstance("A100-80GB", 8, 96, 1152),
    # P5: H100 SXM 80 GB; p5.4xlarge is the single-GPU size
    "p5.48xlarge": GpuInstance("H100-SXM", 8, 192, 2048),
    "p5.4xlarge": GpuInstance("H100-SXM", 1, 16, 256),
    # P5e / P5en: H200 141 GB (p5en adds EFAv3 and Sapphire Rapids hosts)
    "p5e.48xlarge": GpuInstance("H200", 8, 192, 2048),
    "p5en.48xlarge": GpuInstance("H200", 8, 192, 2048),
    # P6: B200
    "p6-b200.48xlarge": GpuInstance("B200", 8, 192, 2048),
    # G4dn: T4 16 GB; 16xlarge still has one GPU, metal has eight
    **_family("T4", {k: v for k, v in _G_LADDER.items() if k not in {"24xlarge", "48xlarge"}}, "g4dn"),
    "g4dn.metal": GpuInstance("T4", 8, 96, 384),
    # G5: A10G 24 GB
    **_family("A10G", _G_LADDER, "g5"),
    # G6: L4 24 GB; Gr6: L4 with twice the memory per vCPU
    **_family("L4", _G_LADDER, "g6"),
    **_family("L4", {"4xlarge": (1, 16, 128), "8xlarge": (1, 32, 256)}, "gr6"),
    # G6e: L40S 48 GB, twice G6's memory per vCPU
    **_family(
        "L40S",
        {
            "xlarge": (1, 4, 32),
            "2xlarge": (1, 8, 64),
            "4xlarge": (1, 16, 128),
            "8xlarge": (1, 32, 256),
            "16xlarge": (1, 64, 512),
            "12xlarge": (4, 48, 384),
            "24xlarge": (4, 96, 768),
            "48xlarge": (8, 192, 1536),
        },
        "g6e",
    ),
    # G7e: RTX PRO 6000 Blackwell Server Edition 96 GB
    **_family(
        "RTX-PRO-6000",
        {
            "2xlarge": (1, 8, 64),
            "4xlarge": (1, 16, 128),
            "8xlarge": (1, 32, 256),
            "12xlarge": (2, 48, 512),
            "24xlarge": (4, 96, 1024),
            "48xlarge": (8, 192, 2048),
        },
        "g7e",
    ),
}

# family -> why its sizes are left out (AWS still sells them; they are not "unknown")
UNTRACKED: dict[str, str] = {
    "p2": "GPU not in catalog (K80)",
    "g2": "GPU not in catalog (K520)",
    "g3": "GPU not in catalog (M60)",
    "g3s": "GPU not in catalog (M60)",
    "g4ad": "GPU not in catalog (Radeon Pro V520)",
    "g5g": "GPU not in catalog (T4G, Arm host)",
    "p6-b300": "GPU not in catalog (B300)",
    # fractional L4 partitions (1/8 to 1/2 GPU): no use for training and they distort per-GPU ranking
    "g6f": "fractional GPU",
    "gr6f": "fractional GPU",
}


def family_of(instance_type: str) -> str:
    return instance_type.partition(".")[0]


def lookup(instance_type: str) -> GpuInstance | None:
    return INSTANCES.get(instance_type)


def untracked_reason(instance_type: str) -> str | None:
    return UNTRACKED.get(family_of(instance_type))
