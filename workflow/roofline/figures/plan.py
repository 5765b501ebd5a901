"""The deployment search's Pareto figure: tokens/s per device against tokens/s per user, one curve per GPU (that
GPU's frontier under the targets), the chosen plan marked, the TPOT target as a vertical line."""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator, NullFormatter

from .. import display
from .layout import plain
from .measured_runs import draw_measured_runs
from .roofs import LogTicks
from .style import gpu_styles, styled

PLAN_SIZE = (7.0, 4.2)  # inches


def _label(row, tpot_target_s: float | None) -> str:
    """The plan the search ranks first in a few short lines (the star's caption beside the plot): expected times
    with the bound beside them, and whether it misses the TPOT target in expectation."""
    misses = tpot_target_s and row.tpot_expected_s > tpot_target_s
    pools = []
    if getattr(row, "mode", "") == "disaggregated":  # which pools, and which one sets the rate
        pools = [f"disaggregated: {row.prefill_workers} prefill + {row.decode_workers} decode workers"
                 + (f", limited by the {row.limited_by} pool" if str(getattr(row, "limited_by", "")) in
                    ("prefill", "decode") else "")]
    lines = [f"★ ranked first: {row.deployment}", *pools,
             f"batch {row.batch}, {row.weight_dtype} weights, {row.kv_dtype} KV",
             f"{display.prefixed(row.tokens_per_s_per_device_expected, 'token/s')} per device expected "
             f"({display.prefixed(row.tokens_per_s_per_device, 'token/s')} bound)",
             f"TPOT {display.seconds(row.tpot_expected_s)} expected ({display.seconds(row.tpot_s)} bound)",
             f"TTFT {display.seconds(row.ttft_expected_s)} expected ({display.seconds(row.ttft_s)} bound)",
             f"{row.bound}-bound" + (f"; misses the {display.seconds(tpot_target_s)} TPOT target in expectation"
                                     if misses else "")]
    return "\n".join(line for text in lines for line in textwrap.wrap(text, 36, break_on_hyphens=False))


#: the words and column suffix of each side a frontier can be ranked on (PlanSettings.rank_on; cost ranks on the
#: expected times too)
SIDES = {"expected": ("expected", "_expected"), "cost": ("expected", "_expected"), "bound": ("bound", "")}


def plan_axes(table: pd.DataFrame, rank_on: str) -> tuple[str, str, str]:
    """(side, tokens/s per user column, tokens/s per device column) a frontier ranked on `rank_on` is drawn on:
    the expected columns, or the bounds for `rank_on` bound and for a table without expected times."""
    side, suffix = SIDES.get(rank_on, SIDES["expected"])
    expected = table.get(f"tokens_per_s_per_user{suffix}")
    if suffix and (expected is None or expected.isna().all()):
        side, suffix = SIDES["bound"]  # a table without expected times (an older run)
    return side, f"tokens_per_s_per_user{suffix}", f"tokens_per_s_per_device{suffix}"


@styled
def plan_figure(table: pd.DataFrame, model_name: str, reason: str = "", tpot_target_s: float | None = None,
                gpu_names: dict[str, str] | None = None, measured: pd.DataFrame | None = None,
                rank_on: str = "expected"):
    """Figure of results/plans/{model}.parquet (PLAN_COLUMNS + extras) on the side its frontier was ranked on
    (`rank_on`: expected times by default, else the bounds); `reason` is shown when it is empty; `gpu_names` (key
    -> display name) label the curves; `measured` (results/measurements/{model}.parquet) adds your runs as
    points."""
    side, per_user, per_device = plan_axes(table, rank_on)
    fig, ax = plt.subplots(figsize=PLAN_SIZE)
    fig.subplots_adjust(left=0.11, right=0.70, bottom=0.13, top=0.88)
    first = table.iloc[0] if len(table) else None
    subtitle = f"{first.isl} prompt + {first.osl} output tokens per request" if first is not None else ""
    fig.suptitle(f"{plain(model_name)}: deployments on the Pareto frontier ({side})", x=0.11, ha="left", fontsize=9)
    fig.text(0.11, 0.91, subtitle, fontsize=7, color="#555555")
    ax.set_xlabel(f"tokens/s per user, {side} [token/s] (= 1 / TPOT)")
    ax.set_ylabel(f"tokens/s per device, {side} [token/s]")
    if first is None:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "\n".join(textwrap.wrap(reason or "no plan", 70)), ha="center", va="center",
                transform=ax.transAxes, fontsize=8)
        return fig
    for axis, scale in ((ax.xaxis, ax.set_xscale), (ax.yaxis, ax.set_yscale)):
        scale("log")
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # 2+ labels on a short range
        axis.set_major_formatter(LogTicks())
        axis.set_minor_formatter(NullFormatter())
    styles = gpu_styles(dict.fromkeys(table["gpu"]))
    _frontiers(ax, table, per_user, per_device, styles, gpu_names or {})
    if tpot_target_s:
        ax.axvline(1.0 / tpot_target_s, color="#777777", lw=0.8, ls=":")
        ax.annotate(f"TPOT target {display.seconds(tpot_target_s)}", (1.0 / tpot_target_s, 0), xycoords=("data",
                    "axes fraction"), xytext=(3, 3), textcoords="offset points", va="bottom", fontsize=6.5,
                    color="#555555")
    if measured is not None:
        draw_measured_runs(ax, measured, styles)
    chosen = table[table["chosen"]]
    for row in chosen.itertuples():
        ax.plot([getattr(row, per_user)], [getattr(row, per_device)], "*", color="black", ms=10, zorder=5)
        fig.text(0.72, 0.13, _label(row, tpot_target_s), fontsize=6.5, va="bottom")
    _legend(ax, table)
    ax.grid(True, which="major", lw=0.3, color="#dddddd")
    return fig


def _frontiers(ax, table: pd.DataFrame, per_user: str, per_device: str, styles: dict, names: dict) -> None:
    """Each device's frontier as a line, its recommended plan as an open dot and (plan: {mode: all}, which mixes
    both modes on one frontier) its disaggregated plans as crosses."""
    for key, rows in table.groupby("gpu", sort=False):
        rows = rows.sort_values(per_user)
        style = styles[key]
        ax.plot(rows[per_user], rows[per_device], color=style.color, ls=style.linestyle, lw=1.2,
                label=plain(names.get(key, key)))
        best = rows[rows["recommended"]]
        ax.plot(best[per_user], best[per_device], "o", color=style.color, ms=4, mfc="white")
        if "mode" in rows:
            pooled = rows[rows["mode"] == "disaggregated"]
            ax.plot(pooled[per_user], pooled[per_device], "x", color=style.color, ms=4, ls="")


def _legend(ax, table: pd.DataFrame) -> None:
    """The devices beside the plot, and what a cross means where both modes share the frontiers."""
    handles, labels = ax.get_legend_handles_labels()
    if "mode" in table and (table["mode"] == "disaggregated").any() and (table["mode"] != "disaggregated").any():
        handles.append(Line2D([], [], marker="x", ls="", color="#555555", ms=4))
        labels.append("disaggregated plan")
    ax.legend(handles, labels, title="Device (open dot: its\nrecommended plan)", loc="upper left",
              bbox_to_anchor=(1.02, 1.0), frameon=False, alignment="left")


def applies(data, _item=None) -> bool:
    """A model has the Pareto figure when the config has a `plan` section (its search ran)."""
    return data.plan is not None


def draw(data, _item=None):
    return plan_figure(data.plan.table, data.name, data.plan.reason, data.plan.tpot_target_s, dict(data.plan.names),
                       measured=data.plan.measured, rank_on=data.plan.rank_on)


def caption(data, _item=None) -> str:
    if not len(data.plan.table):
        return f"Deployment search: no plan qualifies. {data.plan.reason}"
    side = SIDES.get(data.plan.rank_on, SIDES["expected"])[0]
    table = data.plan.table
    picked = table[table["recommended"].astype(bool)] if "recommended" in table else table.iloc[:0]
    estimates = set(picked["estimate"].astype(str)) if "estimate" in picked else set()
    # the star can sit below a device on the pooled fallback (roofline.serving.marks): say why
    set_aside = (" (the best among the devices with measured kernels of their own; a default estimate can rank "
                 "against them in expected time)" if side == "expected" and "default" in estimates
                 and estimates - {"default"} else "")
    return ("Deployment search: per device, the plans on the Pareto frontier of tokens/s per device against tokens/s "
            f"per user ({side}: what the search ranks on) that fit and meet the targets; open dot: each device's "
            f"recommended plan, star: the chosen one{set_aside}, dotted line: the TPOT target"
            + ("; ×: a disaggregated plan (prefill and decode pools)" if "mode" in data.plan.table
               and (data.plan.table["mode"] == "disaggregated").any() else "") + ".")
