"""Sentences written from the numbers: the executive summary and the diagnosis of each stage.

Every sentence is a function of the tables (a different model, GPU or scenario gives different words); nothing
here is boilerplate that holds regardless of the data. All numbers pass through `units`.
"""
from __future__ import annotations

import math

import pandas as pd

from ..dtypes import matmul_dtype
from ..hardware import Accelerator
from . import units

CLASS_NAMES = {"gemm": "GEMMs", "attention": "attention", "norm": "norms", "elementwise": "element-wise ops",
               "embedding": "the embedding"}
#: which bottleneck a treatment attacks (treatments table `helps`): memory = fewer bytes, compute = more FLOP/s or
#: fewer FLOPs
HELPS = {"memory": "memory-bound", "compute": "compute-bound", "both": "both"}
#: short names of the engine's treatments for sentences (the table shows the engine's full label)
SHORT = {"fusion": "fusion", "flash_attention": "FlashAttention", "weight_int8": "int8 weights",
         "weight_int4": "int4 weights", "kv_int8": "int8 KV cache", "kv_fp8": "fp8 KV cache",
         "fp8_compute": "fp8 compute", "batching": "batching"}


def short(treatment: str) -> str:
    return SHORT.get(treatment, treatment.replace("_", " "))


def bound_phrase(memory_share: float) -> str:
    """Words for a stage's balance, from its share of time in memory-bound operators."""
    if memory_share >= 0.9:
        return "memory-bound"
    if memory_share >= 0.5:
        return "mostly memory-bound"
    if memory_share > 0.1:
        return "mostly compute-bound"
    return "compute-bound"


def class_shares(ops: pd.DataFrame) -> list[tuple[str, float]]:
    """(operator class, share of stage time), largest first."""
    time = (ops["t_s"] * ops["count"]).groupby(ops["op_class"]).sum()
    return sorted(((c, float(t / time.sum())) for c, t in time.items()), key=lambda item: -item[1])


def class_sentence(ops: pd.DataFrame) -> str:
    parts = [f"{CLASS_NAMES.get(c, c)} {units.percent(share)}" for c, share in class_shares(ops) if share >= 0.001]
    return "Time by operator class: " + ", ".join(parts) + "."


def traffic(ops: pd.DataFrame) -> dict[str, float]:
    """Bytes of the pass by kind [byte]."""
    n = ops["count"]
    return {"weight": float((ops["bytes_weight"] * n).sum()),
            "kv": float(((ops["bytes_kv_read"] + ops["bytes_kv_write"]) * n).sum()),
            "act": float(((ops["bytes_act_read"] + ops["bytes_act_write"]) * n).sum())}


def class_intensity(ops: pd.DataFrame, op_class: str) -> float:
    """FLOP/byte of all operators of one class taken together (NaN if the class is absent)."""
    mine = ops[ops["op_class"] == op_class]
    nbytes = float((mine["bytes"] * mine["count"]).sum())
    return float((mine["flops"] * mine["count"]).sum()) / nbytes if nbytes else math.nan


def gemm_peak(gpu: Accelerator, scenario: dict) -> tuple[str, float]:
    dtype = matmul_dtype(scenario["weight_dtype"], scenario["act_dtype"])
    return dtype, gpu.peak(dtype)


def largest_fitting_batch(sweeps: pd.DataFrame) -> float:
    """Largest swept decode batch whose footprint fits (NaN if none or no sweep)."""
    rows = sweeps[(sweeps["sweep"] == "batch") & sweeps["fits"].astype(bool)]
    return float(rows["batch"].max()) if len(rows) else math.nan


def diagnose_decode(total: pd.Series, ops: pd.DataFrame, gpu: Accelerator, scenario: dict,
                    sweeps: pd.DataFrame) -> list[str]:
    bw = gpu.bandwidth_bytes_per_s
    moved = traffic(ops)
    share, util, t = float(total["memory_bound_share"]), float(total["compute_utilization"]), float(total["t_s"])
    sentences = [
        f"Decode on {gpu.name} is {bound_phrase(share)}: {units.percent(share)} of the {units.seconds(t)} per "
        f"token goes to memory-bound operators, and the compute units are {units.percent(util)} busy.",
        f"Each step streams {units.nbytes(moved['weight'])} of weights at {units.bandwidth(bw)}: a floor of "
        f"{units.seconds(moved['weight'] / bw)} per token from the weights alone; the KV cache adds "
        f"{units.nbytes(moved['kv'])} ({units.seconds(moved['kv'] / bw)}) and activations "
        f"{units.nbytes(moved['act'])} ({units.seconds(moved['act'] / bw)}).",
        f"At batch {scenario['batch']} that is {units.tokens_per_s(total['tokens_per_s'])}.",
    ]
    ridge, crit = float(total["ridge_flops_per_byte"]), float(total["critical_batch"])
    ai = class_intensity(ops, "gemm")
    if math.isfinite(crit):
        fit = largest_fitting_batch(sweeps)
        if math.isnan(fit):
            fit_text = "but not even the smallest swept batch fits in memory"
        elif fit >= crit:
            fit_text = f"and a batch of that size fits in {units.nbytes(gpu.memory_bytes)}"
        else:
            fit_text = (f"but with {scenario['seq_len']}-token contexts only batch {units.integer(fit)} (of the swept "
                        f"powers of two) fits in {units.nbytes(gpu.memory_bytes)}")
        sentences.append(
            f"The weight GEMMs run at {units.intensity(ai)} FLOP/byte against a ridge of {units.intensity(ridge)}: "
            f"they would turn compute-bound at batch {units.integer(crit)}, {fit_text}.")
    else:
        sentences.append(f"The weight GEMMs run at {units.intensity(ai)} FLOP/byte and do not reach the ridge of "
                         f"{units.intensity(ridge)} FLOP/byte at any batch the engine searched.")
    return sentences


def diagnose_prefill(total: pd.Series, ops: pd.DataFrame, gpu: Accelerator, scenario: dict) -> list[str]:
    bw = gpu.bandwidth_bytes_per_s
    dtype, peak = gemm_peak(gpu, scenario)
    share, util, t = float(total["memory_bound_share"]), float(total["compute_utilization"]), float(total["t_s"])
    ridge = float(total["ridge_flops_per_byte"])
    sentences = [
        f"Prefill of {scenario['batch']} × {scenario['seq_len']} tokens on {gpu.name} is {bound_phrase(share)}: "
        f"{units.percent(1 - share)} of the {units.seconds(t)} to the first token goes to compute-bound operators; "
        f"the compute units are {units.percent(util)} busy.",
        f"It performs {units.flops(total['flops'])} at {units.peak(peak, dtype)} ({dtype}): a compute floor of "
        f"{units.seconds(total['t_compute_s'])}; it moves {units.nbytes(total['bytes'])} at {units.bandwidth(bw)}: "
        f"a memory floor of {units.seconds(total['t_memory_s'])}. Each operator is limited by its slower side and "
        f"operators do not overlap, so the stage takes {units.seconds(t)}.",
    ]
    gemm_ai = class_intensity(ops, "gemm")
    side = "above" if gemm_ai > ridge else "below"
    sentence = (f"The GEMMs run at {units.intensity(gemm_ai)} FLOP/byte, {side} the ridge of "
                f"{units.intensity(ridge)} FLOP/byte")
    attention = ops[ops["op_class"] == "attention"]
    if len(attention):
        att_share = dict(class_shares(ops)).get("attention", 0.0)
        att_ai = class_intensity(ops, "attention")
        att_side = "compute-bound" if att_ai > ridge else "memory-bound"
        sentence += (f"; attention ({scenario['attention']}) runs at {units.intensity(att_ai)} FLOP/byte "
                     f"({att_side}) and takes {units.percent(att_share)} of the time")
    sentences.append(sentence + ".")
    return sentences


def footprint_sentence(total: pd.Series, gpu: Accelerator) -> str:
    text = (f"Memory footprint on {gpu.name}: {units.nbytes(total['footprint_bytes'])} (weights "
            f"{units.nbytes(total['weight_bytes'])}, KV cache {units.nbytes(total['kv_cache_bytes'])}, activations "
            f"{units.nbytes(total['activation_bytes'])}) ")
    if bool(total["fits"]):
        return text + f"fits in its {units.nbytes(gpu.memory_bytes)}."
    return (text + f"does not fit in its {units.nbytes(gpu.memory_bytes)}; the times above assume it did (no "
            "tensor parallelism or offloading is modelled).")


def treatment_sentence(stage: str, total: pd.Series, rows: pd.DataFrame) -> str:
    """Which treatments help this stage's bottleneck most, with their numbers."""
    latency = rows[rows["applicable"].astype(bool) & (rows["treatment"] != "batching")]
    latency = latency.sort_values("speedup", ascending=False)
    share = float(total["memory_bound_share"])
    need = "fewer bytes" if share >= 0.5 else "more FLOP/s or fewer FLOPs"
    if not len(latency):
        return f"No latency treatment applies to {stage} in this scenario."
    best = [f"{short(r.treatment)} {units.times(r.speedup)}" for r in latency.head(3).itertuples()]
    text = (f"{stage.capitalize()} is {bound_phrase(share)}, so what helps is {need}: the largest latency gains "
            f"are {'; '.join(best)}.")
    weak = latency[latency["speedup"] < 1.05]
    if len(weak):
        text += " Little or no gain (< 1.05×): " + ", ".join(short(t) for t in weak["treatment"]) + "."
    batching = rows[(rows["treatment"] == "batching") & rows["applicable"].astype(bool)]
    if len(batching):
        b = batching.iloc[0]
        text += (f" Batching to {int(b['batch'])} sequences raises throughput {units.times(b['speedup'])} "
                 f"({units.tokens_per_s(b['tokens_per_s'])}) at {units.seconds(b['t_s'])} per step.")
    return text


def _where(applies: dict, names: dict[str, str]) -> str:
    """' on every configured GPU', or ' on A, B (the only GPUs where it applies)', or '' for a single GPU."""
    if len(applies) == len(names):
        return " on every configured GPU" if len(names) > 1 else ""
    plural = "s" if len(applies) > 1 else ""
    return f" on {', '.join(names[k] for k in applies)} (the only GPU{plural} where it applies)"


def _range(values: dict[str, float], fmt) -> str:
    low, high = min(values.values()), max(values.values())
    return fmt(low) if math.isclose(low, high, rel_tol=5e-3) else f"{fmt(low)}–{fmt(high)}"


def executive_summary(model_name: str, totals: pd.DataFrame, treatments: pd.DataFrame,
                      gpus: dict[str, Accelerator], scenario: dict) -> list[str]:
    """A handful of sentences on the whole model: latency range, what bounds each stage, the best levers, fit."""
    sentences = []
    names = {k: g.name for k, g in gpus.items()}
    by_stage = {stage: rows.set_index("gpu") for stage, rows in totals.groupby("stage")}
    prefill, decode = by_stage.get("prefill"), by_stage.get("decode")
    if prefill is not None:
        t = prefill["t_s"]
        if len(t) > 1:
            sentences.append(
                f"Time to first token for {scenario['batch']} × {scenario['seq_len']} prompt tokens ranges from "
                f"{units.seconds(t.min())} on {names[t.idxmin()]} to {units.seconds(t.max())} on "
                f"{names[t.idxmax()]}.")
        else:
            sentences.append(f"Time to first token for {scenario['batch']} × {scenario['seq_len']} prompt tokens is "
                             f"{units.seconds(t.iloc[0])} on {names[t.index[0]]}.")
    if decode is not None:
        t, tps = decode["t_s"], decode["tokens_per_s"]
        if len(t) > 1:
            sentences.append(
                f"Each output token takes from {units.seconds(t.min())} on {names[t.idxmin()]} "
                f"({units.tokens_per_s(tps[t.idxmin()])} at batch {scenario['batch']}) to {units.seconds(t.max())} "
                f"on {names[t.idxmax()]} ({units.tokens_per_s(tps[t.idxmax()])}).")
        else:
            sentences.append(f"Each output token takes {units.seconds(t.iloc[0])} on {names[t.index[0]]} "
                             f"({units.tokens_per_s(tps.iloc[0])} at batch {scenario['batch']}).")
    for stage, rows in (("prefill", prefill), ("decode", decode)):
        if rows is None:
            continue
        shares = rows["memory_bound_share"].to_dict()
        groups: dict[str, list[str]] = {}
        for key, share in shares.items():
            groups.setdefault(bound_phrase(share), []).append(key)
        if len(groups) == 1:
            where = "on every configured GPU" if len(rows) > 1 else f"on {names[rows.index[0]]}"
            text = (f"{stage.capitalize()} is {next(iter(groups))} {where} ({_range(shares, units.percent)} of its "
                    "time in memory-bound operators)")
        else:
            parts = [f"{phrase} on {', '.join(names[k] for k in keys)} "
                     f"({_range({k: shares[k] for k in keys}, units.percent)})" for phrase, keys in groups.items()]
            text = f"{stage.capitalize()} is " + "; ".join(parts) + " (share of time in memory-bound operators)"
        if len(rows) > 1:
            fast, slow = rows["t_s"].idxmin(), rows["t_s"].idxmax()
            ratio = float(rows["t_s"][slow] / rows["t_s"][fast])
            if min(shares.values()) >= 0.5:
                text += (f", so it follows memory bandwidth: {names[fast]} "
                         f"({units.bandwidth(gpus[fast].bandwidth_bytes_per_s)}) is {units.times(ratio)} faster than "
                         f"{names[slow]} ({units.bandwidth(gpus[slow].bandwidth_bytes_per_s)})")
            elif max(shares.values()) < 0.5:
                dtype, _ = gemm_peak(gpus[fast], scenario)
                text += (f", so it follows peak FLOP/s: {names[fast]} ({units.peak(gpus[fast].peak(dtype), dtype)}) "
                         f"is {units.times(ratio)} faster than {names[slow]} "
                         f"({units.peak(gpus[slow].peak(dtype), dtype)})")
        sentences.append(text + ".")
    for stage in ("prefill", "decode"):
        mine = treatments[(treatments["stage"] == stage) & treatments["applicable"].astype(bool)]
        latency = mine[mine["treatment"] != "batching"]
        if len(latency):
            median = latency.groupby("treatment")["speedup"].median().sort_values(ascending=False)
            best = median.index[0]
            best_rows = latency[latency["treatment"] == best]
            label = best_rows["label"].iloc[0]
            speedups = dict(zip(best_rows["gpu"], best_rows["speedup"]))
            sentences.append(f"The largest single latency lever for {stage} is {label}: "
                             f"{_range(speedups, units.times)} faster{_where(speedups, names)}.")
        batching = mine[mine["treatment"] == "batching"]
        if len(batching):
            speedups = dict(zip(batching["gpu"], batching["speedup"]))
            sentences.append(f"Batching decode up to the critical batch (or as many sequences as fit) raises "
                             f"throughput {_range(speedups, units.times)}{_where(speedups, names)}.")
    fits = totals.groupby("gpu")["fits"].all()
    weights = float(totals["weight_bytes"].iloc[0])
    if fits.all():
        sentences.append(f"The model ({units.nbytes(weights)} of weights at {scenario['weight_dtype']}) fits "
                         f"{'every configured GPU' if len(fits) > 1 else 'the GPU'} with its KV cache.")
    elif not fits.any():
        sentences.append(f"The model ({units.nbytes(weights)} of weights at {scenario['weight_dtype']}) with its KV "
                         f"cache fits no single configured GPU; the times assume it did (no tensor parallelism or "
                         f"offloading is modelled).")
    else:
        misfit = [names[k] for k, ok in fits.items() if not ok]
        sentences.append(f"The model ({units.nbytes(weights)} of weights at {scenario['weight_dtype']}) with its KV "
                         f"cache does not fit on {', '.join(misfit)}; those times assume it did.")
    return sentences
