"""The serving model's caps on what runs at once and the pool that limits: drafting weights in the KV budget, the
token budget and the framework's cap on running sequences (and the refusals that name them), the disaggregated pool
whose next worker helps (a review's findings, each a test that failed before its fix)."""
from __future__ import annotations

import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.serving.serve import Disaggregation, Workload, prepare_served, serve_aggregated, serve_disaggregated
from roofline.serving.speculative import Speculation

FP8 = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")


def test_an_mtp_or_eagle_heads_layer_takes_its_share_of_the_kv_budget():
    # the heads were left out as "small buffers"; DeepSeek-V3's MTP layer is an MoE layer: 256 experts x 3 x 7168
    # x 2048 = 11.27 B expert parameters plus MLA attention and its shared expert, ~11.5 GB in fp8, 1.44 GB of each
    # device at TP 8 / EP 8 (the embedding and LM head it shares with the target are not counted again)
    from roofline.serving.speculative import draft_weight_bytes

    mtp = Speculation(method="mtp", tokens=1, acceptance=0.7)
    deepseek = get_model("deepseek-v3")
    whole = draft_weight_bytes(mtp, FP8.with_(parallel=Parallel(tp=1)).for_model(deepseek), deepseek)
    assert 11.3e9 < whole < 11.8e9
    per_device = draft_weight_bytes(mtp, FP8.with_(parallel=Parallel(tp=8, ep=8)).for_model(deepseek), deepseek)
    assert whole / 8 <= per_device < whole / 7
    # one dense layer: q and o 8192 x 8192, k and v 8192 x 1024, gate, up, down 8192 x 28672: 0.86 B parameters
    llama = get_model("llama-3.1-70b")
    eagle = Speculation(method="eagle", tokens=3, acceptance=0.7)
    assert draft_weight_bytes(eagle, FP8.with_(parallel=Parallel(tp=1)).for_model(llama), llama) == pytest.approx(
        (2 * 8192 * (8192 + 1024) + 3 * 8192 * 28672) * 1.0, rel=0.01)
    assert draft_weight_bytes(eagle, FP8, None) == 0.0  # no target, no head to size
    rows = [serve_aggregated(prepare_served(llama, get_accelerator("h200-sxm"), FP8.with_(parallel=Parallel()),
                                            spec=spec), Workload(isl=2048, osl=512, concurrency=8))
            for spec in (Speculation(), eagle)]
    assert rows[1]["kv_capacity_requests"] < rows[0]["kv_capacity_requests"]


def test_a_token_budget_below_the_concurrency_caps_the_running_sequences():
    # each running sequence decodes one token per step inside the budget: --max-batched-tokens 16 with 64 users
    # had every user decode every step (expected TPOT 6.8 ms, 8,450 tokens/s bound beside 38 expected); vLLM
    # refuses max_num_batched_tokens below max_num_seqs. Now at most 16 run: 64 are refused in one line naming
    # the budget, or queue with --overflow queue
    from roofline.serving.framework import framework_for

    gpu = get_accelerator("h100-sxm")
    assert framework_for("vllm", gpu, max_batched_tokens=16).max_running == 16
    assert framework_for("trtllm", gpu, max_batched_tokens=16).max_running == 16
    assert framework_for("sglang", gpu, max_batched_tokens=16).max_running == 4096  # its decode steps stand alone
    served = prepare_served(get_model("llama-3.1-8b"), gpu, FP8.with_(parallel=Parallel()), max_batched_tokens=16)
    with pytest.raises(RooflineInputError, match=r"--max-batched-tokens 16 decodes one token of each running "
                                                 r"sequence, so vllm runs at most 16 \(--max-batched-tokens 16\)"):
        serve_aggregated(served, Workload(isl=1024, osl=256, concurrency=64))
    row = serve_aggregated(served, Workload(isl=1024, osl=256, concurrency=16))
    assert row["kv_capacity_requests"] == 16 and row["fits"]


def test_the_framework_cap_on_running_sequences_is_not_called_a_full_cache():
    # 2,048 users of 128 + 128 tokens on an H100 fit its KV cache many times over; vLLM's max_num_seqs (1,024)
    # stops them, and the refusal said "do not fit the KV cache ... under vllm's memory rule"
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), FP8.with_(parallel=Parallel()))
    with pytest.raises(RooflineInputError) as error:
        serve_aggregated(served, Workload(isl=128, osl=128, concurrency=2048))
    assert "vllm runs at most 1024 (max_num_seqs 1024)" in str(error.value)
    assert "KV cache" not in str(error.value)


@pytest.mark.parametrize("workers,named", [((1, 1), "decode"), ((1, 4), "decode"), ((1, 8), "prefill"),
                                           ((2, 8), "decode")])
def test_limited_by_names_the_pool_whose_next_worker_helps_more(workers, named):
    # it named the pool of the higher utilization: "prefill" on 1 + 1 H200 TP 2 pools, where a prefill worker more
    # gives nothing and a decode worker more +87% requests/s then (+64% since; 256 users of Llama-3.1-70B,
    # 1024/1024); now the pool whose next worker shortens the users' cycle more (both pools' workers have 2
    # devices here)
    served = prepare_served(get_model("llama-3.1-70b"), get_accelerator("h200-sxm"), FP8.with_(parallel=Parallel(tp=2)))
    workload = Workload(isl=1024, osl=1024, concurrency=256)

    def rate(prefill, decode):
        pools = Disaggregation(prefill, decode, Parallel(tp=2), max_devices=64)
        return serve_disaggregated(served, workload, pools)

    row = rate(*workers)
    gain = {"prefill": rate(workers[0] + 1, workers[1])["requests_per_s_expected"],
            "decode": rate(workers[0], workers[1] + 1)["requests_per_s_expected"]}
    assert row["limited_by"] == named == max(gain, key=gain.get)
    assert gain[named] > row["requests_per_s_expected"]


def test_limited_by_with_users_beyond_the_decode_caches_names_decode():
    # 1,000 users on 1 + 1 pools whose 16-bit decode cache holds 248: the wait of the users beyond it counted as
    # prefill time, and `prefill` was named where a prefill worker more gives nothing and a decode worker doubles
    # the rate
    fp16_cache = FP8.with_(kv_dtype="fp16", parallel=Parallel(tp=2))
    served = prepare_served(get_model("llama-3.1-70b"), get_accelerator("h200-sxm"), fp16_cache)
    workload = Workload(isl=1024, osl=1024, concurrency=1000)

    def rate(prefill, decode):
        return serve_disaggregated(served, workload, Disaggregation(prefill, decode, Parallel(tp=2)),
                                   overflow="queue")

    row = rate(1, 1)
    assert row["limited_by"] == "decode"
    assert rate(1, 2)["requests_per_s_expected"] > 1.5 * rate(2, 1)["requests_per_s_expected"]


def test_a_disaggregated_refusal_names_the_cache_of_all_its_decode_workers():
    # 3 decode workers hold 3 x 439 requests of 1024 + 2048 tokens; the refusal said "vllm runs at most 1317
    # (max_num_seqs 1024)" of one H200, comparing all workers' hold with one engine's cap
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h200-sxm"), Scenario(parallel=Parallel()))
    with pytest.raises(RooflineInputError) as error:
        serve_disaggregated(served, Workload(isl=1024, osl=2048, concurrency=5000),
                            Disaggregation(1, 3, Parallel()))
    assert "do not fit the KV cache of 3 decode workers of 1 x H200" in str(error.value)
    assert "max_num_seqs" not in str(error.value)


def test_sglang_memory_fraction_and_chunk_follow_its_server_args_rule():
    # SGLang 0.5.4+: reserved MiB = 512 + 1.5 x max(chunk, 2048) + 2 x cuda_graph_max_bs + 1024 x GPUs / 8, at least
    # 10 GiB on devices over 60 GiB; fraction = 1 - reserved / memory, to 3 decimals
    from roofline.serving.framework import _sglang_defaults, framework_for

    # H100, 80 GiB, TP 1: chunk 8192, 256 graphs: 512 + 12288 + 512 + 128 = 13440; 1 - 13440 / 81920 = 0.8359
    assert _sglang_defaults(80, 1) == (8192, 0.836)
    # H200, 141 GiB, TP 8: 512 graphs: 512 + 12288 + 1024 + 1024 = 14848; 1 - 14848 / 144384 = 0.8972
    assert _sglang_defaults(141, 8) == (8192, 0.897)
    # B200, 180 GiB, TP 8: chunk 16384: 512 + 24576 + 1024 + 1024 = 27136; 1 - 27136 / 184320 = 0.8528
    assert _sglang_defaults(180, 8) == (16384, 0.853)
    # 48 GiB (L40S), TP 1: chunk 4096, 32 graphs: 512 + 6144 + 64 + 128 = 6848, no 10 GiB floor under 60 GiB;
    # 1 - 6848 / 49152 = 0.8607
    assert _sglang_defaults(48, 1) == (4096, 0.861)
    # H100, TP 2 x PP 2 = 4 GPUs (graphs 256 at tp < 4): 512 + 12288 + 512 + 512 = 13824; 1 - 13824 / 81920 = 0.8312
    assert _sglang_defaults(80, 2, 4) == (8192, 0.831)
    fw = framework_for("sglang", get_accelerator("h100-sxm"), 2, gpus=Parallel(tp=2, pp=2).devices)
    assert (fw.max_batched_tokens, fw.memory_fraction) == (8192, 0.831)
    assert framework_for("sglang", get_accelerator("l40s")).max_batched_tokens == 4096


def test_a_pipelines_throughput_and_tpot_bounds_agree_by_littles_law():
    # PP 2 Llama-3.1-8B on two H100s, 256 users at 1024/256: the throughput bound divided a full step at 256 by the 2
    # stages (27,930 tokens/s) while the TPOT bound was that full step (16.9 ms), and 256 users at >= 16.9 ms a token
    # cannot ask for more than 256 x 256 / (TTFT + 255 x 16.9 ms) = 15,165 tokens/s. A round of 2 micro-batches of
    # 128 takes at least one full step at 128: both bounds read it now
    import roofline

    two = roofline.serve("llama-3.1-8b", "h100-sxm", pp=2, isl=1024, osl=256, concurrency=256).iloc[0]
    one = roofline.serve("llama-3.1-8b", "h100-sxm", pp=1, isl=1024, osl=256, concurrency=256).iloc[0]
    in_flight = two["tokens_per_s"] / 256 * (two["ttft_s"] + 255 * two["tpot_s"])  # Little: requests/s x latency
    assert in_flight <= 256 * 1.01
    # two devices' bandwidth: a faster round and more tokens/s than one device, but not twice (the KV cache of 128
    # sequences per micro-batch is read in each round as on one device)
    assert two["tpot_s"] < one["tpot_s"] and one["tokens_per_s"] < two["tokens_per_s"] < 2 * one["tokens_per_s"]


def test_sglangs_fraction_reads_the_chunk_set_the_drafting_and_each_engines_own_shape():
    # a review of the 0.5.4 rule: the reserve reads the chunk the user sets (1.5 MiB a token), 2 GiB beside EAGLE or
    # MTP heads and 6 GiB beside a draft model, and a disaggregated prefill worker keeps its own engine's fraction
    from roofline.serving.framework import framework_for

    h100 = get_accelerator("h100-sxm")
    # chunk 16384: 512 + 24576 + 512 + 128 = 25728 MiB; 1 - 25728 / 81920 = 0.686
    assert framework_for("sglang", h100, 1, 16384).memory_fraction == 0.686
    # chunk 2048: 512 + 3072 + 512 + 128 = 4224 MiB, under the 10 GiB floor: 1 - 10240 / 81920 = 0.875
    assert framework_for("sglang", h100, 1, 2048).memory_fraction == 0.875
    # EAGLE: 13440 + 2048 = 15488 MiB; 1 - 15488 / 81920 = 0.811; a draft model: 13440 + 6144: 0.761
    assert framework_for("sglang", h100, 1, spec_method="eagle").memory_fraction == 0.811
    assert framework_for("sglang", h100, 1, spec_method="draft").memory_fraction == 0.761
    assert framework_for("sglang", h100, 1, spec_method="ngram").memory_fraction == 0.836
    # a 32-GPU decode engine (8 x 4): 512 + 12288 + 1024 + 4096 = 17920 MiB: 0.781; its 1-GPU prefill worker: 0.836
    decode = framework_for("sglang", h100, 8, gpus=32)
    assert decode.memory_fraction == 0.781
    assert decode.for_engine(h100, Parallel(tp=1)).memory_fraction == 0.836
    # a fraction the user gives is theirs on every engine
    assert framework_for("sglang", h100, 8, memory_fraction=0.7, gpus=32).for_engine(
        h100, Parallel(tp=1)).memory_fraction == 0.7


def test_a_disaggregated_prefill_worker_is_held_to_its_own_engines_memory_rule():
    # the 1-GPU prefill worker of a 32-GPU SGLang decode engine was judged at the decode engine's 0.781 and refused
    # ("a prefill worker of 1 x H100 cannot hold"): at its own 0.836 it holds Qwen3-32B and a prompt
    served = prepare_served(get_model("qwen3-32b"), get_accelerator("h100-sxm"),
                            Scenario(parallel=Parallel(tp=8, pp=4)), framework="sglang")
    row = serve_disaggregated(served, Workload(isl=1024, osl=256, concurrency=1),
                              Disaggregation(1, 1, Parallel(tp=1)))
    assert row["fits"]


def test_max_running_caps_the_decode_workers_and_the_users_beyond_wait_for_a_slot():
    # InferenceX's DeepSeek-R1 disaggregated TensorRT-LLM recipes run more users than the decode workers' slots
    # (gb300-fp8 1k1k ctx1_gen4_tep8_batch4 at concurrency 24: 4 workers x max_batch_size 4 = 16 slots), so 8 users
    # wait for a slot and TTFT holds that wait (measured 4.1 s beside 0.24 s at concurrency 4). --max-running sets
    # the cap: 16 slots, at most 4 sequences per decode step, and by Little's law the rate is what 16 sequences
    # decoding (osl - 1) tokens complete, the 24 users' cycle 24 / rate, of which TTFT is all but the decode
    from roofline.serving.framework import framework_for

    gpu = get_accelerator("gb300-gpu")
    rule = framework_for("trtllm", gpu, max_running=4)
    assert (rule.max_running, rule.running_given) == (4, 4)
    assert framework_for("trtllm", gpu, max_running=64, max_batched_tokens=16).max_running == 16  # the budget's
    served = prepare_served(get_model("deepseek-v3"), gpu, FP8.with_(parallel=Parallel(tp=8, ep=8)),
                            framework="trtllm", max_running=4)
    pools = Disaggregation(1, 4, Parallel(tp=4, ep=4, attention_dp=True))
    workload = Workload(isl=1024, osl=1024, concurrency=24)
    with pytest.raises(RooflineInputError, match=r"trtllm runs at most 16 \(--max-running 4 per engine x 4\).*"
                                                 r"--overflow queue"):
        serve_disaggregated(served, workload, pools)
    row = serve_disaggregated(served, workload, pools, overflow="queue")
    assert row["kv_capacity_requests"] == 16 and not row["fits"]
    assert row["decode_batch_expected"] == pytest.approx(4, rel=1e-3)
    decode_s = (1024 - 1) * row["tpot_expected_s"]
    assert row["requests_per_s_expected"] == pytest.approx(16 / decode_s, rel=0.02)  # slots over the decode
    assert row["ttft_expected_s"] == pytest.approx(24 / row["requests_per_s_expected"] - decode_s, rel=1e-6)
    assert row["ttft_expected_s"] > 0.45 * decode_s  # 8 of 24 users wait half a decode for a slot
    free = serve_disaggregated(prepare_served(get_model("deepseek-v3"), gpu, FP8.with_(parallel=Parallel(tp=8, ep=8)),
                                              framework="trtllm"), workload, pools)
    assert free["ttft_expected_s"] < row["ttft_expected_s"] / 10 and free["fits"]


def test_max_running_counts_per_attention_replica_and_is_refused_out_of_range(capsys):
    from roofline.cli.app import main

    served = prepare_served(get_model("deepseek-v3"), get_accelerator("h200-sxm"),
                            FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True)), framework="trtllm",
                            max_running=16)
    row = serve_aggregated(served, Workload(isl=1024, osl=1024, concurrency=128))
    assert row["kv_capacity_requests"] == 8 * 16  # TensorRT-LLM's max_batch_size is each DP rank's
    for value in (0, "x"):
        assert main(["serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "128", "--osl", "128",
                     "--concurrency", "4", "--max-running", str(value)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"--max-running: {value}" in err.replace("'", "")
    with pytest.raises(RooflineInputError, match=r"--max-running: 0 is not allowed"):
        prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), FP8.with_(parallel=Parallel()),
                       max_running=0)


def test_a_serving_workload_sets_max_running_and_its_table_says_so():
    # the `serving:` section's max_running reaches the served rows (the column, the capacity, the waiting users) and
    # the report's title tells that workload from the same lengths at the framework's cap
    import pandas as pd

    from roofline.report.workloads import workloads_section
    from roofline.serving.table import ServingSettings, ServingWorkload, serving_table

    gpus = {"h100-sxm": get_accelerator("h100-sxm")}
    workloads = (ServingWorkload(1024, 256, (32,), framework="trtllm", max_running=8),
                 ServingWorkload(1024, 256, (32,), framework="trtllm"))
    rows, skipped = serving_table(get_model("llama-3.1-8b"), gpus, {"h100-sxm": FP8.with_(parallel=Parallel())},
                                  ServingSettings(workloads=workloads, gpus=("h100-sxm",)))
    capped, free = rows
    assert not skipped and (capped["max_running"], free["max_running"]) == (8, 0)
    assert capped["kv_capacity_requests"] == 8 and not capped["fits"] and free["fits"]
    assert capped["ttft_expected_s"] > 2 * free["ttft_expected_s"]  # 24 of 32 users wait for one of 8 slots
    titles = [table["title"] for table in workloads_section(pd.DataFrame(rows), {"h100-sxm": "H100"})["tables"]]
    assert titles[0].endswith(", max_batch_size 8") and "max_batch_size" not in titles[1]


def test_the_config_schema_bounds_max_running():
    import jsonschema

    from roofline.pipeline.schema_messages import describe_schema_error
    from test_hardening_config import SCHEMA

    config = {"models": {"llama-3.1-8b": {}}, "gpus": {"h100-sxm": {}},
              "serving": {"workloads": [{"isl": 1, "osl": 1, "concurrency": [1], "max_running": 0}]}}
    error = next(iter(jsonschema.Draft202012Validator(SCHEMA).iter_errors(config)))
    assert describe_schema_error(error).startswith("serving.workloads[0].max_running: 0 is not allowed")


def test_sglang_splits_a_given_max_running_requests_over_its_attention_dp_ranks():
    # SGLang's scheduler runs max_running_requests // dp_size per DP-attention rank (model_runner), where vLLM's
    # max_num_seqs and TensorRT-LLM's max_batch_size hold per engine / rank: 64 given to a DEP 8 engine is 64 in all
    # under SGLang, 512 under TensorRT-LLM; below the 8 ranks SGLang would run none, which is refused
    gpu, model = get_accelerator("h200-sxm"), get_model("deepseek-v3")
    dep8 = FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True))
    workload = Workload(isl=1024, osl=1024, concurrency=32)
    held = {key: serve_aggregated(prepare_served(model, gpu, dep8, framework=key, max_running=64), workload)
            for key in ("sglang", "trtllm")}
    assert (held["sglang"]["kv_capacity_requests"], held["trtllm"]["kv_capacity_requests"]) == (64, 512)
    with pytest.raises(RooflineInputError, match=r"sglang runs at most 64 \(--max-running 64, 8 on each of 8 "
                                                 r"attention-DP ranks\)"):
        serve_aggregated(prepare_served(model, gpu, dep8, framework="sglang", max_running=64),
                         Workload(isl=1024, osl=1024, concurrency=100))
    with pytest.raises(RooflineInputError, match=r"--max-running: 4 is below the 8 attention-DP ranks sglang"):
        prepare_served(model, gpu, dep8, framework="sglang", max_running=4)


def test_max_running_leaves_the_bounds_and_the_prefill_workers_alone():
    # a framework setting is no physics: the bound columns (TTFT, throughput) do not move with it, TPOT's bound at the
    # capped batch only loosens; and it caps the decode workers: SGLang's split of 4 over a DEP 8 prefill worker's
    # ranks had left that worker no slot, refused as "cannot hold the weights and one prompt"
    gpu, model = get_accelerator("h200-sxm"), get_model("deepseek-v3")
    dep8 = FP8.with_(parallel=Parallel(tp=8, ep=8))
    pools = Disaggregation(1, 2, Parallel(tp=8, ep=8, attention_dp=True))
    workload = Workload(isl=1024, osl=1024, concurrency=64)
    rows = [serve_disaggregated(prepare_served(model, gpu, dep8, framework="sglang", max_running=cap), workload,
                                pools, overflow="queue") for cap in (None, 4)]
    free, capped = rows
    assert capped["kv_capacity_requests"] == 8 and capped["decode_batch_expected"] == pytest.approx(4, rel=1e-3)
    assert (capped["ttft_s"], capped["tokens_per_s"]) == (free["ttft_s"], free["tokens_per_s"])
    assert capped["tpot_s"] <= free["tpot_s"] and capped["ttft_expected_s"] > 10 * free["ttft_expected_s"]


def test_an_open_loop_past_the_cap_names_it():
    from roofline.cli.serve import open_loop_note

    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"), FP8.with_(parallel=Parallel()),
                            max_running=8)
    row = serve_aggregated(served, Workload(isl=1024, osl=256, request_rate=50.0))
    assert not row["keeps_up"] and row["kv_capacity_requests"] == 8 and row["max_running"] == 8
    note = open_loop_note(row)
    assert "its cap on running sequences" in note and "raise --max-running (now 8)" in note


def test_a_serving_workload_whose_max_running_a_plan_cannot_take_skips_that_gpu_with_a_line():
    from roofline.serving.table import ServingSettings, ServingWorkload, serving_table

    gpus = {"h200-sxm": get_accelerator("h200-sxm")}
    dep8 = FP8.with_(parallel=Parallel(tp=8, ep=8, attention_dp=True))
    rows, skipped = serving_table(get_model("deepseek-v3"), gpus, {"h200-sxm": dep8}, ServingSettings(
        workloads=(ServingWorkload(1024, 1024, (8,), framework="sglang", max_running=4),), gpus=("h200-sxm",)))
    assert rows == [] and len(skipped) == 1 and "below the 8 attention-DP ranks" in skipped[0]
