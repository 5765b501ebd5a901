"""The throughput bound against TensorRT-LLM's published maximum-load throughputs: never below any of them.

The 234 points of benchmarks/validate_max_load.py (two versions of TensorRT-LLM's perf-overview page: per-GPU
output tokens/s of `trtllm-bench throughput`, dense and MoE models, FP8 and FP4, H100/H200/B200/GB200, isl/osl from
128/128 to 32768/1024), each through the search the serving issue names (`plan --mode aggregated --max-devices TP
--weight-dtypes D --kv-dtypes fp8 --framework trtllm`, no targets). A bound below a real measurement is a defect;
the expected side's error is the script's report, not a test (nothing is fitted on these points).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import validate_max_load as published  # noqa: E402


def test_no_published_maximum_load_beats_its_bound():
    points = list(published.PUBLISHED) + published.total_points()
    assert len(points) == 234
    below = []
    for key, gpu, devices, weights, isl, osl, figure in points:
        bound, expected, within = published.best(key, gpu, devices, weights, isl, osl)
        if not bound >= figure:
            below.append(f"{key} {gpu} <= {devices} {weights} {isl}/{osl}: bound {bound:,.0f} < {figure:,}")
        assert bound >= expected  # the expected side never above its bound
        # the best at most the run's requests in flight: one of the search's points, so never above the best
        assert 0 < within <= expected
    assert not below, below


def test_the_expected_errors_are_summarised_per_model_family():
    # dense: +10% and -20% -> median |error| 15%, signed median -5%; MoE (Qwen3-30B-A3B): -30% alone
    families = published.by_family(["llama-3.1-8b", "qwen3-30b-a3b", "llama-3.1-70b"], [0.1, -0.3, -0.2])
    assert list(families) == ["dense", "MoE"]
    count, median, signed = families["dense"]
    assert count == 2 and abs(median - 0.15) < 1e-12 and abs(signed + 0.05) < 1e-12
    assert families["MoE"] == (1, 0.3, -0.3)
    assert list(published.by_family(["llama-3.1-8b"], [0.1])) == ["dense"]  # a family without points is left out
