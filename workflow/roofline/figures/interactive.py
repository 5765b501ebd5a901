"""Interactive versions of the roofline, cross-GPU and Pareto figures for the HTML report: plotly.js figure specs
(data traces and layout, JSON-able dicts), drawn in the browser by the plotly.js bundle the report ships beside the
page. Hover shows each operator (or plan) with its FLOPs, bytes, intensity, time and bound; clicking a legend entry
hides or shows that stage, GPU or device. The printed report keeps the static figures.

Only dicts are built here (no plotly import): the bundle is the only part of plotly the report needs.
"""
from __future__ import annotations

import html
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd

from .. import display
from ..engine.hardware import Accelerator
from .inputs import ModelFigures
from .layout import shorten
from .measured_runs import BEYOND_COLOR, OTHER_COLOR, runs_to_draw
from .plan import plan_axes
from .points import drawable, gemm_dtype, network_links, stage_shares
from .roofline import limits
from .roofs import Series, roof_for, tick_labels
from .style import LINK_COLOR, MISFIT_MARK, ROOF_COLOR, STAGE_COLORS, gpu_styles

#: plotly marker symbols of the operator classes (the static figures' markers: CLASS_MARKERS)
SYMBOLS = {"gemm": "circle", "attention": "square", "norm": "triangle-up", "elementwise": "diamond",
           "embedding": "triangle-down", "communication": "cross"}
FONT = {"family": "DejaVu Sans, Arial, sans-serif", "size": 12}
#: the longest deployment name a legend entry shows (characters; cut with an ellipsis)
LEGEND_NAME = 40


def _finite(values) -> list:
    """Plain floats for JSON; None where a value is missing or infinite (plotly leaves a gap)."""
    return [float(v) if v is not None and math.isfinite(float(v)) else None for v in values]


#: the operator columns a hover text reads
HOVER_COLUMNS = ["op", "op_class", "count", "t_s", "bytes_network", "flops", "bytes", "intensity",
                 "attainable_flops_per_s", "bound", "share"]


def _hover(row, where: str) -> str:
    """An operator's hover text: name, class, where it runs, FLOPs, bytes, intensity, attainable, time, bound
    (`row`: a namespace of HOVER_COLUMNS)."""
    per = f" × {int(row.count)} = {display.seconds(row.t_s * row.count)}" if row.count > 1 else ""
    network = (f"<br>on the link: {display.prefixed(row.bytes_network, 'B')}"
               if getattr(row, "op_class", "") == "communication" else "")
    return (f"<b>{html.escape(str(row.op))}</b> ({row.op_class}), {html.escape(where)}<br>FLOPs "
            f"{display.prefixed(row.flops, 'FLOP')}, bytes "
            f"{display.prefixed(row.bytes, 'B')}{network}<br>intensity {display.sig(row.intensity)} FLOP/byte, "
            f"attainable {display.tera_rate(row.attainable_flops_per_s, None)}<br>time {display.seconds(row.t_s)}"
            f"{per} (bound)<br>{row.bound}-bound, {display.sig(100 * row.share, 2)}% of the stage")


def _points(rows: pd.DataFrame, name: str, color: str, where: str, group: str, legend: bool) -> list[dict]:
    """One scatter trace per operator class of `rows` (drawable operators with their `share`)."""
    traces = []
    for op_class, mine in rows.groupby("op_class", sort=False):
        traces.append({
            "type": "scatter", "mode": "markers", "name": html.escape(name),  # the entry toggles every class
            "legendgroup": group, "showlegend": legend,
            "x": _finite(mine["intensity"]), "y": _finite(mine["attainable_flops_per_s"] / 1e12),
            "text": [_hover(SimpleNamespace(**row), where) for row in mine[HOVER_COLUMNS].to_dict("records")],
            "hovertemplate": "%{text}<extra></extra>",
            "marker": {"color": color, "symbol": SYMBOLS.get(op_class, "x"), "line": {"color": "white", "width": 0.5},
                       "size": _finite(6 + 22 * np.sqrt(mine["share"].to_numpy()))}})
        legend = False  # one legend entry per group: it toggles every class of the group
    return traces


def _class_key(classes) -> list[dict]:
    """Legend entries naming each operator class's marker (grey, no points: the stage entries toggle the points;
    a stage's first class had named its entry, 'prefill · norm', as if it toggled the norms alone)."""
    return [{"type": "scatter", "mode": "markers", "name": html.escape(str(op_class)), "x": [None], "y": [None],
             "legendgroup": "classes", "hoverinfo": "skip",
             "marker": {"color": "#8a8a8a", "symbol": SYMBOLS.get(op_class, "x"), "size": 8}} for op_class in classes]


def _roof(gpu: Accelerator, dtype: str, xlim, color: str, name: str, group: str, other_peaks: bool,
          links=(), label_links: bool = False) -> list[dict]:
    """The memory and compute roofs of one device (its other dtypes' peaks dashed) and its network roofs, each link
    named in the legend where `label_links` (one device's figure: the static one labels them on the plot)."""
    roof = roof_for(gpu, dtype, other_dtypes=other_peaks, links=links)
    low, high = xlim
    hover = (f"{html.escape(name)}<br>{display.bandwidth(roof.bandwidth)}, {dtype} peak "
             f"{display.tera_rate(roof.main_peak, dtype)}, ridge {display.sig(roof.ridge)} FLOP/byte")
    traces = [{"type": "scatter", "mode": "lines", "name": html.escape(name), "legendgroup": group, "showlegend": True,
               "x": [low, roof.ridge, high], "y": _finite([roof.bandwidth * low / 1e12, roof.main_peak / 1e12,
                                                          roof.main_peak / 1e12]),
               "line": {"color": color, "width": 1.5}, "hovertemplate": hover + "<extra></extra>"}]
    for label, value in roof.peaks[1:]:
        traces.append({"type": "scatter", "mode": "lines", "name": f"{label} peak", "legendgroup": group,
                       "showlegend": False, "x": [value / roof.bandwidth, high], "y": [value / 1e12] * 2,
                       "line": {"color": color, "width": 0.8, "dash": "dash"},
                       "hovertemplate": f"{label} peak {display.tera_rate(value, label.split('/')[0])}<extra></extra>"})
    for link, bandwidth in roof.links:
        end = min(high, roof.main_peak / bandwidth)
        link = html.escape(link)  # a gpus: entry's scaleup_link is the user's text: plotly draws its <a>, <span>
        traces.append({"type": "scatter", "mode": "lines", "name": f"{link} {display.bandwidth(bandwidth)}",
                       # a named link toggles alone (in the device's group, a click hid its roofs too)
                       "legendgroup": f"link {link}" if label_links else group, "showlegend": label_links,
                       "x": [low, end],
                       "y": _finite([bandwidth * low / 1e12, bandwidth * end / 1e12]),
                       "line": {"color": LINK_COLOR, "width": 1, "dash": "dashdot"},
                       "hovertemplate": f"{link} {display.bandwidth(bandwidth)} per direction<extra></extra>"})
    return traces


def _layout(title: str, subtitle: str, x_title: str, y_title: str, xlim=None, ylim=None, legend: str = "") -> dict:
    # one label per decade (plotly labels 2 and 5 as well on a short range, which crowds a wide one)
    axis = {"type": "log", "dtick": 1, "showline": True, "linecolor": "#444", "gridcolor": "#e4e4e4",
            "exponentformat": "power"}
    x_axis = {**axis, "title": {"text": x_title}}
    y_axis = {**axis, "title": {"text": y_title}}
    if xlim:
        x_axis["range"] = [math.log10(xlim[0]), math.log10(xlim[1])]
    if ylim:
        y_axis["range"] = [math.log10(ylim[0]), math.log10(ylim[1])]
    heading = f"{html.escape(title)}<br><span style='font-size:11px;color:#555'>{subtitle}</span>"
    return {"title": {"text": heading, "x": 0.01},
            "xaxis": x_axis, "yaxis": y_axis, "hovermode": "closest", "font": FONT, "plot_bgcolor": "white",
            "legend": {"title": {"text": legend}, "itemclick": "toggle", "itemdoubleclick": "toggleothers"},
            "margin": {"l": 70, "r": 20, "t": 70, "b": 55}}


def _xlim_ylim(roofs, points: pd.DataFrame):
    series = [Series(points["intensity"].to_numpy(), points["attainable_flops_per_s"].to_numpy(), "", "")]
    (x_low, x_high), (y_low, y_high) = limits(roofs, series if len(points) else [])
    return (x_low, x_high), (y_low / 1e12, y_high / 1e12)


def roofline_spec(data: ModelFigures, gpu: str) -> dict:
    """One GPU: every operator of every stage (colour = stage, symbol = class), its roofs, its links."""
    ops = data.ops[data.ops["gpu"] == gpu]
    points = drawable(ops.assign(share=stage_shares(ops)))
    dtype, device = gemm_dtype(data.scenario), data.gpus[gpu]
    links = network_links(ops, device)
    xlim, ylim = _xlim_ylim([roof_for(device, dtype, links=links)], points)
    where = data.deployments.get(gpu, device.name)
    traces = _roof(device, dtype, xlim, ROOF_COLOR, f"{device.name} roofs", "roofs", True, links, label_links=True)
    for stage in data.stages:
        traces += _points(points[points["stage"] == stage], stage, STAGE_COLORS[stage], f"{stage} on {where}",
                          stage, True)
    traces += _class_key(points["op_class"].unique())
    return {"data": traces, "layout": _layout(f"{data.name} on {where}", "hover a point: operator, FLOPs, bytes, "
                                              "intensity, time, bound; click a legend entry to hide it",
                                              "arithmetic intensity [FLOP/byte]", "attainable [TFLOP/s] (bound)",
                                              xlim, ylim, "stage · operator class")}


def cross_gpu_spec(data: ModelFigures, stage: str) -> dict:
    """One stage on every GPU: per GPU its compute-dtype roof and its operators, one legend entry that toggles
    both."""
    ops = data.ops[data.ops["stage"] == stage]
    points = drawable(ops.assign(share=stage_shares(ops)))
    dtype = gemm_dtype(data.scenario)
    styles = gpu_styles(data.gpus)
    roofs = [roof_for(gpu, dtype, other_dtypes=False) for gpu in data.gpus.values()]
    xlim, ylim = _xlim_ylim(roofs, points)
    traces = []
    for key, gpu in data.gpus.items():
        where = data.deployments.get(key, gpu.name)
        color = styles[key].color
        # the legend holds the name cut to LEGEND_NAME characters (the hover has it whole): 66-character custom
        # names had widened it until the plot kept a third of the window
        legend = shorten(where, LEGEND_NAME) + (f" ({MISFIT_MARK} does not fit)" if (key, stage) in data.misfits
                                                else "")
        traces += _roof(gpu, dtype, xlim, color, legend, key, False, network_links(ops[ops["gpu"] == key], gpu))
        traces += _points(points[points["gpu"] == key], where, color, f"{stage} on {where}", key, False)
    _name_links_once(traces)
    return {"data": traces, "layout": _layout(f"{data.name}, {stage}, on every configured deployment",
                                              "click a deployment in the legend to hide or show it; hover a point "
                                              "for the operator", "arithmetic intensity [FLOP/byte]",
                                              "attainable [TFLOP/s] (bound)", xlim, ylim, "deployment")}


def _name_links_once(traces: list[dict]) -> None:
    """Each link roof in the legend once (the static figure labels them on the plot): several deployments on one
    link draw the same line, so the first of each name is the entry, and it toggles every line of that name (a
    deployment's entry no longer hides its link lines)."""
    named = set()
    for trace in traces:
        if trace.get("line", {}).get("dash") != "dashdot":
            continue
        trace["legendgroup"] = f"link {trace['name']}"
        trace["showlegend"] = trace["name"] not in named
        named.add(trace["name"])


def _plan_hover(row) -> str:
    """A plan's hover text: deployment, batch, precision, bound and expected times and throughput, bound."""
    return (f"<b>{html.escape(str(row.deployment))}</b><br>batch {row.batch}, {row.weight_dtype} weights, "
            f"{row.kv_dtype} KV cache, "
            f"{row.attention} attention<br>TPOT {display.seconds(row.tpot_expected_s)} expected "
            f"({display.seconds(row.tpot_s)} bound), TTFT {display.seconds(row.ttft_expected_s)} expected "
            f"({display.seconds(row.ttft_s)} bound)<br>{display.sig(row.tokens_per_s_per_device_expected)} tokens/s "
            f"per device expected ({display.sig(row.tokens_per_s_per_device)} bound), "
            f"{display.sig(row.tokens_per_s_per_user_expected)} per user expected "
            f"({display.sig(row.tokens_per_s_per_user)} bound)<br>{row.bound}-bound")


def _run_hover(run) -> str:
    """A measured run's hover text: its file and line, deployment and workload, then TPOT and tokens/s per device
    measured, expected and bound."""
    beyond = f"<br><b>beyond the bound</b> ({html.escape(run.beyond_bound)})" if run.beyond_bound else ""
    framework = html.escape(str(run.framework)) or "the config's framework"
    return (f"<b>your run</b>, {html.escape(str(run.source))}<br>{html.escape(str(run.deployment))}, {run.isl} + "
            f"{run.osl} tokens, concurrency {run.concurrency}, {framework}"
            f"<br>TPOT {display.seconds(run.tpot_measured_s)} measured, {display.seconds(run.tpot_expected_s)} "
            f"expected, {display.seconds(run.tpot_s)} bound<br>{display.sig(run.per_device)} tokens/s per device "
            f"measured, {display.sig(run.per_device_expected)} expected{beyond}")


def measured_traces(runs: pd.DataFrame, styles: dict) -> list[dict]:
    """Your runs as the static figure draws them (figures.measured_runs): filled diamonds measured, hollow ones
    expected (one legend entry each), a red edge where a run beats its bound."""
    points = runs_to_draw(runs)
    if not len(points):
        return []
    colors = [styles[gpu].color if gpu in styles else OTHER_COLOR for gpu in points["gpu"]]
    text = [_run_hover(SimpleNamespace(**r)) for r in points.to_dict("records")]
    edge = [BEYOND_COLOR if flag else "black" for flag in points["beyond_bound"]]
    return [{"type": "scatter", "mode": "markers", "name": "your runs, measured", "legendgroup": "measured",
             "x": _finite(points["per_user"]), "y": _finite(points["per_device"]), "text": text,
             "hovertemplate": "%{text}<extra></extra>",
             "marker": {"symbol": "diamond", "size": 9, "color": colors, "line": {"color": edge, "width": 1.5}}},
            {"type": "scatter", "mode": "markers", "name": "your runs, expected", "legendgroup": "measured",
             "x": _finite(points["per_user_expected"]), "y": _finite(points["per_device_expected"]), "text": text,
             "hovertemplate": "%{text}<extra></extra>",
             "marker": {"symbol": "diamond-open", "size": 8, "color": colors}}]


def plan_spec(table: pd.DataFrame, model_name: str, tpot_target_s: float | None, names: dict[str, str],
              rank_on: str = "expected", measured: pd.DataFrame | None = None) -> dict:
    """The deployment search's frontiers: tokens/s per device against tokens/s per user (on the side the search
    ranked on: plan.plan_axes), one curve per GPU (toggle in the legend), each GPU's recommended plan an open dot (as in
    the static figure), the chosen one a star; `measured` (results/measurements/{model}.parquet) adds your runs."""
    side, per_user, per_device = plan_axes(table, rank_on)
    styles = gpu_styles(dict.fromkeys(table["gpu"]))
    traces = []
    for key, rows in table.groupby("gpu", sort=False):
        rows = rows.sort_values(per_user)
        picked = rows["recommended"].astype(bool).to_numpy()
        chosen = rows["chosen"].astype(bool).to_numpy()
        traces.append({"type": "scatter", "mode": "lines+markers",
                       "name": html.escape(shorten(names.get(key, key), LEGEND_NAME)),
                       "legendgroup": key,
                       "x": _finite(rows[per_user]), "y": _finite(rows[per_device]),
                       "text": [_plan_hover(SimpleNamespace(**r)) for r in rows.to_dict("records")],
                       "hovertemplate": "%{text}<extra></extra>",
                       "line": {"color": styles[key].color, "width": 1.5},
                       "marker": {"color": styles[key].color, "size": np.where(chosen, 16, np.where(
                           picked, 10, 5)).tolist(), "symbol": np.where(chosen, "star", np.where(
                               picked, "circle-open", "circle")).tolist(),
                           # no outline on the filled dots: white-edged, a dense stretch of the frontier read as a
                           # pale band of another kind; the open dot's ring is its outline
                           "line": {"color": styles[key].color,
                                    "width": np.where(picked & ~chosen, 2, 0).tolist()}}})
    runs = measured_traces(measured, styles) if measured is not None else []
    traces += runs
    first = table.iloc[0] if len(table) else None
    subtitle = (f"{first.isl} prompt + {first.osl} output tokens per request; {side}; open dot: each "
                "device's recommended plan, star: the chosen one" if first is not None else "no plan")
    layout = _layout(f"{model_name}: deployments on the Pareto frontier", subtitle,
                     f"tokens/s per user ({side}, = 1 / TPOT)", f"tokens/s per device ({side})", legend="device")
    # a short range: labels at 1, 2 and 5 of each decade, not decades alone, each written out (plotly's "D2" writes
    # 20 and 50 as "2" and "5")
    for axis, column, coordinate in (("xaxis", per_user, "x"), ("yaxis", per_device, "y")):
        drawn = [value for run in runs for value in run[coordinate] if value is not None]  # your runs widen the axes
        ticks = _log_ticks(list(table[column]) + drawn)
        if ticks:
            layout[axis].pop("dtick", None)
        layout[axis].update(ticks or {"dtick": "D2"})
    if tpot_target_s:
        layout["shapes"] = [{"type": "line", "xref": "x", "yref": "paper", "x0": 1 / tpot_target_s,
                             "x1": 1 / tpot_target_s, "y0": 0, "y1": 1, "line": {"dash": "dot", "color": "#777"}}]
    return {"data": traces, "layout": layout}


def _log_ticks(values) -> dict:
    """Tick values at 1, 2 and 5 x 10^k over the finite positive `values`, labelled as the static Pareto figure
    labels them (roofs.tick_labels: '20', '5000', or all as powers of ten), for a log axis; {} where there are none."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    if not len(values):
        return {}
    low, high = np.floor(np.log10(values.min())), np.ceil(np.log10(values.max()))
    ticks = [m * 10.0 ** k for k in np.arange(low, high + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if values.min() / 2 <= t <= values.max() * 2]
    return {"tickmode": "array", "tickvals": ticks, "ticktext": tick_labels(ticks)}
