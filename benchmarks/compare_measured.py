"""Compare `roofline measure` tables (kernels timed on one device) with the expected times of the shipped tables.

    python benchmarks/compare_measured.py TABLE [TABLE ...] [--frameworks trtllm vllm]
                                          [--out rows.csv] [--validation]

Each kernel of the measured tables (no ceilings) is looked up exactly as the engine looks up an operator of the same
class, dtypes, FLOPs and bytes (roofline.estimate.lookup.Calibration.kernels, a standalone kernel: launch gap
included) in the shipped table of each framework of the tables' catalog device. Printed per framework and op class:
kernels, median and p90 of |expected - measured| / measured, the median signed error (expected / measured - 1: above
zero, we expect slower than measured), the `estimate` labels, and the kernels measured faster than their roofline
bound (a bound above a measurement is a defect: each is listed). The measured ceilings are printed against the
catalog's datasheet figures. `--out` writes one row per kernel and framework; `--validation` writes the summary into
data/calibrations/validation.csv (check `real_device`, per shipped table and op class, `all` included, and
`real_device_below_bound`: kernels measured faster than their bound), where the report's caveat quotes it
(roofline.estimate.validation), replacing the rows it wrote before for the same tables.
"""
from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from roofline.engine.errors import RooflineInputError  # noqa: E402
from roofline.engine.hardware import GIGA, TERA, catalog  # noqa: E402
from roofline.estimate import calibration as cal  # noqa: E402
from roofline.estimate.lookup import calibration_for  # noqa: E402


def expected_rows(rows: list[dict], key: str, framework: str) -> list[dict]:
    """One row per measured kernel: its bound on `key`, the expected time from the framework's shipped table and
    the label the lookup earns."""
    gpu, calibration = catalog()[key], calibration_for(catalog()[key], framework)
    out = []
    for row in rows:
        bound = cal.bound_seconds(gpu, row["dtype"], row["flops"], row["bytes"])
        cls, dtype, operand, phase = cal.curve_key(row)
        axes, _ = cal.coordinates(cls, phase, bound, row["flops"], row["bytes"], cal.third_of(row))
        expected, label = calibration.kernels(cls, dtype, operand, phase, np.array([bound]),
                                              [np.atleast_1d(a) for a in axes[1:]])
        out.append({"framework": framework, "op_class": cls, "op": row["op"], "dtype": dtype, "operand": operand,
                    "m": row["m"], "n": row["n"], "k": row["k"], "batch": row["batch"], "kv_len": row["kv_len"],
                    "measured_s": row["measured_s"], "bound_s": bound, "expected_s": float(expected[0]),
                    "estimate": label})
    return out


#: the columns that make two kernels the same kernel: a shape timed in two tables (Mixtral's norms are Llama-3-8B's)
SHAPE = ("op_class", "op", "dtype", "weight_dtype", "kv_dtype", "m", "n", "k", "batch", "q_len", "kv_len", "heads",
         "kv_heads", "head_dim", "experts", "top_k")


def distinct(rows: list[dict]) -> list[dict]:
    """`rows` with each kernel shape once (the first table's timing kept)."""
    seen, out = set(), []
    for row in rows:
        key = tuple(str(row.get(c, "")) for c in SHAPE)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per framework and op class: n, median / p90 |error|, median signed error, labels, bounds above a measurement."""
    frame = frame.assign(error=frame["expected_s"] / frame["measured_s"] - 1,
                         over=frame["bound_s"] > frame["measured_s"])
    groups = frame.groupby(["framework", "op_class"])
    table = pd.DataFrame({
        "kernels": groups.size(),
        "median_abs_error": groups["error"].apply(lambda e: e.abs().median()),
        "p90_abs_error": groups["error"].apply(lambda e: e.abs().quantile(0.9)),
        "median_signed_error": groups["error"].median(),
        "estimate": groups["estimate"].apply(lambda s: "/".join(f"{k} {v}" for k, v in s.value_counts().items())),
        "bound_above_measured": groups["over"].sum(),
    })
    overall = frame.groupby("framework")
    for framework, part in overall:
        table.loc[(framework, "all"), :] = [len(part), part["error"].abs().median(),
                                            part["error"].abs().quantile(0.9), part["error"].median(),
                                            "", int(part["over"].sum())]
    return table.sort_index()


def ceilings(rows: list[dict], key: str) -> str:
    """The measured copy bandwidth and square-matmul rates against the catalog's datasheet figures."""
    gpu, measured = catalog()[key], cal.measured_ceilings(rows)
    lines = []
    if measured["bandwidth_bytes_per_s"]:
        bandwidth = measured["bandwidth_bytes_per_s"]
        lines.append(f"bandwidth {bandwidth / GIGA:.0f} GB/s = {bandwidth / gpu.bandwidth_bytes_per_s:.0%} of "
                     f"{gpu.bandwidth_bytes_per_s / GIGA:.0f} GB/s datasheet")
    for dtype, peak in measured["peak_flops_per_s"].items():
        sheet = gpu.peak_flops_per_s.get(dtype)
        lines.append(f"{dtype} matmul {peak / TERA:.0f} TFLOP/s" + (f" = {peak / sheet:.0%} of {sheet / TERA:.0f}"
                                                                      " TFLOP/s datasheet" if sheet else ""))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+", help="tables written by `roofline measure` on one device (CSV)")
    parser.add_argument("--gpu", help="catalog key (default: the table's gpu column)")
    parser.add_argument("--frameworks", nargs="+", help="shipped tables to compare with (default: every one)")
    parser.add_argument("--out", help="CSV of every kernel's measured, bound and expected time per framework")
    parser.add_argument("--validation", action="store_true",
                        help="write the summary into data/calibrations/validation.csv (the report quotes it)")
    args = parser.parse_args()
    rows = []
    for table in args.tables:
        try:
            rows += cal.read_table(table)
        except RooflineInputError as error:
            parser.error(f"{table}: {error}")
    if len({r["device"] for r in rows}) > 1:
        parser.error(f"tables of several devices ({', '.join(sorted({r['device'] for r in rows}))}); give one's")
    key = args.gpu or rows[0]["gpu"]
    if key not in catalog():
        parser.error(f"--gpu: '{key}' is not a catalog key")
    shipped = list(cal.shipped_frameworks(key))
    if not shipped:
        parser.error(f"--gpu: {key} has no shipped table to compare with")
    unknown = sorted(set(args.frameworks or ()) - set(shipped))
    if unknown:
        parser.error(f"--frameworks: no shipped {key} table of {', '.join(unknown)}; shipped: {', '.join(shipped)}")
    frameworks = args.frameworks or shipped
    kernels = distinct([r for r in rows if r["op_class"] != cal.CEILING and r["measured_s"] > 0])
    frame = pd.DataFrame([row for fw in frameworks for row in expected_rows(kernels, key, fw)])
    print(f"{', '.join(args.tables)}: {len(kernels)} kernels on {rows[0]['device']} against the shipped {key} tables "
          f"({', '.join(frameworks)})")
    print(ceilings(rows, key))
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.float_format", "{:.3f}".format):
        print(summary(frame).to_string())
    over = frame[frame["bound_s"] > frame["measured_s"]].drop_duplicates(["op", "m", "n", "k", "batch", "kv_len"])
    for row in over.itertuples():
        print(f"bound above measured: {row.op} {row.dtype} m={row.m} n={row.n} k={row.k} batch={row.batch} "
              f"kv_len={row.kv_len}: measured {row.measured_s * 1e6:.1f} us, bound {row.bound_s * 1e6:.1f} us")
    if args.out:
        frame.to_csv(args.out, index=False)
        print(f"wrote {args.out}")
    if args.validation:
        print(f"wrote {write_validation(summary(frame), key)}")


#: validation.csv's checks this script writes (benchmarks/validate_calibration.py keeps them)
CHECKS = ("real_device", "real_device_below_bound")


def write_validation(table: pd.DataFrame, key: str) -> Path:
    """The summary's rows in validation.csv (check `real_device`; `real_device_below_bound` per table), in place of
    the rows this script wrote before for the same tables."""
    path = cal.data_dir() / "validation.csv"
    names = {f"{key}.{framework}" for framework in table.index.get_level_values(0)}
    with path.open(newline="") as handle:
        rows = [r for r in csv.DictReader(handle) if not (r["check"] in CHECKS and r["table"] in names)]
    for (framework, cls), r in table.iterrows():
        name = f"{key}.{framework}"
        rows.append({"table": name, "check": "real_device", "op_class": cls,
                     "median_error": f"{r.median_abs_error:.4g}", "p90_error": f"{r.p90_abs_error:.4g}",
                     "n": int(r.kernels)})
        if cls == "all":
            rows.append({"table": name, "check": "real_device_below_bound", "op_class": "all", "median_error": "",
                         "p90_error": "", "n": int(r.bound_above_measured)})
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


if __name__ == "__main__":
    main()
