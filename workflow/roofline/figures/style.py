"""Colours, markers and matplotlib settings shared by every figure (applied per figure, never globally)."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps

import matplotlib

#: Settings applied inside `styled` only: text stays text in SVG (selectable in the PDF), one font family that
#: WeasyPrint also has (DejaVu Sans ships with matplotlib and Debian), small print sizes, deterministic SVG ids.
RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "roofline",
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "axes.titlesize": 9,
    "axes.labelsize": 8,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.0,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "path.simplify": True,
}

#: colour = stage in the per-GPU roofline (Okabe-Ito blue / vermillion: distinguishable by colour-blind readers)
STAGE_COLORS = {"prefill": "#0072B2", "decode": "#D55E00"}
STAGE_LINESTYLES = {"prefill": "-", "decode": "--"}
#: marker = operator class in every roofline
CLASS_MARKERS = {"gemm": "o", "attention": "s", "norm": "^", "elementwise": "D", "embedding": "v",
                 "communication": "P"}
#: colour = operator class in the time breakdown (bars carry no stage colour: stages are separate panels)
CLASS_COLORS = {"gemm": "#56B4E9", "attention": "#E69F00", "norm": "#009E73", "elementwise": "#CC79A7",
                "embedding": "#999999", "communication": "#8C510A"}
#: the mark of a setup that does not fit, in figures as in tables
MISFIT_MARK = "✗"
#: colour = GPU in cross-GPU figures, assigned in config order (Okabe-Ito, then Tol; wine sixth, sky blue eighth: the
#: first and sixth of the default config's six GPUs had been blue and sky blue, hard to tell apart)
GPU_PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#882255", "#000000", "#56B4E9",
               "#44AA99", "#999933", "#AA4499", "#332288")
#: light shading of the memory-bound and compute-bound regions
REGION_COLORS = {"memory": "#eef3f8", "compute": "#fbf4ea"}
ROOF_COLOR = "#444444"
#: the network (link) roofs of multi-device deployments
LINK_COLOR = "#8C510A"


#: after every len(GPU_PALETTE) GPUs the colours repeat; each round of the palette gets its own line style (roofs)
#: and marker (sweep curves), and odd rounds hollow points, so GPU 13 is not mistaken for GPU 1
GPU_LINESTYLES = ("-", (0, (5, 2)), (0, (1, 1.3)), (0, (6, 2, 1, 2)))
GPU_MARKERS = ("", "o", "^", "s")


@dataclass(frozen=True)
class GpuStyle:
    """How one GPU is drawn in figures where colour = GPU."""

    color: str
    linestyle: object  # a matplotlib line style
    marker: str  # sweep curves: "" (none) in the first round of the palette
    filled: bool  # roofline points: hollow in odd rounds
    round: int  # 0 for the first len(GPU_PALETTE) GPUs, 1 for the next, ...


def gpu_styles(keys) -> dict[str, GpuStyle]:
    """A stable style per GPU key, in the given (config) order: colour from the palette, and from the second
    round of the palette on a different line style, marker and fill (distinguishable beyond 12 GPUs)."""
    styles = {}
    for i, key in enumerate(keys):
        n = i // len(GPU_PALETTE)
        styles[key] = GpuStyle(GPU_PALETTE[i % len(GPU_PALETTE)], GPU_LINESTYLES[n % len(GPU_LINESTYLES)],
                               GPU_MARKERS[n % len(GPU_MARKERS)], n % 2 == 0, n)
    return styles


def under_width(order: int, count: int, thinnest: float, spread: float) -> float:
    """Line width of the `order`-th of `count` devices' lines that may coincide (an attention share two devices'
    bounds make the same, a compute roof two devices share): the first `thinnest + spread`, down to `thinnest` for
    the last, so each line drawn later leaves a coloured edge of those under it (at one width the last hid them)."""
    return thinnest + spread * (count - 1 - order) / max(count - 1, 1)


def class_marker(op_class: str) -> str:
    return CLASS_MARKERS.get(op_class, "X")


def class_color(op_class: str) -> str:
    return CLASS_COLORS.get(op_class, "#777777")


@contextmanager
def style():
    """matplotlib settings for one figure's lifetime (creation and saving)."""
    with matplotlib.rc_context(RC):
        yield


def styled(function):
    """Decorator: build the figure inside `style()` so fonts and sizes apply to every text it creates."""
    @wraps(function)
    def wrapper(*args, **kwargs):
        with style():
            return function(*args, **kwargs)
    return wrapper
