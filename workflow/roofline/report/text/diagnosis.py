"""The diagnosis of one stage on one GPU: what bounds it and why, in sentences written from the engine's numbers
(its times per roof, bytes by kind, shares, critical batch; the bound class from `roofline.engine.roofline`)."""
from __future__ import annotations

import math

import pandas as pd

from ...engine.dtypes import matmul_dtype
from ...engine.hardware import Accelerator
from ...engine.roofline import bound_class
from .. import units
from .words import CLASS_NAMES, and_list, network_share, spread_clause, step_bound

#: the byte kinds of the operator table, as the diagnosis groups them
BYTE_KINDS = {"weight": ("bytes_weight",), "kv": ("bytes_kv_read", "bytes_kv_write"),
              "act": ("bytes_act_read", "bytes_act_write")}


def class_shares(ops: pd.DataFrame) -> list[tuple[str, float]]:
    """(operator class, share of stage time), largest first."""
    time = (ops["t_s"] * ops["count"]).groupby(ops["op_class"]).sum()
    return sorted(((c, float(t / time.sum())) for c, t in time.items()), key=lambda item: -item[1])


def class_sentence(ops: pd.DataFrame) -> str:
    """'Time by operator class: GEMMs 80%, attention 15%, ...'."""
    parts = [f"{CLASS_NAMES.get(c, c)} {units.percent(share)}" for c, share in class_shares(ops) if share >= 0.001]
    return "Time by operator class: " + ", ".join(parts) + "."


def traffic(ops: pd.DataFrame) -> dict[str, float]:
    """Bytes of the pass by kind [byte]."""
    n = ops["count"]
    return {kind: float((sum(ops[column] for column in columns) * n).sum()) for kind, columns in BYTE_KINDS.items()}


def memory_times(ops: pd.DataFrame) -> dict[str, float]:
    """The engine's memory time of the pass (t_memory_s x count) split by byte kind, each operator's in proportion
    to its bytes of that kind [s]."""
    per_byte = ops["t_memory_s"] * ops["count"] / ops["bytes"].where(ops["bytes"] > 0)
    return {kind: float((sum(ops[column] for column in columns) * per_byte).sum())
            for kind, columns in BYTE_KINDS.items()}


def compute_share(total: pd.Series) -> float:
    """The share of a step's time in compute-bound operators: neither memory-bound nor communication."""
    return 1.0 - float(total["memory_bound_share"]) - network_share(total)


def class_bound(ops: pd.DataFrame, op_class: str) -> str:
    """The roof that bounds the operators of one class taken together (the engine's `bound_class` of their summed
    compute and memory times)."""
    mine = ops[ops["op_class"] == op_class]
    return bound_class(float((mine["t_compute_s"] * mine["count"]).sum()),
                       float((mine["t_memory_s"] * mine["count"]).sum()))


def class_intensity(ops: pd.DataFrame, op_class: str) -> float:
    """FLOP/byte of all operators of one class taken together (NaN if the class is absent)."""
    mine = ops[ops["op_class"] == op_class]
    nbytes = float((mine["bytes"] * mine["count"]).sum())
    return float((mine["flops"] * mine["count"]).sum()) / nbytes if nbytes else math.nan


def gemm_peak(gpu: Accelerator, scenario: dict) -> tuple[str, float]:
    """The weight GEMMs' compute dtype and its peak on `gpu` [FLOP/s]."""
    dtype = matmul_dtype(scenario["weight_dtype"], scenario["act_dtype"])
    return dtype, gpu.peak(dtype)


def gemm_ridge(gpu: Accelerator, scenario: dict) -> float:
    """The ridge of the weight GEMMs' compute dtype on `gpu` [FLOP/byte]."""
    return gpu.ridge(gemm_peak(gpu, scenario)[0])


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
    readers = and_list(names) if names else "the step"
    together = " together" if len(names) > 1 else ""
    return f"; the cache itself holds {units.nbytes(cache)}: {readers}{together} read {units.times(read / cache)} that"


def diagnose_decode(total: pd.Series, ops: pd.DataFrame, gpu: Accelerator, scenario: dict,
                    sweeps: pd.DataFrame) -> list[str]:
    """What bounds a decode step: the balance, the floors of weight, KV-cache and activation traffic, tokens/s and
    where the weight GEMMs stand against the ridge."""
    moved, floor = traffic(ops), memory_times(ops)
    share, util, t = float(total["memory_bound_share"]), float(total["compute_utilization"]), float(total["t_s"])
    return [
        f"Decode on {gpu.name} is {step_bound(total)}: {units.percent(share)} of the {units.seconds(t)} per "
        f"token goes to memory-bound operators, and the compute units are {units.percent(util)} busy.",
        f"Each step streams {units.nbytes(moved['weight'])} of weights at "
        f"{units.bandwidth(gpu.bandwidth_bytes_per_s)}: a floor of {units.seconds(floor['weight'])} per token from "
        f"the weights alone; KV-cache traffic adds {units.nbytes(moved['kv'])} ({units.seconds(floor['kv'])}"
        f"{kv_traffic_note(ops, total)}) and activations {units.nbytes(moved['act'])} ({units.seconds(floor['act'])}).",
        f"At batch {scenario['batch']} that is {units.tokens_per_s(total['tokens_per_s'])}.",
        gemm_sentence(total, ops, gpu, scenario, sweeps),
    ]


def gemm_sentence(total: pd.Series, ops: pd.DataFrame, gpu: Accelerator, scenario: dict,
                  sweeps: pd.DataFrame) -> str:
    """Decode's weight GEMMs against the ridge: past the critical batch already, or at which batch they would turn
    compute-bound and whether a batch that large fits, or that they never do."""
    ridge, crit = gemm_ridge(gpu, scenario), float(total["critical_batch"])
    ai = class_intensity(ops, "gemm")
    usable = units.usable(total["usable_memory_bytes"], gpu.memory_bytes)
    fit = largest_fitting_batch(sweeps)
    if math.isfinite(crit) and scenario["batch"] >= crit:
        text = (f"The weight GEMMs run at {units.intensity(ai)} FLOP/byte against a ridge of "
                f"{units.intensity(ridge)}: batch {units.integer(scenario['batch'])} is already past the critical "
                f"batch ({units.integer(crit)}), so the GEMMs are compute-bound")
        if not bool(total["fits"]):
            text += (f"; this batch needs {units.nbytes(total['footprint_bytes'])} per device and does not fit in "
                     f"{usable}")
            if math.isfinite(fit):
                text += f" (of the swept powers of two, batch {units.integer(fit)} is the largest that fits)"
        return text + "."
    if not math.isfinite(crit):
        return (f"The weight GEMMs run at {units.intensity(ai)} FLOP/byte and do not reach the ridge of "
                f"{units.intensity(ridge)} FLOP/byte at any batch the engine searched.")
    if math.isnan(fit):
        fit_text = "but not even the smallest swept batch fits in memory"
    elif fit >= crit:
        fit_text = f"and a batch of that size fits in {usable}"
    else:
        fit_text = (f"but with {scenario['seq_len']}-token contexts only batch {units.integer(fit)} (of the swept "
                    f"powers of two) fits in {usable}")
    return (f"The weight GEMMs run at {units.intensity(ai)} FLOP/byte against a ridge of {units.intensity(ridge)}: "
            f"they would turn compute-bound at batch {units.integer(crit)}, {fit_text}.")


def diagnose_prefill(total: pd.Series, ops: pd.DataFrame, gpu: Accelerator, scenario: dict) -> list[str]:
    """What bounds a prefill: the balance, the compute and memory floors, and where the GEMMs and attention stand
    against the ridge."""
    dtype, peak = gemm_peak(gpu, scenario)
    util, t = float(total["compute_utilization"]), float(total["t_s"])
    ridge = gemm_ridge(gpu, scenario)
    where = (f"{units.percent(network_share(total))} of the {units.seconds(t)} to the first token goes to the "
             "collectives between devices" if "network" in step_bound(total) else
             f"{units.percent(compute_share(total))} of the {units.seconds(t)} to the first token goes to "
             "compute-bound operators")
    sentences = [
        f"Prefill of {scenario['batch']} × {scenario['seq_len']} tokens on {gpu.name} is {step_bound(total)}: "
        f"{where}; the compute units are {units.percent(util)} busy.",
        f"It performs {units.flops(total['flops'])} at {units.peak(peak, dtype)} ({dtype}): a compute floor of "
        f"{units.seconds(total['t_compute_s'])}; it moves {units.nbytes(total['bytes'])} at "
        f"{units.bandwidth(gpu.bandwidth_bytes_per_s)}: a memory floor of {units.seconds(total['t_memory_s'])}. Each "
        f"operator is limited by its slower side and operators do not overlap, so the stage takes {units.seconds(t)}.",
    ]
    side = "above" if class_bound(ops, "gemm") == "compute" else "below"
    sentence = (f"The GEMMs run at {units.intensity(class_intensity(ops, 'gemm'))} FLOP/byte, {side} the ridge of "
                f"{units.intensity(ridge)} FLOP/byte")
    if (ops["op_class"] == "attention").any():
        att_share = dict(class_shares(ops)).get("attention", 0.0)
        sentence += (f"; attention ({scenario['attention']}) runs at "
                     f"{units.intensity(class_intensity(ops, 'attention'))} FLOP/byte "
                     f"({class_bound(ops, 'attention')}-bound) and takes {units.percent(att_share)} of the time")
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
                 f"{'their' if both else 'its'} times assume {'they' if both else 'it'} did ({spread_clause([gpu])})."]
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


