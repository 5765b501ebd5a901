"""Validate the expected-time estimator on every shipped calibration table (the README and the report quote it).

    python benchmarks/validate_calibration.py [--tables h200-sxm.trtllm ...]

1. Leave-one-out, per table and op class: each measured kernel predicted from its K_NEAREST neighbours in the
   estimator's coordinates (roofline.estimate.calibration.coordinates), itself left out, with the local-slope
   median the grid nodes hold (curves.local_log_ratio). Median and p90 of |expected - measured| / measured.
2. Held-out shapes, per table and op class: the table split by shape (every other GEMM n, attention batch size,
   MoE token count, quantize width: HELD_OUT), the estimator fitted on one half exactly as shipped (grids, then the
   lookup) and checked on the other. The check the issue's held-back H200 kernels would make, on the package's own
   data.
3. Where the bound exceeds a measured time, per table and op (kernels and collectives): counted and the worst
   ratio printed.
Writes data/calibrations/validation.csv (table, check, op_class, median_error, p90_error, n); with --tables, the
other tables' rows are kept as the file had them; validate_served.py's `decode_step` rows are kept either way.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from roofline.engine.hardware import catalog  # noqa: E402
from roofline.estimate import calibration as cal  # noqa: E402
from roofline.estimate import curves  # noqa: E402
from roofline.estimate.lookup import Calibration, expected_from  # noqa: E402

VALIDATION = cal.data_dir() / "validation.csv"
#: the shape column split into halves, per op class (rows with an even rank of its distinct values are held out)
HELD_OUT = {"gemm": "n", "attention": "batch", "moe": "m", "elementwise": "n", "norm": "m", "embedding": "m"}


def tables() -> dict[str, tuple[Path, str]]:
    """{name: (path, catalog key)} of every shipped table (manifest.json and the vidur tables)."""
    out = {}
    for key, entry in cal.manifest()["devices"].items():
        for framework, table in entry["tables"].items():
            out[f"{key}.{framework}"] = (cal.data_dir() / table["file"], key)
    for key in cal.FALLBACK_TABLES:
        path = cal.data_dir() / f"{key}.vidur.csv.gz"
        if path.is_file():
            out[f"{key}.vidur"] = (path, key)
    return out


def ladder(path: Path, key: str) -> list[dict]:
    """The kernel rows of a table (no ceilings, no collectives) with their bound on the catalog device."""
    gpu = catalog()[key]
    rows = []
    for row in cal.read_table(str(path)):
        if row["op_class"] in (cal.CEILING, "communication") or row["measured_s"] <= 0:
            continue
        bound = cal.bound_seconds(gpu, row["dtype"], row["flops"], row["bytes"])
        if bound > 0:
            rows.append({**row, "bound": bound, "key": cal.curve_key(row)})
    return rows


def leave_one_out(rows: list[dict], floor: float) -> np.ndarray:
    """|error| of every row predicted from its neighbours of the same curve key, itself left out."""
    errors = np.empty(len(rows))
    for key in {r["key"] for r in rows}:
        index = [i for i, r in enumerate(rows) if r["key"] == key]
        group = [rows[i] for i in index]
        bound = np.array([r["bound"] for r in group])
        measured = np.array([r["measured_s"] for r in group])
        axes, _ = cal.coordinates(key[0], key[3], bound, np.array([r["flops"] for r in group]),
                                  np.array([r["bytes"] for r in group]), np.array([cal.third_of(r) for r in group]))
        y = np.log10(np.maximum(measured / bound, 1.0))  # as the fit takes them (calibration.Points.fit)
        predicted = np.empty(len(group))
        for start in range(0, len(group), 512):
            part = slice(start, min(start + 512, len(group)))
            distance = sum((a[part, None] - a[None, :]) ** 2 for a in axes)
            distance[np.arange(distance.shape[0]), np.arange(part.start, part.stop)] = np.inf
            k = min(curves.K_NEAREST, len(group) - 1)
            nearest = np.argpartition(distance, k - 1, axis=1)[:, :k]
            ratio = 10 ** curves.local_log_ratio(axes[0][nearest], y[nearest], axes[0][part])
            predicted[part] = np.maximum(np.maximum(bound[part], floor), bound[part] * ratio)
        errors[index] = np.abs(predicted - measured) / measured
    return errors


def held_out(rows: list[dict], key: str) -> dict[str, np.ndarray]:
    """{op_class: |error|} of the held-out half predicted by the shipped method fitted on the other half."""
    rank: dict[str, dict[float, int]] = {}
    for cls in {r["op_class"] for r in rows}:
        column = HELD_OUT.get(cls, "m")
        values = sorted({float(r.get(column) or 0) for r in rows if r["op_class"] == cls})
        rank[cls] = {value: i for i, value in enumerate(values)}

    def held(row):
        return rank[row["op_class"]][float(row.get(HELD_OUT.get(row["op_class"], "m")) or 0)] % 2 == 0

    train = [r for r in rows if not held(r)]
    test = [r for r in rows if held(r)]
    gpu = catalog()[key]
    calibration = Calibration(cal.fit_rows(train, gpu), curves.Fit(), True)  # the half alone, no fallback
    out: dict[str, list] = {}
    for row in test:
        cls, dtype, operand, phase = row["key"]
        axes, _ = cal.coordinates(cls, phase, row["bound"], row["flops"], row["bytes"], cal.third_of(row))
        grid, _ = calibration._grid(calibration.own, cls, dtype, operand, phase)
        if grid is None:
            continue
        predicted = float(expected_from(grid, calibration.own.floor_s, np.array([row["bound"]]),
                                        [np.atleast_1d(a) for a in axes[1:]])[0])
        out.setdefault(cls, []).append(abs(predicted - row["measured_s"]) / row["measured_s"])
    return {cls: np.array(errors) for cls, errors in out.items()}


def collectives(path: Path, key: str) -> list[dict]:
    """The communication rows of a table with the engine's bound of each collective on the catalog device."""
    gpu = catalog()[key]
    return [{**row, "bound": cal.collective_bound_seconds(gpu, row["op"], int(row["span"]), row["m"], row["dtype"])}
            for row in cal.read_table(str(path)) if row["op_class"] == "communication" and row["measured_s"] > 0]


def below_bound(rows: list[dict]) -> dict[str, tuple[int, float]]:
    """{op: (rows measured faster than their bound, lowest measured / bound)}."""
    out: dict[str, tuple[int, float]] = {}
    for row in rows:
        if row["measured_s"] < row["bound"]:
            count, worst = out.get(row["op"], (0, 1.0))
            out[row["op"]] = (count + 1, min(worst, row["measured_s"] / row["bound"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", help="table names (default: every shipped one)")
    args = parser.parse_args()
    unknown = sorted(set(args.tables or ()) - set(tables()))
    if unknown:
        parser.error(f"--tables: no shipped table {', '.join(unknown)}; shipped: {', '.join(sorted(tables()))}")
    results = []
    for name, (path, key) in tables().items():
        if args.tables and name not in args.tables:
            continue
        rows = ladder(path, key)
        floor = min(r["measured_s"] for r in rows)
        loo = leave_one_out(rows, floor)
        print(f"\n## {name} ({len(rows)} kernels)\n| op_class | n | leave-one-out median / p90 | held-out shapes "
              "median / p90 |\n|---|---|---|---|")
        split = held_out(rows, key)
        for cls in sorted({r["op_class"] for r in rows}):
            errors = loo[[r["op_class"] == cls for r in rows]]
            results.append(_result(name, "loo", cls, errors))
            cells = f"{np.median(errors):.1%} / {np.percentile(errors, 90):.1%}"
            if cls in split and split[cls].size:
                results.append(_result(name, "held_out", cls, split[cls]))
                cells += f" | {np.median(split[cls]):.1%} / {np.percentile(split[cls], 90):.1%}"
            print(f"| {cls} | {errors.size} | {cells} |")
        faster = below_bound(rows + collectives(path, key))
        print("measured < bound: " + (", ".join(f"{op} {n} (down to {worst:.2f}x)" for op, (n, worst) in
                                                faster.items()) or "none"))
        for op, (count, worst) in faster.items():
            results.append({"table": name, "check": "below_bound", "op_class": op, "median_error": f"{worst:.4g}",
                            "p90_error": "", "n": count})
    if VALIDATION.is_file():  # other tables' rows (--tables), and the rows of validate_served.py and
        # compare_measured.py, stay
        results = _merged(results) if args.tables else results + _kept_rows()
    with VALIDATION.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(results[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(results)
    print(f"\nwrote {VALIDATION}")


def _merged(results: list[dict]) -> list[dict]:
    """The file's rows with those of the tables just checked in their place (the other tables' as they were; a
    table new to the file at the end)."""
    fresh: dict[str, list[dict]] = {}
    for r in results:
        fresh.setdefault(r["table"], []).append(r)
    out = []
    with VALIDATION.open(newline="") as handle:
        for r in csv.DictReader(handle):
            if r["table"] not in fresh or r["check"] in KEPT:
                out.append(r)
            elif fresh[r["table"]]:
                out.extend(fresh[r["table"]])
                fresh[r["table"]] = []
    return out + [r for rows in fresh.values() for r in rows]


#: the checks other scripts write into validation.csv: validate_served.py's, compare_measured.py's
KEPT = ("decode_step", "real_device", "real_device_below_bound")


def _kept_rows() -> list[dict]:
    """The file's rows that other scripts wrote (KEPT)."""
    with VALIDATION.open(newline="") as handle:
        return [r for r in csv.DictReader(handle) if r["check"] in KEPT]


def _result(table: str, check: str, cls: str, errors: np.ndarray) -> dict:
    return {"table": table, "check": check, "op_class": cls, "median_error": f"{np.median(errors):.4g}",
            "p90_error": f"{np.percentile(errors, 90):.4g}", "n": int(errors.size)}


if __name__ == "__main__":
    main()
