"""`roofline compare OLD_RESULTS NEW_RESULTS`: what moved between two runs, per model, gpu and stage (the totals)
and per model and gpu (the recommended plans, where both runs have them)."""
from __future__ import annotations

import argparse
import json
import math

from ..engine.columns import COMPARE_COLUMNS
from ..pipeline.compare import DEFAULT_THRESHOLD, compare_results
from . import options
from .formats import csv_text, format_table, json_safe, si, unit_of

HELP = "what moved between two results folders, per model and GPU"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = COMPARE_COLUMNS


def add_arguments(parser) -> None:
    parser.add_argument("old", metavar="OLD_RESULTS", help="the earlier results folder (results/ or the project "
                                                           "folder holding it)")
    parser.add_argument("new", metavar="NEW_RESULTS", help="the later results folder")
    parser.add_argument("--threshold", type=threshold, default=DEFAULT_THRESHOLD,
                        help="list values that moved by more than this: a fraction (0.05) or a percentage (5%%); "
                             "default 5%%")
    options.add_format(parser)


def threshold(text: str) -> float:
    """--threshold: '5%' or '0.05' (a fraction from 0 to 1)."""
    percent = text.strip().endswith("%")
    try:
        value = float(text.strip().removesuffix("%")) / (100 if percent else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--threshold: '{text}' is not a number; expected a fraction (0.05) or a "
                                         "percentage (5%)") from None
    if not (math.isfinite(value) and 0 <= value < 1):
        raise argparse.ArgumentTypeError(f"--threshold: {text} is not allowed; expected a fraction from 0 to 1 "
                                         "(0.05) or a percentage below 100% (5%)")
    return value


def table(args) -> tuple[list[dict], dict]:
    """(the rows that moved, notes: `compared` rows per table and the `threshold`)."""
    return compare_results(args.old, args.new, args.threshold)


def _shown(column: str, value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and math.isnan(value):
        return "-"
    unit = unit_of(column)
    return si(value, unit) if unit else f"{value:.4g}"


def _change(value: float) -> str:
    if math.isnan(value):
        return "-"
    return "from 0" if math.isinf(value) else f"{value * 100:+.1f}%"


def run(args) -> str:
    rows, notes = table(args)
    if args.format == "csv":
        return csv_text(rows, COLUMNS)
    if args.format == "json":
        return json.dumps([json_safe(row) for row in rows], indent=1)
    compared = ", ".join(f"{n} {name} rows" for name, n in notes["compared"].items())
    if not rows:
        return f"nothing moved by more than {notes['threshold']:.1%} ({compared} compared)"
    shown = [{**row, "old": _shown(row["column"], row["old"]), "new": _shown(row["column"], row["new"]),
              "change": _change(row["change"])} for row in rows]
    return format_table(shown) + f"\n{len(rows)} moved by more than {notes['threshold']:.1%} ({compared} compared)"
