"""The serving options `serve` and `plan` share: framework, attention-DP balancing, batch waiting, prefix caching
and speculative decoding."""
from __future__ import annotations

import argparse

from ..engine.errors import RooflineInputError
from ..engine.hardware import FRAMEWORKS
from ..serving.framework import BALANCING, BATCH_WAITING, MAX_WAIT_STEPS, WAIT_NEEDS_DECODING, batch_wait_setting
from ..serving.speculative import DEFAULT_SPEC_TOKENS, MAX_SPEC_TOKENS, SPEC_METHODS, Speculation, check_has_decode
from . import options
from .options import choice, positive_int


def share(option):
    """A share from 0 to below 1."""
    return options.checked_float(option, lambda value: 0 <= value < 1, "expected a share from 0 to below 1")


def number(option):
    def parse(text):
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option}: '{text}' is not a number") from None
    return parse


def balance(text: str) -> tuple[int, int] | None:
    """--attention-dp-balance TIMEOUT,WAIT: two whole numbers of steps, at least 0; `off` (the rows' word for it):
    no balancing, as without the option."""
    if text.strip().casefold() == "off":
        return None
    parts = text.split(",")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"--attention-dp-balance: '{text}' is not allowed; expected TIMEOUT,WAIT: "
                                         "two whole numbers of steps (timeout_iters, batching_wait_iters), e.g. 60,0, "
                                         "or off")
    return int(parts[0]), int(parts[1])


def batch_wait(text: str) -> tuple[int, float] | None:
    """--batch-wait STEPS,RATIO: a whole number of steps (batch_wait_timeout_iters) and a share of the step's token
    budget from 0 to 1 (batch_wait_max_tokens_ratio); `off` (the rows' word for it): no waiting, as without it."""
    if text.strip().casefold() == "off":
        return None
    parts = [part.strip() for part in text.split(",")]
    try:
        if len(parts) == 2:
            return batch_wait_setting(*(float(part) for part in parts), "--batch-wait")
    except (ValueError, RooflineInputError):
        pass
    raise argparse.ArgumentTypeError(f"--batch-wait: '{text}' is not allowed; expected STEPS,RATIO: a whole number "
                                     f"of steps from 0 to {MAX_WAIT_STEPS:,} (batch_wait_timeout_iters) and a share "
                                     "of max_num_tokens from 0 to 1 (batch_wait_max_tokens_ratio), e.g. 20,0.9, or "
                                     "off")


def check_batch_wait(args, framework_named: bool = False) -> None:
    """--batch-wait holds prompts while requests decode on the same engine: refused (one line) under --mode
    disaggregated, whose prefill workers decode none (--mode all applies it to the aggregated candidates), and,
    with `framework_named` (plan: candidates take each device's framework otherwise), without --framework trtllm."""
    if args.batch_wait is None:
        return
    if framework_named and args.framework not in BATCH_WAITING:
        raise RooflineInputError(f"--batch-wait: TensorRT-LLM's hold for fuller prompt steps "
                                 f"(batch_wait_timeout_iters); only with --framework {' or '.join(BATCH_WAITING)}")
    if args.mode == "disaggregated":
        raise RooflineInputError(f"--batch-wait: {WAIT_NEEDS_DECODING}")


def add_arguments(parser, step_model: bool = False) -> None:
    """--framework, --attention-dp-balance, --batch-wait, --prefix-hit, --length-spread and the --spec-* options;
    `step_model`: the command also takes plan's --prefill (the previous release's step model), whose default
    framework differs."""
    parser.add_argument("--framework", type=choice("--framework", FRAMEWORKS),
                        help="serving framework: its scheduler defaults, host time and measured kernel tables "
                             "(default vllm" + ("; with --prefill: each device's default tables)" if step_model
                                                else ")"))
    timeout, wait = BALANCING["trtllm"]
    parser.add_argument("--attention-dp-balance", nargs="?", const=f"{timeout},{wait}", type=balance,
                        metavar="TIMEOUT,WAIT",
                        help="trtllm's attention-DP balancing (attention_dp_config.enable_balance): context requests "
                             "wait until every attention-DP rank has one (at most TIMEOUT steps, then WAIT more); "
                             f"default {timeout},{wait} as TensorRT-LLM's; off (as without the option): each rank "
                             "computes its prompts at once")
    parser.add_argument("--batch-wait", type=batch_wait, metavar="STEPS,RATIO",
                        help="trtllm's batch waiting without attention DP (batch_wait_timeout_iters, "
                             "batch_wait_max_tokens_ratio): while requests decode, context requests wait until a "
                             "step's tokens reach RATIO of max_num_tokens or STEPS steps have passed, e.g. 20,0.9; "
                             "off (as without the option, TensorRT-LLM's default)")
    parser.add_argument("--prefix-hit", type=share("--prefix-hit"), default=0.0,
                        help="share of prompt tokens found in the prefix cache, 0 <= F < 1 (default 0)")
    parser.add_argument("--length-spread", type=share("--length-spread"), default=0.0, metavar="S",
                        help="requests' lengths uniform over isl and osl x (1 +- S), as vllm bench serve's "
                             "--random-range-ratio S; default 0: every request exactly isl and osl, as a "
                             "fixed-length benchmark sends (its closed-loop users stay in lockstep groups; spread "
                             "lengths end requests apart)")
    parser.add_argument("--spec-method", type=choice("--spec-method", SPEC_METHODS),
                        help="speculative decoding: mtp | eagle | draft | ngram")
    parser.add_argument("--spec-tokens", type=positive_int("--spec-tokens"),
                        help=f"drafted tokens K per verify step, 1 to {MAX_SPEC_TOKENS} (default "
                             f"{DEFAULT_SPEC_TOKENS}, with --spec-method)")
    parser.add_argument("--spec-acceptance", type=number("--spec-acceptance"),
                        help="per-token acceptance probability, 0 <= A < 1")
    parser.add_argument("--spec-accepted-length", type=number("--spec-accepted-length"),
                        help="mean tokens per verify step, 1 <= L <= K + 1 (instead of --spec-acceptance)")
    parser.add_argument("--spec-draft-model", help="draft model (catalog key or config.json) for --spec-method draft")


def speculation(args, target) -> Speculation:
    """The speculative setting the options describe, checked against the target model."""
    if args.spec_method is None:
        given = [name for name in ("tokens", "acceptance", "accepted_length", "draft_model")
                 if getattr(args, f"spec_{name}") is not None]
        if given:
            raise RooflineInputError(f"--spec-{given[0].replace('_', '-')}: only with --spec-method")
        return Speculation()
    check_has_decode(args.spec_method, getattr(args, "osl", 2))
    draft = _draft_model(args.spec_draft_model) if args.spec_draft_model else None
    tokens = DEFAULT_SPEC_TOKENS if args.spec_tokens is None else args.spec_tokens
    return Speculation(args.spec_method, tokens, args.spec_acceptance, args.spec_accepted_length,
                       draft).validate(target)


def _draft_model(text: str):
    """--spec-draft-model as a model; its errors name this option, not --model (a config.json's own errors, which
    name the file, get the option in front)."""
    option = "--spec-draft-model"
    try:
        return options.model(text, option)
    except RooflineInputError as error:
        message = str(error)
        raise RooflineInputError(message if message.startswith(f"{option}: ") else f"{option}: {message}") from None
