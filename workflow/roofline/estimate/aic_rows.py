"""The package's measured kernels as rows of our calibration table: each kernel's FLOPs and bytes from the engine's
formulas at its shape and dtypes (roofline.engine.formulas), its bound on the catalog device (roofline.engine.roofline),
its measured time in seconds, and a provenance naming the package version, framework, version and kernel source.

What is kept (only shapes the engine can ask for, thinned where the curve is smooth, see `thin`):
- GEMMs per dtype (bf16, fp8 per-tensor, nvfp4, int8/int4 weight-only, int8 SmoothQuant), m in GEMM_M; fp8
  block-scaled GEMMs as rows of group_size FP8_BLOCK, a curve of their own (Scenario.fp8_scaling "block"; expert
  blocks, which some frameworks measure only block-scaled, take both kinds as one); rows of host time left out
  (aic_gemm: a whole kernel source, a lone row), and kernels timed at a tactic no served engine runs (aic_gemm.UNTUNED:
  TensorRT-LLM's NVFP4 GEMMs on the datacenter Blackwell GPUs).
- Attention: prefill (`context_attention`) and decode (`generation_attention`) per KV dtype, 16-bit attention and,
  over an 8-bit cache, 8-bit attention (the faster per shape),
  every head count (GQA) and head size; MLA prefill and absorbed decode (`mla`: TensorRT-LLM and SGLang only, vLLM
  measures MLA as whole modules with their projections).
- MoE expert blocks (gate/up, activation, down) at power-law routing (MOE_ROUTINGS), per dtype (MXFP4 weights
  with 16-bit or MXFP8 activations among them; fp8 per tensor and block-scaled as one), tp x ep <= MOE_MAX_DEVICES.
- Communication: all-reduce (the framework's custom all-reduce, NCCL where it has none), all-gather, all-to-all
  (NCCL) by message size and GPU count. The package has no point-to-point table.
- Element-wise: the fp8 quantize kernel (`scale_matrix`: read 16-bit, write fp8), the only element-wise kernel the
  package measures, where it runs in one pass (quantize_rows); norms, RoPE and embeddings it does not measure.
Where several kernel sources time the same shape, the fastest is kept (what a framework's backend selection picks;
TensorRT-LLM's min-latency MoE kernel only up to MIN_LATENCY_TOKENS, where its engine runs it).
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import formulas as f
from ..engine.collectives import collective_kind, collective_seconds
from ..engine.columns import CALIBRATION_COLUMNS
from ..engine.dtypes import DTYPE_BYTES, matmul_dtype, weight_bytes_per_element
from ..engine.hardware import Accelerator
from ..engine.models import ACTIVATION_FLOPS
from ..engine.roofline import roof_times
from . import aic_source as src
from .aic_gemm import static_fp8, without_host_floor, without_spikes, without_untuned
from .calibration import COLLECTIVE_COSTS

#: the package's GEMM dtypes -> (weight dtype, activation dtype) in ours
GEMM_DTYPES = {"bfloat16": ("bf16", "bf16"), "fp8": ("fp8", "fp8"), "fp8_block": ("fp8", "fp8"),
               "nvfp4": ("nvfp4", "nvfp4"), "int8_wo": ("int8", "bf16"), "int4_wo": ("int4", "bf16"),
               "sq": ("int8", "int8")}
#: the package's block-scaled fp8 GEMMs (DeepSeek-V3's and Qwen3's FP8 checkpoints: one weight scale per 128 x 128
#: block, activations quantized per token and 128 channels as the kernel runs): rows of group_size FP8_BLOCK, a
#: curve of their own (calibration.FP8_BLOCK_OPERAND) that scenarios of fp8_scaling "block" read
FP8_BLOCK = 128
#: the package's MoE dtypes -> (expert weight dtype, activation dtype). MXFP8 activations (8-bit elements, one e8m0
#: scale per 32: 8.25 bits) count as fp8, the dtype whose peak they compute at; block-scaled fp8 experts (DeepSeek-V3,
#: Qwen3 FP8 checkpoints: one scale per 128 x 128 block) are fp8 as the engine counts them (roofline.engine.dtypes),
#: per-tensor and block-scaled kernels of one shape being two kernels a framework may pick for fp8 experts
MOE_DTYPES = {"bfloat16": ("bf16", "bf16"), "fp8": ("fp8", "fp8"), "fp8_block": ("fp8", "fp8"),
              "nvfp4": ("nvfp4", "nvfp4"), "w4a16_mxfp4": ("mxfp4", "bf16"), "w4a8_mxfp4_mxfp8": ("mxfp4", "fp8"),
              "int4_wo": ("int4", "bf16")}
KV_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8"}
#: GEMM rows kept (tokens): powers of two and their midpoints; the package's m+1 twins are dropped
GEMM_M = {1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 8192, 16384,
          32768}
#: MoE rows kept: expert-parallel x tensor-parallel degrees of at most this many devices
MOE_MAX_DEVICES = 16
#: routing of the MoE rows kept: the package times each expert block under balanced routing (every expert gets
#: tokens x top_k / experts) and under power-law routing (alpha 1.01 and 1.2: a few experts get most tokens, as a
#: trained router gives on real and on random prompts). A served step's fused MoE kernel is priced on the power-law
#: rows, AIConfigurator's own default (alpha 1.2 for its generic MoE; its DeepSeek family's 1.01 runs at 0.99x of
#: it, median over the package's shapes). Against the balanced rows they run up to ~25% faster at 16-64 tokens (fewer
#: experts touched), about even at 128-512 and 5-50% slower from 1,024 to 4,096 tokens (more at higher EP); against
#: measured served runs they cut the MoE models' TPOT error (benchmarks/validate_serving.py: gpt-oss-120b on B200
#: 38.6% -> 25.3%) and the max-load error (benchmarks/validate_max_load.py). Per shape and token count the first
#: routing of MOE_ROUTINGS the package measured is kept (a few shapes lack the 1.2 rows); each row names its own.
#: Per-operator expected times (GEMM curves) are not affected
MOE_ROUTINGS = ("power_law_1.2", "power_law_1.01", "balanced")
#: the most tokens TensorRT-LLM's min-latency MoE kernel (the package's `moe_torch_flow_min_latency`, timed with
#: cutlass_min_latency_mode, NVFP4 only) is read at: AIConfigurator's own selection takes it for gated NVFP4 experts of
#: at most 128 tokens after attention-DP gathering and the standard kernel above, as the engine runs it. Above that
#: its rows are left out: kept as the fastest kernel they had priced every larger NVFP4 expert block at 0.56-0.60x
#: the CUTLASS kernel a served engine runs there (B200, Qwen3-235B-A22B's shape at EP 4: 0.75 against 1.32 ms at
#: 16,384 tokens)
MIN_LATENCY_TOKENS = 128
MIN_LATENCY_SOURCE = "moe_torch_flow_min_latency"
#: quantization group of the package's int4 weight-only GEMMs (weights per fp16 scale)
INT4_GROUP = 128
#: MLA (DeepSeek-V3 geometry, the package's): latent rank, rope head size, decompressed q/k and v head sizes
MLA_LATENT, MLA_ROPE, MLA_QK, MLA_V = 512, 64, 192, 128
#: feature-space thinning: one kernel per cell of this many decades of bound time and of intensity (the estimator
#: sees a kernel only through those two: kernels in one cell tell it the same thing)
CELL_DECADES = 0.1
#: decode attention: cells of this many decades of keys per sequence too (the estimator's third coordinate)
KEYS_CELL = 0.15
#: GEMMs: cells of this many decades of n / k too (the estimator's third coordinate: a tall and a wide weight)
ASPECT_CELL = 0.3
#: a measured point is dropped when the straight line (log time vs log size) between its kept neighbours is within
#: this fraction of it
THIN_TOLERANCE = 0.03
#: a quantize kernel slower than this many times its traffic bound on tensors of LARGE_BYTES or more (where launch
#: time does not count) makes more than one pass over its data (a dynamic scale computed apart, unfused casts)
MULTI_PASS = 2.0
LARGE_BYTES = 1e8
#: an fp8-KV MLA decode curve with a kernel over this many times the same table's bf16-KV one at its shape converts
#: its cache: SGLang's fa3 MLA decode on the H100 and H200 (4-5x, median) dequantizes the whole KV pool every layer
#: (aiconfigurator PR #124, SGLang #35291), a cost of the pool, not of the shape, which served runs do not pay (8 H200,
#: DeepSeek-V3, 4 users: 10 ms TPOT, under that conversion's 14 ms). Its fp8 rows slower than bf16 take the bf16 time
#: (stand_in_bf16; all of them, or the curve would dip where the ratio crosses 2). Other MLA tables: within 1.02x (p90),
#: 1-5 stray rows. Not GQA: a slower fp8 kernel there can be real (TensorRT-LLM's L40S: 41% of shapes over 2x)
DEQUANTIZING = 2.0
A16 = 2.0  # bytes of a 16-bit activation


def row(gpu: Accelerator, device: str, framework: str, op_class: str, op: str, dtype: str, cost: f.Cost,
        seconds: float, provenance: str, span: int = 1, **shape) -> dict:
    """One calibration row (CALIBRATION_COLUMNS); `bound_s` is the engine's bound on `gpu`, link included."""
    out = dict.fromkeys(CALIBRATION_COLUMNS, 0)
    out.update({"weight_dtype": "", "kv_dtype": "", **shape})
    t_network = 0.0
    if span > 1 and cost.network:
        t_network = collective_seconds(gpu, collective_kind(op), cost.network, span)
    bound = roof_times(cost.flops, cost.bytes, gpu.peak(dtype), gpu.bandwidth_bytes_per_s, t_network)[2]
    out.update(device=device, gpu=gpu.key, source="measured", op_class=op_class, op=op, dtype=dtype,
               flops=float(cost.flops), bytes=float(cost.bytes), measured_s=float(seconds), bound_s=float(bound),
               provenance=provenance, framework=framework, span=span)
    return out


def fastest(frame, keys: list[str]):
    """One row per shape: the fastest kernel source's."""
    return frame.loc[frame.groupby(keys, sort=False)["seconds"].idxmin()]


def stand_in_bf16(frame, shape: list[str], op: str):
    """`frame` (one row per shape and kv_len) where a `shape` group of an MLA decode `op` has an fp8-KV row over
    DEQUANTIZING x its bf16-KV kernel at its kv_len (log-log interpolated, inside the bf16 range): each of the group's
    fp8 rows slower than that takes the bf16 time, its kernel source marked. Prefill, other groups: unchanged."""
    if not op.endswith("decode"):
        return frame
    frame = frame.copy()
    for _, group in frame.groupby(shape, sort=False):
        ref = group[group["kv_cache_dtype"] == "bfloat16"].sort_values("kv_len")
        fp8 = group[group["kv_cache_dtype"] == "fp8"]
        if ref.empty or fp8.empty:
            continue
        x, known = np.log(fp8["kv_len"].to_numpy(float)), np.log(ref["kv_len"].to_numpy(float))
        bf16 = np.exp(np.interp(x, known, np.log(ref["seconds"].to_numpy(float))))
        inside, seconds = (x >= known[0]) & (x <= known[-1]), fp8["seconds"].to_numpy(float)
        if not (inside & (seconds > DEQUANTIZING * bf16)).any():
            continue
        slow = inside & (seconds > bf16)
        index = fp8.index[slow]
        frame.loc[index, "seconds"] = bf16[slow]
        frame.loc[index, "kernel_source"] = frame.loc[index, "kernel_source"].astype(str) + (
            " (converts its fp8 cache: the bf16-KV kernel's time)")
    return frame


def thin(frame, keys: list[str], size: str, tolerance: float = THIN_TOLERANCE):
    """Rows of `frame` that keep every curve (log seconds against log `size`, one per `keys` group) within
    `tolerance` of the full one: the ends, and recursively the point farthest from the straight line between the
    kept ones while it is off by more than `tolerance` (Douglas-Peucker)."""
    kept = []
    for _, group in frame.sort_values(size).groupby(keys, sort=False):
        x = np.log(group[size].to_numpy(dtype=float))
        y = np.log(group["seconds"].to_numpy(dtype=float))
        keep = np.zeros(len(x), dtype=bool)
        keep[[0, -1]] = True
        stack = [(0, len(x) - 1)]
        while stack:
            lo, hi = stack.pop()
            if hi - lo < 2:
                continue
            line = np.interp(x[lo + 1:hi], [x[lo], x[hi]], [y[lo], y[hi]]) if x[hi] > x[lo] else y[lo]
            off = np.abs(y[lo + 1:hi] - line)
            worst = int(np.argmax(off))
            if off[worst] > math.log1p(tolerance):
                keep[lo + 1 + worst] = True
                stack += [(lo, lo + 1 + worst), (lo + 1 + worst, hi)]
        kept.append(group[keep])
    return _concat(kept) if kept else frame.iloc[:0]


def thin_cells(rows: list[dict], cell: float = CELL_DECADES) -> list[dict]:
    """One row per (kind, cell of log10 bound x log10 intensity [x log10 keys per sequence: decode attention;
    x log10 n / k: GEMMs]): the median one by measured/bound ratio.
    Collectives are kept whole (one curve per GPU count, already thin)."""
    cells: dict[tuple, list[dict]] = {}
    kept = []
    for r in rows:
        if r["op_class"] == "communication":
            kept.append(r)
            continue
        x, z = math.log10(r["bound_s"]), math.log10(r["flops"] / r["bytes"]) if r["flops"] else -9.0
        if r["op"].endswith("decode"):
            keys = math.floor(math.log10(max(r["kv_len"], 1)) / KEYS_CELL)
        else:
            keys = math.floor(math.log10(r["n"] / r["k"]) / ASPECT_CELL) if r["op_class"] == "gemm" else 0
        key = (r["op_class"], r["op"], r["dtype"], r["weight_dtype"], r["kv_dtype"], r.get("group_size", 0),
               math.floor(x / cell), math.floor(z / cell), keys)
        cells.setdefault(key, []).append(r)
    for members in cells.values():
        members.sort(key=lambda r: r["measured_s"] / r["bound_s"])
        kept.append(members[len(members) // 2])
    return kept


def _concat(parts):
    import pandas as pd

    return pd.concat(parts, ignore_index=True)


def _device(frame) -> str:
    return str(frame["device"].iloc[0]) if "device" in frame and len(frame) else ""


def gemm_rows(gpu: Accelerator, folder, framework: str, quantize=None) -> list[dict]:
    """GEMMs [m x k] @ [k x n] per dtype (GEMM_DTYPES; output 16-bit). The package times per-tensor fp8 GEMMs with
    dynamic activation scaling; per-tensor FP8 checkpoints are served with static scales, so the measured scale
    computation of the same m and k (`computescale_perf`) is taken off (without that table, nothing is). Its
    block-scaled fp8 GEMMs (FP8_BLOCK) quantize their activations per token group as they run: kept whole. A
    kernel source that measured host time (HOST_FLOOR_S) is left out, and so is a row of host time among kernels
    (SPIKE_RATIO, judged on every measured m) and a dtype the collector timed at its fallback tactic (UNTUNED)."""
    frame = src.read_table(folder, "gemm_perf") if folder else None
    if frame is None:
        return []
    frame = without_host_floor(without_untuned(frame[frame["gemm_dtype"].isin(list(GEMM_DTYPES))], framework, gpu.key))
    frame = without_spikes(fastest(frame, ["gemm_dtype", "m", "n", "k"]), ["gemm_dtype", "n", "k"], "m")
    frame = static_fp8(frame[frame["m"].isin(list(GEMM_M))], quantize)
    frame = thin(frame, ["gemm_dtype", "n", "k"], "m")
    rows, device = [], _device(frame)
    for r in frame.itertuples():
        weight, act = GEMM_DTYPES[r.gemm_dtype]
        dtype = matmul_dtype(weight, act)
        if dtype not in gpu.peak_flops_per_s:
            continue
        cost = f.linear(r.m, r.k, r.n, weight_bytes_per_element(weight, INT4_GROUP), DTYPE_BYTES[act],
                        out_width=A16)
        block = r.gemm_dtype == "fp8_block"
        note = (", less the dynamic scale computation" if r.scale_s > 0
                else ", block-scaled (128 x 128)" if block else "")
        group = INT4_GROUP if weight == "int4" else FP8_BLOCK if block else 0
        rows.append(row(gpu, device, framework, "gemm", "gemm", dtype, cost, r.seconds,
                        src.provenance(folder, "gemm_perf", r.kernel_source) + note, m=r.m, n=r.n, k=r.k,
                        weight_dtype=weight, group_size=group))
    return rows


def _attention_frame(folder, name: str):
    frame = src.read_table(folder, name)
    if frame is None:
        return None
    keep = frame["kv_cache_dtype"].isin(list(KV_DTYPES)) & (frame.get("window_size", 0) == 0)
    if "attn_dtype" in frame:
        # 16-bit attention, or 8-bit attention over an 8-bit cache: what FlashAttention-3 (SGLang) and TensorRT-LLM's
        # fp8 context FMHA run when the cache is fp8 (`fastest` then picks the backend's kernel per shape)
        keep &= (frame["attn_dtype"] == "bfloat16") | (frame["attn_dtype"] == frame["kv_cache_dtype"])
    if "beam_width" in frame:
        keep &= frame["beam_width"] == 1
    frame = frame[keep].copy()
    frame["kv_len"] = frame["isl"] + frame["step"]
    return frame


def attention_rows(gpu: Accelerator, folder, framework: str) -> list[dict]:
    """FlashAttention-style kernels: prefill (causal, keys from the fresh activations) and decode (one query per
    sequence over the KV cache at its dtype), per head count, KV heads and head size."""
    rows = []
    for name, op in (("context_attention_perf", "attention_prefill"), ("generation_attention_perf",
                                                                       "attention_decode")):
        frame = _attention_frame(folder, name) if folder else None
        if frame is None:
            continue
        keys = ["kv_cache_dtype", "batch_size", "num_heads", "num_key_value_heads", "head_dim"]
        frame = thin(fastest(frame, keys + ["kv_len"]), keys, "kv_len")
        device = _device(frame)
        for r in frame.itertuples():
            kv = KV_DTYPES[r.kv_cache_dtype]
            cost = _attention_cost(op, r.batch_size, r.num_heads, r.num_key_value_heads, r.kv_len, r.head_dim,
                                   r.head_dim, kv)
            rows.append(row(gpu, device, framework, "attention", op, "bf16", cost, r.seconds,
                            src.provenance(folder, name, r.kernel_source), batch=r.batch_size,
                            q_len=r.kv_len if op.endswith("prefill") else 1, kv_len=r.kv_len, heads=r.num_heads,
                            kv_heads=r.num_key_value_heads, head_dim=r.head_dim, kv_dtype=kv))
    return rows


def _attention_cost(op: str, B, H, Hkv, S, d, dv, kv: str, kv_width=None) -> f.Cost:
    """The engine's fused-attention cost: prefill of S causal queries reading fresh K/V at 16 bits; decode of one
    query per sequence over S cached keys at the KV dtype."""
    if op.endswith("prefill"):
        return f.from_activations(f.fused_attention(B, H, Hkv, S, f.causal_pairs(S), S, d, dv, A16, A16))
    return f.fused_attention(B, H, Hkv, 1, S, S, d, dv, A16, DTYPE_BYTES[kv], kv_width)


def mla_rows(gpu: Accelerator, folder, framework: str) -> list[dict]:
    """MLA attention cores: prefill decompressed (qk 192, v 128 per head), decode absorbed (one latent KV head of
    512 + 64 shared by the heads), `num_heads` per device."""
    rows = []
    for name, op in (("context_mla_perf", "mla_prefill"), ("generation_mla_perf", "mla_decode")):
        frame = _attention_frame(folder, name) if folder else None
        if frame is None:
            continue
        keys = ["kv_cache_dtype", "batch_size", "num_heads"]
        frame = thin(stand_in_bf16(fastest(frame, keys + ["kv_len"]), keys[1:], op), keys, "kv_len")
        device = _device(frame)
        for r in frame.itertuples():
            kv = KV_DTYPES[r.kv_cache_dtype]
            prefill = op.endswith("prefill")
            if prefill:
                cost, kv_heads, head_dim = _attention_cost(op, r.batch_size, r.num_heads, r.num_heads, r.kv_len,
                                                           MLA_QK, MLA_V, kv), r.num_heads, MLA_QK
            else:
                latent = MLA_LATENT + MLA_ROPE
                cost, kv_heads, head_dim = _attention_cost(op, r.batch_size, r.num_heads, 1, r.kv_len, latent,
                                                           MLA_LATENT, kv, latent), 1, latent
            rows.append(row(gpu, device, framework, "attention", op, "bf16", cost, r.seconds,
                            src.provenance(folder, name, r.kernel_source), batch=r.batch_size,
                            q_len=r.kv_len if prefill else 1, kv_len=r.kv_len, heads=r.num_heads,
                            kv_heads=kv_heads, head_dim=head_dim, kv_dtype=kv))
    return rows


def moe_cost(tokens, hidden, inter, experts, top_k, tp, ep, weight: str, act: str) -> f.Cost:
    """The engine's expert GEMMs (gate, up, SwiGLU, down) of one device at balanced routing, fused as the engine's
    estimate fuses them (roofline.estimate.step: gate and up read their input once): tokens x top_k / ep
    token-expert pairs over min(experts, tokens x top_k) / ep distinct experts, each 1/tp of the expert width."""
    rows, touched, width = tokens * top_k / ep, min(experts, tokens * top_k) / ep, inter / tp
    w, a = weight_bytes_per_element(weight, INT4_GROUP), DTYPE_BYTES[act]
    parts = (f.linear(rows, hidden, width, w, a, weight_sets=touched, out_width=A16),
             f.linear(rows, hidden, width, w, a, weight_sets=touched, out_width=A16),
             f.activation(rows, width, A16, ACTIVATION_FLOPS["silu"], True),
             f.linear(rows, width, hidden, w, a, weight_sets=touched, out_width=A16))
    total = {field: sum(getattr(part, field) for part in parts) for field in f.Cost._fields}
    return f.Cost(**{**total, "act_read": total["act_read"] - parts[1].act_read})


def moe_rows(gpu: Accelerator, folder, framework: str) -> list[dict]:
    """Expert blocks (MoE dtypes, gated kernels, routing by MOE_ROUTINGS) of tp x ep <= MOE_MAX_DEVICES devices; the
    min-latency kernel at MIN_LATENCY_TOKENS tokens at most."""
    frame = src.read_table(folder, "moe_perf") if folder else None
    if frame is None:
        return []
    keep = (frame["moe_dtype"].isin(list(MOE_DTYPES)) & frame["distribution"].isin(MOE_ROUTINGS)
            & ~frame["kernel_source"].str.contains("nongated")
            & ~((frame["kernel_source"] == MIN_LATENCY_SOURCE) & (frame["num_tokens"] > MIN_LATENCY_TOKENS))
            & (frame["moe_tp_size"] * frame["moe_ep_size"] <= MOE_MAX_DEVICES))
    frame = frame[keep].copy()
    frame["ours"] = frame["moe_dtype"].map(lambda name: "/".join(MOE_DTYPES[name]))  # several kernels per dtype
    keys = ["ours", "hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size"]
    # per shape and token count, the most preferred routing measured (every kernel of it, the fastest kept next)
    preference = frame["distribution"].map({name: rank for rank, name in enumerate(MOE_ROUTINGS)})
    frame = frame[preference == preference.groupby([frame[k] for k in keys + ["num_tokens"]]).transform("min")]
    frame = thin(fastest(frame, keys + ["num_tokens"]), keys, "num_tokens")
    rows, device = [], _device(frame)
    for r in frame.itertuples():
        weight, act = MOE_DTYPES[r.moe_dtype]
        dtype = matmul_dtype(weight, act)
        if dtype not in gpu.peak_flops_per_s:
            continue
        cost = moe_cost(r.num_tokens, r.hidden_size, r.inter_size, r.num_experts, r.topk, r.moe_tp_size,
                        r.moe_ep_size, weight, act)
        source = f"{src.provenance(folder, 'moe_perf', r.kernel_source)}, routing {r.distribution}"
        rows.append(row(gpu, device, framework, "moe", "moe_experts", dtype, cost, r.seconds, source, m=r.num_tokens,
                        n=r.inter_size // r.moe_tp_size, k=r.hidden_size, experts=r.num_experts, top_k=r.topk,
                        weight_dtype=weight, group_size=INT4_GROUP if weight == "int4" else 0,
                        span=int(r.moe_ep_size)))  # its expert-parallel degree (no link: the kernel moves no data)
    return rows


OUR_COLLECTIVE = {"all_reduce": "all_reduce", "all_gather": "all_gather", "alltoall": "all_to_all"}


def comm_rows(gpu: Accelerator, custom, nccl, framework: str) -> list[dict]:
    """Collectives by message size and GPU count: all-reduce from the framework's custom kernel (NCCL's for a GPU
    count it did not measure), all-gather and all-to-all from NCCL; 16-bit elements."""
    import pandas as pd

    parts = []
    if custom is not None and (frame := src.read_table(custom, "custom_allreduce_perf")) is not None:
        parts.append(frame.assign(folder=str(custom), table="custom_allreduce_perf"))
    if nccl is not None and (frame := src.read_table(nccl, "nccl_perf")) is not None:
        frame = frame[frame["nccl_dtype"] == "half"]
        parts.append(frame.assign(folder=str(nccl), table="nccl_perf"))
    if not parts:
        return []
    frame = pd.concat(parts, ignore_index=True)
    frame = frame[frame["op_name"].isin(list(OUR_COLLECTIVE)) & (frame["num_gpus"].astype(int) <= gpu.scaleup_domain)]
    custom_spans = set(frame.loc[frame["table"] == "custom_allreduce_perf", "num_gpus"])
    nccl_all_reduce = (frame["table"] == "nccl_perf") & (frame["op_name"] == "all_reduce")
    frame = frame[~(nccl_all_reduce & frame["num_gpus"].isin(custom_spans))]
    frame = thin(fastest(frame, ["op_name", "num_gpus", "message_size"]), ["op_name", "num_gpus"], "message_size")
    rows, device = [], _device(frame)
    from pathlib import Path

    for r in frame.itertuples():
        n, elements = int(r.num_gpus), int(r.message_size)
        op = OUR_COLLECTIVE[r.op_name]
        cost = COLLECTIVE_COSTS[op](1, elements, n, A16)
        rows.append(row(gpu, device, framework, "communication", op, "bf16", cost,
                        r.seconds, src.provenance(Path(r.folder), r.table, r.kernel_source), span=n, m=elements))
    return rows


def quantize_rows(gpu: Accelerator, folder, framework: str) -> list[dict]:
    """The fp8 quantize kernel (static scale): read [m, k] at 16 bits, write it at 8 bits; one multiply per
    element. No rows where the measured kernel is not a one-pass kernel (MULTI_PASS: SGLang's, at 8-15x its traffic
    bound on every device): it would stand for the norms and element-wise kernels, which run at one pass."""
    frame = src.read_table(folder, "scale_matrix_perf") if folder else None
    if frame is None:
        return []
    frame = frame[frame["m"].isin(list(GEMM_M))]
    frame = thin(fastest(frame, ["m", "k"]), ["k"], "m")
    rows, device = [], _device(frame)
    for r in frame.itertuples():
        elements = float(r.m) * float(r.k)
        cost = f.Cost(flops=elements, act_read=elements * A16, act_write=elements * DTYPE_BYTES["fp8"])
        rows.append(row(gpu, device, framework, "elementwise", "quantize_fp8", "bf16", cost, r.seconds,
                        src.provenance(folder, "scale_matrix_perf", r.kernel_source), m=r.m, n=r.k))
    large = [r["measured_s"] / r["bound_s"] for r in rows if r["bytes"] >= LARGE_BYTES]
    return [] if large and float(np.median(large)) > MULTI_PASS else rows
