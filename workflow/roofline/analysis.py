"""Apply the roofline to an operator graph: per-operator rows and totals for (model, gpu, stage, scenario).

T_compute = FLOPs / P, T_memory = bytes / BW, T = max of the two (a lower bound on time: perfect overlap of
compute and memory inside an operator, none between operators, no launch overhead), attainable = min(P, AI x BW),
bound = compute if T_compute > T_memory else memory (the same comparison as AI > P / BW).
"""
from __future__ import annotations

import math

from .dtypes import DTYPE_BYTES, matmul_dtype
from .graph import Op, build_operators
from .hardware import Accelerator
from .models import ModelSpec, kv_elements_per_token, parameter_counts
from .columns import OP_COLUMNS, TOTAL_COLUMNS
from .scenario import Scenario, check_stage
from .graph import attention_groups

NAN = float("nan")


def op_row(model_key: str, gpu: Accelerator, stage: str, op: Op) -> dict:
    """The per-operator record (OP_COLUMNS + compute_dtype) for one instance of `op` on `gpu`."""
    c = op.cost
    nbytes = c.weight + c.act_read + c.act_write + c.kv_read + c.kv_write
    peak = gpu.peak(op.compute_dtype)
    bw = gpu.bandwidth_bytes_per_s
    t_compute, t_memory = c.flops / peak, nbytes / bw
    intensity = c.flops / nbytes if nbytes else math.inf
    return {
        "model": model_key, "gpu": gpu.key, "stage": stage, "op": op.name, "op_class": op.op_class,
        "count": op.count, "flops": float(c.flops), "bytes_weight": float(c.weight),
        "bytes_act_read": float(c.act_read), "bytes_act_write": float(c.act_write), "bytes_kv_read": float(c.kv_read),
        "bytes_kv_write": float(c.kv_write), "bytes": float(nbytes), "intensity": float(intensity),
        "peak_flops_per_s": peak, "bandwidth_bytes_per_s": bw,
        "attainable_flops_per_s": float(min(peak, intensity * bw)),
        "t_compute_s": float(t_compute), "t_memory_s": float(t_memory), "t_s": float(max(t_compute, t_memory)),
        "bound": "compute" if t_compute > t_memory else "memory", "compute_dtype": op.compute_dtype,
    }


def operator_table(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> list[dict]:
    """Per-operator rows (one per operator, values per single instance, with its count)."""
    check_stage(stage)
    return [op_row(model.key, gpu, stage, op) for op in build_operators(model, stage, scenario)]


def kv_cache_bytes(model: ModelSpec, stage: str, scenario: Scenario) -> float:
    """KV cache of the batch after the stage: prefill S tokens, decode S + 1 tokens per sequence (windowed layers
    keep at most W)."""
    tokens = scenario.seq_len if stage == "prefill" else scenario.seq_len + 1
    per_token_layer = kv_elements_per_token(model, scenario.mla_mode) * DTYPE_BYTES[scenario.kv_dtype]
    total = 0.0
    for _suffix, window, count in attention_groups(model):
        kept = tokens if window is None else min(tokens, window)
        total += count * kept * per_token_layer
    return scenario.batch * total


def weight_bytes(model: ModelSpec, scenario: Scenario) -> float:
    """All weights resident in memory (total parameters, every expert) at the weight dtype."""
    return parameter_counts(model)[0] * DTYPE_BYTES[scenario.weight_dtype]


def totals(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario, rows: list[dict] | None = None) -> dict:
    """Totals for one (model, gpu, stage, scenario): sums over operators x count, footprint, fit, ridge."""
    if rows is None:
        rows = operator_table(model, gpu, stage, scenario)
    flops = sum(r["flops"] * r["count"] for r in rows)
    nbytes = sum(r["bytes"] * r["count"] for r in rows)
    t_compute = sum(r["t_compute_s"] * r["count"] for r in rows)
    t_memory = sum(r["t_memory_s"] * r["count"] for r in rows)
    t = sum(r["t_s"] * r["count"] for r in rows)
    t_memory_bound = sum(r["t_s"] * r["count"] for r in rows if r["bound"] == "memory")
    B, S = scenario.batch, scenario.seq_len
    weights = weight_bytes(model, scenario)
    kv = kv_cache_bytes(model, stage, scenario)
    activations = max(r["bytes_act_read"] + r["bytes_act_write"] for r in rows)
    footprint = weights + kv + activations
    total_params, active_params = parameter_counts(model)
    gemm_dtype = matmul_dtype(scenario.weight_dtype, scenario.act_dtype)
    prefill = stage == "prefill"
    result = {
        "model": model.key, "gpu": gpu.key, "stage": stage, "flops": flops, "bytes": nbytes,
        "intensity": flops / nbytes, "t_compute_s": t_compute, "t_memory_s": t_memory, "t_s": t,
        "ttft_s": t if prefill else NAN, "tpot_s": NAN if prefill else t,
        "tokens_per_s": (B * S if prefill else B) / t,
        "memory_bound_share": t_memory_bound / t, "compute_utilization": t_compute / t,
        "weight_bytes": weights, "kv_cache_bytes": kv, "activation_bytes": activations,
        "footprint_bytes": footprint, "memory_bytes": gpu.memory_bytes, "fits": bool(footprint <= gpu.memory_bytes),
        "total_params": float(total_params), "active_params": float(active_params),
        "ridge_flops_per_byte": gpu.ridge(gemm_dtype),
        "critical_batch": critical_batch(model, gpu, scenario),
    }
    assert tuple(result) == TOTAL_COLUMNS
    return result


def analyze(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> tuple[list[dict], dict]:
    """(per-operator rows, totals) for one (model, gpu, stage, scenario)."""
    rows = operator_table(model, gpu, stage, scenario)
    return rows, totals(model, gpu, stage, scenario, rows)


def _decode_gemm_intensity(model: ModelSpec, scenario: Scenario, batch: int) -> float:
    """FLOPs / bytes of all weight GEMMs of one decode step at `batch` (attention excluded: its AI stays ~1)."""
    flops = nbytes = 0.0
    for op in build_operators(model, "decode", scenario, batch=batch):
        if op.op_class == "gemm":
            flops += op.cost.flops * op.count
            nbytes += op.cost.bytes * op.count
    return flops / nbytes


def critical_batch(model: ModelSpec, gpu: Accelerator, scenario: Scenario, limit: int = 1 << 20) -> float:
    """Smallest decode batch at which the weight GEMMs, taken together, reach the ridge and turn compute-bound.

    For a dense model this is ~ ridge x w / 2 (w = bytes per weight): 2*B*K*N FLOPs over ~K*N*w bytes. MoE layers
    need more, since a bigger batch also touches more experts. NaN when not reached below `limit`.
    """
    ridge = gpu.ridge(matmul_dtype(scenario.weight_dtype, scenario.act_dtype))
    if _decode_gemm_intensity(model, scenario, limit) < ridge:
        return NAN
    low, high = 1, limit  # invariant: AI(high) >= ridge; AI grows with batch
    if _decode_gemm_intensity(model, scenario, low) >= ridge:
        return 1.0
    while high - low > 1:
        mid = (low + high) // 2
        if _decode_gemm_intensity(model, scenario, mid) >= ridge:
            high = mid
        else:
            low = mid
    return float(high)
