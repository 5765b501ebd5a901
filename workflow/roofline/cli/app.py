"""`roofline`: one-off questions from the command line (per-operator table, totals, ridge points, catalogs).

Every bad input ends in one line on stderr naming the option, the value and what is allowed, and exit status 2.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
import sys
from dataclasses import replace
from pathlib import Path

from .. import display
from . import calibrate
from ..engine import hardware, models
from ..serving import planner
from ..engine.analysis import critical_batch
from ..estimate.expected import analyze
from ..estimate.calibration import check_table
from ..engine.columns import OP_COLUMNS, OP_EXPECTED_COLUMNS, PLAN_COLUMNS, TOTAL_COLUMNS, TOTAL_EXPECTED_COLUMNS
from ..engine.dtypes import DTYPE_BYTES, PEAK_DTYPES, STORAGE_DTYPES, WEIGHT_DTYPES
from ..engine.errors import RooflineInputError, did_you_mean, unknown
from ..engine.parallel import Parallel
from ..engine.scenario import (ATTENTION_IMPLS, EXPERT_ROUTINGS, FRAMEWORKS, LOGITS_MODES, MLA_MODES, STAGES,
                               Scenario)

FORMATS = ("table", "csv", "json")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not usage + error
        # argparse prefixes type errors with "argument --x: "; our messages already start with "--x: "
        message = message.removeprefix("argument ")
        option, _, rest = message.partition(": ")
        if message.startswith("unrecognized arguments: "):
            word = message.removeprefix("unrecognized arguments: ").split()[0]
            options = sorted({o for action in self._all_options() for o in action.option_strings if o != "-h"})
            owners = self._commands_taking(word)
            if owners:  # a real option, given to a command that does not take it
                raise RooflineInputError(f"option '{word}' is not accepted here; it belongs to: {', '.join(owners)}")
            raise RooflineInputError(f"unrecognized option '{word}'{did_you_mean(word, options)}; "
                                     f"allowed: {', '.join(options)}")
        if match := re.fullmatch(r"command: invalid choice: '(.*)' \(choose from (.*)\)", message, re.S):
            raise unknown("command", match.group(1), re.findall(r"'([^']*)'", match.group(2)))
        if message == "the following arguments are required: command":
            raise RooflineInputError(f"missing command; allowed: {', '.join(self._commands())} (or --version)")
        raise RooflineInputError(rest if rest.startswith(option + ": ") else message)

    def _commands(self) -> dict:
        """Sub-command name -> its parser."""
        return next((action.choices for action in self._actions if isinstance(action.choices, dict)), {})

    def _commands_taking(self, option: str) -> list[str]:
        return [name for name, sub in self._commands().items()
                if any(option in action.option_strings for action in sub._actions)]

    def _all_options(self):
        """Options of this parser and of its sub-commands (argparse reports unknown ones on the top parser)."""
        actions = list(self._actions)
        for action in self._actions:
            for sub in getattr(action, "choices", None) or ():
                if isinstance(action.choices, dict):
                    actions += action.choices[sub]._actions
        return actions


def _positive_int(option):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option}: '{text}' is not an integer; expected an integer >= 1")
        if value < 1:
            raise argparse.ArgumentTypeError(f"{option}: {value} is not allowed; expected an integer >= 1")
        return value
    return parse


def _fraction(option):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option}: '{text}' is not a number; expected a fraction from 0.05 to 1")
        if not 0.05 <= value <= 1:
            raise argparse.ArgumentTypeError(f"{option}: {text} is not allowed; expected a fraction from 0.05 to 1")
        return value
    return parse


def _choice(option, allowed):
    def parse(text):
        if text not in allowed:
            raise argparse.ArgumentTypeError(unknown(option, text, allowed).args[0])
        return text
    return parse


def _scenario_options(parser):
    defaults = Scenario()
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", required=True, help="catalog key (roofline list gpus)")
    parser.add_argument("--stage", required=True, type=_choice("--stage", STAGES), help="prefill | decode")
    parser.add_argument("--batch", type=_positive_int("--batch"), default=defaults.batch)
    parser.add_argument("--seq-len", type=_positive_int("--seq-len"), default=defaults.seq_len,
                        help="prefill: prompt tokens; decode: tokens already in the KV cache")
    parser.add_argument("--weight-dtype", type=_choice("--weight-dtype", WEIGHT_DTYPES),
                        default=defaults.weight_dtype, help="a storage dtype or native (the checkpoint's own)")
    for name in ("act", "kv"):
        parser.add_argument(f"--{name}-dtype", type=_choice(f"--{name}-dtype", STORAGE_DTYPES),
                            default=getattr(defaults, f"{name}_dtype"))
    parser.add_argument("--expert-weight-dtype", type=_choice("--expert-weight-dtype", STORAGE_DTYPES),
                        default=None, help="MoE experts' weights (default: as --weight-dtype)")
    parser.add_argument("--weight-group-size", type=_positive_int("--weight-group-size"),
                        default=defaults.weight_group_size, help="int4 weights per fp16 scale")
    parser.add_argument("--attention", type=_choice("--attention", ATTENTION_IMPLS), default=defaults.attention)
    parser.add_argument("--logits", type=_choice("--logits", LOGITS_MODES), default=defaults.logits)
    parser.add_argument("--expert-routing", type=_choice("--expert-routing", EXPERT_ROUTINGS),
                        default=defaults.expert_routing)
    parser.add_argument("--mla-mode", type=_choice("--mla-mode", MLA_MODES), default=defaults.mla_mode)
    parser.add_argument("--parallel", type=_choice("--parallel", ("auto",)), default=None,
                        help="auto (default when no --tp/--pp/--ep is given): the smallest plan that fits")
    parser.add_argument("--tp", type=_positive_int("--tp"), help="tensor-parallel degree")
    parser.add_argument("--pp", type=_positive_int("--pp"), help="pipeline stages")
    parser.add_argument("--ep", type=_positive_int("--ep"), help="expert-parallel degree (divides --tp)")
    parser.add_argument("--attention-dp", action="store_true", help="data-parallel attention (needs --ep = --tp)")
    parser.add_argument("--memory-utilization", type=_fraction("--memory-utilization"),
                        default=defaults.memory_utilization, help="usable fraction of each device's memory")
    parser.add_argument("--format", type=_choice("--format", FORMATS), default="table")
    _framework_option(parser)
    parser.add_argument("--calibration", help="calibration table for the expected times (roofline measure or "
                                              "roofline calibrate --out); default: the one shipped for --gpu, if any")


def _framework_option(parser):
    parser.add_argument("--framework", type=_choice("--framework", FRAMEWORKS),
                        help="serving framework whose measured kernels and step model the expected times use "
                             "(default: each device's; a device without its tables keeps its default)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="roofline", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _scenario_options(sub.add_parser("ops", help="per-operator table (values per instance, with count)"))
    _scenario_options(sub.add_parser("totals", help="totals of one stage: time, TTFT/TPOT, footprint, fit"))
    ridge = sub.add_parser("ridge", help="ridge point P/BW per dtype and the critical decode batch")
    ridge.add_argument("--gpu", required=True)
    ridge.add_argument("--dtype", type=_choice("--dtype", PEAK_DTYPES))
    ridge.add_argument("--model", help="also give this model's exact critical decode batch (weights and activations "
                                       "in --dtype)")
    _plan_options(sub.add_parser("plan", help="deployment search: the Pareto frontier of tokens/s per device vs "
                                              "tokens/s per user under latency targets"))
    measure = sub.add_parser("measure", help="microbenchmarks on this machine: a calibration table (needs torch)")
    measure.add_argument("--device", type=_choice("--device", ("cuda", "cpu", "mps")),
                         help="default: the best available (cuda, then mps, then cpu)")
    measure.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (< 1 minute on a GPU)")
    measure.add_argument("--out", default="calibration.csv", help="CSV path; the parquet copy goes next to it")
    measure.add_argument("--gpu", help="catalog key to compute the bounds for (default: from the device name)")
    calibrate.add_arguments(sub.add_parser("calibrate", help=calibrate.HELP), _choice)
    listing = sub.add_parser("list", help="catalog keys")
    listing.add_argument("what", metavar="list", type=_choice("list", ("models", "gpus")))
    return parser


def _version() -> str:
    import importlib.metadata  # only for --version: it costs a one-shot command ~30 ms

    try:
        return importlib.metadata.version("llm-roofline")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without `pip install`
        return "(not installed)"


class _Version(argparse.Action):
    """--version, the package version looked up only when asked."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"roofline {_version()}")
        parser.exit()


def _positive_float(option):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option}: '{text}' is not a number; expected a positive number")
        if not value > 0 or not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{option}: {text} is not allowed; expected a positive number")
        return value
    return parse


def _plan_options(parser):
    parser.add_argument("--model", required=True, help="catalog key (roofline list models) or path to a config.json")
    parser.add_argument("--gpu", action="append", help="candidate device (repeat the option); default: every "
                                                       "catalog device")
    parser.add_argument("--isl", required=True, type=_positive_int("--isl"), help="prompt tokens per request")
    parser.add_argument("--osl", required=True, type=_positive_int("--osl"), help="output tokens per request")
    parser.add_argument("--tpot-ms", type=_positive_float("--tpot-ms"), help="target: time per output token [ms]")
    parser.add_argument("--ttft-ms", type=_positive_float("--ttft-ms"), help="target: time to first token [ms]")
    parser.add_argument("--max-devices", type=_positive_int("--max-devices"), default=8)
    parser.add_argument("--dtypes", nargs="+", type=_choice("--dtypes", STORAGE_DTYPES),
                        default=list(planner.DEFAULT_DTYPES),
                        help="weight and KV-cache dtypes to search (KV: 8 bits or more)")
    parser.add_argument("--prefill", type=_choice("--prefill", planner.PREFILL_MODES), default="separate",
                        help="separate: decode is not slowed by prompts; interleaved: prompts time-share the devices")
    parser.add_argument("--memory-utilization", type=_fraction("--memory-utilization"),
                        default=Scenario.memory_utilization, help="usable fraction of each device's memory")
    parser.add_argument("--top", type=_positive_int("--top"), help="print only the best N frontier rows")
    parser.add_argument("--rank-on", type=_choice("--rank-on", planner.RANK_ON), default="expected",
                        help="expected: check the targets and rank on the expected times (measured kernels); "
                             "bound: on the roofline bounds")
    _framework_option(parser)
    parser.add_argument("--format", type=_choice("--format", FORMATS), default="table")


_HUMAN_PLAN = (("deployment", None), ("batch", None), ("weight_dtype", None), ("kv_dtype", None),
               ("attention", None), ("ttft_s", "s"), ("tpot_s", "s"), ("tpot_expected_s", "s"),
               ("tokens_per_s", "token/s"), ("tokens_per_s_per_device", "token/s"),
               ("tokens_per_s_per_device_expected", "token/s"), ("tokens_per_s_per_user", "token/s"), ("bound", None),
               ("estimate", None), ("framework", None))


def _deployment_search(args) -> str:
    """`roofline plan`: the frontier rows (best first), `evaluated N configurations in S s` on stderr, and one
    line saying why when no candidate fits and meets the targets."""
    gpus = [_gpu(key) for key in args.gpu] if args.gpu else list(hardware.catalog().values())
    if args.framework:  # the option wins over a GPU entry's and the scenario's choice
        gpus = [replace(gpu, framework=args.framework) for gpu in gpus]
    workload = planner.Workload(isl=args.isl, osl=args.osl, prefill=args.prefill,
                                tpot_s=args.tpot_ms / 1e3 if args.tpot_ms else None,
                                ttft_s=args.ttft_ms / 1e3 if args.ttft_ms else None)
    result = planner.search(_model(args.model), gpus, workload, dtypes=args.dtypes, max_devices=args.max_devices,
                            memory_utilization=args.memory_utilization, rank_on=args.rank_on)
    print(f"evaluated {len(result)} configurations in {result.seconds:.3f} s "
          f"({len(result) / result.seconds:,.0f} per second)", file=sys.stderr)
    rows = planner.rows(result, planner.frontier(result)[:args.top])
    reason = "" if rows else planner.no_plan_reason(result)
    if reason and args.format != "table":
        print(reason, file=sys.stderr)
    if args.format == "csv":
        return _csv(rows, PLAN_COLUMNS)
    if args.format == "json":
        return json.dumps([_json_safe(r) for r in rows], indent=1)
    return _format_table(rows, _HUMAN_PLAN) if rows else reason


def _model(text: str) -> models.ModelSpec:
    if text in models.catalog() and not text.endswith(".json"):  # a catalog key wins over a same-named folder
        return models.catalog()[text]
    if text.endswith(".json") or "/" in text or Path(text).exists():
        return models.model_from_hf_config(text)
    if text not in models.catalog():
        raise unknown("--model", text, models.catalog())
    return models.catalog()[text]


def _gpu(text: str) -> hardware.Accelerator:
    if text not in hardware.catalog():
        raise unknown("--gpu", text, hardware.catalog())
    return hardware.catalog()[text]


def _plan(args) -> Parallel | str:
    """--tp/--pp/--ep/--attention-dp as a plan; auto when none is given (or with --parallel auto)."""
    explicit = [name for name in ("tp", "pp", "ep") if getattr(args, name) is not None] + (
        ["attention-dp"] if args.attention_dp else [])
    if args.parallel == "auto" and explicit:
        raise RooflineInputError(f"--parallel: auto cannot be combined with --{explicit[0]}; give one or the other")
    if not explicit:
        return "auto"
    return Parallel(tp=args.tp or 1, pp=args.pp or 1, ep=args.ep or 1, attention_dp=args.attention_dp)


def _scenario(args) -> Scenario:
    return Scenario(batch=args.batch, seq_len=args.seq_len, weight_dtype=args.weight_dtype, act_dtype=args.act_dtype,
                    kv_dtype=args.kv_dtype, attention=args.attention, logits=args.logits,
                    expert_routing=args.expert_routing, mla_mode=args.mla_mode, parallel=_plan(args),
                    memory_utilization=args.memory_utilization, expert_weight_dtype=args.expert_weight_dtype or "",
                    weight_group_size=args.weight_group_size).validate()


def _as_options(message: str) -> str:
    """Name scenario fields as the command-line options that set them ('scenario.seq_len=4' -> '--seq-len 4')."""
    fields = ("expert_weight_dtype|weight_group_size|weight_dtype|act_dtype|kv_dtype|seq_len|batch|expert_routing|"
              "mla_mode|memory_utilization")
    return re.sub(rf"(?:scenario\.)?(?<![-\w])({fields})\b(=?)",
                  lambda m: "--" + m.group(1).replace("_", "-") + (" " if m.group(2) else ""), message)


def _si(value, unit: str) -> str:
    """Human units for the table format (the report's formatters): 1.23 GFLOP, 67.1 MB, 4.01 ms."""
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return display.seconds(value) if unit == "s" else display.prefixed(value, unit)


_HUMAN_OPS = (("op", None), ("op_class", None), ("count", None), ("flops", "FLOP"), ("bytes", "B"),
              ("intensity", "FLOP/B"), ("attainable_flops_per_s", "FLOP/s"), ("t_s", "s"), ("bound", None),
              ("t_expected_s", "s"), ("estimate", None))


def _format_table(rows: list[dict], spec) -> str:
    header = [name for name, _ in spec]
    body = []
    for row in rows:
        cells = []
        for name, unit in spec:
            value = row[name]
            if unit == "FLOP/B":
                cells.append(f"{value:.4g}")
            elif unit:
                cells.append(_si(value, unit))
            else:
                cells.append(str(value))
        body.append(cells)
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in body]
    return "\n".join(lines)


def _csv(rows: list[dict], columns) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().rstrip("\n")


def _json_safe(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def run(argv: list[str] | None = None) -> str:
    """Execute one command and return its output text (raises RooflineInputError on bad input)."""
    args = build_parser().parse_args(argv)
    if args.command == "list":
        if args.what == "models":
            rows = [{"key": k, "name": m.name, "family": m.family,
                     "params_B": f"{models.parameter_counts(m)[0] / 1e9:.3f}"} for k, m in models.catalog().items()]
        else:
            rows = [{"key": k, "name": g.name, "bandwidth_GBps": f"{g.bandwidth_bytes_per_s / 1e9:g}",
                     "memory_GiB": f"{g.memory_bytes / 2**30:.4g}",
                     "scaleup": (f"{g.scaleup_link} {g.scaleup_bandwidth_bytes_per_s / 1e9:g} GB/s x"
                                 f"{g.scaleup_domain}" if g.scaleup_link else "-"),
                     "dtypes": " ".join(g.peak_flops_per_s) or "- (no published peaks)"}
                    for k, g in hardware.catalog().items()]
        return _format_table(rows, [(k, None) for k in rows[0]])
    if args.command == "measure":
        from ..estimate.measure import measure, write  # torch is imported only here

        if not args.out.endswith(".csv"):
            raise RooflineInputError(f"--out: '{args.out}' is not allowed; expected a path ending in .csv")
        rows, text = measure(args.device, args.quick, args.gpu)
        return text + "\nwrote " + ", ".join(write(rows, args.out))
    if args.command == "ridge":
        gpu = _gpu(args.gpu)
        if not gpu.peak_flops_per_s:
            raise RooflineInputError(f"--gpu: '{gpu.key}' publishes no peak FLOP/s, so it has no ridge point "
                                     f"({gpu.notes or 'no vendor figure'})")
        dtypes = [args.dtype] if args.dtype else list(gpu.peak_flops_per_s)
        model = _model(args.model) if args.model else None
        rows = []
        for dtype in dtypes:
            gpu.peak(dtype)  # clear error when the device has no such peak
            exact = {}
            if model is not None:  # tf32 is a compute mode, not a storage dtype: no model figure
                stored = {"fp4": "nvfp4"}.get(dtype, dtype)  # the fp4 peak's weights and activations: NVFP4
                storage = Scenario(weight_dtype=stored, act_dtype=stored) if stored in STORAGE_DTYPES else None
                exact = {"model": model.key,
                         "model_critical_batch": f"{critical_batch(model, gpu, storage):.0f}" if storage else "-"}
            rows.append({"gpu": gpu.key, "dtype": dtype, "peak_tflops": f"{gpu.peak(dtype) / 1e12:g}",
                         "bandwidth_GBps": f"{gpu.bandwidth_bytes_per_s / 1e9:g}",
                         "ridge_flop_per_byte": f"{gpu.ridge(dtype):.1f}",
                         # dense decode GEMM: 2*B*K*N FLOPs over K*N*w weight bytes -> ridge at B ~ ridge * w / 2
                         "approx_critical_batch": f"{gpu.ridge(dtype) * DTYPE_BYTES[dtype] / 2:.0f}", **exact})
        return _format_table(rows, [(k, None) for k in rows[0]])
    if args.command == "plan":
        return _deployment_search(args)
    if args.command == "calibrate":
        return calibrate.run(args)
    model, gpu, scenario = _model(args.model), _gpu(args.gpu), _scenario(args)
    if args.framework:
        gpu = replace(gpu, framework=args.framework)
    if args.calibration:
        try:
            gpu = replace(gpu, calibration=check_table(str(Path(args.calibration).resolve())))
        except RooflineInputError as error:
            raise RooflineInputError(f"--{error}") from None
    rows, total = analyze(model, gpu, args.stage, scenario)
    if args.command == "ops":
        if args.format == "csv":
            return _csv(rows, OP_COLUMNS + OP_EXPECTED_COLUMNS)
        if args.format == "json":
            return json.dumps([{k: r[k] for k in OP_COLUMNS + OP_EXPECTED_COLUMNS} for r in map(_json_safe, rows)],
                              indent=1)
        return _format_table(rows, _HUMAN_OPS)
    if args.format == "csv":
        return _csv([total], TOTAL_COLUMNS + TOTAL_EXPECTED_COLUMNS)
    if args.format == "json":
        return json.dumps(_json_safe(total), indent=1)
    units = {"flops": "FLOP", "bytes": "B", "t_compute_s": "s", "t_memory_s": "s", "t_s": "s", "ttft_s": "s",
             "tpot_s": "s", "weight_bytes": "B", "kv_cache_bytes": "B", "activation_bytes": "B",
             "footprint_bytes": "B", "memory_bytes": "B", "total_params": "", "active_params": "",
             "tokens_per_s": "token/s", "weight_bytes_per_device": "B", "kv_cache_bytes_per_device": "B",
             "usable_memory_bytes": "B", "tokens_per_s_per_device": "token/s", "t_network_s": "s",
             "ttft_expected_s": "s", "tpot_expected_s": "s", "tokens_per_s_expected": "token/s"}
    lines = []
    for key, value in total.items():
        text = _si(value, units[key]) if key in units else (f"{value:.4g}" if isinstance(value, float) else str(value))
        lines.append(f"{key:26s} {text}")
    return "\n".join(lines)


def _cli_fix(message: str) -> str:
    """Replace a fix the command line cannot apply (overriding a config field) with one it can."""
    return message.replace(" or override max_position",
                           " or give --model a config.json whose max_position_embeddings covers it")


def main(argv: list[str] | None = None) -> int:
    try:
        print(run(argv))
    except RooflineInputError as error:
        print(f"roofline: error: {_as_options(_cli_fix(str(error)))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
