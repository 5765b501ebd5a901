"""Page 1 of a model report: per stage, one row per GPU that answers "on which hardware, how many devices, how fast,
what bounds it, what to do", and the cells every table uses for a timing (marked when the setup does not fit).

The deployment of a totals row (roofline.engine.parallel: its devices and plan) and its expected (calibrated) times are
read in exactly one place each (`deployment`, `expected_time`).
"""
from __future__ import annotations

import math
import re

import pandas as pd

from ..engine.hardware import Accelerator
from ..engine.treatments import ACROSS_DOMAINS
from . import text, units


def deployment(total: pd.Series) -> dict:
    """{"text", "devices", "tokens_per_s_per_device"} of one totals row: THE place where the report learns the
    deployment ('4 x H100 SXM5 80GB, TP 4', 4; roofline.engine.parallel)."""
    return {"text": str(total["deployment"]), "devices": int(total["devices"]),
            "tokens_per_s_per_device": float(total["tokens_per_s_per_device"])}


#: the calibrated estimate of each stage's time (roofline.estimate.calibration), shown beside the roofline bound
EXPECTED_COLUMNS = {"prefill": "ttft_expected_s", "decode": "tpot_expected_s"}


def expected_time(total: pd.Series, stage: str) -> float | None:
    """The expected (calibrated or default-calibrated) time of the stage; None where the engine gave none."""
    value = total[EXPECTED_COLUMNS[stage]]
    return None if units.missing(value) else float(value)


#: the mark an expected time carries where the GPU's own measured kernels do not back all of it (the totals'
#: `estimate`), explained under each table that shows one (estimate_note)
ESTIMATE_MARKS = {"default": "†", "partial": "‡"}
ESTIMATE_WORDS = {"default": "† default estimate: no measured kernels of that GPU's own (the documented fallback, "
                             "which can rank against measured ones in expected time: compare the bounds)",
                  "partial": "‡ partial estimate: some of its kernels measured on that GPU, the rest from the "
                             "fallback"}


def estimate_mark(total: pd.Series) -> str:
    """'†' (default estimate) or '‡' (partial) after an expected time, '' where the GPU's tables back all of it."""
    return ESTIMATE_MARKS.get(str(total.get("estimate", "")), "")


def estimate_note(labels) -> str:
    """The sentence under a table whose expected times carry marks of `labels` (estimates), '' for none."""
    return "; ".join(ESTIMATE_WORDS[label] for label in ESTIMATE_MARKS if label in set(labels)) + (
        "." if set(labels) & set(ESTIMATE_MARKS) else "")


def framework_name(value) -> str:
    """The framework whose kernel tables an expected time uses (the totals' `framework`), '' for none: 'none' (the
    pooled fallback, no framework's tables) or missing."""
    return "" if units.missing(value) or str(value) in ("", "none") else str(value)


def expected_header(frameworks) -> str:
    """'Expected (trtllm)': the column of expected times names the framework whose kernels they use (the served
    table beside it may use another's); 'Expected' where the rows' frameworks differ (each cell then names its)."""
    named = sorted({framework_name(f) for f in frameworks} - {""})
    # a row on no framework's tables (the pooled fallback) carries the † of a default estimate, explained below
    return f"Expected ({named[0]})" if len(named) == 1 else "Expected"


def capacity_bytes(total: pd.Series) -> float:
    """The memory a device's footprint is held against: its usable memory (memory_utilization x capacity)."""
    return float(total["usable_memory_bytes"])


def misfit_text(total: pd.Series) -> str:
    """'does not fit: needs 140 GB, has 46.4 GB usable of 48 GiB' for a setup that does not fit, '' for one that
    does (footprints in decimal GB; the capacity as the vendor sizes it, in GiB, where the row carries it: a reader
    checks the usable share against memory_utilization)."""
    if bool(total["fits"]):
        return ""
    memory = total.get("memory_bytes")
    has = units.nbytes(capacity_bytes(total)) if units.missing(memory) else units.usable(capacity_bytes(total),
                                                                                         float(memory))
    return f"does not fit: needs {units.nbytes(total['footprint_bytes'])}, has {has}"


def cell(text_value: str, misfit: str = "", css: str = "") -> dict:
    """A table cell: its text, the reason it is marked ('' = a plain value) and a CSS class (e.g. the bound).
    Templates render a marked cell greyed and hatched with a ✗ and the reason as its title."""
    return {"text": text_value, "misfit": misfit, "css": css}


def best_lever(rows: pd.DataFrame) -> dict:
    """The applicable latency treatment with the largest speed-up among those whose result fits, as
    {"text": 'int4 weights 3.25×', "name", "speedup"}; 'none ≥ 5%' when none gains 5% (rows of one gpu, stage)."""
    latency = rows[rows["applicable"].astype(bool) & rows["fits"].astype(bool)
                   & ~rows["treatment"].map(text.is_throughput)]
    if latency.empty or round(float(latency["speedup"].max()), 2) < text.GAIN:
        return {"text": "none ≥ 5%", "name": "", "speedup": math.nan}
    best = latency.loc[latency["speedup"].idxmax()]
    name = more_devices_name(str(best.get("label", ""))) if best["treatment"] == "more_devices" else \
        text.short(best["treatment"])
    return {"text": f"{name} {units.times(best['speedup'])}", "name": best["treatment"],
            "speedup": float(best["speedup"])}


def more_devices_name(label: str) -> str:
    """'double TP (4 devices)' from the more_devices treatment's label (roofline.engine.treatments: 'twice the
    tensor parallelism: 4 devices (...)'): 'TP ×2 on 2× devices' had read as 'on 2 devices'. A tensor-parallel
    group past the scale-up domain (TP 16 of 8-GPU nodes) says so: its collectives cross the scale-out network."""
    found = re.search(r"(\d+) devices", label)
    devices = f"{found.group(1)} devices" if found else "2× the devices"
    return f"double TP ({devices}, across domains)" if ACROSS_DOMAINS in label else f"double TP ({devices})"


def max_throughput(rows: pd.DataFrame, total: pd.Series, short: bool = False) -> dict:
    """Decode tokens/s at the largest useful batch (the batching treatment: up to the critical batch, as far as
    memory allows) as a cell, '4,480 tokens/s at batch 166' ('4,480 (166)' when `short`); the configured batch's
    throughput when batching does not apply."""
    batching = rows[(rows["treatment"] == "batching") & rows["applicable"].astype(bool)]
    best = batching.iloc[0] if len(batching) else total
    rate, batch = float(best["tokens_per_s"]), units.integer(best["batch"]) if "batch" in best.index else ""
    shown = (f"{units.sig(rate)} ({batch})" if short else f"{units.tokens_per_s(rate)} at batch {batch}") \
        if batch else units.tokens_per_s(rate)
    return cell(shown, misfit_text(best))


def decision_row(stage: str, total: pd.Series, treatments: pd.DataFrame, gpu: Accelerator) -> dict:
    """One GPU's row of a stage's decision table (the treatments of that gpu and stage)."""
    place = deployment(total)
    misfit = misfit_text(total)
    time_column = "ttft_s" if stage == "prefill" else "tpot_s"
    expected = expected_time(total, stage)
    share = float(total["memory_bound_share"])
    lever = best_lever(treatments)["text"]
    return {
        "gpu_key": gpu.key, "deployment": place["text"], "devices": str(place["devices"]),
        "fits": not misfit, "fit_text": misfit or "yes",
        "time": cell(units.seconds(total[time_column]), misfit),
        "expected": cell(units.seconds(expected) + estimate_mark(total), misfit) if expected is not None else None,
        "framework": framework_name(total.get("framework")) if expected is not None else "",
        "estimate": str(total.get("estimate", "")) if expected is not None else "",
        "tokens_per_s": cell(units.sig(total["tokens_per_s"]), misfit),
        "tokens_per_s_per_device": cell(units.sig(place["tokens_per_s_per_device"]), misfit),
        "memory_bound_share": units.percent(share), "bound": text.step_bound(total),
        # a lever of two clauses ('double TP (16 devices, across domains) 1.26×') may wrap: on one line it had run
        # off the page; the others stay on a line (report.css)
        "lever": lever, "lever_wraps": ", " in lever,
        "max_throughput": max_throughput(treatments, total, short=True) if stage == "decode" else None,
        # the expected time ranks, as on page 1 and in the search; the bound where there is none
        "sort": (bool(misfit), expected if expected is not None else float(total[time_column])),
    }


def decision_tables(totals: pd.DataFrame, treatments: pd.DataFrame, gpus: dict[str, Accelerator],
                    stages: list[str]) -> list[dict]:
    """Per stage, the decision table: the GPUs whose setup fits first, fastest expected time first (the bound where
    a GPU has none), then those that do not."""
    tables = []
    for stage in stages:
        rows = []
        for key, gpu in gpus.items():
            mine = totals[(totals["gpu"] == key) & (totals["stage"] == stage)]
            if mine.empty:
                continue
            rows.append(decision_row(stage, mine.iloc[0], treatments[(treatments["gpu"] == key)
                                                                     & (treatments["stage"] == stage)], gpu))
        rows.sort(key=lambda row: row.pop("sort"))
        label = expected_header(row["framework"] for row in rows)
        for row in rows:
            framework = row.pop("framework")
            if label == "Expected" and row["expected"] is not None and framework:
                row["expected"] = {**row["expected"], "text": f"{row['expected']['text']} {framework}"}
        tables.append({"stage": stage, "title": stage.capitalize(),
                       "time_label": "TTFT (bound)" if stage == "prefill" else "TPOT (bound)",
                       "has_expected": any(row["expected"] is not None for row in rows), "expected_label": label,
                       "marks": estimate_note(row["estimate"] for row in rows), "rows": rows})
    return tables


def devices_needed(total: pd.Series, reach: float = math.inf) -> str:
    """The devices the setup runs on ('4'); for one that does not fit, the fewest devices whose usable memory could
    hold the busiest device's footprint times the devices ('≥ 3'), a lower bound that ignores how the model is
    split (memory only); more than the device's `reach` (Accelerator.reach: 1 for a device that links to none) is
    said to be out of its reach ('≥ 2, no link': it had read as a plan the device could run)."""
    devices = deployment(total)["devices"]
    if bool(total["fits"]):
        return str(devices)
    held = devices * float(total["footprint_bytes"])
    needed = max(devices + 1, math.ceil(held / capacity_bytes(total)))
    if needed > reach:
        return f"≥ {needed}, no link" if reach <= 1 else f"≥ {needed}, links reach {int(reach)}"
    return f"≥ {needed}"


def target_check(row: pd.Series, targets: dict) -> dict:
    """Whether a plan meets the search's targets in expectation ({"tpot_s", "ttft_s"}: None = no target) as
    {"meets", "text"}: 'yes', or what it misses ('TPOT 58.4 ms > 50 ms expected'); the bound met them (the search
    keeps only such plans), the expected times need not."""
    missed = []
    for name, column in (("TTFT", "ttft"), ("TPOT", "tpot")):
        target, expected = targets.get(f"{column}_s"), row.get(f"{column}_expected_s")
        if target and not units.missing(expected) and float(expected) > float(target):
            missed.append(f"{name} {units.seconds(expected)} > {units.seconds(target)}")
    return {"meets": not missed, "text": "yes" if not missed else "no: " + ", ".join(missed) + " expected"}


def recommended_plans(plans: pd.DataFrame, gpus: dict[str, Accelerator]) -> dict:
    """The deployment search's recommendation per GPU (roofline.serving.planner: the plan it ranks first that fits
    and meets the targets on its bound), best first, each with the targets checked on the expected times; the
    overall choice is called best only when it meets the targets in expectation; `reason` when no plan qualifies.
    plans.attrs["workload"] holds the targets (tpot_s, ttft_s) when the report rule hands them over."""
    targets = plans.attrs.get("workload") or {}
    picked = plans[plans["recommended"].astype(bool)].sort_values("tokens_per_s_per_device", ascending=False)
    rows = []
    for _, r in picked.iterrows():
        check = target_check(r, targets)
        rows.append({
            "deployment": str(r["deployment"]), "batch": units.integer(r["batch"]),
            "dtypes": f"{r['weight_dtype']} weights, {r['kv_dtype']} KV"
                      + ("" if r["attention"] == "flash" else f", {r['attention']} attention"),
            "ttft": units.seconds(r["ttft_s"]), "ttft_expected": units.seconds(r["ttft_expected_s"]),
            "tpot": units.seconds(r["tpot_s"]), "tpot_expected": units.seconds(r["tpot_expected_s"]),
            "per_device": units.sig(r["tokens_per_s_per_device"]),
            "per_device_expected": units.sig(r["tokens_per_s_per_device_expected"]),
            "per_user": units.sig(r["tokens_per_s_per_user"]), "bound": str(r["bound"]),
            "meets": check["meets"], "meets_text": check["text"],
            "chosen": bool(r["chosen"]) and check["meets"], "chosen_misses": bool(r["chosen"]) and not check["meets"],
            "gpu": gpus[r["gpu"]].name if r["gpu"] in gpus else str(r["gpu"]),
        })
    first = plans.iloc[0] if len(plans) else None
    workload = (f"{units.integer(first['isl'])} prompt and {units.integer(first['osl'])} output tokens per request"
                if first is not None else "")
    wanted = [f"{name} ≤ {units.seconds(targets[key])}" for name, key in (("TTFT", "ttft_s"), ("TPOT", "tpot_s"))
              if targets.get(key)]
    return {"rows": rows, "workload": workload, "targets": ", ".join(wanted) or "none",
            "reason": plans.attrs.get("reason", "") if not rows else ""}
