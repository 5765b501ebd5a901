"""`roofline calibrate --from aiconfigurator`: one system's and one framework's measured kernel tables from the
`aiconfigurator-core` package as a calibration table (roofline.estimate.aic_rows says what is kept and how)."""
from __future__ import annotations

import csv
import gzip
from collections import Counter
from pathlib import Path

from ..engine.columns import CALIBRATION_COLUMNS
from ..engine.errors import RooflineInputError
from ..engine.hardware import catalog
from . import aic_rows as rows_of
from . import aic_source as src
from .aic_gemm import untuned_dtypes, untuned_left_out
from .calibration import NUMBERS, manifest
from .table_checks import check_rows

#: the framework imported when none is given and the device ships no table (the shipped default otherwise: the
#: framework whose tables cover the most curve keys, benchmarks/build_calibrations.py)
FALLBACK_FRAMEWORK = "trtllm"
#: every numeric column of a converted table, with the value a row without it gets: each is parsed and checked
#: (table_checks.check_rows) before the table is written
CONVERTED_NUMBERS = {**NUMBERS, **dict.fromkeys(("batch", "q_len", "heads", "kv_heads", "head_dim", "bound_s",
                                                  "group_size", "experts", "top_k"), 0.0)}


def import_tables(system: str, framework: str | None = None, version: str | None = None) -> tuple[list[dict], str]:
    """(calibration rows, a summary) of `system` (catalog key or the package's name) measured under `framework`
    at `version` (default: the package's current one)."""
    key, name = src.resolve_system(system)
    default = manifest()["devices"].get(key, {}).get("default", FALLBACK_FRAMEWORK)
    framework = src.check_framework(framework or default)
    version = src.pick_version(name, framework, version)
    gpu = catalog()[key]

    def folder(family: str):
        return src.table_dir(name, family, framework, version)

    rows = (rows_of.gemm_rows(gpu, folder("gemm"), framework, folder("quantize"))
            + rows_of.attention_rows(gpu, folder("attention"), framework)
            + rows_of.mla_rows(gpu, folder("mla"), framework) + rows_of.moe_rows(gpu, folder("moe"), framework)
            + rows_of.comm_rows(gpu, folder("comm"), src.newest_dir(name, "comm", "nccl"), framework)
            + rows_of.quantize_rows(gpu, folder("quantize"), framework))
    checked = check_rows(rows_of.thin_cells(rows), CONVERTED_NUMBERS, where=f"{src.PACKAGE}'s {name} tables under "
                         f"{framework} {version}")
    rows = list(checked.rows)
    missing = [family for family in ("gemm", "attention", "moe", "mla", "comm", "quantize") if folder(family) is None]
    note = f"\n  no {', '.join(missing)} table at or before {framework} {version}" if missing else ""
    if untuned_left_out(folder("gemm"), framework, key):
        note += (f"\n  left out its {', '.join(untuned_dtypes(framework, key))} GEMMs, timed at the fallback tactic "
                 "a served engine does not run (roofline.estimate.aic_gemm.UNTUNED): lookups take another "
                 "framework's on this device")
    if checked.rejected:
        note += f"\n  left out {checked.rejected} kernels that fail the table checks; first: {checked.example}"
    return rows, summary(rows, key, framework, version) + note


def summary(rows: list[dict], key: str, framework: str, version: str) -> str:
    """What was imported: rows per op class and dtype."""
    counts = Counter((r["op_class"], r["dtype"], r["weight_dtype"] or r["kv_dtype"]) for r in rows)
    lines = [f"{src.PACKAGE} {src.package_version()}: {key} under {framework} {version}: {len(rows)} kernels"]
    lines += [f"  {cls:13s} {dtype:5s} {operand or '-':6s} {n:6d}"
              for (cls, dtype, operand), n in sorted(counts.items())]
    return "\n".join(lines)


#: columns of whole numbers (shapes, message elements), written exactly
WHOLE = ("m", "n", "k", "batch", "q_len", "kv_len", "heads", "kv_heads", "head_dim", "group_size", "experts", "top_k",
         "span")


def _cell(value, column: str = ""):
    """Numbers to 6 significant digits; the WHOLE columns exactly."""
    if column in WHOLE and isinstance(value, float) and value.is_integer():
        return int(value)
    return f"{value:.6g}" if isinstance(value, float) else value


def write_table(rows: list[dict], out: str | Path) -> str:
    """Write the rows as a calibration CSV (CALIBRATION_COLUMNS, numbers to 6 significant digits), gzipped when
    `out` ends in .gz."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(CALIBRATION_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: _cell(r[k], k) for k in CALIBRATION_COLUMNS} for r in rows)
    return str(path)


def calibrate(system: str, framework: str | None, version: str | None, out: str) -> str:
    """`roofline calibrate --from aiconfigurator`: import, write the table (and its fit beside it, so that using it
    costs no fitting) and return what was done."""
    from .calibration import save_fit

    if not out.endswith((".csv", ".csv.gz")):
        raise RooflineInputError(f"--out: '{out}' is not allowed; expected a path ending in .csv or .csv.gz")
    rows, text = import_tables(system, framework, version)
    path = write_table(rows, out)
    save_fit(path, catalog()[src.resolve_system(system)[0]])
    return f"{text}\nwrote {path} and its fit {Path(path).name.removesuffix('.gz').removesuffix('.csv')}.fit.npz"
