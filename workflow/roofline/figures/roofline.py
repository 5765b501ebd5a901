"""The one roofline-drawing function: ceilings from accelerator specs, points from the operator table.

Every roofline figure (one GPU with all dtype ceilings, or many GPUs with their compute-dtype ceiling) goes through
`draw_roofline`. Ceilings are drawn thin and behind the points, each labelled at its end with value and unit; the
bandwidth label is rotated to the slope the line has on screen (measured through the axes transform once the
limits and margins are final); the ridge of the main ceiling is a dotted vertical line; limits come from the data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator, NullFormatter

from .. import display
from ..display import INT_DTYPES
from ..engine.hardware import Accelerator
from .labels import PointLabel, cluster_requests, hits_paths, marker_boxes, overlaps_any, place_labels
from .style import LINK_COLOR, REGION_COLORS, ROOF_COLOR

#: a faint white ground under ceiling labels, so a line they must cross does not cut through the text
LABEL_BOX = {"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none", "alpha": 0.6}
#: data padding of the axes limits (factor on a log axis) so no point or label sits on the frame
PAD_X_LOW, PAD_X_HIGH, PAD_Y_LOW, PAD_Y_HIGH = 3.0, 4.0, 3.0, 3.5


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


@dataclass
class RooflineResult:
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    points: list[tuple[float, float]] = field(default_factory=list)
    labels: list = field(default_factory=list)
    skipped: list = field(default_factory=list)


def fmt_value(value: float) -> str:
    """3 significant digits, thousands separated, as in the report's tables (one formatter for both):
    154.8 -> '155', 3.35 -> '3.35', 1307.4 -> '1,310'."""
    return display.sig(value)


def tick_label(value: float) -> str:
    """A log-axis tick: '0.1', '1000', and powers of ten beyond (1e6 -> '10⁶'), so far-apart extreme specs
    keep short, non-overlapping labels."""
    if value <= 0 or 1e-3 <= value < 1e5:
        return f"{value:g}"
    exponent = round(math.log10(value))
    if math.isclose(value, 10.0 ** exponent, rel_tol=1e-9):
        return display.power_of_ten(exponent)
    return display.sig(value, 2)


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


def limits(roofs, series) -> tuple[tuple[float, float], tuple[float, float]]:
    """Axes limits that contain every point, every ridge and every ceiling, padded on the log scale."""
    xs = np.concatenate([s.x for s in series]) if series else np.array([])
    ys = np.concatenate([s.y for s in series]) if series else np.array([])
    ridges = [value / roof.bandwidth for roof in roofs for _, value in roof.peaks]
    peaks = [value for roof in roofs for _, value in roof.peaks]
    x_low = min([*xs, *ridges]) / PAD_X_LOW
    x_high = max([*xs, *ridges]) * PAD_X_HIGH
    # the memory roof must be visible at the left edge: y_low at most the lowest roof value there
    y_low = min([*ys, *(roof.bandwidth * x_low * PAD_X_LOW for roof in roofs)]) / PAD_Y_LOW
    y_high = max(peaks) * PAD_Y_HIGH
    return (x_low, x_high), (y_low, y_high)


def _screen_angle(ax, p0, p1) -> float:
    (x0, y0), (x1, y1) = ax.transData.transform([p0, p1])
    return math.degrees(math.atan2(y1 - y0, x1 - x0))


def _best(ax, renderer, make, candidates, *, taken, markers, paths):
    """The first candidate artist that collides with nothing, else the one with the fewest collisions.

    make(*candidate) creates an artist; a candidate is discarded outright when it leaves the axes or overlaps a
    label already placed; among the rest, covering a marker costs 10 and crossing a line 1."""
    frame = ax.get_window_extent(renderer).padded(-2)
    best = None
    for candidate in candidates:
        artist = make(*candidate)
        box = artist.get_window_extent(renderer)
        if not (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1) \
                or overlaps_any(box, taken, pad=1.5):
            artist.remove()
            continue
        score = 10 * sum(box.padded(1).overlaps(m) for m in markers) + sum(hits_paths(box, [p], 0) for p in paths)
        if best is None or score < best[0]:
            if best is not None:
                best[1].remove()
            best = (score, artist, box)
            if score == 0:
                break
        else:
            artist.remove()
    return best


def _ridge_caption(ax, renderer, ridge_boxes, taken, keep) -> None:
    """'ridges [FLOP/byte]:' a few points left of the lowest row of ridge values, else right of it, else above the
    values; skipped when there is no room inside the axes (never clipped at the figure's edge)."""
    fig = ax.figure
    gap = 4 * fig.dpi / 72
    low = min(box.y0 for box in ridge_boxes)
    row = [box for box in ridge_boxes if box.y0 - low < 2]
    top = max(box.y1 for box in ridge_boxes)
    left, right = min(b.x0 for b in ridge_boxes), max(b.x1 for b in ridge_boxes)
    spots = [("ridges [FLOP/byte]:", (min(b.x0 for b in row) - gap, low), "right"),
             ("← ridges [FLOP/byte]", (max(b.x1 for b in row) + gap, low), "left"),
             ("ridges [FLOP/byte] ↓", (left, top + gap), "left"),
             ("ridges [FLOP/byte] ↓", (right, top + gap), "right")]

    def make(text, xy, ha):
        x_frac, y_frac = fig.transFigure.inverted().transform(xy)
        return ax.annotate(text, (x_frac, y_frac), xycoords="figure fraction", ha=ha, va="bottom", fontsize=6,
                           color="#555555")

    frame = ax.get_window_extent(renderer).padded(-2)
    for text, xy, ha in spots:
        artist = make(text, xy, ha)
        box = artist.get_window_extent(renderer)
        if frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1 \
                and not overlaps_any(box, taken, pad=1.0):
            keep((0, artist, box))
            return
        artist.remove()


def draw_roofline(ax, roofs: list[Roof], series: list[Series], *, labels: list[PointLabel] = (), per_group: int = 5,
                  label_format=None, shade: bool = True, show_ridges: bool = True) -> RooflineResult:
    """Draw ceilings, ridge lines, regions, points and collision-free labels on a log-log `ax`.

    The figure's margins must be fixed (no layout engine) before the call: label angles and collision boxes are
    measured in display coordinates.
    """
    fig = ax.figure
    xlim, ylim = limits(roofs, series)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("Attainable performance [TFLOP/s]")
    ax.yaxis.set_major_formatter(lambda value, _pos: tick_label(value / 1e12))
    ax.xaxis.set_major_formatter(lambda value, _pos: tick_label(value))
    for axis in (ax.xaxis, ax.yaxis):  # minor ticks at 2x and 5x only: readable, and cheap to draw
        axis.set_major_locator(LogLocator(base=10, numticks=12))  # every decade, every 2nd beyond 12 decades
        axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0), numticks=12))
        axis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", color="#e4e4e4", lw=0.5, zorder=0)
    renderer = fig.canvas.get_renderer()
    multi = len(roofs) > 1
    x_low, x_high = xlim
    dashed = (0, (4, 3))

    strong, weak, guides = [], [], []  # Line2D: solid ceilings, dashed ceilings, dotted ridge lines
    memory_lines = {}  # roof index -> its memory-roof lines (its bandwidth label sits on them)
    for i, roof in enumerate(roofs):
        if shade and not multi:
            ax.axvspan(x_low, roof.ridge, color=REGION_COLORS["memory"], zorder=0, lw=0)
            ax.axvspan(roof.ridge, x_high, color=REGION_COLORS["compute"], zorder=0, lw=0)
        top_ridge = max(value for _, value in roof.peaks) / roof.bandwidth
        xs = np.array([x_low, roof.ridge])  # memory roof: solid to the main ridge, dashed on to the top ceiling
        memory_lines[i] = ax.plot(xs, roof.bandwidth * xs, color=roof.color, lw=1.1, ls=roof.linestyle, zorder=2)
        if top_ridge > roof.ridge:
            xs = np.array([roof.ridge, top_ridge])
            memory_lines[i] += ax.plot(xs, roof.bandwidth * xs, color=roof.color, lw=0.7, ls=dashed, zorder=2)
        strong += memory_lines[i][:1]
        weak += memory_lines[i][1:]
        for j, (_dtype, value) in enumerate(roof.peaks):
            style = {"lw": 1.1, "ls": roof.linestyle} if j == 0 else {"lw": 0.7, "ls": dashed}
            (strong if j == 0 else weak).extend(
                ax.plot([value / roof.bandwidth, x_high], [value, value], color=roof.color, zorder=2, **style))
        if show_ridges:
            guides += ax.plot([roof.ridge, roof.ridge], [ylim[0], roof.main_peak], color=roof.color, lw=0.8,
                              ls=(0, (1, 2)), zorder=2)
    link_lines = []  # (roof, link name, bandwidth, Line2D): dash-dot network roofs up to the main peak
    drawn = set()  # several GPUs on one link (NVLink 4 of the H100 and the H200): one roof
    for roof in roofs:
        for name, link_bw in roof.links:
            if (name, link_bw) in drawn:
                continue
            drawn.add((name, link_bw))
            xs = np.array([x_low, min(x_high, roof.main_peak / link_bw)])
            (line,) = ax.plot(xs, link_bw * xs, color=LINK_COLOR, lw=0.9, ls="-.", zorder=2)
            link_lines.append((roof, name, link_bw, line))
            weak.append(line)
    path_of = {line: ax.transData.transform(line.get_xydata()) for line in strong + weak + guides}

    markers = [box for s in series for box in marker_boxes(ax, s.x, s.y, s.sizes, renderer)]
    taken, texts = [], []

    def keep(best):
        if best is not None:
            taken.append(best[2])
            texts.append(best[1])

    # compute ceilings: value and unit at the right end, above or below the line, sliding left toward the ridge.
    # Several roofs: the legend carries each GPU's peak and bandwidth (in-plot labels of many parallel roofs
    # would crowd each other); only the ridge values stay on the axes.
    for roof in ([] if multi else roofs):
        for j, (dtype, value) in enumerate(roof.peaks):
            ridge = value / roof.bandwidth

            def make(x, dy, va, ha, text=peak_label(dtype, value), value=value, bold=(j == 0)):
                return ax.annotate(text, (x, value), xytext=(-3 if ha == "right" else 3, dy),
                                   textcoords="offset points", ha=ha, va=va, fontsize=6.5, color=roof.color,
                                   zorder=3, fontweight="bold" if bold else "normal", bbox=LABEL_BOX)

            candidates = [(x_high / (x_high / ridge) ** f, dy, va, "right")
                          for f in np.linspace(0.0, 0.8, 9) for dy, va in ((1.5, "bottom"), (-1.5, "top"),
                                                                           (5.0, "bottom"), (-5.0, "top"))]
            candidates += [(ridge, dy, va, "left") for dy, va in ((1.5, "bottom"), (-1.5, "top"))]
            keep(_best(ax, renderer, make, candidates, taken=taken, markers=markers,
                       paths=[path_of[line] for line in strong + weak + guides if line.get_ydata()[0] != value]))
    # bandwidths: along the memory roof, rotated to its on-screen slope, sliding up the line until free
    for i, roof in enumerate([] if multi else roofs):
        x_start = max(x_low, ylim[0] / roof.bandwidth)
        angle = _screen_angle(ax, (x_start, roof.bandwidth * x_start), (roof.ridge, roof.main_peak))

        def make(x, roof=roof, angle=angle):
            return ax.annotate(bandwidth_label(roof.bandwidth), (x, roof.bandwidth * x), xytext=(0, 2.5),
                               textcoords="offset points", rotation=angle, rotation_mode="anchor", ha="left",
                               va="bottom", fontsize=6.5, color=roof.color, zorder=3)

        candidates = [(x_start * (roof.ridge / x_start) ** f,) for f in np.linspace(0.03, 0.7, 15)]
        keep(_best(ax, renderer, make, candidates, taken=taken, markers=markers,
                   paths=[path_of[line] for line in strong + weak + guides if line not in memory_lines[i]]))
    for roof, name, link_bw, line in link_lines:  # the link's name and bandwidth along its roof
        x_start = max(x_low, ylim[0] / link_bw)
        x_end = float(line.get_xdata()[-1])
        if x_end <= x_start:
            continue
        angle = _screen_angle(ax, (x_start, link_bw * x_start), (x_end, link_bw * x_end))

        def make(x, name=name, link_bw=link_bw, angle=angle):
            return ax.annotate(f"{name} {bandwidth_label(link_bw)}", (x, link_bw * x), xytext=(0, 2.5),
                               textcoords="offset points", rotation=angle, rotation_mode="anchor", ha="left",
                               va="bottom", fontsize=6.5, color=LINK_COLOR, zorder=3)

        candidates = [(x_start * (x_end / x_start) ** f,) for f in np.linspace(0.03, 0.7, 15)]
        keep(_best(ax, renderer, make, candidates, taken=taken, markers=markers,
                   paths=[path_of[other] for other in strong + weak + guides if other is not line]))
    if show_ridges:
        ridge_boxes = []
        for roof in roofs:
            if not multi:  # along the dotted line
                artist = ax.annotate(f"ridge {fmt_value(roof.ridge)} FLOP/byte", (roof.ridge, ylim[0]), xytext=(-2, 4),
                                     textcoords="offset points", rotation=90, ha="right", va="bottom", fontsize=6,
                                     color=roof.color, zorder=3)
                keep((0, artist, artist.get_window_extent(renderer)))
                continue

            def make(dy, ha, roof=roof):  # several roofs: short values stacked upward
                return ax.annotate(fmt_value(roof.ridge), (roof.ridge, ylim[0]), xytext=(0, dy),
                                   textcoords="offset points", ha=ha, va="bottom", fontsize=6,
                                   color=roof.color, zorder=3,
                                   bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"})

            # centred on the ridge line; beside it when a ridge sits so close to a frame edge that a centred value
            # would cross it
            best = _best(ax, renderer, make, [(dy, ha) for ha in ("center", "right", "left")
                                              for dy in range(3, 200, 9)],
                         taken=[b.padded(2) for b in taken], markers=markers, paths=[])
            keep(best)
            if best is not None:
                ridge_boxes.append(best[2])
        if ridge_boxes:  # several roofs: a caption beside the lowest row of ridge values, wherever it fits
            _ridge_caption(ax, renderer, ridge_boxes, taken, keep)
    if shade and not multi:
        frame = ax.get_window_extent(renderer)
        for x, text in ((x_low, "memory-bound"), (roofs[0].ridge, "compute-bound")):
            artist = ax.annotate(text, (x, ylim[1]), xytext=(4, -4), textcoords="offset points", ha="left", va="top",
                                 fontsize=6.5, color="#777777", style="italic", zorder=3)
            box = artist.get_window_extent(renderer)
            if box.x1 > frame.x1 - 2 or overlaps_any(box, taken, pad=1.0):
                artist.remove()  # a region too narrow for its name (a ridge at the right edge): the shading says it
                continue
            keep((0, artist, box))

    points = []
    for s in series:
        if s.filled:
            ax.scatter(s.x, s.y, s=s.sizes, c=s.color, marker=s.marker, edgecolors="white", linewidths=0.4,
                       zorder=4, label=s.label)
        else:
            ax.scatter(s.x, s.y, s=s.sizes, facecolors="white", marker=s.marker, edgecolors=s.color,
                       linewidths=0.9, zorder=4, label=s.label)
        points += list(zip(map(float, s.x), map(float, s.y)))
    kwargs = {"fmt": label_format} if label_format else {}
    requests = cluster_requests(ax, list(labels), per_group=per_group, **kwargs)
    placed, skipped = place_labels(ax, requests, renderer, obstacles=taken + markers,
                                   lines=[path_of[line] for line in strong],
                                   weak_lines=[path_of[line] for line in weak],
                                   guides=[path_of[line] for line in guides])
    return RooflineResult(xlim=xlim, ylim=ylim, points=points, labels=texts + placed, skipped=skipped)


def legend_handles(entries) -> list[Line2D]:
    """Proxy artists for a legend: {label: Line2D kwargs}, or (label, kwargs) pairs (labels may repeat)."""
    pairs = entries.items() if isinstance(entries, dict) else entries
    return [Line2D([], [], label=label, **kwargs) for label, kwargs in pairs]
