"""One context dict per page, built from the tidy tables and results/specs.json; HTML and PDF render from it.

Every value a template shows is a ready string (units applied here); the templates only loop and test flags.
`check_context` refuses a context that still holds a NaN or a float, so a missing number cannot reach the page.
"""
from __future__ import annotations

import dataclasses
import math
import os
from datetime import datetime, timezone

import pandas as pd

from ..display import weights_label
from ..engine.dtypes import DTYPE_BYTES, PEAK_DTYPES
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec, kv_elements_per_token
from ..engine.scenario import STAGES, scenario_for_model
from . import calibration, decision, matrix, paper, text, units

CAVEATS = (
    "A roofline bound is a lower bound on time: real kernels reach 60-90% of peak bandwidth and less of peak FLOP/s, "
    "and each kernel pays a launch; the model reports' expected times add both back.",
    "Operators do not overlap: each operator's time is the slower of its compute and its memory time, and the "
    "stage time is their sum.",
    "Bytes are compulsory DRAM traffic of unfused kernels (inputs read once, outputs written once); caches, tiling "
    "re-reads and fusion inside a framework change them.",
    "Peaks are dense datasheet values; rows flagged as estimates in the hardware table were derived rather than "
    "printed by the vendor.",
    "Several devices: rows are one device's share; collectives (ring all-reduce, all-gather, all-to-all) run at the "
    "link's datasheet bandwidth plus a latency each, not overlapped with computation; NVLS and offloading are not "
    "modelled; pipeline stages run without micro-batching. A setup that does not fit is timed as if it did and "
    "marked ✗.",
)


#: the pipeline's result files (paths fixed by the file contract), named by the index
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


#: what the hash in a page's header digests: the grid-wide results/specs.json (summary, index) or a model report's
#: own inputs, results/models/{model}/specs.json (so that editing another model leaves that report unchanged)
HASH_NAMES = {"config": ("config hash", "SHA-256 of the resolved configuration (results/specs.json)"),
              "inputs": ("model inputs hash", "SHA-256 of this report's inputs (this model, every GPU, the scenario "
                                              "and the stages: results/models/{model}/specs.json); the config hash "
                                              "of the whole grid is in the summary")}


def title_block(specs: dict, title: str, subtitle: str, hash_kind: str = "config") -> dict:
    when = generated_at()
    scenario = specs["scenario"]
    hash_name, hash_what = HASH_NAMES[hash_kind]
    return {
        "title": title, "subtitle": subtitle, "date": when.strftime("%Y-%m-%d"),
        "hash_name": hash_name, "hash_what": hash_what,
        "config_hash": specs["config_sha256"][:12], "config_hash_full": specs["config_sha256"],
        "scenario": [
            ("batch", str(scenario["batch"])), ("sequence length", f"{scenario['seq_len']} tokens"),
            ("weights", weights_label(scenario)), ("activations", scenario["act_dtype"]),
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
        rows.append({"key": key, "name": gpu.name, "vendor": gpu.vendor, "memory": units.capacity(gpu.memory_bytes),
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
            "metric": "throughput" if r.treatment == "batching" else (
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
                     "bound": text.bound_phrase(float(row["memory_bound_share"])),
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


def batch_sweep_caption(sweeps: pd.DataFrame, gpu: Accelerator) -> str:
    """The batch-sweep caption, saying only what that figure shows (the dashed line exists only when the critical
    batch falls inside the sweep; the shading only when some batch does not fit)."""
    rows = sweeps[(sweeps["sweep"] == "batch") & (sweeps["stage"] == "decode")]
    caption = f"Decode on {gpu.name} versus batch size: time per output token and throughput"
    if rows.empty:
        return caption + "."
    crit = float(rows["critical_batch"].iloc[0])
    if not math.isfinite(crit):
        caption += "; the weight GEMMs never reach the ridge"
    elif rows["batch"].min() <= crit <= rows["batch"].max():
        caption += f"; the dashed line marks the critical batch ({units.integer(crit)})"
    else:
        caption += f"; the critical batch ({units.integer(crit)}) lies beyond the sweep"
    if not rows["fits"].astype(bool).all():
        caption += "; the shaded region holds the batches whose weights and KV cache do not fit"
    return caption + "."


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
                    (f"expected ({total['estimate']})", units.seconds(total["tpot_expected_s"])),
                    ("throughput", units.tokens_per_s(total["tokens_per_s"]))]
    else:
        diagnosis = text.diagnose_prefill(total, ops, gpu, scenario)
        headline = [("time to first token", units.seconds(total["ttft_s"])),
                    (f"expected ({total['estimate']})", units.seconds(total["ttft_expected_s"])),
                    ("throughput", units.tokens_per_s(total["tokens_per_s"]))]
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


def appendix(model: str, specs: dict) -> dict:
    """The Table 1 comparison in the paper model's report, computed by the engine in the paper's own case
    (paper.paper_case_ops: catalog model and GPU, batch 1, 2048 tokens, fp16, eager attention) whatever the
    configuration; another model's report links to it when the paper model is configured."""
    base = {"model": paper.MODEL, "gpu": paper.GPU, "sections": [], "note": "", "link": None}
    if model != paper.MODEL:
        if paper.MODEL in specs["models"]:
            return {**base, "available": False,
                    "message": f"The comparison with the paper's Table 1 ({paper.MODEL} on {paper.GPU}) is in the "
                               "appendix of the",
                    "link": {"href": f"{paper.MODEL}.html#appendix", "pdf": f"{paper.MODEL}.pdf",
                             "text": f"{paper.MODEL} report"}}
        return {**base, "available": False,
                "message": f"The paper's Table 1 describes {paper.MODEL} on {paper.GPU}; add `{paper.MODEL}: {{}}` "
                           "under models in config.yaml to see the comparison in its report."}
    sections = paper.comparison(paper.paper_case_ops())
    matches = sum(s["n_match"] for s in sections)
    total = sum(len(s["rows"]) for s in sections)
    unexplained = sum(s["n_unexplained"] for s in sections)
    note = (f"{matches} of {total} rows match the paper exactly; every other difference is explained below"
            if not unexplained else f"{matches} of {total} rows match; {unexplained} differences are unexplained")
    return {**base, "available": True, "message": "", "sections": sections, "note": note + "."}


def model_spec(entry: dict) -> ModelSpec:
    """The ModelSpec of a results/specs.json entry (keys the dataclass does not know are ignored)."""
    known = {f.name for f in dataclasses.fields(ModelSpec)}
    return ModelSpec(**{k: v for k, v in entry.items() if k in known})


def attention_facts(m: ModelSpec, scenario: dict) -> list[tuple[str, str]]:
    """Attention shape and the KV cache it stores per token (MLA: the latent, or decompressed per-head K and V)."""
    per_layer = kv_elements_per_token(m, scenario["mla_mode"])
    per_token = units.nbytes(per_layer * m.n_layers * DTYPE_BYTES[scenario["kv_dtype"]])
    over = f"{per_token} per token over {m.n_layers} layers at {scenario['kv_dtype']}"
    if m.is_mla:
        q = f"; query latent {m.q_lora_rank:,}" if m.q_lora_rank else ""
        attention = (f"multi-head latent attention (MLA), {m.n_heads} heads; q/k head dim {m.qk_head_dim} "
                     f"({m.qk_nope_head_dim} without RoPE + {m.qk_rope_head_dim} RoPE), v head dim {m.v_head_dim}{q}")
        if scenario["mla_mode"] == "decompressed":
            kv = (f"{m.n_heads} heads × ({m.qk_head_dim} + {m.v_head_dim}) = {per_layer:,} elements per token per "
                  f"layer (MLA {scenario['mla_mode']}: per-head K and V); {over}")
        else:
            kv = (f"latent {m.kv_lora_rank} + RoPE key {m.qk_rope_head_dim} = {per_layer:,} elements per token per "
                  f"layer (MLA {scenario['mla_mode']}); {over}")
        return [("attention", attention), ("KV cache", kv)]
    kind = "MHA" if m.n_kv_heads == m.n_heads else "MQA" if m.n_kv_heads == 1 else "GQA"
    attention = f"{m.n_heads} query heads, {m.n_kv_heads} KV heads ({kind}), head dim {m.head_dim}"
    if m.sliding_window and m.sliding_layers:
        attention += f"; sliding window of {m.sliding_window:,} tokens on {m.sliding_layers} of {m.n_layers} layers"
    kv = f"2 × {m.n_kv_heads} KV heads × {m.head_dim} = {per_layer:,} elements per token per layer; {over}"
    if m.sliding_window and m.sliding_layers:
        kv += f" (windowed layers keep at most {m.sliding_window:,} tokens)"
    return [("attention", attention), ("KV cache", kv)]


def model_facts(m: ModelSpec, scenario: dict, total: pd.Series) -> list[tuple[str, str]]:
    """The model facts table: size, shape, attention and KV cache, and (MoE) the experts."""
    if m.is_moe:
        params = (f"{units.count(total['total_params'])} total, {units.count(total['active_params'])} active per "
                  "token")
        layers = f"{m.n_layers} ({m.n_dense_layers} dense, {m.n_moe_layers} MoE)" if m.n_dense_layers else \
            f"{m.n_layers} (all MoE)"
    else:
        params, layers = units.count(total["total_params"]), str(m.n_layers)
    facts = [("parameters", params),
             ("weights", f"{units.nbytes(total['weight_bytes'])} at {weights_label(scenario)}"),
             ("layers", layers), ("hidden size", f"{m.hidden:,}"), *attention_facts(m, scenario)]
    if m.is_moe:
        shared = f" + {m.n_shared_experts} shared" if m.n_shared_experts else ""
        dense = f"; dense MLP width {m.intermediate:,} in the {m.n_dense_layers} dense layers" if m.n_dense_layers \
            else ""
        facts.append(("experts", f"{m.n_experts} routed (top-{m.top_k} per token){shared}, expert width "
                                 f"{m.moe_intermediate:,}{dense}; routing {scenario['expert_routing']}"))
    else:
        facts.append(("MLP", f"width {m.intermediate:,} ({m.mlp_type}, {m.activation})"))
    facts.append(("vocabulary", f"{m.vocab:,}"))
    return facts


def key_figures(manifest: list[dict], href: str, stages: list[str]) -> list[dict]:
    """The figures of the printed report (and the wiki page): where the time goes, the operators of each stage on
    every GPU, attention versus sequence length. Per-GPU figures stay in the HTML's details."""
    return [f for f in (
        figure_entry(manifest, href, "time_breakdown",
                     "Where the time goes: per GPU and stage, time by operator class; hatched parts are "
                     "compute-bound, solid parts memory-bound; a greyed bar marked ✗ does not fit on that GPU."),
        *(figure_entry(manifest, href, "cross_gpu",
                       f"{stage.capitalize()} operators on every configured GPU (colour = GPU): which operators "
                       "cross the ridge on which device.", stage=stage) for stage in stages),
        figure_entry(manifest, href, "seq_sweep",
                     "Attention versus sequence length: the arithmetic intensity of attention and its share of the "
                     "stage time."),
    ) if f is not None]


def gpu_detail(key: str, gpu: Accelerator, stages: list[str], spec: dict, tables: dict[str, pd.DataFrame],
               gpus: dict[str, Accelerator], scenario: dict, manifest: list[dict], figures_href: str) -> dict:
    """One GPU's detail (HTML only, collapsed): footprint, roofline, per stage the diagnosis, the operators with
    their attainable rate, every treatment and the other GPUs, and the batch sweep."""
    ops, totals, treatments, sweeps = (tables[name] for name in ("ops", "totals", "treatments", "sweeps"))
    stage_sections = []
    for stage in stages:
        select = (lambda df: df[(df["gpu"] == key) & (df["stage"] == stage)])
        total = select(totals).iloc[0]
        section = stage_section(stage, total, select(ops), select(treatments), select(sweeps),
                                totals[totals["stage"] == stage], gpu, gpus, scenario)
        stage_sections.append({**section, "misfit": decision.misfit_text(total)})
    mine = totals[totals["gpu"] == key].set_index("stage").loc[stages]
    return {
        "key": key, "name": gpu.name, "anchor": f"gpu-{key}",
        "roofline": figure_entry(manifest, figures_href, "roofline", (
            f"Roofline of {spec['name']} on {gpu.name}: each operator of "
            f"{' and '.join(stages)} at its arithmetic intensity and attainable performance; solid lines: "
            f"memory bandwidth and the {text.gemm_peak(gpu, scenario)[0]} peak, dashed: other dtypes' peaks, "
            "dotted: the ridge."), gpu=key),
        "batch_sweep": figure_entry(manifest, figures_href, "batch_sweep",
                                    batch_sweep_caption(sweeps[sweeps["gpu"] == key], gpu), gpu=key,
                                    stage="decode"),
        "footprint": footprint_table(mine, gpu),
        "footprint_note": text.footprint_note(mine, ops[ops["gpu"] == key],
                                              treatments[treatments["gpu"] == key], gpu),
        "fits": bool(mine["fits"].astype(bool).all()),
        "stages": stage_sections,
    }


def model_context(model: str, tables: dict[str, pd.DataFrame], specs: dict, manifest: list[dict],
                  figures_href: str) -> dict:
    """Everything the model report shows, for one model across the configured GPUs and stages: page 1 the
    decision (sentences and one table per stage), then operators × GPUs and treatments × GPUs per stage, the
    hardware, the key figures, the Table 1 appendix and the caveats; per-GPU detail for the HTML."""
    gpus_all = accelerators(specs)
    spec = specs["models"][model]
    scenario = scenario_for_model(specs["scenario"], spec)  # weight_dtype 'native' resolved for this model
    plans = tables.get("plans")  # the deployment search (config section `plan`), when configured
    mine = {name: frame[frame["model"] == model] for name, frame in tables.items() if name != "plans"}
    totals, treatments, ops = mine["totals"], mine["treatments"], mine["ops"]
    gpus = {k: g for k, g in gpus_all.items() if k in set(totals["gpu"])}
    stages = [s for s in STAGES if s in set(totals["stage"])]
    matrices = []
    for stage in stages:
        stage_totals = totals[totals["stage"] == stage]
        matrices.append({
            "stage": stage, "title": stage.capitalize(),
            "operators": matrix.operator_matrix(ops[ops["stage"] == stage], stage_totals, gpus),
            "treatments": matrix.treatment_matrix(treatments[treatments["stage"] == stage], stage_totals, gpus),
        })
    context = {
        "page": "model", "model": model, "model_name": spec["name"],
        "header": title_block({**specs, "scenario": scenario}, f"Roofline report: {spec['name']}",
                              f"{plural(len(gpus), 'GPU')}, {', '.join(stages)}", hash_kind="inputs"),
        "facts": model_facts(model_spec(spec), scenario, totals.iloc[0]),
        "summary": text.executive_summary(spec["name"], totals, treatments, gpus, scenario, ops),
        "decision": decision.decision_tables(totals, treatments, gpus, stages),
        "plans": decision.recommended_plans(plans, gpus_all) if plans is not None else None,
        "matrices": matrices,
        "hardware": hardware_table(gpus),
        "figures": key_figures(manifest, figures_href, stages),
        "gpus": [gpu_detail(key, gpu, stages, spec, mine, gpus, scenario, manifest, figures_href)
                 for key, gpu in gpus.items()],
        "appendix": appendix(model, specs),
        "caveats": [*CAVEATS, calibration.caveat(gpus)],
    }
    check_context(context, user=user_text(specs))
    return context


#: a part of a model name longer than this may break anywhere in the summary (else it would widen the column)
NAME_PART_MAX = 24
#: a GPU name up to this long stays on one line in the summary; a longer one wraps (and breaks anywhere)
NAME_NOWRAP_MAX = 40


def name_parts(name: str) -> list[dict]:
    """A model name cut after each '/' ('meta-llama/', 'Llama-2-7b-hf'): the summary lets a line break only there,
    never at a hyphen inside a part, unless a part is longer than NAME_PART_MAX characters (it may then break
    anywhere: {"text": part, "nowrap": False})."""
    parts = name.split("/")
    parts = [part + "/" for part in parts[:-1]] + [parts[-1]]
    return [{"text": part, "nowrap": len(part) <= NAME_PART_MAX} for part in parts]


def largest_footprint(stage_totals: pd.DataFrame) -> dict:
    """The summary's footprint cells of one (model, GPU): the largest stage footprint with its stage named, and
    the fit: 'yes' (every stage fits), 'no' (none does) or 'no (prefill)' naming the stages that do not fit (rows
    indexed by stage)."""
    largest = stage_totals["footprint_bytes"].idxmax()
    misfit = [stage for stage, ok in stage_totals["fits"].astype(bool).items() if not ok]
    return {"footprint": units.nbytes(stage_totals.loc[largest, "footprint_bytes"]),
            "footprint_stage": str(largest) if len(stage_totals) > 1 else "",
            "fits": not misfit,
            "fits_text": "yes" if not misfit else "no" if len(misfit) == len(stage_totals)
            else f"no ({', '.join(misfit)})"}


#: the summary's columns: (key, header, numeric, droppable); a droppable column whose cells all read the same
#: carries no information and becomes one line under the table instead
SUMMARY_COLUMNS = (
    ("ttft", "Time to first token (bound)", True, False), ("tpot", "Time per output token (bound)", True, False),
    ("tokens_per_s", "Decode tokens/s (bound)", True, False), ("max_throughput", "Max decode tokens/s (batch)", True, True),
    ("prefill_bound", "Prefill bound", False, True), ("decode_bound", "Decode bound", False, True),
    ("prefill_lever", "Best prefill lever", False, True), ("lever", "Best decode lever", False, True),
    ("devices", "Devices needed", True, True), ("footprint", "Footprint", True, True),
)


def summary_cells(here: pd.DataFrame, treatments: pd.DataFrame) -> dict[str, dict]:
    """The summary's cells of one (model, GPU) (totals and treatments indexed/filtered to it); a time of a stage
    that does not fit is marked."""
    def stage_cell(stage: str, make) -> dict:
        if stage not in here.index:
            return decision.cell(units.DASH)
        return decision.cell(make(here.loc[stage]), decision.misfit_text(here.loc[stage]))

    def bound(stage: str) -> dict:  # the words of bound_phrase without the '-bound' the header already says
        return decision.cell(text.bound_phrase(here.loc[stage, "memory_bound_share"]).removesuffix("-bound")
                             if stage in here.index else units.DASH)

    def lever(stage: str) -> dict:
        return decision.cell(decision.best_lever(treatments[treatments["stage"] == stage])["text"]
                             if stage in here.index else units.DASH)

    decode = here.loc["decode"] if "decode" in here.index else None
    worst = here.loc[here["footprint_bytes"].idxmax()]
    misfit = [stage for stage, ok in here["fits"].astype(bool).items() if not ok]
    fit = largest_footprint(here)
    return {
        "ttft": stage_cell("prefill", lambda r: units.seconds(r["ttft_s"])),
        "tpot": stage_cell("decode", lambda r: units.seconds(r["tpot_s"])),
        "tokens_per_s": stage_cell("decode", lambda r: units.sig(r["tokens_per_s"])),
        "max_throughput": (decision.max_throughput(treatments[treatments["stage"] == "decode"], decode, short=True) if decode is not None else decision.cell(units.DASH)),
        "prefill_bound": bound("prefill"), "decode_bound": bound("decode"),
        "lever": lever("decode"), "prefill_lever": lever("prefill"),
        "devices": decision.cell(decision.devices_needed(worst) + (f" ({', '.join(misfit)})" if misfit and
                                 len(misfit) < len(here) else ""), css="" if fit["fits"] else "misfit"),
        "footprint": decision.cell(fit["footprint"] + (f" ({fit['footprint_stage']})" if fit["footprint_stage"]
                                                       else "")),
    }


def summary_context(tables: dict[str, pd.DataFrame], specs: dict) -> dict:
    """The one-page matrix model × GPU: TTFT, TPOT, tokens/s and the decision columns (bound, best lever, devices
    needed, max throughput, fit); a column that reads the same in every row is dropped and stated once."""
    totals = tables["totals"]
    treatments = tables.get("treatments", pd.DataFrame(columns=["model", "gpu", "stage", "treatment"]))
    gpus = accelerators(specs)
    groups = []
    for model, spec in specs["models"].items():
        mine = totals[totals["model"] == model]
        rows = []
        for key in gpus:
            here = mine[mine["gpu"] == key].set_index("stage")
            if here.empty:
                continue
            cells = summary_cells(here, treatments[(treatments["model"] == model) & (treatments["gpu"] == key)])
            rows.append({"gpu": gpus[key].name, "gpu_key": key, "gpu_nowrap": len(gpus[key].name) <= NAME_NOWRAP_MAX,
                         "cells": cells})
        if rows:
            groups.append({"model": model, "name": spec["name"], "name_parts": name_parts(spec["name"]),
                           "rows": rows, "span": len(rows), "href": f"{model}.html"})
    everything = [row["cells"] for group in groups for row in group["rows"]]
    columns, constant = [], []
    for key, header, numeric, droppable in SUMMARY_COLUMNS:
        values = {cells[key]["text"] for cells in everything}
        if droppable and len(everything) > 1 and len(values) == 1:
            constant.append(f"{header}: {values.pop()}")
        elif values != {units.DASH}:
            columns.append({"key": key, "header": header, "numeric": numeric})
    context = {
        "page": "summary",
        "header": title_block(specs, "Roofline summary",
                              f"{plural(len(groups), 'model')} × {plural(len(gpus), 'GPU')}"),
        "groups": groups, "columns": columns,
        "constant": ("The same in every row: " + "; ".join(constant) + ".") if constant else "",
        "caveats": [CAVEATS[0], CAVEATS[1]],
    }
    check_context(context, user=user_text(specs))
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
    # named, not linked: they live in results/, beside reports/, and a link out of reports/ breaks as soon as
    # reports/ is copied alone (a wiki, a web server)
    tables = [{"path": f"results/{name}", "what": what} for name, what in RESULT_FILES]
    context = {
        "page": "index",
        "tables": tables,
        "header": title_block(specs, "Roofline reports",
                              f"{plural(len(models), 'model')} × {plural(len(gpus), 'GPU')}"),
        "models": models,
        "gpus": [{"key": k, "name": g.name} for k, g in gpus.items()],
    }
    check_context(context, user=user_text(specs))
    return context


def user_text(specs: dict) -> tuple[str, ...]:
    """Every text the user wrote into the specs (keys, names, vendors, sources; config.json's _name_or_path) and the
    '/'-parts a name is shown in (name_parts), longest first: check_context masks them, since "NaNoLlama" or "H100
    NaN edition" is a name, not a missing number."""
    texts = set()
    for section in ("models", "gpus"):
        for key, entry in specs.get(section, {}).items():
            texts.add(key)
            texts.update(value for value in entry.values() if isinstance(value, str) and value)
            texts.update(part["text"] for part in name_parts(str(entry.get("name", ""))) if part["text"])
    return tuple(sorted(texts, key=len, reverse=True))


def check_context(value, path: str = "context", user: tuple[str, ...] = ()) -> None:
    """Raise ValueError naming the first NaN or raw float in the context (every number must be formatted).

    The check is for numbers: text the user wrote (`user`, see user_text) is masked out of each string first."""
    if isinstance(value, float):
        raise ValueError(f"{path} holds the unformatted number {value!r}" if not math.isnan(value)
                         else f"{path} is NaN")
    if isinstance(value, dict):
        for key, item in value.items():
            check_context(item, f"{path}.{key}", user)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_context(item, f"{path}[{i}]", user)
    elif isinstance(value, str):
        shown = value
        for written in user:  # the user's own words may hold "nan" (NaNoLlama); the guard checks numbers
            shown = shown.replace(written, " ")
        if "nan" in shown.split() or "NaN" in shown:
            raise ValueError(f"{path} shows a NaN: {value!r}")
