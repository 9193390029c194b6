"""Bench: a year of nightly history for ~5,000 offers — warehouse size and query latency.

Targets (issue 2 / issue 6): file <= 50 MB; `price_history` for one GPU over the year <= 200 ms.
Generates 365 nightly runs through the real load API (one transaction per provider run) with
realistic change rates: list prices rarely move (a few cuts a year), spot prices move often, a
marketplace's medians move nearly every night, and a few offers vanish and reappear.

    python bench/warehouse_year.py [--offers 5000] [--days 365] [--out bench/out/year.duckdb]
    python bench/warehouse_year.py --quick     # 200 offers x 5 nights in a temporary file: checks the bench runs (CI)
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from warehouse.db import open_warehouse
from warehouse.history import daily_cheapest
from warehouse.load import RunRecord, load_run
from warehouse.records import PriceRecord

# provider -> (share of offers, daily probability that a given price changes, pricing kinds)
PROVIDERS = {
    "aws": (0.30, 0.002, ("on_demand", "spot")),
    "azure": (0.30, 0.003, ("on_demand", "spot")),
    "gcp": (0.15, 0.01, ("on_demand", "spot")),
    "lambda": (0.02, 0.01, ("on_demand",)),
    "coreweave": (0.03, 0.01, ("on_demand", "spot")),
    "vastai": (0.20, 0.60, ("on_demand", "interruptible")),
}
SPOT_CHANGE = 0.15  # spot/interruptible prices move far more often than list prices
GPUS = [
    ("H100-SXM", 8, 6.0),
    ("A100-80GB", 8, 3.0),
    ("L4", 1, 0.8),
    ("A10G", 1, 1.0),
    ("T4", 1, 0.5),
    ("L40S", 4, 1.8),
    ("H200", 8, 7.0),
    ("RTX-4090", 1, 0.4),
]


def offers(total: int, rng: random.Random) -> dict[str, list[tuple[str, str, str, int, float]]]:
    out: dict[str, list[tuple[str, str, str, int, float]]] = {}
    for provider, (share, _, kinds) in PROVIDERS.items():
        n = max(1, int(total * share / len(kinds)))
        rows = []
        for i in range(n):
            gpu, count, per_gpu = GPUS[i % len(GPUS)]
            rows.append(
                (f"region-{i % 23}", f"{provider}-type-{i}", gpu, count, per_gpu * count * rng.uniform(0.8, 1.5))
            )
        out[provider] = rows
    return out


def first_prices(catalog: dict[str, list[tuple[str, str, str, int, float]]]) -> dict[tuple[str, ...], float]:
    """Each offer's opening price per pricing kind (spot and interruptible at 40 % of list)."""
    return {
        (p, r, t, kind): price * (0.4 if kind != "on_demand" else 1.0)
        for p, rows in catalog.items()
        for r, t, _, _, price in rows
        for kind in PROVIDERS[p][2]
    }


def load_night(con, catalog, prices, rng: random.Random, at: datetime) -> None:  # type: ignore[no-untyped-def]
    """One nightly run per provider at ``at``: prices move at the provider's rate (``prices`` is updated), and a
    few offers are briefly missing, as real upstreams are."""
    for provider, rows in catalog.items():
        _, change, kinds = PROVIDERS[provider]
        records = []
        for region, itype, gpu, count, _ in rows:
            if rng.random() < 0.003:  # briefly missing from this run
                continue
            for kind in kinds:
                key = (provider, region, itype, kind)
                rate = change if kind == "on_demand" else max(change, SPOT_CHANGE)
                if rng.random() < rate:
                    prices[key] = round(prices[key] * rng.uniform(0.9, 1.1), 4)
                records.append(PriceRecord(provider, region, itype, gpu, count, kind, prices[key], "bench", at))  # type: ignore[arg-type]
        load_run(con, RunRecord(provider, "live", at, at, prices=records))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--offers", type=int, default=5000)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--out", type=Path, default=Path("bench/out/year.duckdb"))
    parser.add_argument("--quick", action="store_true", help="200 offers x 5 nights in a temporary file (CI)")
    args = parser.parse_args()
    if args.quick:
        import tempfile

        args.offers, args.days = 200, 5
        args.out = Path(tempfile.mkdtemp(prefix="costopt-bench-")) / "year.duckdb"
    rng = random.Random(7)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.unlink(missing_ok=True)
    catalog = offers(args.offers, rng)
    prices = first_prices(catalog)
    n_offers = sum(len(rows) * len(PROVIDERS[p][2]) for p, rows in catalog.items())
    start = datetime(2025, 11, 20, 3, tzinfo=UTC)
    con = open_warehouse(args.out)
    began = time.perf_counter()
    for day in range(args.days):
        at = start + timedelta(days=day)
        load_night(con, catalog, prices, rng, at)
    load_seconds = time.perf_counter() - began
    con.execute("CHECKPOINT")
    intervals = con.execute("SELECT count(*) FROM prices").fetchall()[0][0]
    con.close()
    size_mb = args.out.stat().st_size / 1e6

    con = open_warehouse(args.out, read_only=True)
    timings = []
    for _ in range(5):
        t = time.perf_counter()
        rows = con.sql(  # as Arrow: converting 40k TIMESTAMPTZ values to Python objects alone costs ~0.4 s
            "SELECT provider, region, instance_type, pricing, usd_per_gpu_hour, valid_from, valid_to "
            "FROM price_history WHERE gpu = 'H100-SXM' AND (valid_to IS NULL OR valid_to >= $1) ORDER BY valid_from",
            params=[start],
        ).to_arrow_table()
        timings.append(time.perf_counter() - t)
    daily = []
    for _ in range(3):
        t = time.perf_counter()
        daily_cheapest(con, "H100-SXM", start)
        daily.append(time.perf_counter() - t)
    con.close()
    print(f"offers x pricing kinds: {n_offers}; nightly runs: {args.days} x {len(PROVIDERS)} providers")
    print(f"load: {load_seconds:.1f} s total, {1000 * load_seconds / (args.days * len(PROVIDERS)):.1f} ms per run")
    print(f"price intervals stored: {intervals} (vs {n_offers * args.days} rows as daily copies)")
    print(f"warehouse size: {size_mb:.1f} MB (target <= 50 MB)")
    print(
        f"price_history, one GPU, one year: {len(rows)} rows, best {1000 * min(timings):.0f} ms, "
        f"median {1000 * sorted(timings)[2]:.0f} ms (target <= 200 ms)"
    )
    print(f"daily cheapest per provider (costopt history), one GPU, one year: best {1000 * min(daily):.0f} ms")
    if args.quick:
        import shutil

        shutil.rmtree(args.out.parent, ignore_errors=True)
        if not rows:
            raise SystemExit("quick run: the history query returned nothing")


if __name__ == "__main__":
    main()
