"""Accelerator specs and the built-in catalog (`data/accelerators.csv`, one row per device, sources per row).

Units: peaks in FLOP/s (or OP/s for integer types) and bandwidth in byte/s, converted from the vendors' decimal
TFLOP/s and GB/s (1 TB/s = 1e12 byte/s). Memory capacity: the number the vendor prints, times 1e9 bytes, for every
vendor alike (NVIDIA's "80 GB" and Google's "16 GiB" are both binary sizes in fact): the ~7% the device holds
beyond that is left as headroom for the runtime's reserved memory, and fit verdicts compare devices on one scale.
Peaks are dense (2:4 sparsity figures halved) tensor-core rates with FP32 accumulate.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources

from .dtypes import PEAK_DTYPES
from .errors import RooflineInputError, did_you_mean, unknown

TERA = 1e12
GIGA = 1e9

#: Devices whose PEAKS OR BANDWIDTH are not all vendor-printed dense figures, with the reason (from each row's notes
#: in data/accelerators.csv). An L2 size or TDP that is only estimated does not make a device an estimate.
ESTIMATED = {
    "rtx-a6000": "tensor splits recalled from the GA102 whitepaper appendix (medium-high)",
    "l40s": "int8 dense peak not on every datasheet copy (medium)",
    "rtx-6000-ada": "tensor peaks derived from the FP8-sparse headline with Ada ratios (medium)",
    "h100-nvl": "dense = half of the datasheet's sparse figures (medium)",
    "b200": "NVIDIA revised the Blackwell figures; dense = half of sparse (low-medium)",
    "gb200-gpu": "per-GPU share of the NVL72 superchip figures (low-medium)",
    "gaudi2": "MME peaks from a comparison column; fp8 differs between sources (medium)",
    "tpu-v5p": "int8 peak from the announcement (medium)",
    "m1-max": "fp16 assumed equal to fp32 on Apple GPUs (medium)",
    "m2-ultra": "fp16 assumed equal to fp32 on Apple GPUs (medium)",
}



@dataclass(frozen=True)
class Accelerator:
    """One device: dense peaks per dtype [FLOP/s], memory bandwidth [byte/s] and capacity [byte]."""

    key: str
    name: str
    vendor: str
    memory_bytes: float
    bandwidth_bytes_per_s: float
    peak_flops_per_s: dict[str, float] = field(default_factory=dict)
    l2_bytes: float | None = None
    source: str = ""
    notes: str = ""
    estimate: bool = False

    def peak(self, dtype: str) -> float:
        """Dense peak for `dtype` [FLOP/s]; a clear error if the device publishes none."""
        try:
            return self.peak_flops_per_s[dtype]
        except KeyError:
            have = ", ".join(self.peak_flops_per_s) or "none"
            raise RooflineInputError(
                f"gpu '{self.key}' has no {dtype} peak (it publishes: {have}); choose a dtype it supports"
            ) from None

    def ridge(self, dtype: str) -> float:
        """Ridge point P / BW [FLOP/byte]: the intensity above which `dtype` compute is the limit."""
        return self.peak(dtype) / self.bandwidth_bytes_per_s


def _float_or_none(text: str) -> float | None:
    return float(text) if text and text.strip() else None


def _from_csv_row(row: dict[str, str]) -> Accelerator:
    key = row["key"]
    peaks = {}
    for dtype in PEAK_DTYPES:
        column = f"{dtype}_tops" if dtype.startswith("int") else f"{dtype}_tflops"
        value = _float_or_none(row.get(column, ""))
        if value:
            peaks[dtype] = value * TERA
    memory_gb = float(row["memory_gb"])
    l2 = _float_or_none(row.get("l2_cache_MB", ""))
    notes = row.get("notes", "")
    return Accelerator(
        key=key,
        name=row["name"],
        vendor=row["vendor"],
        memory_bytes=memory_gb * GIGA,
        bandwidth_bytes_per_s=float(row["mem_bandwidth_GBps"]) * GIGA,
        peak_flops_per_s=peaks,
        l2_bytes=l2 * 1e6 if l2 else None,
        source=row.get("source", ""),
        notes=notes,
        estimate=key in ESTIMATED,
    )


@lru_cache(maxsize=1)
def catalog() -> dict[str, Accelerator]:
    """All built-in accelerators by key (lowercase-dashed, as in the shipped CSV)."""
    with resources.files(__package__).joinpath("data/accelerators.csv").open(newline="") as handle:
        return {row["key"]: _from_csv_row(row) for row in csv.DictReader(handle)}


def get_accelerator(key: str) -> Accelerator:
    """The catalog entry `key`, or a one-line error with a "did you mean"."""
    try:
        return catalog()[key]
    except KeyError:
        raise unknown("gpu", key, catalog()) from None


def accelerator_from_entry(key: str, entry: dict | None) -> Accelerator:
    """Resolve a config entry: {} = catalog entry `key`; some fields = override them; a new key = new device.

    Entry fields (config units): name, vendor, memory_gb, bandwidth_gbps [decimal GB/s],
    peak_tflops {dtype: dense TFLOP/s}, l2_mb, source.
    """
    entry = dict(entry or {})
    base = catalog().get(key)
    if base is None:
        missing = [k for k in ("memory_gb", "bandwidth_gbps", "peak_tflops") if k not in entry]
        if missing:
            # a near miss of a catalog key, or an empty entry, is a misspelt key; otherwise new hardware
            if did_you_mean(key, catalog()) or not entry:
                raise unknown("gpus", key, catalog())
            raise RooflineInputError(f"gpus.{key}: not in the catalog, so it needs {', '.join(missing)} "
                                     "(new hardware: name, memory_gb, bandwidth_gbps, peak_tflops)")
        base = Accelerator(key=key, name=key, vendor="", memory_bytes=1.0, bandwidth_bytes_per_s=1.0,
                           source="config.yaml")
    changes: dict = {}
    for name in ("name", "vendor", "source"):
        if name in entry:
            changes[name] = str(entry[name])
    if "memory_gb" in entry:
        changes["memory_bytes"] = _positive(key, "memory_gb", entry["memory_gb"]) * GIGA
    if "bandwidth_gbps" in entry:
        changes["bandwidth_bytes_per_s"] = _positive(key, "bandwidth_gbps", entry["bandwidth_gbps"]) * GIGA
    if "l2_mb" in entry:
        changes["l2_bytes"] = _positive(key, "l2_mb", entry["l2_mb"]) * 1e6
    if "peak_tflops" in entry:
        peaks = dict(base.peak_flops_per_s)
        for dtype, value in (entry["peak_tflops"] or {}).items():
            if dtype not in PEAK_DTYPES:
                raise unknown(f"gpus.{key}.peak_tflops", dtype, PEAK_DTYPES)
            peaks[dtype] = _positive(key, f"peak_tflops.{dtype}", value) * TERA
        changes["peak_flops_per_s"] = peaks
    if changes and key in catalog():
        changes["source"] = changes.get("source", base.source + " (overridden in config.yaml)")
    unknown_fields = set(entry) - {"name", "vendor", "source", "memory_gb", "bandwidth_gbps", "l2_mb", "peak_tflops"}
    if unknown_fields:
        field_name = sorted(unknown_fields)[0]
        raise unknown(f"gpus.{key}", field_name,
                      ["name", "vendor", "source", "memory_gb", "bandwidth_gbps", "l2_mb", "peak_tflops"])
    return replace(base, **changes)


def _positive(key: str, name: str, value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise RooflineInputError(f"gpus.{key}.{name}: '{value}' is not a number; expected a positive number") from None
    if not math.isfinite(number) or number <= 0:
        raise RooflineInputError(f"gpus.{key}.{name}: {value} is not allowed; expected a positive number")
    return number
