"""`roofline plan`: the deployment search, the Pareto frontier of tokens/s per device vs tokens/s per user under
latency targets."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace

from ..engine import hardware
from ..engine.columns import COST_COLUMNS, PLAN_COLUMNS
from ..engine.dtypes import STORAGE_DTYPES
from ..engine.errors import RooflineInputError
from ..engine.scenario import Scenario
from ..serving import planner, search_budget
from ..serving.cost import RANK_ON, add_plan_cost, check_priced, rank_on_cost
from . import options
from .formats import csv_text, format_table, json_safe
from .options import choice, fraction, number_in, positive_float, positive_int

HELP = "deployment search: the Pareto frontier of tokens/s per device vs tokens/s per user under latency targets"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = PLAN_COLUMNS + COST_COLUMNS
_HUMAN = (("deployment", None), ("batch", None), ("weight_dtype", None), ("kv_dtype", None),
          ("attention", None), ("ttft_s", "s"), ("tpot_s", "s"), ("tpot_expected_s", "s"),
          ("tokens_per_s", "token/s"),
          ("tokens_per_s_per_device", "token/s"), ("tokens_per_s_per_user", "token/s"), ("bound", None),
          ("estimate", None))
_COST = (("cost_per_million_tokens", "USD"), ("cost_per_million_tokens_expected", "USD"))
#: Latency targets allowed [ms] (1 us to ~2.8 h; the schema's plan.tpot_ms/ttft_ms bounds are the same)
TARGET_MS = (1e-3, 1e7)


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", action="append", help="candidate device (repeat the option); default: every "
                                                       "catalog device")
    parser.add_argument("--isl", required=True, type=positive_int("--isl"), help="prompt tokens per request")
    parser.add_argument("--osl", required=True, type=positive_int("--osl"), help="output tokens per request")
    parser.add_argument("--tpot-ms", type=number_in("--tpot-ms", *TARGET_MS, "ms"),
                        help="target: time per output token [ms]")
    parser.add_argument("--ttft-ms", type=number_in("--ttft-ms", *TARGET_MS, "ms"),
                        help="target: time to first token [ms]")
    parser.add_argument("--max-devices", type=positive_int("--max-devices", search_budget.MAX_DEVICES), default=8,
                        help=f"most devices in one deployment (tp x pp), at most {search_budget.MAX_DEVICES}")
    parser.add_argument("--max-candidates", type=positive_int("--max-candidates", search_budget.MAX_CANDIDATES_CEILING),
                        default=search_budget.MAX_CANDIDATES,
                        help=f"refuse a search of more candidates (default {search_budget.MAX_CANDIDATES:,}: about a "
                             "minute)")
    parser.add_argument("--dtypes", nargs="+", type=choice("--dtypes", STORAGE_DTYPES),
                        default=list(planner.DEFAULT_DTYPES),
                        help="weight and KV-cache dtypes to search (KV: 8 bits or more)")
    parser.add_argument("--prefill", type=choice("--prefill", planner.PREFILL_MODES), default="separate",
                        help="separate: decode is not slowed by prompts; interleaved: prompts time-share the devices")
    parser.add_argument("--memory-utilization", type=fraction("--memory-utilization"),
                        default=Scenario.memory_utilization, help="usable fraction of each device's memory")
    parser.add_argument("--top", type=positive_int("--top"), help="print only the best N frontier rows")
    parser.add_argument("--price-per-hour", action="append", type=_price, metavar="[GPU=]USD",
                        help="USD per device-hour, for every candidate or one GPU (repeat); adds cost per million "
                             "tokens (none shipped)")
    parser.add_argument("--rank-on", type=choice("--rank-on", RANK_ON), default="bound",
                        help="bound: most tokens/s per device first; cost: cheapest expected cost per million "
                             "tokens first (needs a price per candidate)")
    options.add_format(parser)


def _price(text: str) -> tuple[str | None, float]:
    """--price-per-hour: 'USD' (every candidate) or 'GPU=USD' as (gpu key or None, USD per device-hour)."""
    key, _, value = text.rpartition("=")
    try:
        return key or None, positive_float("--price-per-hour")(value)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(f"{error}, or GPU=USD") from None


def priced(gpus: list, prices: list[tuple[str | None, float]] | None) -> list:
    """The candidate devices with --price-per-hour applied (a GPU's own price wins over the general one)."""
    prices = prices or []
    keys = [gpu.key for gpu in gpus]
    for key, _ in prices:
        if key is not None and key not in keys:
            raise RooflineInputError(f"--price-per-hour: '{key}' is not a candidate gpu; candidates: {', '.join(keys)}")
    general = [value for key, value in prices if key is None]
    own = {key: value for key, value in prices if key is not None}
    return [replace(gpu, price_per_hour=own.get(gpu.key, general[-1] if general else gpu.price_per_hour))
            for gpu in gpus]


def table(args) -> tuple[list[dict], dict]:
    """(the frontier rows, best first, at most --top; notes: `evaluated` configurations in `seconds`, and the
    `reason` no candidate fits and meets the targets, "" when some do)."""
    gpus = [options.gpu(key) for key in dict.fromkeys(args.gpu)] if args.gpu else list(hardware.catalog().values())
    gpus = priced(gpus, args.price_per_hour)
    if args.rank_on == "cost":
        check_priced(gpus)
    workload = planner.Workload(isl=args.isl, osl=args.osl, prefill=args.prefill,
                                tpot_s=args.tpot_ms / 1e3 if args.tpot_ms else None,
                                ttft_s=args.ttft_ms / 1e3 if args.ttft_ms else None)
    model = options.model(args.model)
    count = search_budget.count_candidates(model, gpus, args.dtypes, args.max_devices, args.memory_utilization)
    search_budget.check_budget(count, args.max_candidates, "plan", "lower --max-devices, give fewer --gpu or --dtypes, "
                               "or raise --max-candidates")
    progress = search_budget.Progress(count, lambda line: print(line, file=sys.stderr, flush=True))
    result = planner.search(model, gpus, workload, dtypes=args.dtypes, max_devices=args.max_devices,
                            memory_utilization=args.memory_utilization, progress=progress)
    rows = _ranked(result, args, {gpu.key: gpu for gpu in gpus})
    notes = {"evaluated": len(result), "seconds": result.seconds,
             "reason": "" if rows else planner.no_plan_reason(result)}
    return rows, notes


def _ranked(result: planner.Search, args, gpus: dict) -> list[dict]:
    """The frontier rows with their cost, at most --top: the search's own order, or --rank-on cost's."""
    if args.rank_on == "cost":  # every device's frontier, then the cost front over them
        return rank_on_cost(add_plan_cost(planner.rows(result, planner.frontier(result, per_gpu=True)), gpus))[
            :args.top]
    return add_plan_cost(planner.rows(result, planner.frontier(result)[:args.top]), gpus)


def run(args) -> str:
    """The frontier in --format, `evaluated N configurations in S s` on stderr, and one line saying why when no
    candidate fits and meets the targets (on stderr unless the format is the table)."""
    rows, notes = table(args)
    print(f"evaluated {notes['evaluated']} configurations in {notes['seconds']:.3f} s "
          f"({notes['evaluated'] / notes['seconds']:,.0f} per second)", file=sys.stderr)
    if notes["reason"] and args.format != "table":
        print(notes["reason"], file=sys.stderr)
    if args.format == "csv":
        return csv_text(rows, COLUMNS)
    if args.format == "json":
        return json.dumps([json_safe(r) for r in rows], indent=1)
    priced_rows = any(row["cost_per_million_tokens"] == row["cost_per_million_tokens"] for row in rows)  # not NaN
    return format_table(rows, _HUMAN + (_COST if priced_rows else ())) if rows else notes["reason"]
