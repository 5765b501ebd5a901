"""Treatments: what each optimization buys, computed by the engine (not prose).

Each treatment is a change of scenario (dtypes, attention kernel, batch) or a transformation of the operator graph
(fusion), re-evaluated with the same roofline. Memory-bound stages gain from fewer bytes (quantized weights or KV,
fusion, FlashAttention); compute-bound stages from more FLOP/s (fp8) or fewer FLOPs (FlashAttention's causal
skipping). Batching raises decode throughput (tokens/s), not latency. More devices (twice the tensor parallelism)
split every device's bytes and FLOPs and add collectives; overlapping communication hides the collectives under
the neighbouring kernels (an upper bound on what overlap buys, as fusion's). The "same workload on a faster GPU"
comparison needs every configured GPU and is a ratio of totals, done by the report.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from .analysis import aggregate, critical_batch, prepare, totals
from .collectives import crosses_domains
from .columns import TREATMENT_COLUMNS
from .dtypes import DTYPE_BYTES
from .errors import RooflineInputError
from .graph import Op, build_operators
from .hardware import Accelerator
from .models import ModelSpec
from .parallel import check_plan
from .roofline import dominant_bound
from .scenario import Scenario

#: operator classes whose activation traffic disappears when fused into the neighbouring kernel
FUSABLE_CLASSES = ("norm", "elementwise")


def fuse(ops: Sequence[Op]) -> list[Op]:
    """Perfect epilogue/prologue fusion: norms, residual adds, activations, RoPE, the KV-cache copy and the softmax
    read and write their activations in registers of the neighbouring GEMM or attention kernel, so their activation
    bytes vanish. FLOPs, weight bytes and the KV-cache write stay. An upper bound on what fusion can buy."""
    fused = []
    for op in ops:
        if op.op_class in FUSABLE_CLASSES or op.name.startswith("softmax"):
            op = op._replace(cost=op.cost._replace(act_read=0.0 * op.cost.act_read, act_write=0.0 * op.cost.act_write))
        fused.append(op)
    return fused


def hide_communication(ops: Sequence[Op]) -> list[Op]:
    """Perfect overlap: every collective runs while the neighbouring kernels compute, so its time vanishes from the
    step (its DRAM traffic too). An upper bound on what overlap (async TP, micro-batch ping-pong) can buy."""
    return [op for op in ops if op.op_class != "communication"]


def _evaluate(model, gpu, stage, scenario, transform: Callable[[Sequence[Op]], list[Op]] | None = None) -> dict:
    ops = build_operators(model, stage, scenario)
    if transform is not None:
        ops = transform(ops)
    sums = aggregate(model, gpu, stage, scenario, ops, scenario.batch, scenario.seq_len)
    return {k: float(v) for k, v in sums.items()}


def _largest_fitting_batch(model, gpu, stage, scenario, upper: int) -> int:
    """Largest batch <= upper whose footprint fits the device (0 if even batch 1 does not)."""
    low, high = 0, upper
    while low < high:
        mid = (low + high + 1) // 2
        if _evaluate(model, gpu, stage, replace(scenario, batch=mid))["fits"]:
            low = mid
        else:
            high = mid - 1
    return low


class _Table:
    """The treatment rows of one (model, gpu, stage) against the prepared scenario's totals (`base`)."""

    def __init__(self, model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario, base: dict):
        self.model, self.gpu, self.stage, self.scenario, self.base = model, gpu, stage, scenario, base
        self.rows: list[dict] = []

    def row(self, key, label, helps, result=None, note="", batch=None, throughput=False):
        """One treatment; `result` None = not applicable (`note` says why)."""
        base, applicable = self.base, result is not None
        t = result["t_s"] if applicable else math.nan
        tps = result["tokens_per_s"] if applicable else math.nan
        speedup = (tps / base["tokens_per_s"] if throughput else base["t_s"] / t) if applicable else math.nan
        share = result["memory_bound_share"] if applicable else math.nan
        self.rows.append({
            "model": self.model.key, "gpu": self.gpu.key, "stage": self.stage, "treatment": key, "label": label,
            "helps": helps, "applicable": applicable, "note": note, "baseline_t_s": base["t_s"], "t_s": t,
            "speedup": speedup, "baseline_tokens_per_s": base["tokens_per_s"], "tokens_per_s": tps,
            "baseline_memory_bound_share": base["memory_bound_share"], "memory_bound_share": share,
            "bound": dominant_bound(share, result["network_share"]) if applicable else "",
            "footprint_bytes": result["footprint_bytes"] if applicable else math.nan,
            "fits": bool(result["fits"]) if applicable else False,
            "batch": batch or self.scenario.batch, "usable_memory_bytes": base["usable_memory_bytes"],
        })

    def scenario_change(self, key, label, helps, skip_reason="", **changes):
        """A treatment that changes scenario fields (values valid by construction: no re-validation)."""
        if skip_reason:
            return self.row(key, label, helps, note=skip_reason)
        try:
            result = _evaluate(self.model, self.gpu, self.stage, replace(self.scenario, **changes))
        except ValueError as error:  # the device lacks a peak for the new compute dtype
            return self.row(key, label, helps, note=str(error))
        self.row(key, label, helps, result)


def treatment_table(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> list[dict]:
    """Rows (TREATMENT_COLUMNS): each treatment's predicted stage time, speed-up and new bound."""
    scenario = prepare(model, gpu, stage, scenario)
    ops = build_operators(model, stage, scenario)
    table = _Table(model, gpu, stage, scenario, totals(model, gpu, stage, scenario, ops))
    table.row("fusion", "fuse norms, residual adds, activations, RoPE, KV copy and softmax into neighbouring kernels",
              "memory", _evaluate(model, gpu, stage, scenario, fuse))
    _kernel_and_dtypes(table)
    _more_devices(table)
    if any(op.op_class == "communication" for op in ops):
        table.row("overlap_communication", "overlap the collectives with computation (all of their time hidden)",
                  "network", _evaluate(model, gpu, stage, scenario, hide_communication))
    else:
        table.row("overlap_communication", "overlap the collectives with computation", "network",
                  note="a single device: no collectives to hide")
    _batching(table)
    _batching(table, "fp8")  # an 8-bit KV cache priced at the batch it lets fit (int8 holds as many bytes)
    assert all(tuple(r) == TREATMENT_COLUMNS for r in table.rows)
    return table.rows


def _kernel_and_dtypes(table: _Table):
    """FlashAttention, weight-only int8/int4, an int8/fp8 KV cache, FP8 GEMMs."""
    scenario, gpu = table.scenario, table.gpu
    # FlashAttention helps both: no score traffic (bytes) and causal pairs only (FLOPs)
    table.scenario_change("flash_attention", "FlashAttention (fused, causal-only attention; no score matrix in DRAM)",
                          "both", "already flash" if scenario.attention == "flash" else "", attention="flash")
    w = DTYPE_BYTES[scenario.weight_dtype]
    for dtype, bits in (("int8", "W8A16"), ("int4", "W4A16")):
        table.scenario_change(f"weight_{dtype}", f"weight-only {dtype} quantization ({bits})", "memory",
                              "" if DTYPE_BYTES[dtype] < w else f"weights already {scenario.weight_dtype}",
                              weight_dtype=dtype, **_narrower_kept(scenario, dtype))
    c = DTYPE_BYTES[scenario.kv_dtype]
    for dtype in ("int8", "fp8"):
        table.scenario_change(f"kv_{dtype}", f"KV cache in {dtype}", "memory",
                              "" if DTYPE_BYTES[dtype] < c else f"KV cache already {scenario.kv_dtype}", kv_dtype=dtype)
    fp8_reason = ""
    if "fp8" not in gpu.peak_flops_per_s:
        fp8_reason = f"{gpu.key} has no fp8 peak"
    elif scenario.weight_dtype == "fp8" and scenario.act_dtype == "fp8":
        fp8_reason = "already fp8"
    # GEMM operands only: softmax, norms and residuals stay 16-bit, the KV cache stays at kv_dtype (rule in dtypes.py)
    table.scenario_change("fp8_compute", "FP8 GEMMs (W8A8-FP8: weights and GEMM inputs at the fp8 peak; the rest "
                          "stays 16-bit)", "both", fp8_reason, weight_dtype="fp8", act_dtype="fp8",
                          **_narrower_kept(scenario, "fp8"))


def _narrower_kept(scenario: Scenario, dtype: str) -> dict:
    """The expert and attention weights of a quantization treatment to `dtype`: the parts a checkpoint already
    keeps narrower stay as they are (gpt-oss's MXFP4 experts widened to 8 bits had shown as 0.66x 'speed-ups'),
    the rest take `dtype` ("" = as weight_dtype)."""
    return {name: value if value and DTYPE_BYTES[value] < DTYPE_BYTES[dtype] else ""
            for name, value in (("expert_weight_dtype", scenario.expert_weight_dtype),
                                ("attention_weight_dtype", scenario.attention_weight_dtype))}


#: the words of the more_devices label whose tensor-parallel group spans several scale-up domains (read by reports)
ACROSS_DOMAINS = "scale-up domains"


def _more_devices(table: _Table):
    """Twice the tensor parallelism of the configured plan (pipeline stages unchanged)."""
    plan = table.scenario.parallel
    doubled = replace(plan, tp=plan.tp * 2, ep=plan.ep * 2 if plan.attention_dp else plan.ep)
    reason = ""
    try:
        check_plan(table.model, table.gpu, doubled.validate())  # a new plan: checked here, once
    except RooflineInputError as error:
        reason = str(error)
    domain = table.gpu.scaleup_domain
    across = (f"; its tensor-parallel group spans {-(-doubled.tp // domain)} {ACROSS_DOMAINS} of {domain}"
              if crosses_domains(table.gpu, doubled.tp) else "")
    table.scenario_change("more_devices", f"twice the tensor parallelism: {doubled.devices} devices "
                          f"({doubled.describe()}){across}", "both", reason, parallel=doubled)


def _batching(table: _Table, kv_dtype: str | None = None):
    """Decode batched up to the critical batch, as far as memory allows (throughput against the configured batch);
    with `kv_dtype`, the same with the KV cache in that dtype: a narrower cache lets a larger batch fit, which is
    where it pays (at the configured batch 1 it barely moves a step's time)."""
    model, gpu, stage = table.model, table.gpu, table.stage
    key = f"batching_kv_{kv_dtype}" if kv_dtype else "batching"
    label = "batch decode up to the critical batch (weights read once per step for every sequence)"
    if kv_dtype:
        label = f"batch decode up to the critical batch with the KV cache in {kv_dtype}"
    if kv_dtype and DTYPE_BYTES[kv_dtype] >= DTYPE_BYTES[table.scenario.kv_dtype]:
        return table.row(key, label, "memory", note=f"KV cache already {table.scenario.kv_dtype}")
    scenario = replace(table.scenario, kv_dtype=kv_dtype) if kv_dtype else table.scenario
    if stage != "decode":
        return table.row(key, label, "memory",
                         note=f"prefill already has {scenario.batch * scenario.seq_len} token rows per GEMM")
    target = critical_batch(model, gpu, scenario)
    target = int(target) if math.isfinite(target) else 1 << 12
    fitting = _largest_fitting_batch(model, gpu, stage, scenario, target)
    if fitting == 0:
        return table.row(key, label, "memory",
                         note=f"even batch 1 does not fit in {scenario.memory_utilization:.0%} of "
                              f"{gpu.memory_bytes / 2**30:.4g} GiB per device")
    if scenario.batch >= target:
        return table.row(key, label, "memory",
                         note=f"batch {scenario.batch} is already at or above the critical batch ({target})")
    if fitting <= scenario.batch:
        return table.row(key, label, "memory",
                         note=f"batch {scenario.batch} is already the largest that fits ({fitting}); the critical "
                              f"batch is {target}")
    result = _evaluate(model, gpu, stage, replace(scenario, batch=fitting))
    note = (f"critical batch {target}" + ("" if fitting == target else f"; memory caps the batch at {fitting}"))
    table.row(key, f"{label}: batch {fitting}", "memory", result, note=note, batch=fitting, throughput=True)
