"""The served workloads of the config's `serving:` section in the model report: results/serving/{model}.parquet
(SERVE_COLUMNS, `roofline serve` of every configured gpu at the model's plan under every workload), one table per
workload (mode, framework, lengths and spread, prefix hit, speculation, pools, holds), a row per GPU and load,
with the expected value beside its bound; and what could not be served, as the serving job said it. This module
selects and formats rows, it computes nothing.
"""
from __future__ import annotations

import pandas as pd

from ..serving.framework import RUNNING_CAP
from . import units
from .decision import cell
from .served import NBSP, basis_note, expected_and_bound, mode_words, weights_label

#: the workload table's columns: (key, header, numeric)
WORKLOAD_COLUMNS = (
    ("deployment", "Deployment", False), ("precision", "Weights / KV", False), ("load", "Users or requests/s", True),
    ("ttft", "TTFT expected (bound)", True), ("tpot", "TPOT expected (bound)", True),
    ("per_gpu", "Tokens/s per GPU expected (bound)", True), ("per_user", "Tokens/s per user expected", True),
    ("holds", "Holds the load", False), ("estimate", "Estimate", False),
)
#: the columns that tell one workload from another (a table each)
WORKLOAD_KEYS = ("mode", "framework", "isl", "osl", "prefix_hit", "spec_method", "accepted_tokens_per_step",
                 "prefill_workers", "decode_workers", "length_spread", "batch_wait", "attention_dp_balance",
                 "max_running")


def workloads_section(serving: pd.DataFrame | None, names: dict[str, str]) -> dict | None:
    """{"tables": [{"title", "columns", "rows"}], "skipped": [lines]} of the serving table (report.io.load_serving:
    attrs["skipped"] what could not be served), GPUs in the report's order (`names`: gpu key -> name); None without
    a `serving:` section."""
    if serving is None:
        return None
    order = {key: n for n, key in enumerate(names)}
    tables = []
    keys = [key for key in WORKLOAD_KEYS if key in serving]  # a table written before a key existed lacks it
    for _, rows in serving.groupby(keys, sort=False, dropna=False):
        rows = rows.assign(_gpu=rows["gpu"].map(order).fillna(len(order)),
                           _load=rows["concurrency"].fillna(rows["request_rate"]))
        rows = rows.sort_values(["_gpu", "_load"], kind="stable")
        tables.append({"title": workload_title(rows.iloc[0]),
                       "columns": [{"key": k, "header": units.unbroken_units(h), "numeric": n}
                                   for k, h, n in WORKLOAD_COLUMNS],
                       "rows": [workload_cells(row) for _, row in rows.iterrows()]})
    return {"tables": tables, "skipped": list(serving.attrs.get("skipped", [])), "basis": basis_note([serving], names)}


def workload_title(row: pd.Series) -> str:
    """'vllm, aggregated: 4,096 prompt and 512 output tokens per request' (+ prefix hit, speculation, pools)."""
    words = f"{row['framework']}, {mode_words(row)}: {units.integer(row['isl'])} prompt and " \
            f"{units.integer(row['osl'])} output tokens per request"
    if float(row.get("prefix_hit", 0) or 0) > 0:
        words += f", {units.percent(float(row['prefix_hit']))} of each prompt in the prefix cache"
    if str(row.get("spec_method", "none")) not in ("none", "", "nan"):
        words += f", {units.sig(float(row['accepted_tokens_per_step']))} tokens per verify step"
    if float(row.get("length_spread", 0) or 0) > 0:
        words += f", lengths spread {units.percent(float(row['length_spread']))} either way"
    return words + _holds_words(row)


def _holds_words(row: pd.Series) -> str:
    """', batch waiting 20 steps or 90% of the step budget' and ', attention-DP balancing 60,0 steps' where on."""
    words = ""
    wait = str(row.get("batch_wait", "off"))
    if wait not in ("off", "", "nan"):
        steps, ratio = wait.split(",")
        words += f", batch waiting {steps} steps or {units.percent(float(ratio))} of the step budget"
    balance = str(row.get("attention_dp_balance", "off"))
    if balance not in ("off", "", "nan"):
        words += f", attention-DP balancing {balance} steps"
    running = float(row.get("max_running", 0) or 0)  # NaN (a table written before the column): none set
    if running > 0:  # in the framework's own words, which say how it counts (per rank or per engine)
        setting = RUNNING_CAP.get(str(row.get("framework")), "max_running")
        where = " on each decode worker" if row.get("mode") == "disaggregated" else ""
        words += f", {setting} {units.integer(running)}{where}"
    return words


def _load(row: pd.Series) -> str:
    if not units.missing(row["concurrency"]):
        return f"{units.integer(row['concurrency'])} user{'' if float(row['concurrency']) == 1 else 's'}"
    return f"{units.sig(float(row['request_rate']))}{NBSP}req/s"


def _time(value) -> str:
    """A time, or 'unbounded' where an open loop's queue grows without end (inf)."""
    return "unbounded" if not units.missing(value) and float(value) == float("inf") else units.seconds(value)


def _holds(row: pd.Series) -> dict:
    """Whether the deployment holds the load: every user in the KV cache (closed loop), the rate sustained (open
    loop); a row that does not is marked and says why."""
    if not bool(row["keeps_up"]):
        return cell("no: falls behind", "the arrivals outrun what it serves: the queue and TTFT grow without bound",
                    css="misfit")
    if not bool(row["fits"]):
        waiting = f"the KV cache holds {units.sig(float(row['kv_capacity_requests']))} requests: the other users " \
                  "wait for a slot (in TTFT)"
        return cell("no: users wait", waiting, css="misfit")
    return cell("yes", css="fit-yes")


def workload_cells(row: pd.Series) -> dict[str, dict]:
    """The cells of one served row (WORKLOAD_COLUMNS' keys)."""
    def pair(expected: str, bound: str, fmt) -> dict:
        return cell(expected_and_bound(row, expected, bound, fmt))

    return {
        "deployment": cell(str(row["deployment"]), css="name"),
        "precision": cell(f"{weights_label(row)} / {row['kv_dtype']}"),
        "load": cell(_load(row)),
        "ttft": pair("ttft_expected_s", "ttft_s", _time),
        "tpot": pair("tpot_expected_s", "tpot_s", units.seconds),
        "per_gpu": pair("tokens_per_s_per_device_expected", "tokens_per_s_per_device", units.sig),
        "per_user": cell(units.sig(row["tokens_per_s_per_user_expected"])),
        "holds": _holds(row),
        "estimate": cell(str(row.get("estimate", units.DASH))),
    }
