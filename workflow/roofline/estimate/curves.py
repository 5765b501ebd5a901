"""Fitted curves of a calibration table, evaluated in bulk: expected kernel time from the bound.

Kernels (every class but communication): per (op class, dtype, operand dtype, phase) a Grid of log10(measured /
bound) over (log10 bound [s], log10 intensity [FLOP/byte]) at GRID_DECADES spacing, with a third axis where two
do not tell kernels apart (GEMMs: log10 n / k; decode attention: log10 keys per sequence;
roofline.estimate.calibration.third_axis). Each node holds the estimate of
the K_NEAREST measured kernels nearest to it in those two coordinates, on the node's side of the ridge (memory- and
compute-bound kernels of one class sit at different fractions of their bound): each neighbour's log time moved to
the node along the local slope of log time against log bound (least squares, clipped to [0, 1]: 0 = a launch
floor, 1 = a constant fraction of the bound; 1 beyond the largest neighbour), the median of those
(`local_log_ratio`, the method the leave-one-out check chose). Between nodes: bilinear; below the grid the time
stays flat (a launch floor), above it the ratio stays; intensity is clamped to the grid.

Communication: per (collective, GPU count) the measured log time against log message bytes, interpolated, flat
below the smallest message (latency), proportional beyond the largest (bandwidth).

expected = max(bound, floor, bound x ratio): never below the bound, never below the table's shortest kernel.
Fitting is done once per table and device spec; `save`/`load` keep the fit beside a shipped table (.fit.npz).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

#: neighbours whose median gives a node's estimate
K_NEAREST = 8
#: node spacing of the kernel grids [decades of bound time and of intensity]
GRID_DECADES = 0.1
#: the grid reaches this many decades below the smallest measured bound (beyond: flat time) and above the largest
GRID_BELOW, GRID_ABOVE = 2.0, 0.5
#: node spacing of a decode attention grid along keys per sequence [decades]
KEYS_DECADES = 0.15
#: intensity floor for log10 (kernels without FLOPs: copies, collectives) [FLOP/byte]
MIN_INTENSITY = 1e-3


def local_log_ratio(x: np.ndarray, y: np.ndarray, at: np.ndarray) -> np.ndarray:
    """log10(t / bound) at log10 bound `at` [n] from neighbours x, y [n, k] (log10 bound, log10 ratio): each
    neighbour's log time moved to `at` along the local slope of log time against log bound (least squares over
    the neighbours, clipped to [0, 1]; 1 when they span < 0.05 decades or `at` is beyond the largest), the median."""
    x, y = np.atleast_2d(x), np.atleast_2d(y)
    at = np.broadcast_to(np.asarray(at, dtype=float), x.shape[:1])
    log_time = x + y
    spread = x - x.mean(axis=1, keepdims=True)
    covariance = (spread * (log_time - log_time.mean(axis=1, keepdims=True))).sum(axis=1)
    variance = (spread ** 2).sum(axis=1)
    wide = np.ptp(x, axis=1) > 0.05
    slope = np.where(wide, covariance / np.where(variance > 0, variance, 1.0), 1.0)
    slope = np.where(at > x.max(axis=1), 1.0, np.clip(slope, 0.0, 1.0))
    return np.median(log_time + slope[:, None] * (at[:, None] - x), axis=1) - at


def log10_intensity(flops, nbytes):
    """log10(flops / bytes), MIN_INTENSITY at least (no FLOPs), large where there are no bytes."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log10(np.maximum(np.asarray(flops, dtype=float) / np.asarray(nbytes, dtype=float), MIN_INTENSITY))


@dataclass(frozen=True, eq=False)
class Grid:
    """log10(t / bound) on a regular grid: axis 0 log10 bound, axis 1 log10 intensity, optional further axes
    (decode attention: log10 keys per sequence); node i of axis a sits at origin[a] + i step[a]."""

    origin: tuple[float, ...]
    step: tuple[float, ...]
    values: np.ndarray

    @cached_property
    def _layout(self) -> tuple[np.ndarray, list[int], list[int]]:
        """(the values flat, each axis's stride, each corner's offset from its cell's first node)."""
        shape = self.values.shape
        strides = [int(np.prod(shape[axis + 1:])) for axis in range(len(shape))]
        corners = [sum(strides[axis] for axis in range(len(shape)) if corner >> axis & 1)
                   for corner in range(1 << len(shape))]
        return self.values.ravel(), strides, corners

    def log_ratio(self, *coordinates: np.ndarray) -> np.ndarray:
        """Multilinear in the grid; below axis 0 the time is flat, above it the ratio stays; other axes clamped.
        (Every axis holds at least 2 nodes, so a node's upper neighbour always exists.)"""
        flat, strides, offsets = self._layout
        shape = self.values.shape
        base, fractions = 0, []
        for axis, value in enumerate(coordinates[:len(shape)]):
            position = np.asarray(value, dtype=float) - self.origin[axis]
            position *= 1.0 / self.step[axis]
            np.clip(position, 0.0, shape[axis] - 1.000001, out=position)
            low = position.astype(np.intp)
            base = base + low * strides[axis]
            fractions.append(position - low)
        # the cell's corners, then one linear interpolation per axis, the last axis first
        corners = [flat.take(base + offset) for offset in offsets]
        for axis in reversed(range(len(shape))):
            half = len(corners) // 2
            fraction = fractions[axis]
            corners = [low + fraction * (high - low) for low, high in zip(corners[:half], corners[half:])]
        ratio = corners[0]
        x = np.asarray(coordinates[0], dtype=float)
        return np.where(x < self.origin[0], ratio + (self.origin[0] - x), ratio)


def _axis(values: np.ndarray, step: float, below: float = 0.0, above: float = 0.0) -> np.ndarray:
    """Nodes every `step` from below the smallest value to above the largest (at least two)."""
    start = math.floor((values.min() - below - step) / step) * step
    nodes = np.arange(start, values.max() + above + 2 * step, step)
    return nodes if len(nodes) >= 2 else np.array([start, start + step])


def fit_grid(coordinates: list[np.ndarray], y: np.ndarray, compute: np.ndarray, log_ridge: float,
             steps: tuple[float, ...] | None = None) -> Grid:
    """A Grid from measured kernels at `coordinates` (log10 bound, log10 intensity[, a third]; nodes every
    `steps` decades) with y = log10 measured / bound (`compute`: compute-bound on the fitted device): nodes below
    log_ridge in intensity take
    memory-bound neighbours, those above compute-bound ones (each side falls back on the other where it has none)."""
    steps = steps or (GRID_DECADES,) * len(coordinates)
    axes = [_axis(coordinates[0], steps[0], GRID_BELOW, GRID_ABOVE)]
    axes += [_axis(values, step) for values, step in zip(coordinates[1:], steps[1:])]
    nodes = [a.ravel() for a in np.meshgrid(*axes, indexing="ij")]
    values = np.empty(nodes[0].size)
    for side in (False, True):
        members = compute if side else ~compute
        chosen = members if members.any() else ~members
        picked = np.flatnonzero((nodes[1] > log_ridge) == side)
        values[picked] = _knn([c[chosen] for c in coordinates], y[chosen], [n[picked] for n in nodes])
    return Grid(tuple(float(a[0]) for a in axes), steps, values.reshape([len(a) for a in axes]).astype(np.float32))


def _knn(points: list[np.ndarray], y: np.ndarray, nodes: list[np.ndarray], chunk: int = 256) -> np.ndarray:
    """local_log_ratio at each node from its K_NEAREST points (euclidean in the decades of every axis)."""
    k = min(K_NEAREST, len(y))
    out = np.empty(len(nodes[0]))
    for start in range(0, len(out), chunk):
        part = slice(start, start + chunk)
        distance = sum((n[part, None] - p[None, :]) ** 2 for n, p in zip(nodes, points))
        if len(y) > k:
            nearest = np.argpartition(distance, k - 1, axis=1)[:, :k]
        else:
            nearest = np.tile(np.arange(len(y)), (distance.shape[0], 1))
        out[part] = local_log_ratio(points[0][nearest], y[nearest], nodes[0][part])
    return out


@dataclass(frozen=True, eq=False)
class CommCurve:
    """Measured time of one collective over one GPU count against its message bytes (log10 of both)."""

    log_bytes: np.ndarray
    log_seconds: np.ndarray

    def seconds(self, message_bytes: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            lb = np.log10(np.maximum(np.asarray(message_bytes, dtype=float), 1.0))
        inside = np.interp(lb, self.log_bytes, self.log_seconds)
        beyond = self.log_seconds[-1] + (lb - self.log_bytes[-1])  # bandwidth-bound: time grows with the bytes
        return 10.0 ** np.where(lb > self.log_bytes[-1], beyond, inside)


def fit_comm(message_bytes: np.ndarray, seconds: np.ndarray) -> CommCurve:
    """Knots sorted by size, each time at most that of any larger message (the lower monotone envelope: where a
    larger message was measured faster, the slower point is an algorithm switch a framework tunes away)."""
    order = np.argsort(message_bytes)
    envelope = np.minimum.accumulate(seconds[order][::-1])[::-1]
    return CommCurve(np.log10(message_bytes[order]), np.log10(envelope))


@dataclass(eq=False)
class Fit:
    """Everything fitted from one table: kernel grids by key, collective curves by (collective, span), the floor."""

    grids: dict = field(default_factory=dict)
    comm: dict = field(default_factory=dict)
    floor_s: float = 0.0

    def save(self, path, **meta) -> None:
        """As an .npz: an `index` (JSON: floor, `meta` strings, numbers and booleans, each grid's key, origin and
        step, each collective's key) and one array per grid and per collective, read only when used."""
        index = {"floor_s": self.floor_s, "meta": meta,
                 "grids": [[list(key), list(grid.origin), list(grid.step)] for key, grid in self.grids.items()],
                 "comm": [list(key) for key in self.comm]}
        arrays = {"index": np.asarray(json.dumps(index))}
        arrays.update({f"grid{n}": grid.values.astype(np.float16) for n, grid in enumerate(self.grids.values())})
        arrays.update({f"comm{n}": np.stack([c.log_bytes, c.log_seconds]).astype(np.float32)
                       for n, c in enumerate(self.comm.values())})
        np.savez_compressed(path, **arrays)


class _LazyGrids(Mapping):
    """The grids of a saved Fit by key, each decompressed from the .npz on first use (a command uses a few)."""

    def __init__(self, data, entries: list):
        self._data, self._entries, self._loaded = data, {tuple(key): (n, origin, step) for n, (key, origin, step)
                                                         in enumerate(entries)}, {}

    def __getitem__(self, key):
        if key not in self._loaded:
            n, origin, step = self._entries[key]
            self._loaded[key] = Grid(tuple(origin), tuple(step), self._data[f"grid{n}"].astype(np.float32))
        return self._loaded[key]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def monotone(grid: Grid) -> Grid:
    """`grid` with each node's expected time capped by the times of every larger bound at the same other
    coordinates (a reversed running minimum of log time along the bound axis): a kernel of the same kind and shape
    with less work takes no longer. A fit pooled over devices needs it: where a sparse region's nearest neighbours
    are kernels of another regime, its ratio spikes (MLA decode on a device without tables: 44x its bound at one
    batch, 3x at the next)."""
    values = grid.values.astype(np.float64)
    x = grid.origin[0] + grid.step[0] * np.arange(values.shape[0]).reshape((-1,) + (1,) * (values.ndim - 1))
    capped = np.minimum.accumulate((x + values)[::-1], axis=0)[::-1]
    return Grid(grid.origin, grid.step, (capped - x).astype(grid.values.dtype))


class MonotoneGrids(Mapping):
    """The grids of a Fit, each made monotone() on first use."""

    def __init__(self, grids: Mapping):
        self._grids, self._done = grids, {}

    def __getitem__(self, key):
        if key not in self._done:
            self._done[key] = monotone(self._grids[key])
        return self._done[key]

    def __iter__(self):
        return iter(self._grids)

    def __len__(self) -> int:
        return len(self._grids)


def load(path) -> tuple[Fit, dict]:
    """(Fit, meta) from an .npz written by Fit.save; the grids load on first use."""
    data = np.load(path)
    index = json.loads(str(data["index"]))
    fit = Fit(grids=_LazyGrids(data, index["grids"]), floor_s=float(index["floor_s"]))
    for n, (kind, span) in enumerate(index["comm"]):
        knots = data[f"comm{n}"].astype(float)
        fit.comm[(kind, int(span))] = CommCurve(knots[0], knots[1])
    return fit, index["meta"]
