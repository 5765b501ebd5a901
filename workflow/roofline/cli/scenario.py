"""The options of one (model, gpu, stage, scenario) question, shared by `ops` and `totals`, and its analysis (the
dtype, parallel and calibration options `serve` shares too)."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from ..engine.dtypes import STORAGE_DTYPES, WEIGHT_DTYPES
from ..engine.errors import RooflineInputError, clip
from ..engine.hardware import FRAMEWORKS, Accelerator
from ..engine.parallel import Parallel
from ..engine.scenario import (
    ATTENTION_IMPLS,
    EXPERT_ROUTINGS,
    FP8_SCALINGS,
    LOGITS_MODES,
    MLA_MODES,
    STAGES,
    Scenario,
    longest_seq_len,
)
from ..estimate.calibration import check_table, read_table, table_facts
from ..estimate.expected import analyze
from ..serving.framework import check_runs_on
from . import options
from .options import GPU_HELP, choice, fraction, positive_int


def add_arguments(parser) -> None:
    """--model, --gpu, --stage and every scenario field, --format, --framework and --calibration."""
    defaults = Scenario()
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", required=True, help=GPU_HELP)
    parser.add_argument("--stage", required=True, type=choice("--stage", STAGES), help="prefill | decode")
    parser.add_argument("--batch", type=positive_int("--batch"), default=defaults.batch)
    parser.add_argument("--seq-len", type=positive_int("--seq-len"), default=None,
                        help=f"prefill: prompt tokens; decode: tokens already in the KV cache (default "
                             f"{defaults.seq_len}, or as many as the model's context allows where it is shorter)")
    add_dtypes(parser, defaults)
    add_kernels(parser, defaults)
    parser.add_argument("--logits", type=choice("--logits", LOGITS_MODES), default=defaults.logits,
                        help="prefill's lm_head: for the last token of each prompt (default, as servers do) or all")
    add_parallel(parser)
    parser.add_argument("--memory-utilization", type=fraction("--memory-utilization"),
                        default=defaults.memory_utilization, help="usable fraction of each device's memory")
    options.add_format(parser)
    parser.add_argument("--framework", type=choice("--framework", FRAMEWORKS),
                        help="serving framework whose measured kernels and step model the expected times use "
                             "(default: the device's; a device without its tables keeps its default)")
    add_calibration(parser, "calibration table for the expected times (roofline measure or roofline calibrate "
                            "--out); default: the one shipped for --gpu, if any")


def add_kernels(parser, defaults: Scenario) -> None:
    """--attention, --expert-routing and --mla-mode: how the kernels move the bytes (engine.scenario.Scenario)."""
    parser.add_argument("--attention", type=choice("--attention", ATTENTION_IMPLS), default=defaults.attention,
                        help="flash (default: one fused kernel, as serving engines run) or eager (the score matrix "
                             "written to and read from memory)")
    parser.add_argument("--expert-routing", type=choice("--expert-routing", EXPERT_ROUTINGS),
                        default=defaults.expert_routing,
                        help="MoE experts a layer loads: uniform (default: tokens pick experts at random), balanced "
                             "(the picks spread over as many experts as they can) or all (every expert)")
    parser.add_argument("--mla-mode", type=choice("--mla-mode", MLA_MODES), default=defaults.mla_mode,
                        help="MLA attention: absorbed (default: over the cached latent, as vLLM, SGLang and "
                             "TensorRT-LLM run it), naive (the latent decompressed every step) or decompressed "
                             "(per-head K and V cached)")


#: --act-dtype's help where the activations follow the weights' serving recipe (serve and plan rows)
ACT_FOLLOWS_WEIGHTS = ("default: the weights' serving recipe (fp8 and 16-bit weights compute in their own type; "
                       "on a device with an fp4 peak NVFP4 in fp4 and MXFP4 in fp8, fp4 on AMD; integer and other "
                       "weight-only formats in the device's 16-bit float)")


def add_dtypes(parser, defaults: Scenario, act_help: str | None = None) -> None:
    """--weight-dtype, --act-dtype, --kv-dtype and the weights' finer options; `act_help` where the activations'
    default is not the device's 16-bit float."""
    parser.add_argument("--weight-dtype", type=choice("--weight-dtype", WEIGHT_DTYPES),
                        default=defaults.weight_dtype,
                        help=f"a storage dtype or native (the checkpoint's own; default {defaults.weight_dtype})")
    sixteen = "(bf16 on a device that publishes no fp16 peak: TPUs, Gaudi)"
    for name in ("act", "kv"):  # None: the device's 16-bit float (sixteen_bit), resolved once the device is known
        default = f"default {getattr(defaults, f'{name}_dtype')} {sixteen}"
        parser.add_argument(f"--{name}-dtype", type=choice(f"--{name}-dtype", STORAGE_DTYPES), default=None,
                            help=act_help if name == "act" and act_help else default)
    parser.add_argument("--expert-weight-dtype", type=choice("--expert-weight-dtype", STORAGE_DTYPES),
                        default=None, help="MoE experts' weights (default: as --weight-dtype)")
    parser.add_argument("--attention-weight-dtype", type=choice("--attention-weight-dtype", STORAGE_DTYPES),
                        default=None, help="attention projections' weights (default: as --weight-dtype; routers "
                        "are 16-bit in any case)")
    parser.add_argument("--weight-group-size", type=positive_int("--weight-group-size"),
                        default=None, help=f"int4 weights per fp16 scale (default {defaults.weight_group_size})")
    parser.add_argument("--fp8-scaling", type=choice("--fp8-scaling", FP8_SCALINGS), default=defaults.fp8_scaling,
                        help="fp8 weights' scales: tensor (default) or block (128 x 128, as DeepSeek-V3's and "
                        "Qwen3's own FP8 checkpoints): the expected times read the measured block-scaled GEMMs. "
                        "Native weights take the checkpoint's own (give --weight-dtype fp8 to choose)")


def add_parallel(parser) -> None:
    parser.add_argument("--parallel", type=choice("--parallel", ("auto",)), default=None,
                        help="auto (default when no --tp/--pp/--ep is given): the smallest plan that fits")
    parser.add_argument("--tp", type=positive_int("--tp"), help="tensor-parallel degree")
    parser.add_argument("--pp", type=positive_int("--pp"), help="pipeline stages")
    parser.add_argument("--ep", type=positive_int("--ep"), help="expert-parallel degree (divides --tp)")
    parser.add_argument("--attention-dp", action="store_true", help="data-parallel attention (needs --ep = --tp)")


def parallel(args) -> Parallel | str:
    """--tp/--pp/--ep/--attention-dp as a plan; auto when none is given (or with --parallel auto)."""
    explicit = [name for name in ("tp", "pp", "ep") if getattr(args, name) is not None] + (
        ["attention-dp"] if args.attention_dp else [])
    if args.parallel == "auto" and explicit:
        raise RooflineInputError(f"--parallel: auto cannot be combined with --{explicit[0]}; give one or the other")
    if not explicit:
        return "auto"
    return Parallel(tp=args.tp or 1, pp=args.pp or 1, ep=args.ep or 1, attention_dp=args.attention_dp)


def scenario(args) -> Scenario:
    """The scenario the options describe, validated."""
    return Scenario(batch=args.batch, seq_len=args.seq_len, act_dtype=args.act_dtype, logits=args.logits,
                    memory_utilization=args.memory_utilization, **deployment_fields(args)).validate()


def deployment_fields(args) -> dict:
    """The Scenario fields of the options that ops, totals and serve share (the weights, KV cache and kernels, the
    plan): one list, so that a field added to Scenario and to add_scenario_options reaches every command."""
    return dict(weight_dtype=args.weight_dtype, kv_dtype=args.kv_dtype, attention=args.attention,
                expert_routing=args.expert_routing, mla_mode=args.mla_mode, parallel=parallel(args),
                expert_weight_dtype=args.expert_weight_dtype or "",
                weight_group_size=args.weight_group_size or Scenario.weight_group_size,
                fp8_scaling=args.fp8_scaling, attention_weight_dtype=args.attention_weight_dtype or "")


def check_fp8_scaling(scaling: str | None, weights: list[Scenario], give: str) -> None:
    """--fp8-scaling block scales fp8 dense and attention weights (MoE experts read one fp8 curve either way):
    refused (one line) where none of `weights` (the resolved scenarios a command prices) has such fp8 weights;
    `give` names the option that would."""
    if scaling != "block":
        return
    stored = {d for w in weights for d in (w.weight_dtype, w.attention_weights_dtype)}
    if "fp8" not in stored:
        raise RooflineInputError(f"--fp8-scaling: block scales fp8 dense and attention weights, and these are "
                                 f"{', '.join(sorted(stored))}; give fp8 weights ({give}) or leave --fp8-scaling out")


def check_weight_options(args, resolved: Scenario, model) -> None:
    """Refuse (one line) weight, kernel and plan options that would change nothing, rather than show them in the row:
    experts' weights or routing of a dense model, an MLA mode of a model without MLA, a group size where no weights
    are int4 (`resolved`: the scenario as priced), and data-parallel attention without the tp whose ranks are its
    replicas (it read as tp 1: one replica)."""
    if args.expert_weight_dtype and not model.is_moe:
        raise RooflineInputError(f"--expert-weight-dtype: {model.key} is dense (no experts to store); leave it out "
                                 "or give --weight-dtype")
    if getattr(args, "attention_dp", False) and args.tp is None and model.is_moe:  # a plan of one replica: tp 1
        raise RooflineInputError("--attention-dp: give the engine's --tp (one attention replica per tp rank) and --ep "
                                 "= --tp with it, e.g. --tp 8 --ep 8 --attention-dp")
    defaults = Scenario()
    if getattr(args, "expert_routing", defaults.expert_routing) != defaults.expert_routing and not model.is_moe:
        raise RooflineInputError(f"--expert-routing: {model.key} is dense (no experts to route to); leave it out")
    if getattr(args, "mla_mode", defaults.mla_mode) != defaults.mla_mode and not model.is_mla:
        raise RooflineInputError(f"--mla-mode: {model.key} has no multi-head latent attention (MLA: DeepSeek-V2/V3 "
                                 f"and Kimi-K2's); leave it out")
    stored = {resolved.weight_dtype, resolved.attention_weights_dtype} | ({resolved.expert_dtype} if model.is_moe
                                                                            else set())
    if args.weight_group_size is not None and "int4" not in stored:
        raise RooflineInputError(f"--weight-group-size: groups int4 weights under one fp16 scale, and these are "
                                 f"{', '.join(sorted(stored))}; give int4 weights or leave it out")
    if args.weight_group_size is not None and model.hidden % args.weight_group_size:  # a group spans one row's inputs
        raise RooflineInputError(f"--weight-group-size: {args.weight_group_size} does not divide {model.key}'s hidden "
                                 f"size {model.hidden}; expected a divisor of it, usually 32, 64 or 128")


def _absolute(path: str) -> str:
    """`path` made absolute (symlinks resolved where it can be; a path that cannot, say with a NUL byte, as given
    for the table check to name)."""
    try:
        return str(Path(path).resolve())
    except (OSError, ValueError, RuntimeError):
        return path


def device_defaults(args, gpu: Accelerator) -> None:
    """--act-dtype and --kv-dtype left unset take `gpu`'s 16-bit float (Accelerator.sixteen_bit)."""
    for name in ("act_dtype", "kv_dtype"):
        if getattr(args, name) is None:
            setattr(args, name, gpu.sixteen_bit)


def analysis(args) -> tuple[list[dict], dict]:
    """(operator rows, totals row) of the question the options ask, with --calibration's table and
    --price-per-hour (totals) when given."""
    model, gpu = options.model(args.model), options.gpu(args.gpu)
    device_defaults(args, gpu)
    if args.seq_len is None:  # the default, held inside a short context (GPT-2's 1,024, OPT's 2,048 positions)
        args.seq_len = min(Scenario.seq_len, longest_seq_len(model, args.stage) or Scenario.seq_len)
        if args.seq_len < Scenario.seq_len:
            print(f"roofline: note: --seq-len {args.seq_len}: the default {Scenario.seq_len} does not fit "
                  f"{model.key}'s {args.stage} in its context of {model.max_position} positions", file=sys.stderr)
    chosen = scenario(args)
    check_fp8_scaling(args.fp8_scaling, [chosen.for_model(model)], "--weight-dtype fp8")
    check_weight_options(args, chosen.for_model(model), model)
    check_framework(args.framework, gpu)
    if args.framework:  # the option wins over a GPU entry's and the scenario's choice
        gpu = replace(gpu, framework=args.framework)
    if getattr(args, "price_per_hour", None):
        gpu = replace(gpu, price_per_hour=args.price_per_hour)
    return analyze(model, calibrated(gpu, args), args.stage, chosen)


def check_framework(option: str | None, gpu: Accelerator) -> None:
    """Refuse a serving framework on a device it does not run on (TensorRT-LLM's kernels on an AMD GPU answer
    nothing), in one line naming where it came from: `option` (--framework), else the --gpu file's own entry."""
    check_runs_on(option or gpu.framework, gpu, "--framework" if option else f"--gpu {gpu.key}: framework")


def add_calibration(parser, what: str) -> None:
    """--calibration (`what`: its help) and --calibration-any-device, as ops, totals and serve take them."""
    parser.add_argument("--calibration", help=what)
    parser.add_argument("--calibration-any-device", action="store_true",
                        help="apply --calibration even if it was measured on another device than --gpu (or under "
                             "another framework than --framework)")


def calibrated(gpu: Accelerator, args, framework: str | None = None) -> Accelerator:
    """`gpu` with --calibration's table, refused (one line) when it was measured on another chip than --gpu's or, with
    --framework (`framework`: the one the command runs under, as serve's default), under another framework, unless
    --calibration-any-device: every command that takes a table checks it alike, so none labels a foreign device's
    kernels as this one's."""
    if args.calibration_any_device and not args.calibration:
        raise RooflineInputError("--calibration-any-device: needs --calibration (the shipped tables always match "
                                 "their device)")
    if not args.calibration:
        return gpu
    gpu = replace(gpu, calibration=_absolute(args.calibration), calibration_any_device=args.calibration_any_device)
    try:
        check_table(gpu.calibration, gpu)
    except RooflineInputError as error:
        raise RooflineInputError(f"--{error}") from None
    # a table from `roofline measure` names no framework ("") and fits any
    measured_under = table_facts(read_table(gpu.calibration))["framework"]
    framework = framework or args.framework
    if framework and measured_under not in ("", framework) and not args.calibration_any_device:
        raise RooflineInputError(f"--calibration: '{clip(gpu.calibration, 200)}' was measured under {measured_under}, "
                                 f"not under {framework} (--framework); use a table measured under {framework}; to "
                                 "apply it anyway, --calibration-any-device")
    return gpu
