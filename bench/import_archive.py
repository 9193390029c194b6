"""Bench: `costopt import` of a SkyPilot-format archive of realistic size.

Target: thousands of commits in minutes, not hours, within ~1 GB of memory. The archive is generated
with ``git fast-import``: ``--commits`` commits (default 3,000, every 2 hours), each rewriting the
``catalogs/v7/<cloud>/vms.csv`` of ``--clouds`` clouds (default 5: aws, gcp, azure, lambda, vast) of
``--rows`` rows each (default 4,000; a third of them GPU rows, the rest CPU machines, as in SkyPilot's
files), with ``--change`` (default 3 %) of the rows getting a new price in every commit. Instance
types and regions are the ones costopt maps (its AWS, Azure and GCP tables, Lambda and Vast names),
so every GPU row goes the whole way: parse, zone reduction, GCP GPU + VM sums, intervals, load.

    python bench/import_archive.py [--commits 3000] [--rows 4000] [--daily] [--regen]
    python bench/import_archive.py --quick          # 40 commits x 5 clouds x 300 rows, for CI

The import runs in a fresh process, so its peak RSS (and its git children's) is the importer's.
Measured 2026-11-23 on a shared 2-core machine (load 3-6): the default archive (15,000 snapshots,
3 GB of CSV) imports in 240 s, 12.5 commits/s, peak RSS 410 MB (git 135 MB); --daily 48 s, 381 MB.
Generating it takes about 3 minutes the first time (kept in bench/out/).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone"
START = 1_704_067_200  # 2024-01-01 00:00 UTC
STEP = 2 * 3600  # SkyPilot's catalog jobs run every few hours


def _gpu_kinds(cloud: str) -> list[tuple[str, str, float]]:
    """(instance type, accelerator name, count) rows costopt maps, for one cloud."""
    if cloud == "aws":
        from scraper.providers.aws_instances import INSTANCES

        return [(name, i.gpu, i.gpu_count) for name, i in INSTANCES.items()]
    if cloud == "azure":
        from scraper.providers.azure import AZURE_VMS

        return [(name, v.gpu, v.gpu_count) for name, v in AZURE_VMS.items()]
    if cloud == "gcp":
        from scraper.providers.gcp_machines import MACHINES

        return [(name, m.gpu_sku, m.gpu_count) for name, m in MACHINES.items() if "+" not in name]
    if cloud == "lambda":
        return [
            (f"gpu_{n}x_{g}", g.upper(), n) for g in ("h100_sxm5", "a100_sxm4", "a10", "gh200") for n in (1, 2, 4, 8)
        ]
    return [(f"{n}x-{g}-32-65536", g, n) for g in ("RTX4090", "RTX5090", "H200", "L40S") for n in (1, 2, 4, 8)]


def rows_for(cloud: str, count: int, rng: random.Random) -> list[list[str]]:
    """The rows of one cloud's file: GPU rows over regions and zones, then CPU rows."""
    kinds = _gpu_kinds(cloud)
    regions = [f"region-{r}" for r in range(max(1, count // (3 * len(kinds) * 2) + 1))]
    out: list[list[str]] = []
    gpu_rows = count // 3
    n = 0
    while len(out) < gpu_rows:
        name, accelerator, gpus = kinds[n % len(kinds)]
        region = regions[(n // len(kinds)) % len(regions)]
        zone = f"{region}-{'ab'[(n // (len(kinds) * len(regions))) % 2]}"
        price = round(rng.uniform(0.5, 12) * max(gpus, 0.2), 4)
        if cloud == "gcp":  # the VM row and the GPU row of the machine, as SkyPilot writes GCP
            out.append([name, "", "", "12.0", "85.0", "", f"{price * 0.2:.4f}", f"{price * 0.08:.4f}", region, zone])
            out.append(["", accelerator, str(gpus), "", "", "", f"{price:.4f}", f"{price * 0.4:.4f}", region, zone])
        else:
            spot = "" if cloud == "lambda" else f"{price * 0.4:.4f}"
            out.append([name, accelerator, str(gpus), "16.0", "64.0", "", f"{price:.4f}", spot, region, zone])
        n += 1
    while len(out) < count:
        out.append([f"c{len(out)}.large", "", "", "2.0", "4.0", "", f"{rng.uniform(0.02, 2):.4f}", "", "region-0", "z"])
    return out


def generate(target: Path, commits: int, clouds: list[str], rows: int, change: float, seed: int = 13) -> None:
    """Write the archive with git fast-import: each cloud's blobs in sequence (good deltas), then the commits."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "--bare", str(target)], check=True)
    process = subprocess.Popen(["git", "-C", str(target), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert process.stdin is not None
    pipe = process.stdin
    rng = random.Random(seed)
    marks: dict[tuple[str, int], int] = {}
    mark = 0
    for cloud in clouds:
        table = rows_for(cloud, rows, rng)
        for k in range(commits):
            if k:
                for i in rng.sample(range(len(table)), max(1, int(len(table) * change))):
                    if table[i][6]:
                        table[i][6] = f"{float(table[i][6]) * rng.uniform(0.9, 1.1):.4f}"
            data = ("\n".join([HEADER, *(",".join(r) for r in table)]) + "\n").encode()
            mark += 1
            marks[(cloud, k)] = mark
            pipe.write(b"blob\nmark :%d\ndata %d\n" % (mark, len(data)) + data + b"\n")
    for k in range(commits):
        message = f"Update catalogs {k}".encode()
        head = b"commit refs/heads/main\ncommitter bench <bench@example.test> %d +0000\n" % (START + k * STEP)
        pipe.write(head + b"data %d\n" % len(message) + message + b"\n")
        for cloud in clouds:
            pipe.write(b"M 100644 :%d catalogs/v7/%s/vms.csv\n" % (marks[(cloud, k)], cloud.encode()))
        pipe.write(b"\n")
    pipe.close()
    if process.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", str(target), "symbolic-ref", "HEAD", "refs/heads/main"], check=True)


CHILD = """
import json, resource, sys, time
from pathlib import Path
from scraper.archive.importer import import_archive
start = time.monotonic()
result = import_archive(Path(sys.argv[1]), Path(sys.argv[2]), repository="bench/archive", only_daily=sys.argv[3] == "1")
seconds = time.monotonic() - start
print(json.dumps({
    "seconds": seconds,
    "snapshots": sum(s.observations for s in result.stage.staged),
    "intervals": sum(x.prices + x.gpu_parts for x in result.loaded),
    "bytes": result.stage.bytes_read,
    "rss_self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "rss_children_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=3000)
    parser.add_argument("--clouds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--change", type=float, default=0.03)
    parser.add_argument("--daily", action="store_true", help="import with --daily (last commit of each UTC day)")
    parser.add_argument("--regen", action="store_true", help="generate the archive again")
    parser.add_argument("--quick", action="store_true", help="a tiny archive, for CI")
    args = parser.parse_args(argv)
    if args.quick:
        args.commits, args.rows = 40, 300
    clouds = ["aws", "gcp", "azure", "lambda", "vast"][: args.clouds]
    name = f"archive-{args.commits}x{len(clouds)}x{args.rows}-{args.change:g}"
    # the quick run (CI) leaves nothing behind; a full-size archive is kept in bench/out/ for the next run
    out = Path(tempfile.mkdtemp(prefix="costopt-bench-")) if args.quick else OUT
    try:
        return _run(args, clouds, name, out)
    finally:
        if args.quick:
            shutil.rmtree(out, ignore_errors=True)


def _run(args: argparse.Namespace, clouds: list[str], name: str, out: Path) -> int:
    archive = out / name
    stamp = archive / "costopt-bench.json"
    if args.regen or not stamp.is_file():
        began = time.monotonic()
        generate(archive, args.commits, clouds, args.rows, args.change)
        stamp.write_text(json.dumps({"commits": args.commits, "clouds": clouds, "rows": args.rows}))
        print(f"generated {archive.name} in {time.monotonic() - began:.0f} s", file=sys.stderr)
    db = out / f"{name}.duckdb"
    for stale in (db, db.with_name(db.name + ".wal")):
        stale.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(db), str(archive), "1" if args.daily else "0"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 1
    report = json.loads(done.stdout.strip().splitlines()[-1])
    commits_per_s = args.commits / report["seconds"]
    peak = max(report["rss_self_mb"], report["rss_children_mb"])
    minutes_ok = report["seconds"] <= 600 or args.quick
    print(
        f"import of {args.commits} commits x {len(clouds)} clouds x {args.rows} rows ({report['snapshots']} "
        f"snapshots, {report['bytes'] / 1e6:.0f} MB of blobs read{', --daily' if args.daily else ''}): "
        f"{report['seconds']:.1f} s, {commits_per_s:.1f} commits/s, "
        f"{report['bytes'] / 1e6 / report['seconds']:.0f} MB/s, "
        f"{report['intervals']} intervals; peak RSS {report['rss_self_mb']:.0f} MB (git children "
        f"{report['rss_children_mb']:.0f} MB)"
    )
    print(
        f"target: minutes, not hours (<= 10 min): {'met' if minutes_ok else 'NOT met'}; "
        f"<= 1 GB: {'met' if peak <= 1024 else 'NOT met'}"
    )
    return 0 if (minutes_ok and peak <= 1024) else 1


if __name__ == "__main__":
    raise SystemExit(main())
