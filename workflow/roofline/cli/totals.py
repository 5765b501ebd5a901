"""`roofline totals`: the totals of one stage: time, TTFT/TPOT, footprint, fit."""
from __future__ import annotations

import json

from ..engine.columns import TOTAL_COLUMNS, TOTAL_EXPECTED_COLUMNS
from . import scenario
from .formats import csv_text, json_safe, si

HELP = "totals of one stage: time, TTFT/TPOT, footprint, fit"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = TOTAL_COLUMNS + TOTAL_EXPECTED_COLUMNS
#: units of the table format; other floats print with 4 significant digits
_UNITS = {"flops": "FLOP", "bytes": "B", "t_compute_s": "s", "t_memory_s": "s", "t_s": "s", "ttft_s": "s",
          "tpot_s": "s", "weight_bytes": "B", "kv_cache_bytes": "B", "activation_bytes": "B",
          "footprint_bytes": "B", "memory_bytes": "B", "total_params": "", "active_params": "",
          "tokens_per_s": "token/s", "weight_bytes_per_device": "B", "kv_cache_bytes_per_device": "B",
          "usable_memory_bytes": "B", "tokens_per_s_per_device": "token/s", "t_network_s": "s",
          "ttft_expected_s": "s", "tpot_expected_s": "s", "tokens_per_s_expected": "token/s"}

add_arguments = scenario.add_arguments


def table(args) -> tuple[list[dict], dict]:
    """(the one totals row, no notes)."""
    return [scenario.analysis(args)[1]], {}


def run(args) -> str:
    (total,), _ = table(args)
    if args.format == "csv":
        return csv_text([total], COLUMNS)
    if args.format == "json":
        return json.dumps(json_safe(total), indent=1)
    return "\n".join(f"{key:26s} {_text(key, value)}" for key, value in total.items())


def _text(key: str, value) -> str:
    if key in _UNITS:
        return si(value, _UNITS[key])
    return f"{value:.4g}" if isinstance(value, float) else str(value)
