"""Accelerator specs and the built-in catalog (`data/accelerators.csv`, one row per device, sources per row).

Units: peaks in FLOP/s (or OP/s for integer types) and bandwidth in byte/s, converted from the vendors' decimal
TFLOP/s and GB/s (1 TB/s = 1e12 byte/s). Memory capacity: the real number of bytes. Vendors print "80 GB" for HBM
and GDDR stacks that hold 80 GiB (nvidia-smi shows 81559 MiB of an H100 80GB after ECC and the driver's reserve;
Google's docs print GiB), so the printed number is read as GiB (x 2**30) for every vendor alike. How much of it a
deployment may use is the scenario's `memory_utilization` (default 0.90, as serving engines leave headroom for the
runtime, CUDA graphs and fragmentation). Peaks are dense (2:4 sparsity figures halved) tensor-core rates with FP32
accumulate.

Interconnect (per device, used by multi-device deployments): the scale-up link (NVLink, xGMI, ICI, PCIe) with its
per-direction bandwidth [byte/s] and the size of one scale-up domain (8 for HGX, 72 for GB200 NVL72, 1 for a device
that has no link), the scale-out network per device (400 Gb/s InfiniBand = 50 GB/s) and a per-collective latency
for each. A collective whose group fits in one domain uses the scale-up link, a larger one the scale-out network.
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
GIB = 2**30
MICRO = 1e-6

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
    "b300": "per-GPU share of HGX B300 figures; FP4 dense quoted 105-108 PF per 8 GPUs, INT8 cut (low-medium)",
    "gb300-gpu": "per-GPU share of the GB300 NVL72 rack figures (low-medium)",
    "h20": "no official NVIDIA datasheet; peaks from public spec sheets (medium-low)",
    "rtx-pro-6000": "tensor peaks derived from the FP4-sparse headline with Blackwell ratios (medium-low)",
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
    scaleup_link: str = ""  # e.g. "NVLink 4"; "" = no scale-up link
    scaleup_bandwidth_bytes_per_s: float = 0.0  # per device, per direction
    scaleup_domain: int = 1  # devices one scale-up domain holds
    scaleout_bandwidth_bytes_per_s: float = 0.0  # per device, per direction; 0 = none
    scaleup_latency_s: float = 0.0  # per collective
    scaleout_latency_s: float = 0.0
    interconnect_source: str = ""
    calibration: str = ""  # path of a calibration table (roofline.estimate.calibration); "" = the shipped one, if any
    framework: str = ""  # serving framework whose shipped tables it uses (roofline.estimate); "" = its default

    def link(self, span: int) -> tuple[float, float]:
        """(bandwidth [byte/s], latency [s]) of a collective over `span` devices: scale-up inside one domain,
        scale-out beyond it. A one-line error when the device has no such link."""
        if span <= self.scaleup_domain and self.scaleup_bandwidth_bytes_per_s > 0:
            return self.scaleup_bandwidth_bytes_per_s, self.scaleup_latency_s
        if self.scaleout_bandwidth_bytes_per_s > 0:
            return self.scaleout_bandwidth_bytes_per_s, self.scaleout_latency_s
        raise RooflineInputError(
            f"gpu '{self.key}' has no link for {span} devices (scale-up domain {self.scaleup_domain} device(s), "
            "no scale-out network); use fewer devices or give scaleup_gbps/scaleup_domain/scaleout_gbps")

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
        memory_bytes=memory_gb * GIB,
        bandwidth_bytes_per_s=float(row["mem_bandwidth_GBps"]) * GIGA,
        peak_flops_per_s=peaks,
        l2_bytes=l2 * 1e6 if l2 else None,
        source=row.get("source", ""),
        notes=notes,
        estimate=key in ESTIMATED,
        scaleup_link=row.get("scaleup_link", ""),
        scaleup_bandwidth_bytes_per_s=(_float_or_none(row.get("scaleup_GBps", "")) or 0.0) * GIGA,
        scaleup_domain=int(_float_or_none(row.get("scaleup_domain", "")) or 1),
        scaleout_bandwidth_bytes_per_s=(_float_or_none(row.get("scaleout_GBps", "")) or 0.0) * GIGA,
        scaleup_latency_s=(_float_or_none(row.get("scaleup_latency_us", "")) or 0.0) * MICRO,
        scaleout_latency_s=(_float_or_none(row.get("scaleout_latency_us", "")) or 0.0) * MICRO,
        interconnect_source=row.get("interconnect_source", ""),
    )


@lru_cache(maxsize=1)
def catalog() -> dict[str, Accelerator]:
    """All built-in accelerators by key (lowercase-dashed, as in the shipped CSV)."""
    with resources.files("roofline").joinpath("data/accelerators.csv").open(newline="") as handle:
        return {row["key"]: _from_csv_row(row) for row in csv.DictReader(handle)}


def get_accelerator(key: str) -> Accelerator:
    """The catalog entry `key`, or a one-line error with a "did you mean"."""
    try:
        return catalog()[key]
    except KeyError:
        raise unknown("gpu", key, catalog()) from None


#: Numeric config fields of a gpus: entry -> (Accelerator field, unit factor to SI)
_SCALED_FIELDS = {
    "memory_gb": ("memory_bytes", GIB),
    "bandwidth_gbps": ("bandwidth_bytes_per_s", GIGA),
    "l2_mb": ("l2_bytes", 1e6),
    "scaleup_gbps": ("scaleup_bandwidth_bytes_per_s", GIGA),
    "scaleout_gbps": ("scaleout_bandwidth_bytes_per_s", GIGA),
    "scaleup_latency_us": ("scaleup_latency_s", MICRO),
    "scaleout_latency_us": ("scaleout_latency_s", MICRO),
}
#: Fields a gpus: entry may hold (besides `parallel`, which the config layer takes out first)
ENTRY_FIELDS = ("base", "name", "vendor", "source", "peak_tflops", "scaleup_link", "scaleup_domain",
                *_SCALED_FIELDS, "calibration", "framework")


def accelerator_from_entry(key: str, entry: dict | None) -> Accelerator:
    """Resolve a config entry: {} = catalog entry `key`; some fields = override them; a new key = new device;
    `base: <catalog key>` = the catalog device `base` under the new key `key` (e.g. with its own parallel plan).

    Entry fields (config units): name, vendor, memory_gb [read as GiB, like the catalog], bandwidth_gbps [decimal
    GB/s], peak_tflops {dtype: dense TFLOP/s}, l2_mb, source; interconnect: scaleup_link, scaleup_gbps [decimal GB/s
    per direction], scaleup_domain [devices], scaleout_gbps, scaleup_latency_us, scaleout_latency_us; calibration
    (path of a calibration table, as given); framework (the serving framework whose tables it uses, as given: the
    estimate layer checks it).
    """
    entry = dict(entry or {})
    unknown_fields = sorted(set(entry) - set(ENTRY_FIELDS))
    if unknown_fields:
        raise unknown(f"gpus.{key}", unknown_fields[0], ENTRY_FIELDS)
    base_key = entry.pop("base", None)
    if base_key is not None:
        try:
            base = replace(catalog()[str(base_key)], key=key)
        except KeyError:
            raise unknown(f"gpus.{key}.base", base_key, catalog()) from None
    else:
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
    for name in ("name", "vendor", "source", "scaleup_link"):
        if name in entry:
            changes[name] = str(entry[name])
    for name, (field_name, factor) in _SCALED_FIELDS.items():
        if name in entry:
            changes[field_name] = _positive(key, name, entry[name]) * factor
    if "scaleup_domain" in entry:
        domain = entry["scaleup_domain"]
        if isinstance(domain, bool) or not isinstance(domain, int) or not 1 <= domain <= 1 << 16:
            raise RooflineInputError(f"gpus.{key}.scaleup_domain: {domain!r} is not allowed; expected an integer "
                                     "from 1 to 65536 (devices in one scale-up domain)")
        changes["scaleup_domain"] = domain
    if "peak_tflops" in entry:
        peaks = dict(base.peak_flops_per_s)
        for dtype, value in (entry["peak_tflops"] or {}).items():
            if dtype not in PEAK_DTYPES:
                raise unknown(f"gpus.{key}.peak_tflops", dtype, PEAK_DTYPES)
            peaks[dtype] = _positive(key, f"peak_tflops.{dtype}", value) * TERA
        changes["peak_flops_per_s"] = peaks
    if changes and (key in catalog() or base_key is not None):
        changes["source"] = changes.get("source", base.source + " (overridden in config.yaml)")
    if "calibration" in entry:  # measured times, not a spec field: the source stays the catalog's
        changes["calibration"] = str(entry["calibration"])
    if "framework" in entry:
        changes["framework"] = str(entry["framework"])
    return replace(base, **changes)


def _positive(key: str, name: str, value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise RooflineInputError(f"gpus.{key}.{name}: '{value}' is not a number; expected a positive number") from None
    if not math.isfinite(number) or number <= 0:
        raise RooflineInputError(f"gpus.{key}.{name}: {value} is not allowed; expected a positive number")
    return number
