"""What every subcommand shares on the way out: the table, CSV and JSON formats of a list of rows."""
from __future__ import annotations

import csv
import io
import json
import math

from .. import display

#: a column's unit by the start of its name (the first that matches), else by its end (the first that matches: the
#: rates per second before the seconds)
UNIT_PREFIXES = (("cost_per_million_tokens", "USD"), ("tokens_per_s", "token/s"), ("requests_per_s", "request/s"))
UNIT_SUFFIXES = (("flops_per_s", "FLOP/s"), ("bytes_per_s", "B/s"), ("tokens_per_s", "token/s"),
                 ("requests_per_s", "request/s"), ("_bytes", "B"), ("_bytes_per_device", "B"), ("_params", ""),
                 ("_j", "J"), ("_s", "s"))
#: whole column names with a unit of their own
UNIT_NAMES = {"flops": "FLOP", "bytes": "B"}


def unit_of(column: str) -> str | None:
    """The SI unit a result column is printed in (`si`; "" a plain count), by the naming rule every result table
    follows (README, after the wiki section: seconds end in _s, bytes in _bytes, rates name what they count per
    second); None for a column with no unit (floats print with 4 significant digits), relative errors (`_error`)
    included."""
    if column in UNIT_NAMES:
        return UNIT_NAMES[column]
    if column.endswith("_error"):
        return None
    for prefix, unit in UNIT_PREFIXES:
        if column.startswith(prefix):
            return unit
    return next((unit for suffix, unit in UNIT_SUFFIXES if column.endswith(suffix)), None)


def si(value, unit: str) -> str:
    """Human units for the table format (the report's formatters): 1.23 GFLOP, 67.1 MB, 4.01 ms."""
    if isinstance(value, float) and math.isnan(value):
        return "-"
    if unit == "USD":  # money keeps its unit: no "mUSD"
        return f"{value:.3g} USD"
    return display.seconds(value) if unit == "s" else display.prefixed(value, unit)


def _cell(value, unit: str | None) -> str:
    if isinstance(value, float) and math.isnan(value):  # not applicable: "-" in every table cell, with a unit or not
        return "-"
    if unit == "FLOP/B":
        return f"{value:.4g}"
    return si(value, unit) if unit else str(value)


def format_table(rows: list[dict], spec=None) -> str:
    """Aligned columns; `spec` is (column, unit or None) per column, default: every key of the first row as is."""
    spec = spec if spec is not None else [(key, None) for key in rows[0]]
    header = [name for name, _ in spec]
    body = [[_cell(row[name], unit) for name, unit in spec] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in body]
    return "\n".join(lines)


def csv_text(rows: list[dict], columns) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().rstrip("\n")


def json_safe(row: dict) -> dict:
    """`row` with NaN and infinities as None (JSON has no such numbers)."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def one_row_text(row: dict, columns, fmt: str, width: int) -> str:
    """One result row (totals, serve) as `fmt`: csv (header + row in `columns`), json, or a table of `key value`
    lines, keys padded to `width`, values in SI units where the column has one (`unit_of`; floats else to 4
    significant digits)."""
    if fmt == "csv":
        return csv_text([row], columns)
    if fmt == "json":
        return json.dumps(json_safe(row), indent=1)

    def text(key: str, value) -> str:
        unit = unit_of(key)
        if unit is not None and not isinstance(value, str):
            return si(value, unit)
        if isinstance(value, float):
            return "-" if math.isnan(value) else f"{value:.4g}"
        return str(value)

    width = max(width, *map(len, row))  # a key longer than the usual keeps the values in one column
    return "\n".join(f"{key:{width}s} {text(key, value)}" for key, value in row.items())
