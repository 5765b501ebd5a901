"""The one roofline-drawing function: ceilings from accelerator specs, points from the operator table.

Every roofline figure (one GPU with all dtype ceilings, or many GPUs with their compute-dtype ceiling) goes through
`draw_roofline`. Ceilings are drawn thin and behind the points, each labelled at its end with value and unit; the
bandwidth label is rotated to the slope the line has on screen (measured through the axes transform once the
limits and margins are final); the ridge of the main ceiling is a dotted vertical line; limits come from the data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from matplotlib.ticker import LogLocator, NullFormatter

from . import ceilings
from .labels import PointLabel, cluster_requests, marker_boxes, place_labels, text_box
from .roofs import LogTicks, Roof, Series, bandwidth_label, fmt_value, legend_handles, peak_label, roof_for, tick_label  # noqa: F401

__all__ = ["Roof", "RooflineResult", "Series", "bandwidth_label", "draw_roofline", "fmt_value", "legend_handles",
           "limits", "peak_label", "roof_for", "tick_label"]

#: markers drawn as lines (nothing to fill)
LINE_MARKERS = ("x", "+", "1", "2", "3", "4", "|", "_")
#: data padding of the axes limits (factor on a log axis) so no point or label sits on the frame
PAD_X_LOW, PAD_X_HIGH, PAD_Y_LOW, PAD_Y_HIGH = 3.0, 4.0, 3.0, 3.5


@dataclass
class RooflineResult:
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    points: list[tuple[float, float]] = field(default_factory=list)
    labels: list = field(default_factory=list)
    skipped: list = field(default_factory=list)


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


def _log_axes(ax, xlim, ylim) -> None:
    """Log-log axes with the given limits, labelled in FLOP/byte and TFLOP/s, a major grid."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("Arithmetic intensity [FLOP/byte]")
    ax.set_ylabel("Attainable performance [TFLOP/s]")
    ax.yaxis.set_major_formatter(LogTicks(1e12))
    ax.xaxis.set_major_formatter(LogTicks())
    for axis in (ax.xaxis, ax.yaxis):  # minor ticks at 2x and 5x only: readable, and cheap to draw
        axis.set_major_locator(LogLocator(base=10, numticks=12))  # every decade, every 2nd beyond 12 decades
        axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0), numticks=12))
        axis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", color="#e4e4e4", lw=0.5, zorder=0)


def _scatter(ax, series: list[Series]) -> list[tuple[float, float]]:
    """The points of every series (hollow ones with their edge in colour); returns them as (x, y)."""
    points = []
    for s in series:
        if s.marker in LINE_MARKERS:  # a marker of lines only ('x'): no fill, no white edge
            ax.scatter(s.x, s.y, s=s.sizes, c=s.color, marker=s.marker, linewidths=0.6, zorder=4, label=s.label)
        elif s.filled:
            ax.scatter(s.x, s.y, s=s.sizes, c=s.color, marker=s.marker, edgecolors="white", linewidths=0.4,
                       zorder=4, label=s.label)
        else:
            ax.scatter(s.x, s.y, s=s.sizes, facecolors="white", marker=s.marker, edgecolors=s.color,
                       linewidths=0.9, zorder=4, label=s.label)
        points += list(zip(map(float, s.x), map(float, s.y)))
    return points


def draw_roofline(ax, roofs: list[Roof], series: list[Series], *, labels: list[PointLabel] = (), per_group: int = 5,
                  label_format=None, shade: bool = True, show_ridges: bool = True) -> RooflineResult:
    """Draw ceilings, ridge lines, regions, points and collision-free labels on a log-log `ax`.

    The figure's margins must be fixed (no layout engine) before the call: label angles and collision boxes are
    measured in display coordinates.
    """
    xlim, ylim = limits(roofs, series)
    _log_axes(ax, xlim, ylim)
    plot = ceilings.Ceilings(ax, xlim, ylim, multi=len(roofs) > 1)
    ceilings.draw_roofs(plot, roofs, shade, show_ridges)
    ceilings.draw_links(plot, roofs)
    plot.measure(series, marker_boxes)
    for roof in [] if plot.multi else roofs:
        ceilings.label_peaks(plot, roof)
    for i, roof in enumerate([] if plot.multi else roofs):
        ceilings.label_bandwidth(plot, i, roof)
    ceilings.label_links(plot)
    if show_ridges:
        ceilings.label_ridges(plot, roofs)
    if shade and not plot.multi:
        ceilings.label_regions(plot, roofs[0])
    points = _scatter(ax, series)
    kwargs = {"fmt": label_format} if label_format else {}
    requests = cluster_requests(ax, list(labels), per_group=per_group, **kwargs)
    placed, skipped = place_labels(ax, requests, plot.renderer, obstacles=[*plot.taken, *plot.markers],
                                   lines=[plot.path_of[line] for line in plot.strong],
                                   weak_lines=[plot.path_of[line] for line in plot.weak],
                                   guides=[plot.path_of[line] for line in plot.guides],
                                   texts=[text_box(text, plot.renderer) for text in plot.texts])
    return RooflineResult(xlim=xlim, ylim=ylim, points=points, labels=plot.texts + placed, skipped=skipped)
