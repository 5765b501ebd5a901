"""The served throughput bound counts the work of every token: a request's prompt and decode tokens at the compute
roof of the token-wise operators (their FLOPs at the device's peaks), plus its prompt's attention. Before, the
bound left prompts free, and for long prompts with short outputs it allowed several times what the device's FLOPs
can compute (Llama-3.1-8B fp8 on one H200 at 8000/100: 46.6 requests/s, 5.2 PFLOP/s of prompt GEMMs alone on a
1.98 PFLOP/s device)."""
from __future__ import annotations

import numpy as np
import pytest

from roofline.engine.graph import build_operators
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.serving import aggregated as agg
from roofline.serving import search as served_search
from roofline.serving.serve import Disaggregation, Workload, prepare_served, serve_aggregated, serve_disaggregated
from roofline.serving.steps import LOGIT_OPS

H100, H200 = get_accelerator("h100-sxm"), get_accelerator("h200-sxm")
FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
#: Llama-3.1-8B's linear weights per token, less embedding and lm_head: 32 layers x (q, o: 4096^2 each; k, v: 4096 x
#: 1024 each; gate, up, down: 4096 x 14336 each) = 32 x 218,103,808 = 6,979,321,856 multiply-adds
LLAMA_8B_MACS = 32 * (2 * 4096 ** 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)


def _stepper(model, gpu, scenario, isl=1024, osl=128):
    served = prepare_served(model, gpu, scenario, "vllm")
    load = Workload(isl=isl, osl=osl, concurrency=1).load(served.spec)
    return served.stepper(load, 64.0), load


@pytest.mark.parametrize("tp", [1, 2])
def test_the_token_compute_bound_is_the_token_wise_flops_at_the_peaks(tp):
    model = get_model("llama-3.1-8b")
    scenario = Scenario(parallel=Parallel(tp=tp)).for_model(model)
    stepper, _ = _stepper(model, H100, scenario)
    # the engine's decode graph of one token, less attention and logits: count x FLOPs / the peak of their dtype
    ops = [op for op in build_operators(model, "decode", scenario, batch=1, seq_len=1)
           if op.op_class != "attention" and op.name not in LOGIT_OPS]
    assert stepper.token_compute == pytest.approx(sum(op.count * op.cost.flops / H100.peak(op.compute_dtype)
                                                      for op in ops), rel=1e-9)
    # and a dense model's: ~2 FLOPs per weight per token, split over the tp devices (2 x 6.98e9 / 989.4e12 = 14.1 us
    # at tp 1; norms, RoPE and SiLU add under 0.2%)
    assert stepper.token_compute == pytest.approx(2 * LLAMA_8B_MACS / tp / H100.peak("fp16"), rel=2e-3)


@pytest.mark.parametrize("users", [16, 64])
def test_no_throughput_bound_asks_more_flops_than_the_device_has(users):
    # 8000-token prompts of Llama-3.1-8B take 2 x 6.98e9 x 8000 = 1.12e14 FLOPs of fp8 GEMMs each: one H200 (1979
    # TFLOP/s fp8) computes at most 17.7 of them per second; the bound said 46.6 before
    model = get_model("llama-3.1-8b")
    row = serve_aggregated(prepare_served(model, H200, FP8, "vllm"), Workload(isl=8000, osl=100, concurrency=users),
                           overflow="queue")
    prompt_flops = 2 * LLAMA_8B_MACS * 8000
    assert row["requests_per_s"] * prompt_flops <= H200.peak("fp8")
    assert row["tokens_per_s"] >= row["tokens_per_s_expected"]
    # a vLLM run of this workload at 16 users (AIConfigurator's silicon sample) measured 8.1 requests/s
    assert row["requests_per_s"] >= 8.1


def test_the_work_bound_and_the_decode_bound_each_bind_where_they_should():
    model = get_model("llama-3.1-8b")
    served = prepare_served(model, H200, FP8, "vllm")
    for isl, osl, binds in ((8000, 100, "work"), (128, 4096, "decode")):
        load = Workload(isl=isl, osl=osl, concurrency=64).load(served.spec)
        stepper = served.stepper(load, 64.0)
        # the prompt's attention beyond the request's share of the decode attention (one kernel can run both)
        share = (osl - 1) / 64
        decode = share * stepper.light(64.0, "bound") + max(
            isl * stepper.prompt["bound"] - share * stepper.decode_attention(64.0, "bound"), 0.0)
        # every token at the token-wise compute roof, a logit row per output token (the prompt's last one too)
        work = stepper.token_compute * (isl + osl - 1) + stepper.logit_compute * osl + isl * stepper.prompt["bound"]
        assert float(agg.throughput_bound(stepper, load, 64.0)) == pytest.approx(1 / max(decode, work), rel=1e-9)
        assert (work > decode) == (binds == "work")
    # a decode pool computes no prompts: its bound is the decode steps' alone
    load = Workload(isl=8000, osl=100, concurrency=64).load(served.spec)
    stepper = served.stepper(load, 64.0)
    assert float(agg.throughput_bound(stepper, load, 64.0, prompts=False)) == pytest.approx(
        64 / (99 * float(stepper.light(64.0, "bound"))), rel=1e-9)


def test_a_disaggregated_bound_is_held_to_what_its_prefill_pool_computes():
    # one prefill worker (one H200) for four decode workers, 8000/100: the prompts' FLOPs allow at most 17.7
    # requests/s (above), however fast the decode pool
    model = get_model("llama-3.1-8b")
    served = prepare_served(model, H200, FP8.with_(parallel=Parallel()), "trtllm")
    row = serve_disaggregated(served, Workload(isl=8000, osl=100, concurrency=64), Disaggregation(1, 4, Parallel()),
                              overflow="queue")
    assert row["requests_per_s"] * 2 * LLAMA_8B_MACS * 8000 <= H200.peak("fp8")
    assert row["tokens_per_s"] >= row["tokens_per_s_expected"]


@pytest.mark.parametrize("mode", ["aggregated", "disaggregated"])
def test_the_search_bounds_throughput_as_serve_does(mode):
    model = get_model("llama-3.1-8b")
    workload = served_search.ServedWorkload(8000, 100, framework="vllm")
    result = served_search.search(model, [H200], workload, ["fp8"], ["fp8"], max_devices=2, concurrencies=[32],
                                  mode=mode)
    i = next(i for i, c in enumerate(result.candidates) if c.scenario.attention == "flash"
             and c.scenario.parallel.tp == 1 and c.scenario.kv_dtype == "fp8")
    point = int(np.flatnonzero(result.candidate == i)[0])
    candidate = result.candidates[i]
    served = prepare_served(model, H200, candidate.scenario, "vllm")
    request = Workload(isl=8000, osl=100, concurrency=32)
    if mode == "aggregated":
        row = serve_aggregated(served, request, overflow="queue")
    else:
        pools = Disaggregation(candidate.prefill_workers, candidate.decode_workers, candidate.prefill_plan)
        row = serve_disaggregated(served, request, pools, overflow="queue")
    assert result.columns["tokens_per_s"][point] == pytest.approx(row["tokens_per_s"], rel=1e-6)
    # 100 output tokens a request: requests/s x the prompt's FLOPs within the devices' peak
    assert result.columns["tokens_per_s"][point] / 100 * 2 * LLAMA_8B_MACS * 8000 <= H200.peak("fp8") * row["devices"]


def test_pipeline_stages_count_as_concurrent_in_the_throughput_bound():
    # the tables price a step through both stages in turn, but under load two stages compute different
    # micro-batches at once: two stages holding the model can deliver what one device holding it does, and up to
    # twice that on the compute roof (8000/100 is prompt-bound). Before, the pipeline's bound (the stages in turn,
    # plus the send between them) sat below the single device's
    model = get_model("llama-3.1-8b")
    request = Workload(isl=8000, osl=100, concurrency=64)
    rows = {pp: serve_aggregated(prepare_served(model, H200, FP8.with_(parallel=Parallel(pp=pp)), "vllm"), request,
                                 overflow="queue") for pp in (1, 2)}
    assert rows[2]["requests_per_s"] >= 1.9 * rows[1]["requests_per_s"]
    assert rows[2]["requests_per_s"] * 2 * LLAMA_8B_MACS * 8000 <= 2 * H200.peak("fp8")
    assert rows[2]["tokens_per_s"] >= rows[2]["tokens_per_s_expected"]
