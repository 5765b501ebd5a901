"""Engine throughput, single process: scalar evaluations per second and a vectorized 10,000-point sweep.

Run: python benchmarks/bench_engine.py   (prints a small table; not a test, timings vary by machine)
"""
from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from roofline.engine import analysis, graph, hardware, models, sweeps
from roofline.engine.errors import RooflineInputError  # noqa: E402
from roofline.engine.scenario import Scenario  # noqa: E402


def best_of(repeats, func):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def pairs():
    """Every (model, gpu) the engine serves (devices with an fp16 peak; a sparse-attention model's fp8 indexer
    needs an fp8 peak too: analysis.check_indexer_device)."""
    gpus = [g for g in hardware.catalog().values() if "fp16" in g.peak_flops_per_s]
    out = []
    for model, gpu in itertools.product(models.catalog().values(), gpus):
        try:
            analysis.check_indexer_device(model, gpu)
        except RooflineInputError:
            continue
        out.append((model, gpu))
    return out


def scalar_grid():
    """Totals for every served (model, gpu, stage) over 4 batches x 4 sequence lengths (within each model's
    context)."""
    scenarios = [Scenario(batch=b, seq_len=s) for b, s in itertools.product((1, 8, 64, 256), (512, 2048, 8192, 32768))]
    n = 0
    for (model, gpu), stage, sc in itertools.product(pairs(), ("prefill", "decode"), scenarios):
        if sc.seq_len + 1 > model.max_position:  # refused: longer than the model's context
            continue
        analysis.totals(model, gpu, stage, sc)
        n += 1
    return n


def scalar_grid_uncached():
    """The same grid with the operator graph rebuilt for every evaluation (no reuse across devices)."""
    clear = graph._cached_operators.cache_clear
    original = analysis.totals

    def totals_uncached(*args):
        clear()
        return original(*args)

    analysis.totals = totals_uncached
    try:
        return scalar_grid()
    finally:
        analysis.totals = original


def rows_grid():
    """Full per-operator tables (dict rows) for the same grid at one scenario."""
    n = 0
    for (model, gpu), stage in itertools.product(pairs(), ("prefill", "decode")):
        analysis.operator_table(model, gpu, stage, Scenario(seq_len=1000))
        n += 1
    return n


def vector_sweep(points=10_000):
    model, gpu = models.get_model("llama-3.1-70b"), hardware.get_accelerator("h100-sxm")
    rng = np.random.default_rng(0)
    batch = rng.integers(1, 513, points)
    seq = rng.integers(128, 32769, points)
    result = sweeps.evaluate_many(model, gpu, "decode", Scenario(), batch=batch, seq_len=seq)
    return len(result["t_s"])


def main():
    scalar_grid()  # warm caches (catalog loading, critical batch)
    t, n = best_of(3, scalar_grid)
    print(f"scalar totals      : {n:6d} evaluations in {t:6.3f} s = {n / t:10,.0f} per second "
          "(operator graph reused across devices)")
    t, n = best_of(3, scalar_grid_uncached)
    print(f"  graph rebuilt    : {n:6d} evaluations in {t:6.3f} s = {n / t:10,.0f} per second")
    t, n = best_of(3, rows_grid)
    print(f"per-operator tables: {n:6d} tables      in {t:6.3f} s = {n / t:10,.0f} per second")
    t, n = best_of(5, vector_sweep)
    print(f"vectorized sweep   : {n:6d} points      in {t:6.3f} s = {n / t:10,.0f} per second")


if __name__ == "__main__":
    main()
