"""Apply the roofline to an operator graph: per-operator rows and totals for (model, gpu, stage, scenario).

T_compute = FLOPs / P, T_memory = bytes / BW, T_network = latency + network bytes / link bandwidth (communication
rows only, else 0), T = max of the three (a lower bound on time: perfect overlap of compute, memory and link
traffic inside an operator, none between operators, no launch overhead), attainable = min(P, AI x BW), bound = the
largest of the three (compute when T_compute > T_memory, i.e. AI > P / BW; network when the link dominates).

Deployments (roofline.engine.parallel): rows are one device's share; totals describe the deployment: its devices, the
busiest device's footprint against its usable memory (memory_utilization x capacity), and tokens/s of the whole
deployment and per device.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from .collectives import collective_kind, link_arrays, link_seconds, link_time, moved_bytes
from .columns import TOTAL_COLUMNS
from .dtypes import matmul_dtype, weight_bytes_per_element
from .errors import RooflineInputError
from .formulas import distinct_experts
from .graph import Op, build_operators
from .hardware import Accelerator
from .kv_cache import (  # noqa: F401 (kv_cache_bytes, kv_share_per_device, linear_state_elements: re-exported)
    kv_bytes_per_device,
    kv_cache_bytes,
    kv_share_per_device,
    linear_state_elements,
)
from .models import (
    ModelSpec,
    embedding_params,
    mixer_params,
    parameter_counts,
    routed_expert_params,
    router_params,
)
from .parallel import Parallel, check_plan, weight_params_per_device
from .parts import part_gemm, scenario_dtypes
from .roofline import bound_class, dominant_bound, roof_times
from .scenario import STAGES, Scenario, check_context, check_stage

NAN = float("nan")


def required_peak_dtypes(scenario: Scenario) -> dict[str, str]:
    """{dtype: why} for every dtype whose peak the scenario computes at (rules in roofline.engine.dtypes): the weight
    GEMMs', the experts' GEMMs, attention's (KV x activation), the non-matmul operators' (activations, 16 bits at
    least) and lm_head's (16 bits unless quantize_embeddings). `scenario` has a concrete weight dtype
    (Scenario.for_model resolves 'native')."""
    return dict(_required_peak_dtypes(scenario))


@lru_cache(maxsize=1024)
def _required_peak_dtypes(scenario: Scenario) -> tuple[tuple[str, str], ...]:
    dtypes = scenario_dtypes(scenario)
    named = dtypes.act16 in (scenario.act_dtype, scenario.kv_dtype, scenario.weight_dtype)
    act16 = "16-bit activations" + ("" if named else ", bf16 when no scenario dtype is 16-bit")
    needs = {dtypes.gemm: "weight GEMMs (weight_dtype x act_dtype)"}
    needs.setdefault(matmul_dtype(scenario.expert_dtype, scenario.act_dtype),
                     "expert GEMMs (expert_weight_dtype x act_dtype)")
    needs.setdefault(part_gemm(scenario, scenario.attention_weights_dtype)[0],
                     "attention projections (attention_weight_dtype)")
    needs.setdefault(dtypes.attention, f"attention (kv_dtype x {act16})")
    needs.setdefault(dtypes.act16, f"norms and element-wise operators ({act16})")
    needs.setdefault(dtypes.head, "lm_head (16 bits unless quantize_embeddings)")
    return tuple(needs.items())


def check_device_dtypes(gpu: Accelerator, scenario: Scenario) -> None:
    """Refuse a device that publishes no peak for a dtype the scenario computes at, naming the scenario fields."""
    for dtype, why in _required_peak_dtypes(scenario):  # cached: every prepare checks it
        if dtype not in gpu.peak_flops_per_s:
            have = ", ".join(gpu.peak_flops_per_s) or "none"
            # the other 16-bit float for a 16-bit one (bf16 for fp16: same width, same bytes), else the narrowest
            # float it computes (fp32 only where it has nothing narrower)
            sibling = {"fp16": ["bf16"], "bf16": ["fp16"]}.get(dtype, [])
            usable = [d for d in (*sibling, "fp8", "bf16", "fp16", "fp32") if d in gpu.peak_flops_per_s]
            hint = (f"try weight_dtype/act_dtype/kv_dtype {(usable or list(gpu.peak_flops_per_s))[0]}"
                    if gpu.peak_flops_per_s else "add its peak_tflops")
            raise RooflineInputError(
                f"gpu '{gpu.key}' has no {dtype} peak, which the {why} need (weight_dtype={scenario.weight_dtype}, "
                f"act_dtype={scenario.act_dtype}, kv_dtype={scenario.kv_dtype}); it publishes: {have}; {hint}")


def check_indexer_device(model: ModelSpec, gpu: Accelerator) -> None:
    """Refuse a sparse-attention model on a device without fp8: its indexer computes in fp8 whatever the scenario's
    dtypes (graph._indexer)."""
    if model.is_sparse_attention and "fp8" not in gpu.peak_flops_per_s:
        raise RooflineInputError(
            f"model '{model.key}': its sparse-attention indexer computes in fp8 (DeepGEMM's fp8 MQA logits, as vLLM, "
            f"SGLang and TensorRT-LLM run it), and gpu '{gpu.key}' publishes no fp8 peak (it publishes: "
            f"{', '.join(gpu.peak_flops_per_s) or 'none'}); choose an fp8-capable device")


def prepare(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> Scenario:
    """Check the inputs once (everything that needs model, device, stage and scenario together; one-line errors) and
    return the scenario with concrete dtypes (`weight_dtype: native` resolved for `model`) and a concrete plan
    (`parallel: auto` resolved among plans check_plan accepts that fit `stage`: the pipeline resolves one plan for
    all its stages first): what the functions below take without checking or resolving again."""
    scenario = scenario.for_model(model)
    check_stage(stage)
    check_context(model, stage, scenario)
    check_device_dtypes(gpu, scenario)
    check_indexer_device(model, gpu)
    if isinstance(scenario.parallel, Parallel):
        check_plan(model, gpu, scenario.parallel)
        return scenario
    return resolve_plan(model, gpu, scenario, (stage,))


def network_time(gpu: Accelerator, op: Op):
    """(link bandwidth [byte/s] or NaN, T_network [s]) of one instance of a collective (span > 1): its time on the
    device's links (roofline.engine.collectives: latency + bytes / bandwidth inside a domain, both links and the
    cut between domains across them) and the bandwidth its bytes moved at (the span's link inside a domain, the
    effective one across: T_network = latency + bytes / bandwidth holds); (NaN, 0) for every other operator."""
    if op.span <= 1:
        return NAN, 0.0
    return link_time(gpu, collective_kind(op.name), op.cost.network, op.span)


def op_times(gpu: Accelerator, op: Op, peak: float, nbytes, maximum=max) -> tuple:
    """(t_compute, t_memory, t_network, t) [s] of one instance of `op` on `gpu` at `peak` [FLOP/s], its DRAM bytes
    `nbytes` (op.cost.bytes, which the callers need too): roofline.engine.roofline applied to one operator, for
    op_row, aggregate and the sweeps. `maximum` is np.maximum for array-valued costs."""
    t_network = network_time(gpu, op)[1] if op.span > 1 else 0.0
    t_compute, t_memory, t = roof_times(op.cost.flops, nbytes, peak, gpu.bandwidth_bytes_per_s, t_network, maximum)
    return t_compute, t_memory, t_network, t


def devices_time(gpus, flops, nbytes, network, dtype: str, span: int, expand, kind: str = "all_reduce"):
    """The roofline bound t [s] of one operator (or kernel) on each device of `gpus` at once: op_times with the
    devices' peaks, bandwidths and links as arrays; `expand` lays a per-device vector out like the costs (a leading
    device axis, or each device's candidates side by side); `kind`: the collective a span > 1 runs."""
    peak = expand(np.array([gpu.peak(dtype) for gpu in gpus], dtype=float))
    bandwidth = expand(np.array([gpu.bandwidth_bytes_per_s for gpu in gpus], dtype=float))
    t = roof_times(flops, nbytes, peak, bandwidth, 0.0, np.maximum)[2]
    if span > 1:
        links = link_arrays(gpus, span)
        t = np.maximum(t, link_seconds(kind, network, span, tuple(expand(column) for column in links.T)))
    return t


def op_row(model_key: str, gpu: Accelerator, stage: str, op: Op) -> dict:
    """The per-operator record (OP_COLUMNS + compute_dtype) for one instance of `op` on `gpu`."""
    c = op.cost
    nbytes = c.bytes
    peak = gpu.peak(op.compute_dtype)
    bw = gpu.bandwidth_bytes_per_s
    t_compute, t_memory, t_network, t = op_times(gpu, op, peak, nbytes)
    link_bw = network_time(gpu, op)[0]
    moved = moved_bytes(gpu, collective_kind(op.name), c.network, op.span) if op.span > 1 else c.network
    intensity = c.flops / nbytes if nbytes else math.inf
    return {
        "model": model_key, "gpu": gpu.key, "stage": stage, "op": op.name, "op_class": op.op_class,
        "count": op.count, "flops": float(c.flops),
        **{column: float(value) for column, value in c.dram_bytes().items()},
        "bytes": float(nbytes), "intensity": float(intensity),
        "peak_flops_per_s": peak, "bandwidth_bytes_per_s": bw,
        "attainable_flops_per_s": float(min(peak, intensity * bw)),
        "t_compute_s": float(t_compute), "t_memory_s": float(t_memory), "t_s": float(t),
        "bound": bound_class(t_compute, t_memory, t_network), "bytes_network": float(moved),
        "network_bandwidth_bytes_per_s": float(link_bw), "t_network_s": float(t_network),
        "compute_dtype": op.compute_dtype,
    }


def operator_table(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> list[dict]:
    """Per-operator rows (one per operator, values per single instance, with its count)."""
    scenario = prepare(model, gpu, stage, scenario)
    return [op_row(model.key, gpu, stage, op) for op in build_operators(model, stage, scenario)]


class WeightWidths(NamedTuple):
    """Bytes per parameter of each part of the weights (int4 with its group scales)."""

    block: float  # the transformer blocks' other weights (dense MLPs, shared experts, norms)
    expert: float  # the routed experts
    table: float  # the embedding table and lm_head (16 bits unless quantize_embeddings)
    attention: float  # the attention blocks' projections
    router: float  # the MoE routers (16 bits at least)


def _weight_widths(model: ModelSpec, scenario: Scenario) -> WeightWidths:
    scenario = scenario.for_model(model)
    group, dtypes = scenario.weight_group_size, scenario_dtypes(scenario)
    return WeightWidths(*(weight_bytes_per_element(dtype, group) for dtype in (
        scenario.weight_dtype, scenario.expert_dtype, dtypes.head_weight, scenario.attention_weights_dtype,
        dtypes.router_weight)))


@lru_cache(maxsize=4096)
def weight_bytes(model: ModelSpec, scenario: Scenario) -> float:
    """All weights resident in memory (total parameters, every expert), each part at its width (WeightWidths)."""
    widths = _weight_widths(model, scenario)
    parts = {"expert": routed_expert_params(model), "table": embedding_params(model),
             "attention": mixer_params(model), "router": router_params(model)}
    rest = parameter_counts(model)[0] - sum(parts.values())
    return rest * widths.block + sum(count * getattr(widths, part) for part, count in parts.items())


@lru_cache(maxsize=4096)
def weight_bytes_per_device(model: ModelSpec, scenario: Scenario) -> float:
    """Weights the busiest device of the deployment holds (roofline.engine.parallel.weight_params_per_device), each part
    at its own width."""
    w = _weight_widths(model, scenario)
    return weight_params_per_device(model, scenario.parallel, w.block, w.table, w.expert, w.attention, w.router)


def aggregate(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario, ops: Sequence[Op], B, S) -> dict:
    """Sums over operators x count, footprint and fit. Works on scalars or NumPy arrays of B/S (sweeps), hence
    np.maximum/np.where; `ops` must come from build_operators with the same B and S."""
    vector = isinstance(B, np.ndarray) or isinstance(S, np.ndarray)
    maximum = np.maximum if vector else max  # NumPy on Python floats costs ~1 us a call: keep scalars scalar
    flops = nbytes = t_compute = t_memory = t_network = t = t_memory_bound = t_communication = 0.0
    activations = 0.0
    peaks = {dtype: gpu.peak(dtype) for dtype in {op.compute_dtype for op in ops}}  # one lookup per dtype
    for op in ops:
        n, c = op.count, op.cost
        op_bytes = c.bytes
        tc, tm, tn, op_t = op_times(gpu, op, peaks[op.compute_dtype], op_bytes, maximum)
        collective = op.span > 1
        if collective:
            t_network, t_communication = t_network + n * tn, t_communication + n * op_t
        flops, nbytes = flops + n * c.flops, nbytes + n * op_bytes
        t_compute, t_memory, t = t_compute + n * tc, t_memory + n * tm, t + n * op_t
        memory_bound = not collective and tm >= tc
        t_memory_bound = t_memory_bound + n * (np.where(memory_bound, op_t, 0.0) if vector else memory_bound * op_t)
        activations = maximum(activations, c.act_read + c.act_write)
    prefill = stage == "prefill"
    plan = scenario.parallel
    weights = weight_bytes(model, scenario)
    kv = kv_cache_bytes(model, stage, scenario, B, S)
    weights_device = weight_bytes_per_device(model, scenario)
    kv_device = kv_bytes_per_device(model, scenario, B, kv)
    footprint = weights_device + kv_device + activations
    usable = scenario.memory_utilization * gpu.memory_bytes
    tokens_per_s = (B * S if prefill else B) / t
    return {
        "flops": flops, "bytes": nbytes, "intensity": flops / nbytes, "t_compute_s": t_compute,
        "t_memory_s": t_memory, "t_network_s": t_network, "t_s": t, "tokens_per_s": tokens_per_s,
        "tokens_per_s_per_device": tokens_per_s / plan.devices,
        "memory_bound_share": t_memory_bound / t, "compute_utilization": t_compute / t,
        "network_share": t_communication / t,
        "weight_bytes": weights, "kv_cache_bytes": kv, "activation_bytes": activations,
        "weight_bytes_per_device": weights_device, "kv_cache_bytes_per_device": kv_device,
        "footprint_bytes": footprint, "usable_memory_bytes": usable, "fits": footprint <= usable,
    }


def totals(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario, ops: Sequence[Op] | None = None) -> dict:
    """Totals for one (model, gpu, stage, scenario) in TOTAL_COLUMNS order (Python scalars). With `ops` (the
    build_operators of a scenario `prepare` returned, given as `scenario`) the inputs are neither checked nor
    resolved again and the graph is not rebuilt."""
    if ops is None:
        scenario = prepare(model, gpu, stage, scenario)
        ops = build_operators(model, stage, scenario)
    sums = aggregate(model, gpu, stage, scenario, ops, scenario.batch, scenario.seq_len)
    total_params, active_params = parameter_counts(model)
    prefill = stage == "prefill"
    t = float(sums["t_s"])
    crit = critical_batch(model, gpu, scenario)
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
        "critical_batch": crit, "critical_tokens_per_expert": _tokens_per_expert(model, scenario, crit),
    })
    plan = scenario.parallel
    result.update({
        "devices": plan.devices, "tp": plan.tp, "pp": plan.pp, "ep": plan.ep, "attention_dp": plan.attention_dp,
        "deployment": deployment_label(gpu, plan),
        "weight_bytes_per_device": float(sums["weight_bytes_per_device"]),
        "kv_cache_bytes_per_device": float(sums["kv_cache_bytes_per_device"]),
        "usable_memory_bytes": float(sums["usable_memory_bytes"]),
        "tokens_per_s_per_device": float(sums["tokens_per_s_per_device"]),
        "t_network_s": float(sums["t_network_s"]), "network_share": float(sums["network_share"]),
        "bound": dominant_bound(float(sums["memory_bound_share"]), float(sums["network_share"])),
    })
    assert tuple(result) == TOTAL_COLUMNS
    return result


def deployment_label(gpu: Accelerator, plan: Parallel) -> str:
    """"1 x H100 SXM5 80GB" or "4 x H100 SXM5 80GB, TP 4": what every table and figure names the setup by."""
    return f"{plan.devices} x {gpu.name}" + ("" if plan.devices == 1 else f", {plan.describe()}")


#: tensor-parallel degrees `auto` tries inside one scale-up domain, and the pipeline depths it tries beyond it
AUTO_TP = (1, 2, 4, 8, 16, 32, 64)
AUTO_PP = (1, 2, 4, 8, 16, 32, 64)


def resolve_plan(model: ModelSpec, gpu: Accelerator, scenario: Scenario, stages=STAGES) -> Scenario:
    """`scenario` with `parallel: auto` replaced by a concrete plan (an explicit plan is returned unchanged).

    auto: the smallest power-of-two tp inside one scale-up domain (dividing the attention heads, compatible with
    the KV heads) whose busiest device fits its usable memory in every stage; if even the largest such tp does
    not fit, pipeline stages across domains (pp = 2, 4, ...) at that tp. ep = 1 (tensor-parallel experts). When
    nothing up to 64 stages fits, the largest plan tried is returned and its totals say it does not fit. Every plan
    returned passes check_plan: the tp candidates are checked, the pipeline ones keep a checked tp, fit the layers
    and have a scale-out network (callers need not check it again)."""
    check_indexer_device(model, gpu)
    if scenario.parallel != "auto":
        return scenario
    candidates = []
    for tp in AUTO_TP:
        if tp > max(1, gpu.scaleup_domain) or (tp > 1 and not gpu.scaleup_bandwidth_bytes_per_s):
            break
        try:
            check_plan(model, gpu, Parallel(tp=tp))
        except RooflineInputError:
            continue
        candidates.append(Parallel(tp=tp))
    widest = candidates[-1].tp if candidates else 1
    if gpu.scaleout_bandwidth_bytes_per_s:
        candidates += [Parallel(tp=widest, pp=pp) for pp in AUTO_PP[1:] if pp <= model.n_layers]
    for plan in candidates:
        planned = replace(scenario, parallel=plan)
        if all(_fits(model, gpu, stage, planned) for stage in stages):
            return planned
    return replace(scenario, parallel=candidates[-1] if candidates else Parallel())


def _fits(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> bool:
    ops = build_operators(model, stage, scenario)
    return bool(aggregate(model, gpu, stage, scenario, ops, scenario.batch, scenario.seq_len)["fits"])


def analyze(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> tuple[list[dict], dict]:
    """(per-operator rows, totals) for one (model, gpu, stage, scenario): the bounds only (roofline.estimate adds
    the expected times beside them); `parallel: auto` is resolved first."""
    scenario = prepare(model, gpu, stage, scenario)
    ops = build_operators(model, stage, scenario)
    return [op_row(model.key, gpu, stage, op) for op in ops], totals(model, gpu, stage, scenario, ops)


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
           scenario.quantize_embeddings, scenario.expert_weight_dtype, scenario.weight_group_size,
           scenario.attention_weight_dtype)
    return _critical_batch(model, ridge, key)


@lru_cache(maxsize=4096)
def _critical_batch(model: ModelSpec, ridge: float, key: tuple, limit: int = 1 << 20) -> float:
    weight_dtype, act_dtype, expert_routing, mla_mode, quantize_embeddings, expert_weight_dtype, group_size, \
        attention_weight_dtype = key
    scenario = Scenario(batch=1, seq_len=1, weight_dtype=weight_dtype, act_dtype=act_dtype,
                        expert_routing=expert_routing, mla_mode=mla_mode, quantize_embeddings=quantize_embeddings,
                        expert_weight_dtype=expert_weight_dtype, weight_group_size=group_size,
                        attention_weight_dtype=attention_weight_dtype)
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


def critical_tokens_per_expert(model: ModelSpec, gpu: Accelerator, scenario: Scenario) -> float:
    """The MoE critical batch stated per expert: tokens reaching one routed expert at the critical decode batch,
    batch x top_k / experts touched (formulas.distinct_experts under the scenario's routing). NaN for a dense
    model (its critical batch already counts the tokens of its one MLP) and when the ridge is never reached."""
    return _tokens_per_expert(model, scenario, critical_batch(model, gpu, scenario))


def _tokens_per_expert(model: ModelSpec, scenario: Scenario, batch: float) -> float:
    if not model.is_moe or not math.isfinite(batch):
        return NAN
    return batch * model.top_k / float(distinct_experts(batch, model.n_experts, model.top_k, scenario.expert_routing))
