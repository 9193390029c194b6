"""Bench: wall time of whole `costopt` processes, start to exit (issue 15's speed targets).

Each case runs the real console script (or `python -c "from cli.app import main; main()"` with
--from-source) as a fresh process, N times, and reports the median and the best wall time, the median
CPU time (user + system of the child: less sensitive to a busy machine than wall time) and the load
average while it ran. The verdict is on the median wall time.

| case | target |
|---|---|
| `costopt --help` | <= 0.15 s |
| `costopt prices`, `costopt sql ...`, `costopt history --gpu H100` (bundled snapshot, default wh.) | <= 0.25 s each |
| `costopt plan --model 8B --tokens 100B` (bundled snapshot, default warehouse) | <= 0.40 s |
| the same plan on a year of history (--year-db, made by bench/warehouse_year.py) | <= 0.50 s |
| `costopt refresh --replay fixtures/` into a new warehouse | <= 0.8 s |
| first use: `costopt plan ...` on an empty default warehouse (seeds the bundled snapshot and history) | <= 1.0 s |

    python bench/warehouse_year.py                      # once: bench/out/year.duckdb
    python bench/cli_speed.py [--runs 15] [--year-db bench/out/year.duckdb]
    python bench/cli_speed.py --quick                   # two runs of each: checks the bench runs (CI); not the figures
    python bench/cli_speed.py --from-source             # `python -c` from this source tree, not the installed script

The read commands run against the default warehouse as a new user has it after the first command: the
bundled snapshot and history, seeded once before they are timed (no --db, no COSTOPT_DB). A second
refresh against unchanged recordings must download no bulk file again: printed, not timed.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PLAN = ["plan", "--model", "8B", "--tokens", "100B"]
SQL = "SELECT provider, count(*) AS offers, min(usd_per_gpu_hour) AS cheapest FROM current_prices GROUP BY 1 ORDER BY 1"


@dataclass
class Timing:
    label: str
    target: float
    walls: list[float]
    cpus: list[float]
    loads: list[float]
    failure: str | None

    @property
    def median(self) -> float:
        return statistics.median(self.walls)

    def line(self) -> str:
        verdict = self.failure or ("met" if self.median <= self.target else "NOT met")
        return (
            f"{self.label}: median {self.median:.3f} s, best {min(self.walls):.3f} s, "
            f"cpu {statistics.median(self.cpus):.3f} s (target <= {self.target} s) [{verdict}]"
            f"  load {statistics.median(self.loads):.2f}"
        )


def command(from_source: bool) -> list[str]:
    installed = shutil.which("costopt", path=str(Path(sys.executable).parent))
    if installed and not from_source:
        return [installed]
    return [sys.executable, "-c", "from cli.app import main; main()"]


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, str, str]:
    """One process: wall seconds, CPU seconds (user + system), exit code, stdout, stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (
            wall,
            usage.ru_utime + usage.ru_stime,
            process.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


def timed(
    label: str,
    target: float,
    argv: list[str],
    env: dict[str, str],
    runs: int,
    prepare: Callable[[], dict[str, str]] | None = None,
) -> Timing:
    """``runs`` processes of ``argv``; ``prepare`` (if given) makes a fresh environment before each run."""
    walls, cpus, loads = [], [], []
    failure = None
    for _ in range(runs):
        run_env = prepare() if prepare else env
        wall, cpu, code, _, err = run_once(argv, run_env)
        walls.append(wall)
        cpus.append(cpu)
        loads.append(os.getloadavg()[0])
        if code != 0:
            failure = f"exit {code}: {err.strip()[:160]}"
    return Timing(label, target, walls, cpus, loads, failure)


def write_cases(
    costopt: list[str], env: dict[str, str], base_env: dict[str, str], work: Path, runs: int
) -> list[Timing]:
    """The write path's two cases (bench/write_speed.py runs them alone): a refresh into a new warehouse
    (``env`` with a fresh ``COSTOPT_DB`` each time) and first use (``base_env`` with a fresh data dir)."""
    counter = iter(range(10**6))

    def fresh_refresh() -> dict[str, str]:
        return {**env, "COSTOPT_DB": str(work / f"refresh-{next(counter)}.duckdb")}

    def fresh_default() -> dict[str, str]:
        return {**base_env, "COSTOPT_DATA_DIR": str(work / f"first-use-{next(counter)}")}

    refresh = [*costopt, "refresh", "--replay", "fixtures", "--format", "json"]
    return [
        timed("refresh --replay fixtures/ (new warehouse)", 0.8, refresh, env, runs, fresh_refresh),
        timed("first use: plan on an empty default warehouse", 1.0, [*costopt, *PLAN], env, runs, fresh_default),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--year-db", type=Path, default=REPO / "bench" / "out" / "year.duckdb")
    parser.add_argument("--from-source", action="store_true", help="run this source tree with python -c")
    parser.add_argument("--quick", action="store_true", help="two runs of each case (CI)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 2
    costopt = command(args.from_source)
    work = Path(tempfile.mkdtemp(prefix="costopt-bench-"))
    base_env = {**os.environ, "PYTHONPATH": str(REPO)} if args.from_source else dict(os.environ)
    base_env.pop("COSTOPT_DB", None)
    env = {**base_env, "COSTOPT_DATA_DIR": str(work / "data"), "COSTOPT_DB": str(work / "bench.duckdb")}
    print(f"costopt: {' '.join(costopt)}; {args.runs} runs per case; {os.cpu_count()} CPUs")
    results = write_cases(costopt, env, base_env, work, args.runs)
    # the warehouse the read commands use: one replay of fixtures/, as a user's first refresh makes it
    first = run_once([*costopt, "refresh", "--replay", "fixtures", "--format", "json"], env)
    second = run_once([*costopt, "refresh", "--replay", "fixtures", "--format", "json"], env)
    if first[2] != 0 or second[2] != 0:
        raise SystemExit(f"refresh --replay failed: {first[4].strip()[:300]} {second[4].strip()[:300]}")
    outcome, again = json.loads(first[3]), json.loads(second[3])
    # the read commands: the default warehouse as the first command leaves it (bundled snapshot and history)
    default = {**base_env, "COSTOPT_DATA_DIR": str(work / "default")}
    seeded = run_once([*costopt, "sql", "SELECT 1"], default)
    if seeded[2] != 0 or "bundled price snapshot" not in seeded[4]:
        raise SystemExit(f"seeding the default warehouse failed: {seeded[4].strip()[:300]}")
    results += [
        timed("--help", 0.15, [*costopt, "--help"], default, args.runs),
        timed("prices (bundled snapshot)", 0.25, [*costopt, "prices"], default, args.runs),
        timed("sql (bundled snapshot)", 0.25, [*costopt, "sql", SQL], default, args.runs),
        timed(
            "history --gpu H100 (bundled snapshot)", 0.25, [*costopt, "history", "--gpu", "H100"], default, args.runs
        ),
        timed("plan --model 8B --tokens 100B (bundled snapshot)", 0.40, [*costopt, *PLAN], default, args.runs),
    ]
    if args.year_db.exists() and not args.quick:
        year_env = {**env, "COSTOPT_DB": str(args.year_db.resolve())}
        label = "plan --model 8B --tokens 100B (a year of history)"
        results.append(timed(label, 0.50, [*costopt, *PLAN], year_env, args.runs))
    elif not args.quick:
        print(f"(no {args.year_db}: run bench/warehouse_year.py for the year-of-history case)")
    for result in results:
        print(result.line())
    print(
        f"replay of fixtures/: {sum(o['offers'] for o in outcome)} offers, "
        f"statuses {sorted({o['status'] for o in outcome})}; "
        "second refresh, unchanged recordings: bytes downloaded per provider "
        + ", ".join(f"{o['provider']}={o['bytes_downloaded']}" for o in again)
        + f" (first: {sum(o['bytes_downloaded'] for o in outcome)} bytes)"
    )
    shutil.rmtree(work, ignore_errors=True)
    if any(r.failure for r in results):
        raise SystemExit("a command failed")


if __name__ == "__main__":
    main()
