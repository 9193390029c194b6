"""Bench: stream-parse a ~1 GB per-region EC2 Price List CSV.

Target: >= 50 MB/s with peak RSS <= 300 MB. The file is generated in the real layout (5 preamble
rows, the 91-column header) with a realistic mix: ~1,600 instance types of which ~5 % have GPUs,
each with 12 operating-system / software variants x 6 tenancy / capacity variants, and per
product one on-demand row plus 11 reserved-term rows (hourly and upfront-fee), as in the real file,
where fewer than 1 row in 800 is a Linux on-demand price of a GPU instance.

    python bench/aws_csv.py [--size-mb 1024] [--regen]
    python bench/aws_csv.py --quick      # a 4 MB file in a temporary directory: checks the bench runs (CI)

The parse runs in a fresh process so that its peak RSS is the parser's, not the generator's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "bench" / "out"
REGION, PREFIX, LOCATION = "us-east-2", "USE2-", "US East (Ohio)"
URL = f"https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/20261119221500/{REGION}/index.csv"

OS_VARIANTS = [  # (Operating System, Pre Installed S/W, operation)
    ("Linux", "NA", "RunInstances"),
    ("Linux", "SQL Web", "RunInstances:0200"),
    ("Linux", "SQL Std", "RunInstances:0004"),
    ("Linux", "SQL Ent", "RunInstances:0100"),
    ("Windows", "NA", "RunInstances:0002"),
    ("Windows", "SQL Web", "RunInstances:0202"),
    ("Windows", "SQL Std", "RunInstances:0006"),
    ("Windows", "SQL Ent", "RunInstances:0102"),
    ("RHEL", "NA", "RunInstances:0010"),
    ("Red Hat Enterprise Linux with HA", "NA", "RunInstances:1010"),
    ("SUSE", "NA", "RunInstances:000g"),
    ("Ubuntu Pro", "NA", "RunInstances:0g00"),
]
PLACEMENTS = [  # (Tenancy, CapacityStatus, usage prefix)
    ("Shared", "Used", "BoxUsage"),
    ("Shared", "UnusedCapacityReservation", "UnusedBox"),
    ("Shared", "AllocatedCapacityReservation", "Reservation"),
    ("Dedicated", "Used", "DedicatedUsage"),
    ("Dedicated", "UnusedCapacityReservation", "UnusedDed"),
    ("Host", "Used", "HostBoxUsage"),
]
RESERVED = [  # (lease, purchase option, class, hourly factor, upfront row?)
    ("1yr", "No Upfront", "standard", 0.63, False),
    ("1yr", "Partial Upfront", "standard", 0.30, True),
    ("1yr", "All Upfront", "standard", 0.0, True),
    ("3yr", "No Upfront", "standard", 0.45, False),
    ("3yr", "Partial Upfront", "convertible", 0.22, True),
    ("3yr", "All Upfront", "convertible", 0.0, True),
]
NON_GPU_FAMILIES = [
    f"{f}{g}{s}"
    for f in ("m", "c", "r", "t", "x", "i", "z", "d", "h", "u")
    for g in ("4", "5", "6", "7", "8")
    for s in ("", "a", "i", "g", "d", "n", "in", "gd", "id", "ad")
]
SIZES = ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge", "metal"]


def instance_types() -> list[tuple[str, int]]:
    """(instance type, GPU count): every tracked GPU type, a few untracked ones, then many non-GPU ones."""
    from scraper.providers.aws_instances import INSTANCES

    types = [(t, spec.gpu_count) for t, spec in sorted(INSTANCES.items())]
    types += [("p2.xlarge", 1), ("g4ad.xlarge", 1), ("g5g.xlarge", 1), ("g6f.large", 1)]
    types += [(f"{family}.{size}", 0) for family in NON_GPU_FAMILIES for size in SIZES]
    return types


def generate(path: Path, size_mb: int) -> tuple[int, int]:
    from fixtures.aws.make_fixtures import HEADER, preamble  # the same real layout as the fixtures

    col = {name: i for i, name in enumerate(HEADER)}
    target = size_mb * 1024 * 1024
    written, gpu_types = 0, 0
    part = path.with_suffix(".part")
    with part.open("w", encoding="utf-8", newline="") as handle:
        handle.write("\n".join(preamble()) + "\n")
        for n, (itype, gpus) in enumerate(instance_types()):
            if written >= target:
                break
            gpu_types += gpus > 0
            base_price = 0.05 * (n % 37 + 1) + 4.0 * gpus
            for os_name, software, operation in OS_VARIANTS:
                for tenancy, capacity, usage in PLACEMENTS:
                    sku = hashlib.md5(f"{itype}{os_name}{software}{tenancy}{capacity}".encode()).hexdigest()[:16]
                    fields = [""] * len(HEADER)
                    for name, value in (
                        ("SKU", sku.upper()), ("EffectiveDate", "2026-11-01"), ("Currency", "USD"),
                        ("Product Family", "Compute Instance"), ("serviceCode", "AmazonEC2"), ("Location", LOCATION),
                        ("Location Type", "AWS Region"), ("Instance Type", itype), ("Current Generation", "Yes"),
                        ("Instance Family", "GPU instance" if gpus else "General purpose"), ("vCPU", "8"),
                        ("Physical Processor", "Intel Xeon Platinum 8375C (Ice Lake)"), ("Clock Speed", "3.5 GHz"),
                        ("Memory", "32 GiB"), ("Storage", "EBS only"), ("Network Performance", "Up to 12500 Megabit"),
                        ("Processor Architecture", "64-bit"), ("Tenancy", tenancy), ("EBS Optimized", "Yes"),
                        ("Operating System", os_name), ("License Model", "No License required"),
                        ("usageType", f"{PREFIX}{usage}:{itype}"), ("operation", operation),
                        ("AvailabilityZone", "NA"), ("CapacityStatus", capacity),
                        ("ClassicNetworkingSupport", "false"), ("Dedicated EBS Throughput", "Up to 10000 Mbps"),
                        ("ECU", "NA"), ("Enhanced Networking Supported", "Yes"),
                        ("GPU", str(gpus) if gpus else ""), ("GPU Memory", f"{24 * gpus} GB" if gpus else "NA"),
                        ("Intel AVX2 Available", "Yes"), ("Intel AVX Available", "Yes"),
                        ("Intel Turbo Available", "Yes"), ("MarketOption", "OnDemand"),
                        ("Normalization Size Factor", "4"), ("Pre Installed S/W", software),
                        ("Processor Features", "Intel AVX; Intel AVX2; Intel AVX512; Intel Turbo"),
                        ("Region Code", REGION), ("serviceName", "Amazon Elastic Compute Cloud"),
                        ("VPCNetworkingSupport", "true"),
                    ):  # fmt: skip
                        fields[col[name]] = value
                    price = base_price * (1.0 if os_name == "Linux" and software == "NA" else 1.4)
                    rows = [("OnDemand", "JRTCKXETXF", "", "", "", "Hrs", price, "On Demand")]
                    for lease, option, klass, factor, upfront in RESERVED:
                        term = hashlib.md5(f"{lease}{option}{klass}".encode()).hexdigest()[:10].upper()
                        rows.append(("Reserved", term, lease, option, klass, "Hrs", price * factor, "reserved"))
                        if upfront:
                            rows.append(("Reserved", term, lease, option, klass, "Quantity", price * 5000, "Upfront"))
                    lines = []
                    for term_type, term, lease, option, klass, unit, value, kind in rows:
                        fields[col["OfferTermCode"]] = term
                        fields[col["RateCode"]] = f"{sku.upper()}.{term}.{'6YS6EN2CT7' if unit == 'Hrs' else 'X'}"
                        fields[col["TermType"]] = term_type
                        fields[col["PriceDescription"]] = f"${value:.4f} per {kind} {os_name} {itype} Instance Hour"
                        fields[col["StartingRange"]] = "0" if unit == "Hrs" else ""
                        fields[col["EndingRange"]] = "Inf" if unit == "Hrs" else ""
                        fields[col["Unit"]] = unit
                        fields[col["PricePerUnit"]] = f"{value:.10f}"
                        fields[col["LeaseContractLength"]] = lease
                        fields[col["PurchaseOption"]] = option
                        fields[col["OfferingClass"]] = klass
                        lines.append(",".join(f'"{v}"' if v else "" for v in fields))
                    chunk = "\n".join(lines) + "\n"
                    handle.write(chunk)
                    written += len(chunk)
    part.replace(path)
    return written, gpu_types


def parse(path: Path) -> dict:
    from datetime import UTC, datetime

    from scraper.base import RawPayload
    from scraper.providers.aws import AwsProvider

    payload = RawPayload(url=URL, fetched_at=datetime.now(UTC), status=200, path=path, scope=(REGION, "on_demand"))
    start = time.perf_counter()
    result = AwsProvider({"COSTOPT_AWS_REGIONS": REGION}).parse([payload])
    seconds = time.perf_counter() - start
    size = path.stat().st_size
    return {
        "bytes": size,
        "seconds": round(seconds, 2),
        "mb_per_s": round(size / 1e6 / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "records": len(result.prices),
        "skipped": dict(result.skipped),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--regen", action="store_true")
    parser.add_argument("--quick", action="store_true", help="a 4 MB file in a temporary directory (CI)")
    parser.add_argument("--parse-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.parse_only:
        print(json.dumps(parse(args.parse_only)))
        return
    out = OUT
    if args.quick:
        import tempfile

        args.size_mb, out = 4, Path(tempfile.mkdtemp(prefix="costopt-bench-"))
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"aws_{REGION}_{args.size_mb}mb.csv"
    if args.regen or not path.exists():
        start = time.perf_counter()
        written, gpu_types = generate(path, args.size_mb)
        took = time.perf_counter() - start
        print(f"generated {path} ({written / 1e6:.0f} MB, {gpu_types} GPU types) in {took:.0f} s")
    run = subprocess.run(
        [sys.executable, __file__, "--parse-only", str(path)], capture_output=True, text=True, check=True
    )
    figures = json.loads(run.stdout)
    if args.quick:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        if not figures["records"]:
            raise SystemExit("quick run: the parser kept no record from the generated file")
    ok = figures["mb_per_s"] >= 50 and figures["peak_rss_mb"] <= 300
    print(
        f"parsed {figures['bytes'] / 1e6:.0f} MB in {figures['seconds']} s: {figures['mb_per_s']} MB/s, "
        f"peak RSS {figures['peak_rss_mb']} MB, {figures['records']} records, skipped {figures['skipped']} "
        f"-> {'OK' if ok else 'MISSED'} (target >= 50 MB/s, <= 300 MB)"
    )


if __name__ == "__main__":
    main()
