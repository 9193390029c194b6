"""Build small real git archives for the importer tests (the real ``git`` program, real commits)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

GCP_HEADER = (
    "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice"
)
AWS_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone"
)
A100_INFO = "\"{'Gpus': [{'MemoryInfo': {'SizeInMiB': 40960}}]}\""


def git(repo: Path, *args: str, when: datetime | None = None) -> str:
    env = dict(os.environ)
    env.update({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.test", "GIT_COMMITTER_NAME": "t"})
    env["GIT_COMMITTER_EMAIL"] = "t@example.test"
    if when is not None:
        stamp = when.isoformat()
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = stamp
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return done.stdout


def init(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "commit.gpgsign", "false")
    return repo


def commit(repo: Path, when: datetime, files: Mapping[str, str | None], message: str = "update") -> str:
    """Write (or, for ``None``, delete) files and commit them at ``when``; returns the commit id."""
    for path, text in files.items():
        target = repo / path
        if text is None:
            git(repo, "rm", "-q", path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        git(repo, "add", path)
    git(repo, "commit", "-q", "--allow-empty", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD").strip()


def aws_csv(p5: float, spot_az: tuple[float, float] = (30.0, 28.0)) -> str:
    """AWS vms.csv: p5.48xlarge in two zones (spot differs by zone), a CPU row, an unknown GPU row."""
    return "\n".join(
        [
            AWS_HEADER,
            "m5.large,,,2.0,8.0,,0.096,0.04,us-east-1,use1-az1",
            f"p5.48xlarge,H100,8,192.0,2048.0,,{p5},{spot_az[0]},us-east-1,use1-az1",
            f"p5.48xlarge,H100,8,192.0,2048.0,,{p5},{spot_az[1]},us-east-1,use1-az2",
            "p2.xlarge,K80,1,4.0,61.0,,0.9,0.3,us-east-1,use1-az1",
            "",
        ]
    )


def gcp_csv(a100: float = 2.93391, vm: float = 0.73948, t4: float = 0.35) -> str:
    """GCP vms.csv: the A100 GPU row and a2-highgpu-1g VM row of one zone, a T4 row with no machine, a TPU."""
    return "\n".join(
        [
            GCP_HEADER,
            f"a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,{vm},0.36975",
            f",,,A100,1,{A100_INFO},us-central1,us-central1-a,{a100},1.4341",
            f",,,T4,1,,us-central1,us-central1-a,{t4},0.11",
            ",,,tpu-v4-8,1,,us-central1,us-central1-b,12.88,3.86",
            "",
        ]
    )
