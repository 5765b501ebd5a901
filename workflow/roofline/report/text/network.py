"""When the link between devices, not memory, bounds part of a multi-device step: the collectives in sentences."""
from __future__ import annotations

import pandas as pd

from ...engine.hardware import Accelerator
from .. import units

#: the collectives' names in sentences
COLLECTIVE_NAMES = {"attn_all_reduce": "all-reduce", "mlp_all_reduce": "all-reduce", "embed_all_reduce": "all-reduce",
                    "qk_norm_all_reduce": "all-reduce",
                    "logits_all_gather": "all-gather", "moe_dispatch": "all-to-all",
                    "moe_combine_all_to_all": "all-to-all", "pp_send": "pipeline send"}
#: below this share of a step the collectives are not worth a sentence
NETWORK_SENTENCE_SHARE = 0.05


def link_of(gpu: Accelerator, bandwidth: float) -> tuple[str, float]:
    """(name, latency [s]) of the link of `gpu` that a collective crossed, known by its bandwidth (the operator
    table's network_bandwidth_bytes_per_s): the scale-up link, the scale-out network, or across scale-up domains
    both together (roofline.engine.collectives: an effective bandwidth)."""
    up = scaleup_name(gpu)
    if bandwidth == gpu.scaleup_bandwidth_bytes_per_s:
        return up, gpu.scaleup_latency_s
    if bandwidth == gpu.scaleout_bandwidth_bytes_per_s:
        return "the scale-out network", gpu.scaleout_latency_s
    return f"{up} and the scale-out network together, effectively", gpu.scaleout_latency_s


def scaleup_name(gpu: Accelerator) -> str:
    """The scale-up link's name in a sentence: its own ("NVLink 4"), or "the scale-up link" where a device entry
    gives none (a gpus: entry with scaleup_gbps and no scaleup_link)."""
    return gpu.scaleup_link or "the scale-up link"


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
    link, latency = link_of(gpu, link_bw)
    name = COLLECTIVE_NAMES.get(top["op"], top["op"])
    reduced = name == "all-reduce" and gpu.in_network_reduction and link == scaleup_name(gpu)
    stages = int(total["pp"]) if "pp" in total.index and not units.missing(total["pp"]) else 1
    # under a pipeline the step's path runs through every stage: each device takes its stage's share of them
    where = ("on each device's link" if stages == 1
             else f"along the step's {stages} pipeline stages, each on its devices' links")
    text = (f"On {total['deployment']} the collectives take {units.percent(share)} of the {stage} step: "
            f"{count} {name}s, each moving {units.nbytes(top['bytes_network'])} {where} ({link}, "
            f"{units.bandwidth(link_bw)} per direction"
            f"{'; the switch adds them in flight, so each tensor crosses once each way' if reduced else ''}) "
            f"at {units.seconds(top['t_s'])} apiece")
    if latency >= float(top["t_network_s"]) - latency:  # the engine's link time = latency + the bytes' time
        text += (f", set by the {units.seconds(latency)} latency of a collective rather than by the bytes: fewer "
                 "devices, larger batches or overlapping them with compute is what helps")
    else:
        text += (f", set by the link's bandwidth ({units.bandwidth(gpu.bandwidth_bytes_per_s)} of memory bandwidth "
                 "is not the limit there): a faster link, fewer devices or overlap with compute helps")
    return text + "."


def network_summary(totals: pd.DataFrame, ops: pd.DataFrame, gpus: dict[str, Accelerator]) -> str:
    """Page 1's word on the links: network_sentence for the (gpu, stage) whose collectives take the largest share,
    when some multi-device deployment spends 5% or more of a step in them; '' otherwise."""
    multi = totals[(totals["devices"] > 1) & (totals["network_share"] >= NETWORK_SENTENCE_SHARE)]
    if multi.empty:
        return ""
    worst = multi.loc[multi["network_share"].idxmax()]
    mine = ops[(ops["gpu"] == worst["gpu"]) & (ops["stage"] == worst["stage"])]
    return network_sentence(str(worst["stage"]), worst, mine, gpus[worst["gpu"]])
