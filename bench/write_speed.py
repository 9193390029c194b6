"""Bench: the two write-path cases of ``bench/cli_speed.py`` alone, for working on them.

``costopt refresh --replay fixtures/`` into a new warehouse (target <= 0.8 s) and first use,
``costopt plan`` on an empty default warehouse (it seeds the bundled snapshot and history; target
<= 1.0 s): whole processes, median wall and CPU, exactly as ``cli_speed.py`` measures them (its
``timed`` and ``command``), without the read cases in between. The figures to report come from
``cli_speed.py``; this is the quicker loop.

    python bench/write_speed.py [--runs 15] [--from-source]
    python bench/write_speed.py --quick          # two runs of each (CI: checks the bench runs)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_speed import REPO, command, write_cases


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--from-source", action="store_true", help="run this source tree with python -c")
    parser.add_argument("--quick", action="store_true", help="two runs of each case (CI)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 2
    costopt = command(args.from_source)
    work = Path(tempfile.mkdtemp(prefix="costopt-bench-write-"))
    base_env = {**os.environ, "PYTHONPATH": str(REPO)} if args.from_source else dict(os.environ)
    base_env.pop("COSTOPT_DB", None)
    env = {**base_env, "COSTOPT_DATA_DIR": str(work / "data")}
    print(f"costopt: {' '.join(costopt)}; {args.runs} runs per case; {os.cpu_count()} CPUs")
    try:
        results = write_cases(costopt, env, base_env, work, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for result in results:
        print(result.line())
    if any(r.failure for r in results):
        raise SystemExit("a command failed")


if __name__ == "__main__":
    main()
