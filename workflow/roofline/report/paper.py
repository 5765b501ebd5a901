"""Appendix: our Llama-2-7b / RTX A6000 operators next to Table 1 of "LLM Inference Unveiled: Survey and Roofline
Model Insights" (LLM-Viewer; batch 1, 2048 tokens, fp16, eager attention), each difference measured and explained.
Our rows are computed in that scenario whatever scenario the grid runs (the defaults use flash attention).

The paper's numbers ship as package data (data/table1_llama2-7b_a6000.csv). Differences are detected from the
numbers; `REASONS` only supplies the words for the differences we make on purpose (README, "How our numbers differ
from the paper"). A difference without a known reason is reported as unexplained rather than hidden.
"""
from __future__ import annotations

import csv
from importlib import resources

import pandas as pd

from ..engine.analysis import operator_table
from ..engine.hardware import get_accelerator
from ..engine.models import get_model
from ..engine.scenario import STAGES, Scenario
from . import units

MODEL, GPU = "llama-2-7b", "rtx-a6000"
#: the paper's scenario (values of the SCENARIO_COLUMNS)
SCENARIO = {"batch": 1, "seq_len": 2048, "weight_dtype": "fp16", "act_dtype": "fp16", "kv_dtype": "fp16",
            "attention": "eager", "logits": "last"}
#: the paper's operator names that differ from ours
PAPER_NAMES = {"out_proj": "o_proj"}
#: relative tolerance below which two numbers agree (the paper's AIs are printed to 4 digits)
TOLERANCE = 1e-6

#: why an operator differs, when it does: (what differs, reason)
REASONS = {
    "attn_add": "x + r reads both operands and writes one; the paper counts one read and the write",
    "mlp_add": "x + r reads both operands and writes one; the paper counts one read and the write",
    "mlp_act": "SwiGLU, silu(gate) × up, on the intermediate size 11,008 (two reads, one write, 5 FLOPs each); "
               "the paper uses the hidden size 4,096",
    "lm_head": "2 FLOPs per multiply-add, as for every GEMM; the paper counts 1",
    "attn_norm": "we count the norm's scale vector (4,096 fp16 values, 8.2 kB)",
    "mlp_norm": "we count the norm's scale vector (4,096 fp16 values, 8.2 kB)",
    "qk_matmul": "the new token attends to 2,049 keys (cache and itself); the paper 2,048",
    "sv_matmul": "the new token attends to 2,049 values (cache and itself); the paper 2,048",
    "softmax": "the new token's scores cover 2,049 keys; the paper 2,048",
}
EXTRA_REASON = "a row we add: a kernel the paper's table omits"


def paper_case_ops() -> pd.DataFrame:
    """Our operator rows of the paper's case, computed by the engine: the catalog's MODEL on the catalog's GPU in
    the paper's SCENARIO, both stages, whatever the configured scenario and GPUs are."""
    model, gpu = get_model(MODEL), get_accelerator(GPU)
    scenario = Scenario().with_(**SCENARIO)  # every field the paper fixes is set, whatever the defaults become
    return pd.DataFrame([row for stage in STAGES for row in operator_table(model, gpu, stage, scenario)])


def paper_rows() -> list[dict]:
    with resources.files("roofline").joinpath("data/table1_llama2-7b_a6000.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def _ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else float("inf")


def _times(ratio: float) -> str:
    """A ratio, with enough digits to show a small difference: 2049/2048 -> '1.0005×'."""
    return f"{ratio:.4f}×" if abs(ratio - 1) < 0.01 else units.times(ratio)


def _bound(theirs: str, ours: str) -> str:
    return ours if theirs == ours else f"{theirs} → {ours}"


def _agree(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= TOLERANCE * max(abs(theirs), 1.0)


def comparison(ops: pd.DataFrame) -> list[dict]:
    """One display row per (stage, operator): paper vs ours, ratios, agreement and the reason for a difference.

    `ops` holds our rows for llama-2-7b on rtx-a6000 (both stages) in the paper's scenario (paper_ops)."""
    ours = {(r.stage, r.op): r for r in ops.itertuples()}
    sections = []
    for stage in ("prefill", "decode"):
        rows, seen = [], set()
        for paper in paper_rows():
            op = PAPER_NAMES.get(paper["op"], paper["op"])
            mine = ours.get((stage, op))
            if mine is None:
                continue
            seen.add(op)
            p_flops, p_bytes = float(paper[f"{stage}_flops"]), float(paper[f"{stage}_bytes"])
            p_ai = float(paper[f"{stage}_intensity"])
            same = _agree(mine.flops, p_flops) and _agree(mine.bytes, p_bytes)
            ratios = {name: _times(_ratio(ours, theirs)) for name, ours, theirs in
                      (("FLOPs", mine.flops, p_flops), ("bytes", mine.bytes, p_bytes)) if not _agree(ours, theirs)}
            if len(ratios) == 2 and len(set(ratios.values())) == 1:  # one ratio for both: say it once
                ratios = {"FLOPs and bytes": ratios["FLOPs"]}
            differs = [f"{name} {ratio}" for name, ratio in ratios.items()]
            if same:
                why = "matches the paper"
            else:
                why = "; ".join(differs) + ": " + REASONS.get(op, "difference not explained")
            rows.append({
                "op": op + ("" if op == paper["op"] else f" (paper: {paper['op']})"),
                "paper_flops": units.flops(p_flops), "ours_flops": units.flops(mine.flops),
                "paper_bytes": units.nbytes(p_bytes), "ours_bytes": units.nbytes(mine.bytes),
                "paper_intensity": units.intensity(p_ai), "ours_intensity": units.intensity(mine.intensity),
                "bound": _bound(paper[f"{stage}_bound"], mine.bound),
                "matches": same, "explained": same or op in REASONS, "why": why,
            })
        for (row_stage, op), mine in ours.items():
            if row_stage == stage and op not in seen:
                rows.append({
                    "op": op, "paper_flops": units.DASH, "ours_flops": units.flops(mine.flops),
                    "paper_bytes": units.DASH, "ours_bytes": units.nbytes(mine.bytes),
                    "paper_intensity": units.DASH, "ours_intensity": units.intensity(mine.intensity),
                    "bound": mine.bound, "matches": False, "explained": True,
                    "why": EXTRA_REASON,
                })
        sections.append({"stage": stage, "title": stage.capitalize(), "rows": rows,
                         "n_match": sum(r["matches"] for r in rows),
                         "n_unexplained": sum(not r["explained"] for r in rows)})
    return sections


def appendix(model: str, specs: dict) -> dict:
    """The Table 1 comparison in the paper model's report, computed by the engine in the paper's own case
    (paper_case_ops: catalog model and GPU, batch 1, 2048 tokens, fp16, eager attention) whatever the
    configuration; another model's report links to it when the paper model is configured."""
    base = {"model": MODEL, "gpu": GPU, "sections": [], "note": "", "link": None}
    if model != MODEL:
        if MODEL in specs["models"]:
            name = specs["models"][MODEL].get("name") or MODEL  # as the reports name it, not its config key
            return {**base, "available": False,
                    "message": f"The comparison with the paper's Table 1 ({name} on an "
                               f"{get_accelerator(GPU).name}) is in the appendix of the",
                    "link": {"href": f"{MODEL}.html#appendix", "pdf": f"{MODEL}.pdf", "text": f"{name} report"}}
        return {**base, "available": False,
                "message": f"The paper's Table 1 describes {MODEL} on {GPU}; add `{MODEL}: {{}}` "
                           "under models in config.yaml to see the comparison in its report."}
    sections = comparison(paper_case_ops())
    matches = sum(s["n_match"] for s in sections)
    total = sum(len(s["rows"]) for s in sections)
    unexplained = sum(s["n_unexplained"] for s in sections)
    note = (f"{matches} of {total} rows match the paper exactly; every other difference is explained below"
            if not unexplained else f"{matches} of {total} rows match; {unexplained} differences are unexplained")
    return {**base, "available": True, "message": "", "sections": sections, "note": note + "."}
