"""Figure: where the time goes; per stage a panel, per GPU a bar of time by operator class, memory-bound solid,
compute-bound hatched, network-bound (collectives) striped; a setup that does not fit is faded and marked."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from ..engine.hardware import Accelerator
from ..engine.scenario import STAGES
from .inputs import ModelFigures
from .layout import plain, put_suptitle, shorten
from .roofline import fmt_value
from .style import CLASS_MARKERS, MISFIT_MARK, class_color, styled

#: from this many bars per panel on, bar labels and GPU names stand vertical (slanted ones would overlap)
CROWDED_BARS = 9
#: a bar of a (gpu, stage) that does not fit: faded, cross-hatched in red, its total under a cross (on a line of
#: its own, so that the label is no wider than a plain total and neighbouring labels do not touch)
MISFIT_ALPHA, MISFIT_COLOR = 0.3, "#aa3333"
#: the hatch of each bound's part of a bar (network: stripes, not dots: a dotted hatch is a pattern of ~5,000 curves
#: that WeasyPrint takes ~2 s per PDF to paint)
BOUND_HATCHES = (("memory", None), ("compute", "////"), ("network", "----"))


def _time_unit(seconds: float) -> tuple[float, str]:
    """Scale and unit so the largest bar reads between 1 and 1000."""
    if seconds >= 1.0:
        return 1.0, "s"
    return (1e3, "ms") if seconds >= 1e-3 else (1e6, "µs")


@styled
def time_breakdown_figure(ops: pd.DataFrame, gpus: dict[str, Accelerator], model_name: str, stages,
                          misfits=frozenset(), plans: dict[str, str] | None = None):
    """Figure 3: per stage a panel; per GPU a bar of time by operator class, memory-bound solid, compute-bound
    hatched, network-bound (collectives) striped; a bar whose (gpu, stage) is in `misfits` (does not fit) is faded,
    red cross-hatched and its total marked. `plans` ({gpu: "TP 4"}) names multi-device deployments under their
    bars. Many GPUs: vertical GPU names and totals, with the margins and headroom they need (measured)."""
    stages = [s for s in STAGES if s in stages]
    fig, axes = plt.subplots(1, len(stages), figsize=(7.0, 3.3), squeeze=False)
    fig.subplots_adjust(left=0.08, right=0.8, bottom=0.2, top=0.86, wspace=0.35)
    ops = ops.assign(time=ops["t_s"] * ops["count"])
    classes = [c for c in CLASS_MARKERS if c in set(ops["op_class"])]
    totals_text = []
    for ax, stage in zip(axes[0], stages):
        totals_text += _panel(ax, ops[ops["stage"] == stage], stage, gpus, classes, misfits, plans or {})
    _fit_breakdown(fig, axes[0], totals_text)
    put_suptitle(fig, lambda limit: f"{plain(shorten(model_name, limit))}: where the time goes", 0.08)
    fig.legend(handles=_legend_handles(ops, classes, {(k, s) for k in gpus for s in stages} & misfits),
               loc="upper left", bbox_to_anchor=(0.81, axes[0][0].get_position().y1), frameon=False,
               title="Operator class")
    return fig


def _panel(ax, ops: pd.DataFrame, stage: str, gpus: dict[str, Accelerator], classes: list[str], misfits,
           plans: dict[str, str]) -> list:
    """One stage's bars (one per GPU, stacked by class and bound), their totals and the GPU names; returns the
    totals' texts."""
    crowded = len(gpus) >= CROWDED_BARS
    table = ops.pivot_table(index="gpu", columns=["op_class", "bound"], values="time", aggfunc="sum",
                            fill_value=0.0)
    keys = [k for k in gpus if k in table.index]
    scale, unit = _time_unit(float(table.sum(axis=1).max()))
    x = np.arange(len(keys))
    bottom = np.zeros(len(keys))
    for op_class in classes:
        for bound, hatch in BOUND_HATCHES:
            if (op_class, bound) not in table.columns:
                continue
            values = table.loc[keys, (op_class, bound)].to_numpy() * scale
            bars = ax.bar(x, values, 0.6, bottom=bottom, color=class_color(op_class), hatch=hatch,
                          edgecolor="white", lw=0.4)
            for key, bar in zip(keys, bars):
                if (key, stage) in misfits:
                    bar.set_alpha(MISFIT_ALPHA)
            bottom += values
    texts = [_total(ax, xi, total, (key, stage) in misfits, crowded) for key, xi, total in zip(keys, x, bottom)]
    _gpu_names(ax, [gpus[k].name for k in keys], keys, x, plans, crowded)
    # short words: a rotated label longer than the panel runs up into the figure title (the decode panel's did)
    ax.set_ylabel(f"{'TTFT' if stage == 'prefill' else 'TPOT'}, bound [{unit}]")
    ax.set_title(stage, fontsize=8)
    ax.set_ylim(0, float(bottom.max()) * 1.15)
    ax.spines[["top", "right"]].set_visible(False)
    return texts


def _total(ax, xi: float, total: float, misfit: bool, crowded: bool):
    """The total above a bar; a bar that does not fit is cross-hatched and its total marked."""
    if misfit:
        ax.bar(xi, total, 0.6, color="none", hatch="xxxx", edgecolor=MISFIT_COLOR, lw=0.4)
    label = (MISFIT_MARK + (" " if crowded else "\n") if misfit else "") + fmt_value(total)
    return ax.annotate(label, (xi, total), xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                       fontsize=5.5 if crowded else 6.5, rotation=90 if crowded else 0,
                       color=MISFIT_COLOR if misfit else "black")


def _gpu_names(ax, names: list[str], keys: list[str], x, plans: dict[str, str], crowded: bool) -> None:
    """The GPUs' display names (as every other figure and table writes them) under the bars, with the
    multi-device plans; slanted, or upright when there are many or long ones (never off the left edge)."""
    # a plan on a line of its own: upright labels half as tall (a one-line '(16 devices, TP 8, PP 2)' took two
    # thirds of the figure's height)
    names = [plain(shorten(name, 16)) + (f"\n{plans[k]}" if plans.get(k) else "") for name, k in zip(names, keys)]
    if crowded or any(plans.get(k) for k in keys):
        ax.set_xticks(x, names, rotation=90, ha="right", va="center", rotation_mode="anchor", fontsize=5.5)
    else:
        ax.set_xticks(x, names, rotation=30, ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.6, len(keys) - 0.4)


def _legend_handles(ops: pd.DataFrame, classes: list[str], misfits) -> list[Patch]:
    """Colour = class, hatch = bound (network only when a collective bounds a part), and the misfit mark when a
    bar carries it."""
    hatches = dict(BOUND_HATCHES)
    handles = [Patch(facecolor=class_color(c), label=c) for c in classes]
    handles += [Patch(facecolor="white", edgecolor="#555555", hatch=hatches[bound], label=f"{bound}-bound")
                for bound in ("memory", "compute", "network") if bound != "network" or "network" in set(ops["bound"])]
    if misfits:
        handles.append(Patch(facecolor="white", edgecolor=MISFIT_COLOR, hatch="xxxx",
                             label=f"{MISFIT_MARK} does not fit"))
    return handles


def _fit_breakdown(fig, axes, totals_text) -> None:
    """Room for the GPU names below the bars (bottom margin) and for the totals above them (y headroom),
    measured on the rendered text."""
    renderer = fig.canvas.get_renderer()
    lowest = min((label.get_window_extent(renderer).y0 for ax in axes for label in ax.get_xticklabels()),
                 default=fig.bbox.y0)
    if lowest < fig.bbox.y0 + 4:  # grow the figure by the overshoot, under the bars: they keep their height
        height, need = fig.get_figheight(), (fig.bbox.y0 + 4 - lowest) / fig.dpi
        bottom, top = fig.subplotpars.bottom * height + need, (1 - fig.subplotpars.top) * height
        fig.set_figheight(height + need)
        fig.subplots_adjust(bottom=bottom / (height + need), top=1 - top / (height + need))
    for ax in axes:
        frame = ax.get_window_extent(renderer)
        mine = [t for t in totals_text if t.axes is ax]
        top = max((t.get_window_extent(renderer).y1 for t in mine), default=frame.y1)
        if top > frame.y1 - 2:  # the y axis is linear from 0: scale it so the highest total ends inside
            low, high = ax.get_ylim()
            ax.set_ylim(low, high * (top - frame.y0 + 4) / (frame.height - 2))


def draw(data: ModelFigures, _item=None):
    return time_breakdown_figure(data.ops, data.gpus, data.name, data.stages, data.misfits, data.multi_device)


def caption(_data: ModelFigures, _item=None) -> str:
    return ("Where the time goes: per deployment and stage, the roofline bound on time by operator class; solid parts "
            "are memory-bound, hatched parts compute-bound, striped parts the collectives (network-bound); a faded, "
            "red cross-hatched bar marked ✗ does not fit on that GPU.")
