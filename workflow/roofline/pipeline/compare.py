"""Comparison across runs: what moved between two results folders (`roofline compare OLD NEW`, and the summary's
section when config.yaml names `compare_with:`).

A results folder is what `snakemake` writes: `results/` (or the project folder holding it) with `totals.parquet`
and, with a `plan` section, `plans/{model}.parquet`. Per (model, gpu, stage) of the totals, and per (model, gpu)
of the plans' recommended rows (when both folders have plans for that model), every compared column whose value
moved by more than the threshold (|new / old - 1| > threshold) is one row; a text or yes/no column that changed
(deployment, fits, estimate, ...) is one row too, and so is a (model, gpu, stage) that only one folder has.
Columns only one folder has are not compared (a newer version may add columns).
"""
from __future__ import annotations

import math
from pathlib import Path

from ..engine.columns import COMPARE_COLUMNS
from ..engine.errors import RooflineInputError, clip

#: totals columns compared, numbers then text (those both folders have)
TOTAL_NUMBERS = ("ttft_s", "tpot_s", "tokens_per_s", "tokens_per_s_per_device", "ttft_expected_s", "tpot_expected_s",
                 "tokens_per_s_expected", "footprint_bytes", "memory_bound_share", "network_share", "devices",
                 "cost_per_million_tokens", "cost_per_million_tokens_expected", "energy_per_token_j")
TOTAL_TEXT = ("deployment", "fits", "bound", "estimate")
TOTAL_KEYS = ("model", "gpu", "stage")
#: the recommended plan of each (model, gpu) in results/plans/{model}.parquet
PLAN_NUMBERS = ("batch", "devices", "ttft_s", "tpot_s", "tpot_expected_s", "tokens_per_s_per_device",
                "tokens_per_s_per_device_expected", "cost_per_million_tokens_expected")
PLAN_TEXT = ("deployment", "weight_dtype", "kv_dtype", "bound")
PLAN_KEYS = ("model", "gpu")
DEFAULT_THRESHOLD = 0.05


def results_folder(path: str | Path, what: str) -> Path:
    """The folder holding totals.parquet: `path` itself or its `results/`; a one-line error naming `what` (the
    option or config key) when there is none."""
    path = Path(path)
    if not path.exists():
        raise RooflineInputError(f"{what}: '{clip(path, 240)}' does not exist; expected a results folder (the "
                                 "results/ a snakemake run wrote, or the project folder holding it)")
    for folder in (path, path / "results"):
        if (folder / "totals.parquet").is_file():
            return folder
    raise RooflineInputError(f"{what}: '{clip(path, 240)}' holds no totals.parquet (nor results/totals.parquet); "
                             "expected a results folder written by snakemake")


def checked_results_folder(path: str | Path, what: str) -> Path:
    """results_folder, with its totals.parquet's columns read from the file's footer (cheap): a damaged or foreign
    table is refused in one line when the config is read, not in the compare job after the grid has run."""
    import pyarrow.parquet as pq

    folder = results_folder(path, what)
    table = folder / "totals.parquet"
    try:
        columns = pq.read_schema(table).names
    except Exception as error:  # pyarrow raises several types for a damaged or foreign file
        raise _unreadable(table, what, error) from None
    _check_columns(table, columns, TOTAL_KEYS, what)
    return folder


def _unreadable(path: Path, what: str, error: Exception) -> RooflineInputError:
    return RooflineInputError(f"{what}: '{clip(path, 240)}' cannot be read as parquet: {clip(str(error), 160)}")


def _check_columns(path: Path, columns, keys: tuple[str, ...], what: str) -> None:
    missing = [key for key in keys if key not in columns]
    if missing:
        raise RooflineInputError(f"{what}: '{clip(path, 240)}' is not a table this tool wrote (no column "
                                 f"'{missing[0]}'); the folders are incompatible")


def _read(path: Path, keys: tuple[str, ...], what: str):
    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as error:  # pyarrow raises several types for a damaged or foreign file
        raise _unreadable(path, what, error) from None
    _check_columns(path, frame.columns, keys, what)
    return frame.drop_duplicates(list(keys))


def _plans(folder: Path, what: str) -> dict:
    """{model: its recommended plan rows} of a results folder (empty without plans)."""
    found = {}
    for path in sorted((folder / "plans").glob("*.parquet")):
        frame = _read(path, (*PLAN_KEYS, "recommended"), what)
        found[path.stem] = frame[frame["recommended"].astype(bool)]
    return found


def compare_results(old: str | Path, new: str | Path, threshold: float = DEFAULT_THRESHOLD,
                    names: tuple[str, str] = ("OLD_RESULTS", "NEW_RESULTS")) -> tuple[list[dict], dict]:
    """(COMPARE_COLUMNS rows of what moved, notes: `compared` (rows compared per table) and `threshold`); `names`
    name the two folders in errors (the arguments or the config key)."""
    folders = [results_folder(path, name) for path, name in zip((old, new), names)]
    totals = [_read(folder / "totals.parquet", TOTAL_KEYS, name) for folder, name in zip(folders, names)]
    rows = _moved("totals", *totals, TOTAL_KEYS, TOTAL_NUMBERS, TOTAL_TEXT, threshold)
    compared = {"totals": len(totals[1])}
    old_plans, new_plans = (_plans(folder, name) for folder, name in zip(folders, names))
    for model in [m for m in new_plans if m in old_plans]:
        rows += _moved("plans", old_plans[model], new_plans[model], PLAN_KEYS, PLAN_NUMBERS, PLAN_TEXT, threshold)
        compared["plans"] = compared.get("plans", 0) + len(new_plans[model])
    assert all(tuple(row) == COMPARE_COLUMNS for row in rows)
    return rows, {"compared": compared, "threshold": threshold}


def _moved(table: str, old, new, keys, numbers, texts, threshold: float) -> list[dict]:
    """The rows of one table that moved, in the new folder's order, then those only the old folder has."""
    old_rows = {tuple(r[k] for k in keys): r for r in old.to_dict("records")}
    new_rows = {tuple(r[k] for k in keys): r for r in new.to_dict("records")}
    numbers = [c for c in numbers if c in old.columns and c in new.columns]
    texts = [c for c in texts if c in old.columns and c in new.columns]
    out = []
    for key, row in new_rows.items():
        if key not in old_rows:
            out.append(_row(table, keys, key, "", "", "", math.nan, "added"))
            continue
        before = old_rows[key]
        for column in numbers:
            change = relative_change(before[column], row[column])
            if change is None or abs(change) > threshold:
                what = "moved" if change is not None else "changed"
                out.append(_row(table, keys, key, column, before[column], row[column],
                                math.nan if change is None else change, what))
        out += [_row(table, keys, key, column, before[column], row[column], math.nan, "changed")
                for column in texts if str(before[column]) != str(row[column])]
    out += [_row(table, keys, key, "", "", "", math.nan, "removed") for key in old_rows if key not in new_rows]
    return out


def relative_change(old, new) -> float | None:
    """new / old - 1, 0.0 when both are NaN or equal, inf when old is 0 and new is not, None when only one is NaN
    (a value appeared or vanished). e.g. 10 ms -> 11 ms: +0.1."""
    old, new = float(old), float(new)
    if math.isnan(old) or math.isnan(new):
        return 0.0 if math.isnan(old) and math.isnan(new) else None
    if old == new:
        return 0.0
    return math.copysign(math.inf, new - old) if old == 0 else new / old - 1.0


def _row(table: str, keys, key: tuple, column: str, old, new, change: float, what: str) -> dict:
    named = dict(zip(keys, key))
    return {"table": table, "model": named["model"], "gpu": named["gpu"], "stage": named.get("stage", ""),
            "column": column, "old": _plain(old), "new": _plain(new), "change": change, "what": what}


def _plain(value):
    """Numbers as Python floats (NaN stays NaN), flags and text as text: one type per cell in CSV and JSON."""
    value = value.item() if hasattr(value, "item") else value  # NumPy scalars as Python ones
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return float(value)
