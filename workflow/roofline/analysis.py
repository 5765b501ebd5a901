"""Apply the roofline to an operator graph: per-operator rows and totals for (model, gpu, stage, scenario).

T_compute = FLOPs / P, T_memory = bytes / BW, T = max of the two (a lower bound on time: perfect overlap of
compute and memory inside an operator, none between operators, no launch overhead), attainable = min(P, AI x BW),
bound = compute if T_compute > T_memory else memory (the same comparison as AI > P / BW).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .dtypes import DTYPE_BYTES, matmul_dtype, peak_dtype, weight_bytes_per_element
from .graph import Op, attention_groups, build_operators
from .hardware import Accelerator
from .models import ModelSpec, kv_elements_per_token, parameter_counts, routed_expert_params
from .columns import TOTAL_COLUMNS
from .errors import RooflineInputError
from .scenario import Scenario, check_context, check_stage

NAN = float("nan")


def required_peak_dtypes(scenario: Scenario) -> dict[str, str]:
    """{dtype: why} for every dtype whose peak the scenario computes at (rule in roofline.dtypes): the weight
    GEMMs', attention's (KV x activation) and the activation dtype of the non-matmul operators. `scenario` has
    a concrete weight dtype (Scenario.for_model resolves 'native')."""
    needs = {matmul_dtype(scenario.weight_dtype, scenario.act_dtype): "weight GEMMs (weight_dtype x act_dtype)"}
    needs.setdefault(matmul_dtype(scenario.expert_dtype, scenario.act_dtype),
                     "expert GEMMs (expert_weight_dtype x act_dtype)")
    needs.setdefault(matmul_dtype(scenario.kv_dtype, scenario.act_dtype), "attention (kv_dtype x act_dtype)")
    needs.setdefault(peak_dtype(scenario.act_dtype), "norms and element-wise operators (act_dtype)")
    return needs


def check_device_dtypes(gpu: Accelerator, scenario: Scenario) -> None:
    """Refuse a device that publishes no peak for a dtype the scenario computes at, naming the scenario fields."""
    for dtype, why in required_peak_dtypes(scenario).items():
        if dtype not in gpu.peak_flops_per_s:
            have = ", ".join(gpu.peak_flops_per_s) or "none"
            hint = (f"try weight_dtype/act_dtype/kv_dtype {next(iter(gpu.peak_flops_per_s))}"
                    if gpu.peak_flops_per_s else "add its peak_tflops")
            raise RooflineInputError(
                f"gpu '{gpu.key}' has no {dtype} peak, which the {why} need (weight_dtype={scenario.weight_dtype}, "
                f"act_dtype={scenario.act_dtype}, kv_dtype={scenario.kv_dtype}); it publishes: {have}; {hint}")


def check_inputs(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> None:
    """All checks that need model, device, stage and scenario together (one-line errors)."""
    check_stage(stage)
    check_context(model, stage, scenario)
    check_device_dtypes(gpu, scenario.for_model(model))


def op_row(model_key: str, gpu: Accelerator, stage: str, op: Op) -> dict:
    """The per-operator record (OP_COLUMNS + compute_dtype) for one instance of `op` on `gpu`."""
    c = op.cost
    nbytes = c.bytes
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
    check_inputs(model, gpu, stage, scenario)
    return [op_row(model.key, gpu, stage, op) for op in build_operators(model, stage, scenario)]


def kv_cache_bytes(model: ModelSpec, stage: str, scenario: Scenario, batch=None, seq_len=None):
    """KV cache of the batch after the stage: prefill S tokens, decode S + 1 tokens per sequence (windowed layers
    keep at most W: a rolling buffer; chunked layers the current chunk, at most Ck). Linear-attention layers hold
    a fixed state instead (linear_state_elements). `batch`/`seq_len` override the scenario's and may be arrays."""
    B = scenario.batch if batch is None else batch
    S = scenario.seq_len if seq_len is None else seq_len
    tokens = S if stage == "prefill" else S + 1
    c = DTYPE_BYTES[scenario.kv_dtype]
    per_token_layer = kv_elements_per_token(model, scenario.mla_mode) * c
    total = model.linear_layers * linear_state_elements(model) * c
    for _suffix, window, count in attention_groups(model):
        kept = tokens if window is None else np.minimum(tokens, window)
        total = total + count * kept * per_token_layer
    if model.chunked_layers:
        total = total + model.chunked_layers * np.minimum(tokens, model.attention_chunk) * per_token_layer
    return B * total


def linear_state_elements(model: ModelSpec) -> int:
    """Elements of one sequence's fixed state in one linear-attention layer: the [Hv, dk, dv] delta-rule state and
    the conv state (the last K-1 inputs of the 2 Hk dk + Hv dv conv channels)."""
    m = model
    channels = 2 * m.linear_key_width + m.linear_value_width
    return m.linear_v_heads * m.linear_k_dim * m.linear_v_dim + channels * (m.linear_conv_kernel - 1)


def weight_bytes(model: ModelSpec, scenario: Scenario) -> float:
    """All weights resident in memory (total parameters, every expert): routed experts at the experts' dtype, the
    rest at the weight dtype (int4 with its group scales)."""
    scenario = scenario.for_model(model)
    experts = routed_expert_params(model)
    return ((parameter_counts(model)[0] - experts) * weight_bytes_per_element(scenario.weight_dtype,
                                                                               scenario.weight_group_size)
            + experts * weight_bytes_per_element(scenario.expert_dtype, scenario.weight_group_size))


def aggregate(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario, ops: Sequence[Op], B, S) -> dict:
    """Sums over operators x count, footprint and fit. Works on scalars or NumPy arrays of B/S (sweeps), hence
    np.maximum/np.where; `ops` must come from build_operators with the same B and S."""
    bw = gpu.bandwidth_bytes_per_s
    vector = isinstance(B, np.ndarray) or isinstance(S, np.ndarray)
    maximum = np.maximum if vector else max  # NumPy on Python floats costs ~1 us a call: keep scalars scalar
    flops = nbytes = t_compute = t_memory = t = t_memory_bound = 0.0
    activations = 0.0
    peaks = {dtype: gpu.peak(dtype) for dtype in {op.compute_dtype for op in ops}}  # one lookup per dtype
    for _name, _cls, n, (op_flops, *op_bytes_by_kind), dtype in ops:
        op_bytes = sum(op_bytes_by_kind)
        tc, tm = op_flops / peaks[dtype], op_bytes / bw
        op_t = maximum(tc, tm)
        flops, nbytes = flops + n * op_flops, nbytes + n * op_bytes
        t_compute, t_memory, t = t_compute + n * tc, t_memory + n * tm, t + n * op_t
        t_memory_bound = t_memory_bound + n * (np.where(tc > tm, 0.0, op_t) if vector else (tc <= tm) * op_t)
        _weight, act_read, act_write, _kv_read, _kv_write = op_bytes_by_kind
        activations = maximum(activations, act_read + act_write)
    prefill = stage == "prefill"
    weights = weight_bytes(model, scenario)
    kv = kv_cache_bytes(model, stage, scenario, B, S)
    footprint = weights + kv + activations
    return {
        "flops": flops, "bytes": nbytes, "intensity": flops / nbytes, "t_compute_s": t_compute,
        "t_memory_s": t_memory, "t_s": t, "tokens_per_s": (B * S if prefill else B) / t,
        "memory_bound_share": t_memory_bound / t, "compute_utilization": t_compute / t,
        "weight_bytes": weights, "kv_cache_bytes": kv, "activation_bytes": activations,
        "footprint_bytes": footprint, "fits": footprint <= gpu.memory_bytes,
    }


def totals(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario, ops: Sequence[Op] | None = None) -> dict:
    """Totals for one (model, gpu, stage, scenario) in TOTAL_COLUMNS order (Python scalars). `ops` (from
    build_operators, already checked by the caller) saves rebuilding the graph."""
    if ops is None:
        check_inputs(model, gpu, stage, scenario)
        ops = build_operators(model, stage, scenario)
    scenario = scenario.for_model(model)
    sums = aggregate(model, gpu, stage, scenario, ops, scenario.batch, scenario.seq_len)
    total_params, active_params = parameter_counts(model)
    prefill = stage == "prefill"
    t = float(sums["t_s"])
    result = {"model": model.key, "gpu": gpu.key, "stage": stage}
    for name in ("flops", "bytes", "intensity", "t_compute_s", "t_memory_s", "t_s"):
        result[name] = float(sums[name])
    result.update({
        "ttft_s": t if prefill else NAN, "tpot_s": NAN if prefill else t,
        "tokens_per_s": float(sums["tokens_per_s"]),
        "memory_bound_share": float(sums["memory_bound_share"]),
        "compute_utilization": float(sums["compute_utilization"]),
        "weight_bytes": float(sums["weight_bytes"]), "kv_cache_bytes": float(sums["kv_cache_bytes"]),
        "activation_bytes": float(sums["activation_bytes"]), "footprint_bytes": float(sums["footprint_bytes"]),
        "memory_bytes": gpu.memory_bytes, "fits": bool(sums["fits"]),
        "total_params": float(total_params), "active_params": float(active_params),
        "ridge_flops_per_byte": gpu.ridge(matmul_dtype(scenario.weight_dtype, scenario.act_dtype)),
        "critical_batch": critical_batch(model, gpu, scenario),
    })
    assert tuple(result) == TOTAL_COLUMNS
    return result


def analyze(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> tuple[list[dict], dict]:
    """(per-operator rows, totals) for one (model, gpu, stage, scenario)."""
    check_inputs(model, gpu, stage, scenario)
    ops = build_operators(model, stage, scenario)
    rows = [op_row(model.key, gpu, stage, op) for op in ops]
    return rows, totals(model, gpu, stage, scenario, ops)


def _decode_gemm_intensity(model: ModelSpec, scenario: Scenario, batch: int) -> float:
    """FLOPs / bytes of all weight GEMMs of one decode step at `batch` (attention excluded: its AI stays ~1)."""
    flops = nbytes = 0.0
    for op in build_operators(model, "decode", scenario, batch=batch):
        if op.op_class == "gemm":
            flops += op.cost.flops * op.count
            nbytes += op.cost.bytes * op.count
    return flops / nbytes


def critical_batch(model: ModelSpec, gpu: Accelerator, scenario: Scenario) -> float:
    """Smallest decode batch at which the weight GEMMs, taken together, reach the ridge and turn compute-bound.

    For a dense model this is ~ ridge x w / 2 (w = bytes per weight): 2*B*K*N FLOPs over ~K*N*w bytes. MoE layers
    need more, since a bigger batch also touches more experts. NaN when not reached below 2^20.
    """
    scenario = scenario.for_model(model)
    ridge = gpu.ridge(matmul_dtype(scenario.weight_dtype, scenario.act_dtype))
    # the weight GEMMs depend on the dtypes and on MoE routing / MLA mode only: cache on those
    key = (scenario.weight_dtype, scenario.act_dtype, scenario.expert_routing, scenario.mla_mode,
           scenario.expert_weight_dtype, scenario.weight_group_size)
    return _critical_batch(model, ridge, key)


@lru_cache(maxsize=4096)
def _critical_batch(model: ModelSpec, ridge: float, key: tuple, limit: int = 1 << 20) -> float:
    weight_dtype, act_dtype, expert_routing, mla_mode, expert_weight_dtype, group_size = key
    scenario = Scenario(batch=1, seq_len=1, weight_dtype=weight_dtype, act_dtype=act_dtype,
                        expert_routing=expert_routing, mla_mode=mla_mode, expert_weight_dtype=expert_weight_dtype,
                        weight_group_size=group_size)
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
