"""The served search against TensorRT-LLM's published maximum-load throughputs (not a test).

Run: python benchmarks/validate_max_load.py [--table 03e27c7|v1.0|all]   (about 10 s for all 234 points on 2
cores). For each published point it runs the search the serving issue names: `roofline plan --mode aggregated
--max-devices TP --weight-dtypes D --kv-dtypes fp8 --framework trtllm` with no targets, and compares the best
bound and the best expected output tokens/s per GPU with the published figure. A bound below the figure is a
defect (exit status 1); the expected side's error is reported, and beside it the best expected figure among the
search's points with at most the run's request count in flight (REQUESTS: a run queues that many at once, so it
never holds more; a diagnostic, not the acceptance figure).

Source: TensorRT-LLM's docs/source/developer-guide/perf-overview.md at commit 03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d
(https://github.com/NVIDIA/TensorRT-LLM, Apache-2.0): `trtllm-bench throughput`, PyTorch backend, all requests
queued at once, "Per GPU Output Throughput (tps/gpu)". The published models map onto catalog keys of the same
architecture: Llama-3.3-70B -> llama-3.1-70b, DeepSeek-R1-0528 -> deepseek-v3; FP4 is NVFP4 (ModelOpt checkpoints),
FP8 on Hopper, except gpt-oss: the page lists no quantized gpt-oss checkpoint, so its columns run OpenAI's own MXFP4
experts (the page's options: CUTLASS MoE and an fp8 KV cache on Blackwell, "Hopper: use TRITON" and "use auto",
i.e. W4A16 experts and a 16-bit KV cache), whatever the column's "(FP8)" / "(FP4)" label says. Our catalog has
no GB200 system entry with the published DEP4 layout, so GB200 and the RTX Pro columns are left out.

Table v1.0: the same page at commit 00f37686aa854010d68bcbd0f4ab000221541ca6 (TensorRT-LLM 1.0), which publishes
"Total Output Throughput (tokens/sec)" of TP GPUs for ten isl/osl pairs from 128/128 to 20000/2000 (compared per GPU:
the total / TP; its RTX Pro tables use pipeline parallelism and are left out; GB200 columns are one or four GPUs of
an NVL72 system, gb200-gpu here).
"""
from __future__ import annotations

import argparse
import re
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
    ("gpt-oss-20b", "h200-sxm", 1, "mxfp4", 1024, 1024, 13890),
    ("gpt-oss-20b", "h100-sxm", 1, "mxfp4", 1024, 1024, 11403),
    ("gpt-oss-20b", "b200", 1, "mxfp4", 1024, 1024, 53491),
    ("gpt-oss-20b", "b200", 1, "mxfp4", 8192, 1024, 11904),
    ("gpt-oss-120b", "h200-sxm", 1, "mxfp4", 1024, 1024, 6798),
    ("qwen3-235b-a22b", "h200-sxm", 4, "fp8", 1024, 1024, 3268),
    ("qwen3-235b-a22b", "b200", 4, "nvfp4", 1024, 1024, 5756),
    ("deepseek-v3", "h200-sxm", 8, "fp8", 1024, 1024, 1620),
    ("deepseek-v3", "b200", 4, "nvfp4", 1024, 1024, 6430),
    ("llama-4-maverick", "h200-sxm", 8, "fp8", 1024, 1024, 4180),
    ("llama-4-maverick", "b200", 4, "nvfp4", 1024, 1024, 11227),
)

#: the v1.0 table: model -> (columns: (gpu, TP, weight dtype)), rows: isl/osl, then each column's total output tokens/s
#: ("-": not published)
PUBLISHED_TOTAL = {
    "llama-4-scout": (
        (("b200", 1, "nvfp4"), ("gb200-gpu", 1, "nvfp4"), ("h200-sxm", 4, "fp8"), ("h100-sxm", 4, "fp8")), """
        128/128 25342 19954 30354 -      | 128/2048 14699 15238 34316 15130 | 128/4096 8932 9556 21332 8603
        500/2000 11977 11795 24630 12399 | 1000/1000 10591 7738 21636 12129 | 1000/2000 9356 8581 18499 9838
        2048/128 3137 3295 3699 3253     | 2048/2048 7152 7464 14949 7972   | 5000/500 2937 3107 4605 3342
        20000/2000 1644 1767 2105 -"""),
    "llama-3.1-70b": (
        (("b200", 1, "nvfp4"), ("gb200-gpu", 1, "nvfp4"), ("h200-sxm", 1, "fp8"), ("h100-sxm", 2, "fp8")), """
        128/128 11147 12189 3803 6378   | 128/2048 9922 11309 4336 6651 | 128/4096 6831 7849 2872 4199
        500/2000 7762 9028 3666 5222    | 1000/1000 7007 7326 2909 4205 | 1000/2000 6271 6513 2994 4146
        2048/128 1339 1450 442 762      | 2048/2048 4783 5646 2003 3082 | 5000/500 1459 1602 566 898
        20000/2000 665 755 283 437"""),
    "qwen3-235b-a22b": (
        (("b200", 8, "nvfp4"), ("h200-sxm", 8, "fp8"), ("h100-sxm", 8, "fp8")), """
        128/128 63362 30429 -       | 128/2048 66057 42821 19658 | 128/4096 39496 26852 12447
        500/2000 57117 28026 18351  | 1000/1000 42391 23789 14898 | 1000/2000 34105 22061 15136
        2048/128 7329 3331 -        | 2048/2048 26854 16672 9924  | 5000/500 8190 3623 3225
        20000/2000 4453 1876 -"""),
    "qwen3-30b-a3b": (
        (("b200", 1, "nvfp4"), ("gb200-gpu", 1, "nvfp4")), """
        128/128 39827 24107   | 128/2048 37844 31311  | 128/4096 24953 26337 | 500/2000 27817 20604
        1000/1000 25828 17481 | 1000/2000 22051 17177 | 2048/128 6251 6595   | 2048/2048 17554 14719
        5000/500 6142 5908    | 20000/2000 2944 3203"""),
    "llama-4-maverick": (
        (("b200", 8, "nvfp4"), ("h200-sxm", 8, "fp8"), ("h100-sxm", 8, "fp8")), """
        128/128 124323 63994 -      | 128/2048 112676 40572 10829 | 128/4096 68170 24616 6744
        500/2000 - 37835 10108      | 1000/1000 79617 31782 9677  | 1000/2000 63766 34734 9151
        2048/128 18088 7307 -       | 2048/2048 52195 20957 6916  | 5000/500 - 8456 3457
        20000/2000 12678 4106 -"""),
    "llama-3.1-405b": (
        (("b200", 4, "nvfp4"), ("gb200-gpu", 4, "nvfp4"), ("h200-sxm", 8, "fp8"), ("h100-sxm", 8, "fp8")), """
        128/128 6281 6740 3814 3627   | 128/2048 8020 8151 5348 4340  | 128/4096 6345 6608 4741 3116
        500/2000 6244 6540 4724 3994  | 1000/1000 5209 5389 3330 2919 | 1000/2000 4933 5135 3722 2895
        2048/128 749 797 456 453      | 2048/2048 4212 4407 2948 2296 | 5000/500 1048 1112 650 610
        20000/2000 672 739 505 345"""),
    "llama-3.1-8b": (
        (("h200-sxm", 1, "fp8"), ("h100-sxm", 1, "fp8")), """
        128/128 27911 28312   | 128/2048 26221 22714  | 128/4096 18027 14325 | 500/2000 20770 17660
        1000/1000 17744 15220 | 1000/2000 16828 13899 | 2048/128 3538 3450   | 2048/2048 12194 9305
        5000/500 3902 3459    | 20000/2000 1804 1351"""),
}
#: requests per run ($num_requests) by isl/osl, as both pages list them: every request is queued at once, so a run
#: never has more than this many in flight, however many the KV cache could hold
REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
            (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000,
            (1024, 1024): 3000, (8192, 1024): 1500, (1024, 8192): 1500, (32768, 1024): 1000, (1024, 32768): 1000}
#: where the page's gpt-oss runs keep a 16-bit KV cache
HOPPER = ("h100-sxm", "h200-sxm")
#: the page's attention-DP balancing per model (its llm_options.yml): DeepSeek-R1's attention_dp_config sets
#: enable_balance with timeout_iters 60 and batching_wait_iters 0; the Qwen3 MoE, Llama 4 and gpt-oss options turn on
#: attention DP without it
BALANCE = {"deepseek-v3": (60, 0)}


def total_points() -> list[tuple]:
    """PUBLISHED_TOTAL as PUBLISHED's rows: (model, gpu, TP, weight dtype, isl, osl, tokens/s per GPU)."""
    points = []
    for key, (columns, text) in PUBLISHED_TOTAL.items():
        for row in filter(str.strip, re.split(r"[|\n]", text)):
            lengths, *values = row.split()
            isl, osl = map(int, lengths.split("/"))
            points += [(key, gpu, tp, dtype, isl, osl, round(int(value) / tp))
                       for (gpu, tp, dtype), value in zip(columns, values, strict=True) if value != "-"]
    return points


def best(key: str, gpu: str, devices: int, weights: str, isl: int, osl: int) -> tuple[float, float, float]:
    """(best bound, best expected, best expected at a concurrency the run's request count allows) output tokens/s
    per device of the search without targets."""
    kv = "bf16" if key.startswith("gpt-oss") and gpu in HOPPER else "fp8"  # the page's "Hopper: use auto"
    result = served.search(models.get_model(key), [hardware.get_accelerator(gpu)],
                           served.ServedWorkload(isl, osl, framework="trtllm", dp_balance=BALANCE.get(key)), [weights],
                           [kv], max_devices=devices)
    c = result.columns
    expected = np.asarray(c["tokens_per_s_per_device_expected"], dtype=float)
    within = np.asarray(result.concurrency, dtype=float) <= REQUESTS[isl, osl]
    return (float(np.nanmax(c["tokens_per_s_per_device"])), float(np.nanmax(expected)),
            float(np.nanmax(expected[within])) if within.any() else float("nan"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=("03e27c7", "v1.0", "all"), default="03e27c7",
                        help="which published table (default 03e27c7, per GPU; v1.0: totals of TP GPUs)")
    table = parser.parse_args().table
    points = (list(PUBLISHED) if table != "v1.0" else []) + (total_points() if table != "03e27c7" else [])
    errors, capped, below = [], [], []
    for key, gpu, devices, weights, isl, osl, published in points:
        bound, expected, within = best(key, gpu, devices, weights, isl, osl)
        errors.append(expected / published - 1)
        capped.append(within / published - 1)
        if bound < published:
            below.append(key)
        print(f"{key:16s} {gpu:9s} <= {devices} {weights:5s} {isl:5d}/{osl:<5d} published {published:7,d}  bound "
              f"{bound:9,.0f}{'' if bound >= published else ' BELOW'}  expected {expected:8,.0f} ({errors[-1]:+.0%}); "
              f"at <= {REQUESTS[isl, osl]:,} in flight {within:8,.0f} ({capped[-1]:+.0%})")
    absolute = np.abs(errors)
    print(f"{len(errors)} points: bound below the published figure {len(below)} times; expected error median "
          f"{np.median(absolute):.1%}, mean {np.mean(absolute):.1%}, signed median {np.median(errors):+.1%}; at most "
          f"the run's requests in flight: median {np.nanmedian(np.abs(capped)):.1%}, "
          f"signed {np.nanmedian(capped):+.1%}")
    for family, (count, median, signed) in by_family([point[0] for point in points], errors).items():
        print(f"  {family} models, {count} points: expected error median {median:.1%}, signed {signed:+.1%}")
    return 1 if below else 0


def by_family(keys: list[str], errors: list[float]) -> dict[str, tuple[int, float, float]]:
    """{"dense" | "MoE": (points, median |error|, signed median)} of the expected side's errors, per model family (the
    MoE points are where the search's expected throughput runs high: see the README's validation)."""
    moe = np.array([models.get_model(key).is_moe for key in keys])
    errors = np.asarray(errors, dtype=float)
    return {family: (int(chosen.sum()), float(np.median(np.abs(errors[chosen]))), float(np.median(errors[chosen])))
            for family, chosen in (("dense", ~moe), ("MoE", moe)) if chosen.any()}


if __name__ == "__main__":
    sys.exit(main())
