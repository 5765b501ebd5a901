"""The roofline, once: an operator's time under each roof and which roof bounds it.

T_compute = FLOPs / P, T_memory = DRAM bytes / BW, T_network = the collective's time on the device's links
(latency + bytes / bandwidth inside a scale-up domain; across domains both links and the cut between domains:
roofline.engine.collectives; collectives only, else 0); the bound on the operator's time is the largest of the
three (perfect overlap of compute, memory and link traffic inside one operator), and the operator is `compute`-,
`memory`- or `network`-bound after the roof that sets it. Every caller (operator rows, totals, sweeps, calibration
tables, the deployment search, the report's sentences) takes its times and its bound class from here.

Everything accepts Python floats or NumPy arrays (sweeps pass arrays; `maximum=np.maximum` then).
"""
from __future__ import annotations

import math

#: the roofs, in the order a tie is decided: memory before network before compute
BOUNDS = ("memory", "network", "compute")


def roof_times(flops, nbytes, peak: float, bandwidth: float, t_network=0.0, maximum=max) -> tuple:
    """(t_compute, t_memory, t) [s]: the times under the compute and memory roofs and the bound, the largest of
    those two and `t_network` (0 for an operator that uses no link)."""
    t_compute, t_memory = flops / peak, nbytes / bandwidth
    t = maximum(t_compute, t_memory)
    return t_compute, t_memory, (t if not _positive(t_network) else maximum(t, t_network))


def _positive(value) -> bool:
    return value is not None and (not isinstance(value, (int, float)) or value > 0)


def bound_class(t_compute: float, t_memory: float, t_network: float = 0.0) -> str:
    """`network` when the link sets the time (and is used), else `compute` when T_compute > T_memory (intensity
    above the ridge), else `memory`."""
    if t_network > 0 and t_network >= t_compute and t_network >= t_memory:
        return "network"
    return "compute" if t_compute > t_memory else "memory"


def kernel_seconds(flops: float, nbytes: float, peak: float | None, bandwidth: float) -> float:
    """The bound of one kernel that uses no link; NaN without a peak for its dtype."""
    if peak is None:
        return math.nan
    return max(flops / peak, nbytes / bandwidth)


def dominant_bound(memory_bound_share: float, network_share: float) -> str:
    """The roof a whole step (many operators) is bound by: the one under which its operators spend the largest
    share of its time (memory-bound operators, communication operators, compute-bound operators: the rest)."""
    shares = {"memory": memory_bound_share, "network": network_share,
              "compute": 1.0 - memory_bound_share - network_share}
    return max(shares, key=shares.get)
