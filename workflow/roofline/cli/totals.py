"""`roofline totals`: the totals of one stage: time, TTFT/TPOT, footprint, fit, cost and energy per token."""
from __future__ import annotations

from ..engine.columns import COST_COLUMNS, TOTAL_COLUMNS, TOTAL_EXPECTED_COLUMNS
from . import options, scenario
from .formats import one_row_text

HELP = "totals of one stage: time, TTFT/TPOT, footprint, fit, cost and energy per token"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = TOTAL_COLUMNS + TOTAL_EXPECTED_COLUMNS + COST_COLUMNS
#: units of the table format; other floats print with 4 significant digits
_UNITS = {"flops": "FLOP", "bytes": "B", "t_compute_s": "s", "t_memory_s": "s", "t_s": "s", "ttft_s": "s",
          "tpot_s": "s", "weight_bytes": "B", "kv_cache_bytes": "B", "activation_bytes": "B",
          "footprint_bytes": "B", "memory_bytes": "B", "total_params": "", "active_params": "",
          "tokens_per_s": "token/s", "weight_bytes_per_device": "B", "kv_cache_bytes_per_device": "B",
          "usable_memory_bytes": "B", "tokens_per_s_per_device": "token/s", "t_network_s": "s",
          "ttft_expected_s": "s", "tpot_expected_s": "s", "tokens_per_s_expected": "token/s",
          "energy_per_token_j": "J", "cost_per_million_tokens": "USD", "cost_per_million_tokens_expected": "USD"}


def add_arguments(parser) -> None:
    """The scenario's options (roofline.cli.scenario) and --price-per-hour."""
    scenario.add_arguments(parser)
    options.add_price(parser)


def table(args) -> tuple[list[dict], dict]:
    """(the one totals row, no notes)."""
    return [scenario.analysis(args)[1]], {}


def run(args) -> str:
    (total,), _ = table(args)
    return one_row_text(total, COLUMNS, args.format, _UNITS, 26)
