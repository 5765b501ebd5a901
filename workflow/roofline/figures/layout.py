"""What every figure shares around its axes: names cut to fit, titles, legends that fit the figure, the
roofline canvas. Figures have fixed margins (no layout engine: label placement measures display coordinates, which
must not move afterwards).

Legends are placed first, right of the axes in the largest font size that fits inside the figure (right and
bottom edges); when a long list of GPUs does not fit there even in the smallest size, the GPU legend goes below
the axes in columns and the figure grows taller by its height (the axes keep their size). Long names are wrapped
and cut with an ellipsis in titles and legends; the report's text keeps the full name.
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt

from ..display import weights_label
from .roofs import legend_handles
from .style import CLASS_MARKERS, class_marker

ROOFLINE_SIZE = (7.0, 4.3)
ROOFLINE_MARGINS = {"left": 0.085, "right": 0.775, "bottom": 0.105, "top": 0.9}
LEGEND_X = 0.79
#: legend font sizes tried in order until the legends fit right of the axes
LEGEND_FONT_SIZES = (6.5, 6.0, 5.5, 5.0)
#: font size of a legend below the axes (used when a right-hand legend does not fit in the smallest size)
BELOW_FONT_SIZE = 6.0
#: title and subtitle: inches from the top edge of the figure (independent of the figure's height)
TITLE_Y, SUBTITLE_Y = 0.11, 0.28
#: names in titles are cut to the first of these lengths (characters) that lets the title fit the figure
TITLE_NAME_LIMITS = (None, 90, 64, 48, 36, 28, 20)
ELLIPSIS = "…"


def plain(text: str) -> str:
    """A user-supplied name as literal text: matplotlib parses '$...$' as mathtext, and an escaped '\\$' is shown
    as '$' (backslashes elsewhere are literal, so they stay as they are)."""
    return str(text).replace("$", r"\$")


def shorten(name: str, limit: int | None) -> str:
    """`name` cut to at most `limit` characters, at a space when one is near, ending in an ellipsis."""
    name = str(name)
    if limit is None or len(name) <= limit:
        return name
    cut = name[:limit - 1]
    space = cut.rfind(" ")
    if space >= limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:-/(") + ELLIPSIS


def legend_name(name: str, width: int = 20, lines: int = 2) -> str:
    """A GPU or model name in at most `lines` lines of about `width` characters (broken at spaces, long words
    split), the last line cut with an ellipsis when the name is longer (legend entries)."""
    parts = textwrap.wrap(str(name), width, break_long_words=True, break_on_hyphens=False) or [str(name)]
    if len(parts) > lines:
        parts = parts[:lines - 1] + [shorten(" ".join(parts[lines - 1:]), width)]
    return "\n".join(plain(part) for part in parts)


def scenario_caption(scenario: dict) -> str:
    return (f"batch {scenario['batch']}, sequence {scenario['seq_len']}, weights {weights_label(scenario)}, "
            f"activations {scenario['act_dtype']}, KV {scenario['kv_dtype']}, {scenario['attention']} attention")


def right_edge(fig) -> float:
    """Display x that text may reach: 2% short of the edge, since text measured at the figure's dpi renders a
    little wider at the PNG's dpi and in the PDF's fonts."""
    return fig.bbox.x1 - 0.02 * fig.bbox.width


def inside(fig, artists, bottom: float | None = None) -> bool:
    """Whether every artist's box ends inside the figure: right edge, top, and bottom (or above `bottom`, in
    display pixels)."""
    renderer = fig.canvas.get_renderer()
    low = fig.bbox.y0 + 2 if bottom is None else bottom
    for artist in artists:
        box = artist.get_window_extent(renderer)
        if box.x1 > right_edge(fig) or box.y0 < low or box.y1 > fig.bbox.y1 or box.x0 < fig.bbox.x0:
            return False
    return True


def fitting(fig, build, bottom: float | None = None) -> list | None:
    """Legends from `build(fontsize)` (a list), in the largest of LEGEND_FONT_SIZES whose legends end inside the
    figure on the right and at the bottom (measured: no entry is clipped or hidden); None, with nothing left on
    the figure, when they do not fit even in the smallest size."""
    for size in LEGEND_FONT_SIZES:
        legends = build(size)
        if inside(fig, legends, bottom):
            return legends
        for legend in legends:
            legend.remove()
    return None


def legend_below(fig, entries, title: str, left: float):
    """A legend of `entries` in as many columns as fit the width, below the axes: the figure grows taller by its
    height and every axes keeps its size and its distance from the top edge. Call before anything else is placed
    in figure coordinates (titles, other legends)."""
    renderer = fig.canvas.get_renderer()
    width, height = fig.get_size_inches()
    columns = min(6, len(entries))
    while True:
        legend = fig.legend(handles=legend_handles(entries), title=title, loc="upper left", ncols=columns,
                            bbox_to_anchor=(left, 0.0), frameon=False, alignment="left", handlelength=2.2,
                            columnspacing=1.2, borderaxespad=0.2, fontsize=BELOW_FONT_SIZE,
                            title_fontsize=BELOW_FONT_SIZE + 0.5)
        box = legend.get_window_extent(renderer)
        if box.x1 <= right_edge(fig) or columns == 1:
            break
        legend.remove()
        columns -= 1
    extra = box.height / fig.dpi + 0.08  # inches added at the bottom
    grown = height + extra
    for ax in fig.axes:
        pos = ax.get_position()
        ax.set_position([pos.x0, (pos.y0 * height + extra) / grown, pos.width, pos.height * height / grown])
    fig.set_size_inches(width, grown)
    legend.set_bbox_to_anchor((left, (extra - 0.04) / grown), transform=fig.transFigure)
    return legend


def from_top(fig, inches: float) -> float:
    """Figure fraction `inches` below the top edge."""
    return 1.0 - inches / fig.get_size_inches()[1]


def fit_text(fig, make) -> None:
    """`make(limit)` creates a text with its names cut to `limit` characters; keep the first (of
    TITLE_NAME_LIMITS) that ends inside the figure's right edge."""
    renderer = fig.canvas.get_renderer()
    for limit in TITLE_NAME_LIMITS:
        artist = make(limit)
        if artist.get_window_extent(renderer).x1 <= right_edge(fig) or limit == TITLE_NAME_LIMITS[-1]:
            return
        artist.remove()


def put_title(fig, title, subtitle: str) -> None:
    """Title (`title(limit)`: names cut to `limit` characters, so it fits the width) and scenario line,
    left-aligned with the axes, inside the top margin."""
    x = fig.axes[0].get_position().x0
    fit_text(fig, lambda limit: fig.text(x, from_top(fig, TITLE_Y), title(limit), fontsize=8.5,
                                         fontweight="bold", va="top", ha="left"))
    fig.text(x, from_top(fig, SUBTITLE_Y), subtitle, fontsize=7, color="#444444", va="top", ha="left")


def put_suptitle(fig, title, x: float) -> None:
    """A figure title (`title(limit)` as in `put_title`) at `x`, cut to fit the width."""
    fit_text(fig, lambda limit: fig.suptitle(title(limit), x=x, ha="left", fontsize=9))


def put_legends(fig, color_entries, color_title: str, classes, bottom: float | None = None) -> None:
    """Two legends right of the axes: colour (stage or GPU) on top, marker (operator class) right below it, in
    the largest font size at which both fit (above `bottom`, display pixels, if given). If the colour legend is
    too long for that, it goes below the axes in columns (`legend_below`) and the marker legend stays right."""
    renderer = fig.canvas.get_renderer()
    marker_entries = {c: {"marker": class_marker(c), "ls": "none", "color": "#555555", "markersize": 5}
                      for c in CLASS_MARKERS if c in set(classes)}

    def markers_at(top, size):
        return fig.legend(handles=legend_handles(marker_entries), title="Operator class", loc="upper left",
                          bbox_to_anchor=(LEGEND_X, top), frameon=False, alignment="left", handlelength=1.5,
                          borderaxespad=0.2, fontsize=size, title_fontsize=size + 0.5)

    def build(size):
        top = fig.axes[0].get_position().y1
        first = fig.legend(handles=legend_handles(color_entries), title=color_title, loc="upper left",
                           bbox_to_anchor=(LEGEND_X, top), frameon=False, alignment="left",
                           handlelength=1.5, borderaxespad=0.2, fontsize=size, title_fontsize=size + 0.5)
        below = fig.transFigure.inverted().transform(first.get_window_extent(renderer))[0][1]
        return [first, markers_at(below - 0.02, size)]

    if fitting(fig, build, bottom) is None:
        legend_below(fig, color_entries, color_title.replace("\n", " "), fig.axes[0].get_position().x0)
        top = fig.axes[0].get_position().y1
        fitting(fig, lambda size: [markers_at(top, size)]) or markers_at(top, LEGEND_FONT_SIZES[-1])


def room_for_ylabels(fig, axes) -> None:
    """Widen the left margin until every y label of `axes` (stacked, sharing x) lies inside the figure, and align
    them: a fixed margin fits 3-digit tick labels, and '20000' pushed a rotated label past the left edge. Call once
    the ticks and limits are set, before anything is placed by display coordinates."""
    fig.align_ylabels(axes)
    renderer = fig.canvas.get_renderer()
    x0 = min(ax.yaxis.get_tightbbox(renderer).x0 for ax in axes)
    room = fig.bbox.x0 + 0.01 * fig.bbox.width - x0  # display pixels missing on the left
    if room > 0:
        left = axes[0].get_position().x0 + room / fig.bbox.width
        fig.subplots_adjust(left=left)
        fig.align_ylabels(axes)


def canvas():
    """The roofline figures' figure and axes: fixed size and margins."""
    fig, ax = plt.subplots(figsize=ROOFLINE_SIZE)
    fig.subplots_adjust(**ROOFLINE_MARGINS)
    return fig, ax


