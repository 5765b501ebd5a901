"""A GPU's details in a model report (HTML only, collapsed): its memory footprint, figures, and per stage the
diagnosis, every operator, every treatment and the same stage on the other GPUs."""
from __future__ import annotations

import pandas as pd

from ..engine.hardware import Accelerator
from . import decision, text, units
from .figure_list import figures_at


def operator_rows(ops: pd.DataFrame) -> list[dict]:
    """Table-1-style rows of one (gpu, stage), in graph order."""
    time = ops["t_s"] * ops["count"]
    total = float(time.sum())
    return [{
        "op": r.op, "op_class": r.op_class, "count": str(int(r.count)), "flops": units.flops(r.flops),
        "bytes": units.nbytes(r.bytes), "intensity": units.intensity(r.intensity),
        "attainable": units.rate(r.attainable_flops_per_s, getattr(r, "compute_dtype", None)), "bound": r.bound,
        "time": units.seconds(r.t_s),
        "time_total": units.seconds(r.t_s * r.count), "share": units.percent(r.t_s * r.count / total),
    } for r in ops.itertuples()]


def treatment_rows(rows: pd.DataFrame) -> list[dict]:
    out = []
    for r in rows.itertuples():
        applicable = bool(r.applicable)
        out.append({
            "treatment": r.treatment, "label": r.label, "helps": text.HELPS.get(r.helps, r.helps),
            "helps_class": r.helps if r.helps in ("memory", "compute") else "",
            "applicable": applicable,
            "speedup": units.times(r.speedup) if applicable else units.DASH,
            "metric": "throughput" if text.is_throughput(r.treatment) else (
                "latency, slower" if applicable and r.speedup < text.SLOWER else "latency"),
            "time": units.seconds(r.t_s) if applicable else units.DASH,
            "tokens_per_s": units.sig(r.tokens_per_s) if applicable else units.DASH,
            "bound": r.bound if applicable else units.DASH,
            "footprint": units.nbytes(r.footprint_bytes) if applicable else units.DASH,
            "fits": units.yes_no(r.fits) if applicable else units.DASH,
            "batch": str(int(r.batch)), "note": r.note or "",
        })
    return out


def compared(mine: float, other: float) -> str:
    """Another GPU's stage time against this GPU's, in words: '4.37× faster', '1.37× slower', 'as fast'."""
    ratio = mine / other
    if units.times(ratio) == units.times(1.0):
        return "as fast"
    return f"{units.times(ratio)} faster" if ratio > 1 else f"{units.times(1 / ratio)} slower"


def other_gpu_rows(stage_totals: pd.DataFrame, key: str, gpus: dict[str, Accelerator]) -> list[dict]:
    """The same workload on each other GPU: its time and how much faster or slower it is than on `key`."""
    indexed = stage_totals.set_index("gpu")
    mine = float(indexed.loc[key, "t_s"])
    rows = []
    for other, row in indexed.iterrows():
        if other == key:
            continue
        rows.append({"name": gpus[other].name, "key": other,
                     "time": decision.cell(units.seconds(row["t_s"]), decision.misfit_text(row)),
                     "versus": compared(mine, float(row["t_s"])),
                     "faster": bool(mine > float(row["t_s"])),
                     "bound": text.step_bound(row),
                     "memory_bound_share": units.percent(row["memory_bound_share"]),
                     "fits": units.yes_no(row["fits"])})
    return sorted(rows, key=lambda r: gpus[r["key"]].name)


def footprint_table(stage_totals: pd.DataFrame, gpu: Accelerator) -> dict:
    """Memory footprint of each stage on one GPU (rows indexed by stage): prefill holds the prompt's activations
    (the score matrix with eager attention), decode the whole KV cache, so the two can disagree on the fit."""
    rows = [{"stage": stage, "weights": units.nbytes(r["weight_bytes_per_device"]),
             "kv_cache": units.nbytes(r["kv_cache_bytes_per_device"]),
             "activations": units.nbytes(r["activation_bytes"]), "footprint": units.nbytes(r["footprint_bytes"]),
             "fits": bool(r["fits"])} for stage, r in stage_totals.iterrows()]
    return {"capacity": units.capacity(gpu.memory_bytes), "rows": rows}


def stage_section(stage: str, total: pd.Series, ops: pd.DataFrame, treatments: pd.DataFrame,
                  sweeps: pd.DataFrame, stage_totals: pd.DataFrame, gpu: Accelerator, gpus: dict,
                  scenario: dict) -> dict:
    """One stage on one GPU: its headline numbers, the diagnosis, every operator and treatment, the other GPUs."""
    if stage == "decode":
        diagnosis = text.diagnose_decode(total, ops, gpu, scenario, sweeps)
        headline = [("time per output token, bound", units.seconds(total["tpot_s"])),
                    (f"expected ({total['estimate']})", units.seconds(total["tpot_expected_s"])),
                    ("throughput, bound", units.tokens_per_s(total["tokens_per_s"]))]
    else:
        diagnosis = text.diagnose_prefill(total, ops, gpu, scenario)
        headline = [("time to first token, bound", units.seconds(total["ttft_s"])),
                    (f"expected ({total['estimate']})", units.seconds(total["ttft_expected_s"])),
                    ("throughput, bound", units.tokens_per_s(total["tokens_per_s"]))]
    diagnosis.append(text.class_sentence(ops))
    if network := text.network_sentence(stage, total, ops, gpu):
        diagnosis.append(network)
    headline += [("memory-bound share", units.percent(total["memory_bound_share"])),
                 ("compute busy", units.percent(total["compute_utilization"])),
                 ("FLOPs", units.flops(total["flops"])), ("bytes", units.nbytes(total["bytes"])),
                 ("intensity", f"{units.intensity(total['intensity'])} FLOP/byte")]
    return {
        "stage": stage, "title": stage.capitalize(), "headline": headline, "diagnosis": diagnosis,
        "operators": operator_rows(ops), "treatments": treatment_rows(treatments),
        "treatment_summary": text.treatment_sentence(stage, total, treatments, scenario),
        "other_gpus": other_gpu_rows(stage_totals, gpu.key, gpus),
    }


def gpu_detail(key: str, gpu: Accelerator, stages: list[str], tables: dict[str, pd.DataFrame],
               gpus: dict[str, Accelerator], scenario: dict, manifest: list[dict], figures_href: str) -> dict:
    """One GPU's detail (HTML only, collapsed): footprint, the figures the manifest places after it (the
    roofline), per stage the diagnosis, the operators with their attainable rate, every treatment and the other
    GPUs, and the figures it places at the end (the batch sweep)."""
    ops, totals, treatments, sweeps = (tables[name] for name in ("ops", "totals", "treatments", "sweeps"))
    stage_sections = []
    for stage in stages:
        def select(df, stage=stage):
            return df[(df["gpu"] == key) & (df["stage"] == stage)]

        total = select(totals).iloc[0]
        section = stage_section(stage, total, select(ops), select(treatments), select(sweeps),
                                totals[totals["stage"] == stage], gpu, gpus, scenario)
        stage_sections.append({**section, "misfit": decision.misfit_text(total)})
    mine = totals[totals["gpu"] == key].set_index("stage").loc[stages]
    return {
        "key": key, "name": gpu.name, "anchor": f"gpu-{key}",
        "figures_head": figures_at(manifest, figures_href, "gpu_head", gpu=key),
        "figures_foot": figures_at(manifest, figures_href, "gpu_foot", gpu=key),
        "footprint": footprint_table(mine, gpu),
        "footprint_note": text.footprint_note(mine, ops[ops["gpu"] == key],
                                              treatments[treatments["gpu"] == key], gpu),
        "fits": bool(mine["fits"].astype(bool).all()),
        "stages": stage_sections,
    }
