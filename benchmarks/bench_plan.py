"""Deployment search speed (`roofline plan`): candidate configurations evaluated per second, one process.

Run: python benchmarks/bench_plan.py   (not a test; timings vary by machine); `... bench_plan.py default` runs only
the one-shot default searches of five catalog models, `... bench_plan.py default-all` those of every catalog model
(the issue's bar: <= 10 s each). The issue's bar: >= 100,000 candidate
configurations per second on one core, on a search of at least 100,000 candidates. Reports wall time and the
process's CPU time (the search is single-threaded NumPy; on a shared machine CPU time is the one-core figure).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from roofline.engine import hardware, models
from roofline.serving import planner
from roofline.serving import search as served
from roofline.serving.candidates import served_kv_dtypes

SEARCHES = (  # (model, devices or None = the whole catalog, isl, osl, TPOT target [s])
    ("llama-3.1-8b", None, 1024, 1024, 0.02),
    ("llama-3.1-70b", None, 1024, 1024, 0.05),
    ("llama-3.1-70b", ("h100-sxm", "h200-sxm"), 1024, 1024, 0.05),
    ("mixtral-8x7b", ("h100-sxm", "h200-sxm", "mi300x"), 4096, 512, 0.05),
)


def main():
    planner.search(models.get_model("llama-2-7b"), [hardware.get_accelerator("h100-sxm")],
                   planner.Workload(128, 128))  # warm up: catalogs, imports
    for key, gpu_keys, isl, osl, tpot in SEARCHES:
        gpus = [hardware.get_accelerator(k) for k in gpu_keys] if gpu_keys else list(hardware.catalog().values())
        best = None
        for _ in range(2):
            wall, cpu = time.perf_counter(), time.process_time()
            result = planner.search(models.get_model(key), gpus, planner.Workload(isl, osl, tpot_s=tpot))
            front = planner.frontier(result)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best = min(best or (wall, cpu), (wall, cpu))
        n = len(result)
        where = f"{len(gpus)} devices" if gpu_keys is None else "+".join(gpu_keys)
        print(f"{key:14s} on {where:25s} isl {isl:5d} osl {osl:4d}: {n:7d} candidates, {len(front):4d} on the "
              f"frontier, {best[0]:6.3f} s wall = {n / best[0]:9,.0f}/s, {best[1]:6.3f} s CPU = {n / best[1]:9,.0f}/s")


SERVED = (  # (model, devices or None = the whole catalog, isl, osl, TPOT target [s], mode)
    ("llama-3.1-8b", None, 1024, 1024, 0.02, "aggregated"),
    ("llama-3.1-70b", ("h100-sxm", "h200-sxm"), 1024, 1024, 0.05, "aggregated"),
    ("deepseek-v3", ("h200-sxm",), 4096, 1024, None, "all"),
)


def main_served():
    """The served search (`roofline plan --mode ...`): every candidate through the serving model."""
    for key, gpu_keys, isl, osl, tpot, mode in SERVED:
        gpus = [hardware.get_accelerator(k) for k in gpu_keys] if gpu_keys else list(hardware.catalog().values())
        workload = served.ServedWorkload(isl, osl, tpot_s=tpot)
        # the command's defaults: the default dtypes for the weights, their floats for the KV cache
        dtypes, kv_dtypes = list(planner.DEFAULT_DTYPES), list(served_kv_dtypes(planner.DEFAULT_DTYPES))
        served.search(models.get_model(key), gpus, workload, dtypes, kv_dtypes, mode=mode)  # warm up: tables, caches
        wall, cpu = time.perf_counter(), time.process_time()
        result = served.search(models.get_model(key), gpus, workload, dtypes, kv_dtypes, mode=mode)
        front = served.frontier(result)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        n = len(result)
        where = f"{len(gpus)} devices" if gpu_keys is None else "+".join(gpu_keys)
        print(f"served {mode:13s} {key:14s} on {where:12s} isl {isl:5d} osl {osl:4d}: {n:8d} candidates, "
              f"{len(front):4d} on the frontier, {wall:6.3f} s wall = {n / wall:9,.0f}/s, {cpu:6.3f} s CPU = "
              f"{n / cpu:9,.0f}/s")


CLI = "import sys; from roofline.cli import main; sys.exit(main(sys.argv[1:]))"
WORKFLOW = str(Path(__file__).resolve().parents[1] / "workflow")
#: catalog models for the one-shot default search: dense, MLA + MoE (few plans fit), small MoE (every plan fits:
#: the slowest, with hybrid linear attention and with sliding-window layers)
DEFAULT_SEARCHES = ("llama-3.1-8b", "deepseek-v3", "qwen3-30b-a3b", "qwen3-next-80b-a3b", "gpt-oss-20b")


def main_default(keys=DEFAULT_SEARCHES):
    """`roofline plan --model M --isl 1024 --osl 1024` as a user runs it: one process, every catalog device, the
    default dtypes; wall time of the whole command (imports, tables, search, output) and its stderr line."""
    slowest = (0.0, "")
    for key in keys:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CLI, "plan", "--model", key, "--isl", "1024", "--osl", "1024"],
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": WORKFLOW})
        wall = time.perf_counter() - start
        line = next((text for text in done.stderr.splitlines() if text.startswith("evaluated")), "")
        print(f"default search {key:18s}: {wall:6.2f} s wall for the command; "
              f"{line or done.stderr.strip().splitlines()[-1]}")
        slowest = max(slowest, (wall, key))
    print(f"slowest: {slowest[1]} {slowest[0]:.2f} s")


if __name__ == "__main__":
    if sys.argv[1:] == ["default"]:
        main_default()
    elif sys.argv[1:] == ["default-all"]:  # every catalog model (gpt2's context is below isl + osl: its one line)
        main_default(sorted(models.catalog()))
    else:
        main()
        main_served()
        main_default()
