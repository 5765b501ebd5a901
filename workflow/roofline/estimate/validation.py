"""The validation numbers of the expected times, for the report's caveat and the README: read from
data/calibrations/validation.csv (benchmarks/validate_calibration.py: leave-one-out and held-out shapes per table and
op class) and served.csv (benchmarks/validate_served.py: expected TPOT against measured served runs)."""
from __future__ import annotations

import csv
from functools import lru_cache

from ..engine.hardware import catalog
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
    return {"kernels": kernels, "served": overall, "package": package, "devices": _real_devices()}


def _real_devices() -> dict:
    """{device key: (kernels, median error, kernels faster than their bound)} of the kernels timed on real devices
    outside the package's tables (benchmarks/compare_measured.py --validation), against each device's default
    table."""
    rows = _rows("validation.csv")
    out = {}
    for key, entry in manifest()["devices"].items():
        table = f"{key}.{entry['default']}"
        found = {r["check"]: r for r in rows if r["table"] == table and r["op_class"] == "all"
                 and r["check"].startswith("real_device")}
        if "real_device" in found:
            below = found.get("real_device_below_bound", {}).get("n")
            out[key] = (int(found["real_device"]["n"]), float(found["real_device"]["median_error"]),
                        int(below) if below else None)
    return out


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
                f"{numbers['package']}'s silicon data): {served['mape']:.1%} mean absolute percentage error")
        parts.append(text + ", and no bound above a measurement")
    for key, (n, median, below) in numbers["devices"].items():
        name = catalog()[key].name if key in catalog() else key
        text = (f"{n} kernels timed on a real {name} outside those tables (PyTorch's): median error {median:.0%} "
                "against its shipped table's expected times")
        parts.append(text + (", and no bound above a measurement" if below == 0 else
                             f", {below} faster than their bound" if below else ""))
    return ("Validation: " + "; ".join(parts) + ".") if parts else ""
