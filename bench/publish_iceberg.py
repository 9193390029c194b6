"""Bench: publishing a year of price history to Iceberg — the first publish, then nightly ones.

Targets (issue 16): first publish of a year <= 30 s; a nightly incremental publish <= 3 s and
<= 1 MB written; peak memory of the publishing process <= 500 MB.

The year comes from bench/warehouse_year.py's generator (same offers, providers and change rates),
loaded through the real load API; each "night" then loads one more nightly run per provider
(prices move at the same rates, a few offers vanish) and publishes. Every publish runs in its own
process, as `costopt publish --iceberg` would, so its peak RSS is the publish's alone; bytes written
are the sizes of the files that appeared in the table location (data, manifests, metadata).

    python bench/publish_iceberg.py [--offers 5000] [--days 365] [--nights 3] [--quick]
    python bench/publish_iceberg.py --warehouse bench/out/year.duckdb   # reuse a generated year (copied)
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
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from warehouse_year import PROVIDERS, SPOT_CHANGE, first_prices, load_night, offers  # noqa: E402

from warehouse.db import open_warehouse  # noqa: E402
from warehouse.load import RunRecord, load_run  # noqa: E402
from warehouse.records import PriceRecord  # noqa: E402

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
t0 = time.perf_counter()
import duckdb, pyarrow, pyiceberg.catalog.sql, pyiceberg.io.pyarrow, pyiceberg.table
imports = time.perf_counter() - t0
from warehouse.iceberg.catalog import resolve_target
from warehouse.iceberg.publish import publish
target = resolve_target({catalog!r}, {lake!r}, None)
began = time.perf_counter()
report = publish(Path({db!r}), target)
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"seconds": time.perf_counter() - began, "imports": imports, "rss_mb": rss_mb,
                  "tables": [t.as_dict() for t in report.tables]}}))
"""


def generate(db: Path, n_offers: int, days: int, start: datetime) -> None:
    """A year of nightly runs, as bench/warehouse_year.py loads them."""
    rng = random.Random(7)
    catalog = offers(n_offers, rng)
    prices = first_prices(catalog)
    con = open_warehouse(db)
    try:
        for day in range(days):
            at = start + timedelta(days=day)
            load_night(con, catalog, prices, rng, at)
    finally:
        con.close()


def night(db: Path, rng: random.Random) -> datetime:
    """One more nightly run per provider, continuing from the warehouse's current prices."""
    con = open_warehouse(db)
    try:
        last = con.execute("SELECT max(last_seen) FROM prices").fetchall()[0][0]
        at = last + timedelta(days=1)
        rows = con.execute(
            """SELECT o.provider, o.region, o.instance_type, o.gpu, o.gpu_count, p.pricing, p.usd_per_hour
               FROM prices p JOIN offers o USING (offer_id) WHERE p.valid_to IS NULL ORDER BY ALL"""
        ).fetchall()
        by_provider: dict[str, list[PriceRecord]] = {}
        for provider, region, itype, gpu, count, kind, usd in rows:
            if rng.random() < 0.003:
                continue
            _, change, _ = PROVIDERS[provider]
            rate = change if kind == "on_demand" else max(change, SPOT_CHANGE)
            if rng.random() < rate:
                usd = round(usd * rng.uniform(0.9, 1.1), 4)
            by_provider.setdefault(provider, []).append(
                PriceRecord(provider, region, itype, gpu, count, kind, usd, "bench", at)
            )
        for provider, records in by_provider.items():
            load_run(con, RunRecord(provider, "live", at, at, prices=records))
    finally:
        con.close()
    return at


def files(root: Path) -> dict[Path, int]:
    return {p: p.stat().st_size for p in root.rglob("*") if p.is_file()} if root.exists() else {}


def run_publish(db: Path, catalog: str, lake: Path) -> tuple[dict, int]:
    before = files(lake)
    code = CHILD.format(root=str(ROOT), catalog=catalog, lake=str(lake), db=str(db))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"publish failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")
    after = files(lake)
    written = sum(size for path, size in after.items() if before.get(path) != size)
    return json.loads(done.stdout.strip().splitlines()[-1]), written


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=5000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--warehouse", type=Path, help="reuse this generated warehouse (it is copied, not changed)")
    parser.add_argument("--out", type=Path, default=None, help="work directory (default bench/out/publish_iceberg)")
    parser.add_argument("--quick", action="store_true", help="120 offers x 8 days, 2 nights (CI)")
    args = parser.parse_args()
    if args.quick:
        args.offers, args.days, args.nights = 120, 8, 2
    if args.out is None:  # the quick run (CI) leaves nothing behind
        args.out = Path(tempfile.mkdtemp(prefix="costopt-bench-")) if args.quick else Path("bench/out/publish_iceberg")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    db, lake, catalog = args.out / "year.duckdb", args.out / "lake", f"sqlite:///{(args.out / 'catalog.db').resolve()}"
    began = time.perf_counter()
    if args.warehouse:
        shutil.copy(args.warehouse, db)
        print(f"warehouse: a copy of {args.warehouse}")
    else:
        generate(db, args.offers, args.days, datetime(2025, 11, 20, 3, tzinfo=UTC))
        print(
            f"warehouse: {args.offers} offers x {args.days} nightly runs generated "
            f"in {time.perf_counter() - began:.0f} s"
        )
    con = open_warehouse(db, read_only=True)
    intervals, runs = con.execute(
        "SELECT (SELECT count(*) FROM prices), (SELECT count(*) FROM scrape_runs)"
    ).fetchall()[0]
    con.close()
    print(f"  {intervals} price intervals, {runs} scrape runs, {db.stat().st_size / 1e6:.1f} MB")

    first, written = run_publish(db, catalog, lake)
    ok = first["seconds"] + first["imports"] <= 30 and first["rss_mb"] <= 500
    print(
        f"first publish: {first['seconds']:.1f} s (+{first['imports']:.1f} s importing pyiceberg; target <= 30 s), "
        f"{written / 1e6:.1f} MB written, "
        f"peak RSS {first['rss_mb']:.0f} MB (target <= 500 MB) -> {'met' if ok else 'NOT met'}"
    )
    again, written_again = run_publish(db, catalog, lake)
    unchanged = all(t["action"] == "unchanged" for t in again["tables"]) and written_again == 0
    print(
        f"publish again, nothing changed: {again['seconds']:.1f} s, {written_again} bytes written, "
        f"{'no new snapshot' if unchanged else 'SOMETHING WAS WRITTEN'}"
    )
    rng = random.Random(11)
    worst_s = worst_cold = worst_mb = worst_rss = 0.0
    for i in range(args.nights):
        at = night(db, rng)
        result, written = run_publish(db, catalog, lake)
        ph = next(t for t in result["tables"] if t["table"] == "price_history")
        worst_s, worst_cold = max(worst_s, result["seconds"]), max(worst_cold, result["seconds"] + result["imports"])
        worst_mb, worst_rss = max(worst_mb, written / 1e6), max(worst_rss, result["rss_mb"])
        print(
            f"night {i + 1} ({at:%Y-%m-%d}): {result['seconds']:.2f} s (+{result['imports']:.2f} s imports), "
            f"{written / 1e3:.0f} kB written "
            f"(price_history: {ph['mode']}, {ph['rows_written']} rows written, {ph['rows_removed']} replaced), "
            f"peak RSS {result['rss_mb']:.0f} MB"
        )
    ok = worst_s <= 3 and worst_mb <= 1 and worst_rss <= 500
    print(
        f"nightly publish, worst of {args.nights}: {worst_s:.2f} s (target <= 3 s; {worst_cold:.2f} s in a fresh "
        f"process with its imports), {worst_mb:.2f} MB written (target <= 1 MB), peak RSS {worst_rss:.0f} MB "
        f"(target <= 500 MB) -> {'met' if ok else 'NOT met'}"
    )
    if args.quick:
        shutil.rmtree(args.out, ignore_errors=True)
    if not unchanged:
        sys.exit(1)


if __name__ == "__main__":
    main()
