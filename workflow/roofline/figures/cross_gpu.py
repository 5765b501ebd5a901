"""Figure: one stage's operators on every configured GPU; colour = GPU (beyond 12 GPUs also line style and hollow
points), marker = class, each GPU's compute-dtype ceiling, and the links of multi-device deployments."""
from __future__ import annotations

import pandas as pd

from ..display import rate_unit
from ..engine.hardware import Accelerator
from .inputs import ModelFigures
from .labels import PointLabel, wrap
from .layout import canvas, legend_name, plain, put_legends, put_title, scenario_caption, shorten
from .points import drawable, gemm_dtype, marker_size, network_links, stage_shares, undrawn_note
from .roofline import Series, bandwidth_label, draw_roofline, fmt_value, roof_for
from .style import GPU_PALETTE, MISFIT_MARK, class_marker, gpu_styles, styled


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
                     plans: dict[str, str] | None = None, misfits: frozenset = frozenset()):
    """Figure 2: one stage's operators on every configured GPU; colour = GPU (beyond 12 GPUs also line style and
    hollow points), marker = class; the links of multi-device deployments as network roofs (`plans`: {gpu: "TP 4"}
    names them in the legend); the GPUs in `misfits` (keys) are marked in the legend as not fitting the stage."""
    ops = ops[ops["stage"] == stage]
    ops = ops.assign(share=stage_shares(ops))
    points = drawable(ops)
    styles = gpu_styles(gpus)
    many = len(gpus) > len(GPU_PALETTE)
    fig, ax = canvas()
    dtype = gemm_dtype(scenario)
    plans = plans or {}
    entries = [(f"{legend_name(g.name)}\n" + (f"{plain(plans[k])}\n" if plans.get(k) else "")
                + f"{fmt_value(g.peak(dtype) / 1e12)} {rate_unit(dtype)}, {bandwidth_label(g.bandwidth_bytes_per_s)}"
                + (f"\n{MISFIT_MARK} does not fit" if k in misfits else ""),
                gpu_legend_entry(styles[k], many)) for k, g in gpus.items()]
    put_legends(fig, entries, f"GPU: {dtype} peak,\nbandwidth", points["op_class"])
    put_title(fig, lambda limit: f"{plain(shorten(model_name, limit))}, {stage}, on every configured deployment",
              scenario_caption(scenario))
    roofs = [roof_for(gpu, dtype, other_dtypes=False, color=styles[key].color, linestyle=styles[key].linestyle,
                      links=network_links(ops[ops["gpu"] == key], gpu)) for key, gpu in gpus.items()]
    series = []
    for key in gpus:
        for op_class, group in points[points["gpu"] == key].groupby("op_class", sort=False):
            series.append(Series(group["intensity"].to_numpy(), group["attainable_flops_per_s"].to_numpy(),
                                 styles[key].color, class_marker(op_class), marker_size(group["share"]),
                                 filled=styles[key].filled))
    # one label per operator, at its highest point (the fastest roof): intensity does not depend on the GPU
    top = points.sort_values("attainable_flops_per_s").groupby("op", sort=False).tail(1)
    mean_share = points.groupby("op")["share"].mean()
    labels = [PointLabel(r.intensity, r.attainable_flops_per_s, r.op, float(mean_share[r.op]), stage)
              for r in top.itertuples()]
    result = draw_roofline(ax, roofs, series, labels=labels, shade=False, per_group=4,
                           label_format=lambda names, weight: wrap(names))
    return fig, result


def draw(data: ModelFigures, stage: str):
    fig, _ = cross_gpu_figure(data.ops, data.gpus, data.scenario, data.name, stage, data.multi_device,
                              frozenset(gpu for gpu, misfit_stage in data.misfits if misfit_stage == stage))
    return fig


def caption(data: ModelFigures, stage: str) -> str:
    links = (" The collectives of multi-device deployments sit at FLOPs per byte on the link (not per DRAM byte, as "
             "in the tables)." if data.multi_device else "")
    return (f"{stage.capitalize()} operators on every configured GPU (colour = GPU): which operators cross the ridge "
            f"on which device; a label's '+N': N more operators there.{links}")


def note(data: ModelFigures, _stage: str) -> str:
    return undrawn_note(data.ops)
