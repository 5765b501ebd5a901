"""Page 1's sentences: the fastest setups that fit, what bounds each stage on each GPU and the best levers, where
the link bounds a step, and what fits where."""
from __future__ import annotations

import pandas as pd

from ...engine.hardware import Accelerator
from ...engine.roofline import dominant_bound
from .. import units
from .diagnosis import gemm_peak
from .network import network_summary
from .treatments import lever_sentence
from .words import (
    is_throughput,
    names_joined,
    network_share,
    spread_clause,
    step_bound,
    value_range,
    where_it_applies,
)


def footprint_parts(row: pd.Series, everywhere: bool = False) -> str:
    """'571 GB (weights 4.02 GB, KV cache 17.2 GB, activations 550 GB)': the busiest device of the deployment, with
    the deployment named when it has several devices; `everywhere`: every configured GPU holds the same bytes on one
    device (naming the one sorted last read as if it alone did)."""
    if everywhere:
        where = " on every configured GPU"
    else:
        where = f" per device of {row['deployment']}" if int(row["devices"]) > 1 else f" on {row['deployment']}"
    usable = row.get("usable_memory_bytes")
    # what it is held against, in the same decimal units (the hardware table prints capacities in GiB, as vendors
    # do, and 170 GB beside "192 GiB" could not be checked without the memory_utilization share)
    memory = row.get("memory_bytes")
    share = "" if units.missing(usable) or units.missing(memory) else \
        f" ({float(usable) / float(memory):.0%} of {units.nbytes(memory)})"
    held = "" if everywhere or units.missing(usable) else f" of {units.nbytes(usable)} usable{share}"
    return (f"{units.nbytes(row['footprint_bytes'])}{held}{where} (weights "
            f"{units.nbytes(row['weight_bytes_per_device'])}, KV cache "
            f"{units.nbytes(row['kv_cache_bytes_per_device'])}, activations {units.nbytes(row['activation_bytes'])})")


def fit_sentence(totals: pd.DataFrame, names: dict[str, str],
                 gpus: dict[str, Accelerator] | None = None) -> str:
    """Whether each stage's footprint fits each GPU, naming the stage (prefill's activations and decode's KV cache
    differ, so the stages can disagree)."""
    stages = [s for s in ("prefill", "decode") if s in set(totals["stage"])]
    largest = {s: totals[totals["stage"] == s].sort_values("footprint_bytes").iloc[-1] for s in stages}
    if totals["fits"].astype(bool).all():
        stage = max(stages, key=lambda s: largest[s]["footprint_bytes"])
        # the verdict first: the footprint quoted is one deployment's, and read before it, "fits every GPU" was
        # taken to hold that deployment's bytes against every GPU
        where = "every configured GPU holds" if len(names) > 1 else "the GPU holds"
        rows = totals[totals["stage"] == stage]
        same = len(names) > 1 and (rows["devices"] == 1).all() and rows["footprint_bytes"].max() <= 1.0005 * rows[
            "footprint_bytes"].min()
        return (f"Memory: {where} {'both stages' if len(stages) > 1 else f'the {stage} step'}; the largest "
                f"footprint is {stage}'s {footprint_parts(largest[stage], same)}.")
    parts = []
    for stage in stages:
        fits = totals[totals["stage"] == stage].set_index("gpu")["fits"].astype(bool)
        if fits.all():
            verdict = "fits every configured GPU" if len(fits) > 1 else "fits"
        elif not fits.any():
            verdict = "fits no configured GPU" if len(fits) > 1 else f"does not fit on {names[fits.index[0]]}"
        elif fits.sum() < (~fits).sum():  # name the shorter list
            verdict = f"fits only on {names_joined(names[k] for k, ok in fits.items() if ok)}"
        else:
            verdict = f"does not fit on {names_joined(names[k] for k, ok in fits.items() if not ok)}"
        parts.append(f"{stage} needs {footprint_parts(largest[stage])} and {verdict}")
    misfit = [gpus[k] for k in dict.fromkeys(totals.loc[~totals["fits"].astype(bool), "gpu"]) if k in (gpus or {})]
    spread = spread_clause(misfit) if misfit else "parallel: auto, or a plan with more devices, spreads it"
    return ("Memory (the busiest device of each deployment): " + "; ".join(parts) + ". Where it does not fit, the "
            f"times assume it did and are marked ✗ ({spread}).")


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
        label = str(best.get("estimate", ""))  # a pooled-fallback time ranks against measured ones: say so
        notes = [] if label in ("calibrated", "", "nan") else [f"a {label} estimate, see the caveats"]
        if stage == "decode":
            notes.insert(0, f"{units.tokens_per_s(best['tokens_per_s_expected'])} expected at batch "
                            f"{scenario['batch']}")
        extra = (f" for {scenario['batch']} × {scenario['seq_len']} prompt tokens" if stage == "prefill" else "") + (
            f" ({'; '.join(notes)})" if notes else "")
        parts.append(f"{stage} {units.seconds(best[expected])} {what} expected (bound "
                     f"{units.seconds(best[column])}) on {best['deployment']}{extra}")
    return f"Fastest setup that fits: {'; '.join(parts)}."


def deployment_names(totals: pd.DataFrame, gpus: dict[str, Accelerator]) -> dict[str, str]:
    """{gpu key: its deployment as the tables name it ('4 x H100 SXM5 80GB, TP 4'), or the device's name for a
    single device}: two keys of one device with other plans read apart."""
    named = {key: text for key, text, devices in zip(totals["gpu"], totals["deployment"], totals["devices"])
             if int(devices) > 1}  # one device: its name reads better in a sentence than "1 x ..."
    return {key: str(named.get(key, gpu.name)) for key, gpu in gpus.items()}


def stage_sentence(stage: str, rows: pd.DataFrame, treatments: pd.DataFrame, gpus: dict[str, Accelerator],
                   scenario: dict, names: dict[str, str] | None = None) -> str:
    """What bounds the stage on each GPU (grouped by the words of `step_bound`), what that means for the choice
    of GPU, the largest single lever and, for decode, what batching buys (rows: that stage's totals by gpu;
    `names`: how to call each gpu key, by default its name)."""
    names = names or {k: g.name for k, g in gpus.items()}
    text = _bound_clause(stage, rows, names) + (_follows_clause(rows, gpus, scenario, names) if len(rows) > 1 else "")
    text += "."
    # a treatment is recommended only where its result fits the device (never on a device the model does not fit)
    mine = treatments[(treatments["stage"] == stage) & treatments["applicable"].astype(bool)
                      & treatments["fits"].astype(bool)]
    latency = mine[~mine["treatment"].map(is_throughput)]
    if len(latency):
        text += " " + lever_sentence(stage, latency, names)
    batching = mine[mine["treatment"] == "batching"]
    if len(batching):
        speedups = dict(zip(batching["gpu"], batching["speedup"]))
        text += (f" Batching decode up to the critical batch (or as many sequences as fit) raises throughput "
                 f"{value_range(speedups, units.times)} (bound){where_it_applies(speedups, names)}.")
    return text


#: where a stage's time goes, per roof (the words after a share)
SHARE_WORDS = {"memory": "in memory-bound operators", "compute": "in compute-bound operators",
               "network": "in the collectives"}


def _roof_share(row: pd.Series, roof: str) -> float:
    """The share of a stage's time under one roof: memory-bound operators, collectives, or the compute-bound rest."""
    memory, network = float(row["memory_bound_share"]), network_share(row)
    return {"memory": memory, "network": network, "compute": 1.0 - memory - network}[roof]


def _bound_clause(stage: str, rows: pd.DataFrame, names: dict[str, str]) -> str:
    """'Decode is memory-bound on every configured GPU (91%–97% of its time in memory-bound operators)', or per
    group of GPUs that read the same words, each with the share of the roof its words name ('mostly network-bound on
    4 x L40S, TP 4 (51% in the collectives)')."""
    groups: dict[str, list[str]] = {}
    for key, row in rows.iterrows():
        groups.setdefault(step_bound(row), []).append(key)

    def share(phrase: str, keys: list[str]) -> str:
        roof = phrase.split()[-1].removesuffix("-bound")  # after 'mostly ' or 'partly '
        return (f"{value_range({k: _roof_share(rows.loc[k], roof) for k in keys}, units.percent)} "
                f"{SHARE_WORDS[roof]}")

    if len(groups) == 1:  # one phrase: the memory-bound share tells the GPUs apart (unless the link bounds them)
        ((phrase, keys),) = groups.items()
        where = "on every configured GPU" if len(rows) > 1 else f"on {names[rows.index[0]]}"
        said = share(phrase if "network" in phrase else "memory-bound", keys).replace(" in ", " of its time in ", 1)
        return f"{stage.capitalize()} is {phrase} {where} ({said})"
    parts = [f"{phrase} on {names_joined(names[k] for k in keys)} ({share(phrase, keys)})"
             for phrase, keys in groups.items()]
    return f"{stage.capitalize()} is " + "; ".join(parts)


#: how far (relative) a speed-up may stray from the ratio of the roof's figures and still be said to follow them
FOLLOWS_WITHIN = 0.1


def _follows_clause(rows: pd.DataFrame, gpus: dict[str, Accelerator], scenario: dict, names: dict[str, str]) -> str:
    """When every GPU is bound by the same roof (the engine's `dominant_bound`): the fastest against the slowest
    and the spec that sets their ratio, memory bandwidth or peak FLOP/s ('' otherwise); where the speed-up strays
    more than FOLLOWS_WITHIN from the ratio of the deployments' figures (a 'mostly' bound stage, whose collectives
    and other operators do not scale with that figure), the figures' own ratio beside it and what the rest is."""
    bounds = {dominant_bound(memory, network) for memory, network in zip(rows["memory_bound_share"],
                                                                         rows["network_share"])}
    fast, slow = rows["t_s"].idxmin(), rows["t_s"].idxmax()
    ratio = float(rows["t_s"][slow] / rows["t_s"][fast])
    if bounds == {"memory"}:
        spec, fmt, roof, rest = (lambda key: gpus[key].bandwidth_bytes_per_s), units.bandwidth, "memory bandwidth", \
            "compute-bound operators"
    elif bounds == {"compute"}:
        dtype, _ = gemm_peak(gpus[fast], scenario)
        spec, fmt, roof, rest = (lambda key: gpus[key].peak(dtype)), (lambda v: units.peak(v, dtype)), \
            "peak FLOP/s", "memory-bound operators"
    else:
        return ""
    specs = {key: spec(key) * (int(rows["tp"][key]) if "tp" in rows.columns else 1) for key in (fast, slow)}
    clause = (f"by the bound, {names[fast]} ({_across(rows, fast, spec(fast), fmt)}) is {units.times(ratio)} faster "
              f"than {names[slow]} ({_across(rows, slow, spec(slow), fmt)})")
    if abs(ratio / (specs[fast] / specs[slow]) - 1) <= FOLLOWS_WITHIN:
        return f", so it follows {roof}: {clause}"
    others = value_range({key: 1 - _roof_share(rows.loc[key], "memory" if roof == "memory bandwidth" else "compute")
                          for key in (fast, slow)}, units.percent)
    collectives = "the collectives and " if any(network_share(rows.loc[key]) > 0 for key in (fast, slow)) else ""
    return (f", so {roof} sets most of it: {clause}, where the {roof} alone would give "
            f"{units.times(specs[fast] / specs[slow])}: the rest of the time ({others}: {collectives}{rest}) does not "
            "follow it")


def _across(rows: pd.DataFrame, key: str, per_device: float, fmt) -> str:
    """A deployment's figure as its step sees it: the tensor-parallel devices read (or compute) side by side, so
    their sum, '6.70 TB/s over 2 devices' ('3.35 TB/s' for one); pipeline stages take turns and add nothing. The
    speed-up quoted beside it is the deployments', so the figures must be too (one device's read as the cause of a
    whole deployment's ratio)."""
    tp = int(rows["tp"][key]) if "tp" in rows.columns else 1
    pp = int(rows["pp"][key]) if "pp" in rows.columns else 1
    stages = f", one of its {pp} pipeline stages at a time" if pp > 1 else ""  # 16 devices, 8 reading at once
    return fmt(per_device * tp) + (f" over {tp} devices{stages}" if tp > 1 else stages)


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
    sentences.append(fit_sentence(totals, names, gpus))
    return sentences


