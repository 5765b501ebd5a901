"""Findings of two reviews of 2026-12-04 (late): a property sweep of `serve` over ~37,000 rows (expected step times
that fell as the batch grew, open loops called sustained past saturation) and a new user's models and devices
(config.json nulls, the shared-expert wording, a decode sized for a prefill, the capacity in misfit notes)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import roofline
from roofline.cli import app as cli
from roofline.engine import models
from roofline.report.facts import model_facts
from roofline.serving.steps import physical
from test_hf_families import CONFIGS


def test_physical_pads_smaller_steps_and_never_dearer_per_token_for_larger_ones():
    # points 1, 2, 4, 8 tokens; a first row of host time (4 at one token) and a cliff (10 at eight):
    # per token at most the least of the fewer: t(8) <= 8 x min(4 / 1, 1 / 2, 2 / 4) = 4; padding: t(1) <= t(2) = 1
    times = np.array([[4.0, 1.0, 2.0, 10.0], [1.0, 2.0, 3.0, 4.0]])
    held = physical(times, np.array([1.0, 2.0, 4.0, 8.0]))
    np.testing.assert_array_equal(held, [[1.0, 1.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0]])  # a physical curve stays
    assert physical(np.asarray(0.0), np.array([1.0, 2.0])) == 0.0  # a part without operators


def _serve(**options) -> pd.Series:
    return roofline.serve(**options).iloc[0]


def test_one_user_decodes_no_slower_than_two():
    # B200 vLLM fp8 GEMMs measured 20 us at one token and 5 us at two (n 256, k 2048): one user had decoded at
    # 8.48 ms a token, two at 5.01 ms
    common = dict(model="qwen3-32b", gpu="b200", weight_dtype="fp8", kv_dtype="fp8", tp=8, framework="vllm",
                  isl=1024, osl=1024)
    one, two = _serve(concurrency=1, **common), _serve(concurrency=2, **common)
    assert one["tpot_expected_s"] <= two["tpot_expected_s"]
    assert one["tpot_s"] <= one["tpot_expected_s"]  # still at least the bound


def test_twice_the_users_never_deliver_fewer_tokens_while_both_fit():
    # a fused-MoE fit 4x dearer at 1.5x the tokens: 17,362 tokens/s at 512 users, 9,515 at 1,024 (both fit)
    common = dict(model="mixtral-8x7b", gpu="b200", tp=2, framework="vllm", isl=128, osl=128)
    low, high = _serve(concurrency=512, **common), _serve(concurrency=1024, **common)
    assert low["fits"] and high["fits"]
    assert high["tokens_per_s_expected"] >= low["tokens_per_s_expected"] * (1 - 1e-9)


def test_a_disaggregated_open_loop_past_saturation_does_not_keep_up():
    # 16 undamped iterations had left the decode occupancy short of its fixed point: 11.25 requests/s "kept up"
    # where the cache-full closed loop delivers 10.26
    common = dict(model="llama-3.1-70b", gpu="h100-sxm", weight_dtype="fp8", kv_dtype="fp8", tp=4, prefill_tp=2,
                  framework="vllm", mode="disaggregated", prefill_workers=1, decode_workers=1, isl=1024, osl=1024)
    below, past = _serve(request_rate=10.0, **common), _serve(request_rate=11.25, **common)
    assert below["keeps_up"] and np.isfinite(below["ttft_expected_s"])
    assert not past["keeps_up"] and past["ttft_expected_s"] == np.inf
    assert 10.0 < past["requests_per_s_expected"] < 11.25


def test_an_open_loop_past_saturation_delivers_at_least_what_it_did_below():
    # SGLang's saturated state had been its closed loop with lockstep waves: 2.18 requests/s delivered at 2.31
    # offered, against 2.29 sustained at 2.29
    common = dict(model="llama-3.1-70b", gpu="h200-sxm", weight_dtype="fp8", kv_dtype="fp8", tp=1,
                  framework="sglang", isl=1024, osl=1024)
    rows = [_serve(request_rate=float(rate), **common) for rate in np.linspace(2.2, 2.4, 9)]
    kept = [row["requests_per_s_expected"] for row in rows if row["keeps_up"]]
    lost = [row["requests_per_s_expected"] for row in rows if not row["keeps_up"]]
    assert kept and lost
    assert min(lost) >= max(kept) * (1 - 1e-9)


def test_a_null_kv_head_count_is_the_query_head_count():
    # transformers: `if num_key_value_heads is None: num_key_value_heads = num_attention_heads` (Mistral, Qwen2, ...)
    config = dict(CONFIGS["Qwen2-57B-A14B"], num_key_value_heads=None)
    assert models.model_from_hf_dict(config, "q").n_kv_heads == config["num_attention_heads"]


def test_a_gated_shared_expert_is_one_expert_of_its_width():
    # Qwen2-57B-A14B: one shared expert of 20,480 (priced as 8 expert widths of 2,560), not "8 shared"
    m = models.model_from_hf_dict(dict(CONFIGS["Qwen2-57B-A14B"]), "q")
    total = pd.Series({"total_params": 57.4e9, "active_params": 14.2e9, "weight_bytes": 114.8e9})
    scenario = {"weight_dtype": "bf16", "kv_dtype": "bf16", "expert_routing": "balanced", "mla_mode": "absorbed"}
    facts = dict(model_facts(m, scenario, total))
    assert "64 routed (top-8 per token) + 1 gated shared expert of width 20,480, expert width 2,560" in \
        facts["experts"]


def test_an_automatic_plan_fits_the_stage_asked_not_a_prefill_nobody_asked_for():
    # Llama-3.1-70B fp8, 64 x 4,096 tokens on H200: the decode fits one device (116 GB of 136); the prefill of the
    # same batch needs two, which had sized the decode question too
    options = dict(model="llama-3.1-70b", gpu="h200-sxm", seq_len=4096, batch=64, weight_dtype="fp8", kv_dtype="fp8")
    decode, prefill = roofline.totals(stage="decode", **options).iloc[0], roofline.totals(stage="prefill",
                                                                                          **options).iloc[0]
    assert (decode["devices"], bool(decode["fits"])) == (1, True)
    assert prefill["devices"] == 2


def test_a_draft_method_without_a_draft_says_a_path_is_accepted_too():
    with pytest.raises(roofline.RooflineInputError, match="a catalog key or the path of a config.json"):
        roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=128, osl=128, spec_method="draft", spec_tokens=3,
                       spec_acceptance=0.5)


def test_a_gpu_the_serving_section_cannot_serve_is_said_in_the_table_and_once(tmp_path):
    # a 24 GB RTX 4090 holds not one 121,000-token request of Llama-3.1-8B beside its 16 GB of weights: it had
    # vanished from results/serving/{model}.parquet with its reason in the log alone, once per concurrency
    from roofline.engine.hardware import get_accelerator
    from roofline.engine.scenario import Scenario
    from roofline.pipeline.io import read_serving_table, write_serving_table
    from roofline.serving.table import ServingSettings, ServingWorkload, serving_table

    model = models.get_model("llama-3.1-8b")
    gpus = {key: get_accelerator(key) for key in ("h100-sxm", "rtx-4090")}
    workload = ServingWorkload(isl=120_000, osl=1_000, concurrency=(1, 2))
    rows, skipped = serving_table(model, gpus, {key: Scenario() for key in gpus},
                                  ServingSettings(workloads=(workload,), gpus=tuple(gpus)))
    assert {row["gpu"] for row in rows} == {"h100-sxm"}
    assert len(skipped) == 1 and skipped[0].startswith("rtx-4090, isl 120000, osl 1000: ")
    path = tmp_path / "served.parquet"
    write_serving_table(rows, str(path), skipped)
    table, lines = read_serving_table(str(path))
    assert len(table) == 2 and lines == skipped


def test_levers_rank_by_their_median_over_every_gpu_and_one_gpu_levers_say_so():
    from roofline.report.text.treatments import lever_sentence

    def rows(speedups: dict) -> pd.DataFrame:
        return pd.DataFrame([{"treatment": t, "label": t, "gpu": gpu, "speedup": v}
                             for t, by_gpu in speedups.items() for gpu, v in by_gpu.items()])

    names = {"h200-sxm": "H200", "h100-sxm": "H100"}
    # TP 2 on the H200 alone (1.81x) against fp8 on both (1.81x, 1.60x): a median over the GPUs where each applies
    # had picked TP 2; over every GPU (1x where it does not apply) fp8 leads, as the table beside it says
    both = lever_sentence("prefill", rows({"tp2": {"h200-sxm": 1.8075}, "fp8": {"h200-sxm": 1.8095,
                                                                                 "h100-sxm": 1.60}}), names)
    assert "lever for prefill (by its median speed-up over the GPUs) is fp8: 1.60×–1.81× faster (bound) on every " \
           "configured GPU." in both
    alone = lever_sentence("prefill", rows({"fp8": {"h100-sxm": 1.9}, "tp2": {"h100-sxm": 1.2}}), names)
    assert "is fp8: 1.90× faster (bound) on H100 (the only GPU where it applies)." in alone


def test_a_kernel_that_fails_costs_its_row_not_the_measured_table(monkeypatch):
    # the one-shot GPU session must keep what it measured: a kernel this torch cannot run is named in the summary
    pytest.importorskip("torch")
    from roofline.engine import formulas as f
    from roofline.estimate import measure

    def broken():
        raise RuntimeError("no kernel for this dtype\nsecond line")

    def ladder(torch, device, p, dtype, shapes):
        x = torch.ones(64, 64)
        yield {"op_class": "gemm", "op": "good", "m": 64, "n": 64, "k": 64}, f.linear(64, 64, 64, 4, 4), lambda: x @ x
        yield {"op_class": "gemm", "op": "bad", "m": 8, "n": 64, "k": 64}, f.linear(8, 64, 64, 4, 4), broken

    monkeypatch.setattr(measure, "ladder", ladder)
    monkeypatch.setattr(measure, "moe_ladder", lambda *args: iter(()))
    rows, summary = measure.measure("cpu", quick=True)
    assert [row["op"] for row in rows if row["op_class"] == "gemm"] == ["good"]
    assert summary.endswith("not measured (1): bad fp32 m 8: no kernel for this dtype")


def test_a_device_of_ones_own_is_a_file_the_command_line_reads_as_the_config_does(tmp_path, capsys):
    # a new user's device had been usable in the pipeline only: --gpu took catalog keys
    from roofline.cli import main

    device = tmp_path / "acme.yaml"
    device.write_text("acme-4090:\n  name: ACME 4090\n  memory_gb: 24\n  bandwidth_gbps: 1008\n"
                      "  peak_tflops: {bf16: 165.2, fp16: 165.2}\n")
    assert main(["ridge", "--gpu", str(device), "--dtype", "bf16"]) in (0, None)
    ridge = capsys.readouterr().out.split("\n")[1].split()
    assert ridge[:3] == ["acme-4090", "bf16", "165.2"] and "163.9" in ridge  # 165.2e12 / 1008e9 FLOP/byte
    row = _serve(model="llama-3.1-8b", gpu=str(device), isl=512, osl=128, concurrency=4)
    assert row["gpu"] == "acme-4090" and row["deployment"] == "1 x ACME 4090"
    # a decode step reads at least the bf16 weights but the embedding table (16.06 GB - 128,256 x 4,096 x 2 B =
    # 15.01 GB) at 1008 GB/s: 14.9 ms
    assert row["tpot_s"] >= 15.0e9 / 1008e9
    (tmp_path / "bad.yaml").write_text("acme: {memory_gb: 24, bandwidth_gbps: -5, peak_tflops: {bf16: 1}}\n")
    assert main(["ridge", "--gpu", str(tmp_path / "bad.yaml")]) == 2
    assert f"--gpu {tmp_path / 'bad.yaml'}: gpus.acme.bandwidth_gbps" in capsys.readouterr().err
    assert main(["ridge", "--gpu", str(tmp_path / "missing.yaml")]) == 2
    assert f"--gpu: file '{tmp_path / 'missing.yaml'}' does not exist" in capsys.readouterr().err


def test_an_impossible_plan_names_the_options_that_set_it(capsys):
    from roofline.cli import main

    assert main(["totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode", "--tp", "3"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "error: --tp 3 --pp 1 --ep 1: tp 3 does not divide the 32 attention heads of llama-3.1-8b; use a tp that "
        "divides 32")


def test_a_decode_step_of_one_sequence_is_priced_no_dearer_than_the_same_step_padded():
    # B200 vLLM fp8 GEMM rows at one token hold host time: `totals` had priced Llama-3.1-70B's decode at 20.2 ms
    # for one sequence and 16.0 ms for two
    options = dict(model="llama-3.1-70b", gpu="b200", stage="decode", seq_len=1024, weight_dtype="fp8",
                   kv_dtype="fp8", framework="vllm")
    one, two = roofline.totals(batch=1, **options).iloc[0], roofline.totals(batch=2, **options).iloc[0]
    assert one["tpot_s"] <= one["tpot_expected_s"] <= two["tpot_expected_s"] * (1 + 1e-3)
    ops_one = roofline.ops(batch=1, **options).set_index("op")["t_expected_s"]
    ops_four = roofline.ops(batch=4, **options).set_index("op")["t_expected_s"]
    assert (ops_one <= ops_four * (1 + 1e-9)).all()


# ---------------------------------------------------------------- an audit of bytes by hand (helper review, late)
def test_a_linear_attention_state_is_split_by_tp_and_kept_at_sixteen_bits():
    # Qwen3-Next at TP 8, 256 sequences of 1,024 cached tokens: its 12 full-attention layers' 2 KV heads are
    # replicated over 8 devices (one a device: half the cache), 12 x 256 x 1,024 x (2 x 2 x 256 x 2 B) / 2 =
    # 3,221,225,472; its 36 Gated DeltaNet layers' state splits 8 ways, 36 x 256 x (32 x 128 x 128 + 8,192 x 3)
    # x 2 B / 8 = 1,264,582,656; together 4,485,808,128 (the whole cache over 2 had read 8.28e9)
    total = roofline.totals(model="qwen3-next-80b-a3b", gpu="h200-sxm", stage="decode", tp=8, batch=256,
                            seq_len=1023).iloc[0]
    assert total["kv_cache_bytes_per_device"] == 3_221_225_472 + 1_264_582_656
    # an fp8 KV cache leaves the state at 16 bits (vLLM: mamba_ssm_cache_dtype, never kv_cache_dtype)
    rows = {kv: roofline.ops(model="qwen3-next-80b-a3b", gpu="h200-sxm", stage="decode", tp=2, batch=4,
                             seq_len=1023, kv_dtype=kv).set_index("op") for kv in ("bf16", "fp8")}
    for op in ("gated_delta_rule", "conv1d"):
        assert rows["fp8"].loc[op, "bytes_kv_read"] == rows["bf16"].loc[op, "bytes_kv_read"] > 0


def test_experts_under_data_parallel_attention_see_the_tokens_routed_not_tp_times_the_busiest():
    # DeepSeek-V3, TP 8 EP 8 with DP attention: one sequence is one token at the experts, which touches its 8
    # experts, one on each device (it had been charged as 8 tokens, 57 experts: TPOT bound 7.71 ms at batch 1, as
    # at batch 8)
    options = dict(model="deepseek-v3", gpu="h200-sxm", stage="decode", tp=8, ep=8, attention_dp=True,
                   seq_len=2047)
    one, eight = (roofline.totals(batch=b, **options).iloc[0] for b in (1, 8))
    assert one["tpot_s"] < 0.6 * eight["tpot_s"]
    ops = roofline.ops(batch=1, **options).set_index("op")
    width = 7168 * 2048 * 1  # one fp8 expert matrix [7,168 x 2,048] at a byte a weight
    assert ops.loc["expert_gate_proj", "bytes_weight"] == pytest.approx(width)  # 8 x (1 - (1 - 8/256)^1) / 8 = 1


def test_a_sparse_models_fp8_latent_is_read_as_the_cache_holds_it():
    # DeepSeek-V3.2's fp8 cache holds FlashMLA's sparse layout, 656 bytes a token and layer (512 fp8 values, 4 fp32
    # scales, 64 RoPE dims at 16 bits) beside the indexer's 132; below index_topk every row is read, so decode reads
    # the whole per-device cache (it had read 576-byte rows: 0.8985 of it)
    options = dict(model="deepseek-v3.2", gpu="h200-sxm", stage="decode", tp=8, ep=8, attention_dp=True, batch=64,
                   seq_len=1023, kv_dtype="fp8")
    ops, total = roofline.ops(**options), roofline.totals(**options).iloc[0]
    assert (ops["bytes_kv_read"] * ops["count"]).sum() == pytest.approx(total["kv_cache_bytes_per_device"], rel=1e-12)


# ---------------------------------------------------------------- the serving section in the report (reader review)
def test_the_serving_sections_workloads_are_a_table_each_in_the_model_report():
    # results/serving/{model}.parquet had been written and shown nowhere: a reader who configured 8,192/512 took
    # page 1's plan workload for theirs
    from roofline.engine.hardware import get_accelerator
    from roofline.engine.scenario import Scenario
    from roofline.report.index import result_tables
    from roofline.report.workloads import workloads_section
    from roofline.serving.table import ServingSettings, ServingWorkload, serving_table

    model = models.get_model("llama-3.1-8b")
    gpus = {key: get_accelerator(key) for key in ("rtx-4090", "h100-sxm")}
    workloads = (ServingWorkload(isl=1024, osl=256, concurrency=(1, 4096)),
                 ServingWorkload(isl=120_000, osl=100, request_rate=(0.01, 50.0)))
    rows, skipped = serving_table(model, gpus, {key: Scenario() for key in gpus},
                                  ServingSettings(workloads=workloads, gpus=tuple(gpus)))
    served = pd.DataFrame(rows)
    served.attrs["skipped"] = skipped  # as report.io.load_serving reads it
    section = workloads_section(served, {"h100-sxm": "H100", "rtx-4090": "RTX 4090"})
    first, second = section["tables"]
    assert first["title"] == "vllm, aggregated: 1,024 prompt and 256 output tokens per request"
    # the report's GPU order, then the load: H100 first
    assert [(r["deployment"]["text"][:9], r["load"]["text"]) for r in first["rows"]] == [
        ("1 x H100 ", "1 user"), ("1 x H100 ", "4,096 users"), ("1 x GeFor", "1 user"), ("1 x GeFor", "4,096 users")]
    many = first["rows"][1]
    assert many["holds"]["text"] == "no: users wait" and "wait for a slot" in many["holds"]["misfit"]
    assert first["rows"][0]["holds"]["text"] == "yes"
    # an open loop that falls behind: its TTFT is unbounded, beside the bound
    fast = [r for r in second["rows"] if r["load"]["text"].startswith("50")]
    assert fast and fast[0]["holds"]["text"] == "no: falls behind" and fast[0]["ttft"]["text"].startswith("unbounded")
    assert len(skipped) == 1 and section["skipped"] == skipped  # the 4090 holds not one 120,100-token request
    assert {"path": "results/serving/{model}.parquet",
            "what": "every GPU under each served workload (config serving; what could not be served in its "
                    "metadata)"} in result_tables(["serving"])
    assert not any("serving" in table["path"] for table in result_tables())


def test_a_pipelines_bandwidth_names_the_stage_that_reads_at_once():
    # '16 x RTX A6000, TP 8, PP 2 (6.14 TB/s over 8 devices)' left a reader to guess why 8 of 16
    from roofline.report import units
    from roofline.report.text.executive import _across

    rows = pd.DataFrame({"tp": {"a6000": 8, "h100": 1}, "pp": {"a6000": 2, "h100": 2}})
    assert _across(rows, "a6000", 768e9, units.bandwidth) == \
        "6.14 TB/s over 8 devices, one of its 2 pipeline stages at a time"
    assert _across(rows, "h100", 3.35e12, units.bandwidth) == "3.35 TB/s, one of its 2 pipeline stages at a time"


def test_a_lead_on_a_default_estimate_names_the_best_on_measured_kernels_beside_it():
    # every default report crowned the MI300X on the pooled fallback's estimate; the caveat says compare bounds
    from roofline.report.served import _calibrated_best

    ordered = pd.DataFrame([
        {"deployment": "1 x Instinct MI300X", "estimate": "default", "tokens_per_s_per_device_expected": 21100.0,
         "tokens_per_s_per_device": 37900.0},
        {"deployment": "1 x H200 SXM 141GB", "estimate": "calibrated", "tokens_per_s_per_device_expected": 11900.0,
         "tokens_per_s_per_device": 32800.0}])
    assert _calibrated_best(ordered.iloc[0], ordered) == (
        "; the best GPU on its own measured kernels is 1 x H200 SXM 141GB, 11,900 tokens/s per GPU expected (bound "
        "32,800)")
    assert _calibrated_best(ordered.iloc[1], ordered) == ""  # a calibrated lead needs nothing beside it


def test_a_mode_all_frontier_marks_its_disaggregated_plans_and_names_the_pools():
    # one line per device mixed both modes with nothing to tell them apart; the star's label ended 'memory-bound'
    from matplotlib.lines import Line2D

    from roofline.figures.plan import _label, plan_figure

    rows = [{"gpu": "h200-sxm", "mode": mode, "tokens_per_s_per_user_expected": user,
             "tokens_per_s_per_device_expected": device, "tokens_per_s_per_user": user * 2,
             "tokens_per_s_per_device": device * 2, "recommended": n == 0, "chosen": n == 0, "isl": 1024,
             "osl": 1024, "deployment": "prefill: 2 x (1 x H200); decode: 3 x (1 x H200)", "batch": 790,
             "weight_dtype": "fp8", "kv_dtype": "fp8", "tpot_expected_s": 0.047, "tpot_s": 0.028,
             "ttft_expected_s": 0.56, "ttft_s": 0.06, "bound": "memory", "prefill_workers": 2, "decode_workers": 3,
             "limited_by": "decode"}
            for n, (mode, user, device) in enumerate([("disaggregated", 21.0, 3300.0), ("aggregated", 60.0, 1500.0)])]
    table = pd.DataFrame(rows)
    fig = plan_figure(table, "Llama-3.1-70B")
    ax = fig.axes[0]
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert len(crosses) == 1 and list(crosses[0].get_xdata()) == [21.0]
    assert "disaggregated plan" in [text.get_text() for text in ax.get_legend().get_texts()]
    assert any(isinstance(h, Line2D) for h in ax.get_legend().legend_handles)
    label = _label(next(table.itertuples()), 0.05)
    assert "disaggregated: 2 prefill + 3 decode workers, limited by the decode pool" in label.replace("\n", " ")


# ---------------------------------------------------------------- a review of the day's diff
def test_a_device_file_reusing_a_catalog_key_is_refused_beside_it_and_never_mistaken_for_it(tmp_path, capsys):
    from roofline.cli import main

    slow = tmp_path / "b200slow.yaml"
    slow.write_text("b200:\n  bandwidth_gbps: 2000\n")
    # one process, two devices under one key: the step tables are the device's, not the key's
    first = _serve(model="llama-3.1-8b", gpu=str(slow), isl=1024, osl=128, concurrency=8)
    catalog = _serve(model="llama-3.1-8b", gpu="b200", isl=1024, osl=128, concurrency=8)
    assert catalog["tpot_s"] < first["tpot_s"] / 3  # 8 TB/s against 2 TB/s
    # a search keys its rows on the device key: two --gpu values naming one are refused in one line
    assert main(["plan", "--model", "llama-3.1-8b", "--gpu", "b200", "--gpu", str(slow), "--isl", "1024", "--osl",
                 "128"]) == 2
    assert f"--gpu: {slow} names device 'b200' again (as b200 does)" in capsys.readouterr().err
    wrapped = tmp_path / "wrapped.yaml"
    wrapped.write_text("gpus:\n  acme: {memory_gb: 24, bandwidth_gbps: 1000, peak_tflops: {bf16: 100}}\n")
    assert main(["ridge", "--gpu", str(wrapped)]) == 2
    assert "holds a gpus: section; give the device's entry alone" in capsys.readouterr().err


def test_naive_mla_reads_the_sparse_fp8_rows_it_writes():
    for mode, reader in (("naive", "kv_b_proj"), ("absorbed", "fused_attention")):
        ops = roofline.ops(model="deepseek-v3.2", gpu="b200", stage="decode", batch=1, seq_len=1000, kv_dtype="fp8",
                           mla_mode=mode, tp=8).set_index("op")
        # 1,001 cached rows of 656 bytes; the write brings 576 values in at 2 bytes and stores one 656-byte row
        assert ops.loc[reader, "bytes_kv_read"] == 1001 * 656
        assert (ops.loc["kv_cache_write", "bytes_act_read"], ops.loc["kv_cache_write", "bytes_kv_write"]) == (1152, 656)


def test_without_a_prefix_hit_no_linear_attention_state_is_held_as_shared():
    # the prefix's share had been priced as one request of 0 tokens: a Gated DeltaNet state (20 MB a device here)
    from roofline.engine.scenario import Scenario
    from roofline.serving.capacity import per_device_bytes

    model = models.get_model("qwen3-next-80b-a3b")
    scenario = Scenario().for_model(model)
    _, _, held, shared, _ = per_device_bytes(model, scenario, 8192, False, 1024, 1024, 0.0, 0.0, None)
    assert shared == 0.0 and held > 0
    _, _, _, half, _ = per_device_bytes(model, scenario, 8192, False, 1024, 1024, 0.5, 0.0, None)
    # 512 cached tokens of the 12 full-attention layers' 2 KV heads of 256 at 2 bytes: 512 x 12 x 2048 B
    assert half == 512 * 12 * 2 * 2 * 256 * 2


def test_an_open_loop_the_saturated_engine_can_serve_keeps_up_with_a_finite_wait():
    # SGLang's open loop (arrivals one by one) gave up at 5.4 requests/s on DeepSeek-V3 (8 x B200) and said so with
    # an unbounded TTFT while delivering all 5.4: a full cache batching what waits serves 6.91 (6.77 before SGLang's
    # memory rule of 0.5.4 left its cache 490 requests, not 435)
    common = dict(model="deepseek-v3", gpu="b200", weight_dtype="fp8", kv_dtype="fp8", tp=8, framework="sglang",
                  isl=4096, osl=512)
    calm, busy, over = (_serve(request_rate=rate, **common) for rate in (5.0, 6.8, 7.0))
    assert calm["keeps_up"] and busy["keeps_up"] and not over["keeps_up"]
    assert busy["requests_per_s_expected"] == pytest.approx(6.8)
    assert calm["ttft_expected_s"] < busy["ttft_expected_s"] < float("inf")
    assert busy["e2e_latency_expected_s"] == pytest.approx(busy["ttft_expected_s"] + 511 * busy["tpot_expected_s"])
    assert 6.8 < over["requests_per_s_expected"] < 7.0 and over["ttft_expected_s"] == float("inf")


def test_a_first_wave_beyond_the_cache_leaves_the_rest_waiting_for_a_slot(capsys):
    # Llama-3.1-8B on one H100 at 1024/1024 holds 293 requests: of a first wave of N sent at once, 293 start
    # together and the rest wait for a slot as in the steady state. Before, the first wave counted only the 293, so
    # one wave read 3.43 s for any N from 294 to 100,000 (the steady state of 1,024 users waits 86.7 s)
    kwargs = dict(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=1024, overflow="queue")
    steady = {n: roofline.serve(**kwargs, concurrency=n).iloc[0]["ttft_expected_s"] for n in (256, 1024, 4096)}
    one = {n: roofline.serve(**kwargs, concurrency=n, benchmark_waves=1).iloc[0]["ttft_expected_s"]
           for n in (256, 1024, 4096)}
    two = roofline.serve(**kwargs, concurrency=1024, benchmark_waves=2).iloc[0]["ttft_expected_s"]
    assert one[256] > steady[256]  # a wave all at once queues its prompts: dearer than the steady state
    assert one[256] < one[1024] < two < steady[1024] < one[4096]  # more users wait, more waves approach the steady
    assert one[1024] > 0.5 * steady[1024]  # 731 of 1,024 wait for a slot (3.43 s before)
    # less than one wave is no benchmark: it had extrapolated past the first wave (5.9 s against its 3.0 s)
    assert cli.main(["serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "1024",
                     "--concurrency", "256", "--benchmark-waves", "0.5"]) == 2
    assert "--benchmark-waves: 0.5 is not allowed; expected a number of waves" in capsys.readouterr().err


@pytest.mark.parametrize("framework", ["vllm", "sglang", "trtllm"])
def test_an_auto_plan_holds_a_request_and_a_full_step(framework):
    # Qwen2.5-72B fp8 (72.7 GB of weights) on H100s: one device holds the weights but not one step's activations
    # beside them; `serve` chose it and then refused it ("not one request of 1024 + 256 tokens fits")
    row = roofline.serve("qwen2.5-72b", "h100-sxm", isl=1024, osl=256, concurrency=1, weight_dtype="fp8",
                         framework=framework).iloc[0]
    assert row["devices"] == 2 and row["kv_capacity_requests"] >= 1
    # and the choice no longer flips as the memory share grows: 0.2 had failed between 0.15 and 0.25
    for share in (0.15, 0.2, 0.25, 0.3):
        assert roofline.serve("llama-3.1-8b", "h100-sxm", isl=1024, osl=1024, concurrency=8,
                              memory_utilization=share).iloc[0]["kv_capacity_requests"] >= 1


def test_a_sustained_open_loop_waits_as_the_closed_loop_that_carries_its_rate():
    # DeepSeek-V3 on 8 H200s (DEP 8) under SGLang at 2048/512: past 8.5 requests/s the Poisson arrivals saturate
    # but a queue's batches still serve up to 12.7. Every such rate had read the full cache's state, 9.72 s of TTFT
    # and 143 ms of TPOT from 9 to 12.7 requests/s; it is now the closed loop of the fewest users that carries the
    # rate: both grow with the rate, up to the full cache's. At SGLang 0.5.3's memory fraction for TP 8, 0.81 (a cache
    # of 1,056 requests; 0.5.4's default, 0.897, holds 1,712 and keeps up one by one to 12 requests/s)
    kwargs = dict(model="deepseek-v3", gpu="h200-sxm", isl=2048, osl=512, tp=8, ep=8, attention_dp=True,
                  framework="sglang", memory_utilization=0.81)
    rows = [roofline.serve(**kwargs, request_rate=rate).iloc[0] for rate in (9.0, 10.0, 11.0, 12.0, 12.7)]
    assert all(row["keeps_up"] for row in rows)
    ttft = [row["ttft_expected_s"] for row in rows]
    tpot = [row["tpot_expected_s"] for row in rows]
    assert ttft == sorted(ttft) and tpot == sorted(tpot) and ttft[0] < 0.5 * ttft[-1]
    # near the most it serves, the full cache's 9.72 s (its closed loop of prompts one by one, which serves more than
    # SGLang's lockstep share there)
    assert 0.9 * 9.72 < rows[-1]["ttft_expected_s"] <= 9.72


@pytest.mark.parametrize("model,gpu,framework", [("kimi-k2", "h100-sxm", "sglang"), ("deepseek-v3.2", "l40s", "vllm")])
def test_an_auto_plan_leaves_one_request_room_by_the_caches_own_accounting(model, gpu, framework):
    # The plan's fit (a prefill probe of a full step) chose 16 devices (TP 8 x PP 2) whose busiest stage the KV
    # cache's accounting (the framework's memory rule beside a full step's largest operator) leaves no room:
    # `serve` refused its own plan ("the weights alone exceed what sglang's memory rule leaves them, by 0.774 GB
    # per device; use more devices") at one user. The next plan, TP 8 x PP 4, holds requests
    row = roofline.serve(model, gpu, isl=1024, osl=256, concurrency=1, framework=framework).iloc[0]
    assert row["fits"] and row["kv_capacity_requests"] >= 1
    assert (row["tp"], row["pp"]) == (8, 4)


def test_an_auto_plan_leaves_room_for_its_draft_model_too():
    # Qwen3-32B with a Qwen3-8B draft at 4096/1024 on H100s: the auto plan's room check left the draft's weights and
    # cache out, chose one H100 and refused it ("by 7.17 GB per device"); two hold target, draft and a request
    row = roofline.serve("qwen3-32b", "h100-sxm", isl=4096, osl=1024, concurrency=1, spec_method="draft",
                         spec_draft_model="qwen3-8b", spec_acceptance=0.7).iloc[0]
    assert row["fits"] and row["kv_capacity_requests"] >= 1 and row["devices"] == 2


def test_the_vendor_check_reads_a_user_defined_vendor_in_any_case():
    from dataclasses import replace

    from roofline.engine.hardware import get_accelerator
    from roofline.serving.framework import runs_on

    h100, mi300x = get_accelerator("h100-sxm"), get_accelerator("mi300x")
    assert runs_on("trtllm", replace(h100, vendor="nvidia")) and runs_on("trtllm", replace(h100, vendor=""))
    assert not runs_on("trtllm", mi300x) and runs_on("vllm", mi300x) and runs_on("", mi300x)


@pytest.mark.parametrize("mode", ["aggregated", "disaggregated"])
def test_an_sglang_engine_whose_reserve_exceeds_its_devices_is_refused_as_such(mode, capsys):
    # Llama-4-Maverick on TPU v6e (32 GiB chips) under SGLang: the auto plan reaches 256 chips, for which SGLang's
    # reserve (128 MiB per GPU of the engine: 32 GiB) exceeds each chip (mem_fraction_static -0.114). The refusal
    # had said the weights exceed the rule "by 13.3 GB per device; use more devices" (disaggregated: "use a wider
    # prefill plan"), which only makes the reserve larger
    code = cli.main(["serve", "--model", "llama-4-maverick", "--gpu", "tpu-v6e", "--framework", "sglang", "--isl",
                     "1024", "--osl", "256", "--concurrency", "1", "--mode", mode])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "sglang's memory rule reserves all of each device's memory for an engine of 256 x TPU v6e" in err
    assert "mem_fraction_static -0.114" in err and "use fewer devices per engine" in err
