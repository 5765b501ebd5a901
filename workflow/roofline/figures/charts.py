"""The five figures of a model: roofline per GPU, cross-GPU roofline per stage, where the time goes, batch sweep,
sequence-length sweep. Each function takes tidy tables (SI units) and specs and returns a matplotlib Figure with
fixed margins (no layout engine: label placement measures display coordinates, which must not move afterwards).

Legends are placed first, right of the axes in the largest font size that fits inside the figure (right and
bottom edges); when a long list of GPUs does not fit there even in the smallest size, the GPU legend goes below
the axes in columns and the figure grows taller by its height (the axes keep their size). Long names are wrapped
and cut with an ellipsis in titles and legends; the report's text keeps the full name.
"""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, LogLocator, NullFormatter, NullLocator

from ..display import rate_unit, weights_label
from ..engine.dtypes import matmul_dtype
from ..engine.hardware import Accelerator
from ..engine.scenario import STAGES
from .labels import PointLabel, hits_paths, wrap
from .measured import draw_measured_roofs, measured_note, measured_series
from .roofline import (Series, bandwidth_label, draw_roofline, fmt_value, legend_handles, roof_for,
                       tick_label)
from .style import (CLASS_MARKERS, GPU_PALETTE, STAGE_COLORS, STAGE_LINESTYLES, class_color, class_marker,
                    gpu_styles, styled)

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


def gemm_dtype(scenario: dict) -> str:
    return matmul_dtype(scenario["weight_dtype"], scenario["act_dtype"])


def drawable(ops: pd.DataFrame) -> pd.DataFrame:
    """Operators that have a place on log-log axes: positive, finite intensity and attainable performance.
    (Operators without FLOPs, such as the embedding gather or the KV-cache copy, have none.) Communication rows are
    placed against the link, as in a hierarchical roofline: x = FLOPs per byte on the link, y = FLOPs / t_s (their
    time with the link latency), so they sit on or under the network roof."""
    ops = ops.copy()
    comm = ops["op_class"] == "communication"
    if comm.any():
        network_bytes = ops.loc[comm, "bytes_network"].where(ops.loc[comm, "bytes_network"] > 0)
        ops.loc[comm, "intensity"] = ops.loc[comm, "flops"] / network_bytes
        ops.loc[comm, "attainable_flops_per_s"] = ops.loc[comm, "flops"] / ops.loc[comm, "t_s"]
    ok = (ops["intensity"] > 0) & np.isfinite(ops["intensity"]) & (ops["attainable_flops_per_s"] > 0)
    return ops[ok]


def network_links(ops: pd.DataFrame, gpu: Accelerator) -> tuple[tuple[str, float], ...]:
    """The links the deployment's collectives cross, (name, byte/s) for each: scale-up and, beyond one domain,
    scale-out; () for a single device."""
    comm = ops[ops["op_class"] == "communication"]
    names = []
    for bandwidth in sorted(set(comm["network_bandwidth_bytes_per_s"].dropna()), reverse=True):
        up = bandwidth == gpu.scaleup_bandwidth_bytes_per_s
        names.append(((gpu.scaleup_link or "link") if up else "scale-out", float(bandwidth)))
    return tuple(names)


def stage_shares(ops: pd.DataFrame) -> pd.Series:
    """Each operator row's share of its (gpu, stage) time: t_s x count / sum."""
    time = ops["t_s"] * ops["count"]
    return time / time.groupby([ops["gpu"], ops["stage"]]).transform("sum")


def _marker_size(share):
    return 14.0 + 120.0 * np.asarray(share, dtype=float)


def _right_edge(fig) -> float:
    """Display x that text may reach: 2% short of the edge, since text measured at the figure's dpi renders a
    little wider at the PNG's dpi and in the PDF's fonts."""
    return fig.bbox.x1 - 0.02 * fig.bbox.width


def _inside(fig, artists, bottom: float | None = None) -> bool:
    """Whether every artist's box ends inside the figure: right edge, top, and bottom (or above `bottom`, in
    display pixels)."""
    renderer = fig.canvas.get_renderer()
    low = fig.bbox.y0 + 2 if bottom is None else bottom
    for artist in artists:
        box = artist.get_window_extent(renderer)
        if box.x1 > _right_edge(fig) or box.y0 < low or box.y1 > fig.bbox.y1 or box.x0 < fig.bbox.x0:
            return False
    return True


def _fitting(fig, build, bottom: float | None = None) -> list | None:
    """Legends from `build(fontsize)` (a list), in the largest of LEGEND_FONT_SIZES whose legends end inside the
    figure on the right and at the bottom (measured: no entry is clipped or hidden); None, with nothing left on
    the figure, when they do not fit even in the smallest size."""
    for size in LEGEND_FONT_SIZES:
        legends = build(size)
        if _inside(fig, legends, bottom):
            return legends
        for legend in legends:
            legend.remove()
    return None


def _legend_below(fig, entries, title: str, left: float):
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
        if box.x1 <= _right_edge(fig) or columns == 1:
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


def _from_top(fig, inches: float) -> float:
    """Figure fraction `inches` below the top edge."""
    return 1.0 - inches / fig.get_size_inches()[1]


def _fit_text(fig, make) -> None:
    """`make(limit)` creates a text with its names cut to `limit` characters; keep the first (of
    TITLE_NAME_LIMITS) that ends inside the figure's right edge."""
    renderer = fig.canvas.get_renderer()
    for limit in TITLE_NAME_LIMITS:
        artist = make(limit)
        if artist.get_window_extent(renderer).x1 <= _right_edge(fig) or limit == TITLE_NAME_LIMITS[-1]:
            return
        artist.remove()


def _title(fig, title, subtitle: str) -> None:
    """Title (`title(limit)`: names cut to `limit` characters, so it fits the width) and scenario line,
    left-aligned with the axes, inside the top margin."""
    x = fig.axes[0].get_position().x0
    _fit_text(fig, lambda limit: fig.text(x, _from_top(fig, TITLE_Y), title(limit), fontsize=8.5,
                                          fontweight="bold", va="top", ha="left"))
    fig.text(x, _from_top(fig, SUBTITLE_Y), subtitle, fontsize=7, color="#444444", va="top", ha="left")


def _suptitle(fig, title, x: float) -> None:
    """A figure title (`title(limit)` as in `_title`) at `x`, cut to fit the width."""
    _fit_text(fig, lambda limit: fig.suptitle(title(limit), x=x, ha="left", fontsize=9))


def _legends(fig, color_entries, color_title: str, classes, bottom: float | None = None) -> None:
    """Two legends right of the axes: colour (stage or GPU) on top, marker (operator class) right below it, in
    the largest font size at which both fit (above `bottom`, display pixels, if given). If the colour legend is
    too long for that, it goes below the axes in columns (`_legend_below`) and the marker legend stays right."""
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

    if _fitting(fig, build, bottom) is None:
        _legend_below(fig, color_entries, color_title.replace("\n", " "), fig.axes[0].get_position().x0)
        top = fig.axes[0].get_position().y1
        _fitting(fig, lambda size: [markers_at(top, size)]) or markers_at(top, LEGEND_FONT_SIZES[-1])


def _canvas():
    """The roofline figures' figure and axes: fixed size and margins."""
    fig, ax = plt.subplots(figsize=ROOFLINE_SIZE)
    fig.subplots_adjust(**ROOFLINE_MARGINS)
    return fig, ax


@styled
def roofline_figure(ops: pd.DataFrame, gpu: Accelerator, scenario: dict, model_name: str,
                    deployment: str | None = None):
    """Figure 1: every operator of every stage of one model on one GPU; colour = stage, marker = class.
    `deployment` ("4 x H100 SXM5 80GB, TP 4") names the setup in the title; the GPU's name by default."""
    ops = ops.assign(share=stage_shares(ops))
    points = drawable(ops)
    fig, ax = _canvas()
    stages = [s for s in STAGES if s in set(points["stage"])]
    measured = measured_series(gpu, gemm_dtype(scenario))  # the device's calibration table, if it has one
    note = fig.text(LEGEND_X, ax.get_position().y0, "marker area ~ share\nof stage time;\nlabels: share of\n"
                    "stage time" + (measured_note(gpu) if measured else ""), fontsize=6, color="#555555", va="bottom")
    _legends(fig, {s: {"marker": "o", "ls": "none", "color": STAGE_COLORS[s], "markersize": 5} for s in stages},
             "Stage", points["op_class"], bottom=note.get_window_extent(fig.canvas.get_renderer()).y1 + 4)
    _title(fig, lambda limit: f"{plain(shorten(model_name, limit))} on {plain(shorten(deployment or gpu.name, limit))}",
           scenario_caption(scenario))
    series, labels = [], []
    for stage in stages:
        for op_class, group in points[points["stage"] == stage].groupby("op_class", sort=False):
            series.append(Series(group["intensity"].to_numpy(), group["attainable_flops_per_s"].to_numpy(),
                                 STAGE_COLORS[stage], class_marker(op_class), _marker_size(group["share"])))
        for row in points[points["stage"] == stage].itertuples():
            labels.append(PointLabel(row.intensity, row.attainable_flops_per_s, row.op, row.share, stage,
                                     STAGE_COLORS[stage]))
    roof = roof_for(gpu, gemm_dtype(scenario), links=network_links(ops, gpu))
    result = draw_roofline(ax, [roof], series + ([measured] if measured else []), labels=labels)
    if measured:
        draw_measured_roofs(ax, gpu, gemm_dtype(scenario), result.xlim)
    return fig, result


def gpu_legend_entry(style, many: bool) -> dict:
    """Line2D settings of a GPU's legend entry: its colour and line style; with more GPUs than colours, also a
    filled or hollow dot, as its points are drawn."""
    entry = {"color": style.color, "lw": 1.5, "ls": style.linestyle}
    if many:
        entry.update(marker="o", markersize=3.5, markerfacecolor=style.color if style.filled else "white",
                     markeredgecolor=style.color)
    return entry


@styled
def cross_gpu_figure(ops: pd.DataFrame, gpus: dict[str, Accelerator], scenario: dict, model_name: str, stage: str,
                     plans: dict[str, str] | None = None):
    """Figure 2: one stage's operators on every configured GPU; colour = GPU (beyond 12 GPUs also line style and
    hollow points), marker = class; the links of multi-device deployments as network roofs (`plans`: {gpu: "TP 4"}
    names them in the legend)."""
    ops = ops[ops["stage"] == stage]
    ops = ops.assign(share=stage_shares(ops))
    points = drawable(ops)
    styles = gpu_styles(gpus)
    many = len(gpus) > len(GPU_PALETTE)
    fig, ax = _canvas()
    dtype = gemm_dtype(scenario)
    plans = plans or {}
    entries = [(f"{legend_name(g.name + (f' ({plans[k]})' if plans.get(k) else ''))}\n"
                f"{fmt_value(g.peak(dtype) / 1e12)} {rate_unit(dtype)}, {bandwidth_label(g.bandwidth_bytes_per_s)}",
                gpu_legend_entry(styles[k], many)) for k, g in gpus.items()]
    _legends(fig, entries, f"GPU: {dtype} peak,\nbandwidth", points["op_class"])
    _title(fig, lambda limit: f"{plain(shorten(model_name, limit))}, {stage}, on every configured GPU",
           scenario_caption(scenario))
    roofs = [roof_for(gpu, dtype, other_dtypes=False, color=styles[key].color, linestyle=styles[key].linestyle,
                      links=network_links(ops[ops["gpu"] == key], gpu)) for key, gpu in gpus.items()]
    series = []
    for key in gpus:
        for op_class, group in points[points["gpu"] == key].groupby("op_class", sort=False):
            series.append(Series(group["intensity"].to_numpy(), group["attainable_flops_per_s"].to_numpy(),
                                 styles[key].color, class_marker(op_class), _marker_size(group["share"]),
                                 filled=styles[key].filled))
    # one label per operator, at its highest point (the fastest roof): intensity does not depend on the GPU
    top = points.sort_values("attainable_flops_per_s").groupby("op", sort=False).tail(1)
    mean_share = points.groupby("op")["share"].mean()
    labels = [PointLabel(r.intensity, r.attainable_flops_per_s, r.op, float(mean_share[r.op]), stage)
              for r in top.itertuples()]
    result = draw_roofline(ax, roofs, series, labels=labels, shade=False, per_group=4,
                           label_format=lambda names, weight: wrap(names))
    return fig, result


def _time_unit(seconds: float) -> tuple[float, str]:
    """Scale and unit so the largest bar reads between 1 and 1000."""
    if seconds >= 1.0:
        return 1.0, "s"
    return (1e3, "ms") if seconds >= 1e-3 else (1e6, "µs")


#: from this many bars per panel on, bar labels and GPU names stand vertical (slanted ones would overlap)
CROWDED_BARS = 9


#: a bar of a (gpu, stage) that does not fit: faded, cross-hatched in red, its total under a cross (on a line of
#: its own, so that the label is no wider than a plain total and neighbouring labels do not touch)
MISFIT_ALPHA, MISFIT_COLOR, MISFIT_MARK = 0.3, "#aa3333", "✗"


@styled
def time_breakdown_figure(ops: pd.DataFrame, gpus: dict[str, Accelerator], model_name: str, stages,
                          misfits=frozenset(), plans: dict[str, str] | None = None):
    """Figure 3: per stage a panel; per GPU a bar of time by operator class, memory-bound solid, compute-bound
    hatched, network-bound (collectives) dotted; a bar whose (gpu, stage) is in `misfits` (does not fit) is faded,
    red cross-hatched and its total marked. `plans` ({gpu: "TP 4"}) names multi-device deployments under their
    bars. Many GPUs: vertical GPU names and totals, with the margins and headroom they need (measured)."""
    stages = [s for s in STAGES if s in stages]
    fig, axes = plt.subplots(1, len(stages), figsize=(7.0, 3.3), squeeze=False)
    fig.subplots_adjust(left=0.08, right=0.8, bottom=0.2, top=0.86, wspace=0.35)
    ops = ops.assign(time=ops["t_s"] * ops["count"])
    classes = [c for c in CLASS_MARKERS if c in set(ops["op_class"])]
    crowded = len(gpus) >= CROWDED_BARS
    totals_text = []
    for ax, stage in zip(axes[0], stages):
        table = ops[ops["stage"] == stage].pivot_table(index="gpu", columns=["op_class", "bound"], values="time",
                                                       aggfunc="sum", fill_value=0.0)
        keys = [k for k in gpus if k in table.index]
        totals = table.sum(axis=1)
        scale, unit = _time_unit(float(totals.max()))
        bottom = np.zeros(len(keys))
        x = np.arange(len(keys))
        for op_class in classes:
            for bound, hatch in (("memory", None), ("compute", "////"), ("network", "....")):
                if (op_class, bound) not in table.columns:
                    continue
                values = table.loc[keys, (op_class, bound)].to_numpy() * scale
                bars = ax.bar(x, values, 0.6, bottom=bottom, color=class_color(op_class), hatch=hatch,
                              edgecolor="white", lw=0.4)
                for key, bar in zip(keys, bars):
                    if (key, stage) in misfits:
                        bar.set_alpha(MISFIT_ALPHA)
                bottom += values
        for key, xi, total in zip(keys, x, bottom):
            misfit = (key, stage) in misfits
            if misfit:
                ax.bar(xi, total, 0.6, color="none", hatch="xxxx", edgecolor=MISFIT_COLOR, lw=0.4)
            label = (MISFIT_MARK + (" " if crowded else "\n") if misfit else "") + fmt_value(total)
            totals_text.append(ax.annotate(label, (xi, total),
                                           xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                                           fontsize=5.5 if crowded else 6.5, rotation=90 if crowded else 0,
                                           color=MISFIT_COLOR if misfit else "black"))
        names = [plain(shorten(k, 24)) + (f" ({(plans or {})[k]})" if (plans or {}).get(k) else "") for k in keys]
        if crowded or any((plans or {}).get(k) for k in keys):  # long labels stand upright, never off the left edge
            ax.set_xticks(x, names, rotation=90, ha="right", va="center", rotation_mode="anchor", fontsize=5.5)
        else:
            ax.set_xticks(x, names, rotation=30, ha="right", rotation_mode="anchor")
        ax.set_xlim(-0.6, len(keys) - 0.4)
        ax.set_ylabel(f"{'time to first token' if stage == 'prefill' else 'time per output token'} [{unit}]")
        ax.set_title(stage, fontsize=8)
        ax.set_ylim(0, float(bottom.max()) * 1.15)
        ax.spines[["top", "right"]].set_visible(False)
    _fit_breakdown(fig, axes[0], totals_text)
    _suptitle(fig, lambda limit: f"{plain(shorten(model_name, limit))}: where the time goes", 0.08)
    handles = [Patch(facecolor=class_color(c), label=c) for c in classes]
    handles += [Patch(facecolor="white", edgecolor="#555555", label="memory-bound"),
                Patch(facecolor="white", edgecolor="#555555", hatch="////", label="compute-bound")]
    if "network" in set(ops["bound"]):
        handles.append(Patch(facecolor="white", edgecolor="#555555", hatch="....", label="network-bound"))
    if misfits & {(k, s) for k in gpus for s in stages}:
        handles.append(Patch(facecolor="white", edgecolor=MISFIT_COLOR, hatch="xxxx",
                             label=f"{MISFIT_MARK} does not fit"))
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.81, axes[0][0].get_position().y1),
               frameon=False, title="Operator class")
    return fig


def _fit_breakdown(fig, axes, totals_text) -> None:
    """Room for the GPU names below the bars (bottom margin) and for the totals above them (y headroom),
    measured on the rendered text."""
    renderer = fig.canvas.get_renderer()
    lowest = min((label.get_window_extent(renderer).y0 for ax in axes for label in ax.get_xticklabels()),
                 default=fig.bbox.y0)
    if lowest < fig.bbox.y0 + 4:  # grow the bottom margin by the overshoot
        need = (fig.bbox.y0 + 4 - lowest) / fig.bbox.height
        fig.subplots_adjust(bottom=min(0.6, fig.subplotpars.bottom + need))
    for ax in axes:
        frame = ax.get_window_extent(renderer)
        mine = [t for t in totals_text if t.axes is ax]
        top = max((t.get_window_extent(renderer).y1 for t in mine), default=frame.y1)
        if top > frame.y1 - 2:  # the y axis is linear from 0: scale it so the highest total ends inside
            low, high = ax.get_ylim()
            ax.set_ylim(low, high * (top - frame.y0 + 4) / (frame.height - 2))


@styled
def batch_sweep_figure(sweeps: pd.DataFrame, gpu: Accelerator, model_name: str):
    """Figure 4: decode time per token and tokens/s versus batch; critical batch and memory limit marked."""
    rows = sweeps[(sweeps["sweep"] == "batch") & (sweeps["stage"] == "decode")].sort_values("batch")
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7.0, 4.2))
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.1, top=0.92, hspace=0.12)
    b = rows["batch"].to_numpy(dtype=float)
    top.plot(b, rows["t_s"] * 1e3, marker="o", ms=3, color=STAGE_COLORS["decode"])
    bottom.plot(b, rows["tokens_per_s"], marker="o", ms=3, color="#333333")
    top.set_ylabel("time per output token [ms]")
    bottom.set_ylabel("throughput [tokens/s]")
    bottom.set_xlabel("decode batch size [sequences]")
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlim(b.min() / 1.3, b.max() * 1.3)
        ax.xaxis.set_major_locator(FixedLocator(b))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(lambda value, _pos: f"{value:g}")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # short ranges keep 2+ labels
        ax.yaxis.set_major_formatter(lambda value, _pos: f"{value:g}")
        ax.yaxis.set_minor_locator(NullLocator())
        ax.grid(True, which="major", color="#e4e4e4", lw=0.5)
        ax.spines[["top", "right"]].set_visible(False)
    for ax, column in ((top, rows["t_s"] * 1e3), (bottom, rows["tokens_per_s"])):
        low, high = float(column.min()), float(column.max())
        ax.set_ylim(low / 1.6, high * 1.6)
    crit = float(rows["critical_batch"].iloc[0]) if len(rows) else math.nan
    x_low, x_high = top.get_xlim()
    if math.isfinite(crit) and b.min() <= crit <= b.max():
        for ax in (top, bottom):
            ax.axvline(crit, color="#0072B2", ls=(0, (4, 2)), lw=0.9)
        right_side = math.log(crit / x_low) / math.log(x_high / x_low) < 0.5  # label on the roomier side
        # at the foot of the line: the time curve rises with the batch, so the bottom of the panel is free
        top.annotate(f"critical batch {round(crit):,}\n(GEMMs reach the ridge)", (crit, 0),
                     xycoords=("data", "axes fraction"), xytext=(4 if right_side else -4, 3),
                     textcoords="offset points", ha="left" if right_side else "right", va="bottom", fontsize=6.5,
                     color="#0072B2", bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7})
    else:
        text = (f"critical batch {round(crit):,}: beyond the sweep" if math.isfinite(crit)
                else "GEMMs never reach the ridge in this sweep")
        top.annotate(text, (0, 1), xycoords="axes fraction", xytext=(4, -3), textcoords="offset points",
                     ha="left", va="top", fontsize=6.5, color="#0072B2")
    misfit = rows[~rows["fits"].astype(bool)]
    if len(misfit):
        first = float(misfit["batch"].min())
        fitting = rows[rows["batch"] < first]
        edge = math.sqrt(first * float(fitting["batch"].max())) if len(fitting) else x_low
        for ax in (top, bottom):
            ax.axvspan(edge, x_high, color="#f3dede", lw=0, zorder=0)
        memory = f"{gpu.memory_bytes / 2**30:.0f} GiB"
        _misfit_note(bottom, (f"from batch {first:g}, weights + KV cache\nexceed the usable part of {memory}",
                              f"from batch {first:g}:\nweights + KV cache\nexceed usable {memory}"), edge, crit)
    _suptitle(fig, lambda limit: f"{plain(shorten(model_name, limit))} on {plain(shorten(gpu.name, limit))}: decode "
                                 "batch sweep", 0.1)
    return fig


def _misfit_note(ax, texts: tuple[str, ...], edge: float, crit: float) -> None:
    """The memory-limit note inside the shaded region (x >= edge) of `ax`, at the first place where it crosses
    neither the dashed critical-batch line nor the curve: at the region's left edge, right of the critical line,
    at the right end, left of the critical line; at the foot of the panel, else at its top; in the first of
    `texts` (the same words, wrapped ever narrower) that finds such a place."""
    renderer = ax.figure.canvas.get_renderer()
    x_high = ax.get_xlim()[1]
    frame = ax.get_window_extent(renderer)
    crit_px = ax.transData.transform((crit, 1.0))[0] if math.isfinite(crit) else None
    curves = [ax.transData.transform(line.get_xydata()) for line in ax.get_lines() if line.get_marker() != "None"]
    edge_px = ax.transData.transform((edge, 1.0))[0]
    spots = [(edge, 4, "left"), (crit, 4, "left"), (x_high, -4, "right"), (crit, -4, "right")]
    spots = [spot for spot in spots if math.isfinite(spot[0]) and edge <= spot[0] <= x_high]
    candidates = [(text, y, dy, va, x, dx, ha) for text in texts for y, dy, va in ((0, 4, "bottom"), (1, -4, "top"))
                  for x, dx, ha in spots]
    for strict in (True, False):  # then let the note reach left of the shading, if the region is too narrow
        for text, y, dy, va, x, dx, ha in candidates:
            note = ax.annotate(text, (x, y), xycoords=("data", "axes fraction"), xytext=(dx, dy),
                               textcoords="offset points", ha=ha, va=va, fontsize=6.5, color="#a33")
            box = note.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and (box.x0 >= edge_px - 1 or not strict)
            crosses = crit_px is not None and box.x0 - 2 <= crit_px <= box.x1 + 2
            if inside and not crosses and not hits_paths(box, curves, 2.0):
                return
            note.remove()
    text, y, dy, va, x, dx, ha = candidates[0]  # nowhere clear (a very narrow region): the first place
    ax.annotate(text, (x, y), xycoords=("data", "axes fraction"), xytext=(dx, dy), textcoords="offset points",
                ha=ha, va=va, fontsize=6.5, color="#a33")


@styled
def seq_sweep_figure(sweeps: pd.DataFrame, gpus: dict[str, Accelerator], scenario: dict, model_name: str):
    """Figure 5: attention intensity (left) and attention's share of stage time (right) versus sequence length.
    Colour = GPU (beyond 12 GPUs also a marker), line style = stage."""
    rows = sweeps[sweeps["sweep"] == "seq_len"].sort_values("seq_len")
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.0, 3.2))
    fig.subplots_adjust(left=0.09, right=0.8, bottom=0.15, top=0.87, wspace=0.32)
    first_gpu = next(k for k in gpus if k in set(rows["gpu"]))
    stages = [s for s in STAGES if s in set(rows["stage"])]
    styles = gpu_styles(gpus)
    gpu_entries = [(legend_name(g.name, 18), {"color": styles[k].color, "lw": 1.2, "marker": styles[k].marker,
                                              "markersize": 3, "markerfacecolor": "white"})
                   for k, g in gpus.items()]
    stage_entries = [(stage, {"color": "#555555", "ls": STAGE_LINESTYLES[stage], "lw": 1.0}) for stage in stages]

    def stage_legend(top, size):
        return fig.legend(handles=legend_handles(stage_entries), loc="upper left", bbox_to_anchor=(0.81, top),
                          frameon=False, title="Stage", alignment="left", fontsize=size, title_fontsize=size + 0.5)

    def build(size):
        first = fig.legend(handles=legend_handles(gpu_entries), loc="upper left", bbox_to_anchor=(0.81, 0.87),
                           frameon=False, title="GPU", alignment="left", fontsize=size, title_fontsize=size + 0.5)
        below = fig.transFigure.inverted().transform(first.get_window_extent(fig.canvas.get_renderer()))[0][1]
        return [first, stage_legend(below - 0.02, size)]

    if _fitting(fig, build) is None:  # many GPUs: their legend goes below the panels, the stages stay right
        _legend_below(fig, gpu_entries, "GPU", left.get_position().x0)
        stage_legend(left.get_position().y1, LEGEND_FONT_SIZES[0])
    _suptitle(fig, lambda limit: f"{plain(shorten(model_name, limit))}: attention versus sequence length "
                                 f"({scenario['attention']} attention)", 0.09)
    for stage in stages:
        mine = rows[(rows["gpu"] == first_gpu) & (rows["stage"] == stage)]
        left.plot(mine["seq_len"], mine["attention_intensity"], color="#333333", ls=STAGE_LINESTYLES[stage],
                  marker="o", ms=2.5)
    attention_dtype = matmul_dtype(scenario["kv_dtype"], scenario["act_dtype"])
    ridges = [g.ridge(attention_dtype) for g in gpus.values()]
    if max(ridges) / min(ridges) > 1.02:
        left.axhspan(min(ridges), max(ridges), color="#dddddd", lw=0, zorder=0)
        ridge_text = f"ridge of the GPUs ({fmt_value(min(ridges))}–{fmt_value(max(ridges))} FLOP/byte)"
    else:
        left.axhline(ridges[0], color="#999999", lw=0.8, ls=(0, (1, 2)))
        ridge_text = f"ridge {fmt_value(ridges[0])} FLOP/byte"
    left.annotate(ridge_text, (0, max(ridges)), xycoords=("axes fraction", "data"), xytext=(4, 2),
                  textcoords="offset points", fontsize=6.5, color="#666666", va="bottom")
    values = np.concatenate([rows["attention_intensity"].to_numpy(), ridges])
    left.set_ylim(values.min() / 2, values.max() * 4)
    left.set_ylabel("attention intensity [FLOP/byte]")
    for key in gpus:
        for stage in stages:
            mine = rows[(rows["gpu"] == key) & (rows["stage"] == stage)]
            right.plot(mine["seq_len"], mine["attention_time_share"] * 100, color=styles[key].color,
                       ls=STAGE_LINESTYLES[stage], lw=1.0, marker=styles[key].marker or None, ms=3,
                       markerfacecolor="white")
    right.set_ylabel("attention share of stage time [%]")
    right.set_ylim(0, 100)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length [tokens]")
        ax.xaxis.set_major_formatter(lambda value, _pos: f"{value:g}" if value < 1024 else f"{value / 1024:g}k")
        ax.grid(True, which="major", color="#e4e4e4", lw=0.5)
        ax.spines[["top", "right"]].set_visible(False)
        seq = rows["seq_len"].to_numpy(dtype=float)
        ax.set_xlim(seq.min() / 1.3, seq.max() * 1.3)
    left.set_yscale("log")
    left.yaxis.set_major_formatter(lambda value, _pos: tick_label(value))
    left.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    left.yaxis.set_minor_formatter(NullFormatter())
    return fig
