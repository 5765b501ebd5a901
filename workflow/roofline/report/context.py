"""One context dict per page, built from the tidy tables and results/specs.json; HTML and PDF render from it.

Every value a template shows is a ready string (units applied here); the templates only loop and test flags.
`check_context` refuses a context that still holds a NaN or a float, so a missing number cannot reach the page.
"""
from __future__ import annotations

import math
import os
from datetime import datetime, timezone

import pandas as pd

from ..dtypes import PEAK_DTYPES
from ..hardware import Accelerator
from ..scenario import STAGES
from . import paper, text, units

CAVEATS = (
    "A roofline is an upper bound on speed (a lower bound on time): real kernels reach 60-90% of peak bandwidth "
    "and less of peak FLOP/s, so measured times are longer.",
    "No kernel launch overhead is counted; at batch-1 decode, hundreds of small kernels per token can add tens of "
    "microseconds each unless captured in a CUDA graph.",
    "Operators do not overlap: each operator's time is the slower of its compute and its memory time, and the "
    "stage time is their sum.",
    "Bytes are compulsory DRAM traffic of unfused kernels (inputs read once, outputs written once); caches, tiling "
    "re-reads and fusion inside a framework change them.",
    "Peaks are dense datasheet values; rows flagged as estimates in the hardware table were derived rather than "
    "printed by the vendor.",
    "A single device runs the whole model: tensor or pipeline parallelism, offloading and communication are not "
    "modelled, so a model that does not fit is still timed as if it did.",
)


#: the pipeline's result files (paths fixed by the file contract), linked from the index relative to reports/
RESULT_FILES = (
    ("ops.csv", "per-operator rows (also ops.parquet)"),
    ("totals.csv", "one row per model, GPU and stage (also totals.parquet)"),
    ("treatments.parquet", "what each treatment buys"),
    ("sweeps.parquet", "batch and sequence-length sweeps"),
    ("specs.json", "the resolved configuration and its hash"),
)


def generated_at() -> datetime:
    """Now, or SOURCE_DATE_EPOCH when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return datetime.fromtimestamp(int(epoch), tz=timezone.utc)
    return datetime.now(tz=timezone.utc)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def accelerators(specs: dict) -> dict[str, Accelerator]:
    return {key: Accelerator(**entry) for key, entry in specs["gpus"].items()}


def title_block(specs: dict, title: str, subtitle: str) -> dict:
    when = generated_at()
    scenario = specs["scenario"]
    return {
        "title": title, "subtitle": subtitle, "date": when.strftime("%Y-%m-%d"),
        "config_hash": specs["config_sha256"][:12], "config_hash_full": specs["config_sha256"],
        "scenario": [
            ("batch", str(scenario["batch"])), ("sequence length", f"{scenario['seq_len']} tokens"),
            ("weights", scenario["weight_dtype"]), ("activations", scenario["act_dtype"]),
            ("KV cache", scenario["kv_dtype"]), ("attention", scenario["attention"]),
            ("logits", scenario["logits"]), ("MoE routing", scenario["expert_routing"]),
            ("MLA", scenario["mla_mode"]),
        ],
        "stages": ", ".join(specs["stages"]),
    }


def hardware_table(gpus: dict[str, Accelerator]) -> dict:
    dtypes = [d for d in PEAK_DTYPES if any(d in g.peak_flops_per_s for g in gpus.values())]
    rows = []
    for key, gpu in gpus.items():
        cells = []
        for dtype in dtypes:
            if dtype in gpu.peak_flops_per_s:
                cells.append({"peak": units.sig(gpu.peak(dtype) / 1e12), "ridge": units.sig(gpu.ridge(dtype))})
            else:
                cells.append({"peak": units.DASH, "ridge": ""})
        rows.append({"key": key, "name": gpu.name, "vendor": gpu.vendor, "memory": units.nbytes(gpu.memory_bytes),
                     "bandwidth": units.bandwidth(gpu.bandwidth_bytes_per_s), "peaks": cells,
                     "source": gpu.source or units.DASH, "estimate": bool(gpu.estimate),
                     "l2": units.nbytes(gpu.l2_bytes) if gpu.l2_bytes else units.DASH})
    return {"dtypes": dtypes, "rows": rows}


def operator_rows(ops: pd.DataFrame) -> list[dict]:
    """Table-1-style rows of one (gpu, stage), in graph order."""
    time = ops["t_s"] * ops["count"]
    total = float(time.sum())
    return [{
        "op": r.op, "op_class": r.op_class, "count": str(int(r.count)), "flops": units.flops(r.flops),
        "bytes": units.nbytes(r.bytes), "intensity": units.intensity(r.intensity),
        "attainable": units.rate(r.attainable_flops_per_s), "bound": r.bound, "time": units.seconds(r.t_s),
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
            "metric": "throughput" if r.treatment == "batching" else "latency",
            "time": units.seconds(r.t_s) if applicable else units.DASH,
            "tokens_per_s": units.sig(r.tokens_per_s) if applicable else units.DASH,
            "bound": r.bound if applicable else units.DASH,
            "footprint": units.nbytes(r.footprint_bytes) if applicable else units.DASH,
            "fits": units.yes_no(r.fits) if applicable else units.DASH,
            "batch": str(int(r.batch)), "note": r.note or "",
        })
    return out


def other_gpu_rows(stage_totals: pd.DataFrame, key: str, gpus: dict[str, Accelerator]) -> list[dict]:
    """The same workload on each other GPU: its time and the ratio of totals (speed-up over `key`)."""
    indexed = stage_totals.set_index("gpu")
    mine = float(indexed.loc[key, "t_s"])
    rows = []
    for other, row in indexed.iterrows():
        if other == key:
            continue
        rows.append({"name": gpus[other].name, "key": other, "time": units.seconds(row["t_s"]),
                     "speedup": units.times(mine / float(row["t_s"])),
                     "faster": bool(mine > float(row["t_s"])),
                     "bound": text.bound_phrase(float(row["memory_bound_share"])),
                     "memory_bound_share": units.percent(row["memory_bound_share"]),
                     "fits": units.yes_no(row["fits"])})
    return sorted(rows, key=lambda r: gpus[r["key"]].name)


def figure_entry(manifest: list[dict], href: str, kind: str, caption: str, gpu: str | None = None,
                 stage: str | None = None) -> dict | None:
    for entry in manifest:
        if entry["kind"] == kind and entry.get("gpu") == gpu and entry.get("stage") == stage:
            note = entry.get("note") or ""
            return {"src": f"{href}/{entry['svg']}", "png": f"{href}/{entry['png']}",
                    "caption": caption + (f" {note}" if note else "")}
    return None


def stage_section(stage: str, total: pd.Series, ops: pd.DataFrame, treatments: pd.DataFrame,
                  sweeps: pd.DataFrame, stage_totals: pd.DataFrame, gpu: Accelerator, gpus: dict,
                  scenario: dict) -> dict:
    if stage == "decode":
        diagnosis = text.diagnose_decode(total, ops, gpu, scenario, sweeps)
        headline = [("time per output token", units.seconds(total["tpot_s"])),
                    ("throughput", units.tokens_per_s(total["tokens_per_s"]))]
    else:
        diagnosis = text.diagnose_prefill(total, ops, gpu, scenario)
        headline = [("time to first token", units.seconds(total["ttft_s"])),
                    ("throughput", units.tokens_per_s(total["tokens_per_s"]))]
    diagnosis.append(text.class_sentence(ops))
    headline += [("memory-bound share", units.percent(total["memory_bound_share"])),
                 ("compute busy", units.percent(total["compute_utilization"])),
                 ("FLOPs", units.flops(total["flops"])), ("bytes", units.nbytes(total["bytes"])),
                 ("intensity", f"{units.intensity(total['intensity'])} FLOP/byte")]
    return {
        "stage": stage, "title": stage.capitalize(), "headline": headline, "diagnosis": diagnosis,
        "operators": operator_rows(ops), "treatments": treatment_rows(treatments),
        "treatment_summary": text.treatment_sentence(stage, total, treatments),
        "other_gpus": other_gpu_rows(stage_totals, gpu.key, gpus),
    }


def appendix(model: str, tables: dict[str, pd.DataFrame], specs: dict) -> dict:
    """The Table 1 comparison, when llama-2-7b on rtx-a6000 is configured; otherwise why it is absent."""
    ops = tables["ops"]
    pair = ops[(ops["model"] == paper.MODEL) & (ops["gpu"] == paper.GPU)]
    base = {"model": paper.MODEL, "gpu": paper.GPU, "sections": [], "note": ""}
    if model != paper.MODEL:
        return {**base, "available": False,
                "message": f"The comparison with the paper's Table 1 applies to {paper.MODEL} on {paper.GPU} only; "
                           f"see the {paper.MODEL} report."}
    if pair.empty:
        return {**base, "available": False,
                "message": f"The paper's Table 1 describes {paper.MODEL} on {paper.GPU}; {paper.GPU} is not in this "
                           f"configuration, so there is nothing to compare. Add `{paper.GPU}: {{}}` under gpus in "
                           "config.yaml to include it."}
    if set(pair["stage"]) != set(STAGES):
        return {**base, "available": False,
                "message": "The paper's Table 1 covers prefill and decode; this configuration runs only "
                           f"{', '.join(sorted(set(pair['stage'])))}."}
    if not paper.scenario_matches(pair):
        wanted = ", ".join(f"{k} {v}" for k, v in paper.SCENARIO.items())
        return {**base, "available": False,
                "message": f"The paper's Table 1 uses {wanted}; this configuration's scenario differs, so its "
                           "numbers are not comparable row by row. Run with the default scenario to see the "
                           "comparison."}
    sections = paper.comparison(pair)
    matches = sum(s["n_match"] for s in sections)
    total = sum(len(s["rows"]) for s in sections)
    unexplained = sum(s["n_unexplained"] for s in sections)
    note = (f"{matches} of {total} rows match the paper exactly; every other difference is explained below"
            if not unexplained else f"{matches} of {total} rows match; {unexplained} differences are unexplained")
    return {**base, "available": True, "message": "", "sections": sections, "note": note + "."}


def model_context(model: str, tables: dict[str, pd.DataFrame], specs: dict, manifest: list[dict],
                  figures_href: str) -> dict:
    """Everything the model report shows, for one model across the configured GPUs and stages."""
    gpus_all = accelerators(specs)
    scenario = specs["scenario"]
    spec = specs["models"][model]
    ops = tables["ops"][tables["ops"]["model"] == model]
    totals = tables["totals"][tables["totals"]["model"] == model]
    treatments = tables["treatments"][tables["treatments"]["model"] == model]
    sweeps = tables["sweeps"][tables["sweeps"]["model"] == model]
    gpus = {k: g for k, g in gpus_all.items() if k in set(totals["gpu"])}
    stages = [s for s in STAGES if s in set(totals["stage"])]
    any_total = totals.iloc[0]
    facts = [
        ("parameters", f"{units.count(any_total['total_params'])} total, {units.count(any_total['active_params'])} "
                       "active per token"),
        ("weights", f"{units.nbytes(any_total['weight_bytes'])} at {scenario['weight_dtype']}"),
        ("layers", str(spec["n_layers"])), ("hidden size", str(spec["hidden"])),
        ("attention heads", f"{spec['n_heads']} query, {spec['n_kv_heads']} KV, head dim {spec['head_dim']}"),
        ("vocabulary", str(spec["vocab"])),
    ]
    if spec.get("n_experts"):
        facts.append(("experts", f"{spec['n_experts']} routed, top-{spec['top_k']}, "
                                 f"{spec.get('n_shared_experts', 0)} shared"))
    gpu_sections = []
    for key, gpu in gpus.items():
        stage_sections = []
        for stage in stages:
            select = (lambda df: df[(df["gpu"] == key) & (df["stage"] == stage)])
            total = select(totals).iloc[0]
            stage_sections.append(stage_section(
                stage, total, select(ops), select(treatments), select(sweeps),
                totals[totals["stage"] == stage], gpu, gpus, scenario))
        footprint_row = totals[(totals["gpu"] == key)].set_index("stage").loc[stages[-1]]
        gpu_sections.append({
            "key": key, "name": gpu.name, "anchor": f"gpu-{key}",
            "roofline": figure_entry(manifest, figures_href, "roofline", (
                f"Roofline of {spec['name']} on {gpu.name}: each operator of "
                f"{' and '.join(stages)} at its arithmetic intensity and attainable performance; solid lines: "
                f"memory bandwidth and the {text.gemm_peak(gpu, scenario)[0]} peak, dashed: other dtypes' peaks, "
                "dotted: the ridge."), gpu=key),
            "batch_sweep": figure_entry(manifest, figures_href, "batch_sweep", (
                f"Decode on {gpu.name} versus batch size: time per output token and throughput; the dashed line "
                "marks the critical batch, the shaded region the batches whose weights and KV cache do not fit."),
                gpu=key, stage="decode"),
            "footprint": text.footprint_sentence(footprint_row, gpu),
            "fits": bool(footprint_row["fits"]),
            "stages": stage_sections,
        })
    figures = [f for f in (
        figure_entry(manifest, figures_href, "time_breakdown",
                     "Where the time goes: per GPU and stage, time by operator class; hatched parts are "
                     "compute-bound, solid parts memory-bound."),
        *(figure_entry(manifest, figures_href, "cross_gpu",
                       f"{stage.capitalize()} operators on every configured GPU (colour = GPU): which operators "
                       "cross the ridge on which device.", stage=stage) for stage in stages),
        figure_entry(manifest, figures_href, "seq_sweep",
                     "Attention versus sequence length: the arithmetic intensity of attention and its share of the "
                     "stage time."),
    ) if f is not None]
    context = {
        "page": "model", "model": model, "model_name": spec["name"],
        "header": title_block(specs, f"Roofline report: {spec['name']}",
                              f"{plural(len(gpus), 'GPU')}, {', '.join(stages)}"),
        "facts": facts,
        "summary": text.executive_summary(spec["name"], totals, treatments, gpus, scenario),
        "hardware": hardware_table(gpus),
        "figures": figures,
        "gpus": gpu_sections,
        "appendix": appendix(model, tables, specs),
        "caveats": list(CAVEATS),
    }
    check_context(context)
    return context


def summary_context(tables: dict[str, pd.DataFrame], specs: dict) -> dict:
    """The one-page matrix model × GPU: TTFT, TPOT, tokens/s, memory-bound share per stage, fit."""
    totals = tables["totals"]
    gpus = accelerators(specs)
    groups = []
    for model, spec in specs["models"].items():
        mine = totals[totals["model"] == model]
        rows = []
        for key in gpus:
            here = mine[mine["gpu"] == key].set_index("stage")
            if here.empty:
                continue
            get = (lambda stage, column: here.loc[stage, column] if stage in here.index else math.nan)
            rows.append({
                "gpu": gpus[key].name, "gpu_key": key,
                "ttft": units.seconds(get("prefill", "ttft_s")),
                "tpot": units.seconds(get("decode", "tpot_s")),
                "tokens_per_s": units.sig(get("decode", "tokens_per_s")),
                "prefill_memory": units.percent(get("prefill", "memory_bound_share")),
                "decode_memory": units.percent(get("decode", "memory_bound_share")),
                "footprint": units.nbytes(here["footprint_bytes"].max()),
                "fits": bool(here["fits"].all()),
            })
        if rows:
            groups.append({"model": model, "name": spec["name"], "rows": rows, "span": len(rows),
                           "href": f"{model}.html"})
    context = {
        "page": "summary",
        "header": title_block(specs, "Roofline summary",
                              f"{plural(len(groups), 'model')} × {plural(len(gpus), 'GPU')}"),
        "groups": groups,
        "caveats": [CAVEATS[0], CAVEATS[1]],
    }
    check_context(context)
    return context


def index_context(specs: dict, manifests: dict[str, list[dict]]) -> dict:
    """Links to the summary, each model report and each figure."""
    models = []
    for model, spec in specs["models"].items():
        figures = [{"href": f"figures/{model}/{entry['png']}", "svg": f"figures/{model}/{entry['svg']}",
                    "label": entry["kind"].replace("_", " ") + "".join(
                        f" · {entry[k]}" for k in ("gpu", "stage") if entry.get(k))}
                   for entry in manifests.get(model, [])]
        models.append({"model": model, "name": spec["name"], "html": f"{model}.html", "pdf": f"{model}.pdf",
                       "figures": figures})
    gpus = accelerators(specs)
    tables = [{"href": f"../results/{name}", "label": name, "what": what} for name, what in RESULT_FILES]
    context = {
        "page": "index",
        "tables": tables,
        "header": title_block(specs, "Roofline reports",
                              f"{plural(len(models), 'model')} × {plural(len(gpus), 'GPU')}"),
        "models": models,
        "gpus": [{"key": k, "name": g.name} for k, g in gpus.items()],
    }
    check_context(context)
    return context


def check_context(value, path: str = "context") -> None:
    """Raise ValueError naming the first NaN or raw float in the context (every number must be formatted)."""
    if isinstance(value, float):
        raise ValueError(f"{path} holds the unformatted number {value!r}" if not math.isnan(value)
                         else f"{path} is NaN")
    if isinstance(value, dict):
        for key, item in value.items():
            check_context(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_context(item, f"{path}[{i}]")
    elif isinstance(value, str) and ("nan" in value.split() or "NaN" in value):
        raise ValueError(f"{path} shows a NaN: {value!r}")
