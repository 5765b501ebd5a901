"""What the package's GEMM timings hold beside the kernel a served step runs, and how it is left out before the
rows are written (roofline.estimate.aic_rows.gemm_rows): kernel sources and single rows that timed the collector's
host (HOST_FLOOR_S, SPIKE_RATIO), kernels timed at a tactic no served engine runs (UNTUNED), the dynamic scale
computation of per-tensor fp8 GEMMs (static_fp8: checkpoints serve static scales)."""
from __future__ import annotations

import numpy as np

from . import aic_source as src

#: a GEMM kernel source whose fastest row (the package's smallest shapes: m = 1, n and k from 128) takes longer
#: than this measured the collector's host time per call, not a kernel: vLLM 0.24.0's block-scaled fp8 GEMMs take
#: 55-245 us at every shape on every system (a 128 x 128 x 32768 one as long as a 128 x 128 x 1), where the other
#: frameworks' take 3-5 us; every other source's fastest row is under 20 us. Such a source is left out (gemm_rows)
HOST_FLOOR_S = 20e-6
#: a GEMM slower than this many times the slower of its two neighbours in m (same dtype, n and k; the smallest and
#: the largest m are not judged) is a hiccup of the collector's host, not a kernel: a kernel for fewer rows is not
#: slower than one for more. 2.5% of vLLM 0.24.0's per-tensor fp8 GEMMs on the B200 are such rows, at scattered m
#: (+19 us, median: 30.5 us at m = 16 for 1024 x 8192 between 10.7 and 11.1 us), 0.4-1.3% of SGLang's; served decode
#: steps show no such step (b200 vLLM fp8 at 16 users: between 8 and 32 users'). m = 1 is not judged: vLLM's fp8
#: GEMMs there take 2-3x their m = 2 time on most Blackwell curves alike, a path of its own, not a hiccup.
#: Left out before thinning, which would keep them as bends (gemm_rows)
SPIKE_RATIO = 1.5
#: GEMM dtypes a framework's collector times outside the framework's autotuner, i.e. at the fallback tactic, which a
#: served engine never runs (it tunes every GEMM shape at warm-up), on the devices (catalog keys) where that tactic is
#: measurably not what the engine serves: the package's TensorRT-LLM collector (collector/trtllm/collect_gemm.py)
#: times `Linear.forward` without `autotune()`, so `trtllm::nvfp4_gemm` runs its cache-miss fallback, CUTLASS's
#: default config. On the B200, B300, GB200 and GB300 those NVFP4 rows take 1.7-1.9x the same device's SGLang NVFP4
#: GEMM at decode sizes (median over shapes, m = 1-64; 1.2-1.4x at m = 4096), flat in n at a fixed k (8 x 8192 @
#: 8192 x n on a B200: 21-22 us for n = 128 to 10,240), while served TensorRT-LLM decodes NVFP4 Llama-3.1-70B
#: faster than vLLM on the same B200 (TPOT 12.1 against 13.1 ms at TP 1 and 4 users). On the RTX PRO 6000 (SM120)
#: the fallback is within 1.08x SGLang's and faster than vLLM's: kept. Left out (without_untuned), a lookup takes
#: the same device's kernel measured under another framework (roofline.estimate.lookup: a `default` estimate, so
#: the step is `partial`)
UNTUNED = {"trtllm": {"nvfp4": ("b200", "b300", "gb200-gpu", "gb300-gpu")}}


def without_host_floor(frame):
    """`frame` less the (dtype, kernel source) groups whose fastest row exceeds HOST_FLOOR_S (judged on every
    measured m, before GEMM_M keeps the engine's)."""
    floor = frame.groupby(["gemm_dtype", "kernel_source"])["seconds"].transform("min")
    return frame[floor <= HOST_FLOOR_S]


def without_spikes(frame, keys: list[str], size: str, ratio: float = SPIKE_RATIO):
    """`frame` less the rows slower than `ratio` x the slower of their two neighbours along `size` in their `keys`
    curve (the first and the last row have one and are kept). One pass: two adjacent slow rows stay, a kernel's
    own step (A100 SGLang bf16 4096 x 768: 13.4-15.5 us at m = 2..16, 8.8-9.6 at m = 1 and 17-64)."""
    frame = frame.sort_values(size)
    seconds = frame.groupby(keys, sort=False)["seconds"]
    before, after = seconds.shift(1), seconds.shift(-1)
    neighbours = np.maximum(before.to_numpy(dtype=float), after.to_numpy(dtype=float))  # NaN at either end
    spike = frame["seconds"].to_numpy(dtype=float) > ratio * neighbours
    return frame[~spike]


def untuned_dtypes(framework: str, device: str) -> list[str]:
    """The GEMM dtypes `framework`'s collector timed at its fallback tactic on catalog device `device` (UNTUNED)."""
    return [dtype for dtype, devices in UNTUNED.get(framework, {}).items() if device in devices]


def without_untuned(frame, framework: str, device: str):
    """`frame` (a package gemm table of catalog device `device`) less its UNTUNED GEMM dtypes under `framework`."""
    return frame[~frame["gemm_dtype"].isin(untuned_dtypes(framework, device))]


def untuned_left_out(gemm_folder, framework: str, device: str) -> int:
    """How many GEMM dtypes (curve keys) the package measured under `framework` in `gemm_folder` (a gemm table of
    catalog device `device`) that without_untuned leaves out."""
    dtypes = untuned_dtypes(framework, device)
    frame = src.read_table(gemm_folder, "gemm_perf") if gemm_folder is not None and dtypes else None
    return 0 if frame is None else len(set(frame["gemm_dtype"]) & set(dtypes))


def static_fp8(frame, quantize):
    """fp8 rows with the scale computation of their (m, k) taken off (`scale_s`: what was; 0 elsewhere), never
    below half the time measured."""
    scales = src.read_table(quantize, "computescale_perf") if quantize else None
    frame = frame.assign(scale_s=0.0)
    if scales is None:
        return frame
    scale = scales.groupby(["m", "k"])["seconds"].min().rename("scale")
    frame = frame.join(scale, on=["m", "k"])
    fp8 = (frame["gemm_dtype"] == "fp8") & frame["scale"].notna()
    taken = frame["scale"].where(fp8, 0.0).clip(upper=frame["seconds"] / 2)
    return frame.assign(seconds=frame["seconds"] - taken, scale_s=taken).drop(columns="scale")
