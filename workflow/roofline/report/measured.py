"""The model report's section "Your measurements beside ours" (results/measurements/{model}.parquet) and the
summary's list of measured runs that could not be predicted (results/measurements/rows.csv): every value a ready
string, times to 3 significant digits."""
from __future__ import annotations

import pandas as pd

from ..serving.measured import PREDICTED
from . import units
from .guard import check_context

#: (title, bound, expected, measured, error column, formatter) per quantity of a served run
QUANTITIES = (("TTFT", "ttft_s", "ttft_expected_s", "ttft_measured_s", "ttft_error", units.seconds),
              ("TPOT", "tpot_s", "tpot_expected_s", "tpot_measured_s", "tpot_error", units.seconds),
              ("Tokens/s", "tokens_per_s", "tokens_per_s_expected", "tokens_per_s_measured", "tokens_per_s_error",
               units.tokens_per_s))
NOTE = ("Each run is predicted at its own deployment and workload: TTFT as the prefill of one request of its prompt "
        "length (no queueing), TPOT as one decode step at batch = its concurrency with the cache at prompt + half the "
        "output tokens, tokens/s = concurrency / TPOT (the deployment's output tokens). Bound: the roofline lower "
        "bound on time (upper bound on tokens/s); expected: the bound with measured kernel efficiencies; error: "
        "expected / measured − 1 (times: positive = we expect slower than you measured; tokens/s: positive = we "
        "expect more). ! : the measurement lies beyond the bound, faster than the hardware allows: check the run's "
        "deployment.")


def error_text(value: float) -> str:
    """'+12.3%', '−4.0%' (the expected value against the measurement), '—' when either is missing."""
    return units.DASH if units.missing(value) else f"{value * 100:+.1f}%".replace("-", "−")


def _row(run) -> dict:
    """One run: its deployment and workload, and per quantity bound, expected, measured and error."""
    cells = []
    for title, bound, expected, measured, error, fmt in QUANTITIES:
        value, limit = run[measured], run[bound]
        beyond = not units.missing(value) and not units.missing(limit) and (
            value > limit if bound == "tokens_per_s" else value < limit)
        cells.append({"quantity": title, "bound": fmt(limit), "expected": fmt(run[expected]),
                      "measured": fmt(value) + (" !" if beyond else ""), "error": error_text(run[error])})
    detail = [run["framework"], f"{run['weight_dtype']} weights, {run['kv_dtype']} KV cache",
              f"{units.integer(run['isl'])} + {units.integer(run['osl'])} tokens per request",
              f"concurrency {units.integer(run['concurrency'])}"]
    return {"deployment": run["deployment"], "detail": ", ".join(part for part in detail if part),
            "cells": cells, "fits": bool(run["fits"]), "source": run["source"]}


def measured_section(table: pd.DataFrame) -> dict:
    """{"rows" (predicted runs), "not_predicted" (lines saying why), "note"}."""
    predicted = table[table["status"] == PREDICTED]
    section = {"rows": [_row(run) for _, run in predicted.iterrows()],
               "not_predicted": [f"{run['source']}: {run['status']}" for _, run in
                                 table[table["status"] != PREDICTED].iterrows()],
               "note": NOTE}
    check_context(section, "measured", user=tuple(table["source"]) + tuple(table["deployment"]))
    return section


def unmatched_runs(runs: pd.DataFrame) -> list[str]:
    """The runs of rows.csv that are not predicted: 'runs.csv line 4: model 'x' is not in the config'."""
    return [f"{run['source']}: {run['status']}" for _, run in runs[runs["status"] != PREDICTED].iterrows()]
