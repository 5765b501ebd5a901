"""Refusals a new user's sweep of `serve`, `totals` and `list` found misworded or missing (2026-12-05): each names the
option at fault, the value and what is allowed, in one line with exit status 2; and the inputs around them still
run."""
from __future__ import annotations

import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.parallel import Parallel
from roofline.pipeline import config as rc
from roofline.serving.framework import _sglang_defaults, sglang_chunk_limit
from test_cli import run as _cli  # the command line's (code, stdout, stderr)

SERVE = ("serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256", "--concurrency",
         "16")


def _error(capsys, *argv) -> str:
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err.removeprefix("roofline: error: ").strip()


def test_a_decode_batch_near_the_limit_is_priced_and_one_past_it_quoted_as_given(capsys):
    # the expected step is also priced at 2-16x the batch (padding); those multiples past the limit had raised
    # "--batch: 1600000 is not allowed" for a batch of 100,000
    totals = ("totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode", "--format", "csv")
    for batch in ("100000", "1048576"):
        assert _cli(capsys, *totals, "--batch", batch)[0] == 0
    assert _error(capsys, *totals, "--batch", "1048577") == ("--batch: 1048577 is not allowed; expected an integer "
                                                             "from 1 to 1048576")


@pytest.mark.parametrize("option, value, expected", [
    ("--batch-wait", "-1,0.5", "--batch-wait: '-1,0.5' is not allowed; expected STEPS,RATIO"),
    ("--prefix-hit", "-0.5", "--prefix-hit: -0.5 is not allowed"),
    ("--length-spread", "-inf", "--length-spread: -inf is not allowed"),
])
def test_a_negative_value_after_a_space_is_the_options_value(capsys, option, value, expected):
    # argparse had read '-1,0.5' as another option: "--batch-wait: expected one argument", not what is allowed
    assert _error(capsys, *SERVE, "--framework", "trtllm", option, value).startswith(expected)
    moe = ("serve", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256", "--tp", "8",
           "--ep", "8", "--attention-dp", "--framework", "trtllm", "--concurrency", "16")
    assert _error(capsys, *moe, "--attention-dp-balance", "-5,10").startswith(
        "--attention-dp-balance: '-5,10' is not allowed; expected TIMEOUT,WAIT")


@pytest.mark.parametrize("kv", ["int4", "nvfp4", "mxfp4"])
def test_serve_refuses_a_kv_cache_no_framework_serves_as_plan_does(capsys, kv):
    err = _error(capsys, *SERVE, "--kv-dtype", kv)
    assert err.startswith(f"--kv-dtype: {kv} is not served: no serving framework caches keys and values in fewer "
                          "than 8 bits")
    assert f"--kv-dtypes: {kv} is not served: no serving framework caches keys and values in fewer than 8 bits" \
        in _error(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                  "--kv-dtypes", kv)
    # beside a dtype that is served it is refused too (the search had dropped it without a word)
    assert f"--kv-dtypes: {kv} is not served" in _error(
        capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
        "--kv-dtypes", kv, "fp8")


def test_8_bit_and_wider_caches_are_still_served(capsys):
    for kv in ("int8", "fp8", "bf16"):
        assert _cli(capsys, *SERVE, "--kv-dtype", kv, "--format", "csv")[0] == 0


def test_a_serving_section_refuses_the_scenarios_narrow_cache_before_any_job():
    config = {"models": {"llama-3.1-8b": {}}, "gpus": {"h100-sxm": {}}, "scenario": {"kv_dtype": "int4"},
              "serving": {"workloads": [{"isl": 1024, "osl": 256, "concurrency": [4]}]}}
    with pytest.raises(RooflineInputError, match=r"^scenario.kv_dtype \(the serving section's cache\): int4 is not "
                                                 "served"):
        rc.resolve_config(config)
    del config["serving"]  # the roofline tables alone price it as a what-if
    assert rc.resolve_config(config).scenario.kv_dtype == "int4"


@pytest.mark.parametrize("option, value, message", [
    ("--mla-mode", "naive", "--mla-mode: llama-3.1-8b has no multi-head latent attention"),
    ("--expert-routing", "balanced", "--expert-routing: llama-3.1-8b is dense (no experts to route to)"),
])
def test_kernel_options_a_model_has_no_use_for_are_refused(capsys, option, value, message):
    # they had run and returned the same row as without them
    assert _error(capsys, *SERVE, option, value).startswith(message)
    assert _error(capsys, "totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode", option,
                  value).startswith(message)
    assert _cli(capsys, *SERVE, option, {"--mla-mode": "absorbed", "--expert-routing": "uniform"}[option],
                "--format", "csv")[0] == 0  # the defaults, spelt out
    assert _cli(capsys, "totals", "--model", "deepseek-v3", "--gpu", "h200-sxm", "--stage", "decode", "--tp", "8",
                "--ep", "8", option, value, "--format", "csv")[0] == 0


def test_a_chunk_that_leaves_sglang_no_memory_is_named_with_the_largest_that_does_not(capsys):
    sglang = (*SERVE, "--framework", "sglang")
    # it had blamed --concurrency, on an automatic plan grown to 256 devices, with a negative memory fraction
    err = _error(capsys, *sglang, "--max-batched-tokens", "100000")
    gpu = get_accelerator("h100-sxm")
    limit = sglang_chunk_limit(gpu, Parallel(tp=1))
    assert err.startswith("--max-batched-tokens: 100000 tokens of chunked prefill leave sglang no memory on 1 x "
                          "H100 SXM5 80GB (it reserves 1.5 MiB of each device per token") and \
        err.endswith(f"expected at most {limit} there, or leave it out")
    # 80 GiB: (81,920 MiB less 512, 2 x 256 for graphs and 128 for one GPU) / 1.5 MiB a token = 53,845 tokens at
    # fraction 0; the fraction is rounded to 3 places (0.0005 x 81,920 MiB = 41 MiB), so the largest above 0 is 53,818
    assert limit == 53818 and _sglang_defaults(80, 1, 1, limit)[1] > 0 >= _sglang_defaults(80, 1, 1, limit + 1)[1]
    # one that leaves a positive fraction but no room for the weights: the chunk is among the remedies
    assert _error(capsys, *sglang, "--max-batched-tokens", "44000", "--tp", "1").endswith(
        "or a smaller --max-batched-tokens (44000 given)")


def test_a_lowered_memory_share_is_named_where_it_leaves_no_room(capsys):
    err = _error(capsys, *SERVE, "--memory-utilization", "0.05", "--tp", "1")
    assert err.startswith("--memory-utilization: not one request of 1024 + 256 tokens fits the KV cache of 1 x H100")
    assert err.endswith("or a larger --memory-utilization (0.05 given; vllm's default 0.9)")
    # the weights' own excess keeps naming --concurrency and the devices, not a setting the user did not give
    err = _error(capsys, "serve", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                 "--concurrency", "1", "--tp", "1")
    assert err.startswith("--concurrency: not one request") and "--memory-utilization" not in err


def test_an_engine_too_wide_for_sglangs_reserve_names_the_plan(capsys):
    err = _error(capsys, "serve", "--model", "llama-3.1-405b", "--gpu", "rtx-4090", "--isl", "1024", "--osl", "256",
                 "--concurrency", "1", "--framework", "sglang")
    assert err.startswith("--tp/--pp: sglang's memory rule reserves all of each device's memory for an engine of 256")


def test_data_parallel_attention_needs_its_tp(capsys):
    moe = ("serve", "--model", "deepseek-v3", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "256", "--concurrency",
           "64")
    # alone it had read as tp 1 (one replica) and failed on the KV cache of one device
    assert _error(capsys, *moe, "--attention-dp") == ("--attention-dp: give the engine's --tp (one attention replica "
                                                      "per tp rank) and --ep = --tp with it, e.g. --tp 8 --ep 8 "
                                                      "--attention-dp")
    assert _cli(capsys, *moe, "--attention-dp", "--tp", "8", "--ep", "8", "--format", "csv")[0] == 0
    assert "is dense (drop attention_dp)" in _error(capsys, *SERVE, "--attention-dp")


def test_int4_groups_divide_the_rows_they_scale(capsys):
    int4 = (*SERVE, "--weight-dtype", "int4")
    for size in ("7", "100000"):
        assert _error(capsys, *int4, "--weight-group-size", size) == (
            f"--weight-group-size: {size} does not divide llama-3.1-8b's hidden size 4096; expected a divisor of it, "
            "usually 32, 64 or 128")
    assert _cli(capsys, *int4, "--weight-group-size", "64", "--format", "csv")[0] == 0


def test_list_names_itself_not_its_placeholder(capsys):
    assert _error(capsys, "list", "bogus") == ("list: unknown value 'bogus' (did you mean 'gpus'?); allowed: gpus, "
                                               "models")
    assert _error(capsys, "list") == "missing argument: models or gpus"


def test_words_after_a_double_dash_stay_positional():
    from roofline.cli.options import Parser

    parser = Parser()
    parser.add_argument("--a")
    parser.add_argument("rest", nargs="*")
    # '-1,2' after --a is its value; after '--' a '--a -3' is two positional words, whatever was joined before
    assert parser._negative_values(["--a", "-1,2", "x", "--", "--a", "-3"]) == ["--a=-1,2", "x", "--", "--a", "-3"]
    assert vars(parser.parse_args(["--a", "-1,2", "--", "-5"])) == {"a": "-1,2", "rest": ["-5"]}


@pytest.mark.parametrize("options, expected", [
    (("--spec-method", "eagle", "--spec-acceptance", "-0.1"), "--spec-acceptance"),
    (("--spec-method", "eagle", "--spec-tokens", "3", "--spec-accepted-length", "4.5"), "--spec-accepted-length"),
    (("--prefix-hit", "1"), "--prefix-hit: 1 is not allowed"),
    (("--spec-method", "eagle", "--osl", "1"), "--spec-method: a request of --osl 1 has no decode step"),
    (("--request-rate", "4", "--overflow", "queue"), "--overflow: queue decides what closed-loop users"),
])
def test_serve_refuses_what_the_issue_bounds_in_one_line(capsys, options, expected):
    # an acceptance outside [0, 1), an accepted length past K + 1, a prompt wholly cached, options that change nothing
    argv = [word for word in SERVE if word not in ("--concurrency", "16")] if "--request-rate" in options else SERVE
    argv = [*argv[:argv.index("--osl")], *argv[argv.index("--osl") + 2:]] if "--osl" in options else argv
    assert _error(capsys, *argv, *options).startswith(expected)


def test_a_list_option_given_twice_says_to_give_every_value_after_one(capsys):
    assert _error(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                  "--weight-dtypes", "fp8", "--weight-dtypes", "fp16") == (
        "--weight-dtypes: given more than once; give every value after one --weight-dtypes")


def test_a_prefill_worker_the_memory_share_starves_names_the_share(capsys):
    # Llama-3.1-70B fp8 (70.6 GB of weights) on a TP-2 prefill worker of H200s holds them at the default 0.9 of
    # 141 GiB each, not at 0.1: the refusal had blamed --prefill-tp
    err = _error(capsys, "serve", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--tp", "2", "--weight-dtype",
                 "fp8", "--kv-dtype", "fp8", "--isl", "1024", "--osl", "1024", "--mode", "disaggregated",
                 "--concurrency", "64", "--memory-utilization", "0.1")
    assert err.startswith("--memory-utilization: a prefill worker of 2 x H200 SXM 141GB, TP 2 cannot hold")
    assert err.endswith("or a larger --memory-utilization (0.1 given; vllm's default 0.9)")
    # where no share could help (141 GB of 16-bit weights on one 80 GB H100) the prefill plan is what to change
    err = _error(capsys, "serve", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--prefill-tp", "1",
                 "--isl", "8192", "--osl", "256", "--mode", "disaggregated", "--concurrency", "4",
                 "--memory-utilization", "0.5")
    assert err.startswith("--prefill-tp/--prefill-pp/--prefill-ep: a prefill worker of 1 x H100 SXM5 80GB cannot")
    assert "--memory-utilization" not in err


def test_plans_table_shows_devices_and_under_mode_all_the_mode(capsys):
    code, out, _ = _cli(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl",
                        "256", "--mode", "all", "--max-devices", "2", "--top", "2")
    header = out.splitlines()[0].split()
    assert code == 0 and header[:3] == ["mode", "deployment", "devices"]
    assert {line.split()[0] for line in out.splitlines()[1:] if line.strip()} == {"aggregated", "disaggregated"}
