"""Figure: the roofline of one model on one GPU; every operator of every stage, colour = stage, marker = class, all
of the device's dtype ceilings, and its measured kernels and ceilings when it has a calibration table."""
from __future__ import annotations

import pandas as pd

from ..engine.hardware import Accelerator
from ..engine.scenario import STAGES
from .inputs import ModelFigures
from .labels import PointLabel
from .layout import LEGEND_X, canvas, plain, put_legends, put_title, scenario_caption, shorten
from .measured import draw_measured_roofs, measured_note, measured_series
from .points import drawable, gemm_dtype, marker_size, network_links, stage_shares, undrawn_note
from .roofline import Series, draw_roofline, roof_for
from .style import STAGE_COLORS, class_marker, styled


@styled
def roofline_figure(ops: pd.DataFrame, gpu: Accelerator, scenario: dict, model_name: str,
                    deployment: str | None = None):
    """Figure 1: every operator of every stage of one model on one GPU; colour = stage, marker = class.
    `deployment` ("4 x H100 SXM5 80GB, TP 4") names the setup in the title; the GPU's name by default."""
    ops = ops.assign(share=stage_shares(ops))
    points = drawable(ops)
    fig, ax = canvas()
    stages = [s for s in STAGES if s in set(points["stage"])]
    measured = measured_series(gpu, gemm_dtype(scenario))  # the device's calibration table, if it has one
    extra = measured_note(gpu, gemm_dtype(scenario)) if measured else ""
    note = fig.text(LEGEND_X, ax.get_position().y0, "marker area ~ share\nof stage time;\nlabels: share of\n"
                    "stage time" + extra, fontsize=6, color="#555555", va="bottom")
    put_legends(fig, {s: {"marker": "o", "ls": "none", "color": STAGE_COLORS[s], "markersize": 5} for s in stages},
                "Stage", points["op_class"], bottom=note.get_window_extent(fig.canvas.get_renderer()).y1 + 4)
    put_title(fig, lambda limit: f"{plain(shorten(model_name, limit))} on "
                                 f"{plain(shorten(deployment or gpu.name, limit))}", scenario_caption(scenario))
    series, labels = [], []
    for stage in stages:
        for op_class, group in points[points["stage"] == stage].groupby("op_class", sort=False):
            series.append(Series(group["intensity"].to_numpy(), group["attainable_flops_per_s"].to_numpy(),
                                 STAGE_COLORS[stage], class_marker(op_class), marker_size(group["share"])))
        for row in points[points["stage"] == stage].itertuples():
            labels.append(PointLabel(row.intensity, row.attainable_flops_per_s, row.op, row.share, stage,
                                     STAGE_COLORS[stage]))
    roof = roof_for(gpu, gemm_dtype(scenario), links=network_links(ops, gpu))
    result = draw_roofline(ax, [roof], series + ([measured] if measured else []), labels=labels)
    if measured:
        draw_measured_roofs(ax, gpu, gemm_dtype(scenario), result.xlim)
    return fig, result


def draw(data: ModelFigures, gpu: str):
    fig, _ = roofline_figure(data.ops[data.ops["gpu"] == gpu], data.gpus[gpu], data.scenario, data.name,
                             data.deployments.get(gpu) if gpu in data.multi_device else None)
    return fig


def caption(data: ModelFigures, gpu: str) -> str:
    where = data.deployments[gpu] if gpu in data.multi_device else data.gpus[gpu].name
    return (f"Roofline of {data.name} on {where}: each operator of {' and '.join(data.stages)} at its "
            "arithmetic intensity and attainable performance; solid lines: memory bandwidth and the "
            f"{gemm_dtype(data.scenario)} peak, dashed: other dtypes' peaks, dotted: the ridge; a label's '+N': N "
            "more operators there."
            + (" The collectives sit at FLOPs per byte on the link (not per DRAM byte, as in the tables), under the "
               "link's roof." if gpu in data.multi_device else ""))


def note(data: ModelFigures, _gpu: str) -> str:
    return undrawn_note(data.ops)
