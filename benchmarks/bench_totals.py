"""One-shot `roofline totals` wall time: the median of RUNS runs with warm file caches (one warm-up run first).

    python benchmarks/bench_totals.py [--baseline ../main]

Runs `python -m roofline.cli ... totals --model llama-3.1-8b --gpu h200-sxm --stage decode --format csv` in a fresh
process each time (imports, catalogs and the calibration's first use included), from this checkout and, with
--baseline, from another one (its workflow/ on PYTHONPATH), side by side. The issue's bar: <= 0.3 s.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
ARGS = ["totals", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--stage", "decode", "--format", "csv"]


def wall(checkout: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(checkout / "workflow")}
    command = [sys.executable, "-c", "import sys; from roofline.cli import main; sys.exit(main(sys.argv[1:]))",
               *ARGS]
    subprocess.run(command, env=env, check=True, capture_output=True)  # warm the file caches
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to time the same way")
    args = parser.parse_args()
    for name, checkout in (("this checkout", ROOT), ("baseline", args.baseline)):
        if checkout is None:
            continue
        times = wall(checkout)
        print(f"{name:14s} {checkout}: median {statistics.median(times):.3f} s over {RUNS} runs "
              f"(min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
