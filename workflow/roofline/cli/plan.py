"""`roofline plan`: the deployment search, the Pareto frontier of tokens/s per device vs tokens/s per user under
latency targets."""
from __future__ import annotations

import json
import sys

from ..engine import hardware
from ..engine.columns import PLAN_COLUMNS
from ..engine.dtypes import STORAGE_DTYPES
from ..engine.scenario import Scenario
from ..serving import planner
from . import options
from .formats import csv_text, format_table, json_safe
from .options import choice, fraction, non_negative_int, positive_float, positive_int

HELP = "deployment search: the Pareto frontier of tokens/s per device vs tokens/s per user under latency targets"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = PLAN_COLUMNS
#: frontier rows printed unless --top says otherwise (a frontier can hold hundreds; --top 0 prints them all)
DEFAULT_TOP = 20
_HUMAN = (("deployment", None), ("batch", None), ("weight_dtype", None), ("kv_dtype", None),
          ("attention", None), ("ttft_s", "s"), ("tpot_s", "s"), ("tpot_expected_s", "s"),
          ("tokens_per_s", "token/s"),
          ("tokens_per_s_per_device", "token/s"), ("tokens_per_s_per_user", "token/s"), ("bound", None),
          ("estimate", None))


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", action="append", help="candidate device (repeat the option); default: every "
                                                       "catalog device")
    parser.add_argument("--isl", required=True, type=positive_int("--isl"), help="prompt tokens per request")
    parser.add_argument("--osl", required=True, type=positive_int("--osl"), help="output tokens per request")
    parser.add_argument("--tpot-ms", type=positive_float("--tpot-ms"), help="target: time per output token [ms]")
    parser.add_argument("--ttft-ms", type=positive_float("--ttft-ms"), help="target: time to first token [ms]")
    parser.add_argument("--max-devices", type=positive_int("--max-devices"), default=8)
    parser.add_argument("--dtypes", nargs="+", type=choice("--dtypes", STORAGE_DTYPES),
                        default=list(planner.DEFAULT_DTYPES),
                        help="weight and KV-cache dtypes to search (KV: 8 bits or more)")
    parser.add_argument("--prefill", type=choice("--prefill", planner.PREFILL_MODES), default="separate",
                        help="separate: decode is not slowed by prompts; interleaved: prompts time-share the devices")
    parser.add_argument("--memory-utilization", type=fraction("--memory-utilization"),
                        default=Scenario.memory_utilization, help="usable fraction of each device's memory")
    parser.add_argument("--top", type=non_negative_int("--top"), default=DEFAULT_TOP,
                        help=f"print only the best N frontier rows (default {DEFAULT_TOP}; 0 = every row); stderr "
                             "says how many were left out")
    options.add_format(parser)


def table(args) -> tuple[list[dict], dict]:
    """(the frontier rows, best first, at most --top; notes: `evaluated` configurations in `seconds`, and the
    `reason` no candidate fits and meets the targets, "" when some do)."""
    gpus = [options.gpu(key) for key in args.gpu] if args.gpu else list(hardware.catalog().values())
    workload = planner.Workload(isl=args.isl, osl=args.osl, prefill=args.prefill,
                                tpot_s=args.tpot_ms / 1e3 if args.tpot_ms else None,
                                ttft_s=args.ttft_ms / 1e3 if args.ttft_ms else None)
    result = planner.search(options.model(args.model), gpus, workload, dtypes=args.dtypes,
                            max_devices=args.max_devices, memory_utilization=args.memory_utilization)
    frontier = planner.frontier(result)
    rows = planner.rows(result, frontier[:args.top or None])
    notes = {"evaluated": len(result), "seconds": result.seconds, "left_out": len(frontier) - len(rows),
             "reason": "" if rows else planner.no_plan_reason(result)}
    return rows, notes


def run(args) -> str:
    """The frontier in --format, `evaluated N configurations in S s` on stderr, and one line saying why when no
    candidate fits and meets the targets (on stderr unless the format is the table)."""
    rows, notes = table(args)
    print(f"evaluated {notes['evaluated']} configurations in {notes['seconds']:.3f} s "
          f"({notes['evaluated'] / notes['seconds']:,.0f} per second)", file=sys.stderr)
    if notes["left_out"]:
        print(f"{len(rows)} of {len(rows) + notes['left_out']} frontier rows shown (the best first); --top N shows "
              "N, --top 0 every row", file=sys.stderr)
    if notes["reason"] and args.format != "table":
        print(notes["reason"], file=sys.stderr)
    if args.format == "csv":
        return csv_text(rows, COLUMNS)
    if args.format == "json":
        return json.dumps([json_safe(r) for r in rows], indent=1)
    return format_table(rows, _HUMAN) if rows else notes["reason"]
