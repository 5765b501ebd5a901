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
import numbers
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources

from .dtypes import PEAK_DTYPES
from .errors import RooflineInputError, did_you_mean, unknown

TERA = 1e12
GIGA = 1e9
GIB = 2**30
MICRO = 1e-6
#: Serving frameworks (one definition for the whole package): whose measured kernel tables a device's expected times
#: use (roofline.estimate) and whose scheduler a served run assumes (roofline.serving.framework)
FRAMEWORKS = ("vllm", "sglang", "trtllm")

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
    in_network_reduction: bool = False  # the scale-up switch reduces all-reduce data in flight (NVLink SHARP)
    scaleout_latency_s: float = 0.0
    interconnect_source: str = ""
    calibration: str = ""  # path of a calibration table (roofline.estimate.calibration); "" = the shipped one, if any
    tdp_w: float | None = None  # W, the datasheet's board power (TDP/TBP); None = not published
    power_w: float | None = None  # W, measured mean power per device while serving (config only; wins over tdp_w)
    price_per_hour: float | None = None  # USD per device-hour (config or --price-per-hour; none shipped)
    chip: str = ""  # catalog key of the silicon (an alias with `base:` keeps its base's): whose measurements apply;
    # OTHER_CHIP where an entry moved a catalog device's speeds past SAME_CHIP_WITHIN (no catalog chip's tables)
    tables_of: str = ""  # where an entry moved a catalog chip's speeds (chip OTHER_CHIP): that chip, whose shipped
    # tables its expected times borrow (their efficiencies at this device's bounds, labelled default)
    calibration_any_device: bool = False  # apply `calibration` even if it was measured on another chip
    framework: str = ""  # serving framework (FRAMEWORKS) whose shipped tables it uses (roofline.estimate); "" = its
    # default

    @property
    def measured_as(self) -> str:
        """The catalog key whose measured tables apply to this device: its chip, else its own key; OTHER_CHIP (no
        table's) where an entry moved its speeds away from its catalog chip's."""
        return self.chip or self.key

    @property
    def reach(self) -> float:
        """The most devices one collective (or one cache hand-over) can span: any number over a scale-out network,
        the scale-up domain without one (1: the device links to none)."""
        if self.scaleout_bandwidth_bytes_per_s > 0:
            return float("inf")
        return float(self.scaleup_domain) if self.scaleup_bandwidth_bytes_per_s > 0 else 1.0

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

    @property
    def sixteen_bit(self) -> str:
        """The 16-bit float this device computes at when none is named: fp16, or bf16 where it publishes a bf16
        peak and no fp16 one (TPUs, Gaudi: bf16 is their 16-bit type; same width, same bytes)."""
        peaks = self.peak_flops_per_s
        return "bf16" if "fp16" not in peaks and "bf16" in peaks else "fp16"


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
        in_network_reduction=row.get("in_network_reduction", "") == "1",
        scaleout_latency_s=(_float_or_none(row.get("scaleout_latency_us", "")) or 0.0) * MICRO,
        interconnect_source=row.get("interconnect_source", ""),
        tdp_w=_float_or_none(row.get("tdp_w", "")),
        chip=key,
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
#: Unscaled numeric fields of a gpus: entry (positive numbers in their own units: W, USD per device-hour)
_POWER_AND_PRICE = ("tdp_w", "power_w", "price_per_hour")
ENTRY_FIELDS = ("base", "name", "vendor", "source", "peak_tflops", "scaleup_link", "scaleup_domain",
                "in_network_reduction", *_SCALED_FIELDS, "calibration", "calibration_any_device", "framework",
                *_POWER_AND_PRICE)


#: the source of a device a `gpus:` entry defines or changes without naming one (`source:`): the entry may come from
#: config.yaml, a --configfile or the command line's --gpu file
ENTRY_SOURCE = "user-defined (a gpus: entry)"


def accelerator_from_entry(key: str, entry: dict | None) -> Accelerator:
    """Resolve a config entry: {} = catalog entry `key`; some fields = override them; a new key = new device;
    `base: <catalog key>` = the catalog device `base` under the new key `key` (e.g. with its own parallel plan).

    Entry fields (config units): name, vendor, memory_gb [read as GiB, like the catalog], bandwidth_gbps [decimal
    GB/s], peak_tflops {dtype: dense TFLOP/s}, l2_mb, source; interconnect: scaleup_link, scaleup_gbps [decimal GB/s
    per direction], scaleup_domain [devices], in_network_reduction (true: the scale-up switch reduces all-reduce
    data in flight), scaleout_gbps, scaleup_latency_us, scaleout_latency_us; calibration
    (path of a calibration table, as given), calibration_any_device (true: apply it even if measured on another
    chip), framework (FRAMEWORKS: the serving framework whose shipped tables its expected times use); tdp_w [W],
    power_w [W, measured], price_per_hour [USD per device-hour]. The device keeps the chip of the catalog entry it
    starts from (`key` or `base`) unless the entry moves its bandwidth or a peak past SAME_CHIP_WITHIN (OTHER_CHIP);
    new hardware has none.
    """
    entry = dict(entry or {})
    unknown_fields = sorted(set(entry) - set(ENTRY_FIELDS))
    if unknown_fields:
        raise unknown(f"gpus.{key}", unknown_fields[0], ENTRY_FIELDS)
    base_key = entry.pop("base", None)
    base = _entry_base(key, entry, base_key)
    changes = {name: value for name, value in _entry_changes(key, entry, base).items()
               if getattr(base, name) != value}  # restating a catalog value overrides nothing
    if changes and (key in catalog() or base_key is not None):
        changes["source"] = changes.get("source", base.source + " (some figures changed by a gpus: entry)")
    if base.chip and _another_chip(base, changes):
        # the base's tables time another chip's kernels: not this one's measurements (OTHER_CHIP), but the nearest
        # evidence there is, their efficiencies at this device's bounds (labelled default; the pooled fallback's
        # A100/H100 mix had priced a GH200's faster memory slower than the H100's)
        changes["chip"], changes["tables_of"] = OTHER_CHIP, base.chip
    if "calibration" in entry:  # measured times, not a spec field: the source stays the catalog's
        changes["calibration"] = str(entry["calibration"])
    for name in ("power_w", "price_per_hour"):  # a measurement and a price, not spec fields: the same
        if name in entry:
            changes[name] = _positive(key, name, entry[name])
    if "calibration_any_device" in entry:
        if not isinstance(entry["calibration_any_device"], bool):
            raise RooflineInputError(f"gpus.{key}.calibration_any_device: {entry['calibration_any_device']!r} is not "
                                     "allowed; expected true or false")
        if entry["calibration_any_device"] and "calibration" not in entry:  # it would change nothing
            raise RooflineInputError(f"gpus.{key}.calibration_any_device: applies the entry's own calibration table, "
                                     "and it gives none; add calibration: PATH or leave it out")
        changes["calibration_any_device"] = entry["calibration_any_device"]
    if "framework" in entry:  # which measured tables apply, not a spec field: the source stays the catalog's
        if entry["framework"] not in FRAMEWORKS:
            raise unknown(f"gpus.{key}.framework", entry["framework"], FRAMEWORKS)
        changes["framework"] = entry["framework"]
    return check_plausible(key, entry, replace(base, **changes))


#: how far (relative) an entry may move a catalog device's bandwidth or one of its peaks and stay that chip (a
#: clock or SKU variant); past it the device is another chip, whose kernels the base's measured tables do not time
SAME_CHIP_WITHIN = 0.1
#: the chip of a device an entry moved past SAME_CHIP_WITHIN: no catalog device's, so no shipped table matches it
OTHER_CHIP = "another chip"


def _another_chip(base: Accelerator, changes: dict) -> bool:
    """Whether an entry's `changes` move `base`'s memory bandwidth or a peak it publishes past SAME_CHIP_WITHIN (a
    peak it adds for another dtype, its memory size or links leave the chip as it is)."""
    moved = [(base.bandwidth_bytes_per_s, changes.get("bandwidth_bytes_per_s", base.bandwidth_bytes_per_s))]
    peaks = changes.get("peak_flops_per_s", {})
    moved += [(value, peaks.get(dtype, value)) for dtype, value in base.peak_flops_per_s.items()]
    return any(old > 0 and abs(new / old - 1) > SAME_CHIP_WITHIN for old, new in moved)


#: Plausible range of each device figure once converted to SI units, from a microcontroller to a whole rack, with
#: the entry field that sets it and the unit of the range. Outside it a figure is a typo (1.0e+308, 5.0e-324) that
#: would overflow or divide by zero in the jobs, so it is refused where an entry is resolved (accelerator_from_entry:
#: the config and every other path). An attribute a device lacks or leaves at 0 or None (no such figure) is not
#: checked.
PLAUSIBLE_SI = {
    "memory_bytes": ("memory_gb", 1e6, 1e15, "byte"),                 # 1 MB .. 1 PB
    "bandwidth_bytes_per_s": ("bandwidth_gbps", 1e6, 1e16, "byte/s"),  # 1 MB/s .. 10 PB/s
    "l2_bytes": ("l2_mb", 1e3, 1e12, "byte"),                          # 1 kB .. 1 TB
    "peak_flops_per_s": ("peak_tflops", 1e6, 1e21, "FLOP/s"),          # 1 MFLOP/s .. 1 ZFLOP/s, per dtype
    "scaleup_bandwidth_bytes_per_s": ("scaleup_gbps", 1e6, 1e16, "byte/s"),
    "scaleout_bandwidth_bytes_per_s": ("scaleout_gbps", 1e6, 1e16, "byte/s"),
    "scaleup_latency_s": ("scaleup_latency_us", 1e-9, 1.0, "s"),       # 1 ns .. 1 s per collective
    "scaleout_latency_s": ("scaleout_latency_us", 1e-9, 1.0, "s"),
}


#: the link latencies, whose documented default 0 (none) an entry may also write
LATENCIES = ("scaleup_latency_s", "scaleout_latency_s")


def check_plausible(key: str, entry: dict | None, gpu: Accelerator) -> Accelerator:
    """`gpu` if every figure in PLAUSIBLE_SI lies in its range after unit conversion, else one line naming
    gpus.<key>.<field> and the value as the entry wrote it."""
    entry = entry or {}
    for attribute, (field_name, low, high, unit) in PLAUSIBLE_SI.items():
        value = getattr(gpu, attribute, None)
        figures = value.items() if isinstance(value, dict) else [(None, value)]
        for dtype, number in figures:
            written = (entry.get(field_name) or {}).get(dtype) if dtype else entry.get(field_name)
            zero = written is None or (attribute in LATENCIES and written == 0)  # unset, or a latency's default
            if (not number and zero) or low * (1 - 1e-9) <= number <= high * (1 + 1e-9):
                continue  # 0.001 GB/s is 1e6 byte/s; a written 5e-324 us that converts to 0 s is not skipped
            where = f"{field_name}.{dtype}" if dtype else field_name
            raise RooflineInputError(f"gpus.{key}.{where}: {written if written is not None else number} is not "
                                     f"plausible ({number:.3g} {unit} once converted); expected {low:g} to "
                                     f"{high:g} {unit}")
    if "peak_tflops" in entry or "bandwidth_gbps" in entry:
        _check_ridges(key, gpu)
    _check_links(key, entry, gpu)
    return gpu


#: the ridge (peak / memory bandwidth, FLOP/byte) of any real device, from an SRAM wafer's ~3 to fp4 on HBM's
#: ~2,000 (the catalog: 9.4 to 1,875): a peak or a bandwidth typed in a unit 1000x off lands outside
PLAUSIBLE_RIDGE = (1.0, 50_000.0)


def _check_ridges(key: str, gpu: Accelerator) -> None:
    """One line where a peak over the memory bandwidth gives a ridge no device has (PLAUSIBLE_RIDGE): each figure
    alone was plausible, the pair is a unit slip (a peak in PFLOP/s, a bandwidth in TB/s)."""
    low, high = PLAUSIBLE_RIDGE
    peaks = {dtype: peak for dtype, peak in gpu.peak_flops_per_s.items() if peak > 0}
    for dtype in {min(peaks, key=peaks.get), max(peaks, key=peaks.get)} if peaks else ():  # narrowest, widest
        peak = peaks[dtype]
        ridge = peak / gpu.bandwidth_bytes_per_s
        if not low <= ridge <= high:
            raise RooflineInputError(
                f"gpus.{key}: peak_tflops.{dtype} {peak / TERA:g} over bandwidth_gbps "
                f"{gpu.bandwidth_bytes_per_s / GIGA:g} is a ridge of {ridge:.3g} FLOP/byte; real devices lie between "
                f"{low:g} and {high:,.0f} (H100 SXM bf16: 295): check the units (dense TFLOP/s, decimal GB/s)")


def _check_links(key: str, entry: dict, gpu: Accelerator) -> None:
    """One line for half a scale-up link: a domain of several devices with no bandwidth, or a bandwidth with a
    domain of one (either links nothing, and `parallel: auto` had kept the model on one device without a word)."""
    if "scaleup_domain" in entry and gpu.scaleup_domain > 1 and not gpu.scaleup_bandwidth_bytes_per_s:
        raise RooflineInputError(f"gpus.{key}.scaleup_domain: {gpu.scaleup_domain} devices with no scaleup_gbps, so "
                                 "the domain links nothing; give scaleup_gbps (the link per device and direction, "
                                 "decimal GB/s) or leave scaleup_domain out")
    if "scaleup_gbps" in entry and gpu.scaleup_domain <= 1:
        raise RooflineInputError(f"gpus.{key}.scaleup_gbps: {entry['scaleup_gbps']} with a scale-up domain of one "
                                 "device links nothing; give scaleup_domain (the devices the link joins, e.g. 8)")


def _entry_base(key: str, entry: dict, base_key) -> Accelerator:
    """The device a gpus: entry starts from: the catalog's `base` under the key `key`, the catalog's `key`, or a
    blank new device (which must then give memory_gb, bandwidth_gbps and peak_tflops)."""
    if base_key is not None:
        try:
            return replace(catalog()[str(base_key)], key=key)
        except KeyError:
            raise unknown(f"gpus.{key}.base", base_key, catalog()) from None
    if key in catalog():
        return catalog()[key]
    missing = [k for k in ("memory_gb", "bandwidth_gbps", "peak_tflops") if k not in entry]
    if missing:
        # a near miss of a catalog key, or an empty entry, is a misspelt key; otherwise new hardware
        if did_you_mean(key, catalog()) or not entry:
            raise unknown("gpus", key, catalog())
        raise RooflineInputError(f"gpus.{key}: not in the catalog, so it needs {', '.join(missing)} "
                                 "(new hardware: name, memory_gb, bandwidth_gbps, peak_tflops)")
    return Accelerator(key=key, name=key, vendor="", memory_bytes=1.0, bandwidth_bytes_per_s=1.0,
                       source=ENTRY_SOURCE)


def _entry_changes(key: str, entry: dict, base: Accelerator) -> dict:
    """The Accelerator fields a gpus: entry sets, in SI units (peaks merged into the base device's)."""
    changes: dict = {}
    for name in ("name", "vendor", "source", "scaleup_link"):
        if name in entry:
            changes[name] = str(entry[name])
    for name, (field_name, factor) in _SCALED_FIELDS.items():
        if name in entry:  # a latency may be written as its default, 0 (none)
            changes[field_name] = _positive(key, name, entry[name], zero=field_name in LATENCIES) * factor
    if "tdp_w" in entry:
        changes["tdp_w"] = _positive(key, "tdp_w", entry["tdp_w"])
    if "scaleup_domain" in entry:
        domain = entry["scaleup_domain"]
        if isinstance(domain, bool) or not isinstance(domain, int) or not 1 <= domain <= 1 << 16:
            raise RooflineInputError(f"gpus.{key}.scaleup_domain: {domain!r} is not allowed; expected an integer "
                                     "from 1 to 65536 (devices in one scale-up domain)")
        changes["scaleup_domain"] = domain
    if "scaleup_link" in entry and "in_network_reduction" not in entry:
        changes["in_network_reduction"] = False  # another link: its switch reduces only when the entry says so
    if "in_network_reduction" in entry:
        if not isinstance(entry["in_network_reduction"], bool):
            raise RooflineInputError(f"gpus.{key}.in_network_reduction: {entry['in_network_reduction']!r} is not "
                                     "allowed; expected true or false (the scale-up switch reduces all-reduce data "
                                     "in flight, as NVLink SHARP does)")
        changes["in_network_reduction"] = entry["in_network_reduction"]
    if "peak_tflops" in entry:
        peaks = dict(base.peak_flops_per_s)
        if not isinstance(entry["peak_tflops"] or {}, dict):
            raise RooflineInputError(f"gpus.{key}.peak_tflops: {entry['peak_tflops']!r} is not allowed; expected a "
                                     "mapping of dtype to dense TFLOP/s, e.g. {fp16: 989}")
        for dtype, value in (entry["peak_tflops"] or {}).items():
            if dtype not in PEAK_DTYPES:
                raise unknown(f"gpus.{key}.peak_tflops", dtype, PEAK_DTYPES)
            peaks[dtype] = _positive(key, f"peak_tflops.{dtype}", value) * TERA
        changes["peak_flops_per_s"] = peaks
    return changes


def _numeric_text(value: object) -> bool:
    """Whether `value` is a quoted number ("800")."""
    try:
        return isinstance(value, str) and math.isfinite(float(value))
    except ValueError:
        return False


def _positive(key: str, name: str, value: object, zero: bool = False) -> float:
    """`value` as a float if it is a positive number (`zero`: or 0), else one line naming gpus.<key>.<name>."""
    # a YAML true or a quoted "800" is no number (float() took true as 1 GB/s and "800" as 800, where a config
    # entry's schema and the integer fields refuse both)
    expected = "a number >= 0" if zero else "a positive number"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        shown = f"'{value}'" if isinstance(value, str) else repr(value)
        raise RooflineInputError(f"gpus.{key}.{name}: {shown} is not a number; expected {expected}"
                                 + (", without quotes" if _numeric_text(value) else ""))
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise RooflineInputError(f"gpus.{key}.{name}: {value} is not allowed; expected {expected}")
    return number
