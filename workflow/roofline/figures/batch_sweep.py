"""Figure: decode time per token and tokens/s versus batch on one GPU; the critical batch (the weight GEMMs reach
the ridge) and the batches whose weights and KV cache do not fit are marked."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FixedLocator, LogLocator, NullLocator

from ..engine.hardware import Accelerator
from .inputs import ModelFigures
from .labels import hits_paths
from .layout import plain, put_suptitle, room_for_ylabels, shorten
from .style import STAGE_COLORS, styled

CRITICAL_COLOR = "#0072B2"


def decode_batch_rows(sweeps: pd.DataFrame) -> pd.DataFrame:
    """The decode rows of the batch sweep, by batch."""
    return sweeps[(sweeps["sweep"] == "batch") & (sweeps["stage"] == "decode")].sort_values("batch")


@styled
def batch_sweep_figure(sweeps: pd.DataFrame, gpu: Accelerator, model_name: str, deployment: str | None = None,
                       usable_bytes: float | None = None):
    """Figure 4: decode time per token and tokens/s versus batch; critical batch and memory limit marked.
    `deployment` ("2 x H100 SXM5 80GB, TP 2") names the setup in the title; the GPU's name by default;
    `usable_bytes` (memory_utilization x one device's memory) lets the memory note name the largest batch that fits,
    which lies between two swept batches."""
    rows = decode_batch_rows(sweeps)
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7.0, 4.2))
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.1, top=0.92, hspace=0.12)
    b = rows["batch"].to_numpy(dtype=float)
    top.plot(b, rows["t_s"] * 1e3, marker="o", ms=3, color=STAGE_COLORS["decode"])
    bottom.plot(b, rows["tokens_per_s"], marker="o", ms=3, color="#333333")
    top.set_ylabel("time per output token,\nbound [ms]")
    bottom.set_ylabel("throughput, bound\n[tokens/s]")
    bottom.set_xlabel("decode batch size [sequences]")
    for ax in (top, bottom):
        _log_axes(ax, b)
    for ax, column in ((top, rows["t_s"] * 1e3), (bottom, rows["tokens_per_s"])):
        ax.set_ylim(float(column.min()) / 1.6, float(column.max()) * 1.6)
    room_for_ylabels(fig, (top, bottom))
    crit = float(rows["critical_batch"].iloc[0]) if len(rows) else math.nan
    _critical_batch(top, bottom, crit, b)
    misfit = rows[~rows["fits"].astype(bool)]
    if len(misfit):
        _memory_limit(top, bottom, rows, misfit, gpu, crit, largest_fitting(rows, usable_bytes))
    put_suptitle(fig, lambda limit: f"{plain(shorten(model_name, limit))} on "
                                    f"{plain(shorten(deployment or gpu.name, limit))}: "
                                    "decode batch sweep", top.get_position().x0)
    return fig


def _log_axes(ax, b) -> None:
    """Log axes: the swept batches as ticks (base 2), decades with 2x and 5x on y (short ranges keep 2+ labels)."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(b.min() / 1.3, b.max() * 1.3)
    ax.xaxis.set_major_locator(FixedLocator(b))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(lambda value, _pos: f"{value:g}")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(lambda value, _pos: f"{value:g}")
    ax.yaxis.set_minor_locator(NullLocator())
    ax.grid(True, which="major", color="#e4e4e4", lw=0.5)
    ax.spines[["top", "right"]].set_visible(False)


def _critical_batch(top, bottom, crit: float, b) -> None:
    """A dashed line at the critical batch when it lies inside the sweep, labelled at its foot on the roomier side
    (the time curve rises with the batch, so the bottom of the panel is free); else a note where it lies."""
    x_low, x_high = top.get_xlim()
    if math.isfinite(crit) and b.min() <= crit <= b.max():
        for ax in (top, bottom):
            ax.axvline(crit, color=CRITICAL_COLOR, ls=(0, (4, 2)), lw=0.9)
        right_side = math.log(crit / x_low) / math.log(x_high / x_low) < 0.5
        top.annotate(f"critical batch {round(crit):,}\n(GEMMs reach the ridge)", (crit, 0),
                     xycoords=("data", "axes fraction"), xytext=(4 if right_side else -4, 3),
                     textcoords="offset points", ha="left" if right_side else "right", va="bottom", fontsize=6.5,
                     color=CRITICAL_COLOR,
                     bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7})
        return
    text = (f"critical batch {round(crit):,}: beyond the sweep" if math.isfinite(crit)
            else "GEMMs never reach the ridge in this sweep")
    top.annotate(text, (0, 1), xycoords="axes fraction", xytext=(4, -3), textcoords="offset points",
                 ha="left", va="top", fontsize=6.5, color=CRITICAL_COLOR)


def largest_fitting(rows: pd.DataFrame, usable_bytes: float | None) -> int | None:
    """The largest decode batch whose footprint fits `usable_bytes`, between the last swept batch that fits and the
    first that does not: the footprint is affine in the batch (weights, then KV cache and activations per sequence),
    read off the two swept batches around the limit; None where it cannot be placed there."""
    fit, misfit = rows[rows["fits"].astype(bool)], rows[~rows["fits"].astype(bool)]
    if usable_bytes is None or fit.empty or misfit.empty:
        return None
    low, high = fit.loc[fit["batch"].idxmax()], misfit.loc[misfit["batch"].idxmin()]
    per_sequence = (float(high["footprint_bytes"]) - float(low["footprint_bytes"])) / (
        float(high["batch"]) - float(low["batch"]))
    if not per_sequence > 0:
        return None
    largest = int(low["batch"] + (usable_bytes - float(low["footprint_bytes"])) // per_sequence)
    return largest if low["batch"] <= largest < high["batch"] else None


def _memory_limit(top, bottom, rows: pd.DataFrame, misfit: pd.DataFrame, gpu: Accelerator, crit: float,
                  largest: int | None = None) -> None:
    """Shade the batches that do not fit (from halfway, on the log axis, after the last that fits) and say why:
    beyond the `largest` batch that fits where it is known, else from the first swept batch that does not."""
    x_low, x_high = top.get_xlim()
    first = float(misfit["batch"].min())
    fitting = rows[rows["batch"] < first]
    edge = math.sqrt(first * float(fitting["batch"].max())) if len(fitting) else x_low
    edge = largest + 0.5 if largest is not None else edge  # between the largest batch that fits and the next
    for ax in (top, bottom):
        ax.axvspan(edge, x_high, color="#f3dede", lw=0, zorder=0)
    memory = f"{gpu.memory_bytes / 2**30:.0f} GiB"
    where = f"beyond batch {largest:,}" if largest is not None else f"from batch {first:g}"
    _misfit_note(bottom, (f"{where}, weights + KV cache\nexceed the usable part of {memory}",
                          f"{where}:\nweights + KV cache\nexceed the usable\npart of {memory}"),
                 edge, crit)


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


def applies(data: ModelFigures, gpu: str) -> bool:
    """A GPU has a batch sweep when the model has decode and the sweep has rows on it."""
    return "decode" in data.stages and len(data.sweeps[(data.sweeps["gpu"] == gpu)
                                                       & (data.sweeps["stage"] == "decode")]) > 0


def draw(data: ModelFigures, gpu: str):
    utilization = data.scenario.get("memory_utilization")
    return batch_sweep_figure(data.sweeps[data.sweeps["gpu"] == gpu], data.gpus[gpu], data.name,
                              data.deployments.get(gpu) if gpu in data.multi_device else None,
                              utilization * data.gpus[gpu].memory_bytes if utilization else None)


def sweep_caption(sweeps: pd.DataFrame, gpu: Accelerator) -> str:
    """The caption of `gpu`'s batch sweep (`sweeps`: its rows), saying only what the figure shows: the dashed line
    exists only when the critical batch falls inside the sweep, the shading only when some batch does not fit."""
    rows = decode_batch_rows(sweeps)
    text = f"Decode on {gpu.name} versus batch size: time per output token and throughput"
    if rows.empty:
        return text + "."
    crit = float(rows["critical_batch"].iloc[0])
    if not math.isfinite(crit):
        text += "; the weight GEMMs never reach the ridge"
    elif rows["batch"].min() <= crit <= rows["batch"].max():
        text += f"; the dashed line marks the critical batch ({round(crit):,})"
    else:
        text += f"; the critical batch ({round(crit):,}) lies beyond the sweep"
    if not rows["fits"].astype(bool).all():
        text += "; the shaded region holds the batches whose weights and KV cache do not fit"
    return text + "."


def caption(data: ModelFigures, gpu: str) -> str:
    return sweep_caption(data.sweeps[data.sweeps["gpu"] == gpu], data.gpus[gpu])
