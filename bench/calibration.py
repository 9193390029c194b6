"""Calibration report: the MFU model's predicted GPU-hours against every published whole run.

    python bench/calibration.py          # table, error distribution, acceptance figures
    python bench/calibration.py --quick  # the same (it takes a fraction of a second); accepted for CI

Acceptance (issue 4): >= 80 % of runs within 0.8-1.25x of the published GPU-hours; the published
figure inside [low, high] for >= 85 %; median band width (high / low) <= 2.2.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from optimizer.calibration import predict, rows, summarize


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="accepted for CI; the report is already quick")
    parser.parse_args()
    runs = [predict(row) for row in rows()]
    print(f"{'id':>3} {'run':30} {'gpu':10} {'gpus':>6} {'published':>12} {'predicted':>12} {'ratio':>6}  inside")
    for r in runs:
        est = r.estimate
        print(
            f"{r.id:>3} {r.name[:30]:30} {est.gpu.name:10} {est.gpus:>6} {r.published_gpu_hours:>12,.0f} "
            f"{est.gpu_hours.expected:>12,.0f} {r.ratio:>6.2f}  {'yes' if r.inside else 'NO'}"
        )
    s = summarize(runs)
    ratios = sorted(s.ratios)
    quartiles = statistics.quantiles(ratios, n=4)
    print()
    print(f"runs: {s.runs}")
    print(
        f"predicted/published: median {s.median_ratio:.2f}, quartiles {quartiles[0]:.2f} / {quartiles[2]:.2f}, "
        f"min {ratios[0]:.2f}, max {ratios[-1]:.2f}"
    )
    print(f"within 0.8-1.25x: {s.within_band:.0%}   (target >= 80 %)")
    print(f"published inside [low, high]: {s.inside_range:.0%}   (target >= 85 %)")
    print(f"median band width high/low: {s.median_width:.2f}   (target <= 2.2)")
    print("out of sample (each run predicted by constants fitted without it): python bench/fit_mfu.py")
    excluded = [r for r in rows(included_only=False) if r["include"] != "yes"]
    print(f"\nexcluded runs ({len(excluded)}), with the reason:")
    for row in excluded:
        print(f"  {row['id']:>3} {row['run']}: {row['notes']}")


if __name__ == "__main__":
    main()
