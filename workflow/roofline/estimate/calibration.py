"""Calibrated estimates: an expected kernel time next to every roofline bound, from measured kernel times.

The bound t = max(flops / peak, bytes / bandwidth) stays a lower bound. A calibration table (CALIBRATION_COLUMNS;
written by `roofline measure`, or shipped under data/calibrations/) lists measured kernels with their op_class,
dtype, flops, bytes and measured_s. For a device, every row's bound is recomputed with the engine's roofline on
THAT device's spec, so the measured / bound ratio is relative to the bound our tables report. Per (op_class, dtype,
regime), regime = the side of the roofline that bounds the kernel (memory | compute):

    t_expected = max(t, floor, t x r),   r from the K_NEAREST measured kernels nearest in (log10 bound [s],
                                         log10 intensity [FLOP/byte]): their times moved to t along the local slope
                                         of log time against log bound (0 = flat floor .. 1 = constant fraction),
                                         the median of those (local_log_ratio)

i.e. interpolation in the measured ladder by its nearest neighbours in size and intensity (a decode GEMV and a
prefill GEMM of the same bound time sit at different fractions of it); beyond the ladder the local trend holds
(a norm smaller than any measured keeps the floor-bound time of the smallest ones, a GEMV the GEMVs' fraction).
floor = the shortest kernel of the table (the device's launch floor). `max(t, ...)` keeps t_expected >= t_s even
where a measurement beat its bound (a residual add whose input is still in L2).

Launch gaps: the shipped tables hold kernel durations (vidur times the GPU kernels inside each op, launch gaps
excluded; the H200 table is derived from those), while a serving step pays a gap between consecutive kernels and
a kernel timed alone with CUDA events (as `roofline measure` does) includes its launch. So an operator calibrated
from a kernel-duration table (KERNEL_TIME_TABLES, or the pooled default built from them) gets LAUNCH_GAP_S added
to its expected time; a table written by `roofline measure` is used as measured. Communication rows keep their
bound (their latency already holds the collective's start-up).

Method choice by leave-one-out error (benchmarks/validate_calibration.py; the README quotes the numbers): "knn"
against interpolation along the bound time alone in BIN_DECADES bins ("interp"), a fitted latency + throughput
curve t = floor + t / efficiency ("affine") and one median ratio ("ratio"): knn has the lowest median and p90
error on every shipped table (GEMMs 1.9% / 6-10%, against 3.6-4.7% / 12-22% for interp).

Estimate label of a row: `calibrated` when the device's own table measured that op_class at the op's compute dtype
(fp16 and bf16 count as one: the same tensor-core and vector rate on every catalog device) and the table's source
is `measured`; otherwise `default`: in this order, the device's table at another dtype, or a derived table (H200:
H100 rescaled), or DEFAULT_TABLES pooled (the shipped measured A100 and H100 tables, each relative to its own
device's bound), or, for an op_class none of them measured (communication), the bound itself.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from ..engine.errors import RooflineInputError
from ..engine.hardware import Accelerator, catalog
from ..engine.roofline import bound_class, kernel_seconds

#: Width of the bins whose medians are the interpolation knots [decades of bound time].
BIN_DECADES = 0.1
#: Measured kernels whose median ratio gives a knn estimate.
K_NEAREST = 8
#: Method of t_expected (see the module docstring and FITS).
METHOD = "knn"
#: Columns every calibration table needs (CALIBRATION_COLUMNS in columns.py lists all).
REQUIRED = ("op_class", "dtype", "flops", "bytes", "measured_s", "source")
#: Shipped measured tables pooled into the `default` fallback (catalog keys; files data/calibrations/{key}.csv).
DEFAULT_TABLES = ("a100-sxm-80gb", "h100-sxm")
#: dtypes that run at the same rate on every catalog device, so one's measurement calibrates the other.
SAME_RATE = {"bf16": "fp16", "fp16": "bf16"}
#: op_class of the ceiling rows (copy/read bandwidth, square matmuls): roofs, not ladder points.
CEILING = "ceiling"
#: Shipped tables whose times are kernel durations without the launch gap (vidur, and the H200 table derived from
#: it): an expected time from them gets LAUNCH_GAP_S added.
KERNEL_TIME_TABLES = ("a100-sxm-80gb", "h100-sxm", "h200-sxm")
#: Time between two consecutive kernels of a step that kernel-duration tables leave out [s]: an empty kernel timed
#: alone with CUDA events takes 2-5 us on Ampere and Hopper, CUDA graphs bring back-to-back launches to 1-2 us;
#: 3 us sits between (NB: an estimate, not a measurement of these tables).
LAUNCH_GAP_S = 3e-6


@dataclass(frozen=True, eq=False)
class Curve:
    """Expected time of one (op_class, dtype, regime) as a function of the bound [s] and the intensity [FLOP/byte].

    interp: knots (x, y) = (log10 bound, log10 ratio); affine: floor + slope x bound; ratio: one knot; knn: the
    K_NEAREST measured kernels nearest in (log10 bound, log10 intensity) (local_log_ratio), points (x, y, z)."""

    x: np.ndarray
    y: np.ndarray
    floor_s: float
    slope: float = 0.0
    z: np.ndarray | None = None

    def __call__(self, t_bound: float, intensity: float = 1.0) -> float:
        if t_bound <= 0:
            return max(t_bound, self.floor_s)
        if self.slope:
            return max(t_bound, self.floor_s + t_bound * self.slope)
        if self.z is not None:
            lx = math.log10(t_bound)
            distance = (self.x - lx) ** 2 + (self.z - math.log10(max(intensity, 1e-3))) ** 2
            nearest = np.argpartition(distance, K_NEAREST - 1)[:K_NEAREST] if len(distance) > K_NEAREST else slice(None)
            log_ratio = local_log_ratio(self.x[nearest], self.y[nearest], lx)
        else:
            log_ratio = float(np.interp(math.log10(t_bound), self.x, self.y))
        return max(t_bound, self.floor_s, t_bound * 10 ** log_ratio)


def local_log_ratio(x: np.ndarray, y: np.ndarray, at: float) -> float:
    """log10(t / bound) at log10 bound `at` from neighbours (x = log10 bound, y = log10 ratio): each neighbour's
    log time moved to `at` along the local slope of log time against log bound (least squares, clipped to [0, 1]:
    0 = a launch floor, time flat; 1 = a constant fraction of the bound), then the median. Above the largest
    neighbour the slope is 1: a kernel bigger than any measured keeps their fraction of the bound."""
    log_time = x + y
    spread = x - x.mean()
    slope = float((spread * (log_time - log_time.mean())).sum() / (spread ** 2).sum()) if np.ptp(x) > 0.05 else 1.0
    slope = 1.0 if at > x.max() else min(max(slope, 0.0), 1.0)
    return float(np.median(log_time + slope * (at - x))) - at


def fit_knn(bound: np.ndarray, measured: np.ndarray, intensity: np.ndarray) -> Curve:
    """Every measured kernel is a point; the floor = the smallest measured time."""
    return Curve(np.log10(bound), np.log10(measured / bound), float(measured.min()),
                 z=np.log10(np.maximum(intensity, 1e-3)))


def fit_interp(bound: np.ndarray, measured: np.ndarray, intensity=None) -> Curve:
    """Knots = medians per BIN_DECADES bin of log10 bound; the floor = the smallest measured time."""
    lx, ly = np.log10(bound), np.log10(measured / bound)
    bins = np.floor(lx / BIN_DECADES)
    xs, ys = [], []
    for b in np.unique(bins):
        inside = bins == b
        xs.append(float(np.median(lx[inside])))
        ys.append(float(np.median(ly[inside])))
    return Curve(np.array(xs), np.array(ys), float(measured.min()))


def fit_affine(bound: np.ndarray, measured: np.ndarray, intensity=None) -> Curve:
    """t = floor + t_bound / efficiency: floor = the smallest time, 1/efficiency = median (t - floor) / bound."""
    floor = float(measured.min())
    slope = float(np.median((measured - floor) / bound)) or 1.0
    return Curve(np.zeros(1), np.zeros(1), floor, max(slope, 1.0))


def fit_ratio(bound: np.ndarray, measured: np.ndarray, intensity=None) -> Curve:
    """t = max(floor, median ratio x t_bound)."""
    return Curve(np.zeros(1), np.array([np.median(np.log10(measured / bound))]), float(measured.min()))


FITS = {"knn": fit_knn, "interp": fit_interp, "affine": fit_affine, "ratio": fit_ratio}


def bound_seconds(gpu: Accelerator, dtype: str, flops: float, nbytes: float) -> float:
    """The engine's roofline bound of one kernel on `gpu` (analysis.op_row's t_s); NaN without a peak for dtype."""
    return kernel_seconds(flops, nbytes, gpu.peak_flops_per_s.get(dtype), gpu.bandwidth_bytes_per_s)


# ---------------------------------------------------------------- tables

def shipped_path(key: str) -> Path | None:
    """data/calibrations/{key}.csv of the package, if shipped."""
    path = Path(str(resources.files("roofline").joinpath(f"data/calibrations/{key}.csv")))
    return path if path.is_file() else None


@lru_cache(maxsize=64)
def read_table(path: str) -> tuple[dict, ...]:
    """The rows of a calibration CSV (numbers as floats); a one-line error for a missing file or column."""
    file = Path(path)
    if not file.is_file():
        raise RooflineInputError(f"calibration: file '{path}' does not exist; expected a CSV written by "
                                 "`roofline measure --out`")
    with file.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or ())]
        if missing:
            raise RooflineInputError(f"calibration: '{path}' lacks column(s) {', '.join(missing)}; a calibration "
                                     f"table needs {', '.join(REQUIRED)} (as `roofline measure` writes them)")
        rows = []
        for line, row in enumerate(reader, start=2):
            try:
                for name in ("flops", "bytes", "measured_s"):
                    row[name] = float(row[name])
            except ValueError:
                raise RooflineInputError(f"calibration: '{path}' line {line}: {name} '{row[name]}' is not a "
                                         "number") from None
            rows.append(row)
    if not rows:
        raise RooflineInputError(f"calibration: '{path}' has no rows")
    return tuple(rows)


def holds_kernel_durations(path: str | None) -> bool:
    """Whether the table at `path` is one of the shipped KERNEL_TIME_TABLES (times without the launch gap)."""
    return path is not None and any(path == str(shipped_path(key)) for key in KERNEL_TIME_TABLES)


def check_table(path: str) -> str:
    """`path` if it reads as a calibration table (used by the config before any job runs)."""
    read_table(str(path))
    return str(path)


def table_path(gpu: Accelerator) -> str | None:
    """The calibration a device uses: its config `calibration`, else the table shipped for its catalog key (or for
    the catalog device of the same name: an alias of a catalog device keeps its name)."""
    if gpu.calibration:
        return gpu.calibration
    keys = [gpu.key] + [k for k, g in catalog().items() if g.name == gpu.name and k != gpu.key]
    for key in keys:
        path = shipped_path(key)
        if path is not None:
            return str(path)
    return None


def regime(gpu: Accelerator, dtype: str, flops: float, nbytes: float) -> str:
    """`compute` or `memory`: which side of the roofline bounds the kernel on `gpu` (analysis.op_row's `bound`)."""
    return bound_class(flops / gpu.peak_flops_per_s[dtype], nbytes / gpu.bandwidth_bytes_per_s)


def _points(rows, gpu: Accelerator, keys) -> dict[tuple, list[tuple[float, float, float]]]:
    """{key: [(bound on gpu, measured, intensity)]} of the ladder rows, each under every key of keys(row, side)."""
    groups: dict[tuple, list[tuple[float, float, float]]] = {}
    for row in rows:
        if row["op_class"] == CEILING or row["measured_s"] <= 0:
            continue
        bound = bound_seconds(gpu, row["dtype"], row["flops"], row["bytes"])
        if bound > 0:
            for key in keys(row, regime(gpu, row["dtype"], row["flops"], row["bytes"])):
                groups.setdefault(key, []).append((bound, row["measured_s"], row["flops"] / row["bytes"]))  # bytes > 0
    return groups


def _fit(groups: dict, method: str) -> dict[tuple, Curve]:
    """Curves of every group, each with the launch floor of all groups together: the shortest kernel measured
    (a skinny GEMM below the ladder keeps the GEMMs' ratio instead of inheriting the smallest GEMM's time)."""
    floor = min((m for points in groups.values() for _, m, _ in points), default=0.0)
    return {key: replace(FITS[method](*map(np.array, zip(*points))), floor_s=floor) for key, points in groups.items()}


def _curves(rows, gpu: Accelerator, method: str) -> dict[tuple, Curve]:
    """{(op_class, dtype, regime): Curve} and {(op_class, dtype, None): Curve} from ladder rows, bounds on `gpu`.

    Memory- and compute-bound kernels of one class get curves of their own: a decode GEMV and a prefill GEMM of
    the same bound time sit at different fractions of it."""
    def keys(row, side):
        return (row["op_class"], row["dtype"], side), (row["op_class"], row["dtype"], None)
    return _fit(_points(rows, gpu, keys), method)


class Calibration:
    """Expected-time lookup of one device: its own curves (labelled by the table's source) and the pooled default."""

    def __init__(self, own: dict, measured: bool, pooled: dict, own_gap_s: float = 0.0):
        self.own, self.measured, self.pooled, self.own_gap_s = own, measured, pooled, own_gap_s

    def expected(self, op_class: str, dtype: str, bound: str, t_bound: float, intensity: float) -> tuple[float, str]:
        """(t_expected_s, estimate) of one operator instance: its bound t_bound [s] on the `bound` side (memory |
        compute) at `intensity` [FLOP/byte]."""
        for candidate in (dtype, SAME_RATE.get(dtype)):
            curve = self.own.get((op_class, candidate, bound)) or self.own.get((op_class, candidate, None))
            if curve is not None:
                return curve(t_bound, intensity) + self.own_gap_s, "calibrated" if self.measured else "default"
        curve = next((c for (cls, _, side), c in self.own.items() if cls == op_class and side is None), None)
        if curve is not None:
            return curve(t_bound, intensity) + self.own_gap_s, "default"
        curve = self.pooled.get((op_class, bound)) or self.pooled.get((op_class, None))
        if curve is None:  # a class nothing measured (communication): no fraction to apply, the bound itself
            return t_bound, "default"
        return curve(t_bound, intensity) + LAUNCH_GAP_S, "default"  # the pooled tables are kernel durations


def _spec_key(gpu: Accelerator) -> tuple:
    return (gpu.key, gpu.bandwidth_bytes_per_s, tuple(sorted(gpu.peak_flops_per_s.items())), gpu.calibration,
            gpu.name)


_CACHE: dict[tuple, Calibration] = {}


def calibration_for(gpu: Accelerator, method: str = METHOD) -> Calibration:
    """The Calibration of `gpu` (cached per device spec)."""
    key = (_spec_key(gpu), method)
    if key not in _CACHE:
        path = table_path(gpu)
        rows = read_table(path) if path else ()
        measured = bool(rows) and all(row["source"] == "measured" for row in rows)
        _CACHE[key] = Calibration(_curves(rows, gpu, method), measured, _pooled(method),
                                  LAUNCH_GAP_S if holds_kernel_durations(path) else 0.0)
    return _CACHE[key]


@lru_cache(maxsize=4)
def _pooled(method: str) -> dict:
    """{(op_class, regime), (op_class, None): Curve}: the DEFAULT_TABLES, each row relative to its own device's
    bound."""
    def keys(row, side):
        return (row["op_class"], side), (row["op_class"], None)
    groups: dict = {}
    for key in DEFAULT_TABLES:
        path = shipped_path(key)
        for name, points in (_points(read_table(str(path)), catalog()[key], keys) if path else {}).items():
            groups.setdefault(name, []).extend(points)
    return _fit(groups, method) if groups else {}


# ---------------------------------------------------------------- the engine's hook

def add_expected(gpu: Accelerator, stage: str, rows: list[dict], total: dict) -> None:
    """Add `t_expected_s`, `estimate` to each operator row and the expected totals to `total`, in place.

    Totals: the sum of count x t_expected_s; tokens_per_s_expected = the bound's tokens/s scaled by t_s / t_expected
    (the same tokens over the expected time); `estimate` is `calibrated` only if every operator's is.
    """
    calibration = calibration_for(gpu)
    t_expected, labels = 0.0, set()
    for row in rows:
        row["t_expected_s"], row["estimate"] = calibration.expected(
            row["op_class"], row["compute_dtype"], row["bound"], row["t_s"], row["intensity"])
        t_expected += row["count"] * row["t_expected_s"]
        labels.add(row["estimate"])
    prefill = stage == "prefill"
    total.update({
        "ttft_expected_s": t_expected if prefill else math.nan, "tpot_expected_s": math.nan if prefill else t_expected,
        "tokens_per_s_expected": total["tokens_per_s"] * total["t_s"] / t_expected,
        "estimate": "calibrated" if labels == {"calibrated"} else "default",
    })


def measured_ceilings(rows) -> dict:
    """{"bandwidth_bytes_per_s": best copy/read rate, "peak_flops_per_s": {dtype: best matmul rate}} of a table's
    ceiling rows (empty where it has none)."""
    bandwidth, peaks = 0.0, {}
    for row in rows:
        if row["op_class"] != CEILING or row["measured_s"] <= 0:
            continue
        if row["flops"] and row.get("op") == "matmul":
            peaks[row["dtype"]] = max(peaks.get(row["dtype"], 0.0), row["flops"] / row["measured_s"])
        elif row["bytes"]:
            bandwidth = max(bandwidth, row["bytes"] / row["measured_s"])
    return {"bandwidth_bytes_per_s": bandwidth or None, "peak_flops_per_s": peaks}
