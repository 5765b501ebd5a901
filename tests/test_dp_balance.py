"""Data-parallel attention with and without TensorRT-LLM's balancing (attention_dp_config.enable_balance).

Without it each attention-DP rank computes its own prompts at once, so a decode step that carries a prompt chunk
waits for the rank computing it; with it context requests are held until every rank has one (at most timeout_iters
steps, then batching_wait_iters more), so prompts are dealt evenly and TTFT carries the wait.
"""
from __future__ import annotations

import numpy as np
import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.serving import aggregated as agg
from roofline.serving.framework import BALANCING, framework_for
from roofline.serving.serve import Workload, prepare_served, serve_aggregated
from roofline.serving.table import ServingWorkload
from test_cli import run as _cli  # the command line's (code, stdout, stderr)

FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
DEP8 = FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True))


class Replicas:
    """A stepper of `replicas` attention-DP ranks (balance_wait reads nothing else)."""

    def __init__(self, replicas: float):
        self.replicas = replicas


def wait(replicas, balance, step, **flow) -> float:
    return float(agg.balance_wait(Replicas(replicas), agg.Scheduler(budget=8192, mixed=True, dp_balance=balance),
                                  step, **flow))


def test_balance_wait_arithmetic():
    # open loop, 10 requests/s dealt out in turn over 8 ranks: the other 7 arrive over 0.7 s, 0.35 s on average,
    # under a timeout of 60 steps of 10 ms (0.6 s); TensorRT-LLM's defaults (50, 10): min(0.35, 0.5) + 10 x 10 ms
    assert wait(8.0, (60, 0), 0.010, rate=10.0) == pytest.approx(0.35)
    assert wait(8.0, (50, 10), 0.010, rate=10.0) == pytest.approx(0.45)
    # at 1 request/s the ranks fill in 7 s: the timeout releases the prompt after 50 steps, then 10 steps more
    assert wait(8.0, (50, 10), 0.010, rate=1.0) == pytest.approx(0.6)
    # closed loop, 64 users whose requests spend 2 s in flight beside the wait: X = 64 / (2 + 3.5 / X), so
    # X = (64 - 3.5) / 2 = 30.25 requests/s and the wait 3.5 / 30.25 = 0.1157 s (under 60 x 20 ms)
    held = wait(8.0, (60, 0), 0.020, active=64.0, rest=2.0)
    assert held == pytest.approx(3.5 / 30.25)
    assert 64.0 / (2.0 + held) == pytest.approx(30.25)
    # 4 users never fill 8 ranks (X = (4 - 3.5) / 2 = 0.25/s would wait 14 s): every prompt waits out the timeout
    assert wait(8.0, (60, 0), 0.020, active=4.0, rest=2.0) == pytest.approx(1.2)
    # no wait on one attention replica, or without balancing
    assert wait(1.0, (60, 0), 0.010, rate=10.0) == 0.0
    assert wait(8.0, None, 0.010, rate=10.0) == 0.0
    # per point: ranks and step times as arrays
    both = agg.balance_wait(Replicas(np.array([1.0, 8.0])), agg.Scheduler(budget=1, mixed=True, dp_balance=(60, 0)),
                            np.array([0.01, 0.01]), rate=np.array([10.0, 10.0]))
    assert both.tolist() == pytest.approx([0.0, 0.35])


def test_only_trtllm_balances():
    h200 = get_accelerator("h200-sxm")
    assert framework_for("trtllm", h200, 8, dp_balance=(60, 0)).dp_balance == (60, 0)
    assert framework_for("trtllm", h200, 8).dp_balance is None  # off by default, as in TensorRT-LLM
    for key in ("vllm", "sglang"):
        with pytest.raises(RooflineInputError, match="--attention-dp-balance: .* only trtllm"):
            framework_for(key, h200, 8, dp_balance=(50, 10))


def test_balancing_trades_ttft_for_an_even_step():
    # DeepSeek-V3 fp8 on 8 H200s, TP 8 EP 8 with DP attention, 1024/1024 at 256 users (a measured TensorRT-LLM run
    # took TTFT 3.0 s, TPOT 37 ms): unbalanced, each decode step that carries a prompt waits for the rank computing
    # it; balanced, the prompts are dealt evenly (a faster step) and TTFT carries the wait for every rank's prompt
    model, gpu = get_model("deepseek-v3"), get_accelerator("h200-sxm")
    # (random lengths, +-10%: the users send their prompts one by one; a fixed-length benchmark's lockstep groups are
    # dealt over the ranks without balancing too, groups.lockstep_mix)
    load = Workload(isl=1024, osl=1024, concurrency=256, length_spread=0.1)
    off = serve_aggregated(prepare_served(model, gpu, DEP8, "trtllm"), load)
    on = serve_aggregated(prepare_served(model, gpu, DEP8, "trtllm", dp_balance=(60, 0)), load)
    assert (off["attention_dp_balance"], on["attention_dp_balance"]) == ("off", "60,0")
    assert on["tpot_expected_s"] < 0.85 * off["tpot_expected_s"]
    assert on["ttft_expected_s"] > 2 * off["ttft_expected_s"]
    assert on["ttft_s"] == off["ttft_s"]  # the bounds deal prompts evenly either way
    assert on["tpot_s"] == pytest.approx(off["tpot_s"], rel=0.02)  # (at each run's own expected occupancy)
    # without DP attention (TP 8) balancing changes nothing
    tp8 = FP8.with_(parallel=Parallel(tp=8, ep=8))
    plain = serve_aggregated(prepare_served(model, gpu, tp8, "trtllm"), load)
    held = serve_aggregated(prepare_served(model, gpu, tp8, "trtllm", dp_balance=(60, 0)), load)
    assert held["ttft_expected_s"] == pytest.approx(plain["ttft_expected_s"])
    assert held["tpot_expected_s"] == pytest.approx(plain["tpot_expected_s"])


def test_the_serving_section_takes_the_balance():
    assert ServingWorkload(1024, 1024, (8,), framework="trtllm", attention_dp_balance=True).dp_balance() == \
        BALANCING["trtllm"]
    assert ServingWorkload(1024, 1024, (8,), framework="trtllm", attention_dp_balance=[60, 0]).dp_balance() == (60, 0)
    assert ServingWorkload(1024, 1024, (8,), framework="trtllm", attention_dp_balance=False).dp_balance() is None
    with pytest.raises(RooflineInputError, match="attention_dp_balance: vllm does not balance"):
        ServingWorkload(1024, 1024, (8,), attention_dp_balance=True).validate(get_model("deepseek-v3"))
    for bad in ([60], [60, -1], [60, 1.5], "60,0"):
        with pytest.raises(RooflineInputError, match="attention_dp_balance: .* is not allowed"):
            ServingWorkload(1024, 1024, (8,), framework="trtllm", attention_dp_balance=bad).dp_balance()


DEP_OPTIONS = ("--model", "deepseek-v3", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "1024",
               "--weight-dtype", "fp8", "--act-dtype", "fp8", "--kv-dtype", "fp8")


def test_serve_and_plan_take_the_option(capsys):
    import json

    code, out, _ = _cli(capsys, "serve", *DEP_OPTIONS, "--tp", "8", "--ep", "8", "--attention-dp", "--concurrency",
                        "256", "--framework", "trtllm", "--attention-dp-balance", "--format", "json")
    row = json.loads(out)
    row = row[0] if isinstance(row, list) else row
    assert code == 0 and row["attention_dp_balance"] == "50,10"  # the flag alone: TensorRT-LLM's defaults
    code, out, _ = _cli(capsys, "plan", "--model", "qwen3-30b-a3b", "--gpu", "h200-sxm", "--isl", "1024", "--osl",
                        "1024", "--max-devices", "2", "--framework", "trtllm", "--attention-dp-balance", "60,0",
                        "--top", "0", "--format", "json")
    rows = json.loads(out)
    rows = rows if isinstance(rows, list) else rows["rows"]
    # shown where it acts: rows whose plan has attention-DP replicas ('off' on the others)
    assert code == 0 and {(r["attention_dp"], r["attention_dp_balance"]) for r in rows} == {(True, "60,0"),
                                                                                              (False, "off")}


@pytest.mark.parametrize("argv, message", [
    (("--framework", "vllm", "--attention-dp-balance"), "--attention-dp-balance: vllm does not balance"),
    (("--framework", "trtllm", "--attention-dp-balance", "60"), "--attention-dp-balance: '60' is not allowed"),
    (("--framework", "trtllm", "--attention-dp-balance", "60,-1"), "--attention-dp-balance: '60,-1' is not allowed"),
])
def test_bad_balance_is_one_line(capsys, argv, message):
    code, out, err = _cli(capsys, "serve", *DEP_OPTIONS, "--tp", "8", "--ep", "8", "--attention-dp",
                          "--concurrency", "8", *argv)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_the_python_api_takes_true_or_a_pair():
    import roofline

    options = dict(tp=8, ep=8, attention_dp=True, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8",
                   framework="trtllm", concurrency=64)
    defaults = roofline.serve("deepseek-v3", "h200-sxm", isl=1024, osl=1024, attention_dp_balance=True, **options)
    recipe = roofline.serve("deepseek-v3", "h200-sxm", isl=1024, osl=1024, attention_dp_balance=(60, 0), **options)
    off = roofline.serve("deepseek-v3", "h200-sxm", isl=1024, osl=1024, attention_dp_balance=False, **options)
    assert [f["attention_dp_balance"][0] for f in (defaults, recipe, off)] == ["50,10", "60,0", "off"]


def test_off_is_the_rows_word_and_the_options(capsys):
    # the rows print 'off' and the help named it, but --attention-dp-balance off was refused: now it means no
    # balancing, as without the option (any case), under any framework
    plain = _cli(capsys, "serve", *DEP_OPTIONS, "--tp", "8", "--ep", "8", "--attention-dp", "--concurrency", "8",
                 "--framework", "trtllm", "--format", "json")
    for word in ("off", "OFF"):
        off = _cli(capsys, "serve", *DEP_OPTIONS, "--tp", "8", "--ep", "8", "--attention-dp", "--concurrency", "8",
                   "--framework", "trtllm", "--attention-dp-balance", word, "--format", "json")
        assert off[0] == plain[0] == 0 and off[1] == plain[1] and '"attention_dp_balance": "off"' in off[1]


def test_lone_prompts_and_lockstep_groups_are_priced_apart():
    # Fixed lengths, so users keep a lockstep share s of their arrivals in groups (groups.lockstep): without balancing,
    # a lone prompt's step waits for the rank computing it, a group's prompts are dealt over the ranks. Each kind is
    # priced at its own chunk (groups.lockstep_mix), so the TPOT moves from the lone prompts' (s = 0) towards the
    # groups' (s = 1) without a jump at a small share, and a share of 0.375 keeps most of the lone prompts' wait (the
    # mean cluster had dealt every prompt: 0.25 had priced the unbalanced step as the balanced one)
    model, gpu = get_model("deepseek-v3"), get_accelerator("h200-sxm")
    load = Workload(isl=1024, osl=1024, concurrency=256)

    def tpot(share, balance=None):
        served = prepare_served(model, gpu, DEP8, "trtllm", fitted=(0.0, 0.08, share, 0.0, 7e-6), dp_balance=balance)
        return serve_aggregated(served, load)["tpot_expected_s"]

    alone, tiny, some, grouped = tpot(0.0), tpot(1e-6), tpot(0.375), tpot(1.0)
    assert tiny == pytest.approx(alone, rel=1e-3)
    assert alone > some > grouped
    assert some > tpot(0.375, (60, 0)) * 1.1  # balancing still buys a faster step at the fitted share
