"""The framework's host time per running sequence: each step of D decoding sequences adds k x D / r on the expected
side (k fitted per framework on served runs, r the attention replicas, each with its own scheduler); the bounds never
see it."""
from __future__ import annotations

import copy

import numpy as np
import pytest

from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.serving.framework import FITTED, framework_for
from roofline.serving.serve import Workload, prepare_served, serve_aggregated
from roofline.serving.steps import lookup

H200 = get_accelerator("h200-sxm")
FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")


def _without_host(stepper):
    other = copy.copy(stepper)
    other.host_s = other.host_per_sequence_s = 0.0
    return other


def test_the_fitted_host_time_per_sequence_of_each_framework():
    # fitted on the even served runs (benchmarks/validate_serving.py --fit): vLLM's loss only rose with it
    assert {key: FITTED[key][4] for key in FITTED} == {"vllm": 0.0, "sglang": 24e-6, "trtllm": 7e-6}
    assert framework_for("trtllm", H200).host_per_sequence_s == 7e-6


@pytest.mark.parametrize("attention_dp, replicas", [(False, 1), (True, 8)])
def test_a_decode_step_adds_the_host_time_of_each_running_sequence(attention_dp, replicas):
    # TensorRT-LLM, 7 us a sequence: a decode step of 512 sequences adds 512 x 7 us = 3.584 ms on one scheduler;
    # under data-parallel attention 8 schedulers take 64 each, 0.448 ms
    model = get_model("deepseek-v3" if attention_dp else "llama-3.1-8b")
    plan = Parallel(tp=8, ep=8, attention_dp=True) if attention_dp else Parallel()
    served = prepare_served(model, H200, FP8.with_(parallel=plan), "trtllm")
    load = Workload(isl=1024, osl=1024, concurrency=512).load(served.spec)
    stepper = served.stepper(load, 512.0)
    parts = stepper.target
    D = 512.0
    table = lookup(parts.tokenwise_expected, [D])[0] + lookup(parts.logits_expected, [D])[0] + lookup(
        parts.attention_expected, [D])[0]
    assert float(stepper.light(D, "expected")) == pytest.approx(table + 512 * 7e-6 / replicas, rel=1e-9)
    bound = lookup(parts.tokenwise_bound, [D])[0] + lookup(parts.logits_bound, [D])[0] + lookup(
        parts.attention_bound, [D])[0]
    assert float(stepper.light(D, "bound")) == pytest.approx(bound, rel=1e-9)  # the bound reads no host time
    # a step that carries a prompt chunk beside them adds the same; a prompt-only step (a prefill worker's) none
    C = np.array([2048.0])
    fused = stepper.heavy(np.array([D]), C, "expected") - _without_host(stepper).heavy(np.array([D]), C, "expected")
    assert float(fused[0]) == pytest.approx(512 * 7e-6 / replicas, rel=1e-9)
    alone = stepper.prompts_alone()
    assert float(alone.heavy(np.array([D]), C, "expected")[0]) == pytest.approx(
        float(_without_host(alone).heavy(np.array([D]), C, "expected")[0]), rel=1e-12)


def test_the_host_time_per_sequence_slows_a_large_batch_more_than_a_small_one():
    # Llama-3.1-8B fp8 on one H200 under TensorRT-LLM, 128/2048: at 800 users every step pays 5.6 ms of host time,
    # at 8 users 56 us; the expected TPOT without it (the constant set to 0) is faster by about that
    model = get_model("llama-3.1-8b")
    rows = {}
    for per_sequence in (0.0, 7e-6):
        fitted = FITTED["trtllm"][:4] + (per_sequence,)
        served = prepare_served(model, H200, FP8, "trtllm", fitted=fitted)
        rows[per_sequence] = {users: serve_aggregated(served, Workload(isl=128, osl=2048, concurrency=users))
                              for users in (8, 800)}
    for users, host in ((8, 8 * 7e-6), (800, 800 * 7e-6)):
        slower = rows[7e-6][users]["tpot_expected_s"] - rows[0.0][users]["tpot_expected_s"]
        assert slower == pytest.approx(host, rel=0.15)
        # the TPOT bound, a lone decode step at the expected occupancy, moves only with that occupancy
        assert rows[7e-6][users]["tpot_s"] == pytest.approx(rows[0.0][users]["tpot_s"], rel=1e-3)
