"""`roofline totals`: the totals of one stage: time, TTFT/TPOT, footprint, fit, cost and energy per token."""
from __future__ import annotations

from ..engine.columns import COST_COLUMNS, TOTAL_COLUMNS, TOTAL_EXPECTED_COLUMNS
from . import options, scenario
from .formats import one_row_text

HELP = "totals of one stage: time, TTFT/TPOT, footprint, fit, cost and energy per token"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = TOTAL_COLUMNS + TOTAL_EXPECTED_COLUMNS + COST_COLUMNS


def add_arguments(parser) -> None:
    """The scenario's options (roofline.cli.scenario) and --price-per-hour."""
    scenario.add_arguments(parser)
    options.add_price(parser)


def table(args) -> tuple[list[dict], dict]:
    """(the one totals row, no notes)."""
    return [scenario.analysis(args)[1]], {}


def run(args) -> str:
    (total,), _ = table(args)
    return one_row_text(total, COLUMNS, args.format, 26)
