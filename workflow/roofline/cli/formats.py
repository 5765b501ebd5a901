"""What every subcommand shares on the way out: the table, CSV and JSON formats of a list of rows."""
from __future__ import annotations

import csv
import io
import math

from .. import display


def si(value, unit: str) -> str:
    """Human units for the table format (the report's formatters): 1.23 GFLOP, 67.1 MB, 4.01 ms."""
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return display.seconds(value) if unit == "s" else display.prefixed(value, unit)


def _cell(value, unit: str | None) -> str:
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
