"""The five figures of a model: roofline per GPU, cross-GPU roofline per stage, where the time goes, batch sweep,
sequence-length sweep. Each function takes tidy tables (SI units) and specs and returns a matplotlib Figure with
fixed margins (no layout engine: label placement measures display coordinates, which must not move afterwards).
"""
from __future__ import annotations

import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, LogLocator, NullFormatter, NullLocator

from ..dtypes import matmul_dtype
from ..hardware import Accelerator
from ..scenario import STAGES
from .labels import PointLabel, hits_paths, wrap
from .roofline import Series, bandwidth_label, fmt_value, draw_roofline, legend_handles, roof_for
from .style import (CLASS_MARKERS, STAGE_COLORS, STAGE_LINESTYLES, class_color, class_marker, gpu_colors, styled)

ROOFLINE_SIZE = (7.0, 4.3)
ROOFLINE_MARGINS = {"left": 0.085, "right": 0.775, "bottom": 0.105, "top": 0.9}
LEGEND_X = 0.79
#: legend font sizes tried in order until both legends fit right of the axes
LEGEND_FONT_SIZES = (6.5, 6.0, 5.5, 5.0)


def plain(text: str) -> str:
    """A user-supplied name as literal text (matplotlib would parse '$...$' as mathtext)."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def scenario_caption(scenario: dict) -> str:
    return (f"batch {scenario['batch']}, sequence {scenario['seq_len']}, weights {scenario['weight_dtype']}, "
            f"activations {scenario['act_dtype']}, KV {scenario['kv_dtype']}, {scenario['attention']} attention")


def gemm_dtype(scenario: dict) -> str:
    return matmul_dtype(scenario["weight_dtype"], scenario["act_dtype"])


def drawable(ops: pd.DataFrame) -> pd.DataFrame:
    """Operators that have a place on log-log axes: positive, finite intensity and attainable performance.
    (Operators without FLOPs, such as the embedding gather or the KV-cache copy, have none.)"""
    ok = (ops["intensity"] > 0) & np.isfinite(ops["intensity"]) & (ops["attainable_flops_per_s"] > 0)
    return ops[ok]


def stage_shares(ops: pd.DataFrame) -> pd.Series:
    """Each operator row's share of its (gpu, stage) time: t_s x count / sum."""
    time = ops["t_s"] * ops["count"]
    return time / time.groupby([ops["gpu"], ops["stage"]]).transform("sum")


def _marker_size(share):
    return 14.0 + 120.0 * np.asarray(share, dtype=float)


def _fitting(fig, build) -> list:
    """Legends from `build(fontsize)` (a list), in the largest of LEGEND_FONT_SIZES whose legends end inside the
    figure's right edge (measured: no entry is clipped), else in the smallest."""
    renderer = fig.canvas.get_renderer()
    for size in LEGEND_FONT_SIZES:
        legends = build(size)
        if max(legend.get_window_extent(renderer).x1 for legend in legends) <= fig.bbox.x1 - 2 \
                or size == LEGEND_FONT_SIZES[-1]:
            return legends
        for legend in legends:
            legend.remove()


def _legends(fig, color_entries: dict[str, dict], color_title: str, classes) -> None:
    """Two legends right of the axes: colour (stage or GPU) on top, marker (operator class) right below it.
    Long entries are wrapped by the caller; `_fitting` picks a font size that keeps both inside the figure."""
    renderer = fig.canvas.get_renderer()
    marker_entries = {c: {"marker": class_marker(c), "ls": "none", "color": "#555555", "markersize": 5}
                      for c in CLASS_MARKERS if c in set(classes)}

    def build(size):
        first = fig.legend(handles=legend_handles(color_entries), title=color_title, loc="upper left",
                           bbox_to_anchor=(LEGEND_X, ROOFLINE_MARGINS["top"]), frameon=False, alignment="left",
                           handlelength=1.5, borderaxespad=0.2, fontsize=size, title_fontsize=size + 0.5)
        bottom = fig.transFigure.inverted().transform(first.get_window_extent(renderer))[0][1]
        second = fig.legend(handles=legend_handles(marker_entries), title="Operator class", loc="upper left",
                            bbox_to_anchor=(LEGEND_X, bottom - 0.02), frameon=False, alignment="left",
                            handlelength=1.5, borderaxespad=0.2, fontsize=size, title_fontsize=size + 0.5)
        return [first, second]

    fig.add_artist(_fitting(fig, build)[0])


def legend_name(name: str, width: int = 20) -> str:
    """A GPU or model name broken at spaces into lines of at most about `width` characters (legend entries)."""
    return "\n".join(textwrap.wrap(plain(name), width, break_long_words=False, break_on_hyphens=False)) or plain(name)


def _title(fig, title: str, subtitle: str) -> None:
    """Title and scenario line, left-aligned with the axes, inside the fixed top margin."""
    fig.text(ROOFLINE_MARGINS["left"], 0.975, title, fontsize=8.5, fontweight="bold", va="top", ha="left")
    fig.text(ROOFLINE_MARGINS["left"], 0.935, subtitle, fontsize=7, color="#444444", va="top", ha="left")


@styled
def roofline_figure(ops: pd.DataFrame, gpu: Accelerator, scenario: dict, model_name: str):
    """Figure 1: every operator of every stage of one model on one GPU; colour = stage, marker = class."""
    ops = ops.assign(share=stage_shares(ops))
    points = drawable(ops)
    fig, ax = plt.subplots(figsize=ROOFLINE_SIZE)
    fig.subplots_adjust(**ROOFLINE_MARGINS)
    series, labels = [], []
    stages = [s for s in STAGES if s in set(points["stage"])]
    for stage in stages:
        for op_class, group in points[points["stage"] == stage].groupby("op_class", sort=False):
            series.append(Series(group["intensity"].to_numpy(), group["attainable_flops_per_s"].to_numpy(),
                                 STAGE_COLORS[stage], class_marker(op_class), _marker_size(group["share"])))
        for row in points[points["stage"] == stage].itertuples():
            labels.append(PointLabel(row.intensity, row.attainable_flops_per_s, row.op, row.share, stage,
                                     STAGE_COLORS[stage]))
    result = draw_roofline(ax, [roof_for(gpu, gemm_dtype(scenario))], series, labels=labels)
    _title(fig, f"{plain(model_name)} on {plain(gpu.name)}", scenario_caption(scenario))
    _legends(fig, {s: {"marker": "o", "ls": "none", "color": STAGE_COLORS[s], "markersize": 5} for s in stages},
             "Stage", points["op_class"])
    fig.text(LEGEND_X, 0.105, "marker area ~ share\nof stage time;\nlabels: share of\nstage time", fontsize=6,
             color="#555555", va="bottom")
    return fig, result


@styled
def cross_gpu_figure(ops: pd.DataFrame, gpus: dict[str, Accelerator], scenario: dict, model_name: str, stage: str):
    """Figure 2: one stage's operators on every configured GPU; colour = GPU, marker = class."""
    ops = ops[ops["stage"] == stage]
    ops = ops.assign(share=stage_shares(ops))
    points = drawable(ops)
    colors = gpu_colors(gpus)
    fig, ax = plt.subplots(figsize=ROOFLINE_SIZE)
    fig.subplots_adjust(**ROOFLINE_MARGINS)
    roofs = [roof_for(gpu, gemm_dtype(scenario), other_dtypes=False, color=colors[key]) for key, gpu in gpus.items()]
    series = []
    for key in gpus:
        for op_class, group in points[points["gpu"] == key].groupby("op_class", sort=False):
            series.append(Series(group["intensity"].to_numpy(), group["attainable_flops_per_s"].to_numpy(),
                                 colors[key], class_marker(op_class), _marker_size(group["share"])))
    # one label per operator, at its highest point (the fastest roof): intensity does not depend on the GPU
    top = points.sort_values("attainable_flops_per_s").groupby("op", sort=False).tail(1)
    mean_share = points.groupby("op")["share"].mean()
    labels = [PointLabel(r.intensity, r.attainable_flops_per_s, r.op, float(mean_share[r.op]), stage)
              for r in top.itertuples()]
    result = draw_roofline(ax, roofs, series, labels=labels, shade=False, per_group=4,
                           label_format=lambda names, weight: wrap(names))
    _title(fig, f"{plain(model_name)}, {stage}, on every configured GPU", scenario_caption(scenario))
    dtype = gemm_dtype(scenario)
    unit = "TOP/s" if dtype.startswith("int") else "TFLOP/s"
    entries = {f"{legend_name(g.name)}\n{fmt_value(g.peak(dtype) / 1e12)} {unit}, "
               f"{bandwidth_label(g.bandwidth_bytes_per_s)}": {"color": colors[k], "lw": 1.5} for k, g in gpus.items()}
    _legends(fig, entries, f"GPU: {dtype} peak,\nbandwidth", points["op_class"])
    return fig, result


def _time_unit(seconds: float) -> tuple[float, str]:
    """Scale and unit so the largest bar reads between 1 and 1000."""
    if seconds >= 1.0:
        return 1.0, "s"
    return (1e3, "ms") if seconds >= 1e-3 else (1e6, "µs")


def _short(value: float) -> str:
    """3 significant digits, never an exponent: 2620 -> '2,620', 18.6 -> '18.6'."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


@styled
def time_breakdown_figure(ops: pd.DataFrame, gpus: dict[str, Accelerator], model_name: str, stages):
    """Figure 3: per stage a panel; per GPU a bar of time by operator class, memory-bound solid, compute-bound
    hatched."""
    stages = [s for s in STAGES if s in stages]
    fig, axes = plt.subplots(1, len(stages), figsize=(7.0, 3.3), squeeze=False)
    fig.subplots_adjust(left=0.08, right=0.8, bottom=0.2, top=0.86, wspace=0.35)
    ops = ops.assign(time=ops["t_s"] * ops["count"])
    classes = [c for c in CLASS_MARKERS if c in set(ops["op_class"])]
    for ax, stage in zip(axes[0], stages):
        table = ops[ops["stage"] == stage].pivot_table(index="gpu", columns=["op_class", "bound"], values="time",
                                                       aggfunc="sum", fill_value=0.0)
        keys = [k for k in gpus if k in table.index]
        totals = table.sum(axis=1)
        scale, unit = _time_unit(float(totals.max()))
        bottom = np.zeros(len(keys))
        x = np.arange(len(keys))
        for op_class in classes:
            for bound, hatch in (("memory", None), ("compute", "////")):
                if (op_class, bound) not in table.columns:
                    continue
                values = table.loc[keys, (op_class, bound)].to_numpy() * scale
                ax.bar(x, values, 0.6, bottom=bottom, color=class_color(op_class), hatch=hatch, edgecolor="white",
                       lw=0.4)
                bottom += values
        for xi, total in zip(x, bottom):
            ax.annotate(_short(total), (xi, total), xytext=(0, 2), textcoords="offset points", ha="center",
                        va="bottom", fontsize=6.5)
        ax.set_xticks(x, [plain(k) for k in keys], rotation=30, ha="right", rotation_mode="anchor")
        ax.set_ylabel(f"{'time to first token' if stage == 'prefill' else 'time per output token'} [{unit}]")
        ax.set_title(stage, fontsize=8)
        ax.set_ylim(0, float(bottom.max()) * 1.15)
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle(f"{plain(model_name)}: where the time goes", x=0.08, ha="left", fontsize=9)
    handles = [Patch(facecolor=class_color(c), label=c) for c in classes]
    handles += [Patch(facecolor="white", edgecolor="#555555", label="memory-bound"),
                Patch(facecolor="white", edgecolor="#555555", hatch="////", label="compute-bound")]
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.81, 0.86), frameon=False, title="Operator class")
    return fig


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
        top.annotate(f"critical batch {crit:g}\n(GEMMs reach the ridge)", (crit, 0),
                     xycoords=("data", "axes fraction"), xytext=(4 if right_side else -4, 3),
                     textcoords="offset points", ha="left" if right_side else "right", va="bottom", fontsize=6.5,
                     color="#0072B2", bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7})
    else:
        text = (f"critical batch {crit:g}: beyond the sweep" if math.isfinite(crit)
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
        memory = f"{gpu.memory_bytes / 1e9:.0f} GB"
        _misfit_note(bottom, (f"from batch {first:g}, weights + KV cache\nexceed {memory}",
                              f"from batch {first:g}:\nweights + KV cache\nexceed {memory}"), edge, crit)
    fig.suptitle(f"{plain(model_name)} on {plain(gpu.name)}: decode batch sweep", x=0.1, ha="left", fontsize=9)
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
    """Figure 5: attention intensity (left) and attention's share of stage time (right) versus sequence length."""
    rows = sweeps[sweeps["sweep"] == "seq_len"].sort_values("seq_len")
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.0, 3.2))
    fig.subplots_adjust(left=0.09, right=0.8, bottom=0.15, top=0.87, wspace=0.32)
    first_gpu = next(k for k in gpus if k in set(rows["gpu"]))
    stages = [s for s in STAGES if s in set(rows["stage"])]
    for stage in stages:
        mine = rows[(rows["gpu"] == first_gpu) & (rows["stage"] == stage)]
        left.plot(mine["seq_len"], mine["attention_intensity"], color="#333333", ls=STAGE_LINESTYLES[stage],
                  marker="o", ms=2.5)
    attention_dtype = matmul_dtype(scenario["kv_dtype"], scenario["act_dtype"])
    ridges = [g.ridge(attention_dtype) for g in gpus.values()]
    if max(ridges) / min(ridges) > 1.02:
        left.axhspan(min(ridges), max(ridges), color="#dddddd", lw=0, zorder=0)
        ridge_text = f"ridge of the GPUs ({min(ridges):.0f}-{max(ridges):.0f} FLOP/byte)"
    else:
        left.axhline(ridges[0], color="#999999", lw=0.8, ls=(0, (1, 2)))
        ridge_text = f"ridge {ridges[0]:.0f} FLOP/byte"
    left.annotate(ridge_text, (0, max(ridges)), xycoords=("axes fraction", "data"), xytext=(4, 2),
                  textcoords="offset points", fontsize=6.5, color="#666666", va="bottom")
    values = np.concatenate([rows["attention_intensity"].to_numpy(), ridges])
    left.set_ylim(values.min() / 2, values.max() * 4)
    left.set_ylabel("attention intensity [FLOP/byte]")
    colors = gpu_colors(gpus)
    for key in gpus:
        for stage in stages:
            mine = rows[(rows["gpu"] == key) & (rows["stage"] == stage)]
            right.plot(mine["seq_len"], mine["attention_time_share"] * 100, color=colors[key],
                       ls=STAGE_LINESTYLES[stage], lw=1.0)
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
    left.yaxis.set_major_formatter(lambda value, _pos: f"{value:g}")
    left.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    left.yaxis.set_minor_formatter(NullFormatter())
    entries = {legend_name(g.name, 18): {"color": colors[k], "lw": 1.2} for k, g in gpus.items()}
    entries.update({stage: {"color": "#555555", "ls": STAGE_LINESTYLES[stage], "lw": 1.0} for stage in stages})
    _fitting(fig, lambda size: [fig.legend(handles=legend_handles(entries), loc="upper left",
                                           bbox_to_anchor=(0.81, 0.87), frameon=False, title="GPU / stage",
                                           alignment="left", fontsize=size, title_fontsize=size + 0.5)])
    fig.suptitle(f"{plain(model_name)}: attention versus sequence length ({scenario['attention']} attention)",
                 x=0.09, ha="left", fontsize=9)
    return fig
