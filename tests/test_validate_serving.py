"""benchmarks/validate_serving.py's reading of the measured runs (the parts that need no aiconfigurator-core)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import served_recipes  # noqa: E402
import serving_misses  # noqa: E402
import validate_serving  # noqa: E402


def test_replicas_count_an_engines_batch_over_its_attention_ranks():
    # The package records a run's batch per replica, and under data-parallel attention per attention rank:
    # DeepSeek-R1 on 8 B200s, DEP 8, 256 client users, batch 32 = 8 ranks x 32, one engine (it had been taken for
    # 8 replicas of the 8-GPU engine, each serving 32 users); 512 users at batch 32 on DEP 8 are 2 engines;
    # Llama at TP 2, 416 users, batch 13: 32 replicas; a batch that does not divide the users: one engine; a
    # disaggregated run: its pools, never replicas
    runs = pd.DataFrame({"mode": ["agg", "agg", "agg", "agg", "disagg"],
                         "concurrency": [256.0, 512.0, 416.0, 100.0, 64.0],
                         "batch_size": [32.0, 32.0, 13.0, 48.0, 8.0],
                         "attention_dp_size": [8.0, 8.0, np.nan, 1.0, 8.0]})
    assert validate_serving.replicas(runs).tolist() == [1.0, 2.0, 32.0, 1.0, 1.0]


def test_inferencex_runs_take_their_recipes():
    # SemiAnalysis' InferenceX client draws lengths from [0.8 L, L]: 1024 -> 922 (0.9 x 1024 = 921.6), 8192 -> 7373;
    # its TensorRT-LLM Llama-70B 1k/1k recipe waits (20 steps, 0.9 of max_num_tokens) below TP 8 alone
    def run(source, backend="trtllm", isl=1024, osl=1024, tp=2.0):
        return pd.Series({"silicon_data_source": f"source_file={source}; model=Llama-3.1-70B", "backend": backend,
                          "model": "llama-3.1-70b", "isl": isl, "osl": osl, "tp_size": tp})

    row, wait, spread = served_recipes.recipe(run("2026-04-06.csv"))[:3]
    assert (row.isl, row.osl, wait) == (922, 922, (20, 0.9)) and spread == pytest.approx(1 / 9)  # 0.9 L +- 0.1 L
    assert served_recipes.recipe(run("2026-04-06.csv", tp=8.0)).batch_wait is None
    row, wait, _ = served_recipes.recipe(run("2026-04-06.csv", backend="vllm", osl=8192))[:3]
    assert (row.isl, row.osl, wait) == (922, 7373, None)
    assert served_recipes.recipe(run("2026-04-06.csv", osl=8192)).batch_wait is None  # 1k/8k: no waiting
    # the same harness's runs as the package's database dump holds them (its disaggregated ones too)
    dumped = run("x").copy()
    dumped["silicon_data_source"] = "db-dump/2026-04-27; config_id=1; silicon_concurrency=64; workflow_run_id=2"
    row, _, spread = served_recipes.recipe(dumped)[:3]
    assert (row.isl, row.osl) == (922, 922) and spread == pytest.approx(1 / 9)
    # another harness's fixed-length runs: as recorded, no spread
    other = run("/Users/x/data/h100_sxm/trtllm/1.0.0rc3/meta-llama_Llama-3.1-8B-Instruct.csv")
    row, wait, spread = served_recipes.recipe(other)[:3]
    assert (row.isl, row.osl, wait, spread) == (1024, 1024, None, 0.0)


def test_plans_recorded_as_tp_times_ep_are_read_as_tp_with_ep():
    # SemiAnalysis' TP 8 / EP 8 DeepSeek runs on 8 GPUs appear as tp_size 64 with moe 8 x 8 (their ids say tp8_ep8;
    # twins with identical TTFT and TPOT are recorded as tp_size 8, moe_tp 1, moe_ep 8): read TP 8, EP 8 on 8 GPUs,
    # as are their database dump's rows (no plan in the id) and TP 2 / EP 2 recorded as 4 with 2 x 2
    def run(source, run_id, tp, moe, dp=1.0, prefix=""):
        return pd.Series({"silicon_data_source": source, "id": run_id, f"{prefix}tp_size": tp,
                          f"{prefix}attention_dp_size": dp, f"{prefix}moe_tp_size": moe, f"{prefix}moe_ep_size": moe})

    plan, recorded = validate_serving.plan, served_recipes.recorded_plan
    semi = "source_file=2026-04-06.csv; model=DeepSeek-R1"
    eight = plan(*recorded(run(semi, "dsr1_b200_trt_fp8_agg_1024x1024_c64_tp8_ep8_1000", 64.0, 8.0)))
    assert eight == plan(8.0, 1.0, 1.0, 8.0) and eight.devices == 8
    dumped = recorded(run("db-dump/2026-04-27; config_id=7", "dsr1_b200_sglang_fp8_agg_cfg7", 16.0, 4.0, np.nan))
    assert (plan(*dumped).tp, plan(*dumped).ep) == (4, 4)
    assert recorded(run(semi, "qwen3_5_tp2_ep2_927", 4.0, 2.0)) == (2.0, 1.0, 1.0, 2.0)
    # another harness's TP 4 with experts 2 x 2 (its id: tp4_epnone), a disaggregated pool and an id naming
    # another plan stay as recorded; so do plans that are what they say (TP 32 with moe TP 32, DEP 8)
    gap = "source_file=/data/h100_sxm/trtllm/1.0.0rc3/Qwen_Qwen3-235B-A22B-FP8.csv"
    assert recorded(run(gap, "qwen3_235b_h100_trtllm_agg_128x128_c16_tp4_epnone_16", 4.0, 2.0)) == (4.0, 1.0, 2.0, 2.0)
    assert recorded(run(semi, "x", 64.0, 8.0, prefix="decode_"), "decode_") == (64.0, 1.0, 8.0, 8.0)
    assert recorded(run(semi, "dsr1_tp16_ep16_1", 64.0, 8.0)) == (64.0, 1.0, 8.0, 8.0)
    assert plan(32.0, 1.0, 32.0, 1.0).devices == 32 and plan(1.0, 8.0, 1.0, 8.0).attention_dp


def test_a_dataset_with_a_run_at_its_roofline_is_flagged_whole():
    # Dataset a: runs at 0.30 and 0.95 of their bound tokens/s (the second at AT_ROOF = 0.9 or more): both of its
    # rows are flagged, whatever their own share; dataset b (0.50 and 0.89) is not. The run's concurrency, which
    # the package appends to the source, does not split a dataset.
    runs = pd.DataFrame({
        "silicon_data_source": ["source_file=a.csv; silicon_concurrency=8", "source_file=a.csv; silicon_concurrency=64",
                                "source_file=b.csv; silicon_concurrency=8", "source_file=b.csv;silicon_concurrency=64"],
        "measured_tokens_per_s": [300.0, 950.0, 500.0, 890.0],
        "tokens_per_s": [1000.0, 1000.0, 1000.0, 1000.0]})
    assert validate_serving.dataset(runs).tolist() == ["source_file=a.csv", "source_file=a.csv",
                                                       "source_file=b.csv", "source_file=b.csv"]
    assert validate_serving.at_the_roof(runs).tolist() == [True, True, False, False]


def test_what_if_isl_serves_the_rows_of_one_source_at_longer_prompts():
    # --what-if-isl F --source S: the rows whose source holds S, as recorded and at F x isl, side by side (the
    # diagnostic of a harness whose prompts may hold more tokens than it records); rows of other sources are left
    # out, and F = 1 reproduces the recorded side exactly
    def run(source, isl):
        return {"silicon_data_source": f"source_file={source}; silicon_concurrency=8", "backend": "vllm",
                "mode": "agg", "model": "llama-3.1-8b", "gpu": "h100-sxm", "precision": "bf16",
                "gemm_quant_mode": "", "isl": isl, "osl": 128, "concurrency": 8.0, "batch_size": 8.0,
                "tp_size": 1.0, "attention_dp_size": np.nan, "moe_tp_size": 1.0, "moe_ep_size": 1.0,
                "silicon_ttft_ms": 150.0, "silicon_tpot_ms": 12.0}

    runs = pd.DataFrame([run("harness/h100/a.csv", 1024), run("harness/h100/a.csv", 4096), run("other.csv", 1024)])
    same = validate_serving.what_if_isl(runs, 1.0, "harness/h100", None, 0.0)
    assert same[("as recorded", "rows")].sum() == 2
    assert same["as recorded"].equals(same["at 1 x isl"])
    longer = validate_serving.what_if_isl(runs, 2.0, "harness/h100", None, 0.0)
    # twice the prompt: a later first token and dearer decode steps (the prompts' chunks and a longer cache)
    assert (longer[("at 2 x isl", "TTFT bias %")] > longer[("as recorded", "TTFT bias %")]).all()
    assert (longer[("at 2 x isl", "TPOT bias %")] > longer[("as recorded", "TPOT bias %")]).all()
    # a source no run holds says so (it had raised an AttributeError from an empty frame)
    with pytest.raises(SystemExit, match="no run's silicon_data_source holds 'nowhere'"):
        validate_serving.what_if_isl(runs, 1.3, "nowhere", None, 0.0)
    # --what-if-slots N: the same rows with N fewer requests in flight than their recorded batch (8 users, batch 8):
    # a user waits for a slot, so every TTFT grows and the TPOT stays put (7 or 7.5 decode at once instead of 8)
    short = validate_serving.what_if_slots(runs, 1.0, "harness/h100", None, 0.0)
    assert (short[("1 slots short", "TTFT bias %")] > short[("as recorded", "TTFT bias %")] + 10).all()
    assert (short[("1 slots short", "TPOT bias %")] <= short[("as recorded", "TPOT bias %")]).all()
    half = validate_serving.what_if_slots(runs, 0.5, "harness/h100", None, 0.0)
    assert (half[("0.5 slots short", "TTFT bias %")] > short[("as recorded", "TTFT bias %")]).all()
    assert (half[("0.5 slots short", "TTFT bias %")] < short[("1 slots short", "TTFT bias %")]).all()


def test_largest_misses_lists_the_rows_of_the_largest_absolute_error_first():
    # errors +10%, -90%, +200%: by |error| the +200% run, then the -90% one; each row says what it ran and what the
    # measured, expected and bound sides were, in ms
    runs = pd.DataFrame({"backend": ["vllm", "trtllm", "sglang"], "backend_version": ["0.12.0", np.nan, "0.5.1"],
                         "model": ["a", "b", "c"], "gpu": ["h100-sxm"] * 3, "mode": ["agg"] * 3,
                         "tp_size": [1.0, 2.0, np.nan], "isl": [1024, 4096, 128], "osl": [128, 512, 8192],
                         "concurrency": [8.0, 16.0, 4.0], "silicon_ttft_ms": [100.0, 1000.0, 50.0],
                         "ttft_expected_s": [0.11, 0.1, 0.15], "ttft_s": [0.02, 0.05, 0.01],
                         "ttft_error": [0.1, -0.9, 2.0]})
    worst = serving_misses.largest_misses(runs, "ttft", 2)
    assert worst["error %"].tolist() == [200.0, -90.0]
    assert worst["run"].tolist() == ["sglang 0.5.1 c h100-sxm agg tp-", "trtllm  b h100-sxm agg tp2"]
    # a disaggregated run names its pools: workers x (tp, attention dp, expert parallel) of each
    pools = pd.Series({"mode": "disagg", "prefill_num_workers": 2.0, "prefill_tp_size": 1.0,
                       "prefill_attention_dp_size": 8.0, "prefill_moe_ep_size": 8.0, "decode_num_workers": 1.0,
                       "decode_tp_size": 8.0, "decode_attention_dp_size": 1.0, "decode_moe_ep_size": np.nan})
    assert serving_misses.layout(pools) == "disagg 2xtp1 dp8 ep8 + 1xtp8"
    assert worst["isl/osl"].tolist() == ["128/8192", "4096/512"]
    assert worst[["measured ms", "expected ms", "bound ms"]].values.tolist() == [[50.0, 150.0, 10.0],
                                                                                [1000.0, 100.0, 50.0]]


def test_rows_are_told_apart_by_harness_and_their_shares_add_up_to_the_mape():
    # the gap-analysis harness by its system/framework/version folder, InferenceX by its dump (a dated source_file or
    # db-dump/DATE), any other source by its file; the run's concurrency never splits a harness
    runs = pd.DataFrame({
        "silicon_data_source": [
            "source_file=/Users/x/data/h100_sxm/trtllm/1.0.0rc3/Qwen_Qwen3-32B.csv; silicon_concurrency=8",
            "source_file=/Users/x/data/h100_sxm/trtllm/1.0.0rc3/meta-llama_Llama-3.1-8B-Instruct.csv",
            "source_file=2026-04-06.csv; model=Llama-3.1-70B; measured=2025-10-29T00:00:00.000Z; wip=False",
            "db-dump/2026-04-27; config_id=202; measured=2026-03-25T00:00:00.000Z; workflow_run_id=337",
            "source_file=kimi-k2.5-gap-analysis.csv; aic_database_mode=SILICON"],
        "backend": ["trtllm", "trtllm", "trtllm", "sglang", "vllm"],
        "ttft_error": [-0.5, -0.3, 0.2, 0.1, -0.4], "tpot_error": [0.1, 0.0, -0.1, 0.2, 0.05]})
    assert serving_misses.harness(runs).tolist() == [
        "gap-analysis h100_sxm/trtllm/1.0.0rc3", "gap-analysis h100_sxm/trtllm/1.0.0rc3",
        "InferenceX 2026-04-06.csv", "InferenceX db-dump/2026-04-27", "kimi-k2.5-gap-analysis.csv"]
    table = serving_misses.by_harness(runs)
    # TTFT MAPE (50 + 30 + 20 + 10 + 40) / 5 = 30%: the harness of two rows holds (50 + 30) / 5 = 16 points of it
    assert table["TTFT MAPE share"].tolist() == [16.0, 8.0, 4.0, 2.0]
    assert table["TTFT MAPE share"].sum() == pytest.approx(serving_misses.mape(runs.ttft_error))
    assert table.loc[("gap-analysis h100_sxm/trtllm/1.0.0rc3", "trtllm"), "rows"] == 2


def test_disaggregated_inferencex_runs_take_their_recipes_engine_caps():
    # InferenceX's gb300-fp8 1k1k ctx1_gen4_tep8_batch4 recipe (srt-slurm's file: decode max_batch_size 4, prefill
    # max_num_tokens 8192) ran 24 users on 4 TEP 8 decode workers, one DEP 4 prefill worker: 16 slots
    def run(gpu="gb300-gpu", precision="fp8", isl=1024, osl=1024, users=24.0, prefill=(1.0, 1.0, 4.0),
            decode=(4.0, 8.0, 1.0), backend="trtllm", source="db-dump/2026-04-27; config_id=258",
            model="deepseek-v3"):
        fields = {"silicon_data_source": source, "backend": backend, "mode": "disagg", "gpu": gpu, "model": model,
                  "precision": precision, "isl": isl, "osl": osl, "concurrency": users, "tp_size": np.nan}
        for side, (workers, tp, dp) in (("prefill", prefill), ("decode", decode)):
            fields.update({f"{side}_num_workers": workers, f"{side}_tp_size": tp, f"{side}_attention_dp_size": dp})
        return pd.Series(fields)

    assert served_recipes.engine_caps(run()) == (4, 8192)
    recipe = served_recipes.recipe(run())
    assert (recipe.max_running, recipe.max_batched_tokens, recipe.row.isl) == (4, 8192, 922)
    # b200-fp4 8k1k ctx1_gen5_tep8_batch8: the file sets max_batch_size 16, not the 8 of its name
    assert served_recipes.engine_caps(run("b200", "fp4", 8192, 1024, 100.0, decode=(5.0, 8.0, 1.0)))[0] == 16
    # its 1k1k users 10-180 match an MTP and a single-token recipe of the same batch, 32: the single-token one's
    # prefill budget (10240; the MTP file was not read)
    assert served_recipes.engine_caps(run("b200", "fp4", 1024, 1024, 180.0, decode=(5.0, 8.0, 1.0))) == (32, 10240)
    # gb200-fp4 1k1k at 48 users matches an MTP recipe of max_batch_size 8 and a single-token one of 32: the runs
    # carry no speculation, so the single-token one's
    assert served_recipes.engine_caps(run("gb200-gpu", "fp4", 1024, 1024, 48.0, decode=(4.0, 8.0, 1.0))) == (32,
                                                                                                          16384)
    # no such configuration, another framework, another harness: none
    assert served_recipes.engine_caps(run(users=25.0)) == (None, None)
    assert served_recipes.engine_caps(run(backend="sglang")) == (None, None)
    assert served_recipes.engine_caps(run(model="kimi-k2.5")) == (None, None)  # another model of the same shape
    assert served_recipes.engine_caps(run(source="/Users/x/gb300/trtllm.csv")) == (None, None)
