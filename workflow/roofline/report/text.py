"""Sentences written from the numbers: the executive summary and the diagnosis of each stage.

Every sentence is a function of the tables (a different model, GPU or scenario gives different words); nothing
here is boilerplate that holds regardless of the data. All numbers pass through `units`.
"""
from __future__ import annotations

import math

import pandas as pd

from ..engine.dtypes import DTYPE_BYTES, matmul_dtype
from ..engine.hardware import Accelerator
from . import units

CLASS_NAMES = {"gemm": "GEMMs", "attention": "attention", "norm": "norms", "elementwise": "element-wise ops",
               "embedding": "the embedding", "communication": "communication"}
#: which bottleneck a treatment attacks (treatments table `helps`): memory = fewer bytes, compute = more FLOP/s or
#: fewer FLOPs
HELPS = {"memory": "memory-bound", "compute": "compute-bound", "both": "both", "network": "network-bound"}
#: short names of the engine's treatments for sentences (the table shows the engine's full label)
SHORT = {"fusion": "fusion", "flash_attention": "FlashAttention", "weight_int8": "int8 weights",
         "weight_int4": "int4 weights", "kv_int8": "int8 KV cache", "kv_fp8": "fp8 KV cache",
         "fp8_compute": "fp8 compute", "batching": "batching", "more_devices": "TP ×2",
         "overlap_communication": "comm. overlap"}


def short(treatment: str) -> str:
    return SHORT.get(treatment, treatment.replace("_", " "))


def bound_phrase(memory_share: float) -> str:
    """Words for a stage's balance, from its share of time in memory-bound operators as the report prints it
    (`units.percent`): memory-bound from 90%, mostly memory-bound from 50%, mostly compute-bound above 10%,
    compute-bound at 10% or less. Deciding on the printed value gives two GPUs that both show '10%' the same
    words, wherever the report uses them (executive summary, diagnosis, treatments, other GPUs)."""
    shown = units.percent_value(memory_share)
    if shown >= 90:
        return "memory-bound"
    if shown >= 50:
        return "mostly memory-bound"
    if shown > 10:
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


def kv_traffic_note(ops: pd.DataFrame, total: pd.Series) -> str:
    """Tells the KV-cache traffic of a step apart from the cache's size when the two differ as printed: absorbed
    MLA with eager attention reads the latent twice (once as K, once as V), so a step reads more bytes than the
    cache holds. Names the operators that read it. '' when traffic and size agree."""
    cache = float(total["kv_cache_bytes"])
    read = float((ops["bytes_kv_read"] * ops["count"]).sum())
    moved = read + float((ops["bytes_kv_write"] * ops["count"]).sum())
    if cache <= 0 or units.nbytes(moved) == units.nbytes(cache):
        return ""
    names = list(dict.fromkeys(ops.loc[ops["bytes_kv_read"] > 0, "op"]))
    readers = _and(names) if names else "the step"
    together = " together" if len(names) > 1 else ""
    return f"; the cache itself holds {units.nbytes(cache)}: {readers}{together} read {units.times(read / cache)} that"


def diagnose_decode(total: pd.Series, ops: pd.DataFrame, gpu: Accelerator, scenario: dict,
                    sweeps: pd.DataFrame) -> list[str]:
    bw = gpu.bandwidth_bytes_per_s
    moved = traffic(ops)
    share, util, t = float(total["memory_bound_share"]), float(total["compute_utilization"]), float(total["t_s"])
    sentences = [
        f"Decode on {gpu.name} is {bound_phrase(share)}: {units.percent(share)} of the {units.seconds(t)} per "
        f"token goes to memory-bound operators, and the compute units are {units.percent(util)} busy.",
        f"Each step streams {units.nbytes(moved['weight'])} of weights at {units.bandwidth(bw)}: a floor of "
        f"{units.seconds(moved['weight'] / bw)} per token from the weights alone; KV-cache traffic adds "
        f"{units.nbytes(moved['kv'])} ({units.seconds(moved['kv'] / bw)}{kv_traffic_note(ops, total)}) and "
        f"activations {units.nbytes(moved['act'])} ({units.seconds(moved['act'] / bw)}).",
        f"At batch {scenario['batch']} that is {units.tokens_per_s(total['tokens_per_s'])}.",
    ]
    ridge, crit = float(total["ridge_flops_per_byte"]), float(total["critical_batch"])
    ai = class_intensity(ops, "gemm")
    if math.isfinite(crit) and scenario["batch"] >= crit:
        text = (f"The weight GEMMs run at {units.intensity(ai)} FLOP/byte against a ridge of "
                f"{units.intensity(ridge)}: batch {units.integer(scenario['batch'])} is already past the critical "
                f"batch ({units.integer(crit)}), so the GEMMs are compute-bound")
        if not bool(total["fits"]):
            fit = largest_fitting_batch(sweeps)
            text += (f"; this batch needs {units.nbytes(total['footprint_bytes'])} per device and does not fit in "
                     f"{units.usable(total['usable_memory_bytes'], gpu.memory_bytes)}")
            if math.isfinite(fit):
                text += f" (of the swept powers of two, batch {units.integer(fit)} is the largest that fits)"
        sentences.append(text + ".")
    elif math.isfinite(crit):
        fit = largest_fitting_batch(sweeps)
        if math.isnan(fit):
            fit_text = "but not even the smallest swept batch fits in memory"
        elif fit >= crit:
            fit_text = f"and a batch of that size fits in {units.usable(total['usable_memory_bytes'], gpu.memory_bytes)}"
        else:
            fit_text = (f"but with {scenario['seq_len']}-token contexts only batch {units.integer(fit)} (of the swept "
                        f"powers of two) fits in {units.usable(total['usable_memory_bytes'], gpu.memory_bytes)}")
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


def largest_activation_op(ops: pd.DataFrame) -> tuple[str, float]:
    """The operator whose inputs and outputs set the activation footprint, and those bytes [byte]."""
    act = ops["bytes_act_read"] + ops["bytes_act_write"]
    i = act.idxmax()
    return str(ops.loc[i, "op"]), float(act[i])


def footprint_note(stage_totals: pd.DataFrame, ops: pd.DataFrame, treatments: pd.DataFrame,
                   gpu: Accelerator) -> str:
    """Which stages do not fit, what fills the memory when activations dominate, and whether FlashAttention would
    make it fit. '' when every stage fits. `stage_totals` is indexed by stage; all three tables hold one GPU."""
    misfit = stage_totals[~stage_totals["fits"].astype(bool)]
    if misfit.empty:
        return ""
    names = [stage for stage in misfit.index]
    both = len(names) > 1
    usable = units.usable(float(misfit["usable_memory_bytes"].iloc[0]), gpu.memory_bytes)
    sentences = [f"{' and '.join(names).capitalize()} {'do' if both else 'does'} not fit in {usable}; "
                 f"{'their' if both else 'its'} times assume {'they' if both else 'it'} did (parallel: auto, or "
                 "more devices in the plan, would spread the footprint)."]
    for stage, row in misfit.iterrows():
        if row["activation_bytes"] <= row["weight_bytes_per_device"] + row["kv_cache_bytes_per_device"]:
            continue
        op, nbytes = largest_activation_op(ops[ops["stage"] == stage])
        text = (f"{stage.capitalize()}'s activations ({units.nbytes(nbytes)}) are the inputs and outputs of its "
                f"largest operator, {op}.")
        flash = treatments[(treatments["stage"] == stage) & (treatments["treatment"] == "flash_attention")
                           & treatments["applicable"].astype(bool)]
        if len(flash) and flash["footprint_bytes"].iloc[0] < row["footprint_bytes"]:
            after = flash.iloc[0]
            text += (f" With FlashAttention (no score matrix in DRAM) {stage} needs "
                     f"{units.nbytes(after['footprint_bytes'])} and "
                     f"{'fits' if bool(after['fits']) else 'still does not fit'}.")
        sentences.append(text)
    return " ".join(sentences)


#: a latency treatment counts as a gain from this speed-up on; below 1 / SLOWER it makes the stage slower
GAIN = 1.05
SLOWER = 0.995
#: what shortens each kind of operator (the words of the treatments table's Helps column, HELPS)
SHORTENS = {"memory": "fewer bytes", "compute": "more FLOP/s or fewer FLOPs"}
GAIN_GROUP = {"memory": "for memory-bound operators", "compute": "for compute-bound operators", "both": "for both",
              "network": "for the collectives"}


def balance_sentence(stage: str, share: float) -> str:
    """How the stage's time splits between memory- and compute-bound operators, and what shortens each part (the
    words of `bound_phrase`, the same as everywhere in the report)."""
    name = stage.capitalize()
    phrase = bound_phrase(share)
    if phrase == "memory-bound":
        return (f"{name} is memory-bound ({units.percent(share)} of its time in memory-bound operators): what "
                f"shortens it is {SHORTENS['memory']}.")
    if phrase == "compute-bound":
        return (f"{name} is compute-bound ({units.percent(1 - share)} of its time in compute-bound operators): what "
                f"shortens it is {SHORTENS['compute']}.")
    return (f"{name} is {phrase}: {units.percent(share)} of its time is in memory-bound operators, which "
            f"{SHORTENS['memory']} shorten, and {units.percent(1 - share)} in compute-bound ones, which "
            f"{SHORTENS['compute']} shorten.")


def slower_reason(treatment: str, scenario: dict | None) -> str:
    """Why a treatment makes the stage slower, when the scenario explains it ('' otherwise)."""
    if treatment == "fp8_compute" and scenario and DTYPE_BYTES[scenario["weight_dtype"]] < DTYPE_BYTES["fp8"]:
        return f"its fp8 weights are wider than the configured {scenario['weight_dtype']} weights"
    return ""


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def treatment_sentence(stage: str, total: pd.Series, rows: pd.DataFrame, scenario: dict | None = None) -> str:
    """What bounds the stage, which treatments gain at least 5% (grouped by the bottleneck they attack, as in the
    table's Helps column), which gain little, which make it slower, and what batching buys in throughput."""
    latency = rows[rows["applicable"].astype(bool) & (rows["treatment"] != "batching")]
    latency = latency.sort_values("speedup", ascending=False)
    text = balance_sentence(stage, float(total["memory_bound_share"]))
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
        parts = [f"{_and(items)} ({GAIN_GROUP.get(helps, helps)})" for helps, items in groups.items()]
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


def lever_sentence(stage: str, latency: pd.DataFrame, names: dict[str, str]) -> str:
    """The latency treatment with the largest median speed-up over the GPUs, where it gains, and where it does not
    (not applicable, under 5%, or slower)."""
    median = latency.groupby("treatment")["speedup"].median().sort_values(ascending=False)
    if round(median.iloc[0], 2) < GAIN:
        return (f"No single latency treatment gains 5% or more for {stage}"
                f"{' (median over the GPUs)' if len(names) > 1 else ''}.")
    rows = latency[latency["treatment"] == median.index[0]]
    speedups = dict(zip(rows["gpu"], rows["speedup"]))
    good = {k: v for k, v in speedups.items() if round(v, 2) >= GAIN}
    text = (f"The largest single latency lever for {stage} is {rows['label'].iloc[0]}: "
            f"{_range(good, units.times)} faster")
    if len(good) == len(names):
        return text + (" on every configured GPU." if len(names) > 1 else ".")
    text += f" on {', '.join(names[k] for k in good)}"
    absent = [names[k] for k in names if k not in speedups]
    flat = [names[k] for k, v in speedups.items() if v >= SLOWER and round(v, 2) < GAIN]
    slow = [f"{names[k]} ({units.times(v)})" for k, v in speedups.items() if v < SLOWER]
    if not flat and not slow:
        return text + f" (the only GPU{'s' if len(good) > 1 else ''} where it applies)."
    notes = []
    if absent:
        notes.append(f"it does not apply on {', '.join(absent)}")
    if flat:
        notes.append(f"it gains less than 5% on {', '.join(flat)}")
    if slow:
        notes.append(f"it is slower on {', '.join(slow)}")
    return text + "; " + "; ".join(notes) + "."


def footprint_parts(row: pd.Series) -> str:
    """'571 GB (weights 4.02 GB, KV cache 17.2 GB, activations 550 GB)': the busiest device of the deployment, with
    the deployment named when it has several devices."""
    where = f" per device of {row['deployment']}" if int(row["devices"]) > 1 else ""
    return (f"{units.nbytes(row['footprint_bytes'])}{where} (weights {units.nbytes(row['weight_bytes_per_device'])}, "
            f"KV cache {units.nbytes(row['kv_cache_bytes_per_device'])}, activations "
            f"{units.nbytes(row['activation_bytes'])})")


def fit_sentence(totals: pd.DataFrame, names: dict[str, str]) -> str:
    """Whether each stage's footprint fits each GPU, naming the stage (prefill's activations and decode's KV cache
    differ, so the stages can disagree)."""
    stages = [s for s in ("prefill", "decode") if s in set(totals["stage"])]
    largest = {s: totals[totals["stage"] == s].sort_values("footprint_bytes").iloc[-1] for s in stages}
    if totals["fits"].astype(bool).all():
        stage = max(stages, key=lambda s: largest[s]["footprint_bytes"])
        where = "every configured GPU" if len(names) > 1 else "the GPU"
        return (f"Memory: the largest footprint, {stage}'s {footprint_parts(largest[stage])}, fits {where}"
                f"{' in both stages' if len(stages) > 1 else ''}.")
    parts = []
    for stage in stages:
        fits = totals[totals["stage"] == stage].set_index("gpu")["fits"].astype(bool)
        if fits.all():
            verdict = "fits every configured GPU" if len(fits) > 1 else "fits"
        elif not fits.any():
            verdict = "fits no configured GPU" if len(fits) > 1 else f"does not fit on {names[fits.index[0]]}"
        elif fits.sum() < (~fits).sum():  # name the shorter list
            verdict = f"fits only on {', '.join(names[k] for k, ok in fits.items() if ok)}"
        else:
            verdict = f"does not fit on {', '.join(names[k] for k, ok in fits.items() if not ok)}"
        parts.append(f"{stage} needs {footprint_parts(largest[stage])} and {verdict}")
    return ("Memory (the busiest device of each deployment): " + "; ".join(parts) + ". Where it does not fit, the "
            "times assume it did and are marked ✗ (parallel: auto, or a plan with more devices, spreads it).")


def speed_sentence(totals: pd.DataFrame, names: dict[str, str], scenario: dict) -> str:
    """Per stage, the fastest deployment among those that fit, by its expected (calibrated) time, with the roofline
    bound beside it (a time of a setup that does not fit is never quoted)."""
    parts = []
    for stage, column, what in (("prefill", "ttft_s", "to the first token"), ("decode", "tpot_s", "per output token")):
        rows = totals[totals["stage"] == stage]
        if rows.empty:
            continue
        fitting = rows[rows["fits"].astype(bool)]
        if fitting.empty:
            parts.append(f"{stage} fits {'no configured GPU' if len(rows) > 1 else 'nowhere'}")
            continue
        expected = column.replace("_s", "_expected_s")
        best = fitting.loc[fitting[expected].idxmin()]
        extra = (f" ({units.tokens_per_s(best['tokens_per_s_expected'])} at batch {scenario['batch']})"
                 if stage == "decode" else f" for {scenario['batch']} × {scenario['seq_len']} prompt tokens")
        parts.append(f"{stage} {units.seconds(best[expected])} {what} expected (bound "
                     f"{units.seconds(best[column])}) on {best['deployment']}{extra}")
    return f"Fastest setup that fits: {'; '.join(parts)}."


def network_summary(totals: pd.DataFrame, ops: pd.DataFrame, gpus: dict[str, Accelerator]) -> str:
    """Page 1's word on the links: network_sentence for the (gpu, stage) whose collectives take the largest share,
    when some multi-device deployment spends 5% or more of a step in them; '' otherwise."""
    multi = totals[(totals["devices"] > 1) & (totals["network_share"] >= NETWORK_SENTENCE_SHARE)]
    if multi.empty:
        return ""
    worst = multi.loc[multi["network_share"].idxmax()]
    mine = ops[(ops["gpu"] == worst["gpu"]) & (ops["stage"] == worst["stage"])]
    return network_sentence(str(worst["stage"]), worst, mine, gpus[worst["gpu"]])


def deployment_names(totals: pd.DataFrame, gpus: dict[str, Accelerator]) -> dict[str, str]:
    """{gpu key: its deployment as the tables name it ('4 x H100 SXM5 80GB, TP 4'), or the device's name for a
    single device}: two keys of one device with other plans read apart."""
    named = {key: text for key, text, devices in zip(totals["gpu"], totals["deployment"], totals["devices"])
             if int(devices) > 1}  # one device: its name reads better in a sentence than "1 x ..."
    return {key: str(named.get(key, gpu.name)) for key, gpu in gpus.items()}


def stage_sentence(stage: str, rows: pd.DataFrame, treatments: pd.DataFrame, gpus: dict[str, Accelerator],
                   scenario: dict, names: dict[str, str] | None = None) -> str:
    """What bounds the stage on each GPU (grouped by the words of `bound_phrase`), what that means for the choice
    of GPU, the largest single lever and, for decode, what batching buys (rows: that stage's totals by gpu;
    `names`: how to call each gpu key, by default its name)."""
    names = names or {k: g.name for k, g in gpus.items()}
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
    text += "."
    mine = treatments[(treatments["stage"] == stage) & treatments["applicable"].astype(bool)]
    latency = mine[mine["treatment"] != "batching"]
    if len(latency):
        text += " " + lever_sentence(stage, latency, names)
    batching = mine[mine["treatment"] == "batching"]
    if len(batching):
        speedups = dict(zip(batching["gpu"], batching["speedup"]))
        text += (f" Batching decode up to the critical batch (or as many sequences as fit) raises throughput "
                 f"{_range(speedups, units.times)}{_where(speedups, names)}.")
    return text


def executive_summary(model_name: str, totals: pd.DataFrame, treatments: pd.DataFrame,
                      gpus: dict[str, Accelerator], scenario: dict, ops: pd.DataFrame | None = None) -> list[str]:
    """Four or five paragraphs of page 1: the fastest deployments that fit (expected time, bound beside it); per
    stage what bounds it and the best levers; where the link between devices bounds a step (from `ops`); what fits
    where."""
    names = deployment_names(totals, gpus)
    sentences = [speed_sentence(totals, names, scenario)]
    for stage in ("prefill", "decode"):
        rows = totals[totals["stage"] == stage].set_index("gpu")
        if len(rows):
            sentences.append(stage_sentence(stage, rows, treatments, gpus, scenario, names))
    if ops is not None and (network := network_summary(totals, ops, gpus)):
        sentences.append(network)
    sentences.append(fit_sentence(totals, names))
    return sentences


#: the collectives' names in sentences
COLLECTIVE_NAMES = {"attn_all_reduce": "all-reduce", "mlp_all_reduce": "all-reduce", "embed_all_reduce": "all-reduce",
                    "logits_all_gather": "all-gather", "moe_dispatch": "all-to-all",
                    "moe_combine_all_to_all": "all-to-all", "pp_send": "pipeline send"}
#: below this share of a step the collectives are not worth a sentence
NETWORK_SENTENCE_SHARE = 0.05


def network_sentence(stage: str, total: pd.Series, ops: pd.DataFrame, gpu: Accelerator) -> str:
    """When the link, not memory, bounds part of a multi-device step: the share of time in collectives, the link
    and its bandwidth, the largest collective's bytes and time, and whether latency or bandwidth sets that time
    (small decode batches: the per-collective latency; prefill and PCIe cards: the link's bandwidth). '' when the
    deployment is one device or the collectives take under 5% of the step. `ops` holds this (gpu, stage)."""
    comm = ops[ops["op_class"] == "communication"]
    share = float(total["network_share"])
    if comm.empty or share < NETWORK_SENTENCE_SHARE:
        return ""
    weighted = comm["t_s"] * comm["count"]
    top = comm.loc[weighted.idxmax()]
    count = int(comm.loc[comm["op"].map(COLLECTIVE_NAMES) == COLLECTIVE_NAMES.get(top["op"]), "count"].sum())
    link_bw = float(top["network_bandwidth_bytes_per_s"])
    link = gpu.scaleup_link if link_bw == gpu.scaleup_bandwidth_bytes_per_s else "the scale-out network"
    latency = float(top["t_network_s"]) - float(top["bytes_network"]) / link_bw
    name = COLLECTIVE_NAMES.get(top["op"], top["op"])
    text = (f"On {total['deployment']} the collectives take {units.percent(share)} of the {stage} step: "
            f"{count} {name}s of {units.nbytes(top['bytes_network'])} on each device's link ({link}, "
            f"{units.bandwidth(link_bw)} per direction) at {units.seconds(top['t_s'])} apiece")
    if latency >= float(top["bytes_network"]) / link_bw:
        text += (f", set by the {units.seconds(latency)} latency of a collective rather than by the bytes: fewer "
                 "devices, larger batches or overlapping them with compute is what helps")
    else:
        text += (f", set by the link's bandwidth ({units.bandwidth(gpu.bandwidth_bytes_per_s)} of memory bandwidth "
                 "is not the limit there): a faster link, fewer devices or overlap with compute helps")
    return text + "."
