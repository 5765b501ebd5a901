"""Spread request lengths (--length-spread, vllm bench serve's --random-range-ratio): lengths uniform over isl and
osl x (1 +- S). Closed-loop users of fixed-length requests stay in the lockstep groups they start in; spread output
lengths end requests apart, so where prompt chunks ride in decode steps (vLLM, TensorRT-LLM) there are no groups.
A prefill-first scheduler (SGLang) still gathers the prompts that arrive during a decode step."""
from __future__ import annotations

import json

import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.scenario import Scenario
from roofline.serving import aggregated as agg
from roofline.serving import groups
from roofline.serving.serve import Workload, prepare_served, serve_aggregated
from roofline.serving.table import ServingWorkload
from test_cli import run as _cli  # the command line's (code, stdout, stderr)


def test_lockstep_share_arithmetic():
    # 1024 output tokens: a spread of 0.0005 ranges over 2 x 0.512 = 1.02 tokens (>= 1: requests end in different
    # steps), one of 0.0004 over 0.82 of a token (every request still ends in the same step)
    assert groups.lockstep(0.375, agg.Load(isl=1024, osl=1024)) == 0.375
    assert groups.lockstep(0.375, agg.Load(isl=1024, osl=1024, spread=0.0005)) == 0.0
    assert groups.lockstep(0.375, agg.Load(isl=1024, osl=1024, spread=0.0004)) == 0.375
    # a prefill-first scheduler keeps its share whatever the lengths
    assert groups.lockstep(0.25, agg.Load(isl=1024, osl=1024, spread=0.2), mixed=False) == 0.25


def _served(framework, spread, concurrency=8):
    served = prepare_served(get_model("qwen3-32b"), get_accelerator("h100-sxm"), Scenario(parallel="auto"),
                            framework)
    return serve_aggregated(served, Workload(isl=1024, osl=512, concurrency=concurrency, length_spread=spread))


def test_spread_lengths_dissolve_the_groups_of_a_mixed_scheduler():
    # Qwen3-32B on H100s, 1024/512 at 8 users under vLLM (lockstep share 0.125 for fixed lengths): the groups that
    # arrive together queue for the prompt room; spread lengths arrive one by one and wait less
    fixed, spread = _served("vllm", 0.0), _served("vllm", 0.2)
    assert (fixed["length_spread"], spread["length_spread"]) == (0.0, 0.2)
    assert spread["ttft_expected_s"] < fixed["ttft_expected_s"]
    assert spread["ttft_s"] == fixed["ttft_s"]  # the bounds do not depend on how requests arrive
    # a lone user has no group to leave
    assert _served("vllm", 0.2, 1)["ttft_expected_s"] == pytest.approx(_served("vllm", 0.0, 1)["ttft_expected_s"])
    # SGLang gathers arrivals into its prefill steps either way
    assert _served("sglang", 0.2)["ttft_expected_s"] == pytest.approx(_served("sglang", 0.0)["ttft_expected_s"])


def test_the_longest_request_must_fit_the_context():
    # Llama-3.1-8B holds 131,072 positions: (100,000 + 31,000) x 1.5 = 196,500 tokens at the spread's top do not fit
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), Scenario())
    with pytest.raises(RooflineInputError, match="--length-spread: the longest requests, .* = 196500 tokens"):
        serve_aggregated(served, Workload(isl=100_000, osl=31_000, concurrency=1, length_spread=0.5))
    assert serve_aggregated(served, Workload(isl=100_000, osl=31_000, concurrency=1))["fits"]


def test_bad_spread_is_refused():
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(RooflineInputError, match="--length-spread: .* is not allowed; expected a share"):
            Workload(isl=1024, osl=1024, concurrency=8, length_spread=bad).validate()


def test_the_serving_section_takes_the_spread():
    loads = ServingWorkload(1024, 1024, (8,), (2.0,), length_spread=0.2).loads()
    assert [load.length_spread for load in loads] == [0.2, 0.2]
    with pytest.raises(RooflineInputError, match="--length-spread: 1.5 is not allowed"):
        ServingWorkload(1024, 1024, (8,), length_spread=1.5).validate(get_model("llama-3.1-8b"))


def test_serve_and_plan_take_the_option(capsys):
    base = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "1024")
    code, out, _ = _cli(capsys, "serve", *base, "--concurrency", "8", "--length-spread", "0.2", "--format", "json")
    row = json.loads(out)
    row = row[0] if isinstance(row, list) else row
    assert code == 0 and row["length_spread"] == 0.2
    code, out, _ = _cli(capsys, "plan", *base, "--max-devices", "1", "--length-spread", "0.2", "--top", "3",
                        "--format", "json")
    rows = json.loads(out)
    rows = rows if isinstance(rows, list) else rows["rows"]
    assert code == 0 and rows and {r["length_spread"] for r in rows} == {0.2}
    code, out, err = _cli(capsys, "serve", *base, "--concurrency", "8", "--length-spread", "1")
    assert code == 2 and out == "" and "--length-spread: " in err and len(err.strip().splitlines()) == 1
    code, _, err = _cli(capsys, "plan", *base, "--prefill", "separate", "--length-spread", "0.2")
    assert code == 2 and "--length-spread: only with the serving model" in err
