"""Serving quantities pinned to hand arithmetic where the suite had compared them only with one another (a review
of 2026-12-05 mutated the code and found these changes unseen): KV-cache capacity per framework, the verify step's
width and the draft's passes, the disaggregated bound's prefill pool, the roofs' classifier, and the issue's
bad-input bounds."""
import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.roofline import bound_class, dominant_bound
from roofline.engine.scenario import Scenario
from roofline.serving import aggregated as agg
from roofline.serving.capacity import capacity
from roofline.serving.framework import framework_for
from roofline.serving.serve import Disaggregation, Workload, prepare_served, serve_disaggregated
from roofline.serving.speculative import Speculation

H100, H200 = get_accelerator("h100-sxm"), get_accelerator("h200-sxm")
LLAMA8 = get_model("llama-3.1-8b")
FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8", parallel=Parallel())
GIB = 2 ** 30


@pytest.mark.parametrize("framework, running, budget, per_request", [
    # Llama-3.1-8B, fp16 weights and KV cache on one H100 (80 GiB = 85,899,345,920 B), 1024/1024:
    # weights 8,030,261,248 params x 2 B = 16,060,522,496 B; a full 8,192-token step's largest activation is the
    # lm_head's, 8192 x (4096 + 128,256) x 2 B = 2,168,455,168 B; the KV cache 32 x 8 x 128 x 2 x 2 = 131,072 B/token.
    # TensorRT-LLM: 0.9 of what weights and activations leave = 0.9 x 67,670,368,256 = 60,903,331,430.4 B, each
    # request reserved at its full 2,048 tokens = 268,435,456 B -> floor(226.9) = 226
    ("trtllm", 226, 60_903_331_430.4, 268_435_456),
    # vLLM: 0.9 of the device less weights and activations = 77,309,411,328 - 18,228,977,664 = 59,080,433,664 B, each
    # request at its mean in-flight 1,536 tokens = 201,326,592 B -> floor(293.5) = 293
    ("vllm", 293, 59_080_433_664, 201_326_592),
])
def test_kv_capacity_follows_each_frameworks_memory_rule(framework, running, budget, per_request):
    scenario = Scenario(kv_dtype="fp16").for_model(LLAMA8)
    cap = capacity(LLAMA8, H100, scenario, framework_for(framework, H100), 1024, 1024)
    assert (cap.running, cap.kv_per_request_bytes) == (running, per_request)
    assert cap.kv_budget_bytes == pytest.approx(budget, rel=1e-12)
    # the bound: the whole device less the weights, every request at its mean length:
    # (85,899,345,920 - 16,060,522,496) / 201,326,592 = 346.89
    assert cap.running_bound == pytest.approx(346.893, abs=1e-3)


def test_a_shared_prefix_is_held_once_on_both_sides():
    # vLLM, prefix hit 0.5 of 1024: the shared 512 tokens once (67,108,864 B), each request its own 512 + 512 mean
    # in-flight output = 1,024 tokens (134,217,728 B): floor((59,080,433,664 - 67,108,864) / 134,217,728) = 439;
    # bound (85,899,345,920 - 16,060,522,496 - 67,108,864) / 134,217,728 = 519.84
    scenario = Scenario(kv_dtype="fp16").for_model(LLAMA8)
    cap = capacity(LLAMA8, H100, scenario, framework_for("vllm", H100), 1024, 1024, prefix_hit=0.5)
    assert (cap.running, cap.kv_per_request_bytes) == (439, 134_217_728)
    assert cap.running_bound == pytest.approx(519.840, abs=1e-3)


def test_a_verify_step_carries_k_plus_one_queries_and_k_draft_passes():
    assert Speculation("eagle", 3, acceptance=0.7).queries == 4 and Speculation().queries == 1
    # Llama-3.1-70B fp8 on one H200 at 8 sequences: a memory-bound step, so the verify step's extra queries cost
    # (almost) nothing at the bound and what EAGLE adds is its head's passes, one per drafted token: K = 3 adds three
    # times what K = 1 adds
    model = get_model("llama-3.1-70b")

    def step(spec):
        served = prepare_served(model, H200, FP8, "vllm", spec)
        load = Workload(isl=1024, osl=1024, concurrency=8).load(served.spec)
        return served.stepper(load, 8.0).light(8.0, "bound")

    plain = step(Speculation())
    one, three = (step(Speculation("eagle", k, acceptance=0.7)) - plain for k in (1, 3))
    assert three / one == pytest.approx(3.0, rel=0.01)


def test_the_disaggregated_bound_counts_every_prefill_worker():
    # 8000/100 on H200s with eight decode workers: the prefill pool sets the bound, and two workers compute twice
    # what one does
    served = prepare_served(LLAMA8, H200, FP8, "trtllm")
    workload = Workload(isl=8000, osl=100, concurrency=64)
    one, two = (serve_disaggregated(served, workload, Disaggregation(x, 8, Parallel()), overflow="queue")
                for x in (1, 2))
    assert two["requests_per_s"] == pytest.approx(2 * one["requests_per_s"], rel=1e-9)
    # one worker's bound: each prompt's token-wise FLOPs and its attention at the roofline, plus one logit row at the
    # lm_head's (fp16) compute roof: 2 x 4096 x 128,256 / 989.4e12 = 1.062 us
    load = workload.load(served.spec)
    stepper = served.stepper(load, 64.0).prompts_alone()
    assert stepper.logit_compute == pytest.approx(2 * 4096 * 128_256 / H200.peak("fp16"), rel=1e-9)
    assert 1 / agg.prefill_bound(stepper, load) == pytest.approx(
        8000 * (stepper.token_compute + stepper.prompt["bound"]) + stepper.logit_compute, rel=1e-12)


@pytest.mark.parametrize("times, bound", [
    ((3.0, 1.0, 2.0), "compute"),  # compute, then network, then memory: compute
    ((1.0, 2.0, 3.0), "network"),
    ((1.0, 3.0, 2.0), "memory"),
    ((1.0, 1.0, 0.0), "memory"),  # a tie between compute and memory goes to memory
])
def test_an_operator_is_bound_by_its_slowest_roof(times, bound):
    assert bound_class(*times) == bound


def test_a_step_is_bound_by_where_most_of_its_time_goes():
    # 30% memory-bound, 30% in collectives: the other 40% computes
    assert dominant_bound(0.3, 0.3) == "compute"
    assert dominant_bound(0.6, 0.1) == "memory" and dominant_bound(0.2, 0.5) == "network"


@pytest.mark.parametrize("spec, words", [
    (dict(method="eagle", tokens=3, acceptance=-0.1), "acceptance"),
    (dict(method="eagle", tokens=3, acceptance=1.0), "acceptance"),
    (dict(method="eagle", tokens=3, accepted_length=4.5), "accepted"),  # at most K + 1 = 4
    (dict(method="eagle", tokens=3, accepted_length=0.5), "accepted"),  # at least 1
])
def test_speculation_outside_its_bounds_is_refused(spec, words):
    with pytest.raises(RooflineInputError, match=words):
        Speculation(**spec).validate(LLAMA8)


@pytest.mark.parametrize("hit", [1.0, -0.1])
def test_a_prefix_hit_outside_zero_to_below_one_is_refused(hit):
    with pytest.raises(RooflineInputError, match="prefix"):
        Workload(isl=1024, osl=128, concurrency=4, prefix_hit=hit).validate()


def test_speculation_turns_into_a_loss_once_the_verify_step_leaves_the_memory_roof():
    # the issue: the gain "can turn into a loss" and the numbers must show where. Llama-3.1-70B fp8 on one H200,
    # EAGLE K=3 at a low acceptance (0.3: 1.42 tokens per verify step of 4 queries): a gain alone, a loss at 128 users,
    # on the expected side and on the bound's
    model = get_model("llama-3.1-70b")
    workload = {1: Workload(isl=1024, osl=1024, concurrency=1), 128: Workload(isl=1024, osl=1024, concurrency=128)}

    def row(users, spec):
        from roofline.serving.serve import serve_aggregated

        return serve_aggregated(prepare_served(model, H200, FP8, "vllm", spec), workload[users])

    eagle = Speculation("eagle", 3, acceptance=0.3)
    for users, gains in ((1, True), (128, False)):
        fast, plain = row(users, eagle), row(users, Speculation())
        per_user = fast["tokens_per_s_per_user_expected"] / plain["tokens_per_s_per_user_expected"]
        bound = fast["tokens_per_s"] / plain["tokens_per_s"]
        assert (per_user > 1.0, bound > 1.0) == (gains, gains), (users, per_user, bound)


def test_dtypes_sets_the_weights_and_the_kv_cache_together():
    # the issue: --dtypes stays and sets both --weight-dtypes and --kv-dtypes
    import roofline

    common = dict(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=256, max_devices=1, top=5)
    both = roofline.plan(dtypes=["fp8"], **common)
    apart = roofline.plan(weight_dtypes=["fp8"], kv_dtypes=["fp8"], **common)
    assert len(both) == 5 and set(both["weight_dtype"]) == set(both["kv_dtype"]) == {"fp8"}
    columns = ["deployment", "batch", "weight_dtype", "kv_dtype", "tokens_per_s_per_device_expected", "tpot_s"]
    assert both[columns].equals(apart[columns])


@pytest.mark.parametrize("typed, suggested", [
    ("h200", "'h200-sxm'"), ("gb200", "'gb200-gpu'"), ("a100", "'a100-sxm-80gb' or 'a100-pcie-40gb'"),
    ("L4", "'l4'"), ("A10", "'a10'"), ("H20", "'h20'"),  # a key typed in capitals is that key, not a longer one
    ("h20x", "'h20'"),
])
def test_did_you_mean_names_the_device_that_was_meant(typed, suggested):
    # edit distance alone had answered 'h200' with 'h20' and 'gb200' with 'b200': other devices
    from roofline.engine.errors import did_you_mean
    from roofline.engine.hardware import catalog

    assert did_you_mean(typed, catalog()) == f" (did you mean {suggested}?)"
