"""The model report's section "Your measurements beside ours" (results/measurements/{model}.parquet) and the
summary's list of measured runs that could not be predicted (results/measurements/rows.csv): every value a ready
string, times to 3 significant digits."""
from __future__ import annotations

import pandas as pd

from ..serving.measured import PREDICTED, quantity_columns
from . import units
from .guard import check_context

#: (title, the quantity's stem in the table: serving.measured.quantity_columns, its name in a sentence, formatter)
#: per quantity of a served run
QUANTITIES = (("TTFT", "ttft", "TTFT", units.seconds), ("TPOT", "tpot", "TPOT", units.seconds),
              ("Tokens/s", "tokens_per_s", "tokens/s", units.tokens_per_s))
NOTE = ("Each run is predicted at its own deployment and workload with the serving model (what roofline serve "
        "--overflow queue says at the run's plan, dtypes, prompt and output lengths, concurrency and framework): "
        "continuous batching with chunked prefill, TTFT with the wait for prefill slots and the framework's host time "
        "per request, TPOT with the prompt chunks mixed into the decode steps, users beyond what the KV cache holds "
        "waiting for a slot. Bound: the roofline lower bound on time (upper bound on tokens/s); expected: the "
        "serving model on measured kernel times; error: expected / measured − 1 (times: positive = we expect slower "
        "than you measured; tokens/s: positive = we expect more). ! : the measurement lies beyond the bound, faster "
        "than the hardware allows: check the run's units and deployment.")


def error_text(value: float) -> str:
    """'+12.3%', '−4.0%' (the expected value against the measurement), '—' when either is missing."""
    return units.DASH if units.missing(value) else f"{value * 100:+.1f}%".replace("-", "−")


def _row(run) -> dict:
    """One run: its deployment and workload, and per quantity bound, expected, measured and error."""
    cells = []
    beyond = str(run["beyond_bound"]).split(", ")
    for title, stem, _, fmt in QUANTITIES:
        bound, expected, measured, error = quantity_columns(stem)
        mark = " !" if stem in beyond else ""
        cells.append({"quantity": title, "bound": fmt(run[bound]), "expected": fmt(run[expected]),
                      "measured": fmt(run[measured]) + mark, "error": error_text(run[error])})
    detail = [run["framework"], f"{run['weight_dtype']} weights, {run['kv_dtype']} KV cache",
              f"{units.integer(run['isl'])} + {units.integer(run['osl'])} tokens per request",
              f"concurrency {units.integer(run['concurrency'])}", run["source"]]
    return {"deployment": run["deployment"], "detail": ", ".join(part for part in detail if part),
            "cells": cells, "fits": bool(run["fits"]), "source": run["source"]}


def measured_section(table: pd.DataFrame) -> dict:
    """{"rows" (predicted runs), "not_predicted" (lines saying why), "note"}."""
    predicted = table[table["status"] == PREDICTED]
    section = {"rows": [_row(run) for _, run in predicted.iterrows()],
               "not_predicted": [f"{run['source']}: {run['status']}" for _, run in
                                 table[table["status"] != PREDICTED].iterrows()],
               "beyond": beyond_lines(predicted), "note": NOTE}
    check_context(section, "measured", user=tuple(table["source"]) + tuple(table["deployment"]))
    return section


def beyond_lines(table: pd.DataFrame) -> list[str]:
    """One line per run measured beyond its bound: 'runs.csv line 4: TTFT, TPOT' (said above the table, not only
    as a mark in it: a value in the wrong unit looks like a fast run)."""
    names = {stem: name for _, stem, name, _ in QUANTITIES}
    return [f"{run['source']}: {', '.join(names[q] for q in str(run['beyond_bound']).split(', '))}"
            for _, run in table.iterrows() if run["beyond_bound"]]


def unmatched_runs(runs: pd.DataFrame) -> list[str]:
    """The runs of rows.csv that are not predicted: 'runs.csv line 4: model 'x' is not in the config'."""
    return [f"{run['source']}: {run['status']}" for _, run in runs[runs["status"] != PREDICTED].iterrows()]
