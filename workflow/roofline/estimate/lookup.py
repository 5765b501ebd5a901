"""The expected-time lookup of one device under one framework (Calibration), in bulk: arrays of bounds in, arrays
of expected times out, with the `estimate` label each lookup earns (rules in roofline.estimate.calibration)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..engine.hardware import Accelerator, catalog
from . import curves
from .calibration import (
    CALIBRATED,
    DEFAULT,
    ELEMENTWISE_CLASSES,
    FALLBACK_TABLES,
    LAUNCH_GAP_S,
    SAME_RATE,
    STAND_IN,
    data_dir,
    framework_for,
    is_shipped,
    load_fit,
    manifest,
    points,
    read_table,
    shipped_frameworks,
    shipped_path,
    table_path,
    tables_chip,
)
from .curves import Fit

#: the shipped fit of the pooled fallback (benchmarks/build_calibrations.py)
POOLED_FIT = "pooled.fit.npz"


@dataclass(eq=False)
class Calibration:
    """One device's curves (`own`, from its table; None without one) and the pooled fallback; `gap_s` is added to
    a standalone kernel estimated from `own` (kernel-duration tables), `measured` says whether its rows are
    measured on the device; `framework` and `table` name what the estimates rest on; `domain` is the device's
    scale-up domain."""

    own: Fit | None
    fallback: Fit | None = None  # the pooled fallback (loaded on first use: lookup.pooled)
    measured: bool = False
    gap_s: float = 0.0
    framework: str = ""
    table: str = "none"
    domain: int = 1  # the device's scale-up domain: collectives beyond it cross the scale-out network
    sibling_paths: tuple = ()  # the device's tables of the other frameworks (read on first use: siblings)
    device: Accelerator | None = None
    _siblings: list | None = None

    @property
    def pooled(self) -> Fit:
        if self.fallback is None:
            self.fallback = pooled()
        return self.fallback

    @property
    def siblings(self) -> list[Fit]:
        """The fits of the device's tables measured under the other frameworks (its default first)."""
        if self._siblings is None:
            self._siblings = [load_fit(path, self.device)[0] for path in self.sibling_paths]
        return self._siblings

    def _sibling_grid(self, cls: str, dtype: str, operand: str, phase: str):
        """(fit, grid) of the first sibling that measured this very kernel (exact key), else (None, None)."""
        for fit in self.siblings:
            grid, exact = self._grid(fit, cls, dtype, operand, phase)
            if grid is not None and exact:
                return fit, grid
        return None, None

    def _grid(self, fit: Fit | None, cls: str, dtype: str, operand: str, phase: str):
        """(Grid, exact): the curve of the key, or of its same-rate dtype or operand (fp16 and bf16 count as one),
        or without an operand (exact); else another operand of the class and dtype, the block-scaled fp8 operand's
        per-tensor one first (not exact); (None, False) when nothing fits."""
        if fit is None:
            return None, False
        dtypes = (dtype, SAME_RATE.get(dtype, dtype))
        for d in dtypes:
            for o in dict.fromkeys((operand, SAME_RATE.get(operand, operand), "")):
                grid = fit.grids.get((cls, d, o, phase))
                if grid is not None:
                    return grid, True
        stand_in = STAND_IN.get(operand, operand)  # block-scaled fp8 where a table measured none: its per-tensor
        for key in sorted(fit.grids, key=lambda key: key[2] != stand_in):  # keys only: a grid loads when it is used
            if key[0] == cls and key[1] in dtypes and key[3] == phase:
                return fit.grids[key], False
        return None, False

    def kernels(self, cls: str, dtype: str, operand: str, phase: str, t: np.ndarray, coordinates: list,
                standalone: bool = True) -> tuple[np.ndarray, str]:
        """(expected [s], estimate) of kernels of one key at bounds `t` [s] and further coordinates (log10
        intensity[, log10 keys per sequence]: roofline.estimate.calibration.coordinates); `standalone` adds the
        launch gap of a kernel timed alone to estimates from a kernel-duration table."""
        grid, exact = self._grid(self.own, cls, dtype, operand, phase)
        label = CALIBRATED if exact and self.measured else DEFAULT
        fit, gap = self.own, self.gap_s
        if grid is None and cls in ELEMENTWISE_CLASSES:
            grid, _ = self._grid(self.own, "elementwise", dtype, "", "")
            label = DEFAULT
        if grid is None:  # a kernel this framework's table lacks, measured on the same device under another one
            fit, grid = self._sibling_grid(cls, dtype, operand, phase)
            label = DEFAULT
        if grid is None:
            fit, gap = self.pooled, LAUNCH_GAP_S
            grid, _ = self._grid(fit, cls, dtype, operand, phase)
            if grid is None:
                key = next((k for k in fit.grids if k[0] == cls and k[3] == phase), None)
                grid = None if key is None else fit.grids[key]
            label = DEFAULT
        if grid is None:
            return np.asarray(t, dtype=float), DEFAULT
        return expected_from(grid, fit.floor_s, t, coordinates) + (gap if standalone else 0.0), label

    def collectives(self, kind: str, span: int, message_bytes, t: np.ndarray) -> tuple[np.ndarray, str]:
        """(expected [s], estimate) of collectives of one kind over `span` devices: the measured curve (never
        below the bound); across scale-up domains, at least the time the widest measured span inside one domain
        takes for the same message (an in-domain phase, as hierarchical collectives run, costs that), labelled
        default; else the bound."""
        comm = self.own.comm if self.own is not None else {}
        curve = comm.get((kind, span))
        if curve is not None:
            return np.maximum(t, curve.seconds(message_bytes)), CALIBRATED if self.measured else DEFAULT
        narrower = [width for k, width in comm if k == kind and width <= self.domain < span]
        if narrower:
            return np.maximum(t, comm[(kind, max(narrower))].seconds(message_bytes)), DEFAULT
        return np.asarray(t, dtype=float), DEFAULT


def expected_from(grid: curves.Grid, floor: float, t, coordinates: list) -> np.ndarray:
    """max(t, floor, t x ratio) with the ratio from `grid` at (log10 t, *coordinates); t <= 0 (no work) gives
    max(t, floor)."""
    t = np.asarray(t, dtype=float)
    with np.errstate(divide="ignore"):
        x = np.log10(np.where(t > 0, t, 1e-30))
    scaled = 10.0 ** (x + grid.log_ratio(x, *coordinates))
    return np.maximum(np.maximum(t, floor), np.where(t > 0, scaled, 0.0))


_CACHE: dict[tuple, Calibration] = {}
#: the end of a borrowed table's description ("h100-sxm.vllm.csv.gz (...), h100-sxm's at this device's bounds"),
#: which the reports read back (report.calibration)
BORROWED = "at this device's bounds"


def calibration_for(gpu: Accelerator, framework: str = "") -> Calibration:
    """The Calibration of `gpu` under `framework` ("" = roofline.estimate.calibration.framework_for's choice;
    one's own table keeps the framework it was timed under), cached per device spec and table."""
    key = (gpu.key, gpu.chip, gpu.name, gpu.bandwidth_bytes_per_s, tuple(gpu.peak_flops_per_s.items()),
           gpu.calibration, gpu.framework, framework, gpu.scaleup_domain)
    if key not in _CACHE:
        framework = framework if gpu.calibration else framework or framework_for(gpu)
        path = table_path(gpu, framework)
        borrowed = bool(path and not gpu.calibration and gpu.tables_of)
        # a borrowed table keeps its chip's fit: its efficiencies are read at this device's bounds
        own, facts = load_fit(path, catalog()[gpu.tables_of] if borrowed else gpu) if path else (None, {})
        chip = tables_chip(gpu)
        shipped = (str(shipped_path(chip, other)) for other in shipped_frameworks(chip))
        siblings = tuple(sibling for sibling in shipped if sibling != path)
        _CACHE[key] = Calibration(own, None, bool(facts.get("measured")) and not borrowed,
                                  LAUNCH_GAP_S if facts.get("kernel_durations") else 0.0, facts.get("framework", ""),
                                  describe(path) + (f", {gpu.tables_of}'s {BORROWED}" if borrowed else ""),
                                  gpu.scaleup_domain, siblings, gpu)
    return _CACHE[key]


def describe(path: str | None) -> str:
    """What a calibration rests on, for the totals and plan rows: the shipped table with its package and framework
    versions, or the file name of one's own table."""
    if path is None:
        return "none"
    name = path.rsplit("/", 1)[-1]
    if is_shipped(path):
        for entry in manifest()["devices"].values():
            for table in entry["tables"].values():
                if table["file"] == name:
                    return f"{name} ({table['source']})"
    return name


@lru_cache(maxsize=1)
def pooled() -> Fit:
    """The fallback curves: FALLBACK_TABLES's shipped tables (default framework) and vidur element-wise tables,
    each row relative to its own device's bound; shipped as POOLED_FIT. Read with every grid made monotone in the
    bound (curves.monotone): cross-device data leave spikes a device's own table does not."""
    path = data_dir() / POOLED_FIT
    fit = curves.load(path)[0] if path.is_file() else fit_pooled()
    return Fit(grids=curves.MonotoneGrids(fit.grids), comm=fit.comm, floor_s=fit.floor_s)


def fit_pooled() -> Fit:
    """Fit the pooled fallback from the shipped tables (benchmarks/build_calibrations.py saves it)."""
    gathered = points()
    for key in FALLBACK_TABLES:
        for path in (shipped_path(key), data_dir() / f"{key}.vidur.csv.gz"):
            if path is not None and path.is_file():
                gathered.add(read_table(str(path)), catalog()[key])
    return gathered.fit()


def clear_cache() -> None:
    _CACHE.clear()
