"""Measured kernels and measured ceilings on a roofline, from the device's calibration table (if it has one).

Points: achieved FLOP/s (flops / measured_s) at the kernel's intensity, small grey pluses beside the model's
operators; at most MAX_POINTS of them, spread evenly over each op of the ladder. Roofs: the measured bandwidth and
matmul throughput, dashed beside the datasheet ones, labelled "measured".
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..engine.hardware import Accelerator
from ..estimate.calibration import CEILING, SAME_RATE, measured_ceilings, read_table, table_path
from .roofs import Series, fmt_value

MEASURED_COLOR = "#7f7f7f"
#: a thin cross: the communication operators' filled plus (style.CLASS_MARKERS) must not be taken for a measurement
MEASURED_MARKER = "x"
MAX_POINTS = 240


#: the columns the overlay reads from a calibration table
OVERLAY_COLUMNS = ("op_class", "op", "dtype", "flops", "bytes", "measured_s")


def _rows(gpu: Accelerator):
    path = table_path(gpu)
    return overlay_rows(str(path)) if path else ()


@lru_cache(maxsize=16)
def overlay_rows(path: str) -> tuple[dict, ...]:
    """The rows of the calibration table at `path` the overlay draws (OVERLAY_COLUMNS; numbers finite), read with
    pandas' C parser: the full checked read (roofline.estimate.calibration.read_table, a Python pass over every
    line) costs ~0.3 s per shipped table and per figure job, and the config and the command line have checked the
    table before any job runs. A table without one of these columns takes the checked read."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, usecols=list(OVERLAY_COLUMNS), dtype={"op_class": str, "op": str, "dtype": str},
                            on_bad_lines="skip", low_memory=False)
    except ValueError:  # a column is missing
        return read_table(path)
    for column in ("flops", "bytes", "measured_s"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    numbers = frame[["flops", "bytes", "measured_s"]].to_numpy(dtype=float)
    frame = frame[np.isfinite(numbers).all(axis=1)].fillna({"op_class": "", "op": "", "dtype": ""})
    columns = [frame[name].tolist() for name in OVERLAY_COLUMNS]  # lists, then dicts: ~5x faster than to_dict
    return tuple(dict(zip(OVERLAY_COLUMNS, values)) for values in zip(*columns))


def measured_series(gpu: Accelerator, dtype: str) -> Series | None:
    """The ladder kernels of `gpu`'s calibration at `dtype` (or its same-rate twin) as grey filled pluses, or None."""
    rows = [r for r in _rows(gpu) if r["op_class"] != CEILING and r["dtype"] in (dtype, SAME_RATE.get(dtype))
            and r["flops"] > 0 and r["bytes"] > 0 and r["measured_s"] > 0]
    if not rows:
        return None
    by_op: dict[str, list] = {}
    for r in rows:
        by_op.setdefault(r["op"], []).append(r)
    per_op = max(MAX_POINTS // len(by_op), 1)
    picked = []
    for group in by_op.values():
        picked += [group[int(i)] for i in np.unique(np.linspace(0, len(group) - 1, min(per_op, len(group))))]
    x = np.array([r["flops"] / r["bytes"] for r in picked])
    y = np.array([r["flops"] / r["measured_s"] for r in picked])
    return Series(x, y, MEASURED_COLOR, MEASURED_MARKER, 12.0, label="measured kernels")


def _measured_roofs(gpu: Accelerator, dtype: str) -> tuple[float, float]:
    """(bandwidth, matmul peak at `dtype`) the device's measured kernels reach; 0 where not measured."""
    ceilings = measured_ceilings(_rows(gpu))
    peaks = ceilings["peak_flops_per_s"]
    return ceilings["bandwidth_bytes_per_s"] or 0.0, peaks.get(dtype) or peaks.get(SAME_RATE.get(dtype, "")) or 0.0


def measured_note(gpu: Accelerator, dtype: str) -> str:
    """The legend note's lines for the measured overlay, the measured roofs' values with them (written on the
    plot, they sat on the link labels and under the peaks' own)."""
    bandwidth, peak = _measured_roofs(gpu, dtype)
    if not bandwidth:
        return "\n× (grey) measured kernels"
    values = f"{fmt_value(bandwidth / 1e12)} TB/s" + (f",\n{fmt_value(peak / 1e12)} TFLOP/s" if peak else "")
    return f"\n× (grey) measured kernels\ndashed grey: measured\nceilings ({values})"


def draw_measured_roofs(ax, gpu: Accelerator, dtype: str, xlim: tuple[float, float]) -> bool:
    """Dashed measured roofs (bandwidth, and the matmul peak at `dtype` if measured) on an already-limited `ax`;
    their values are in the legend note (measured_note)."""
    bandwidth, peak = _measured_roofs(gpu, dtype)
    if not bandwidth:
        return False
    ridge = peak / bandwidth if peak else xlim[1]
    style = {"color": MEASURED_COLOR, "lw": 0.9, "ls": (0, (5, 2)), "zorder": 2}
    ax.plot([xlim[0], ridge], [bandwidth * xlim[0], bandwidth * ridge], **style)
    if peak:
        ax.plot([ridge, xlim[1]], [peak, peak], **style)
    return True
