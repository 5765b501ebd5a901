"""`roofline ops`: the per-operator table of one (model, gpu, stage, scenario), values per instance, with count."""
from __future__ import annotations

import json

from ..engine.columns import OP_COLUMNS, OP_EXPECTED_COLUMNS
from . import scenario
from .formats import csv_text, format_table, json_safe

HELP = "per-operator table (values per instance, with count)"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = OP_COLUMNS + OP_EXPECTED_COLUMNS
_HUMAN = (("op", None), ("op_class", None), ("count", None), ("flops", "FLOP"), ("bytes", "B"),
          ("intensity", "FLOP/B"), ("attainable_flops_per_s", "FLOP/s"), ("t_s", "s"), ("bound", None),
          ("t_expected_s", "s"), ("estimate", None))

add_arguments = scenario.add_arguments


def table(args) -> tuple[list[dict], dict]:
    """(one row per operator, no notes)."""
    return scenario.analysis(args)[0], {}


def run(args) -> str:
    rows, _ = table(args)
    if args.format == "csv":
        return csv_text(rows, COLUMNS)
    if args.format == "json":
        return json.dumps([{k: r[k] for k in COLUMNS} for r in map(json_safe, rows)], indent=1)
    return format_table(rows, _HUMAN)
