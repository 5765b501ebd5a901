"""The summary's context: one matrix model × GPU with TTFT, TPOT, tokens/s and the decision columns (bound, best
lever, devices needed, max throughput, footprint); a column that reads the same in every row is stated once."""
from __future__ import annotations

import math

import pandas as pd

from . import decision, text, units
from .guard import check_context, user_text
from .page import CAVEATS, accelerators, name_parts, plural, title_block
from .served import summary_served

#: a GPU name up to this long stays on one line in the summary; a longer one wraps (and breaks anywhere)
NAME_NOWRAP_MAX = 40


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
    # the deployment's tokens/s, all its devices (page 1's decision table gives them per GPU)
    ("tokens_per_s", "Decode tokens/s, all devices (bound)", True, False),
    ("max_throughput", "Max decode tokens/s, all devices, bound (batch)", True, True),
    ("prefill_bound", "Prefill bound", False, True), ("decode_bound", "Decode bound", False, True),
    ("prefill_lever", "Best prefill lever", False, True), ("lever", "Best decode lever", False, True),
    ("devices", "Devices needed", True, True), ("footprint", "Footprint per device", True, True),
)

#: page 1 of the summary, one row per (model, deployment): (key, header, numeric). A column whose cells are all
#: dashes is left out, so a column fed by an optional table column appears only where it is known: the cost
#: (`cost_per_million_tokens_expected`, where a GPU is priced) here, the served TTFT/TPOT of the serving model beside
#: the times once it writes them.
DECISION_COLUMNS = (
    ("deployment", "Deployment (devices × GPU, plan)", False),
    ("ttft", "TTFT expected (bound)", True), ("tpot", "TPOT expected (bound)", True),
    ("per_gpu", "Decode tokens/s per GPU expected (bound)", True),
    ("cost", "USD per 1M tokens expected", True),
    ("bound", "Main bound: prefill / decode", False), ("footprint", "Footprint per device", True),
)
#: the optional totals column the cost cell shows (written where a GPU has a price)
COST_COLUMN = "cost_per_million_tokens_expected"


def summary_cells(here: pd.DataFrame, treatments: pd.DataFrame, reach: float = math.inf) -> dict[str, dict]:
    """The summary's cells of one (model, GPU) (totals and treatments indexed/filtered to it); a time of a stage
    that does not fit is marked."""
    def stage_cell(stage: str, make) -> dict:
        if stage not in here.index:
            return decision.cell(units.DASH)
        return decision.cell(make(here.loc[stage]), decision.misfit_text(here.loc[stage]))

    def bound(stage: str) -> dict:
        return decision.cell(bound_words(here, stage))

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
        "max_throughput": (decision.max_throughput(treatments[treatments["stage"] == "decode"], decode, short=True)
                           if decode is not None else decision.cell(units.DASH)),
        "prefill_bound": bound("prefill"), "decode_bound": bound("decode"),
        "lever": lever("decode"), "prefill_lever": lever("prefill"),
        "devices": decision.cell(decision.devices_needed(worst, reach) + (f" ({', '.join(misfit)})" if misfit and
                                 len(misfit) < len(here) else ""), css="" if fit["fits"] else "misfit"),
        "footprint": decision.cell(fit["footprint"] + (f" ({fit['footprint_stage']})" if fit["footprint_stage"]
                                                       else "")),
    }


def bound_words(here: pd.DataFrame, stage: str) -> str:
    """The words of step_bound for one stage of a (model, GPU)'s totals (indexed by stage) without the '-bound' a
    column header already says ('partly memory'); a dash where the stage is not configured."""
    return text.step_bound(here.loc[stage]).removesuffix("-bound") if stage in here.index else units.DASH


def expected_and_bound(row: pd.Series, expected: str, bound: str, fmt) -> str:
    """'5.51 ms (3.87 ms)': the expected value with the bound beside it (the bound alone when none is expected)."""
    if units.missing(row.get(expected)):
        return f"{fmt(row[bound])} (bound)"
    return f"{fmt(row[expected])}{decision.estimate_mark(row)} ({fmt(row[bound])})"


def decision_cells(here: pd.DataFrame) -> dict[str, dict]:
    """Page 1's cells of one (model, GPU) deployment (its totals indexed by stage): expected times with the bound
    beside them, decode tokens/s per GPU, the main bound per stage, the busiest device's footprint; a time of a
    stage that does not fit is marked."""
    first = here.iloc[0]
    devices = int(first["devices"])

    def stage_cell(stage: str, make) -> dict:
        if stage not in here.index:
            return decision.cell(units.DASH)
        return decision.cell(make(here.loc[stage]), decision.misfit_text(here.loc[stage]))

    def per_gpu(row: pd.Series) -> str:
        expected = units.sig(float(row["tokens_per_s_expected"]) / devices) if not units.missing(
            row.get("tokens_per_s_expected")) else units.DASH
        return f"{expected} ({units.sig(row['tokens_per_s_per_device'])})"

    def cost(row: pd.Series) -> str:
        value = row.get(COST_COLUMN)
        return units.DASH if units.missing(value) else f"${units.sig(float(value))}"

    # the roof each stage spends most of its time under, in the words of the appendix and the model reports
    # ('partly memory' where the share is under half: the totals' `bound` alone had said 'memory')
    bounds = [bound_words(here, stage) for stage in ("prefill", "decode")]
    fit = largest_footprint(here)
    return {
        "deployment": decision.cell(str(first["deployment"]), css="deployment" if len(str(first["deployment"]))
                                    <= NAME_NOWRAP_MAX else "name"),
        "ttft": stage_cell("prefill", lambda r: expected_and_bound(r, "ttft_expected_s", "ttft_s", units.seconds)),
        "tpot": stage_cell("decode", lambda r: expected_and_bound(r, "tpot_expected_s", "tpot_s", units.seconds)),
        "per_gpu": stage_cell("decode", per_gpu),
        "cost": stage_cell("decode", cost),
        "bound": decision.cell(" / ".join(bounds), css="nowrap"),
        "footprint": decision.cell(fit["footprint"], css="" if fit["fits"] else "misfit"),
    }


def decision_table(totals: pd.DataFrame, specs: dict, gpus: dict) -> dict:
    """Page 1: per model, one row per configured deployment, those that fit first, by expected TPOT (else TTFT)."""
    rows = []
    for model, spec in specs["models"].items():
        mine = []
        for key in gpus:
            here = totals[(totals["model"] == model) & (totals["gpu"] == key)].set_index("stage")
            if here.empty:
                continue
            order = here["tpot_expected_s"].dropna().min() if "decode" in here.index else here["ttft_s"].min()
            mine.append(((not bool(here["fits"].astype(bool).all()), float(order)),
                         {"model": model, "name": spec["name"], "name_parts": name_parts(spec["name"]),
                          "href": f"{model}.html", "pdf": f"{model}.pdf", "cells": decision_cells(here)}))
        mine.sort(key=lambda item: item[0])
        rows += [{**row, "first": i == 0} for i, (_, row) in enumerate(mine)]
    shown = [{"key": key, "header": units.unbroken_units(header), "numeric": numeric}
             for key, header, numeric in DECISION_COLUMNS
             if any(row["cells"][key]["text"] != units.DASH for row in rows)]
    mine = totals[totals["model"].isin(specs["models"]) & totals["gpu"].isin(list(gpus))]
    return {"rows": rows, "columns": shown, "marks": decision.estimate_note(mine.get("estimate", [])),
            "frameworks": frameworks_note(mine, gpus)}


def frameworks_note(totals: pd.DataFrame, gpus: dict) -> str:
    """'The expected times use the measured kernels of trtllm (H100 SXM5 80GB, H200 SXM 141GB); vllm (...).': which
    framework's measured kernels the single-step expected times use, each GPU's default or the configured one (a
    served table beside them uses its search's)."""
    if "framework" not in totals:
        return ""
    by_framework: dict[str, list[str]] = {}
    for key, gpu in gpus.items():
        names = {decision.framework_name(f) for f in totals.loc[totals["gpu"] == key, "framework"]} - {""}
        for name in sorted(names):
            by_framework.setdefault(name, []).append(gpu.name)
    if not by_framework:
        return ""
    return ("The expected times use the measured kernels of "
            + "; ".join(f"{name} ({', '.join(devices)})" for name, devices in by_framework.items()) + ".")


def summary_context(tables: dict[str, pd.DataFrame], specs: dict, plans: dict[str, pd.DataFrame] | None = None) -> dict:
    """The summary: each GPU's recommended deployment under load per model first (when `plans`, {model: plan
    table}, come from the serving model's search), then each model on each configured deployment, then the matrix
    model × GPU (TTFT, TPOT, tokens/s and the decision columns: bound, best lever, devices needed, max throughput,
    fit; a column that reads the same in every row is dropped and stated once)."""
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
            cells = summary_cells(here, treatments[(treatments["model"] == model) & (treatments["gpu"] == key)],
                                  gpus[key].reach)
            rows.append({"gpu": gpus[key].name, "gpu_key": key, "gpu_nowrap": len(gpus[key].name) <= NAME_NOWRAP_MAX,
                         "cells": cells})
        if rows:
            groups.append({"model": model, "name": spec["name"], "name_parts": name_parts(spec["name"]),
                           "rows": rows, "span": len(rows), "href": f"{model}.html",
                           "pdf": f"{model}.pdf"})
    everything = [row["cells"] for group in groups for row in group["rows"]]
    columns, constant = [], []
    for key, header, numeric, droppable in SUMMARY_COLUMNS:
        values = {cells[key]["text"] for cells in everything}
        if droppable and len(everything) > 1 and len(values) == 1:
            constant.append(f"{header}: {values.pop()}")
        elif values != {units.DASH}:
            columns.append({"key": key, "header": units.unbroken_units(header), "numeric": numeric})
    context = {
        "page": "summary",
        "header": title_block(specs, "Roofline summary",
                              f"{plural(len(groups), 'model')} × {plural(len(gpus), 'GPU type')}"),
        "served": summary_served(plans or {}, specs, {key: gpu.name for key, gpu in gpus.items()}),
        "decision": decision_table(totals, specs, gpus),
        "groups": groups, "columns": columns,
        "constant": ("The same in every row: " + "; ".join(constant) + ".") if constant else "",
        "stages": tuple(specs["stages"]),  # the notes explain the stages the tables hold
        "caveats": [CAVEATS[0], CAVEATS[1]],
    }
    check_context(context, user=user_text(specs))
    return context
