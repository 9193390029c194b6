"""Bench: wall time of whole `costopt` processes, start to exit, and of the fixture replay.

Targets: `costopt --help` <= 0.3 s; `costopt prices` <= 0.8 s and `costopt plan --model 8B --tokens 100B`
<= 1.0 s on the bundled snapshot (<= 1.5 s on a year of history: pass --year-db, see
bench/warehouse_year.py); replay of fixtures/ for all six providers <= 5 s; a second refresh against
unchanged recordings downloads no bulk file again.

    python bench/cli_speed.py [--runs 5] [--year-db bench/out/year.duckdb]
    python bench/cli_speed.py --quick     # one run of each: checks the bench runs (CI); figures are not the targets
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def costopt() -> list[str]:
    installed = shutil.which("costopt", path=str(Path(sys.executable).parent))
    return [installed] if installed else [sys.executable, "-c", "from cli.app import main; main()"]


def verdict(result: subprocess.CompletedProcess[str], median: float, target: float) -> str:
    """'met' / 'NOT met' on the median, or the failure when the command did not succeed."""
    if result.returncode != 0:
        return f"exit {result.returncode}: {result.stderr.strip()[:120]}"
    return "met" if median <= target else "NOT met"


def timed(args: list[str], env: dict[str, str], runs: int) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    times, last = [], None
    for _ in range(runs):
        start = time.perf_counter()
        last = subprocess.run([*costopt(), *args], capture_output=True, text=True, env=env, cwd=REPO)
        times.append(time.perf_counter() - start)
    assert last is not None
    return min(times), statistics.median(times), last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--year-db", type=Path)
    parser.add_argument("--quick", action="store_true", help="one run of each command (CI)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    work = Path(tempfile.mkdtemp(prefix="costopt-bench-"))
    env = {**os.environ, "COSTOPT_DATA_DIR": str(work), "COSTOPT_DB": str(work / "bench.duckdb")}

    start = time.perf_counter()
    first = subprocess.run(
        [*costopt(), "refresh", "--replay", "fixtures", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    replay_s = time.perf_counter() - start
    outcome = json.loads(first.stdout)
    second = subprocess.run(
        [*costopt(), "refresh", "--replay", "fixtures", "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
    )
    again = json.loads(second.stdout)
    print(
        f"replay of fixtures/, all providers, fresh warehouse: {replay_s:.2f} s wall (target <= 5 s); "
        f"{sum(o['offers'] for o in outcome)} offers; statuses {sorted({o['status'] for o in outcome})}"
    )
    print(
        "second refresh, unchanged recordings: bytes downloaded per provider "
        + ", ".join(f"{o['provider']}={o['bytes_downloaded']}" for o in again)
        + f" (first: {sum(o['bytes_downloaded'] for o in outcome)} bytes)"
    )

    cases = [
        ("costopt --help", ["--help"], 0.3),
        ("costopt prices (bundled snapshot)", ["prices"], 0.8),
        (
            "costopt plan --model 8B --tokens 100B (bundled snapshot)",
            ["plan", "--model", "8B", "--tokens", "100B"],
            1.0,
        ),
    ]
    for label, argv, target in cases:
        best, median, result = timed(argv, env, args.runs)
        outcome = verdict(result, median, target)
        print(f"{label}: best {best:.2f} s, median {median:.2f} s (target <= {target} s) [{outcome}]")
    if args.year_db and args.year_db.exists():
        year_env = {**env, "COSTOPT_DB": str(args.year_db)}
        for label, argv, target in [
            (
                "costopt plan --model 8B --tokens 100B (a year of history)",
                ["plan", "--model", "8B", "--tokens", "100B"],
                1.5,
            ),
            (
                "costopt history --gpu H100 --since 1y (a year of history)",
                ["history", "--gpu", "H100", "--since", "1y"],
                1.0,
            ),
        ]:
            best, median, result = timed(argv, year_env, args.runs)
            print(
                f"{label}: best {best:.2f} s, median {median:.2f} s (target <= {target} s) "
                f"[{verdict(result, median, target)}]"
            )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
