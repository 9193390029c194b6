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


def busy_archive(repo: Path, commits: int, rows: int, start: datetime) -> Path:
    """A bare archive of ``commits`` AWS snapshots of ``rows`` GPU rows each, one row repriced per commit.

    Written with ``git fast-import`` (seconds for hundreds of commits), for tests that need an import
    that runs long enough to be interrupted.
    """
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    process = subprocess.Popen(["git", "-C", str(repo), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert process.stdin is not None
    table = [
        f"p5.48xlarge,H100,8,192.0,2048.0,,{50 + n / 100:.2f},{20 + n / 100:.2f},region-{n},region-{n}-a"
        for n in range(rows)
    ]
    epoch = int(start.timestamp())
    for k in range(commits):
        n = k % rows
        table[n] = f"p5.48xlarge,H100,8,192.0,2048.0,,{60 + k / 1000:.3f},{20 + n / 100:.2f},region-{n},region-{n}-a"
        data = ("\n".join([AWS_HEADER, *table]) + "\n").encode()
        message = b"update"
        process.stdin.write(b"commit refs/heads/main\ncommitter t <t@example.test> %d +0000\n" % (epoch + 3600 * k))
        process.stdin.write(b"data %d\n%s\n" % (len(message), message))
        process.stdin.write(b"M 100644 inline aws/vms.csv\ndata %d\n" % len(data) + data + b"\n\n")
    process.stdin.close()
    assert process.wait() == 0
    subprocess.run(["git", "-C", str(repo), "symbolic-ref", "HEAD", "refs/heads/main"], check=True)
    return repo
