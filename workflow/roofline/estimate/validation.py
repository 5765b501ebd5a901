"""The validation numbers of the expected times, for the report's caveat and the README: read from
data/calibrations/validation.csv (benchmarks/validate_calibration.py: leave-one-out and held-out shapes per table and
op class) and served.csv (benchmarks/validate_served.py: expected TPOT against measured served runs)."""
from __future__ import annotations

import csv
from functools import lru_cache

from .calibration import data_dir, manifest

#: op classes whose per-kernel errors the caveat quotes
QUOTED = ("gemm", "attention", "moe")


def _rows(name: str) -> list[dict]:
    path = data_dir() / name
    if not path.is_file():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@lru_cache(maxsize=1)
def summary() -> dict:
    """{"kernels": {op_class: (lowest median, highest median, highest p90) of the held-out shapes over the shipped
    package tables}, "served": {"runs", "mape", "mape_main", "max_error", "bound_below_measured"} over every served
    run, "package": "aiconfigurator-core 0.12.0"} (empty parts where a file is missing)."""
    kernels: dict[str, tuple[float, float, float]] = {}
    for row in _rows("validation.csv"):
        if row["check"] != "held_out" or row["op_class"] not in QUOTED or row["table"].endswith(".vidur"):
            continue
        median, p90 = float(row["median_error"]), float(row["p90_error"])
        low, high, worst = kernels.get(row["op_class"], (median, median, p90))
        kernels[row["op_class"]] = (min(low, median), max(high, median), max(worst, p90))
    served = next((r for r in _rows("served.csv")
                   if (r["model"], r["framework"], r["precision"], r["tp"]) == ("all",) * 4), None)
    overall = {}
    if served:
        overall = {"runs": int(served["runs"]), "mape": float(served["mape"]), "max_error": float(served["max_error"]),
                   "mape_main": float(served["mape_main"]) if served["mape_main"] else None,
                   "bound_below_measured": served["bound_below_measured"] == "True"}
    package = f"{manifest().get('package', 'aiconfigurator-core')} {manifest().get('version', '')}".strip()
    return {"kernels": kernels, "served": overall, "package": package}


def sentence() -> str:
    """One sentence for a caveat: what the expected times were validated against, with the numbers."""
    numbers = summary()
    parts = []
    if numbers["kernels"]:
        parts.append("per-kernel error on shapes held out of the measured tables: median " + ", ".join(
            f"{low:.0%}-{high:.0%} ({cls})" for cls, (low, high, _) in numbers["kernels"].items()))
    served = numbers["served"]
    if served:
        text = (f"expected TPOT against {served['runs']} measured served runs (decode-dominated, from "
                f"{numbers['package']}'s silicon data): {served['mape']:.1%} mean absolute error")
        if served["mape_main"] is not None:
            text += f" (the previous estimator: {served['mape_main']:.1%})"
        parts.append(text + ", and no bound above a measurement")
    return ("Validation: " + "; ".join(parts) + ".") if parts else ""
