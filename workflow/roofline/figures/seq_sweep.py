"""Figure: attention versus sequence length; its arithmetic intensity against the GPUs' ridges (left) and its share
of the stage time on each GPU (right). Colour = GPU (beyond 12 GPUs also a marker), line style = stage."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import LogLocator, NullFormatter

from ..engine.hardware import Accelerator
from ..engine.parts import scenario_dtypes
from ..engine.scenario import STAGES, Scenario
from .inputs import ModelFigures
from .layout import LEGEND_FONT_SIZES, fitting, legend_below, legend_name, plain, put_suptitle, shorten
from .roofline import fmt_value, legend_handles
from .roofs import LogTicks
from .style import STAGE_LINESTYLES, gpu_styles, styled, under_width


@styled
def seq_sweep_figure(sweeps: pd.DataFrame, gpus: dict[str, Accelerator], scenario: dict, model_name: str):
    """Figure 5: attention intensity (left) and attention's share of stage time (right) versus sequence length.
    Colour = GPU (beyond 12 GPUs also a marker), line style = stage."""
    rows = sweeps[sweeps["sweep"] == "seq_len"].sort_values("seq_len")
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.0, 3.2))
    fig.subplots_adjust(left=0.09, right=0.8, bottom=0.15, top=0.87, wspace=0.32)
    stages = [s for s in STAGES if s in set(rows["stage"])]
    styles = gpu_styles(gpus)
    _legends(fig, gpus, stages, styles)
    put_suptitle(fig, lambda limit: f"{plain(shorten(model_name, limit))}: attention versus sequence length "
                                    f"({scenario['attention']} attention)", 0.09)
    _intensity_panel(left, rows, stages, gpus, scenario)
    for order, key in enumerate(gpus):
        for stage in stages:
            mine = rows[(rows["gpu"] == key) & (rows["stage"] == stage)]
            right.plot(mine["seq_len"], mine["attention_time_share"] * 100, color=styles[key].color,
                       ls=STAGE_LINESTYLES[stage], lw=under_width(order, len(gpus), 1.0, 1.8),
                       marker=styles[key].marker or None, ms=3, markerfacecolor="white")
    right.set_ylabel("attention share of stage time\n(bound) [%]")
    # the share's own range (to 100%): a few percent on a 0-100 axis squashed every GPU's curve onto the floor
    largest = float(np.nanmax(rows["attention_time_share"].to_numpy(dtype=float), initial=0.0)) * 100
    right.set_ylim(0, min(100.0, max(5.0, largest * 1.15)))
    seq = rows["seq_len"].to_numpy(dtype=float)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("sequence length [tokens]")
        ax.xaxis.set_major_formatter(lambda value, _pos: f"{value:g}" if value < 1024 else f"{value / 1024:g}k")
        ax.grid(True, which="major", color="#e4e4e4", lw=0.5)
        ax.spines[["top", "right"]].set_visible(False)
        ax.set_xlim(seq.min() / 1.3, seq.max() * 1.3)
    left.set_yscale("log")
    left.yaxis.set_major_formatter(LogTicks())
    left.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
    left.yaxis.set_minor_formatter(NullFormatter())
    return fig


def _legends(fig, gpus: dict[str, Accelerator], stages: list[str], styles) -> None:
    """GPU legend (colour, marker) and stage legend (line style) right of the panels; many GPUs: their legend goes
    below the panels, the stages stay right."""
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

    if fitting(fig, build) is None:
        left = fig.axes[0]
        legend_below(fig, gpu_entries, "GPU", left.get_position().x0)
        stage_legend(left.get_position().y1, LEGEND_FONT_SIZES[0])


def _intensity_panel(ax, rows: pd.DataFrame, stages: list[str], gpus: dict[str, Accelerator], scenario: dict) -> None:
    """Attention's intensity per stage (drawn from the first GPU's rows: it does not depend on the GPU) against the
    GPUs' ridges at the attention dtype (one line, or the band they span)."""
    first_gpu = next(k for k in gpus if k in set(rows["gpu"]))
    for stage in stages:
        mine = rows[(rows["gpu"] == first_gpu) & (rows["stage"] == stage)]
        ax.plot(mine["seq_len"], mine["attention_intensity"], color="#333333", ls=STAGE_LINESTYLES[stage],
                marker="o", ms=2.5)
    # the dtype the engine computes attention at (the KV cache's against 16-bit activations: 8-bit ones are GEMM
    # inputs only), so fp8 activations and KV on a device without an fp8 peak read its 16-bit one, as the tables do;
    # the plan does not change a dtype (and a plan's dict would not hash)
    attention_dtype = scenario_dtypes(Scenario(**{**scenario, "parallel": "auto"})).attention
    ridges = [g.ridge(attention_dtype) for g in gpus.values()]
    if max(ridges) / min(ridges) > 1.02:
        ax.axhspan(min(ridges), max(ridges), color="#dddddd", lw=0, zorder=0)
        ridge_text = f"ridge of the GPUs ({fmt_value(min(ridges))}–{fmt_value(max(ridges))} FLOP/byte)"
        swatch = Patch(color="#dddddd")
    else:
        ax.axhline(ridges[0], color="#999999", lw=0.8, ls=(0, (1, 2)))
        ridge_text = f"ridge {fmt_value(ridges[0])} FLOP/byte"
        swatch = Line2D([], [], color="#999999", lw=0.8, ls=(0, (1, 2)))
    # named in a key at the top left rather than written along the band, which the prefill curve climbs through;
    # the top left stays clear (short prompts' intensity starts low)
    ax.legend(handles=[swatch], labels=[ridge_text], loc="upper left", fontsize=6.5, frameon=False,
              handlelength=1.2, labelcolor="#666666")
    values = np.concatenate([rows["attention_intensity"].to_numpy(), ridges])
    ax.set_ylim(values.min() / 2, values.max() * 4)
    ax.set_ylabel("attention intensity [FLOP/byte]")


def applies(data: ModelFigures, _item=None) -> bool:
    """A model has a sequence-length sweep when the sweeps hold one."""
    return len(data.sweeps[data.sweeps["sweep"] == "seq_len"]) > 0


def draw(data: ModelFigures, _item=None):
    return seq_sweep_figure(data.sweeps, data.gpus, data.scenario, data.name)


def caption(_data: ModelFigures, _item=None) -> str:
    return ("Attention versus sequence length: the arithmetic intensity of attention and its share of the stage "
            "time. Where two GPUs' shares coincide, the one listed first is the wider line underneath.")
