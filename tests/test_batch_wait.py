"""TensorRT-LLM's batch waiting (batch_wait_timeout_iters, batch_wait_max_tokens_ratio; off by default).

While requests decode, context requests are held until a step's tokens (decode tokens and the waiting prompts')
reach a share of max_num_tokens, or until a number of steps has passed; then they go at once. TTFT carries the
hold; the bounds hold nothing.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.scenario import Scenario
from roofline.serving import aggregated as agg
from roofline.serving.framework import framework_for
from roofline.serving.holds import batch_wait
from roofline.serving.serve import Workload, prepare_served, serve_aggregated
from roofline.serving.table import ServingWorkload
from test_cli import run as _cli  # the command line's (code, stdout, stderr)


class Replicas:
    """A stepper of `replicas` attention replicas (batch_wait reads nothing else of it)."""

    def __init__(self, replicas):
        self.replicas = replicas


def held(prompt, rate=None, replicas=1.0, wait=(20, 0.9), decoding=50.0, osl=1024, **closed) -> float:
    # a 2048-token budget, 4 decode tokens, steps of 10 ms; by default 50 requests decoding, which an arrival finds
    # w.p. 1 - exp(-50) and which end 1023 x 50 / 51 steps (10.0 s) on: neither binds
    scheduler = agg.Scheduler(budget=2048, mixed=True, batch_wait=wait)
    load = agg.Load(isl=prompt, osl=osl)
    return float(batch_wait(Replicas(replicas), scheduler, load, 4.0, 0.010, decoding, rate=rate, **closed))


def test_batch_wait_arithmetic():
    # the share: 0.9 x 2048 - 4 = 1839.2 tokens, two prompts of 1000 (one more after the first). At 2 prompts/s it
    # comes after 0.5 s, so the 20 steps (0.2 s) release the first; 2 x 0.2 = 0.4 more arrive in the window and
    # wait 0.1 s: 0.2 x (1 + 0.4 / 2) / (1 + 0.4) = 0.24 / 1.4
    assert held(1000, rate=2.0) == pytest.approx(0.24 / 1.4)
    # at 20 prompts/s the second arrives after 0.05 s and both go: 0.05 x (1 + 1 / 2) / (1 + 1) = 0.0375
    assert held(1000, rate=20.0) == pytest.approx(0.0375)
    # a prompt of 2000 tokens reaches the share alone: it goes at once
    assert held(2000, rate=2.0) == 0.0
    # three prompts of 700 are needed (ceil(1839.2 / 700) = 3): the other two over 2 / 20 = 0.1 s, under the
    # timeout; 2 arrive in it: 0.1 x (1 + 1) / (1 + 2) = 0.2 / 3
    assert held(700, rate=20.0) == pytest.approx(0.2 / 3)
    # nothing waits without decoding requests (a lone user), under attention DP, or with the option off; a share of
    # 0 (TensorRT-LLM: met at once) or a timeout of 0 steps (reached at once) holds nothing either
    assert held(1000, rate=2.0, decoding=0.0) == 0.0
    assert held(1000, rate=2.0, replicas=8.0) == 0.0
    assert held(1000, rate=2.0, wait=None) == 0.0
    assert held(1000, rate=2.0, wait=(20, 0.0)) == 0.0
    assert held(1000, rate=2.0, wait=(0, 0.9)) == 0.0
    # one request decoding on average: an arrival finds it w.p. 1 - exp(-1)
    assert held(1000, rate=2.0, decoding=1.0) == pytest.approx(-np.expm1(-1.0) * 0.24 / 1.4)
    # an output of one token decodes nothing: no hold; one of 11 tokens (10 decode steps, 0.1 s) beside one request
    # decoding ends the hold when it ends, half its decode on average (0.05 s, under the 20 steps and the 0.5 s to
    # the next prompt): 0.05 x (1 + 0.1 / 2) / (1 + 0.1), found w.p. 1 - exp(-1)
    assert held(1000, rate=2.0, osl=1) == 0.0
    assert held(1000, rate=2.0, decoding=1.0, osl=11) == pytest.approx(-np.expm1(-1.0) * 0.05 * 1.05 / 1.1)


def test_closed_loop_rate_takes_the_hold():
    # 4 users whose requests spend 10 s in flight beside the hold. Round 1: X = 4 / 10 = 0.4/s, window min(0.2,
    # 1 / 0.4) = 0.2 s, 0.08 arrive in it: w = 0.2 x 1.04 / 1.08. Round 2: X = 4 / (10 + w), the same window
    w1 = 0.2 * 1.04 / 1.08
    x2 = 4 / (10 + w1)
    assert held(1000, active=4.0, rest=10.0) == pytest.approx(0.2 * (1 + x2 * 0.2 / 2) / (1 + x2 * 0.2))
    # per point, as arrays: one point past the timeout's reach, one where the prompts come fast
    both = batch_wait(Replicas(np.array([1.0, 1.0])), agg.Scheduler(budget=2048, mixed=True, batch_wait=(20, 0.9)),
                      agg.Load(isl=1000, osl=1024), np.array([4.0, 4.0]), np.array([0.01, 0.01]), 50.0,
                      rate=np.array([2.0, 20.0]))
    assert both.tolist() == pytest.approx([0.24 / 1.4, 0.0375])


def test_only_trtllm_waits():
    b200 = get_accelerator("b200")
    assert framework_for("trtllm", b200, 1, batch_wait=(20, 0.9)).batch_wait == (20, 0.9)
    assert framework_for("trtllm", b200, 1).batch_wait is None  # off by default, as in TensorRT-LLM
    for key in ("vllm", "sglang"):
        with pytest.raises(RooflineInputError, match="--batch-wait: .* only trtllm"):
            framework_for(key, b200, 1, batch_wait=(20, 0.9))


#: lengths spread as a random-length benchmark sends them (+-10%): its users send their next requests apart, one by
#: one (groups.lockstep), as the hold's arithmetic here assumes; a fixed-length benchmark's lockstep group finds no
#: request decoding when it arrives, and no hold
LLAMA_8B = dict(isl=1024, osl=1024, length_spread=0.1)


def _served(concurrency, wait, budget=None):
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    served = prepare_served(model, gpu, Scenario(), "trtllm", max_batched_tokens=budget, batch_wait=wait)
    return serve_aggregated(served, Workload(concurrency=concurrency, **LLAMA_8B))


def test_a_few_users_wait_out_the_timeout():
    # 4 users of Llama-3.1-8B on an H100 under TensorRT-LLM: a prompt arrives every few seconds, far less often than
    # the 20 steps of the timeout, so each waits ~20 decode steps more for its first token; the bound holds none
    off, on = _served(4, None), _served(4, (20, 0.9))
    assert (off["batch_wait"], on["batch_wait"]) == ("off", "20,0.9")
    assert on["ttft_expected_s"] - off["ttft_expected_s"] == pytest.approx(20 * off["tpot_expected_s"], rel=0.15)
    assert on["ttft_s"] == off["ttft_s"]
    assert on["tpot_expected_s"] == pytest.approx(off["tpot_expected_s"], rel=0.02)
    # a lone user's prompt finds nothing decoding: it goes at once
    assert _served(1, (20, 0.9))["ttft_expected_s"] == pytest.approx(_served(1, None)["ttft_expected_s"])
    # 192 users send ~7 prompts/s. Under the default 8192-token budget the share (0.9 x 8192 - 190 decode tokens)
    # takes 8 prompts, a second's arrivals: the timeout still releases them, after 20 steps. Under a budget of
    # 2048 (InferenceX's max_num_tokens for 1k/1k) two prompts reach it, the second ~0.14 s after the first:
    # fewer steps than the timeout's 20
    for budget, least, most in ((None, 10, 20), (2048, 1, 10)):
        busy_off, busy_on = _served(192, None, budget), _served(192, (20, 0.9), budget)
        steps = (busy_on["ttft_expected_s"] - busy_off["ttft_expected_s"]) / busy_off["tpot_expected_s"]
        assert least < steps < most


def test_the_serving_section_takes_the_wait():
    assert ServingWorkload(1024, 1024, (8,), framework="trtllm", batch_wait=[20, 0.9]).waits() == (20, 0.9)
    assert ServingWorkload(1024, 1024, (8,), framework="trtllm").waits() is None
    with pytest.raises(RooflineInputError, match="batch_wait: vllm does not hold prompts"):
        ServingWorkload(1024, 1024, (8,), batch_wait=[20, 0.9]).validate(get_model("llama-3.1-8b"))
    with pytest.raises(RooflineInputError, match="batch_wait: holds prompts while requests decode"):
        ServingWorkload(1024, 1024, (8,), framework="trtllm", mode="disaggregated", batch_wait=[20, 0.9]).waits()
    for bad in ([20], [20, 1.5], [-1, 0.9], [20.5, 0.9], [True, 0.9], "20,0.9", [2_000_000, 0.9]):
        with pytest.raises(RooflineInputError, match="batch_wait: .* is not allowed"):
            ServingWorkload(1024, 1024, (8,), framework="trtllm", batch_wait=bad).waits()
    # what holds nothing reads as off (TensorRT-LLM: 0 steps are reached at once, a share of 0 is met at once), as
    # does YAML's `off` (false); 20.0 steps are 20
    for off in ([0, 0.9], [20, 0], False):
        assert ServingWorkload(1024, 1024, (8,), framework="trtllm", batch_wait=off).waits() is None
    assert ServingWorkload(1024, 1024, (8,), framework="trtllm", batch_wait=[20.0, 0.9]).waits() == (20, 0.9)


SERVE = ("serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "1024", "--concurrency",
         "4")


def test_serve_and_plan_take_the_option(capsys):
    code, out, _ = _cli(capsys, *SERVE, "--framework", "trtllm", "--batch-wait", "20,0.9", "--format", "json")
    row = json.loads(out)
    row = row[0] if isinstance(row, list) else row
    assert code == 0 and row["batch_wait"] == "20,0.9"
    for off in ("OFF", "0,0.9", "20,0"):  # the last two hold nothing: off
        code, out, _ = _cli(capsys, *SERVE, "--framework", "trtllm", "--batch-wait", off, "--format", "json")
        assert code == 0 and '"batch_wait": "off"' in out
    code, out, _ = _cli(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl",
                        "1024", "--max-devices", "1", "--framework", "trtllm", "--batch-wait", "20,0.9", "--top", "0",
                        "--format", "json")
    rows = json.loads(out)
    rows = rows if isinstance(rows, list) else rows["rows"]
    assert code == 0 and rows and {r["batch_wait"] for r in rows} == {"20,0.9"}


@pytest.mark.parametrize("argv, message", [
    (("--framework", "vllm", "--batch-wait", "20,0.9"), "--batch-wait: vllm does not hold prompts"),
    (("--framework", "trtllm", "--batch-wait", "20"), "--batch-wait: '20' is not allowed"),
    (("--framework", "trtllm", "--batch-wait", "20,1.5"), "--batch-wait: '20,1.5' is not allowed"),
    (("--framework", "trtllm", "--batch-wait", "x,0.5"), "--batch-wait: 'x,0.5' is not allowed"),
    (("--framework", "trtllm", "--batch-wait", "20,0.9,1"), "--batch-wait: '20,0.9,1' is not allowed"),
    (("--framework", "trtllm", "--batch-wait", "99999999999,0.5"), "--batch-wait: '99999999999,0.5' is not allowed"),
    (("--framework", "trtllm", "--batch-wait", "20,0.9", "--mode", "disaggregated"),
     "--batch-wait: holds prompts while requests decode"),
])
def test_bad_batch_wait_is_one_line(capsys, argv, message):
    code, out, err = _cli(capsys, *SERVE, *argv)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_attention_dp_and_other_frameworks_are_refused(capsys):
    code, _, err = _cli(capsys, "serve", "--model", "deepseek-v3", "--gpu", "h200-sxm", "--isl", "1024", "--osl",
                        "1024", "--concurrency", "8", "--tp", "8", "--ep", "8", "--attention-dp", "--framework",
                        "trtllm", "--batch-wait", "20,0.9")
    assert code == 2 and "--batch-wait: TensorRT-LLM waits for batches only without attention DP" in err
    code, _, err = _cli(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl",
                        "1024", "--batch-wait", "20,0.9")
    assert code == 2 and "only with --framework trtllm" in err


def test_the_python_api_takes_a_pair():
    import roofline

    options = dict(framework="trtllm", concurrency=4)
    pair = roofline.serve("llama-3.1-8b", "h100-sxm", isl=1024, osl=1024, batch_wait=(20.0, 0.9), **options)
    off = roofline.serve("llama-3.1-8b", "h100-sxm", isl=1024, osl=1024, batch_wait="off", **options)
    assert [f["batch_wait"][0] for f in (pair, off)] == ["20,0.9", "off"]
    assert pair["ttft_expected_s"][0] > off["ttft_expected_s"][0]


def test_the_report_tells_the_workloads_apart():
    # two workloads of the same lengths, one with batch waiting and one with spread lengths, had shared a title in
    # the model report ('trtllm, aggregated: 1,024 prompt and 1,024 output tokens per request' twice)
    import pandas as pd

    from roofline.report.workloads import workloads_section
    from roofline.serving.table import ServingSettings, serving_table

    gpus = {"h100-sxm": get_accelerator("h100-sxm")}
    workloads = (ServingWorkload(1024, 1024, (4,), framework="trtllm", batch_wait=[20, 0.9]),
                 ServingWorkload(1024, 1024, (4,), framework="trtllm", length_spread=0.2))
    rows, _ = serving_table(get_model("llama-3.1-8b"), gpus, {"h100-sxm": Scenario()},
                            ServingSettings(workloads=workloads, gpus=("h100-sxm",)))
    titles = [table["title"] for table in workloads_section(pd.DataFrame(rows), {"h100-sxm": "H100"})["tables"]]
    assert titles == ["trtllm, aggregated: 1,024 prompt and 1,024 output tokens per request, batch waiting 20 steps "
                      "or 90% of the step budget",
                      "trtllm, aggregated: 1,024 prompt and 1,024 output tokens per request, lengths spread 20% "
                      "either way"]


def test_the_config_schema_takes_the_pair_or_off():
    # `batch_wait: off` (YAML's false) and a pair pass the schema; a one-item list names what it needs ('must not
    # be empty' had been said of [20]); the resolved config refuses what the schema cannot see
    import jsonschema

    from roofline.pipeline import config as rc
    from roofline.pipeline.schema_messages import describe_schema_error
    from test_hardening_config import SCHEMA

    def messages(value) -> list[str]:
        config = {"models": {"llama-3.1-8b": {}}, "gpus": {"h100-sxm": {}},
                  "serving": {"framework": "trtllm",
                              "workloads": [{"isl": 1024, "osl": 1024, "concurrency": [4], "batch_wait": value}]}}
        return [describe_schema_error(e) for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(config)]

    assert messages(False) == messages([20, 0.9]) == []
    assert any("[20] is not allowed; expected 2 items" in m for m in messages([20]))
    assert messages([20, 1.5]) and messages(True)
    config = {"models": {"llama-3.1-8b": {}}, "gpus": {"h100-sxm": {}},
              "serving": {"workloads": [{"isl": 1024, "osl": 1024, "concurrency": [4], "batch_wait": [20, 0.9]}]}}
    with pytest.raises(RooflineInputError, match="batch_wait: vllm does not hold prompts"):
        rc.resolve_config(config)
