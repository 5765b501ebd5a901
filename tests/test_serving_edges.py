"""The serving model at its edges: overload, saturated pools, prompt-only requests, the serving recipes the search
assumes, and the inputs it refuses (an independent review's findings, each a test that failed before its fix)."""
from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.hf_config import model_from_hf_dict
from roofline.engine.models import catalog, get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.serving import search as served_search
from roofline.serving.candidates import DEFAULT_KV_DTYPES, activation_dtype
from roofline.serving.framework import FITTED
from roofline.serving.serve import Disaggregation, Workload, prepare_served, serve_aggregated, serve_disaggregated
from roofline.serving.speculative import Speculation

FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")


def _served_70b(framework: str = "vllm"):
    return prepare_served(get_model("llama-3.1-70b"), get_accelerator("h200-sxm"), FP8.with_(parallel=Parallel()),
                          framework=framework)


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_an_open_loop_beyond_capacity_delivers_its_saturated_state_and_an_unbounded_ttft(framework):
    served = _served_70b(framework)
    low = serve_aggregated(served, Workload(isl=1024, osl=1024, request_rate=0.5))
    assert low["keeps_up"] and low["requests_per_s_expected"] == pytest.approx(0.5)
    # the saturated state: a full cache, its queue never empty, batched as the closed loop's lockstep groups or
    # admitted one by one, whichever delivers more (SGLang's fitted lockstep share alone had made an overloaded open
    # loop deliver less than one just below saturation; arrivals one by one alone, less than the same cache closed)
    step, request, _, handoff, per_sequence = FITTED[framework]
    independent = prepare_served(get_model("llama-3.1-70b"), get_accelerator("h200-sxm"),
                                 FP8.with_(parallel=Parallel()), framework=framework,
                                 fitted=(step, request, 0.0, handoff, per_sequence))
    full = Workload(isl=1024, osl=1024, concurrency=int(low["kv_capacity_requests"]))
    saturated = max(serve_aggregated(served, full), serve_aggregated(independent, full),
                    key=lambda row: row["requests_per_s_expected"])
    for rate in (10.0, 1000.0):
        row = serve_aggregated(served, Workload(isl=1024, osl=1024, request_rate=rate))
        assert not row["keeps_up"] and math.isinf(row["ttft_expected_s"]) and math.isinf(row["e2e_latency_expected_s"])
        # what a full cache delivers, whatever arrives: not the offered load
        assert row["requests_per_s_expected"] == pytest.approx(saturated["requests_per_s_expected"], rel=1e-9)
        assert row["decode_batch_expected"] <= row["kv_capacity_requests"]
        assert row["tokens_per_s_expected"] <= row["tokens_per_s"] <= rate * 1024
    # below saturation the bound is at most the offered load: 0.5 requests/s x 1024 tokens = 512 tokens/s
    assert low["tokens_per_s_expected"] <= low["tokens_per_s"] <= 512.0 + 1e-9


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_an_open_loop_far_past_saturation_on_a_slow_device_stays_finite(framework):
    # SGLang's prefill-first loop on an L40S at 50 requests/s grew its requests in flight geometrically until they
    # overflowed (inf - inf = NaN) and the step tables were read at a NaN index: an IndexError, not a row
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("l40s"), Scenario(parallel=Parallel()),
                            framework=framework)
    for rate in (50.0, 1e5):
        row = serve_aggregated(served, Workload(isl=2000, osl=200, request_rate=rate))
        assert not row["keeps_up"] and math.isinf(row["ttft_expected_s"])
        assert 0 < row["tokens_per_s_expected"] <= row["tokens_per_s"] and math.isfinite(row["tpot_expected_s"])
        assert row["decode_batch_expected"] <= row["kv_capacity_requests"]


def test_a_disaggregated_open_loop_beyond_its_prefill_pool_is_capped_too():
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    served = prepare_served(model, gpu, Scenario(parallel=Parallel()))
    pools = Disaggregation(1, 1, Parallel())
    row = serve_disaggregated(served, Workload(isl=4096, osl=512, request_rate=500.0), pools)
    assert not row["keeps_up"] and math.isinf(row["ttft_expected_s"])
    assert row["requests_per_s_expected"] < 500.0 / 10  # far below the offered 500/s
    assert row["tokens_per_s_expected"] <= row["tokens_per_s"] <= 500.0 * 512


def test_closed_loop_users_beyond_a_saturated_prefill_pool_only_wait():
    # one 1-device prefill worker feeding one 2-device decode worker, 8k-token prompts: the prefill pool saturates
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    served = prepare_served(model, gpu, Scenario(parallel=Parallel(tp=2)))
    pools = Disaggregation(1, 1, Parallel())
    rows = [serve_disaggregated(served, Workload(isl=8192, osl=256, concurrency=n), pools, overflow="queue")
            for n in (64, 128, 256)]
    rates = [r["requests_per_s_expected"] for r in rows]
    ttfts = [r["ttft_expected_s"] for r in rows]
    assert rates[1] == pytest.approx(rates[2], rel=1e-6)  # saturated: the same rate
    assert ttfts[2] > 1.9 * ttfts[1] > 0  # Little: twice the users wait about twice as long
    # the rate is what the prefill worker computes busy all the time, no more: rate x prompt time <= 1
    assert rates[2] * rows[2]["ttft_s"] <= 1.0


def test_prompt_only_requests_are_served_without_warnings():
    # osl 1: the prefill yields the only token; no decode step. The closed loop of 8 users waits at most for the
    # other 7 prompts ahead (7 x 1024 tokens < one 8192-token budget: a step)
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    served = prepare_served(model, gpu, Scenario(parallel=Parallel()))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = serve_aggregated(served, Workload(isl=1024, osl=1, concurrency=8))
    two = serve_aggregated(served, Workload(isl=1024, osl=2, concurrency=8))
    assert one["decode_batch_expected"] == 0.0
    assert one["ttft_expected_s"] < 2 * two["ttft_expected_s"]
    assert one["requests_per_s_expected"] > two["requests_per_s_expected"]


def test_the_search_serves_nvfp4_w4a4_on_blackwell_and_weight_only_elsewhere():
    b200, h100 = get_accelerator("b200"), get_accelerator("h100-sxm")
    assert activation_dtype("nvfp4", b200) == "nvfp4" and activation_dtype("mxfp4", b200) == "fp8"
    assert activation_dtype("nvfp4", h100) == "fp16" and activation_dtype("int4", b200) == "fp16"
    assert activation_dtype("fp8", h100) == "fp8"
    mi355x = get_accelerator("mi355x")  # AMD's matrix cores take MXFP4, not NVFP4
    assert activation_dtype("mxfp4", mi355x) == "mxfp4" and activation_dtype("nvfp4", mi355x) == "fp16"
    model = get_model("llama-3.1-70b")
    workload = served_search.ServedWorkload(isl=1024, osl=128, framework="trtllm")
    result = served_search.search(model, [b200], workload, ["nvfp4"], ["fp8"], 1, "aggregated")
    assert {c.scenario.act_dtype for c in result.candidates} == {"nvfp4"}
    hopper = served_search.search(model, [h100], workload, ["nvfp4"], ["fp8"], 2, "aggregated")
    assert {c.scenario.act_dtype for c in hopper.candidates} == {"fp16"}


def test_the_default_kv_caches_are_the_ones_serving_frameworks_offer(capsys):
    from roofline.cli import app

    assert DEFAULT_KV_DTYPES == ("fp16", "fp8")
    code = app.main(["plan", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "1024",
                     "--top", "0", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and rows and {r["kv_dtype"] for r in rows} <= {"fp16", "fp8"}


def test_plan_says_how_to_price_a_checkpoint_of_mixed_weight_dtypes(capsys):
    # gpt-oss ships MXFP4 experts beside 16-bit attention; the search's candidates have one weight dtype
    # throughout, so none of its rows (fp16 = 41.8 GB of bf16 experts) was the checkpoint as it ships, unsaid
    from roofline.cli import app

    argv = ["plan", "--model", "gpt-oss-20b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256", "--top", "1"]
    assert app.main(argv) == 0
    assert ("note: gpt-oss-20b's checkpoint keeps its experts in mxfp4 and the rest in 16 bits; each candidate here "
            "has one weight dtype throughout (fp16, fp8, int8, int4): --weight-dtypes mxfp4 --attention-weight-dtype "
            "bf16 prices the checkpoint's own layout") in capsys.readouterr().err
    assert app.main([*argv, "--weight-dtypes", "mxfp4", "--attention-weight-dtype", "bf16"]) == 0
    assert "note:" not in capsys.readouterr().err
    assert app.main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                     "--top", "1"]) == 0 and "note:" not in capsys.readouterr().err


def test_the_frontier_keeps_its_best_point_and_no_point_of_waiting_users():
    # an 8k-token disaggregated search, where the prefill pool saturates: no frontier point is one of waiting users,
    # and the best point on offer leads the front
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    workload = served_search.ServedWorkload(isl=8192, osl=256)
    result = served_search.search(model, [gpu], workload, ["fp16"], ["fp8"], 4, "disaggregated")
    front, meets = served_search.frontier(result), result.meets()
    waiting = served_search._waiting_users(result, meets, "expected")
    x = result.columns["tokens_per_s_per_device_expected"]
    assert waiting.any() and front.size and not waiting[front].any()
    assert x[front[0]] == x[np.flatnonzero(meets & ~waiting)].max()


def test_small_gains_of_waiting_users_do_not_add_up_unseen():
    # 4 concurrencies of one candidate, +0.6% tokens/s per device a step while TTFT jumps 5 s (more than half the
    # extra user's queueing, 0.5 x 1 / 0.2 = 2.5 s): 1, 2 and 3 form a run, each measured from the last point kept:
    # 1 (+0.6% over 0) waits, 2 (+1.2% over 0) stays, 3 (+0.6% over 2) waits. The front is 2 alone (equal tokens/s
    # per user: the most per device wins); compared point by point with its neighbour instead, every point would wait
    # and 0 would be the front; measured from 0 alone, 3 (+1.8%) would stay, and a slow plateau would keep every
    # point past its first 1%
    gpu = get_accelerator("h200-sxm")
    candidate = served_search.Candidate(gpu, FP8.with_(parallel=Parallel()))
    columns = {"tokens_per_s_per_device_expected": np.array([100.0, 100.6, 101.2, 101.8]),
               "tokens_per_s_per_user_expected": np.full(4, 40.0), "tokens_per_s_expected": np.full(4, 204.8),
               "ttft_expected_s": np.array([0.1, 5.1, 10.1, 15.1]), "tpot_expected_s": np.full(4, 0.025),
               "fits": np.ones(4, dtype=bool)}
    result = served_search.ServedSearch(get_model("llama-3.1-8b"), served_search.ServedWorkload(isl=1024, osl=1024),
                                        [candidate], np.zeros(4, dtype=int), np.arange(1.0, 5.0), columns)
    assert served_search._waiting_users(result, np.ones(4, dtype=bool), "expected").tolist() == [False, True, False,
                                                                                                  True]
    assert served_search.frontier(result).tolist() == [2]


def test_mtp_needs_the_models_own_module():
    assert {k for k, m in catalog().items() if m.mtp_layers} == {"deepseek-v3", "deepseek-v3.2", "glm-4.5",
                                                                "glm-4.5-air", "glm-5", "qwen3-next-80b-a3b"}
    spec = Speculation("mtp", 1, acceptance=0.8)
    assert spec.validate(get_model("deepseek-v3")) is spec
    with pytest.raises(RooflineInputError, match="--spec-method: mtp .* llama-3.1-70b ships none"):
        spec.validate(get_model("llama-3.1-70b"))
    # a config.json names its module count: DeepSeek's num_nextn_predict_layers, Qwen3-Next's mtp_num_hidden_layers
    base = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64,
            "hidden_act": "silu"}
    assert model_from_hf_dict(base, "m").mtp_layers == 0
    assert model_from_hf_dict({**base, "num_nextn_predict_layers": 1}, "m").mtp_layers == 1
    with pytest.raises(RooflineInputError, match="multi-token-prediction layer count is -1"):
        model_from_hf_dict({**base, "mtp_num_hidden_layers": -1}, "m")


def test_auto_plans_leave_room_under_the_frameworks_memory_rule():
    # DeepSeek-V3 fp8 on B200 under SGLang: 4 devices hold the weights at 0.9 of memory but not at SGLang's 0.85
    served = prepare_served(get_model("deepseek-v3"), get_accelerator("b200"), Scenario(parallel="auto"),
                            framework="sglang")
    row = serve_aggregated(served, Workload(isl=1024, osl=1024, concurrency=1))
    assert row["devices"] == 8 and row["kv_capacity_requests"] >= 1


def test_capacity_errors_name_the_option_given_and_no_advice_already_taken():
    served = _served_70b()
    with pytest.raises(RooflineInputError) as error:
        serve_aggregated(served, Workload(isl=1024, osl=1024, concurrency=100_000))
    assert "fp8 KV cache" not in str(error.value)
    # 70B bf16 on 2 x H100 leaves ~3 GB per device; one request of 120k tokens needs ~20 GB per device
    tight = prepare_served(get_model("llama-3.1-70b"), get_accelerator("h100-sxm"), Scenario(parallel=Parallel(tp=2)))
    with pytest.raises(RooflineInputError, match="^--request-rate: not one request .* or an fp8 KV cache$"):
        serve_aggregated(tight, Workload(isl=100_000, osl=20_000, request_rate=1.0))


def test_concurrency_is_an_integer_in_a_served_row():
    row = serve_aggregated(_served_70b(), Workload(isl=1024, osl=1024, concurrency=8))
    assert row["concurrency"] == 8 and isinstance(row["concurrency"], int)


def test_a_point_of_waiting_users_leaves_the_front_and_the_point_it_hid_returns():
    # one candidate at 1, 2, 3 users: 3 beats 2 by 0.5% on both axes while its TTFT grows by 8.8 s, more than half
    # the extra user's queueing at its rate (0.5 x 1 / 0.2 requests/s = 2.5 s): 3 leaves the front and 2, which only
    # 3 had beaten, is on it again; 1 (half the tokens/s per device) stays
    gpu = get_accelerator("h200-sxm")
    candidate = served_search.Candidate(gpu, FP8.with_(parallel=Parallel()))
    columns = {"tokens_per_s_per_device_expected": np.array([100.0, 200.0, 201.0]),
               "tokens_per_s_per_user_expected": np.array([50.0, 40.0, 40.2]),
               "tokens_per_s_expected": np.array([102.4, 204.8, 204.8]),  # 0.1, 0.2, 0.2 requests/s x 1024
               "ttft_expected_s": np.array([0.1, 0.2, 9.0]), "tpot_expected_s": np.array([0.02, 0.025, 0.025]),
               "fits": np.ones(3, dtype=bool)}
    result = served_search.ServedSearch(get_model("llama-3.1-8b"), served_search.ServedWorkload(isl=1024, osl=1024),
                                        [candidate], np.zeros(3, dtype=int), np.array([1.0, 2.0, 3.0]), columns)
    assert sorted(served_search.frontier(result).tolist()) == [0, 1]
    assert sorted(served_search.frontier(result, per_gpu=True).tolist()) == [0, 1]


def test_a_served_plan_section_is_bounded_by_the_served_search_count():
    from roofline.pipeline import config as rc
    from roofline.serving.search import count_candidates

    config = {"models": {"kimi-k2": {}}, "gpus": {"h200-sxm": {}},
              "plan": {"gpus": ["h200-sxm", "b200"], "max_devices": 64, "mode": "all", "max_candidates": 1000}}
    with pytest.raises(RooflineInputError) as error:
        rc.resolve_config(config)
    gpus = [get_accelerator("h200-sxm"), get_accelerator("b200")]
    served = count_candidates(get_model("kimi-k2"), gpus, ("fp16", "fp8", "int8", "int4"), DEFAULT_KV_DTYPES, 64,
                              "all")
    assert str(error.value).startswith(f"plan (models.kimi-k2): {served:,} candidates to evaluate")


def test_a_disaggregated_closed_loop_keeps_littles_law_across_saturation():
    # the decode pool's tokens/s is its occupancy over TPOT, and the rate stops at the prefill pool's capacity
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    served = prepare_served(model, gpu, Scenario(parallel=Parallel()))
    pools = Disaggregation(1, 1, Parallel())
    rows = [serve_disaggregated(served, Workload(isl=8192, osl=256, concurrency=n), pools, overflow="queue")
            for n in (8, 16, 24, 32, 64, 128)]
    for row in rows:
        little = row["decode_batch_expected"] / row["tpot_expected_s"] * 256 / 255
        assert row["tokens_per_s_expected"] == pytest.approx(little, rel=1e-3)
    rates = [row["requests_per_s_expected"] for row in rows]
    # the rate climbs to what the prefill pool computes: users past the decode slots (54 here) queue for prompts
    # too, not for slots (16 decode at 128 users), so the pool that limits is the prefill one; the users beyond the
    # decode slots had been dropped from the prefill queue (its rate then flat from 64 users, called decode-limited)
    assert rates == sorted(rates) and rates[-1] == pytest.approx(rates[-2], rel=0.01)
    assert rows[-1]["decode_batch_expected"] < rows[-1]["kv_capacity_requests"] / 3
    assert [row["limited_by"] for row in rows[-3:]] == ["prefill"] * 3
    assert [row["ttft_expected_s"] for row in rows] == sorted(row["ttft_expected_s"] for row in rows)


def test_measured_runs_take_the_activation_recipe_of_their_device():
    from roofline.serving.measured import MeasuredRun

    run = MeasuredRun(model="llama-3.1-70b", gpu="h100-sxm", tp=2, isl=1024, osl=128, concurrency=8,
                      weight_dtype="nvfp4", kv_dtype="fp8", source="runs.csv:2", ttft_s=0.1, tpot_s=0.01,
                      tokens_per_s=800.0)
    assert run.scenario(Scenario(), get_accelerator("h100-sxm")).act_dtype == "fp16"
    assert run.scenario(Scenario(), get_accelerator("b200")).act_dtype == "nvfp4"


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_an_aggregated_closed_loop_rises_to_its_plateau_and_stays_there(framework):
    # prompt-heavy requests (8k tokens in, 16 out) on one H100: the rate climbs to what the prompt room computes and
    # stays there, the users beyond wait (TTFT grows); a queue whose utilization came from the users in flight
    # rather than the rate had collapsed the rate at the onset of saturation (66.5 -> 40.1 tokens/s, 10 -> 17 users)
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), Scenario(parallel=Parallel()),
                            framework)
    rows = [serve_aggregated(served, Workload(isl=8192, osl=16, concurrency=n), overflow="queue")
            for n in (4, 8, 10, 12, 16, 17, 24, 32, 64)]
    rates = [row["requests_per_s_expected"] for row in rows]
    ttfts = [row["ttft_expected_s"] for row in rows]
    peak = rates.index(max(rates))
    assert all(b >= a * (1 - 1e-9) for a, b in zip(rates[:peak + 1], rates[1:peak + 1]))  # rising to the plateau
    # past it the rate stays put within 1.5%: the decode steps see a little more of the queued users' prompts (each
    # other user's next prompt lands in a request's decode steps as often as the cycle decodes: (N - 1) / N of the
    # loop's own rate), a step slightly dearer
    assert min(rates[peak:]) >= 0.985 * rates[peak]
    assert all(b >= a for a, b in zip(ttfts, ttfts[1:]))


def test_serve_gives_a_disaggregated_search_row_its_own_numbers(capsys):
    # the prefill workers run prompts alone in both (they had run serve's framework's mixed steps there)
    from roofline.cli import app

    assert app.main(["plan", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "4096", "--osl", "512",
                     "--mode", "disaggregated", "--max-devices", "2", "--dtypes", "fp8", "--top", "1",
                     "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert app.main(["serve", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "4096", "--osl", "512",
                     "--mode", "disaggregated", "--tp", "1", "--prefill-tp", "1", "--weight-dtype", "fp8",
                     "--act-dtype", "fp8", "--kv-dtype", "fp8", "--attention", row["attention"],
                     "--concurrency", str(row["batch"]), "--format", "json"]) == 0
    served = json.loads(capsys.readouterr().out)
    for name in ("ttft_expected_s", "tpot_expected_s", "tokens_per_s_expected"):
        assert served[name] == pytest.approx(row[name], rel=1e-9), name


# Review of the prompt-packing change (2026-12-02)
@pytest.mark.parametrize("concurrency", [56, 80, 102])
def test_a_non_monotone_kernel_table_cannot_turn_the_prompt_cap_negative(concurrency):
    # vLLM's measured token-wise kernels of Llama-3.1-8B fp8 on the H200 take 8.0 ms at 100 tokens and 6.0 ms at 128:
    # a full prompt step scaled linearly from a chunk's (heavy - light < 0) gave -16,420 requests/s and a TTFT of
    # 5.6e301 s at 56 users, and Little's law broke up to 108 users. The full step is now priced as such.
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h200-sxm"), FP8, framework="vllm")
    row = serve_aggregated(served, Workload(isl=128, osl=2048, concurrency=concurrency))
    rate, decoding = row["requests_per_s_expected"], row["decode_batch_expected"]
    assert 0 < rate and row["ttft_expected_s"] < 1.0
    assert decoding == pytest.approx(rate * 2047 * row["tpot_expected_s"], rel=0.02)  # Little's law
    assert rate * row["e2e_latency_expected_s"] == pytest.approx(concurrency, rel=0.01)


def test_the_open_loop_keeps_up_only_below_the_closed_loops_saturated_rate():
    # 16 damped iterations left the open loop unconverged near the prompt room's saturation: it kept up at 28.9
    # requests/s where the closed loop saturates at 25.6 (Llama-3.1-8B fp8, one H200, vLLM, 2048/128)
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h200-sxm"), FP8, framework="vllm")
    saturated = serve_aggregated(served, Workload(isl=2048, osl=128, concurrency=2000), overflow="queue")
    most = saturated["requests_per_s_expected"]
    below = serve_aggregated(served, Workload(isl=2048, osl=128, request_rate=0.95 * most))
    above = serve_aggregated(served, Workload(isl=2048, osl=128, request_rate=1.05 * most))
    assert below["keeps_up"] and not above["keeps_up"]


def test_a_batching_prefill_worker_keeps_up_below_its_full_budget_rate_and_waits_about_a_step():
    # A prefill step batches the prompts that arrived while the last one ran, so a worker stepping all the time
    # with small batches is not saturated: it saturates only where full-budget steps cannot keep up. Before, its
    # busy share (1 once steps batch) entered the M/D/1 wait at 0.995: ~100 steps of waiting (7.3 s where a
    # measured DeepSeek-V3 TensorRT-LLM run waited 1.8 s), and the open loop reported it could not keep up
    from roofline.serving import disaggregated as dis

    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    served = prepare_served(model, gpu, Scenario(parallel=Parallel()), framework="trtllm")
    pools = Disaggregation(1, 8, Parallel())  # 8 decode workers: the prefill worker is the one that fills up
    load = Workload(isl=128, osl=128, request_rate=1.0).load(served.spec)  # short prompts: mostly weight reads
    prefill = served.stepper(load, 4096.0).prompts_alone()
    budget = served.framework.max_batched_tokens
    most = float(dis.saturation_rate(prefill, load, budget, "expected"))  # prompts/s of full-budget steps
    C, step, busy, used = (float(v) for v in dis._prefill_worker(prefill, load, budget, 0.5 * most, most,
                                                                 "expected"))
    assert C > load.computed and busy == pytest.approx(1.0) and used == pytest.approx(0.5)  # batching, half used
    row = serve_disaggregated(served, Workload(isl=128, osl=128, request_rate=0.5 * most), pools)
    assert row["keeps_up"] and row["limited_by"] == "prefill"
    # the rest of the running step (busy x t / 2) + the queue at utilization 1/2 (M/D/1: t / 2) + its own step t,
    # t = t(C) at the batching fixed point, + the request's overheads and the cache hand-over: 2 t in all
    outside = served.framework.request_overhead_s + served.framework.handoff_s + row["kv_transfer_s"]
    assert row["ttft_expected_s"] == pytest.approx(outside + 2.0 * step, rel=1e-6)
    near = serve_disaggregated(served, Workload(isl=128, osl=128, request_rate=0.9 * most), pools)
    above = serve_disaggregated(served, Workload(isl=128, osl=128, request_rate=1.05 * most), pools)
    assert near["keeps_up"] and near["limited_by"] == "prefill" and near["ttft_expected_s"] > row["ttft_expected_s"]
    assert not above["keeps_up"] and above["limited_by"] == "prefill"


def test_a_prompt_spans_steps_of_one_replicas_chunk_and_its_bound_reads_the_whole_prompt():
    # TensorRT-LLM steps 8 x 8192 tokens on 8 DP-attention replicas, but one request's 60,000-token prompt lives on
    # one of them: at most 8192 of it per step, so at least 60000 / 8192 = 7.3 steps of prefill. And the TTFT bound
    # (the prompt computed at once at the roofline) does not depend on the budget: the step grids reach the prompt
    deepseek, h200 = get_model("deepseek-v3"), get_accelerator("h200-sxm")
    served = prepare_served(deepseek, h200, FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True)), "trtllm")
    row = serve_aggregated(served, Workload(isl=60000, osl=128, concurrency=1))
    load = Workload(isl=60000, osl=128, concurrency=1).load(served.spec)
    stepper = served.stepper(load, 64.0)
    one_chunk = float(stepper.heavy(np.array([1.0]), np.array([8192.0]), "expected")[0])
    assert row["ttft_expected_s"] >= 60000 / 8192 * one_chunk
    # a benchmark's first wave of one request is that request: the same steps (it had been one 60,000-token step)
    wave = serve_aggregated(served, Workload(isl=60000, osl=128, concurrency=1), waves=1.0)
    assert wave["ttft_expected_s"] == pytest.approx(row["ttft_expected_s"], rel=1e-9)
    llama, h100 = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    bounds = {budget: serve_aggregated(prepare_served(llama, h100, Scenario(parallel=Parallel()),
                                                      max_batched_tokens=budget),
                                       Workload(isl=32000, osl=128, concurrency=1))["ttft_s"]
              for budget in (2048, 8192, 32768)}
    assert bounds[2048] == pytest.approx(bounds[32768], rel=1e-9) == pytest.approx(bounds[8192], rel=1e-9)
    for budget in (2048, 8192):  # expected at least the bound, in the disaggregated pools too
        served = prepare_served(llama, h100, Scenario(parallel=Parallel()), max_batched_tokens=budget)
        split = serve_disaggregated(served, Workload(isl=32000, osl=128, concurrency=1), Disaggregation(1, 1))
        assert split["ttft_expected_s"] >= split["ttft_s"] == pytest.approx(bounds[8192], rel=1e-9)


def test_the_step_budget_is_per_attention_replica_where_the_framework_schedules_each():
    from roofline.serving.framework import framework_for

    h200, adp = get_accelerator("h200-sxm"), Parallel(tp=8, ep=8, attention_dp=True)
    # TensorRT-LLM's max_num_tokens and vLLM's max_num_batched_tokens hold per DP-attention replica: 8 x 8192
    assert framework_for("trtllm", h200, 8).step_budget(adp) == 8 * 8192
    assert framework_for("vllm", h200, 8).step_budget(adp) == 8 * 8192
    # SGLang splits its chunked prefill size over the replicas: the engine's total stays 8192 (141 GB < 160 GiB)
    assert framework_for("sglang", h200, 8).step_budget(adp) == 8192
    # without DP attention one scheduler holds the whole budget
    assert framework_for("trtllm", h200, 8).step_budget(Parallel(tp=8, ep=8)) == 8192
    # one request's prompt per step: one replica's budget (SGLang: its share of the engine's)
    assert framework_for("trtllm", h200, 8).request_chunk(adp) == 8192
    assert framework_for("sglang", h200, 8).request_chunk(adp) == 8192 / 8


def test_the_serving_search_runs_each_device_under_its_own_framework():
    # a gpus: entry's framework wins over the workload's (the plan's or the scenario's), as in the step model; a
    # device without one takes the workload's
    from dataclasses import replace as replaced

    from roofline.serving.search import ServedWorkload, search
    from roofline.serving.search_rows import rows
    h200, h100 = replaced(get_accelerator("h200-sxm"), framework="sglang"), get_accelerator("h100-sxm")
    result = search(get_model("llama-3.1-8b"), [h200, h100], ServedWorkload(isl=1024, osl=256, framework="trtllm"),
                    ("fp8",), ("fp8",), 1, "aggregated", concurrencies=[8, 64])
    served = sorted(set(result.candidate.tolist()))
    assert {(result.candidates[c].gpu.key, result.framework_of(c)) for c in served} == {
        ("h200-sxm", "sglang"), ("h100-sxm", "trtllm")}
    named = {(r["gpu"], r["framework"]) for r in rows(result, range(len(result.candidate)))}
    assert named == {("h200-sxm", "sglang"), ("h100-sxm", "trtllm")}
    # under SGLang's prefill-first scheduler the same plan serves differently from TensorRT-LLM's
    alone = search(get_model("llama-3.1-8b"), [replaced(h200, framework="trtllm")],
                   ServedWorkload(isl=1024, osl=256), ("fp8",), ("fp8",), 1, "aggregated", concurrencies=[8, 64])
    mine = result.columns["tpot_expected_s"][[result.candidates[c].gpu.key == "h200-sxm" for c in result.candidate]]
    assert not np.allclose(np.sort(mine), np.sort(alone.columns["tpot_expected_s"]))


def test_weights_beyond_the_memory_rule_are_said_so_not_a_negative_budget():
    served = prepare_served(get_model("llama-3.1-70b"), get_accelerator("h100-sxm"), Scenario(parallel=Parallel()))
    with pytest.raises(RooflineInputError) as error:
        serve_aggregated(served, Workload(isl=1024, osl=1024, concurrency=8), overflow="queue")
    # 70.6e9 parameters x 2 bytes = 141 GB of weights against 0.9 x 80 GB: no KV budget at all
    assert "the weights alone exceed" in str(error.value) and " -" not in str(error.value)


def test_serve_defaults_the_activations_to_the_recipe_plan_serves(capsys):
    # NVFP4 weights on a B200: the plan serves them W4A4 (NVFP4 activations); serve without --act-dtype gives the
    # plan row's numbers (it had served W4A16)
    from roofline.cli import app

    assert app.main(["plan", "--model", "qwen3-32b", "--gpu", "b200", "--isl", "1024", "--osl", "1024",
                     "--max-devices", "1", "--weight-dtypes", "nvfp4", "--kv-dtypes", "fp8", "--top", "1",
                     "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["act_dtype"] == "nvfp4"
    assert app.main(["serve", "--model", "qwen3-32b", "--gpu", "b200", "--isl", "1024", "--osl", "1024",
                     "--tp", "1", "--weight-dtype", "nvfp4", "--kv-dtype", "fp8", "--attention", row["attention"],
                     "--concurrency", str(row["batch"]), "--format", "json"]) == 0
    served = json.loads(capsys.readouterr().out)
    assert served["act_dtype"] == "nvfp4"
    for name in ("ttft_expected_s", "tpot_expected_s", "tokens_per_s_expected"):
        assert served[name] == pytest.approx(row[name], rel=1e-9), name



@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_prompt_only_requests_keep_up_to_the_prompt_room(framework):
    # osl 1 under Poisson arrivals: the prompt room's load is the rate x a full step, not the requests in flight
    # (SGLang's 150 ms per request outside the steps had made 40 requests/s look saturated, under a 61 cap)
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), Scenario(parallel=Parallel()),
                            framework)
    closed = serve_aggregated(served, Workload(isl=1024, osl=1, concurrency=256), overflow="queue")
    cap = closed["requests_per_s_expected"]
    assert serve_aggregated(served, Workload(isl=1024, osl=1, request_rate=0.9 * cap))["keeps_up"]
    assert not serve_aggregated(served, Workload(isl=1024, osl=1, request_rate=1.1 * cap))["keeps_up"]


def test_a_prompt_under_dp_attention_is_computed_by_one_replica_while_the_experts_are_shared():
    # DeepSeek-V3 fp8 on 8 x H200, 8 DP-attention replicas (TensorRT-LLM): one 8192-token prompt lives on one
    # replica, which computes its attention, projections and norms alone (its own operators: the token-wise part
    # less the routed experts, read at 8 x 8192 tokens: the tables price every replica at an even share) and its
    # attention (8 x the even share), while the routed experts see the 8192 tokens spread over the 8 ranks. Eight
    # such prompts, one per replica, balance: no step time beyond the even share. Without DP attention (tp 8) and
    # on the bound side the step is the even share. (A prompt-only step: a disaggregated prefill worker's.)
    from roofline.serving.steps import lookup

    deepseek, h200 = get_model("deepseek-v3"), get_accelerator("h200-sxm")
    dep = prepare_served(deepseek, h200, FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True)), "trtllm")
    load = Workload(isl=8192, osl=128, concurrency=1).load(dep.spec)
    stepper = dep.stepper(load, 64.0).prompts_alone()
    parts = stepper.target
    assert parts.replicas == 8.0

    def even(C, side):  # C prompt tokens spread evenly over the replicas: the tables as they are
        return (lookup(getattr(parts, f"tokenwise_{side}"), np.array([C]))[0] + C * getattr(parts, f"prompt_{side}")
                + lookup(getattr(parts, f"logits_{side}"), np.array([C / load.computed]))[0])

    def own(tokens):  # a replica's own operators at `tokens` spread evenly
        return lookup(parts.tokenwise_expected - parts.experts_expected, np.array([tokens]))[0]

    lone = float(stepper.heavy(0.0, np.array([8192.0]), "expected", 8192.0)[0]) - stepper.host_s
    beyond = own(8 * 8192.0) - own(8192.0) + 7 * 8192 * parts.prompt_expected
    assert lone == pytest.approx(even(8192.0, "expected") + beyond, rel=1e-9)
    assert beyond > 0.5 * even(8192.0, "expected")  # the replica's own share dominates a lone prompt's step
    eight = float(stepper.heavy(0.0, np.array([8 * 8192.0]), "expected", 8192.0)[0]) - stepper.host_s
    assert eight == pytest.approx(even(8 * 8192.0, "expected"), rel=1e-12)
    assert float(stepper.heavy(0.0, np.array([8192.0]), "bound")[0]) == pytest.approx(even(8192.0, "bound"))
    # a chunk caps a replica's share: SGLang splits its chunked-prefill budget over the replicas
    capped = float(stepper.heavy(0.0, np.array([8192.0]), "expected", 2048.0)[0]) - stepper.host_s
    assert capped == pytest.approx(even(8192.0, "expected") + own(8 * 2048.0) - own(8192.0)
                                   + (8 * 2048 - 8192) * parts.prompt_expected, rel=1e-9)
    tp8 = prepare_served(deepseek, h200, FP8.with_(parallel=Parallel(tp=8, ep=8)), "trtllm")
    flat = tp8.stepper(load, 64.0).prompts_alone()
    assert flat.target.replicas == 1.0
    assert float(flat._busiest(np.array([8192.0]), "expected", 8192.0)) == 0.0
    # a decode step with a prompt chunk fused in (TensorRT-LLM's aggregated steps) waits for the replica computing
    # it as well: 4 decode tokens dealt evenly beside it, one replica's own operators at 4 / 8 + 8192 tokens
    mixed = dep.stepper(load, 64.0)
    fused = (float(mixed.heavy(np.array([4.0]), np.array([8192.0]), "expected", 8192.0)[0])
             - mixed._host("expected", 4.0))  # the framework's host time of a step of 4 sequences
    # 4 decode tokens + 8192 prompt tokens token-wise, 4 + 1 sampled rows, 4 sequences' attention, one prompt's
    spread = (lookup(parts.tokenwise_expected, [8196.0])[0] + lookup(parts.logits_expected, [5.0])[0]
              + lookup(parts.attention_expected, [4.0])[0] + 8192 * parts.prompt_expected)
    assert fused == pytest.approx(spread + own(4 + 8 * 8192.0) - own(4 + 8192.0) + 7 * 8192 * parts.prompt_expected,
                                  rel=1e-9)
    # unless the framework deals prompts out evenly (TensorRT-LLM's attention-DP balancing, which holds context
    # requests until every rank has one): measured DeepSeek DEP runs' TPOT follows that even share
    balanced = prepare_served(deepseek, h200, FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True)), "trtllm",
                              dp_balance=(60, 0)).stepper(load, 64.0)
    even_fused = (float(balanced.heavy(np.array([4.0]), np.array([8192.0]), "expected", 8192.0)[0])
                  - balanced._host("expected", 4.0))
    assert even_fused == pytest.approx(spread, rel=1e-9)
    assert float(balanced.heavy(np.array([4.0]), np.array([8192.0]), "bound")[0]) == pytest.approx(
        float(mixed.heavy(np.array([4.0]), np.array([8192.0]), "bound")[0]))


@pytest.mark.parametrize("osl, workers", [(2, 0), (256, 0), (256, 1), (256, 4)])
def test_the_throughput_bound_is_no_more_than_the_users_can_ask_at_their_latency_bounds(osl, workers):
    # Little's law on the bounds: N users, each waiting at least ttft_s and osl - 1 lone decode steps t(1) a
    # request, finish at most N / (ttft_s + (osl - 1) t(1)) requests/s; one user's TPOT bound is t(1), so one user
    # is held to 1 / e2e_latency_s and N users to N times that. Before, one user with 4 decode workers was bounded
    # at 4 x its own rate (887 tokens/s against 221 per user), and a 2-token output at 221 requests/s against 46.5
    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")
    served = prepare_served(model, gpu, Scenario(parallel=Parallel()))
    rows = {}
    for users in (1, 16):
        load = Workload(isl=1024, osl=osl, concurrency=users)
        rows[users] = row = (serve_disaggregated(served, load, Disaggregation(1, workers, Parallel())) if workers
                             else serve_aggregated(served, load))
        assert row["tokens_per_s"] >= row["tokens_per_s_expected"]  # the bound stays a bound
    one = rows[1]  # e.g. 1 / (10 ms + 255 x 4.5 ms) = 0.853 requests/s, 218 tokens/s
    assert one["requests_per_s"] == pytest.approx(1 / one["e2e_latency_s"], rel=1e-6)
    assert rows[16]["requests_per_s"] <= 16 * one["requests_per_s"] * (1 + 1e-9)
    result = served_search.search(model, [gpu], served_search.ServedWorkload(1024, 16), ["fp8"], ["fp8"],
                                  max_devices=2, mode="all")
    c, users = result.columns, result.concurrency
    # each candidate's lone decode step: its TPOT bound at one user (the grid starts at one)
    lone = {k: c["tpot_s"][(result.candidate == k) & (users == 1)].min() for k in np.unique(result.candidate)}
    step = np.array([lone[k] for k in result.candidate])
    assert np.all(c["tokens_per_s"] <= users * 16 / (c["ttft_s"] + 15 * step) * (1 + 1e-9))
    one = users == 1
    assert np.all(c["tokens_per_s"][one] <= 16 / (c["ttft_s"] + 15 * c["tpot_s"])[one] * (1 + 1e-9))


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_a_served_plan_row_that_fits_has_its_footprint_within_its_usable_memory(framework):
    # footprint and usable memory follow the framework's memory rule, the rule `fits` comes from: a review found
    # batch 864 of Llama-3.1-8B on an H100 (1024/256, vLLM) at 81.6 GB against 77.3 GB usable, marked fitting
    from roofline.serving.planner import PlanSettings
    from roofline.serving.planner import Workload as PlanWorkload
    from roofline.serving.search_rows import plan_table_for

    settings = PlanSettings(workload=PlanWorkload(isl=1024, osl=256), gpus=(get_accelerator("h100-sxm"),),
                            max_devices=2, dtypes=("fp16", "fp8"), mode="aggregated", framework=framework)
    rows, reason = plan_table_for(get_model("llama-3.1-8b"), settings)
    assert rows and not reason
    for row in rows:
        assert row["fits"] and row["footprint_bytes"] <= row["usable_memory_bytes"] <= settings.gpus[0].memory_bytes
    assert max(row["footprint_bytes"] / row["usable_memory_bytes"] for row in rows) > 0.8  # near full at the top


def test_a_draft_models_weights_take_their_share_of_the_kv_budget():
    # a separate draft model's weights sit on every device of the target's plan: the KV budget loses exactly
    # them (before, capacity counted the draft's KV cache but not its weights: 70B + 8B bf16 on 2 H100 "fit")
    from roofline.engine.analysis import weight_bytes_per_device
    from roofline.serving.capacity import capacity
    from roofline.serving.framework import framework_for
    from roofline.serving.speculative import draft_weight_bytes

    target, draft, gpu = get_model("llama-3.1-70b"), get_model("llama-3.1-8b"), get_accelerator("h200-sxm")
    scenario = FP8.with_(parallel=Parallel(tp=2))
    spec = Speculation(method="draft", tokens=3, acceptance=0.7, draft_model=draft)
    extra = draft_weight_bytes(spec, scenario)
    assert extra == weight_bytes_per_device(draft, scenario) > 3e9  # ~8 GB of fp8 weights over 2 devices
    assert draft_weight_bytes(Speculation(method="ngram", tokens=3, acceptance=0.7), scenario) == 0.0
    fw = framework_for("vllm", gpu, 2)
    alone = capacity(target, gpu, scenario, fw, 2048, 512, draft=(draft, scenario))
    paid = capacity(target, gpu, scenario, fw, 2048, 512, extra_weight_bytes=extra, draft=(draft, scenario))
    assert paid.kv_budget_bytes == pytest.approx(alone.kv_budget_bytes - extra)
    assert paid.running < alone.running
    with pytest.raises(RooflineInputError, match="weights alone exceed"):  # 141 + 16 GB of bf16 on 2 x 80 GB
        served = prepare_served(target, get_accelerator("h100-sxm"), Scenario(parallel=Parallel(tp=2)), spec=spec)
        serve_aggregated(served, Workload(isl=2048, osl=512, concurrency=4))


def test_the_serving_search_reports_its_progress_to_the_end():
    # `roofline plan` prints a progress line from these reports on long searches (a disaggregated one of 3.5 M
    # configurations took 22-45 s in silence)
    calls = []
    workload = served_search.ServedWorkload(1024, 256)
    result = served_search.search(get_model("llama-3.1-8b"), [get_accelerator("h100-sxm")], workload, ["fp8"],
                                  ["fp8"], max_devices=2, mode="all", progress=lambda done, total: calls.append(
                                      (done, total)))
    assert calls and {total for _, total in calls} == {len(result)}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == len(result)


@pytest.mark.parametrize("method", ["mtp", "eagle"])
@pytest.mark.parametrize("attention_dp", [False, True])
def test_a_drafting_head_of_an_moe_model_serves_under_every_plan(method, attention_dp):
    # DeepSeek-V3's EAGLE head is one of its dense layers (it has three): a one-layer model without an MoE layer,
    # whose parameter count divided the router's by zero MoE layers under data-parallel attention (a review found
    # it: ZeroDivisionError instead of a row)
    from roofline.engine.models import parameter_counts
    from roofline.serving.speculative import draft_model
    model = get_model("deepseek-v3")
    spec = Speculation(method=method, tokens=3, acceptance=0.7)
    head = draft_model(spec, model)
    total, active = parameter_counts(head)
    assert (total == active) == (method == "eagle")  # the EAGLE head is dense, the MTP head an MoE layer
    served = prepare_served(model, get_accelerator("h200-sxm"),
                            FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=attention_dp)), "vllm", spec=spec)
    row = serve_aggregated(served, Workload(isl=1024, osl=1024, concurrency=64))
    assert row["accepted_tokens_per_step"] > 1 and row["tokens_per_s"] >= row["tokens_per_s_expected"] > 0


def test_the_throughput_bound_charges_every_output_tokens_logits():
    # Llama-3.1-8B fp16 on one H200, 128/128, 512 users: the work bound had left the decode tokens' logits out and
    # allowed 276.5 requests/s, 3.2% past the FLOP roof. Per request at least 2 x (8.030e9 - 2 x 0.525e9) x 255
    # tokens of non-embedding FLOPs + 2 x 0.525e9 x 128 logit rows (127 decode tokens + the prompt's last) = 3.694e12
    # FLOP; at 989.4 TFLOP/s that is at most 267.8 requests/s
    from roofline.engine.models import parameter_counts

    model, gpu = get_model("llama-3.1-8b"), get_accelerator("h200-sxm")
    served = prepare_served(model, gpu, Scenario(weight_dtype="fp16", kv_dtype="fp16", parallel=Parallel()), "vllm")
    row = serve_aggregated(served, Workload(isl=128, osl=128, concurrency=512), overflow="queue")
    lm_head = model.vocab * model.hidden
    flops = 2 * (parameter_counts(model)[0] - 2 * lm_head) * 255 + 2 * lm_head * 128
    assert row["requests_per_s"] <= gpu.peak("fp16") / flops * 1.001, row["requests_per_s"]
