"""Validate the calibrated estimates on every shipped calibration table (the README quotes the output).

    python benchmarks/validate_calibration.py

1. Leave-one-out error of t_expected per op_class (median and p90 of |expected - measured| / measured), for each
   method of roofline.estimate.calibration.FITS: the method with the lowest errors is
   roofline.estimate.calibration.METHOD.
2. Decode steps held out whole: expected vs measured time of one decode step (sum over the measured kernels of a
   layer x 32 layers) for Llama-3-8B on the A100 calibrated WITHOUT any Llama-3-8B row, and for Llama-2-7B on the
   H100 with every kernel of that batch size left out.
3. Where the bound exceeds a measured time (a measurement faster than the roofline), per op.
Writes the numbers of 1 (the chosen method) and 2 to workflow/roofline/data/calibrations/validation.csv.
"""
from __future__ import annotations

import csv
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from roofline.engine.hardware import catalog  # noqa: E402
from roofline.estimate.calibration import (
    BIN_DECADES,
    CEILING,
    FITS,
    K_NEAREST,
    METHOD,
    bound_seconds,
    local_log_ratio,
    read_table,  # noqa: E402
    regime,
    shipped_path,
)

TABLES = ("a100-sxm-80gb", "h100-sxm", "h200-sxm")
LAYERS = 32
#: Rows of data/calibrations/validation.csv (the report's calibration caveat quotes them).
RESULTS: list[dict] = []
VALIDATION = Path(__file__).resolve().parents[1] / "workflow/roofline/data/calibrations/validation.csv"
#: {"table": the launch floor of the table being validated} (roofline.estimate.calibration._fit: one floor per table)
FLOOR: dict[str, float] = {}


def ladder(key: str) -> list[dict]:
    """Ladder rows of a shipped table with their bound on the catalog device."""
    gpu = catalog()[key]
    rows = []
    for row in read_table(str(shipped_path(key))):
        if row["op_class"] != CEILING:
            rows.append({**row, "bound": bound_seconds(gpu, row["dtype"], row["flops"], row["bytes"]),
                         "ai": row["flops"] / row["bytes"],
                         "group": (row["op_class"], regime(gpu, row["dtype"], row["flops"], row["bytes"]))})
    return rows


def loo_interp(bound: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Leave-one-out predictions of fit_interp, fast: dropping a point changes only its own bin's knot."""
    lx, ly = np.log10(bound), np.log10(measured / bound)
    bins = np.floor(lx / BIN_DECADES)
    labels = np.unique(bins)
    knots_x = np.array([np.median(lx[bins == b]) for b in labels])
    knots_y = np.array([np.median(ly[bins == b]) for b in labels])
    order = np.sort(measured)
    predictions = np.empty_like(measured)
    for i in range(len(measured)):
        j = int(np.searchsorted(labels, bins[i]))
        others = np.flatnonzero(bins == bins[i])
        others = others[others != i]
        if len(others):
            xs, ys = knots_x.copy(), knots_y.copy()
            xs[j], ys[j] = np.median(lx[others]), np.median(ly[others])
        else:
            xs, ys = np.delete(knots_x, j), np.delete(knots_y, j)
        floor = FLOOR.get("table", order[0])
        ratio = 10 ** np.interp(lx[i], xs, ys) if len(xs) else 1.0
        predictions[i] = max(bound[i], floor, bound[i] * ratio)
    return predictions


def loo_knn(bound: np.ndarray, measured: np.ndarray, intensity: np.ndarray) -> np.ndarray:
    """Leave-one-out predictions of fit_knn: each kernel from its K_NEAREST neighbours, itself excluded."""
    x, y, z = np.log10(bound), np.log10(measured / bound), np.log10(np.maximum(intensity, 1e-3))
    order = np.sort(measured)
    predictions = np.empty_like(measured)
    for start in range(0, len(x), 512):
        chunk = slice(start, min(start + 512, len(x)))
        distance = (x[chunk, None] - x[None, :]) ** 2 + (z[chunk, None] - z[None, :]) ** 2
        distance[np.arange(distance.shape[0]), np.arange(chunk.start, chunk.stop)] = np.inf
        k = min(K_NEAREST, len(x) - 1)
        nearest = np.argpartition(distance, k - 1, axis=1)[:, :k]
        ratio = 10 ** np.array([local_log_ratio(x[n], y[n], x[i]) for i, n in zip(range(chunk.start, chunk.stop),
                                                                                   nearest)])
        floor = FLOOR.get("table", order[0])
        predictions[chunk] = np.maximum(np.maximum(bound[chunk], floor), bound[chunk] * ratio)
    return predictions


def loo(method: str, bound: np.ndarray, measured: np.ndarray, intensity: np.ndarray) -> np.ndarray:
    if method == "knn":
        return loo_knn(bound, measured, intensity)
    if method == "interp":
        return loo_interp(bound, measured)
    keep = np.ones(len(bound), dtype=bool)
    predictions = np.empty_like(measured)
    for i in range(len(bound)):
        keep[i] = False
        curve = replace(FITS[method](bound[keep], measured[keep], intensity[keep]), floor_s=FLOOR["table"])
        predictions[i] = curve(bound[i], intensity[i])
        keep[i] = True
    return predictions


def loo_table(rows: list[dict]) -> dict[str, dict[str, tuple[float, float, int]]]:
    """{method: {op_class: (median, p90, n)}} of the leave-one-out relative error (curves per op_class and
    regime, as roofline.estimate.calibration fits them; every shipped table is one dtype)."""
    result: dict[str, dict] = {}
    FLOOR["table"] = min(r["measured_s"] for r in rows)
    for method in FITS:
        errors: dict[str, list] = {}
        for key in sorted({r["group"] for r in rows}):
            group = [r for r in rows if r["group"] == key]
            bound = np.array([r["bound"] for r in group])
            measured = np.array([r["measured_s"] for r in group])
            intensity = np.array([r["flops"] / r["bytes"] for r in group])
            errors.setdefault(key[0], []).extend(np.abs(loo(method, bound, measured, intensity) - measured) / measured)
        result[method] = {cls: (float(np.median(e)), float(np.percentile(e, 90)), len(e)) for cls, e in errors.items()}
    return result


def step_error(train: list[dict], steps: dict[int, list[dict]], method: str = METHOD) -> list[tuple]:
    """(batch, measured step, expected step, error) with curves fitted on `train` per op_class."""
    FLOOR["table"] = min(r["measured_s"] for r in train)
    curves = {}
    for key in {r["group"] for r in train}:
        group = [r for r in train if r["group"] == key]
        fitted = FITS[method](*(np.array([r[name] for r in group]) for name in ("bound", "measured_s", "ai")))
        curves[key] = replace(fitted, floor_s=FLOOR["table"])
    out = []
    for batch, kernels in sorted(steps.items()):
        measured = LAYERS * sum(r["measured_s"] for r in kernels)
        expected = LAYERS * sum(curves[r["group"]](r["bound"], r["ai"]) for r in kernels)
        bound = LAYERS * sum(r["bound"] for r in kernels)
        out.append((batch, bound, measured, expected, expected / measured - 1))
    return out


def unique(kernels: list[dict]) -> list[dict]:
    """One row per operator (some batch sizes appear in two sections of vidur's files)."""
    return list({r["op"]: r for r in kernels}.values())


def decode_checks() -> None:
    a100 = ladder("a100-sxm-80gb")
    llama3 = [r for r in a100 if "llama3-8b" in r["provenance"]]
    train = [r for r in a100 if "llama3-8b" not in r["provenance"]]
    batches = sorted({int(r["batch"]) for r in llama3 if r["op"] == "attention_decode"})
    steps = {b: unique([r for r in llama3 if (r["op"] == "attention_decode" and int(r["batch"]) == b)
                        or (r["op_class"] != "attention" and int(r["m"]) == b)]) for b in batches}
    report("A100, Llama-3-8B decode (kv 3392), calibrated without Llama-3-8B", step_error(train, steps))
    h100 = ladder("h100-sxm")
    out = []
    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        held = unique([r for r in h100 if int(r["m"]) == b])
        if held:
            out += step_error([r for r in h100 if int(r["m"]) != b], {b: held})
    report("H100, Llama-2-7B decode without attention (vidur has no H100 attention), batch held out", out)


def report(title: str, rows: list[tuple]) -> None:
    errors = np.abs([r[-1] for r in rows])
    RESULTS.append({"table": title, "check": "decode_step", "op_class": "", "median_error": float(np.median(errors)),
                    "p90_error": float(np.percentile(errors, 90)), "n": len(rows)})
    print(f"\n{title}\n| batch | bound | measured | expected | error |\n|---|---|---|---|---|")
    for batch, bound, measured, expected, error in rows:
        print(f"| {batch} | {bound * 1e3:.3f} ms | {measured * 1e3:.3f} ms | {expected * 1e3:.3f} ms | {error:+.1%} |")
    errors = np.abs([r[-1] for r in rows])
    print(f"median |error| {np.median(errors):.1%}, max {errors.max():.1%}")


def main() -> None:
    for key in TABLES:
        rows = ladder(key)
        print(f"\n## {key} ({len(rows)} ladder rows, source: {rows[0]['source']})")
        print("| op_class | n | " + " | ".join(f"{m} median / p90" for m in FITS) + " |")
        print("|---|---|" + "---|" * len(FITS))
        errors = loo_table(rows)
        for cls in sorted(errors[METHOD]):
            n = errors[METHOD][cls][2]
            RESULTS.append({"table": key, "check": "loo", "op_class": cls, "median_error": errors[METHOD][cls][0],
                            "p90_error": errors[METHOD][cls][1], "n": n})
            cells = " | ".join(f"{errors[m][cls][0]:.1%} / {errors[m][cls][1]:.1%}" for m in FITS)
            print(f"| {cls} | {n} | {cells} |")
        faster = [r for r in rows if r["measured_s"] < r["bound"]]
        by_op: dict[str, list[float]] = {}
        for r in faster:
            by_op.setdefault(r["op"], []).append(r["measured_s"] / r["bound"])
        print(f"measured < bound: {len(faster)} of {len(rows)} rows; " + (", ".join(
            f"{op}: {len(v)} (down to {min(v):.2f}x)" for op, v in by_op.items()) or "none"))
    decode_checks()
    with VALIDATION.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(RESULTS[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()} for r in RESULTS)
    print(f"\nwrote {VALIDATION}")


if __name__ == "__main__":
    main()
