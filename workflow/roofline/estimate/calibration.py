"""Calibration tables and the expected-time lookup of one device: measured kernels -> expected times, in bulk.

The bound t = max(flops / peak, bytes / bandwidth[, link time]) stays a lower bound. A calibration table
(CALIBRATION_COLUMNS) lists measured kernels with their op class, dtypes, FLOPs, bytes and measured time. Tables:
- shipped (data/calibrations/, manifest.json): per catalog device the kernels the `aiconfigurator-core` package
  measured under one serving framework (`{gpu}.{framework}.csv`, by `roofline calibrate --from aiconfigurator`),
  the device's default framework first; plus vidur's A100/H100 norms, element-wise kernels and embeddings
  (`{gpu}.vidur.csv`), which the package does not measure;
- a table of your own (`roofline measure`, or any table in this format), given per device (`calibration:`) or with
  `--calibration`: it takes precedence over a shipped one.
A device's shipped tables are those of its chip (Accelerator.chip: an alias with `base:` keeps its base's; new
hardware has none). Every table read, shipped or one's own, passes roofline.estimate.table_checks (rows that fail
are left out and reported once; one's own table must name the device's chip unless any device is allowed).
Every row's bound is recomputed on the evaluated device's spec, so a ratio measured / bound is relative to the bound
our tables report; curves (roofline.estimate.curves) are fitted per (op class, dtype, operand dtype, phase), where
the operand is the weights' dtype of a GEMM or MoE kernel and the KV cache's of an attention kernel, and the phase
(prefill | decode) tells attention kernels apart. A shipped table's fit is shipped beside it (.fit.npz, written by
benchmarks/build_calibrations.py) and used while the device's spec is the catalog's.

Lookup of an operator (Calibration.kernels), with the `estimate` label it earns:
1. the device's own table at the op's class, dtype (fp16 and bf16 count as one: the same rate on every catalog
   device) and operand dtype -> `calibrated` (when the table's rows are measured);
2. the own table at that class and dtype with another operand dtype, or element-wise curves for norms and embeddings
   (the package measures no norm) -> `default`;
3. the pooled FALLBACK_TABLES (each row relative to its own device's bound) -> `default`;
4. nothing measured that class -> the bound itself, `default`.
Communication operators look up the measured collective of their kind and GPU count (`calibrated`), else keep the
bound. Launch gaps: shipped tables hold kernel durations (vidur: kernel times; the package: kernels replayed), while
an operator timed alone with CUDA events (as `roofline measure` does) includes its launch: a standalone operator
estimated from a shipped table gets LAUNCH_GAP_S added. A served step accounts for launches per framework instead
(roofline.estimate.step).
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from ..engine import formulas as f
from ..engine.collectives import collective_seconds
from ..engine.dtypes import DTYPE_BYTES
from ..engine.hardware import Accelerator
from ..engine.roofline import bound_class, kernel_seconds, roof_times
from . import curves, table_checks
from .curves import Fit

#: Columns every calibration table needs (CALIBRATION_COLUMNS in columns.py lists all).
REQUIRED = table_checks.REQUIRED
#: dtypes that run at the same rate on every catalog device, so one's measurement calibrates the other.
SAME_RATE = {"bf16": "fp16", "fp16": "bf16"}
#: the operand key of block-scaled fp8 GEMMs (rows of fp8 weights with a group_size: aic_rows.FP8_BLOCK), apart from
#: the per-tensor fp8 curve: Scenario.fp8_scaling "block" reads it (roofline.estimate.step.operand_dtype)
FP8_BLOCK_OPERAND = "fp8-block"
#: the operand key of fp8 weights computed at 16 bits (weight-only, where a device has no fp8 peak: FP8 Marlin),
#: which no table measures (roofline.estimate.step.operand_dtype)
FP8_WEIGHT_ONLY_OPERAND = "fp8-weight-only"
#: the operand whose curve stands in for one a table did not measure (not exact: a `default` estimate): int8
#: weight-only GEMMs for fp8 weight-only ones (the same bytes, the same 16-bit compute, dequantized in the kernel)
STAND_IN = {FP8_BLOCK_OPERAND: "fp8", FP8_WEIGHT_ONLY_OPERAND: "int8"}
#: op_class of the ceiling rows (copy/read bandwidth, square matmuls): roofs, not ladder points.
CEILING = "ceiling"
#: Shipped devices whose tables are pooled into the `default` fallback of a device without one (catalog keys).
FALLBACK_TABLES = ("a100-sxm-80gb", "h100-sxm")
#: Time between launching a kernel and the next that kernel-duration tables leave out [s]: an empty kernel timed
#: alone with CUDA events takes 2-5 us on Ampere and Hopper; 3 us sits between (an estimate, not a measurement).
LAUNCH_GAP_S = 3e-6
#: op classes whose kernels the package does not measure: they use the element-wise curve or the fallback
ELEMENTWISE_CLASSES = ("norm", "elementwise", "embedding")
#: op classes whose expected times decide a step's `estimate` (element-wise kernels may use the fallback)
CORE_CLASSES = ("gemm", "attention", "moe", "communication")
CALIBRATED, PARTIAL, DEFAULT = "calibrated", "partial", "default"


def bound_seconds(gpu: Accelerator, dtype: str, flops: float, nbytes: float) -> float:
    """The engine's roofline bound of one kernel on `gpu` (analysis.op_row's t_s); NaN without a peak for dtype."""
    return kernel_seconds(flops, nbytes, gpu.peak_flops_per_s.get(dtype), gpu.bandwidth_bytes_per_s)


#: a communication row's op -> the engine's formula of its cost (T = 1 row of `m` elements; all-gather: the output)
COLLECTIVE_COSTS = {"all_reduce": f.all_reduce, "all_gather": f.all_gather, "all_to_all": f.all_to_all}


def collective_bound_seconds(gpu: Accelerator, op: str, span: int, elements: float, dtype: str = "bf16") -> float:
    """The engine's bound of one measured collective (a communication row: `op` of `elements` over `span`
    devices of `gpu`): its link time, or its DRAM time where that is longer (analysis.op_row's t_s)."""
    cost = COLLECTIVE_COSTS[op](1, elements, span, DTYPE_BYTES[dtype])
    t_network = collective_seconds(gpu, op, cost.network, span)
    return roof_times(cost.flops, cost.bytes, gpu.peak(dtype), gpu.bandwidth_bytes_per_s, t_network)[2]


def regime(gpu: Accelerator, dtype: str, flops: float, nbytes: float) -> str:
    """`compute` or `memory`: which side of the roofline bounds the kernel on `gpu` (analysis.op_row's `bound`)."""
    return bound_class(flops / gpu.peak_flops_per_s[dtype], nbytes / gpu.bandwidth_bytes_per_s)


# ---------------------------------------------------------------- shipped tables

def data_dir() -> Path:
    return Path(str(resources.files("roofline").joinpath("data/calibrations")))


@lru_cache(maxsize=1)
def manifest() -> dict:
    """data/calibrations/manifest.json: per device its tables by framework and its default framework."""
    path = data_dir() / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else {"devices": {}}


def shipped_frameworks(key: str) -> tuple[str, ...]:
    """Frameworks with a shipped table for catalog device `key`, its default first."""
    entry = manifest()["devices"].get(key)
    if not entry:
        return ()
    return (entry["default"], *(f for f in entry["tables"] if f != entry["default"]))


def shipped_path(key: str, framework: str = "") -> Path | None:
    """The shipped table of `key` under `framework` (its default framework when "" or not shipped), if any."""
    frameworks = shipped_frameworks(key)
    if not frameworks:
        return None
    chosen = framework if framework in frameworks else frameworks[0]
    path = data_dir() / manifest()["devices"][key]["tables"][chosen]["file"]
    return path if path.is_file() else None


def framework_for(gpu: Accelerator, scenario_framework: str = "") -> str:
    """The framework whose tables a device uses: the GPU's own choice (the CLI option or its config entry), else
    the scenario's, where its chip has a table of it; else the chip's default ("" without shipped tables)."""
    frameworks = shipped_frameworks(tables_chip(gpu))
    wanted = [f for f in (gpu.framework, scenario_framework) if f in frameworks]
    return (wanted or frameworks or ("",))[0]


def tables_chip(gpu: Accelerator) -> str:
    """The catalog chip whose shipped tables a device uses: its own (measured_as), else the one an entry moved its
    speeds from (Accelerator.tables_of: borrowed, labelled default)."""
    return gpu.tables_of or gpu.measured_as


def table_path(gpu: Accelerator, framework: str = "") -> str | None:
    """The calibration a device uses: its config `calibration`, else the table shipped for its chip (an alias with
    `base:` keeps its base's chip; a device built without one is looked up by its key) under `framework` (the
    device's choice when "": framework_for)."""
    if gpu.calibration:
        return gpu.calibration
    path = shipped_path(tables_chip(gpu), framework or framework_for(gpu))
    return str(path) if path is not None else None


def is_shipped(path: str | None) -> bool:
    """Whether the table at `path` is one of the shipped ones (data/calibrations/)."""
    return path is not None and Path(path).parent == data_dir()


def holds_kernel_durations(path: str | None) -> bool:
    """Whether the table at `path` holds kernel durations (without the launch gap a single launch pays): the
    shipped tables and `roofline calibrate`'s (table_facts)."""
    if path is None:
        return False
    if is_shipped(path):
        return True
    if fit_path(path).is_file():
        return bool(curves.load(fit_path(path))[1].get("kernel_durations"))
    return table_facts(read_table(path))["kernel_durations"]


# ---------------------------------------------------------------- reading

#: numeric columns parsed as floats, with the value a table without the column gets
NUMBERS = {"flops": None, "bytes": None, "measured_s": None, "m": 0.0, "n": 0.0, "k": 0.0, "span": 1.0,
           "kv_len": 0.0}
TEXTS = ("op", "framework", "weight_dtype", "kv_dtype")


@lru_cache(maxsize=64)
def checked_table(path: str) -> table_checks.CheckedTable:
    """The table at `path` through table_checks (NUMBERS as floats, TEXTS filled in): the rows that pass and what
    was left out; one line for an unusable file."""
    table = table_checks.read_checked(path, NUMBERS)
    for row in table.rows:
        for name in TEXTS:  # "0": a table of `roofline measure` before 2026-12-01 filled these with zeros
            row[name] = "" if row.get(name) in (None, "", "0") else row[name]
    return table


def read_table(path: str) -> tuple[dict, ...]:
    """The rows of a calibration CSV (or .csv.gz) that pass table_checks, numbers as floats."""
    return checked_table(str(path)).rows


def check_table(path: str, gpu: Accelerator | None = None) -> str:
    """`path` if it reads as a calibration table measured on `gpu`'s chip (table_checks; used by the config and the
    command line before any estimate); rows left out are reported once, as a warning."""
    table = checked_table(str(path))
    if gpu is not None:
        table_checks.check_device(table, gpu, str(path))
        if not gpu.calibration_any_device:  # another device's table runs at its own speed, far from this bound
            table_checks.check_units(table, gpu, str(path))
    if table.report(str(path)):
        logging.getLogger("roofline").warning(table.report(str(path)))
    return str(path)


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


# ---------------------------------------------------------------- fitting

def phase_of(op: str) -> str:
    """prefill | decode for an attention kernel (by its name; MLA's: mla_prefill | mla_decode), "" otherwise."""
    phase = "prefill" if "prefill" in op else "decode" if "decode" in op else ""
    return f"mla_{phase}" if phase and op.startswith("mla") else phase


#: spacing of a grid's third axis [decades]: GEMM aspect (n / k), decode attention keys per sequence
THIRD_AXIS = {"gemm": 0.3, "decode": curves.KEYS_DECADES}


def third_axis(cls: str, phase: str) -> str:
    """Which third coordinate a curve has: "gemm" (log10 n / k of a GEMM or of an MoE expert: a tall and a wide
    weight of one size run at different speeds), "decode" (log10 keys per sequence: the same bytes over many short
    or few long sequences), or "" (two coordinates)."""
    return "gemm" if cls in ("gemm", "moe") else "decode" if phase.endswith("decode") else ""


def coordinates(cls: str, phase: str, bound, flops, nbytes, third=None) -> tuple[list, tuple]:
    """(coordinates, node spacing) a curve is fitted and looked up on: log10 bound, log10 intensity, and the
    third_axis's (given as `third`: n / k of a GEMM, keys per sequence of a decode attention kernel)."""
    out = [np.log10(bound), curves.log10_intensity(flops, nbytes)]
    steps = (curves.GRID_DECADES, curves.GRID_DECADES)
    axis = third_axis(cls, phase)
    if axis:
        out.append(np.log10(np.maximum(np.asarray(third, dtype=float), 1e-6 if axis == "gemm" else 1.0)))
        steps += (THIRD_AXIS[axis],)
    return out, steps


def third_of(row: dict) -> float:
    """A table row's third coordinate (third_axis): n / k of a GEMM or an MoE expert, keys per sequence of a decode
    kernel."""
    if row["op_class"] in ("gemm", "moe"):
        return row["n"] / row["k"] if row["n"] > 0 and row["k"] > 0 else 1.0
    return row["kv_len"]


def curve_key(row: dict) -> tuple[str, str, str, str]:
    """(op_class, dtype, operand dtype, phase) a measured kernel calibrates."""
    cls = row["op_class"]
    operand = row["weight_dtype"] if cls in ("gemm", "moe") else row["kv_dtype"] if cls == "attention" else ""
    if cls == "gemm" and operand == "fp8" and float(row.get("group_size") or 0) > 0:
        operand = FP8_BLOCK_OPERAND
    return cls, row["dtype"], operand, phase_of(row["op"]) if cls == "attention" else ""


@dataclass
class Points:
    """Measured kernels gathered for fitting: per curve key (bound, measured, flops, bytes, compute-bound) on the
    device each row is bound on, per collective (message bytes, measured); the shortest kernel; the log10 ridge
    point of each key's dtype on those devices."""

    groups: dict
    collectives: dict
    floor: float = math.inf
    log_ridges: dict | None = None

    def add(self, rows, gpu: Accelerator) -> "Points":
        """Add a table's rows with their bounds recomputed on `gpu`."""
        for row in rows:
            if row["op_class"] == CEILING or row["measured_s"] <= 0:
                continue
            if row["op_class"] == "communication":
                width = DTYPE_BYTES.get(row["dtype"], 2.0)
                self.collectives.setdefault((row["op"], int(row["span"])), []).append(
                    ((row["m"] or row["bytes"] / 2 / width) * width, row["measured_s"]))
                continue
            bound = bound_seconds(gpu, row["dtype"], row["flops"], row["bytes"])
            if not bound > 0:
                continue  # no peak for its dtype on this device
            self.floor = min(self.floor, row["measured_s"])
            peak = gpu.peak_flops_per_s[row["dtype"]]
            key = curve_key(row)
            self.groups.setdefault(key, []).append(
                (bound, row["measured_s"], row["flops"], row["bytes"], row["flops"] / peak > row["bytes"] /
                 gpu.bandwidth_bytes_per_s, third_of(row)))
            self.log_ridges.setdefault(key, []).append(math.log10(peak / gpu.bandwidth_bytes_per_s))
        return self

    def fit(self) -> Fit:
        fit = Fit(floor_s=0.0 if self.floor == math.inf else self.floor)
        for key, points in self.groups.items():
            bound, measured, flops, nbytes, compute, third = (np.array(v) for v in zip(*points))
            axes, steps = coordinates(key[0], key[3], bound, flops, nbytes, third)
            # a kernel measured faster than its bound ran from the L2 (the package replays kernels without
            # flushing it): it says the bound holds there, and pulls no neighbour below its own bound
            fit.grids[key] = curves.fit_grid(axes, np.log10(np.maximum(measured / bound, 1.0)), compute.astype(bool),
                                             float(np.mean(self.log_ridges[key])), steps)
        for key, points in self.collectives.items():
            fit.comm[key] = curves.fit_comm(*(np.array(v) for v in zip(*points)))
        return fit


def points() -> Points:
    return Points({}, {}, math.inf, {})


def fit_rows(rows, gpu: Accelerator) -> Fit:
    """Curves of a table's rows with every bound recomputed on `gpu` (roofline.estimate.curves)."""
    return points().add(rows, gpu).fit()


def spec_key(gpu: Accelerator) -> str:
    """What a fit depends on: the device's bandwidth and peaks."""
    return json.dumps([gpu.bandwidth_bytes_per_s, sorted(gpu.peak_flops_per_s.items())])


def fit_path(table: str | Path) -> Path:
    """The fit beside a table: x.csv or x.csv.gz -> x.fit.npz."""
    return Path(str(table).removesuffix(".gz").removesuffix(".csv") + ".fit.npz")


def table_facts(rows) -> dict:
    """What a table's rows say about it: the framework its kernels ran under ("" for none), whether every row is
    measured, whether its times are kernel durations (a framework's tables: kernels replayed without launch gaps;
    a table of `roofline measure` times single launches)."""
    framework = next((r["framework"] for r in rows if r["framework"]), "")
    return {"framework": framework, "measured": all(r["source"] == "measured" for r in rows),
            "kernel_durations": bool(framework) or any("vidur" in r.get("provenance", "") for r in rows)}


def save_fit(path: str | Path, gpu: Accelerator, rows=None) -> Fit:
    """Fit the table at `path` on `gpu` and keep the fit beside it (fit_path), with what load_fit checks."""
    rows = read_table(str(path)) if rows is None else rows
    fit = fit_rows(rows, gpu)
    fit.save(fit_path(path), spec=spec_key(gpu), csv_bytes=Path(path).stat().st_size, **table_facts(rows))
    return fit


def load_fit(path: str, gpu: Accelerator) -> tuple[Fit, dict]:
    """(fit, table_facts) of the table at `path` on `gpu`: the fit kept beside it (shipped tables and those of
    `roofline calibrate`) while it matches the table and the device's spec, else fitted now."""
    kept = fit_path(path)
    if kept.is_file():
        fit, meta = curves.load(kept)
        if meta.get("spec") == spec_key(gpu) and meta.get("csv_bytes") == Path(path).stat().st_size:
            return fit, {name: meta[name] for name in ("framework", "measured", "kernel_durations")}
    rows = read_table(path)
    return fit_rows(rows, gpu), table_facts(rows)
