"""`roofline plan`: the deployment search, the Pareto frontier of tokens/s per device vs tokens/s per user under
latency targets."""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from ..engine import hardware
from ..engine.columns import COST_COLUMNS, PLAN_COLUMNS, PLAN_SERVING_COLUMNS
from ..engine.dtypes import STORAGE_DTYPES
from ..engine.errors import RooflineInputError
from ..engine.scenario import FP8_SCALINGS, Scenario
from ..serving import planner, search, search_budget, search_rows
from ..serving.candidates import DEFAULT_KV_DTYPES, served_kv_dtypes
from ..serving.cost import RANK_ON, add_plan_cost, check_priced, rank_on_cost
from ..serving.framework import runs_on
from . import options, spec_options
from .formats import csv_text, format_table, json_safe
from .options import GPU_HELP, choice, fraction, non_negative_int, number_in, positive_float, positive_int
from .scenario import check_fp8_scaling, check_framework

HELP = "deployment search: the Pareto frontier of tokens/s per device vs tokens/s per user under latency targets"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = PLAN_COLUMNS + PLAN_SERVING_COLUMNS + COST_COLUMNS
#: the columns of `--prefill` (the step model of the previous release)
STEP_COLUMNS = PLAN_COLUMNS + COST_COLUMNS
#: frontier rows printed unless --top says otherwise (a frontier can hold hundreds; --top 0 prints them all)
DEFAULT_TOP = 20
_HUMAN = (("deployment", None), ("batch", None), ("weight_dtype", None), ("kv_dtype", None),
          ("attention", None), ("ttft_s", "s"), ("tpot_s", "s"), ("tpot_expected_s", "s"),
          ("tokens_per_s", "token/s"), ("tokens_per_s_per_device", "token/s"),
          ("tokens_per_s_per_device_expected", "token/s"), ("tokens_per_s_per_user", "token/s"), ("bound", None),
          ("estimate", None), ("framework", None))
_HUMAN_SERVED = (("deployment", None), ("devices", None), ("batch", None), ("weight_dtype", None), ("kv_dtype", None),
                 ("attention", None), ("ttft_expected_s", "s"), ("ttft_s", "s"), ("tpot_expected_s", "s"),
                 ("tpot_s", "s"), ("tokens_per_s_per_device_expected", "token/s"),
                 ("tokens_per_s_per_user_expected", "token/s"), ("tokens_per_s_per_device", "token/s"),
                 ("bound", None), ("estimate", None), ("framework", None))
_COST = (("cost_per_million_tokens", "USD"), ("cost_per_million_tokens_expected", "USD"))
#: Latency targets allowed [ms] (1 us to ~2.8 h; the schema's plan.tpot_ms/ttft_ms bounds are the same)
TARGET_MS = (1e-3, 1e7)


def add_arguments(parser) -> None:
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", action="append", help="candidate device (repeat the option): " + GPU_HELP
                        + "; default: every catalog device")
    parser.add_argument("--isl", required=True, type=positive_int("--isl"), help="prompt tokens per request")
    parser.add_argument("--osl", required=True, type=positive_int("--osl"), help="output tokens per request")
    parser.add_argument("--tpot-ms", type=number_in("--tpot-ms", *TARGET_MS, "ms"),
                        help="target: time per output token [ms]")
    parser.add_argument("--ttft-ms", type=number_in("--ttft-ms", *TARGET_MS, "ms"),
                        help="target: time to first token [ms]")
    parser.add_argument("--max-devices", type=positive_int("--max-devices", search_budget.MAX_DEVICES),
                        help="devices of a deployment (both pools); default 8 (16 for disaggregated pools), at most "
                             f"{search_budget.MAX_DEVICES}")
    parser.add_argument("--max-candidates", type=positive_int("--max-candidates", search_budget.MAX_CANDIDATES_CEILING),
                        default=search_budget.MAX_CANDIDATES,
                        help=f"refuse a search of more candidates (default {search_budget.MAX_CANDIDATES:,}: about a "
                             "minute)")
    parser.add_argument("--dtypes", nargs="+", type=options.choices("--dtypes", STORAGE_DTYPES),
                        action=options.ListOption,
                        help="weight and KV-cache dtypes to search (KV: 8 bits or more); default "
                             + " ".join(planner.DEFAULT_DTYPES))
    parser.add_argument("--weight-dtypes", nargs="+", type=options.choices("--weight-dtypes", STORAGE_DTYPES),
                        action=options.ListOption,
                        help="weight dtypes to search (default: --dtypes)")
    parser.add_argument("--kv-dtypes", nargs="+", type=options.choices("--kv-dtypes", STORAGE_DTYPES),
                        action=options.ListOption,
                        help="KV-cache dtypes to search (default: the floats of --dtypes, all of it if it has "
                             "none; without --dtypes " + " ".join(DEFAULT_KV_DTYPES) + ": what vLLM, SGLang and "
                             "TensorRT-LLM offer; the step model's search, --prefill, takes no --kv-dtypes and "
                             "searches every dtype of --dtypes for the KV cache too)")
    parser.add_argument("--attention-weight-dtype", type=choice("--attention-weight-dtype", STORAGE_DTYPES),
                        help="the candidates' attention projections (default: as their weights; bf16 for NVIDIA's "
                             "NVFP4 DeepSeek, Kimi, GLM-5, MiniMax and Qwen3.5 checkpoints)")
    parser.add_argument("--fp8-scaling", type=choice("--fp8-scaling", FP8_SCALINGS),
                        help="the candidates' fp8 weight scales: tensor (default) or block (128 x 128, as "
                             "DeepSeek-V3's and Qwen3's own FP8 checkpoints)")
    parser.add_argument("--mode", type=choice("--mode", search.SEARCH_MODES),
                        help="aggregated (default) | disaggregated | all: the serving model's deployments")
    parser.add_argument("--prefill", type=choice("--prefill", planner.PREFILL_MODES),
                        help="the step model of the previous release (one decode step, prompts separate or "
                             "interleaved); replaced by --mode")
    parser.add_argument("--memory-utilization", type=fraction("--memory-utilization"),
                        help="usable fraction of each device's memory (default: the framework's rule; "
                             f"{Scenario.memory_utilization} with --prefill)")
    spec_options.add_arguments(parser, step_model=True)
    parser.add_argument("--top", type=non_negative_int("--top"), default=DEFAULT_TOP,
                        help=f"print only the best N frontier rows (default {DEFAULT_TOP}; 0 = every row; with "
                             "--mode all the best N of each mode); stderr says how many were left out")
    parser.add_argument("--price-per-hour", action="append", type=_price, metavar="[GPU=]USD",
                        help="USD per device-hour, for every candidate or one GPU (repeat); adds cost per million "
                             "tokens (none shipped)")
    parser.add_argument("--rank-on", type=choice("--rank-on", RANK_ON), default="expected",
                        help="expected (default): check the targets and rank on the expected times (measured "
                             "kernels), most tokens/s per device first; bound: on the roofline bounds; cost: cheapest "
                             "expected cost per million tokens first (needs a price per candidate)")
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
    options.distinct_devices(gpus, args.gpu or [])
    gpus = priced(_runnable(gpus, args), args.price_per_hour)
    if args.framework:  # the option wins over a GPU entry's and the scenario's choice
        gpus = [replace(gpu, framework=args.framework) for gpu in gpus]
    if args.rank_on == "cost":
        check_priced(gpus)
    model = options.model(args.model)
    if args.prefill is not None:
        return _step_model(args, model, gpus)
    _check_disaggregated_devices(args)
    if args.attention_dp_balance is not None and not model.is_moe:  # the search gives dense models no DP attention
        raise RooflineInputError(f"--attention-dp-balance: balances prompts over data-parallel attention replicas, "
                                 f"and the search proposes none for {model.key}, a dense model (attention DP goes "
                                 "with expert parallelism); drop it")
    spec_options.check_batch_wait(args, framework_named=True)
    weights = args.weight_dtypes or args.dtypes or list(planner.DEFAULT_DTYPES)
    searched = [Scenario(weight_dtype=w, attention_weight_dtype=args.attention_weight_dtype or "").for_model(model)
                for w in weights]
    check_fp8_scaling(args.fp8_scaling, searched, "fp8 in --weight-dtypes or --dtypes")
    kvs = args.kv_dtypes or list(served_kv_dtypes(args.dtypes))
    workload = search.ServedWorkload(isl=args.isl, osl=args.osl, tpot_s=_seconds(args.tpot_ms),
                                     ttft_s=_seconds(args.ttft_ms), prefix_hit=args.prefix_hit,
                                     length_spread=args.length_spread,
                                     spec=spec_options.speculation(args, model), framework=args.framework or "",
                                     dp_balance=args.attention_dp_balance, batch_wait=args.batch_wait)
    result = search.search(model, gpus, workload, weights, kvs, args.max_devices, args.mode or "aggregated",
                           memory_utilization=args.memory_utilization, max_candidates=args.max_candidates,
                           attention_weight_dtype=args.attention_weight_dtype or "",
                           fp8_scaling=args.fp8_scaling or "tensor", progress=_progress_line(len(gpus)))
    by_key = {gpu.key: gpu for gpu in gpus}
    side = _side(args)
    if args.rank_on == "cost" or args.mode == "all":  # the whole frontier (hundreds of rows at most) first: the
        # cost front re-ranks it, --mode all keeps --top per mode
        rows = add_plan_cost(search_rows.rows(result, search.frontier(result, side=side,
                                                                       per_mode=args.mode == "all")), by_key)
        rows, left_out = _top(cost_fronts(rows) if args.rank_on == "cost" else rows, args.top,
                              per_mode=args.mode == "all")
    else:
        frontier = search.frontier(result, side=side)
        rows = add_plan_cost(search_rows.rows(result, frontier[:args.top or None]), by_key)
        left_out = len(frontier) - len(rows)
    return rows, {"evaluated": len(result), "seconds": result.seconds, "left_out": left_out,
                  "layout": _native_layout(model, weights, args), **_why_not(result, rows, side, args)}


def _native_layout(model, weights: list[str], args) -> str:
    """A line where the checkpoint mixes weight dtypes (gpt-oss's MXFP4 experts beside 16-bit attention, NVFP4
    files with 16-bit attention) and the search, one weight dtype per candidate throughout, prices no candidate in
    that layout: the options that do ("" otherwise)."""
    quantized = model.native_expert_dtype or model.native_weight_dtype
    sixteen = model.native_attention_dtype or "bf16"
    mixed = (model.native_expert_dtype and not model.native_weight_dtype) or model.native_attention_dtype
    if not mixed or (quantized in weights and args.attention_weight_dtype):
        return ""
    part = "experts" if model.native_expert_dtype else "weights other than the attention projections"
    return (f"note: {model.key}'s checkpoint keeps its {part} in {quantized} and the rest in 16 bits; each candidate "
            f"here has one weight dtype throughout ({', '.join(weights)}): --weight-dtypes {quantized} "
            f"--attention-weight-dtype {sixteen} prices the checkpoint's own layout")


def _why_not(result, rows: list[dict], side: str, args) -> dict:
    """{reason: why no candidate fits and meets the targets ("" when some do; naming a --memory-utilization the
    user set where no plan holds a request), missing: a line per mode of --mode all none of whose plans is shown}."""
    reason = "" if rows else search_rows.no_plan_reason(result, side)
    if reason.startswith("no plan holds") and args.memory_utilization is not None:  # the user's own setting
        reason += f", or a larger --memory-utilization than {args.memory_utilization:g}"
    shown = {row["mode"] for row in rows}
    missing = [mode for mode in search.SEARCH_MODES[:2] if mode not in shown] if rows and args.mode == "all" else []
    return {"reason": reason, "missing": [f"no {mode} plan fits and meets the targets (--mode {mode} alone says why)"
                                          for mode in missing]}


def _runnable(gpus: list, args) -> list:
    """The devices the serving framework runs on: named devices it does not run on (the option's framework, else a
    device entry's own) are refused; of the whole catalog, those it runs on."""
    if not args.gpu:
        return [gpu for gpu in gpus if runs_on(args.framework, gpu)]
    for gpu in gpus:
        check_framework(args.framework, gpu)
    return gpus


def _progress_line(turns: int) -> Callable[[int, int], None]:
    """The serving search's progress line on stderr (search_budget.Progress: after 3 s, then every 10 s), its clock
    started now; the search tells its size (configurations) with each report; `turns`: the devices it builds step
    tables for, each in its turn."""
    line = search_budget.Progress(0, lambda text: print(text, file=sys.stderr, flush=True), turns=turns)

    def report(done: int, total: int) -> None:
        line.candidates = total
        line(done, total)
    return report


def _check_disaggregated_devices(args) -> None:
    """Refuse --mode disaggregated within one device up front: the search would find no layout and blame the dtypes
    or the memory, when a prefill pool and a decode pool simply need a device each."""
    if args.mode == "disaggregated" and args.max_devices is not None and args.max_devices < 2:
        raise RooflineInputError(f"--max-devices: {args.max_devices} is not allowed with --mode disaggregated; its "
                                 "prefill and decode pools need at least 2 devices (use --max-devices 2 or more, or "
                                 "--mode aggregated)")


def _side(args) -> str:
    """What the search checks the targets and ranks on: the bounds with --rank-on bound, else the expected times."""
    return "bound" if args.rank_on == "bound" else "expected"


def _step_model(args, model, gpus) -> tuple[list[dict], dict]:
    """`--prefill`: the previous release's search (one decode step per candidate), bounded by --max-candidates."""
    if args.mode is not None:
        raise RooflineInputError("--prefill: not with --mode; --prefill is the step model of the previous release, "
                                 "--mode the serving model that replaces it (drop one of the two)")
    serving_only = [name for name in ("weight_dtypes", "kv_dtypes", "attention_weight_dtype", "fp8_scaling",
                                      "spec_method", "attention_dp_balance", "batch_wait")
                    if getattr(args, name)]
    serving_only += [name for name in ("prefix_hit", "length_spread") if getattr(args, name)]
    if serving_only:
        raise RooflineInputError(f"--{serving_only[0].replace('_', '-')}: only with the serving model (drop "
                                 "--prefill)")
    workload = planner.Workload(isl=args.isl, osl=args.osl, prefill=args.prefill, tpot_s=_seconds(args.tpot_ms),
                                ttft_s=_seconds(args.ttft_ms))
    dtypes, max_devices = args.dtypes or list(planner.DEFAULT_DTYPES), args.max_devices or 8
    memory_utilization = args.memory_utilization or Scenario.memory_utilization
    count = search_budget.count_candidates(model, gpus, dtypes, max_devices, memory_utilization)
    search_budget.check_budget(count, args.max_candidates, "plan", "lower --max-devices, give fewer --gpu or --dtypes, "
                               "or raise --max-candidates")
    progress = search_budget.Progress(count, lambda line: print(line, file=sys.stderr, flush=True))
    result = planner.search(model, gpus, workload, dtypes=dtypes, max_devices=max_devices,
                            memory_utilization=memory_utilization, rank_on=_side(args), progress=progress)
    rows, left_out = _ranked(result, args, {gpu.key: gpu for gpu in gpus})
    return rows, {"evaluated": len(result), "seconds": result.seconds, "left_out": left_out,
                  "reason": "" if rows else planner.no_plan_reason(result), "columns": STEP_COLUMNS}


def _seconds(milliseconds: float | None) -> float | None:
    return milliseconds / 1e3 if milliseconds else None


def _ranked(result: planner.Search, args, gpus: dict) -> tuple[list[dict], int]:
    """(the frontier rows with their cost, at most --top: the search's own order, or --rank-on cost's; how many
    rows --top left out)."""
    if args.rank_on == "cost":  # every device's frontier, then the cost front over them
        return _top(rank_on_cost(add_plan_cost(planner.rows(result, planner.frontier(result, per_gpu=True)), gpus)),
                    args.top)
    frontier = planner.frontier(result)
    rows = add_plan_cost(planner.rows(result, frontier[:args.top or None]), gpus)
    return rows, len(frontier) - len(rows)


def cost_fronts(rows: list[dict]) -> list[dict]:
    """rank_on_cost within each mode the rows hold (--mode all: a mode's cheap plans stay where the other mode's are
    cheaper still), merged cheapest first."""
    modes = dict.fromkeys(row.get("mode", "") for row in rows)
    fronts = [row for mode in modes for row in rank_on_cost([r for r in rows if r.get("mode", "") == mode])]
    return sorted(fronts, key=lambda row: row["cost_per_million_tokens_expected"])


def _top(rows: list[dict], top: int, per_mode: bool = False) -> tuple[list[dict], int]:
    """(the first `top` rows, every row when `top` is 0, or with `per_mode` (--mode all) the first `top` of each
    mode, in their order, so that the best of both modes is shown; how many were left out)."""
    if not per_mode or not top:
        kept = rows[:top or None]
    else:
        kept, shown = [], Counter()
        for row in rows:
            if shown[row["mode"]] < top:
                kept.append(row)
                shown[row["mode"]] += 1
    return kept, len(rows) - len(kept)


def run(args) -> str:
    """The frontier in --format, `evaluated N configurations in S s` on stderr, and one line saying why when no
    candidate fits and meets the targets (on stderr unless the format is the table)."""
    rows, notes = table(args)
    print(f"evaluated {notes['evaluated']} configurations in {notes['seconds']:.3f} s "
          f"({notes['evaluated'] / notes['seconds']:,.0f} per second)", file=sys.stderr)
    if notes["left_out"]:
        each = " of each mode" if args.prefill is None and args.mode == "all" else ""
        print(f"{len(rows)} of {len(rows) + notes['left_out']} frontier rows shown (the best first); --top N shows "
              f"N{each}, --top 0 every row", file=sys.stderr)
    if notes["reason"] and args.format != "table":
        print(notes["reason"], file=sys.stderr)
    for line in notes.get("missing", ()):  # --mode all: a mode none of whose plans is shown
        print(line, file=sys.stderr)
    if notes.get("layout"):
        print(notes["layout"], file=sys.stderr)
    served = args.prefill is None
    if args.format == "csv":
        return csv_text(rows, COLUMNS if served else STEP_COLUMNS)
    if args.format == "json":
        return json.dumps([json_safe(r) for r in rows], indent=1)
    priced_rows = any(row["cost_per_million_tokens"] == row["cost_per_million_tokens"] for row in rows)  # not NaN
    human = (_HUMAN_SERVED if served else _HUMAN) + (_COST if priced_rows else ())
    if served and len({row["mode"] for row in rows}) > 1:  # --mode all: say which each row is
        human = (("mode", None), *human)
    return format_table(rows, human) if rows else notes["reason"]
