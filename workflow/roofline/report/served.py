"""Page 1's served numbers: what a loaded server delivers on each GPU's recommended deployment, from the deployment
search on the serving model (config `plan: {mode: aggregated | disaggregated | all}`, results/plans/{model}.parquet:
PLAN_COLUMNS + PLAN_SERVING_COLUMNS). Per GPU: the deployment, precision, mode, concurrency, TTFT and TPOT expected
with the bound beside them, tokens/s per GPU (expected, bound) and per user (expected), cost where priced, and whether
the targets are met in expectation; the best first. This module selects and formats rows, it computes nothing.
"""
from __future__ import annotations

import pandas as pd

from ..serving.framework import FITTED
from ..serving.search import CONCURRENCY_GRID, DISAGGREGATED_GRID
from . import units
from .decision import cell, target_check
from .page import name_parts

#: the served table's columns: (key, header, numeric); a column whose cells are all dashes is left out
SERVED_COLUMNS = (
    ("deployment", "Deployment", False), ("precision", "Weights / KV", False), ("mode", "Mode", False),
    ("concurrency", "Users", True), ("ttft", "TTFT expected (bound)", True),
    ("tpot", "TPOT expected (bound)", True), ("per_gpu", "Tokens/s per GPU expected (bound)", True),
    ("per_user", "Tokens/s per user expected", True), ("cost", "USD per 1M tokens expected (bound)", True),
    ("target", "Targets met (expected)", False),
    ("estimate", "Estimate", False),  # calibrated | partial | default: how much of it measured kernels back
)
#: columns stated once under the table when every row reads the same
CONSTANT_COLUMNS = ("mode", "estimate")
NBSP = "\u00a0"
#: how the search picked each GPU's plan, by plan.rank_on (the sentence under the served table)
RANKINGS = {
    "expected": "ranks first on the expected times among those that fit and meet the targets",
    "bound": "ranks first on the roofline bounds among those that fit and whose bounds meet the targets "
             "(plan.rank_on: bound; Targets met checks the expected times, which may miss them)",
    "cost": "ranks first on the expected cost per million tokens among those that fit and meet the targets",
}
#: the order of the served rows, by plan.rank_on (_ordered; said under the served tables)
ORDERS = {
    "expected": "Rows: those that meet the targets in expectation first, then the GPUs on measured kernels of their "
                "own before those on the default estimate (which can rank against them in expected time), then the "
                "most expected tokens/s per GPU.",
    "bound": "Rows: those that meet the targets in expectation first, then the search's choice (the most tokens/s "
             "per GPU at the bound), then the most expected tokens/s per GPU.",
}
#: the mark of a concurrency the search could not raise (at_capacity) and what it means, said under the table
CAPPED = "(full)"
CAPPED_NOTE = (f"Users {CAPPED}: all the deployment holds (its KV cache, or the framework's cap on running "
               "sequences, e.g. vLLM's max_num_seqs); the search stops there even where the targets leave room.")


def is_served(plans: pd.DataFrame | None) -> bool:
    """Whether the plan table comes from the serving model's search (it has the serving columns)."""
    return plans is not None and "mode" in plans.columns


def expected_and_bound(row: pd.Series, expected: str, bound: str, fmt) -> str:
    """'55.0 ms (26.7 ms)': the expected value, the bound in parentheses."""
    return _both(fmt(row[expected]), fmt(row[bound]))


def _both(expected: str, bound: str) -> str:
    """'expected (bound)', each kept on one line (no-break spaces inside): a narrow column breaks between the two
    alone, so a wide table (cost, disaggregated pools) stays inside the page."""
    return f"{expected.replace(' ', NBSP)} ({bound.replace(' ', NBSP)})"


def _usd(value) -> str:
    return units.DASH if units.missing(value) else f"${units.sig(float(value))}"


def mode_words(row: pd.Series) -> str:
    words = [str(row["mode"])]
    if row["mode"] == "disaggregated":
        words.append(f"{units.integer(row['prefill_workers'])} prefill + {units.integer(row['decode_workers'])} "
                     "decode workers")
    if str(row.get("spec_method", "none")) not in ("none", "", "nan"):
        words.append(f"speculative ({row['spec_method']})")
    return ", ".join(words)


def weights_label(row: pd.Series) -> str:
    """The weights' dtype, with its scales where it is fp8 ('fp8 (block)': 128 x 128 blocks, as DeepSeek's and
    Qwen3's own checkpoints; 'fp8 (tensor)': one scale per tensor, a re-quantization of such a checkpoint)."""
    scaling = str(row.get("fp8_scaling", "") or "")
    parts = [f"fp8 ({scaling})" if row["weight_dtype"] == "fp8" and scaling in ("tensor", "block") else
             str(row["weight_dtype"])]
    # the parts a checkpoint keeps in another dtype (gpt-oss's MXFP4 experts: "fp16" alone had read as a 117 B
    # model served in 16 bits on one H200)
    for part in ("expert", "attention"):
        dtype = str(row.get(f"{part}_weight_dtype", "") or "")
        if dtype and dtype != row["weight_dtype"]:
            parts.append(f"{'experts' if part == 'expert' else part} {dtype}")
    return ", ".join(part.replace(" ", NBSP) for part in parts)  # each part on one line, a break between them


def at_capacity(row: pd.Series) -> bool:
    """Whether a fitting row's concurrency is all its deployment holds (kv_capacity_requests: the KV cache's and
    the framework's running-sequence cap, whichever is smaller), or the next the search's grid tries (steps of 16
    users past 256; ~12% disaggregated) would not fit: the search could not raise it."""
    capacity = row.get("kv_capacity_requests")
    if not bool(row["fits"]) or units.missing(capacity):
        return False
    grid = DISAGGREGATED_GRID if row.get("mode") == "disaggregated" else CONCURRENCY_GRID
    above = grid[grid > float(row["batch"])]
    return float(row["batch"]) >= float(capacity) or (above.size > 0 and above[0] > float(capacity))


def _users(row: pd.Series) -> str:
    return units.integer(row["batch"]) + (f" {CAPPED}" if at_capacity(row) else "")


def served_cells(row: pd.Series, targets: dict) -> dict[str, dict]:
    """The cells of one GPU's recommended served plan (SERVED_COLUMNS' keys)."""
    check = target_check(row, targets)
    waits = "" if bool(row["fits"]) else "the KV cache cannot hold every user: the others wait for a slot"
    return {
        "deployment": cell(str(row["deployment"]), css="name"),
        "precision": cell(f"{weights_label(row)} / {row['kv_dtype']}"),  # may break at the slash
        "mode": cell(mode_words(row)),
        "concurrency": cell(_users(row), waits),
        "ttft": cell(expected_and_bound(row, "ttft_expected_s", "ttft_s", units.seconds)),
        "tpot": cell(expected_and_bound(row, "tpot_expected_s", "tpot_s", units.seconds)),
        "per_gpu": cell(expected_and_bound(row, "tokens_per_s_per_device_expected", "tokens_per_s_per_device",
                                           units.sig)),
        "per_user": cell(units.sig(row["tokens_per_s_per_user_expected"])),
        "cost": cell(units.DASH if units.missing(row.get("cost_per_million_tokens_expected")) else
                     _both(_usd(row["cost_per_million_tokens_expected"]), _usd(row["cost_per_million_tokens"]))),
        "target": cell(check["text"], css="fit-yes" if check["meets"] else "misfit"),
        "estimate": cell(str(row.get("estimate", units.DASH))),
    }


def _rank_on(plans: pd.DataFrame) -> str:
    """What the search ranked on (plan.rank_on): ORDERS' key."""
    return "bound" if (plans.attrs.get("search") or {}).get("rank_on") == "bound" else "expected"


def _ordered(plans: pd.DataFrame, targets: dict) -> pd.DataFrame:
    """Each GPU's recommended row (ORDERS): those that meet the targets in expectation first, then the search's
    chosen one; ranked on expected times, then those on measured kernels before those on the pooled fallback (a
    `default` estimate: see roofline.serving.marks); then the most expected tokens/s per GPU first."""
    picked = plans[plans["recommended"].astype(bool)]
    chosen = picked["chosen"].astype(bool) if "chosen" in picked else pd.Series(False, index=picked.index)
    on_expected = _rank_on(plans) == "expected"
    keys = [(not target_check(row, targets)["meets"], not chosen[label],
             on_expected and str(row.get("estimate", "")) == "default",
             -float(row["tokens_per_s_per_device_expected"])) for label, row in picked.iterrows()]
    return picked.iloc[sorted(range(len(picked)), key=keys.__getitem__)]


def workload_text(plans: pd.DataFrame) -> str:
    """'vllm, 1,024 prompt and 1,024 output tokens per request, TPOT ≤ 50.0 ms, TTFT ≤ 1.00 s'."""
    search, targets = plans.attrs.get("search") or {}, plans.attrs.get("workload") or {}
    first = plans.iloc[0] if len(plans) else None
    framework = search.get("framework") or (str(first["framework"]) if first is not None else "")
    lengths = (f"{units.integer(first['isl'])} prompt and {units.integer(first['osl'])} output tokens per request"
               if first is not None else f"{targets.get('isl', '?')} prompt and {targets.get('osl', '?')} output "
                                         "tokens per request")
    wanted = [f"{name} ≤ {units.seconds(targets[key])}" for name, key in (("TPOT", "tpot_s"), ("TTFT", "ttft_s"))
              if targets.get(key)]
    return ", ".join(part for part in (framework, lengths, *wanted) if part)


def served_section(plans: pd.DataFrame | None, configured: dict[str, str] | None = None) -> dict | None:
    """Page 1's served block ({"workload", "columns" (shown_columns), "rows" (cells by column key), "constant",
    "ranking" (how each GPU's plan was picked: RANKINGS),
    "reason", "coverage" (coverage_note over `configured`: {gpu key: name})}), None when the plan table is not the
    serving model's."""
    if not is_served(plans):
        return None
    targets = plans.attrs.get("workload") or {}
    rows = [served_cells(row, targets) for _, row in _ordered(plans, targets).iterrows()]
    columns, constant = shown_columns(rows)
    ranked_on = (plans.attrs.get("search") or {}).get("rank_on", "expected")
    return {"workload": workload_text(plans), "columns": columns, "rows": rows, "constant": _notes(constant, rows),
            "ranking": RANKINGS.get(ranked_on, RANKINGS["expected"]), "order": ORDERS[_rank_on(plans)],
            "reason": plans.attrs.get("reason", "") if not rows else "",
            "coverage": coverage_note([plans], configured or {}),
            "basis": basis_note([plans[plans["recommended"].astype(bool)]] if rows else [], configured)}


def _notes(constant: str, rows: list[dict]) -> str:
    """The sentences under a served table: the constant columns, and what (full) means where a row has it."""
    capped = any(CAPPED in row["concurrency"]["text"] for row in rows)
    return " ".join(part for part in (constant, CAPPED_NOTE if capped else "") if part)


def basis_note(tables: list[pd.DataFrame], names: dict[str, str] | None = None) -> str:
    """What the served numbers of `tables` (plan or serving rows) count and rest on, said under each served table:
    tokens/s are output tokens; expected TTFT holds each framework's fitted time per request outside the GPU steps
    (roofline.serving.framework.FITTED; + its hand-over where pools are disaggregated), which the single-step
    prefill times of the decision table leave out; and the kernel tables behind each GPU's expected times (the
    `calibration` column), or that it has none. `names`: gpu key -> the report's name."""
    frames = [t for t in tables if t is not None and len(t)]
    if not frames:
        return ""
    rows = pd.concat(frames, ignore_index=True)
    words = ["Tokens/s counts output tokens (a request's prompt tokens are not in it)."]
    hosts = []
    for framework, mine in rows.groupby("framework", sort=False) if "framework" in rows else ():
        if framework not in FITTED:
            continue
        _step, request, _sync, handoff, _per_sequence = FITTED[framework]
        apart = (mine["mode"].astype(str) == "disaggregated").any() if "mode" in mine else False
        hosts.append(f"{framework}'s {units.seconds(request)} per request" +
                     (f" (+ {units.seconds(handoff)} to hand a request between disaggregated pools)"
                      if apart and handoff else ""))
    if hosts:
        words.append(f"Expected TTFT includes {', '.join(hosts)} outside the GPU steps (HTTP, tokenization, returning "
                     "the first token; fitted on measured served runs) and the rest of the step running when a "
                     "prompt arrives, neither of which is in a single prefill step's time.")
    if "calibration" in rows:  # a GPU without one (NaN) is said too: groupby drops NaN keys by default
        tables_used = []
        for (gpu, calibration), _ in rows.groupby(["gpu", "calibration"], sort=False, dropna=False):
            where = (names or {}).get(gpu, gpu)
            tables_used.append(f"{where}: {calibration}" if str(calibration) not in ("none", "", "nan")
                               else f"{where}: no measured table (the documented default)")
        words.append(f"Measured kernels behind the expected times: {'; '.join(tables_used)}.")
    return " ".join(words)


def coverage_note(tables: list[pd.DataFrame], configured: dict[str, str]) -> str:
    """Which configured GPUs the served table leaves out, and why: not among the search's candidates (the `plan`
    section's gpus), or searched with no deployment in the table (none fits; "" when every one is there)."""
    searched = {key for table in tables for key, _ in (table.attrs.get("search") or {}).get("names", [])}
    shown = {key for table in tables for key in table["gpu"]}
    if not searched:  # a table written without its search: only what it shows is known
        return ""
    outside = [name for key, name in configured.items() if key not in searched]
    empty = [name for key, name in configured.items() if key in searched and key not in shown]
    notes = []
    if outside:
        notes.append(f"Not searched (the plan section's gpus): {', '.join(outside)}.")
    if empty:
        notes.append(f"Searched, no deployment that fits: {', '.join(empty)}.")
    return " ".join(notes)


def shown_columns(rows: list[dict]) -> tuple[list[dict], str]:
    """(the columns with something to say, {"key", "header", "numeric"}; 'Mode: aggregated in every row.' for a
    CONSTANT_COLUMNS column that reads the same in every row, left out of the table). `rows`: cells by key."""
    columns, constant = [], []
    for key, header, numeric in SERVED_COLUMNS:
        values = {row[key]["text"] for row in rows}
        if values == {units.DASH}:
            continue
        if key in CONSTANT_COLUMNS and len(rows) > 1 and len(values) == 1:
            constant.append(f"{header}: {values.pop()} in every row.")
            continue
        columns.append({"key": key, "header": units.unbroken_units(header), "numeric": numeric})
    return columns, " ".join(constant)


def served_sentence(plans: pd.DataFrame | None) -> str:
    """Page 1's first sentence when the search is the serving model's: the best recommended deployment under load
    with its expected TTFT, TPOT and tokens/s per GPU (bounds beside) and whether it meets the targets; '' else."""
    if not is_served(plans) or not plans["recommended"].astype(bool).any():
        return ""
    targets = plans.attrs.get("workload") or {}
    ordered = _ordered(plans, targets)
    best = ordered.iloc[0]
    check = target_check(best, targets)
    verdict = "meets the targets in expectation" if check["meets"] else check["text"].replace("no: ", "misses: ")
    full = ", all it holds (its KV cache or the framework's cap on running sequences)" if at_capacity(best) else ""
    return (f"Served under load ({workload_text(plans)}): {best['deployment']} at concurrency "
            f"{units.integer(best['batch'])} ({best['mode']}{full}) is expected to deliver "
            f"{units.sig(best['tokens_per_s_per_device_expected'])} tokens/s per GPU "
            f"(bound {units.sig(best['tokens_per_s_per_device'])}), TTFT {units.seconds(best['ttft_expected_s'])} "
            f"and TPOT {units.seconds(best['tpot_expected_s'])} expected (bounds {units.seconds(best['ttft_s'])}, "
            f"{units.seconds(best['tpot_s'])}); it {verdict}{_estimate_note(best)}{_calibrated_best(best, ordered)}"
            f"{_fallback_beside(best, ordered)}.")


def _calibrated_best(best: pd.Series, ordered: pd.DataFrame) -> str:
    """Where the best rests on the pooled fallback (a default estimate) and another GPU's on its own measured
    kernels, that one beside it: a default estimate can rank against calibrated ones in expected time (the caveats;
    compare the bounds), and page 1's lead should not leave the reader with it alone."""
    if str(best.get("estimate", "")) != "default":
        return ""
    measured = ordered[ordered["estimate"].astype(str) == "calibrated"]
    if measured.empty:
        return ""
    row = measured.iloc[0]
    return (f"; the best GPU on its own measured kernels is {row['deployment']}, "
            f"{units.sig(row['tokens_per_s_per_device_expected'])} tokens/s per GPU expected (bound "
            f"{units.sig(row['tokens_per_s_per_device'])})")


def _fallback_beside(best: pd.Series, ordered: pd.DataFrame) -> str:
    """Where a GPU without measured kernels of its own (a default estimate, ranked after those with them) expects
    more tokens/s per GPU than the lead, that one beside it with both bounds: the reader sees what the ranking set
    aside and on what grounds."""
    if str(best.get("estimate", "")) == "default":
        return ""
    fallback = ordered[(ordered["estimate"].astype(str) == "default") & (
        ordered["tokens_per_s_per_device_expected"] > best["tokens_per_s_per_device_expected"])]
    if fallback.empty:
        return ""
    row = fallback.iloc[0]
    return (f"; {row['deployment']} expects more, {units.sig(row['tokens_per_s_per_device_expected'])} tokens/s per "
            f"GPU, but on a default estimate (no measured kernels of its own), so it ranks after the GPUs with "
            f"them: compare the bounds, {units.sig(row['tokens_per_s_per_device'])} against "
            f"{units.sig(best['tokens_per_s_per_device'])}")


def _estimate_note(row: pd.Series) -> str:
    """'' for a calibrated estimate, else what the expected times rest on ('; expected times: partial estimate')."""
    label = str(row.get("estimate", ""))
    return "" if label in ("calibrated", "") else f" (expected times: a {label} estimate, see the caveats)"


def summary_served(plans: dict[str, pd.DataFrame], specs: dict,
                   configured: dict[str, str] | None = None) -> dict | None:
    """The summary's served table: per model (config order), each GPU's recommended deployment under load (the
    rows of `served_section`), {"workload", "columns", "rows", "coverage", "unmet" (the models no deployment of
    which meets the targets: {"name", "reason"})}; None when no plan table is the serving model's.
    Each row: {"model", "name", "href", "pdf", "first", "cells"}."""
    rows, workload, unmet = [], "", []
    for model, spec in specs["models"].items():
        table = plans.get(model)
        if not is_served(table):
            continue
        targets = table.attrs.get("workload") or {}
        workload = workload or workload_text(table)
        ordered = _ordered(table, targets)
        if ordered.empty:  # said under the table, not left out without a word
            unmet.append({"name": spec["name"], "reason": table.attrs.get("reason", "") or "no plan qualifies"})
        for i, (_, row) in enumerate(ordered.iterrows()):
            rows.append({"model": model, "name": spec["name"], "name_parts": name_parts(spec["name"]),
                         "href": f"{model}.html", "pdf": f"{model}.pdf", "first": i == 0,
                         "cells": served_cells(row, targets)})
    if not rows and not unmet:
        return None
    columns, constant = shown_columns([row["cells"] for row in rows]) if rows else ([], "")
    searched = [table for table in plans.values() if is_served(table)]
    return {"workload": workload, "columns": columns, "rows": rows,
            "constant": _notes(constant, [row["cells"] for row in rows]) if rows else "",
            "order": ORDERS[_rank_on(searched[0])] if searched else "",  # one plan section for every model
            "coverage": coverage_note(searched, configured or {}), "unmet": unmet,
            "basis": basis_note([t[t["recommended"].astype(bool)] for t in searched], configured)}
