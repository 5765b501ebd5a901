"""What a roofline is drawn from: the ceilings of a device (`Roof`, from its spec), the points of one legend entry
(`Series`), and the number formats of their labels (the report's formats: one formatter for both)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import Formatter

from .. import display
from ..display import INT_DTYPES
from ..engine.hardware import Accelerator
from .style import ROOF_COLOR


@dataclass(frozen=True)
class Roof:
    """The ceilings of one device: memory bandwidth and one or more compute peaks (the first is the main one)."""

    name: str
    bandwidth: float  # byte/s
    peaks: tuple[tuple[str, float], ...]  # (dtype label, FLOP/s), main first; equal values merged ("fp16/bf16")
    color: str = ROOF_COLOR
    linestyle: object = "-"  # of the solid ceilings (several GPUs: tells apart GPUs that share a colour)
    #: network roofs of a multi-device deployment: (link name, byte/s per direction); communication points sit at
    #: FLOPs per byte on the link (a hierarchical roofline: each level's points against that level's roof)
    links: tuple[tuple[str, float], ...] = ()

    @property
    def main_peak(self) -> float:
        return self.peaks[0][1]

    @property
    def ridge(self) -> float:
        return self.main_peak / self.bandwidth


def roof_for(gpu: Accelerator, compute_dtype: str, *, other_dtypes: bool = True, color: str = ROOF_COLOR,
             linestyle: object = "-", links: tuple[tuple[str, float], ...] = ()) -> Roof:
    """A Roof from the accelerator spec: the compute dtype's peak first, then (optionally) every other distinct
    peak the device publishes, dtypes with the same value merged into one label."""
    by_value: dict[float, list[str]] = {}
    main_value = gpu.peak(compute_dtype)
    for dtype, value in gpu.peak_flops_per_s.items():
        by_value.setdefault(value, []).append(dtype)
    main_names = by_value.pop(main_value)
    main_names.remove(compute_dtype)
    peaks = [("/".join([compute_dtype, *main_names]), main_value)]
    if other_dtypes:
        peaks += [("/".join(names), value) for value, names in sorted(by_value.items(), reverse=True)]
    return Roof(name=gpu.name, bandwidth=gpu.bandwidth_bytes_per_s, peaks=tuple(peaks), color=color,
                linestyle=linestyle, links=links)


@dataclass
class Series:
    """Points of one legend entry: x = arithmetic intensity [FLOP/byte], y = attainable [FLOP/s]."""

    x: np.ndarray
    y: np.ndarray
    color: str
    marker: str
    sizes: np.ndarray | float = 24.0
    label: str = ""
    filled: bool = True  # False: hollow markers (edge in `color`)


def fmt_value(value: float) -> str:
    """3 significant digits, thousands separated, as in the report's tables (one formatter for both):
    154.8 -> '155', 3.35 -> '3.35', 1307.4 -> '1,310'."""
    return display.sig(value)


def tick_label(value: float, powers: bool | None = None) -> str:
    """A log-axis tick: plain ('0.1', '5000') or as a power of ten ('10⁶', '2×10⁴'); `powers` None: powers only
    outside [0.001, 10^5), for a lone value (an axis's ticks take one style for all: tick_labels)."""
    if powers is None:
        powers = not plain(value)
    if value <= 0 or not powers:
        return f"{value:g}"
    exponent = math.floor(math.log10(value) + 1e-9)
    mantissa = value / 10.0 ** exponent
    if math.isclose(mantissa, 1.0, rel_tol=1e-9):
        return display.power_of_ten(exponent)
    return f"{mantissa:.2g}×{display.power_of_ten(exponent)}"


def plain(value: float) -> bool:
    """Whether a tick reads well written out: 0.001 <= value < 10^5 (longer ones collide on a crowded axis)."""
    return value <= 0 or 1e-3 <= value < 1e5


def in_powers(values) -> bool:
    """Whether one axis's ticks `values` are all written as powers of ten: unless every one is plain."""
    return not all(plain(v) for v in values)


def tick_labels(values) -> list[str]:
    """The labels of one log axis's ticks, in one style: written out where every tick is (plain), else all as
    powers of ten, so that an axis never reads '1000, 10000, 10⁵'."""
    values = list(values)
    powers = in_powers(values)
    return [tick_label(v, powers) for v in values]


class LogTicks(Formatter):
    """Matplotlib's major-tick formatter of a log axis in one style (tick_labels) over the ticks in view, the
    values divided by `scale` (FLOP/s -> TFLOP/s: 1e12)."""

    def __init__(self, scale: float = 1.0):
        self.scale, self.powers = scale, False

    def set_locs(self, locs):
        super().set_locs(locs)
        low, high = sorted(self.axis.get_view_interval()) if self.axis is not None else (-np.inf, np.inf)
        shown = [v / self.scale for v in locs if low <= v <= high] or [v / self.scale for v in locs]
        self.powers = in_powers(shown)

    def __call__(self, value, pos=None) -> str:
        return tick_label(value / self.scale, self.powers)


def peak_label(dtype_label: str, flops: float) -> str:
    """'fp16/bf16 989 TFLOP/s', 'int8 310 TOP/s'; floating and integer dtypes sharing one peak are named apart,
    since integer peaks are operations, not floating-point operations: 'fp8 1,980 TFLOP/s, int8 1,980 TOP/s'."""
    value = fmt_value(flops / 1e12)
    dtypes = dtype_label.split("/")
    floats = [d for d in dtypes if d not in INT_DTYPES]
    ints = [d for d in dtypes if d in INT_DTYPES]
    parts = ([f"{'/'.join(floats)} {value} TFLOP/s"] if floats else []) + (
        [f"{'/'.join(ints)} {value} TOP/s"] if ints else [])
    return ", ".join(parts)


def bandwidth_label(bandwidth: float) -> str:
    """'768 GB/s', '3.35 TB/s' (the report's format)."""
    return display.bandwidth(bandwidth)


def legend_handles(entries) -> list[Line2D]:
    """Proxy artists for a legend: {label: Line2D kwargs}, or (label, kwargs) pairs (labels may repeat)."""
    pairs = entries.items() if isinstance(entries, dict) else entries
    return [Line2D([], [], label=label, **kwargs) for label, kwargs in pairs]
