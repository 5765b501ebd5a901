"""`roofline serve`: what a loaded server delivers, one deployment and one workload in, one row out."""
from __future__ import annotations

import re
import sys

from ..engine.columns import SERVE_COLUMNS
from ..engine.errors import RooflineInputError
from ..engine.parallel import MAX_DEVICES, Parallel, check_plan
from ..engine.scenario import Scenario
from ..serving.candidates import activation_dtype
from ..serving.framework import DEFAULT_FRAMEWORK
from ..serving.serve import (
    MODES,
    OVERFLOWS,
    Disaggregation,
    Workload,
    prepare_served,
    serve_aggregated,
    serve_disaggregated,
)
from . import options, scenario, spec_options
from .formats import one_row_text
from .options import GPU_HELP, choice, fraction, positive_float, positive_int

HELP = "served TTFT, TPOT and tokens/s of one deployment under one workload (continuous batching, pools, drafts)"
#: the --format csv columns (and the Python API's DataFrame columns)
COLUMNS = SERVE_COLUMNS


def add_arguments(parser) -> None:
    defaults = Scenario()
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", required=True, help=GPU_HELP)
    parser.add_argument("--isl", required=True, type=positive_int("--isl"), help="prompt tokens per request")
    parser.add_argument("--osl", required=True, type=positive_int("--osl"), help="output tokens per request")
    parser.add_argument("--concurrency", type=positive_int("--concurrency"),
                        help="closed-loop users (give this or --request-rate)")
    parser.add_argument("--request-rate", type=positive_float("--request-rate"),
                        help="open loop: requests/s (give this or --concurrency)")
    parser.add_argument("--max-batched-tokens", type=positive_int("--max-batched-tokens"),
                        help="tokens one step may compute, per attention replica under --attention-dp for trtllm "
                             "and vllm (default: the framework's)")
    parser.add_argument("--max-running", type=positive_int("--max-running"),
                        help="sequences one engine runs at once, as the framework takes its setting: vLLM's "
                             "max_num_seqs and TensorRT-LLM's max_batch_size per attention replica under "
                             "--attention-dp, SGLang's max_running_requests for the whole engine (split over its "
                             "replicas); default: the framework's; --mode disaggregated: each decode worker's")
    parser.add_argument("--overflow", type=choice("--overflow", OVERFLOWS),
                        help="refuse (default): a concurrency the KV cache cannot hold is an error; queue: the rest "
                             "wait")
    parser.add_argument("--benchmark-waves", type=positive_float("--benchmark-waves"),
                        help="TTFT of a closed-loop benchmark of this many waves of --concurrency requests, its first "
                             "wave sent at once (default: the steady state)")
    # the activations default to the serving recipe of the weights, as `plan` serves its rows (W8A8 fp8, NVFP4 W4A4
    # on NVIDIA Blackwell, 16-bit otherwise): a plan row's deployment served again gives the row's numbers
    scenario.add_dtypes(parser, defaults, act_help=scenario.ACT_FOLLOWS_WEIGHTS)
    scenario.add_kernels(parser, defaults)
    scenario.add_parallel(parser)
    parser.add_argument("--memory-utilization", type=fraction("--memory-utilization"),
                        help="fraction of each device's memory the framework sizes its KV cache from (default: the "
                             "framework's rule: vLLM 0.9 of the device, TensorRT-LLM 0.9 of what weights and "
                             "activations leave, SGLang's by the engine)")
    spec_options.add_arguments(parser)
    _add_pools(parser)
    options.add_format(parser)
    scenario.add_calibration(parser, "calibration table for the expected times (roofline measure or roofline "
                                     "calibrate --out)")


def _add_pools(parser) -> None:
    parser.add_argument("--mode", type=choice("--mode", MODES), default="aggregated",
                        help="aggregated (default) | disaggregated (prefill and decode pools)")
    parser.add_argument("--prefill-workers", type=positive_int("--prefill-workers"),
                        help="--mode disaggregated: engines computing prompts (default 1)")
    parser.add_argument("--decode-workers", type=positive_int("--decode-workers"),
                        help="--mode disaggregated: engines decoding, each of the --tp/--pp/--ep plan (default 1)")
    for name in ("tp", "pp", "ep"):
        parser.add_argument(f"--prefill-{name}", type=positive_int(f"--prefill-{name}"),
                            help=f"the prefill workers' {name} (default: the decode plan's)")
    parser.add_argument("--prefill-attention-dp", action="store_true",
                        help="data-parallel attention in the prefill pool (default off: not taken from "
                             "--attention-dp, unlike --prefill-tp/-pp/-ep)")
    parser.add_argument("--max-devices", type=positive_int("--max-devices", MAX_DEVICES),
                        help=f"--mode disaggregated: refuse pools that need more devices than this (pools are at "
                             f"most {MAX_DEVICES} devices in any case)")


def table(args) -> tuple[list[dict], dict]:
    """(the one served row, {"reason": why it does not keep up with --request-rate, "" where it does})."""
    model = options.model(args.model)
    device = options.gpu(args.gpu)
    scenario.check_framework(args.framework, device)
    # the option, else a --gpu file's own framework (as plan serves its candidates), else the default
    framework = args.framework or device.framework or DEFAULT_FRAMEWORK
    gpu = scenario.calibrated(device, args, framework)
    args.kv_dtype = args.kv_dtype or gpu.sixteen_bit
    if args.overflow is not None and args.request_rate is not None:  # rather than shown while it changes nothing
        raise RooflineInputError(f"--overflow: {args.overflow} decides what closed-loop users (--concurrency) the KV "
                                 "cache cannot hold do; with --request-rate drop it (arrivals past what the "
                                 "deployment sustains queue, and the row says whether it keeps up)")
    overflow = args.overflow or "refuse"
    native = Scenario(weight_dtype=args.weight_dtype, act_dtype=gpu.sixteen_bit).for_model(model)
    act = args.act_dtype or activation_dtype(native.weight_dtype, gpu)  # weight-only: the device's 16-bit float
    chosen = Scenario(act_dtype=act, **scenario.deployment_fields(args)).validate()
    scenario.check_fp8_scaling(args.fp8_scaling, [chosen.for_model(model)], "--weight-dtype fp8")
    scenario.check_weight_options(args, chosen.for_model(model), model)
    workload = Workload(isl=args.isl, osl=args.osl, concurrency=args.concurrency, request_rate=args.request_rate,
                        prefix_hit=args.prefix_hit, length_spread=args.length_spread)
    served = prepare_served(model, gpu, chosen, framework, spec_options.speculation(args, model),
                            args.max_batched_tokens, args.memory_utilization, dp_balance=args.attention_dp_balance,
                            request_tokens=args.isl + args.osl, batch_wait=args.batch_wait,
                            max_running=args.max_running)
    _check_batch_wait(args, served.plan)
    if args.mode == "aggregated":
        _refuse_pool_options(args)
        _check_balance(args, [served.plan])
        row = serve_aggregated(served, workload, overflow, args.benchmark_waves or 0.0)
    else:
        prefill = _prefill_plan(args, served)
        _check_balance(args, [prefill])  # the decode pool computes no prompts: nothing of its own to balance
        pools = Disaggregation(args.prefill_workers or 1, args.decode_workers or 1, prefill, args.max_devices)
        row = serve_disaggregated(served, workload, pools, overflow, args.benchmark_waves or 0.0)
    return [row], {"reason": open_loop_note(row)}


def _check_balance(args, plans: list[Parallel]) -> None:
    """--attention-dp-balance deals context requests over the attention-DP replicas: refused (one line) where no
    plan of the deployment has any, rather than shown in the row while it changes nothing."""
    if args.attention_dp_balance is not None and not any(plan.attention_dp for plan in plans):
        raise RooflineInputError("--attention-dp-balance: balances prompts over data-parallel attention replicas, and "
                                 "this deployment computes its prompts without them; add --attention-dp (with "
                                 "--mode disaggregated: --prefill-attention-dp) on an MoE model, or drop it")


def _check_batch_wait(args, plan: Parallel) -> None:
    """--batch-wait holds prompts while requests decode on the same engine, without attention DP (TensorRT-LLM turns
    it off there): refused (one line) where it would change nothing."""
    spec_options.check_batch_wait(args)
    if args.batch_wait is not None and plan.attention_dp:
        raise RooflineInputError("--batch-wait: TensorRT-LLM waits for batches only without attention DP; with "
                                 "--attention-dp use --attention-dp-balance, or drop one of the two")


def _prefill_plan(args, served) -> Parallel:
    """The prefill workers' plan (--prefill-*, else the decode plan's), checked against the model and device here so
    a bad one is named by the --prefill-* options that set it, not as the decode plan's `parallel (...)` fields."""
    decode = served.plan
    plan = Parallel(tp=args.prefill_tp or decode.tp, pp=args.prefill_pp or decode.pp,
                    ep=args.prefill_ep or (decode.ep if args.prefill_tp is None else 1),
                    attention_dp=args.prefill_attention_dp)
    try:
        check_plan(served.model, served.gpu, plan.validate("prefill plan"))
    except RooflineInputError as error:
        raise RooflineInputError(_in_prefill_options(str(error), args, plan)) from None
    return plan


def _in_prefill_options(message: str, args, plan: Parallel) -> str:
    """`message` (about the prefill plan, in Parallel's field words) under the --prefill-* options it concerns that
    were given (all of them when none was: the plan was inherited from --tp/--pp/--ep)."""
    rest = message.partition(": ")[2]
    fields = [name for name in ("tp", "pp", "ep") if re.search(rf"\b{name}\b", message)]
    fields += ["attention-dp"] if "attention_dp" in message else []
    given = [name for name in ("tp", "pp", "ep", "attention-dp") if getattr(args, f"prefill_{name.replace('-', '_')}")]
    named = [name for name in fields if name in given] or given or fields
    shown = f"tp {plan.tp}, pp {plan.pp}, ep {plan.ep}" + (", attention-dp" if plan.attention_dp else "")
    return f"{'/'.join(f'--prefill-{name}' for name in named)}: prefill plan ({shown}): {rest}"


def _refuse_pool_options(args) -> None:
    given = [name for name in ("prefill_tp", "prefill_pp", "prefill_ep", "max_devices", "prefill_workers",
                               "decode_workers") if getattr(args, name) is not None]  # given at all, even as 1
    given += ["prefill_attention_dp"] if args.prefill_attention_dp else []
    if given:
        raise RooflineInputError(f"--{given[0].replace('_', '-')}: only with --mode disaggregated")


#: the note's words for what a run that does not keep up runs out of (limited_by)
RUNS_OUT = {"prefill": " (computing the prompts is what limits it)",
            "kv_cache": " (every slot is taken: its KV cache, or its cap on running sequences, holds no more)",
            "decode": " (its decode workers are what limits it)"}


def run(args) -> str:
    """The served row in --format; on stderr, one line when the deployment cannot keep up with --request-rate."""
    (row,), notes = table(args)
    if notes.get("reason"):
        print(f"note: {notes['reason']}", file=sys.stderr)
    return one_row_text(row, COLUMNS, args.format, 34)


def open_loop_note(row: dict) -> str:
    """Why a run does not keep up with --request-rate ('' where it does): the result's `reason` (the Python API's
    attrs) and the command's stderr note."""
    if row["keeps_up"]:
        return ""
    short = RUNS_OUT.get(row["limited_by"], "")
    more = (f", add devices or raise --max-running (now {row['max_running']})" if row["max_running"]
            else " or add devices")
    return (f"{row['deployment']} completes at most {row['requests_per_s_expected']:.3g} requests/s, below "
            f"--request-rate {row['request_rate']:g}{short}: the queue grows without end, so ttft_expected_s and "
            f"e2e_latency_expected_s are infinite (lower the rate{more})")
