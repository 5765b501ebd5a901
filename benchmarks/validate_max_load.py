"""The served search against TensorRT-LLM's published maximum-load throughputs (not a test).

Run: python benchmarks/validate_max_load.py   (~2 min on 2 cores). For each published point it runs the search the
serving issue names: `roofline plan --mode aggregated --max-devices TP --weight-dtypes D --kv-dtypes fp8 --framework
trtllm` with no targets, and compares the best bound and the best expected output tokens/s per GPU with the
published figure. A bound below the figure is a defect (exit status 1); the expected side's error is reported.

Source: TensorRT-LLM's docs/source/developer-guide/perf-overview.md at commit 03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d
(https://github.com/NVIDIA/TensorRT-LLM, Apache-2.0): `trtllm-bench throughput`, PyTorch backend, all requests
queued at once, "Per GPU Output Throughput (tps/gpu)". The published models map onto catalog keys of the same
architecture: Llama-3.3-70B -> llama-3.1-70b, DeepSeek-R1-0528 -> deepseek-v3; FP4 is NVFP4 (ModelOpt checkpoints),
FP8 on Hopper. Our catalog has no GB200 system entry with the published DEP4 layout, so GB200 and the RTX Pro
columns are left out.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from roofline.engine import hardware, models  # noqa: E402
from roofline.serving import search as served  # noqa: E402

#: (model, gpu, devices (the published TP / DEP degree), weight dtype, isl, osl, published tokens/s per GPU)
PUBLISHED = (
    ("llama-3.1-70b", "h200-sxm", 2, "fp8", 1000, 1000, 2587),
    ("llama-3.1-70b", "h200-sxm", 2, "fp8", 1024, 1024, 2582),
    ("llama-3.1-70b", "h200-sxm", 2, "fp8", 1024, 8192, 2009),
    ("llama-3.1-70b", "h200-sxm", 2, "fp8", 8192, 1024, 537),
    ("llama-3.1-70b", "h200-sxm", 2, "fp8", 32768, 1024, 120),
    ("llama-3.1-70b", "h100-sxm", 2, "fp8", 1000, 1000, 2209),
    ("llama-3.1-70b", "h100-sxm", 2, "fp8", 8192, 1024, 398),
    ("llama-3.1-70b", "b200", 1, "nvfp4", 1024, 1024, 6842),
    ("llama-3.1-70b", "b200", 1, "nvfp4", 1024, 8192, 3242),
    ("llama-3.1-70b", "b200", 1, "nvfp4", 8192, 1024, 1362),
    ("qwen3-30b-a3b", "b200", 1, "nvfp4", 1024, 1024, 26611),
    ("qwen3-30b-a3b", "b200", 1, "nvfp4", 1024, 8192, 13497),
    ("qwen3-30b-a3b", "b200", 1, "nvfp4", 8192, 1024, 5735),
    ("gpt-oss-20b", "h200-sxm", 1, "fp8", 1024, 1024, 13890),
    ("gpt-oss-20b", "h100-sxm", 1, "fp8", 1024, 1024, 11403),
    ("gpt-oss-20b", "b200", 1, "nvfp4", 1024, 1024, 53491),
    ("gpt-oss-20b", "b200", 1, "nvfp4", 8192, 1024, 11904),
    ("gpt-oss-120b", "h200-sxm", 1, "fp8", 1024, 1024, 6798),
    ("qwen3-235b-a22b", "h200-sxm", 4, "fp8", 1024, 1024, 3268),
    ("qwen3-235b-a22b", "b200", 4, "nvfp4", 1024, 1024, 5756),
    ("deepseek-v3", "h200-sxm", 8, "fp8", 1024, 1024, 1620),
    ("deepseek-v3", "b200", 4, "nvfp4", 1024, 1024, 6430),
    ("llama-4-maverick", "h200-sxm", 8, "fp8", 1024, 1024, 4180),
    ("llama-4-maverick", "b200", 4, "nvfp4", 1024, 1024, 11227),
)


def best(key: str, gpu: str, devices: int, weights: str, isl: int, osl: int) -> tuple[float, float]:
    """(best bound, best expected) output tokens/s per device of the search without targets."""
    result = served.search(models.get_model(key), [hardware.get_accelerator(gpu)],
                           served.ServedWorkload(isl, osl, framework="trtllm"), [weights], ["fp8"], max_devices=devices)
    c = result.columns
    return float(np.nanmax(c["tokens_per_s_per_device"])), float(np.nanmax(c["tokens_per_s_per_device_expected"]))


def main() -> int:
    errors, below = [], []
    for key, gpu, devices, weights, isl, osl, published in PUBLISHED:
        bound, expected = best(key, gpu, devices, weights, isl, osl)
        errors.append(expected / published - 1)
        if bound < published:
            below.append(key)
        print(f"{key:16s} {gpu:9s} <= {devices} {weights:5s} {isl:5d}/{osl:<5d} published {published:7,d}  bound "
              f"{bound:9,.0f}{'' if bound >= published else ' BELOW'}  expected {expected:8,.0f} ({errors[-1]:+.0%})")
    absolute = np.abs(errors)
    print(f"{len(errors)} points: bound below the published figure {len(below)} times; expected error median "
          f"{np.median(absolute):.1%}, mean {np.mean(absolute):.1%}, signed median {np.median(errors):+.1%}")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
