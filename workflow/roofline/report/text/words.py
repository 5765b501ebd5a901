"""The report's words: names of operator classes and treatments, the phrase for a stage's bound, and the small
helpers that join names into a sentence."""
from __future__ import annotations

import math

from ...engine.roofline import dominant_bound
from .. import units

#: operator classes in sentences
CLASS_NAMES = {"gemm": "GEMMs", "attention": "attention", "norm": "norms", "elementwise": "element-wise ops",
               "embedding": "the embedding", "communication": "communication"}
#: which bottleneck a treatment attacks (treatments table `helps`): memory = fewer bytes, compute = more FLOP/s or
#: fewer FLOPs
HELPS = {"memory": "memory-bound", "compute": "compute-bound", "both": "both", "network": "network-bound"}
#: short names of the engine's treatments for sentences (the table shows the engine's full label)
SHORT = {"fusion": "fusion", "flash_attention": "FlashAttention", "weight_int8": "int8 weights",
         "weight_int4": "int4 weights", "kv_int8": "int8 KV cache", "kv_fp8": "fp8 KV cache",
         "fp8_compute": "fp8 compute", "batching": "batching", "batching_kv_fp8": "batching with an fp8 KV cache",
         "more_devices": "double TP",
         "overlap_communication": "comm. overlap"}


def is_throughput(treatment: str) -> bool:
    """Whether a treatment's speed-up is a throughput ratio (batching, also with a narrower KV cache) rather than a
    latency ratio."""
    return str(treatment).startswith("batching")


def short(treatment: str) -> str:
    """A treatment's short name in sentences."""
    return SHORT.get(treatment, treatment.replace("_", " "))


def bound_phrase(memory_share: float, network_share: float = 0.0, bound: str | None = None) -> str:
    """Words for a stage's balance: the roof it spends most of its time under (`bound`, the totals' column, else the
    engine's `dominant_bound` of the shares of time in memory-bound and communication operators), 'mostly' unless
    that share is 90% or more as the report prints it (`units.percent`), so that two GPUs that both show '10%' read
    the same words wherever the report uses them (executive summary, diagnosis, treatments, other GPUs): with no
    network share, memory-bound from 90% in memory-bound operators, mostly memory-bound from 50%, mostly
    compute-bound above 10%, compute-bound at 10% or less. With a network share the largest of three roofs may hold
    less than half the time: 'partly' then, not 'mostly' (43% in memory-bound operators is no majority)."""
    shown = {"memory": units.percent_value(memory_share), "network": units.percent_value(network_share)}
    shown["compute"] = 100.0 - shown["memory"] - shown["network"]
    bound = bound or dominant_bound(shown["memory"] / 100.0, shown["network"] / 100.0)
    if shown[bound] >= 90:
        return f"{bound}-bound"
    return f"{'mostly' if shown[bound] >= 50 else 'partly'} {bound}-bound"


def step_bound(row) -> str:
    """`bound_phrase` of a totals row (one stage on one GPU): its `bound` column (the engine's classifier, which
    counts the collectives) with the words from its memory-bound and network shares (a row without a network share
    uses no link)."""
    bound = row.get("bound") if hasattr(row, "get") else None
    return bound_phrase(float(row["memory_bound_share"]), network_share(row),
                        bound if isinstance(bound, str) and bound else None)


def network_share(row) -> float:
    """The share of a step's time in communication operators (0 for a row that has none)."""
    return float(row.get("network_share", 0.0))


#: a latency treatment counts as a gain from this speed-up on; below 1 / SLOWER it makes the stage slower
GAIN = 1.05
SLOWER = 0.995


def and_list(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c' ('a; b and c' where a name holds a comma: names_joined)."""
    return items[0] if len(items) == 1 else names_joined(items[:-1]) + " and " + items[-1]


def names_joined(items) -> str:
    """Names separated by ', ', or by '; ' where one holds a comma itself (a deployment: '2 x H100 SXM5 80GB, TP 2'
    in a list of them had read as one run-on list)."""
    items = list(items)
    return ("; " if any(", " in item for item in items) else ", ").join(items)


def where_it_applies(applies: dict, names: dict[str, str]) -> str:
    """' on every configured GPU', or ' on A, B (the only GPUs where it applies)', or '' for a single GPU."""
    if len(applies) == len(names):
        return " on every configured GPU" if len(names) > 1 else ""
    plural = "s" if len(applies) > 1 else ""
    return f" on {names_joined(names[k] for k in applies)} (the only GPU{plural} where it applies)"


def value_range(values: dict[str, float], fmt) -> str:
    """'1.20×', or '1.20×–3.40×' when the values differ by more than half a percent and read differently as
    written ('10%–10%' said one thing twice)."""
    low, high = min(values.values()), max(values.values())
    first, last = fmt(low), fmt(high)
    return first if math.isclose(low, high, rel_tol=5e-3) or first == last else f"{first}–{last}"




def single_device(gpu) -> bool:
    """Whether a device has no link to another (no scale-up link in a domain of 2 or more, no scale-out network):
    its deployments are one device, whatever the plan."""
    scaleup = gpu.scaleup_domain > 1 and gpu.scaleup_bandwidth_bytes_per_s > 0
    return not scaleup and not gpu.scaleout_bandwidth_bytes_per_s


def spread_clause(gpus) -> str:
    """What spreads a footprint that does not fit over more devices, for the devices `gpus` (Accelerators): parallel:
    auto or a larger plan; and which of them cannot, because their entry gives no interconnect."""
    alone = [gpu.name for gpu in gpus if single_device(gpu)]
    if not alone:
        return "parallel: auto, or a plan with more devices, spreads it"
    one = len(alone) == 1
    text = (f"{and_list(alone)} {'has' if one else 'have'} no interconnect in {'its' if one else 'their'} "
            "entry (scaleup_domain and scaleup_gbps, or scaleout_gbps), so a deployment there is limited to one "
            "device and cannot spread it")
    if len(alone) < len(list(gpus)):
        text += "; elsewhere parallel: auto, or a plan with more devices, spreads it"
    return text
