"""What the treatments buy, in sentences: per stage on one GPU (the treatments table's summary) and the largest
single lever across the GPUs (page 1)."""
from __future__ import annotations

import pandas as pd

from ...engine.dtypes import DTYPE_BYTES
from .. import units
from .words import (
    GAIN,
    SLOWER,
    and_list,
    bound_phrase,
    is_throughput,
    names_joined,
    network_share,
    short,
    value_range,
)

#: what shortens each kind of operator (the words of the treatments table's Helps column, HELPS)
SHORTENS = {"memory": "fewer bytes", "compute": "more FLOP/s or fewer FLOPs",
            "network": "a faster link, fewer devices or overlap with compute"}
GAIN_GROUP = {"memory": "for memory-bound operators", "compute": "for compute-bound operators", "both": "for both",
              "network": "for the collectives"}


def balance_sentence(stage: str, share: float, network: float = 0.0) -> str:
    """How the stage's time splits between memory-bound operators (`share`), compute-bound ones and collectives
    (`network`), and what shortens each part (the words of `bound_phrase`, the same as everywhere in the report)."""
    name, phrase, compute = stage.capitalize(), bound_phrase(share, network), 1.0 - share - network
    if phrase == "memory-bound":
        return (f"{name} is memory-bound ({units.percent(share)} of its time in memory-bound operators): what "
                f"shortens it is {SHORTENS['memory']}.")
    if phrase == "compute-bound":
        return (f"{name} is compute-bound ({units.percent(compute)} of its time in compute-bound operators): what "
                f"shortens it is {SHORTENS['compute']}.")
    parts = [f"{units.percent(share)} of its time is in memory-bound operators, which {SHORTENS['memory']} shorten",
             f"{units.percent(compute)} in compute-bound ones, which {SHORTENS['compute']} shorten"]
    if network > 0:
        parts.append(f"{units.percent(network)} in collectives, which {SHORTENS['network']} shorten")
    return f"{name} is {phrase}: {', '.join(parts[:-1])}, and {parts[-1]}."


def slower_reason(treatment: str, scenario: dict | None) -> str:
    """Why a treatment makes the stage slower, when the scenario explains it ('' otherwise)."""
    if treatment == "fp8_compute" and scenario and DTYPE_BYTES[scenario["weight_dtype"]] < DTYPE_BYTES["fp8"]:
        return f"its fp8 weights are wider than the configured {scenario['weight_dtype']} weights"
    return ""


def treatment_sentence(stage: str, total: pd.Series, rows: pd.DataFrame, scenario: dict | None = None) -> str:
    """What bounds the stage, which treatments gain at least 5% (grouped by the bottleneck they attack, as in the
    table's Helps column), which gain little, which make it slower, and what batching buys in throughput."""
    latency = rows[rows["applicable"].astype(bool) & ~rows["treatment"].map(is_throughput)]
    latency = latency.sort_values("speedup", ascending=False)
    text = balance_sentence(stage, float(total["memory_bound_share"]), network_share(total))
    if not len(latency):
        text += f" No latency treatment applies to {stage} in this scenario."
    shown = latency["speedup"].round(2)  # compare what the reader sees: 1.0496 prints as 1.05x, a gain
    gains = latency[shown >= GAIN]
    slower = latency[latency["speedup"] < SLOWER].sort_values("speedup")
    flat = latency[(latency["speedup"] >= SLOWER) & (shown < GAIN)]
    if len(gains):
        groups: dict[str, list[str]] = {}  # helps -> "name speed-up", largest gain first (dicts keep order)
        for r in gains.itertuples():
            groups.setdefault(r.helps, []).append(f"{short(r.treatment)} {units.times(r.speedup)}")
        parts = [f"{and_list(items)} ({GAIN_GROUP.get(helps, helps)})" for helps, items in groups.items()]
        text += f" Latency gains of 5% or more: {'; '.join(parts)}."
    elif len(latency):
        text += " No latency treatment gains 5% or more."
    if len(flat):
        text += (f" Little or no gain (< {units.times(GAIN)}): "
                 + ", ".join(short(t) for t in flat["treatment"]) + ".")
    if len(slower):
        parts = []
        for r in slower.itertuples():
            reason = slower_reason(r.treatment, scenario)
            parts.append(f"{short(r.treatment)} ({units.times(r.speedup)}, {units.times(1 / r.speedup)} the time"
                         + (f": {reason})" if reason else ")"))
        text += " Slower: " + "; ".join(parts) + "."
    batching = rows[(rows["treatment"] == "batching") & rows["applicable"].astype(bool)]
    if len(batching):
        b = batching.iloc[0]
        text += (f" Batching to {int(b['batch'])} sequences raises throughput {units.times(b['speedup'])} "
                 f"({units.tokens_per_s(b['tokens_per_s'])}) at {units.seconds(b['t_s'])} per step.")
        narrow = rows[(rows["treatment"] == "batching_kv_fp8") & rows["applicable"].astype(bool)]
        if len(narrow) and int(narrow["batch"].iloc[0]) > int(b["batch"]):
            k = narrow.iloc[0]
            text += (f" With an fp8 (or int8) KV cache, {int(k['batch'])} sequences fit: "
                     f"{units.tokens_per_s(k['tokens_per_s'])}, {units.times(k['tokens_per_s'] / b['tokens_per_s'])} "
                     "the batched throughput at 16 bits.")
    return text


def lever_sentence(stage: str, latency: pd.DataFrame, names: dict[str, str]) -> str:
    """The latency treatment with the largest median speed-up over the GPUs, where it gains, and where it does not
    (not applicable, under 5%, or slower). Each median is over every configured GPU, 1x where the treatment does
    not apply: a median over the GPUs where it does had ranked a lever of one GPU (1.81x) above one of all
    (1.81x and 1.60x), against the table beside it."""
    by_gpu = latency.pivot_table(index="treatment", columns="gpu", values="speedup", aggfunc="first")
    by_gpu = by_gpu.reindex(columns=list(names) or by_gpu.columns).fillna(1.0)
    median = by_gpu.median(axis=1).sort_values(ascending=False, kind="stable")
    if round(median.iloc[0], 2) < GAIN:
        return (f"No single latency treatment gains 5% or more for {stage}"
                f"{' (median over the GPUs)' if len(names) > 1 else ''}.")
    rows = latency[latency["treatment"] == median.index[0]]
    speedups = dict(zip(rows["gpu"], rows["speedup"]))
    good = {k: v for k, v in speedups.items() if round(v, 2) >= GAIN}
    # a label that names one GPU's deployment (more devices: "...: 32 devices (TP 16, PP 2)") differs per GPU: the
    # sentence speaks of all of them, so it keeps the part every GPU shares
    labels = rows["label"].unique()
    label = labels[0] if len(labels) == 1 else labels[0].split(":")[0]
    ranked = " (by its median speed-up over the GPUs)" if len(names) > 1 else ""
    text = (f"The largest single latency lever for {stage}{ranked} is {label}: "
            f"{value_range(good, units.times)} faster (bound)")
    if len(good) == len(names):
        return text + (" on every configured GPU." if len(names) > 1 else ".")
    text += f" on {names_joined(names[k] for k in good)}"
    absent = [names[k] for k in names if k not in speedups]
    flat = [names[k] for k, v in speedups.items() if v >= SLOWER and round(v, 2) < GAIN]
    slow = [f"{names[k]} ({units.times(v)})" for k, v in speedups.items() if v < SLOWER]
    if not flat and not slow:
        return text + f" (the only GPU{'s' if len(good) > 1 else ''} where it applies)."
    notes = []
    if absent:
        notes.append(f"it does not apply on {names_joined(absent)}")
    if flat:
        notes.append(f"it gains less than 5% on {names_joined(flat)}")
    if slow:
        notes.append(f"it is slower on {names_joined(slow)}")
    return text + "; " + "; ".join(notes) + "."


