"""Sweeps: totals along the batch or the sequence-length axis, evaluated in one vectorized pass.

The operator formulas accept NumPy arrays, so a sweep of N points builds the operator graph once with array-valued
B or S and sums the roofline times over operators: thousands of scenarios in milliseconds.
"""
from __future__ import annotations

import numpy as np

from .analysis import aggregate, critical_batch, op_times
from .columns import SWEEP_COLUMNS
from .graph import build_operators
from .hardware import Accelerator
from .models import ModelSpec
from .scenario import Scenario, longest_seq_len

#: decode batch sizes of the batch sweep (1 to 512, powers of two)
BATCH_POINTS = tuple(2**i for i in range(10))
#: sequence lengths of the sequence sweep (128 to 131072, powers of two; capped at the model's context)
SEQ_POINTS = tuple(2**i for i in range(7, 18))


def evaluate_many(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario, batch=None, seq_len=None):
    """Totals for many scenario points at once: `batch` and/or `seq_len` are arrays (broadcast together).

    Returns a dict of arrays: the keys of analysis.aggregate plus gemm_intensity, attention_intensity and
    attention_time_share.
    """
    B = np.asarray(scenario.batch if batch is None else batch, dtype=float)
    S = np.asarray(scenario.seq_len if seq_len is None else seq_len, dtype=float)
    B, S = np.broadcast_arrays(B, S)
    ops = build_operators(model, stage, scenario, batch=B, seq_len=S)
    sums = aggregate(model, gpu, stage, scenario, ops, B, S)
    by_class: dict[str, list] = {"gemm": [0.0, 0.0, 0.0], "attention": [0.0, 0.0, 0.0]}
    for op in ops:
        if op.op_class in by_class:
            acc, c = by_class[op.op_class], op.cost
            acc[0] = acc[0] + op.count * c.flops
            acc[1] = acc[1] + op.count * c.bytes
            acc[2] = acc[2] + op.count * op_times(gpu, op, gpu.peak(op.compute_dtype), c.bytes, np.maximum)[3]
    sums["gemm_intensity"] = by_class["gemm"][0] / by_class["gemm"][1]
    sums["attention_intensity"] = by_class["attention"][0] / by_class["attention"][1]
    sums["attention_time_share"] = by_class["attention"][2] / sums["t_s"]
    return {k: np.broadcast_to(v, B.shape) for k, v in sums.items()}


def sweep_table(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> list[dict]:
    """Rows (SWEEP_COLUMNS) of the batch sweep and the sequence-length sweep for one (model, gpu, stage)."""
    rows: list[dict] = []
    longest = longest_seq_len(model, stage) or SEQ_POINTS[-1]
    seq_points = [s for s in SEQ_POINTS if s <= longest] or [scenario.seq_len]
    if seq_points[-1] < longest < SEQ_POINTS[-1]:  # the model's own end (a decode step: one token short of it),
        seq_points.append(longest)  # so the decode curve is not a power of two shorter than the prefill one
    crit = critical_batch(model, gpu, scenario)
    for axis, points in (("batch", BATCH_POINTS), ("seq_len", seq_points)):
        values = np.array(points, dtype=float)
        kw = {"batch": values} if axis == "batch" else {"seq_len": values}
        result = evaluate_many(model, gpu, stage, scenario, **kw)
        for i, point in enumerate(points):
            rows.append({
                "model": model.key, "gpu": gpu.key, "stage": stage, "sweep": axis,
                "batch": int(point if axis == "batch" else scenario.batch),
                "seq_len": int(point if axis == "seq_len" else scenario.seq_len),
                **{name: float(result[name][i]) for name in (
                    "t_s", "tokens_per_s", "memory_bound_share", "gemm_intensity", "attention_intensity",
                    "attention_time_share", "footprint_bytes")},
                "fits": bool(result["fits"][i]), "critical_batch": crit,
            })
    assert all(tuple(r) == SWEEP_COLUMNS for r in rows)
    return rows
