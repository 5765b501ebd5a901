"""The ceilings of a roofline and their labels: memory and compute roofs, network roofs, ridge lines, regions.

Ceilings are drawn thin and behind the points; each label is tried at a list of candidate places and the first that
collides with nothing is kept (else the least bad one). Several roofs (one per GPU): the legend carries each GPU's
peak and bandwidth (in-plot labels of many parallel roofs would crowd each other); only the ridge values stay on
the axes. The axes' limits and the figure's margins must be final: angles and boxes are measured on screen.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .labels import BoxArray, hits_paths, overlaps_any
from .layout import plain
from .roofs import Roof, bandwidth_label, fmt_value, peak_label
from .style import LINK_COLOR, REGION_COLORS, under_width

#: a faint white ground under ceiling labels, so a line they must cross does not cut through the text
LABEL_BOX = {"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none", "alpha": 0.6}
DASHED = (0, (4, 3))


#: link bandwidths within this share of each other share one dash-dot roof (draw_links)
LINK_MERGE = 0.05


@dataclass
class Ceilings:
    """The lines drawn on one roofline's axes and the labels placed so far (the obstacles of the next label)."""

    ax: object
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    multi: bool  # several roofs (one per GPU)
    strong: list = field(default_factory=list)  # Line2D: solid ceilings
    weak: list = field(default_factory=list)  # dashed ceilings and network roofs
    guides: list = field(default_factory=list)  # dotted ridge lines
    memory_lines: dict = field(default_factory=dict)  # roof index -> its memory-roof lines (its bandwidth label)
    link_lines: list = field(default_factory=list)  # (roof, link label, bandwidth, Line2D)
    path_of: dict = field(default_factory=dict)  # Line2D -> its vertices in display coordinates
    markers: BoxArray = field(default_factory=BoxArray)  # display boxes of the points
    taken: list = field(default_factory=list)  # display boxes of the labels placed
    texts: list = field(default_factory=list)  # the labels placed

    @property
    def renderer(self):
        return self.ax.figure.canvas.get_renderer()

    def lines(self) -> list:
        return self.strong + self.weak + self.guides

    def paths(self, keep=lambda line: True) -> list:
        """Display paths of the drawn lines that `keep` accepts (obstacles a label should not cross)."""
        return [self.path_of[line] for line in self.lines() if keep(line)]

    def measure(self, series, marker_boxes) -> None:
        """Record the lines' display paths and the points' boxes, once every line is drawn."""
        self.path_of = {line: self.ax.transData.transform(line.get_xydata()) for line in self.lines()}
        self.markers = BoxArray([box for s in series
                                 for box in marker_boxes(self.ax, s.x, s.y, s.sizes, self.renderer)])

    def keep(self, best) -> None:
        """Keep a label `best` = (score, artist, box) (None: nothing fitted)."""
        if best is not None:
            self.taken.append(best[2])
            self.texts.append(best[1])

    def best(self, make, candidates, *, taken=None, paths=(), veto=True):
        """`_best` against this plot's labels and markers (or `taken` instead of the labels)."""
        return _best(self.ax, self.renderer, make, candidates, taken=self.taken if taken is None else taken,
                     markers=self.markers, paths=paths, veto=veto)


def _screen_angle(ax, p0, p1) -> float:
    (x0, y0), (x1, y1) = ax.transData.transform([p0, p1])
    return math.degrees(math.atan2(y1 - y0, x1 - x0))


def _inside_frame(frame, box) -> bool:
    return frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1


def _best(ax, renderer, make, candidates, *, taken, markers, paths, veto=True):
    """The first candidate artist that collides with nothing, else the one with the fewest collisions.

    make(*candidate) creates an artist; a candidate is discarded outright when it leaves the axes or (`veto`)
    overlaps a label already placed; among the rest, covering a marker costs 10, crossing a line 1 and (no `veto`)
    overlapping a label 100."""
    frame = ax.get_window_extent(renderer).padded(-2)
    best = None
    for candidate in candidates:
        artist = make(*candidate)
        box = artist.get_window_extent(renderer)
        clash = overlaps_any(box, taken, pad=1.5)
        if not _inside_frame(frame, box) or (veto and clash):
            artist.remove()
            continue
        covered = int(markers.hits(box, 1.0).sum()) if len(markers) else 0
        score = 100 * clash + 10 * covered + sum(hits_paths(box, [p], 0) for p in paths)
        if best is None or score < best[0]:
            if best is not None:
                best[1].remove()
            best = (score, artist, box)
            if score == 0:
                break
        else:
            artist.remove()
    return best


def draw_roofs(plot: Ceilings, roofs: list[Roof], shade: bool, show_ridges: bool) -> None:
    """Per roof: the shaded regions (one roof only), the memory roof (solid to the main ridge, dashed on to the top
    ceiling), the compute ceilings (the main one solid, the others dashed) and the dotted ridge line."""
    ax, (x_low, x_high) = plot.ax, plot.xlim
    for i, roof in enumerate(roofs):
        # devices sharing a peak (H100 and H200: 989 TFLOP/s) draw one compute roof: widest first, underneath
        main = under_width(i, len(roofs), 1.1, 0.9) if plot.multi else 1.1
        if shade and not plot.multi:
            ax.axvspan(x_low, roof.ridge, color=REGION_COLORS["memory"], zorder=0, lw=0)
            ax.axvspan(roof.ridge, x_high, color=REGION_COLORS["compute"], zorder=0, lw=0)
        top_ridge = max(value for _, value in roof.peaks) / roof.bandwidth
        xs = np.array([x_low, roof.ridge])
        plot.memory_lines[i] = ax.plot(xs, roof.bandwidth * xs, color=roof.color, lw=main, ls=roof.linestyle, zorder=2)
        if top_ridge > roof.ridge:
            xs = np.array([roof.ridge, top_ridge])
            plot.memory_lines[i] += ax.plot(xs, roof.bandwidth * xs, color=roof.color, lw=0.7, ls=DASHED, zorder=2)
        plot.strong += plot.memory_lines[i][:1]
        plot.weak += plot.memory_lines[i][1:]
        for j, (_dtype, value) in enumerate(roof.peaks):
            style = {"lw": main, "ls": roof.linestyle} if j == 0 else {"lw": 0.7, "ls": DASHED}
            (plot.strong if j == 0 else plot.weak).extend(
                ax.plot([value / roof.bandwidth, x_high], [value, value], color=roof.color, zorder=2, **style))
        if show_ridges:
            plot.guides += ax.plot([roof.ridge, roof.ridge], [plot.ylim[0], roof.main_peak], color=roof.color,
                                   lw=0.8, ls=(0, (1, 2)), zorder=2)


def draw_links(plot: Ceilings, roofs: list[Roof]) -> None:
    """Dash-dot network roofs up to the main peak, one per link bandwidth: GPUs on one link (NVLink 4 of the H100
    and the H200) share a line, and so do links within LINK_MERGE of each other (NVLink 4's 450 GB/s and the
    MI300X's 448 GB/s xGMI), named together ("NVLink 4 / xGMI 448-450 GB/s"): two lines a
    hair apart left room for one label, and the other went unnamed."""
    x_low, x_high = plot.xlim
    groups: list[dict] = []
    for roof in roofs:
        for name, link_bw in roof.links:
            group = next((g for g in groups if abs(link_bw / g["bandwidth"] - 1) <= LINK_MERGE), None)
            if group is None:
                groups.append(group := {"roof": roof, "bandwidth": link_bw, "names": {}, "end": x_low})
            group["names"].setdefault(name, set()).add(link_bw)
            group["end"] = max(group["end"], min(x_high, roof.main_peak / group["bandwidth"]))
    for group in groups:
        xs = np.array([x_low, group["end"]])
        (line,) = plot.ax.plot(xs, group["bandwidth"] * xs, color=LINK_COLOR, lw=0.9, ls="-.", zorder=2)
        bandwidths = sorted(set().union(*group["names"].values()))
        value = _span_label(bandwidths[0], bandwidths[-1])
        names = list(group["names"]) if len(group["names"]) == 1 else [_short_link(n) for n in group["names"]]
        plot.link_lines.append((group["roof"], f"{plain(' / '.join(names))} {value}", group["bandwidth"], line))
        plot.weak.append(line)


def _short_link(name: str) -> str:
    """A link's short name where several share a label: the parenthesised one ('Infinity Fabric (xGMI)' -> 'xGMI')."""
    return name[name.rfind("(") + 1:-1] if name.endswith(")") and "(" in name else name


def _span_label(low: float, high: float) -> str:
    """'450 GB/s'; '448-450 GB/s' (one unit written once); '990 GB/s-1.00 TB/s'."""
    first, last = bandwidth_label(low), bandwidth_label(high)
    if first == last:
        return first
    if first.split()[1:] == last.split()[1:]:
        return f"{first.split()[0]}-{last}"
    return f"{first}-{last}"


def label_peaks(plot: Ceilings, roof: Roof) -> None:
    """Each compute ceiling's value and unit at its right end, above or below the line, sliding left toward the
    ridge."""
    ax, x_high = plot.ax, plot.xlim[1]
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
        plot.keep(plot.best(make, candidates, paths=plot.paths(lambda line, value=value: line.get_ydata()[0] != value)))


def _along(plot: Ceilings, text: str, bandwidth: float, x_start: float, end: tuple[float, float], color: str,
           others) -> None:
    """`text` along a sloped roof of `bandwidth` from x_start to its `end` point, rotated to its on-screen slope,
    sliding up the line until it is free (`others`: the lines it should not cross)."""
    ax = plot.ax
    x_end = end[0]
    angle = _screen_angle(ax, (x_start, bandwidth * x_start), end)

    # offset perpendicular to the line (a vertical offset puts a steep line's label on the line itself), above it,
    # else below it where the points crowd the upper side
    sin, cos = math.sin(math.radians(angle)), math.cos(math.radians(angle))

    def make(x, side):
        # a white ground under the text: where roofs run close together (a link's dash-dot lines a few points
        # apart) the next line would otherwise strike the label through
        return ax.annotate(text, (x, bandwidth * x), xytext=(-3.0 * sin * side, 3.0 * cos * side),
                           textcoords="offset points", rotation=angle, rotation_mode="anchor", ha="left",
                           va="bottom" if side > 0 else "top", fontsize=6.5, color=color, zorder=3,
                           bbox={**LABEL_BOX, "alpha": 0.85})

    candidates = [(x_start * (x_end / x_start) ** f, side) for side in (1, -1) for f in np.linspace(0.03, 0.85, 18)]
    # a solid roof hidden under the label's white ground costs twice a dashed one (its path counted twice)
    paths = plot.paths(others) + [plot.path_of[line] for line in plot.strong if others(line)]
    # where every place along the line touches a label already placed (crowded link roofs), the least crowded one
    # rather than an unnamed line
    plot.keep(plot.best(make, candidates, paths=paths) or plot.best(make, candidates, paths=paths, veto=False))


def label_bandwidth(plot: Ceilings, i: int, roof: Roof) -> None:
    """The memory bandwidth along roof `i`'s memory roof."""
    x_start = max(plot.xlim[0], plot.ylim[0] / roof.bandwidth)
    mine = plot.memory_lines[i]
    _along(plot, bandwidth_label(roof.bandwidth), roof.bandwidth, x_start, (roof.ridge, roof.main_peak), roof.color,
           lambda line: line not in mine)


def label_links(plot: Ceilings) -> None:
    """Each link's name and bandwidth along its network roof, the fastest link first: the slowest roofs run along the
    frame's lower edge, where a label finds room below its line; the faster ones run between other roofs."""
    for _roof, name, link_bw, line in sorted(plot.link_lines, key=lambda link: -link[2]):
        x_start = max(plot.xlim[0], plot.ylim[0] / link_bw)
        x_end = float(line.get_xdata()[-1])
        if x_end <= x_start:
            continue
        _along(plot, name, link_bw, x_start, (x_end, link_bw * x_end), LINK_COLOR,
               lambda other, line=line: other is not line)


def label_ridges(plot: Ceilings, roofs: list[Roof]) -> None:
    """One roof: 'ridge N FLOP/byte' along its dotted line. Several: each ridge's value stacked upward from the
    foot of its line (centred; beside it when a ridge sits so close to a frame edge that a centred value would cross
    it), and a caption beside the lowest row of values, wherever it fits."""
    ax, y_low = plot.ax, plot.ylim[0]
    ridge_boxes = []
    for roof in roofs:
        if not plot.multi:
            artist = ax.annotate(f"ridge {fmt_value(roof.ridge)} FLOP/byte", (roof.ridge, y_low), xytext=(-2, 4),
                                 textcoords="offset points", rotation=90, ha="right", va="bottom", fontsize=6,
                                 color=roof.color, zorder=3)
            plot.keep((0, artist, artist.get_window_extent(plot.renderer)))
            continue

        def make(dy, ha, roof=roof):
            return ax.annotate(fmt_value(roof.ridge), (roof.ridge, y_low), xytext=(0, dy),
                               textcoords="offset points", ha=ha, va="bottom", fontsize=6,
                               color=roof.color, zorder=3,
                               bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none"})

        best = plot.best(make, [(dy, ha) for ha in ("center", "right", "left") for dy in range(3, 200, 9)],
                         taken=[b.padded(2) for b in plot.taken])
        plot.keep(best)
        if best is not None:
            ridge_boxes.append(best[2])
    if ridge_boxes:
        _ridge_caption(plot, ridge_boxes)


def _ridge_caption(plot: Ceilings, ridge_boxes) -> None:
    """'ridges [FLOP/byte]:' a few points left of the lowest row of ridge values, else right of it, else above the
    values; skipped when there is no room inside the axes (never clipped at the figure's edge)."""
    ax = plot.ax
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
    frame = ax.get_window_extent(plot.renderer).padded(-2)
    for text, xy, ha in spots:
        x_frac, y_frac = fig.transFigure.inverted().transform(xy)
        artist = ax.annotate(text, (x_frac, y_frac), xycoords="figure fraction", ha=ha, va="bottom", fontsize=6,
                             color="#555555")
        box = artist.get_window_extent(plot.renderer)
        if _inside_frame(frame, box) and not overlaps_any(box, plot.taken, pad=1.0):
            plot.keep((0, artist, box))
            return
        artist.remove()


def label_regions(plot: Ceilings, roof: Roof) -> None:
    """'memory-bound' and 'compute-bound' at the top of their regions; a region too narrow for its name (a ridge at
    the right edge) goes without: the shading says it."""
    ax = plot.ax
    frame = ax.get_window_extent(plot.renderer)
    for x, text in ((plot.xlim[0], "memory-bound"), (roof.ridge, "compute-bound")):
        artist = ax.annotate(text, (x, plot.ylim[1]), xytext=(4, -4), textcoords="offset points", ha="left",
                             va="top", fontsize=6.5, color="#777777", style="italic", zorder=3)
        box = artist.get_window_extent(plot.renderer)
        if box.x1 > frame.x1 - 2 or overlaps_any(box, plot.taken, pad=1.0):
            artist.remove()
            continue
        plot.keep((0, artist, box))
