"""`roofline plan`: the deployment search, the Pareto frontier of tokens/s per device vs tokens/s per user under
latency targets; every candidate served by the serving model (`--mode`), or by the step model of `--prefill`."""
from __future__ import annotations

import json
import sys

from ..engine import hardware
from ..engine.columns import PLAN_COLUMNS, PLAN_SERVING_COLUMNS
from ..engine.dtypes import STORAGE_DTYPES
from ..engine.errors import RooflineInputError
from ..engine.scenario import Scenario
from ..serving import planner, search, search_rows
from . import options, spec_options
from .formats import csv_text, format_table, json_safe
from .options import choice, fraction, positive_float, positive_int

HELP = "deployment search: the Pareto frontier of tokens/s per device vs tokens/s per user under latency targets"
#: the --format csv columns (and the Python API's DataFrame columns); `--prefill` prints PLAN_COLUMNS only
COLUMNS = PLAN_COLUMNS + PLAN_SERVING_COLUMNS
_HUMAN = (("deployment", None), ("batch", None), ("weight_dtype", None), ("kv_dtype", None),
          ("attention", None), ("ttft_s", "s"), ("tpot_s", "s"), ("tpot_expected_s", "s"),
          ("tokens_per_s", "token/s"),
          ("tokens_per_s_per_device", "token/s"), ("tokens_per_s_per_user", "token/s"), ("bound", None),
          ("estimate", None))
_HUMAN_SERVED = (("deployment", None), ("batch", None), ("weight_dtype", None), ("kv_dtype", None),
                 ("attention", None), ("ttft_expected_s", "s"), ("tpot_expected_s", "s"),
                 ("tokens_per_s_per_device_expected", "token/s"), ("tokens_per_s_per_user_expected", "token/s"),
                 ("tokens_per_s_per_device", "token/s"), ("bound", None), ("estimate", None))


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", action="append", help="candidate device (repeat the option); default: every "
                                                       "catalog device")
    parser.add_argument("--isl", required=True, type=positive_int("--isl"), help="prompt tokens per request")
    parser.add_argument("--osl", required=True, type=positive_int("--osl"), help="output tokens per request")
    parser.add_argument("--tpot-ms", type=positive_float("--tpot-ms"), help="target: time per output token [ms]")
    parser.add_argument("--ttft-ms", type=positive_float("--ttft-ms"), help="target: time to first token [ms]")
    parser.add_argument("--max-devices", type=positive_int("--max-devices"),
                        help="devices of a deployment (both pools); default 8 (16 for disaggregated pools)")
    parser.add_argument("--dtypes", nargs="+", type=choice("--dtypes", STORAGE_DTYPES),
                        help="weight and KV-cache dtypes to search (KV: 8 bits or more); default "
                             + " ".join(planner.DEFAULT_DTYPES))
    parser.add_argument("--weight-dtypes", nargs="+", type=choice("--weight-dtypes", STORAGE_DTYPES),
                        help="weight dtypes to search (default: --dtypes)")
    parser.add_argument("--kv-dtypes", nargs="+", type=choice("--kv-dtypes", STORAGE_DTYPES),
                        help="KV-cache dtypes to search (default: --dtypes)")
    parser.add_argument("--mode", type=choice("--mode", search.SEARCH_MODES),
                        help="aggregated (default) | disaggregated | all: the serving model's deployments")
    parser.add_argument("--prefill", type=choice("--prefill", planner.PREFILL_MODES),
                        help="the step model of the previous release (one decode step, prompts separate or "
                             "interleaved); replaced by --mode")
    parser.add_argument("--memory-utilization", type=fraction("--memory-utilization"),
                        help="usable fraction of each device's memory (default: the framework's rule; "
                             f"{Scenario.memory_utilization} with --prefill)")
    spec_options.add_arguments(parser)
    parser.add_argument("--top", type=positive_int("--top"), help="print only the best N frontier rows")
    options.add_format(parser)


def table(args) -> tuple[list[dict], dict]:
    """(the frontier rows, best first, at most --top; notes: `evaluated` configurations in `seconds`, and the
    `reason` no candidate fits and meets the targets, "" when some do)."""
    gpus = [options.gpu(key) for key in args.gpu] if args.gpu else list(hardware.catalog().values())
    if args.prefill is not None:
        return _step_model(args, gpus)
    model = options.model(args.model)
    weights = args.weight_dtypes or args.dtypes or list(planner.DEFAULT_DTYPES)
    kvs = args.kv_dtypes or args.dtypes or list(planner.DEFAULT_DTYPES)
    workload = search.ServedWorkload(isl=args.isl, osl=args.osl, tpot_s=_seconds(args.tpot_ms),
                                     ttft_s=_seconds(args.ttft_ms), prefix_hit=args.prefix_hit,
                                     spec=spec_options.speculation(args, model), framework=args.framework)
    result = search.search(model, gpus, workload, weights, kvs, args.max_devices, args.mode or "aggregated",
                           memory_utilization=args.memory_utilization)
    rows = search_rows.rows(result, search.frontier(result)[:args.top])
    return rows, {"evaluated": len(result), "seconds": result.seconds,
                  "reason": "" if rows else search_rows.no_plan_reason(result)}


def _step_model(args, gpus) -> tuple[list[dict], dict]:
    """`--prefill`: the previous release's search (one decode step per candidate)."""
    if args.mode is not None:
        raise RooflineInputError("--prefill: not with --mode; --prefill is the step model of the previous release, "
                                 "--mode the serving model that replaces it (drop one of the two)")
    serving_only = [name for name in ("weight_dtypes", "kv_dtypes", "spec_method") if getattr(args, name)]
    serving_only += ["prefix_hit"] if args.prefix_hit else []
    if serving_only:
        raise RooflineInputError(f"--{serving_only[0].replace('_', '-')}: only with the serving model (drop "
                                 "--prefill)")
    workload = planner.Workload(isl=args.isl, osl=args.osl, prefill=args.prefill, tpot_s=_seconds(args.tpot_ms),
                                ttft_s=_seconds(args.ttft_ms))
    result = planner.search(options.model(args.model), gpus, workload,
                            dtypes=args.dtypes or list(planner.DEFAULT_DTYPES), max_devices=args.max_devices or 8,
                            memory_utilization=args.memory_utilization or Scenario.memory_utilization)
    rows = planner.rows(result, planner.frontier(result)[:args.top])
    return rows, {"evaluated": len(result), "seconds": result.seconds,
                  "reason": "" if rows else planner.no_plan_reason(result), "columns": PLAN_COLUMNS}


def _seconds(milliseconds: float | None) -> float | None:
    return milliseconds / 1e3 if milliseconds else None


def run(args) -> str:
    """The frontier in --format, `evaluated N configurations in S s` on stderr, and one line saying why when no
    candidate fits and meets the targets (on stderr unless the format is the table)."""
    rows, notes = table(args)
    print(f"evaluated {notes['evaluated']} configurations in {notes['seconds']:.3f} s "
          f"({notes['evaluated'] / notes['seconds']:,.0f} per second)", file=sys.stderr)
    if notes["reason"] and args.format != "table":
        print(notes["reason"], file=sys.stderr)
    served = args.prefill is None
    if args.format == "csv":
        return csv_text(rows, COLUMNS if served else PLAN_COLUMNS)
    if args.format == "json":
        return json.dumps([json_safe(r) for r in rows], indent=1)
    return format_table(rows, _HUMAN_SERVED if served else _HUMAN) if rows else notes["reason"]
