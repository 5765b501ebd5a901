"""Which rows of a deployment search's table a reader is pointed to: on the frontier over every device, each
device's recommended plan and the one chosen over all (results/plans/{model}.parquet; the report's served table
and Pareto figures read the marks)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def mark_frontier(records: Sequence[dict], per_gpu: np.ndarray, overall: np.ndarray, rank_on: str) -> list[dict]:
    """`records` (the rows of the `per_gpu` candidates, each device's front best first) with `on_frontier` (on the
    front over every device, `overall`), `recommended` (its device's first) and `chosen` (the recommended plan that
    delivers the most tokens/s per device on the ranked side). Ranked on expected times, a device whose estimate is
    `default` (the pooled fallback: no measured kernels of its own) is chosen only where no other device has
    measured kernels: such an estimate can rank against calibrated ones in expected time, so the choice rests on
    measurements where some exist (the bounds, comparable across devices, rank as they are)."""
    on_frontier = {int(i) for i in overall}
    column = "tokens_per_s_per_device" + ("" if rank_on == "bound" else "_expected")
    out, seen = [], set()
    for i, row in zip(per_gpu, records):
        out.append({**row, "on_frontier": int(i) in on_frontier, "recommended": row["gpu"] not in seen,
                    "chosen": False})
        seen.add(row["gpu"])
    tops = [row for row in out if row["recommended"]]
    if tops:
        trusted = rank_on == "bound" or all(str(row.get("estimate", "")) == "default" for row in tops)
        best = min(tops, key=lambda row: (not trusted and str(row.get("estimate", "")) == "default",
                                          -np.nan_to_num(float(row[column]), nan=-np.inf)))  # a NaN never leads
        best["chosen"] = True
    return out
