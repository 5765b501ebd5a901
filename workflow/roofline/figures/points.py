"""The operators of a roofline: which have a place on log-log axes, how large each point is, which links the
deployment's collectives cross."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..engine.dtypes import matmul_dtype
from ..engine.hardware import Accelerator


def gemm_dtype(scenario: dict) -> str:
    """The compute dtype of the weight GEMMs (their peak is the main ceiling)."""
    return matmul_dtype(scenario["weight_dtype"], scenario["act_dtype"])


def drawable(ops: pd.DataFrame) -> pd.DataFrame:
    """Operators that have a place on log-log axes: positive, finite intensity and attainable performance.
    (Operators without FLOPs, such as the embedding gather or the KV-cache copy, have none.) Communication rows are
    placed against the link, as in a hierarchical roofline: x = FLOPs per byte on the link, y = FLOPs / t_s (their
    time with the link latency), so they sit on or under the network roof."""
    ops = ops.copy()
    comm = ops["op_class"] == "communication"
    if comm.any():
        network_bytes = ops.loc[comm, "bytes_network"].where(ops.loc[comm, "bytes_network"] > 0)
        ops.loc[comm, "intensity"] = ops.loc[comm, "flops"] / network_bytes
        ops.loc[comm, "attainable_flops_per_s"] = ops.loc[comm, "flops"] / ops.loc[comm, "t_s"]
    ok = (ops["intensity"] > 0) & np.isfinite(ops["intensity"]) & (ops["attainable_flops_per_s"] > 0)
    return ops[ok]


def network_links(ops: pd.DataFrame, gpu: Accelerator) -> tuple[tuple[str, float], ...]:
    """The links the deployment's collectives cross, (name, byte/s) for each: scale-up and, beyond one domain,
    scale-out; () for a single device."""
    comm = ops[ops["op_class"] == "communication"]
    names = []
    for bandwidth in sorted(set(comm["network_bandwidth_bytes_per_s"].dropna()), reverse=True):
        up = bandwidth == gpu.scaleup_bandwidth_bytes_per_s
        names.append(((gpu.scaleup_link or "link") if up else "scale-out", float(bandwidth)))
    return tuple(names)


def stage_shares(ops: pd.DataFrame) -> pd.Series:
    """Each operator row's share of its (gpu, stage) time: t_s x count / sum."""
    time = ops["t_s"] * ops["count"]
    return time / time.groupby([ops["gpu"], ops["stage"]]).transform("sum")


def marker_size(share):
    """Marker area [points^2] of a point holding `share` of its stage's time."""
    return 14.0 + 120.0 * np.asarray(share, dtype=float)


def undrawn_note(ops: pd.DataFrame) -> str:
    """The caption's note on the operators a roofline leaves out ('' when every operator is drawn)."""
    left_out = sorted(set(ops["op"]) - set(drawable(ops)["op"]))
    return f"Not drawn (no FLOPs, so no place on a log axis): {', '.join(left_out)}." if left_out else ""
