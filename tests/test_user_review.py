"""Findings of an interface audit (every flag and column issue 18 names, run as a new user would) and of a fuzz of
config.yaml through the pipeline (14 valid configs, ~45 invalid ones), each a test that failed before its fix."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

import roofline
from roofline.cli import app as cli
from roofline.engine.errors import RooflineInputError, unknown
from roofline.pipeline.config import resolve_config
from roofline.serving.search_budget import check_budget

CONFIG = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())


def _error(capsys, *argv) -> str:
    """The one error line of `roofline ARGV` (exit status 2)."""
    assert cli.main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def _config_error(**sections) -> str:
    config = copy.deepcopy(CONFIG)
    config.update(sections)
    with pytest.raises(RooflineInputError) as error:
        resolve_config(config)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_benchmark_waves_are_refused_under_a_request_rate(capsys):
    # an open loop has no waves: the option was accepted and changed nothing (the two outputs were identical)
    err = _error(capsys, "serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                 "--request-rate", "3", "--benchmark-waves", "2")
    assert err.startswith("roofline: error: --benchmark-waves: times a closed-loop benchmark's first wave")


def test_a_request_at_an_idle_engine_waits_no_longer_than_a_lone_user():
    # an arrival waited out half a running step however idle the engine: 46.6 ms against a lone user's 43.5 ms
    # (Llama-3.1-8B on an H100); it now finds a step running w.p. 1 - exp(-N) at N requests in flight
    kwargs = dict(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=256)
    lone = roofline.serve(**kwargs, concurrency=1).iloc[0]
    idle = roofline.serve(**kwargs, request_rate=1e-6).iloc[0]
    busy = roofline.serve(**kwargs, request_rate=1.0).iloc[0]
    # (the prompt queue's utilization counts at least one request in flight: 6 us here, 0.01%)
    assert idle["ttft_expected_s"] == pytest.approx(lone["ttft_expected_s"], rel=1e-3)
    assert idle["ttft_expected_s"] < busy["ttft_expected_s"]


def test_a_request_under_data_parallel_attention_moves_its_cache_over_one_link():
    # under DP attention a request lives on one attention replica of each pool: its cache goes over one link,
    # not over min(prefill devices, decode devices) = 8 of them (DeepSeek-V3, 4096-token prompt, 288 MB in bf16)
    kwargs = dict(model="deepseek-v3", gpu="h200-sxm", isl=4096, osl=1024, concurrency=64, mode="disaggregated",
                  prefill_workers=2, decode_workers=1, tp=8)
    spread = roofline.serve(**kwargs).iloc[0]["kv_transfer_s"]
    one = roofline.serve(**kwargs, ep=8, attention_dp=True).iloc[0]["kv_transfer_s"]
    # 8 links: 288 MB / (8 x 50 GB/s) = 0.72 ms; one link: 5.8 ms (each plus the network's ~5 us latency)
    assert 0.7e-3 < spread < 0.75e-3 and 5.7e-3 < one < 5.85e-3
    assert one - 5e-6 == pytest.approx(8 * (spread - 5e-6), rel=0.01)


def test_the_plan_table_shows_the_ttft_and_tpot_bounds_beside_the_expected(capsys):
    assert cli.main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                     "--max-devices", "1", "--top", "1"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert header.index("ttft_s") == header.index("ttft_expected_s") + 1
    assert header.index("tpot_s") == header.index("tpot_expected_s") + 1


def test_a_tiny_search_over_its_limit_says_under_a_second():
    with pytest.raises(RooflineInputError, match=r"over the limit of 10 \(under a second at "):
        check_budget(100, 10, "plan", "raise --max-candidates")


def test_pools_no_deployment_can_have_are_refused_before_any_job_runs():
    # 4000 + 4000 workers passed the config check; both serving jobs then wrote empty tables over the good ones
    err = _config_error(serving={"workloads": [{"isl": 1024, "osl": 256, "concurrency": [1, 8],
                                                "mode": "disaggregated", "prefill_workers": 4000,
                                                "decode_workers": 4000}]})
    assert err.startswith("serving.workloads[0].prefill_workers / decode_workers: 4000 x 1 + 4000 x 1 or more = "
                          "at least 8000 devices, more than 4096")


def test_workload_errors_name_the_config_key():
    draft = _config_error(serving={"workloads": [{"isl": 1024, "osl": 256, "concurrency": [1], "spec_method": "draft",
                                                  "spec_acceptance": 0.7, "spec_draft_model": "llama-3.2-1b"}]})
    assert draft.startswith("serving.workloads[0].spec_draft_model: unknown value 'llama-3.2-1b'")  # was '.model'
    length = _config_error(serving={"workloads": [{"isl": 1024, "osl": 256, "concurrency": [1],
                                                   "spec_method": "eagle", "spec_accepted_length": 9}]})
    assert length.startswith("serving.workloads[0].spec_accepted_length: 9 is not allowed")  # was '.--spec-...'


def test_a_catalog_gpu_missing_from_gpus_is_named_as_such():
    err = _config_error(serving={"gpus": ["b200"], "workloads": [{"isl": 16, "osl": 16, "concurrency": [1]}]})
    assert err.startswith("serving.gpus: 'b200' is not in gpus:; serving runs on the configured devices")


def test_a_key_in_capitals_is_offered_in_lowercase():
    assert "key 'L40S' is not allowed (did you mean 'l40s'?)" in _config_error(gpus={"L40S": {}})


def test_a_name_in_two_sources_is_listed_once():
    message = str(unknown("plan.gpus", "h100-sxmm", ["h100-sxm", "l40s", "h100-sxm", "l40s"]))
    assert message.endswith("allowed: h100-sxm, l40s")


def test_an_open_loop_that_does_not_keep_up_says_what_it_runs_out_of(capsys):
    # limited_by was 'none' on every aggregated row, keeps_up False included: the user was not told what saturates
    kwargs = dict(model="llama-3.1-8b", gpu="h100-sxm")
    assert roofline.serve(**kwargs, isl=1024, osl=256, request_rate=1.0).iloc[0]["limited_by"] == "none"
    # 8000-token prompts at 50/s: the saturated engine computes prompts all the time (4.9 requests/s at most)
    prompts = roofline.serve(**kwargs, isl=8000, osl=16, request_rate=50.0).iloc[0]
    assert not prompts["keeps_up"] and prompts["limited_by"] == "prefill"
    # 64-token prompts, 4096-token outputs at 20/s: every slot of the cache is taken, the prompts keep up
    slots = roofline.serve(**kwargs, isl=64, osl=4096, request_rate=20.0).iloc[0]
    assert not slots["keeps_up"] and slots["limited_by"] == "kv_cache" and slots["kv_cache_utilization"] == 1.0
    assert cli.main(["serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "8000", "--osl", "16",
                     "--request-rate", "50", "--format", "csv"]) == 0
    assert "(computing the prompts is what limits it)" in capsys.readouterr().err


def test_the_python_api_takes_whole_floats_and_refuses_a_list_for_one_value():
    kwargs = dict(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=256)
    assert roofline.serve(**kwargs, concurrency=32.0).iloc[0]["concurrency"] == 32  # was "not an integer"
    with pytest.raises(RooflineInputError, match=r"^--concurrency: '32.5' is not an integer"):
        roofline.serve(**kwargs, concurrency=32.5)
    with pytest.raises(RooflineInputError, match=r"^gpu: \['h100-sxm', 'h200-sxm'\] is not allowed; roofline.serve "
                                                 r"takes one value here"):
        roofline.serve(**{**kwargs, "gpu": ["h100-sxm", "h200-sxm"]}, concurrency=32)


def test_the_bandwidth_a_speed_up_follows_is_the_deployments():
    # Mixtral decode: 2 x H100 (TP 2) at 3.98 ms against 4 x RTX A6000 (TP 4) at 8.69 ms, 2.18x; the sentence quoted
    # one device's bandwidth each (3.35 TB/s against 768 GB/s: 4.36x), as if that set the deployments' ratio. Side
    # by side the devices read 2 x 3.35 = 6.70 TB/s and 4 x 0.768 = 3.07 TB/s: 2.18x
    import pandas as pd

    from roofline.engine.hardware import get_accelerator
    from roofline.report.text.executive import _follows_clause

    rows = pd.DataFrame({"t_s": [0.003983, 0.008693], "memory_bound_share": [1.0, 1.0], "network_share": [0.0, 0.0],
                         "tp": [2, 4]}, index=["h100-sxm", "rtx-a6000"])
    names = {"h100-sxm": "2 x H100", "rtx-a6000": "4 x RTX A6000"}
    text = _follows_clause(rows, {key: get_accelerator(key) for key in rows.index}, {}, names)
    assert text == (", so it follows memory bandwidth: by the bound, 2 x H100 (6.70 TB/s over 2 devices) is 2.18× "
                    "faster than "
                    "4 x RTX A6000 (3.07 TB/s over 4 devices)")


def test_a_share_is_rounded_once():
    from roofline.report.units import percent_value

    assert percent_value(0.5651) == 57.0  # was 56: 56.51 -> 56.5 -> 56 (half to even)
    assert percent_value(0.0949) == 9.5 and percent_value(0.0996) == 10.0 and percent_value(0.125) == 13.0


def test_schema_errors_name_list_positions_as_the_later_checks_do():
    # the schema said 'serving.workloads.0.isl', the semantic checks 'serving.workloads[0]...'
    from roofline.pipeline.schema_messages import key_path

    assert key_path(["serving", "workloads", 0, "concurrency", 2]) == "serving.workloads[0].concurrency[2]"
    assert key_path([]) == "config"
    from roofline.pipeline.schema import load_schema
    from roofline.pipeline.schema_messages import check_schema

    config = {**copy.deepcopy(CONFIG), "serving": {"workloads": [{"isl": 64, "osl": 8, "concurrency": [1, 0]}]}}
    with pytest.raises(RooflineInputError, match=r"^serving\.workloads\[0\]\.concurrency\[1\]: 0 is not allowed"):
        check_schema(config, load_schema(Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml"))


def test_mode_all_ranked_on_cost_keeps_each_modes_cost_front():
    # one cost front over both modes dropped every aggregated plan a disaggregated one was cheaper and faster than
    from roofline.cli.plan import cost_fronts

    def row(mode, usd, tpot):
        return {"mode": mode, "cost_per_million_tokens_expected": usd, "tpot_expected_s": tpot}

    rows = [row("aggregated", 0.50, 0.040), row("aggregated", 0.80, 0.020), row("aggregated", 0.90, 0.030),
            row("disaggregated", 0.30, 0.015), row("disaggregated", 0.20, 0.050)]
    kept = cost_fronts(rows)
    # each mode's own front (0.90 at 30 ms is beaten by 0.80 at 20 ms), merged cheapest first
    assert kept == [rows[4], rows[3], rows[0], rows[1]]


def test_a_request_under_dp_attention_and_a_pipeline_moves_its_cache_over_one_link_per_stage():
    kwargs = dict(model="deepseek-v3", gpu="h200-sxm", isl=4096, osl=1024, concurrency=64, mode="disaggregated",
                  tp=8, ep=8, attention_dp=True)
    one = roofline.serve(**kwargs).iloc[0]["kv_transfer_s"]
    two = roofline.serve(**kwargs, pp=2, prefill_pp=2).iloc[0]["kv_transfer_s"]
    assert two - 5e-6 == pytest.approx((one - 5e-6) / 2, rel=0.01)  # each stage's replica sends its half


def test_an_open_loop_queue_is_not_scaled_by_the_idle_share_twice():
    # M/D/1's utilization already says how often the engine is busy: the residual-step factor 1 - exp(-N) had
    # scaled the queue too (8192-token prompts at 4/s: 0.277 s, against 0.3245 s with the queue whole; 0.3053 s
    # since a step's time per token never grows with its tokens: steps.physical; 0.6818 s since the utilization is
    # the arrivals' share of full steps, 4/s x one full step per prompt = 80% busy, where the requests in flight per
    # step had made it 42%, and vLLM's 30 ms per request)
    ttft = roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=8192, osl=2, request_rate=4.0).iloc[0]
    assert ttft["ttft_expected_s"] == pytest.approx(0.6818, rel=2e-3)


def test_an_open_loop_request_overhead_adds_itself_to_ttft(monkeypatch):
    # the time a request spends outside the steps (the framework's per-request overhead) loads no step: 10 ms more
    # per request is 10 ms more TTFT under Poisson arrivals, near saturation too (it had added 24 ms at 4/s by
    # counting as steps in the prompts' utilization); the TPOT hardly moves (the others' prompts a decode step meets
    # are counted from the requests in flight, which the overhead lengthens)
    from roofline.serving import framework as fw

    def served(request_s):
        monkeypatch.setitem(fw.FITTED, "vllm", (0.0, request_s, 0.125, 0.2, 0.0))
        return roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=8192, osl=2, request_rate=4.0,
                              framework="vllm").iloc[0]

    before, after = served(0.02), served(0.03)
    assert after["ttft_expected_s"] - before["ttft_expected_s"] == pytest.approx(0.010, rel=0.1)
    assert after["tpot_expected_s"] == pytest.approx(before["tpot_expected_s"], rel=0.01)


def test_disaggregated_pools_are_refused_only_where_no_served_gpu_can_hold_them():
    workload = {"isl": 64, "osl": 8, "concurrency": [1], "mode": "disaggregated"}
    gpus = {"h100-sxm": {}, "m3-max": {"peak_tflops": {"fp16": 14}}}  # one device, linked to no other
    config = copy.deepcopy(CONFIG)
    config.update(gpus=gpus, serving={"workloads": [workload]})
    assert resolve_config(config).serving is not None  # the H100 serves; the job names the m3-max it skips
    err = _config_error(gpus={"m3-max": gpus["m3-max"]}, serving={"workloads": [workload]})
    assert err.startswith("serving.workloads[0].prefill_workers / decode_workers: at least 2 devices cannot hand "
                          "caches over between the pools on any served gpu (the devices each reaches: m3-max 1); use "
                          "mode: aggregated or other serving.gpus")
    # prefill_plan: auto (the schema allows it) is the model's plan: it no longer fails on Parallel(**'auto')
    config["serving"] = {"workloads": [{**workload, "prefill_plan": "auto"}]}
    assert resolve_config(config).serving.workloads[0].prefill_plan == "auto"


def test_plan_refuses_attention_dp_balancing_for_a_dense_model(capsys):
    # the search proposes no data-parallel attention for a dense model: the option was accepted, changed nothing
    # and the rows said "off" (serve refuses it on a deployment without attention DP)
    err = _error(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                 "--framework", "trtllm", "--attention-dp-balance")
    assert "--attention-dp-balance: balances prompts over data-parallel attention replicas, and the search " \
           "proposes none for llama-3.1-8b, a dense model" in err


def test_a_draft_model_of_another_vocabulary_is_refused_in_one_line(capsys):
    # Qwen3-8B (151,936 ids) cannot draft for Llama-3.1-70B (128,256): its logits are not the target's token ids
    err = _error(capsys, "serve", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "256",
                 "--concurrency", "4", "--spec-method", "draft", "--spec-tokens", "3", "--spec-acceptance", "0.6",
                 "--spec-draft-model", "qwen3-8b")
    assert "--spec-draft-model: qwen3-8b has a vocabulary of 151936, llama-3.1-70b of 128256; a draft model's " \
           "logits must be the target's token ids one for one" in err


def test_a_refused_searchs_time_counts_its_disaggregated_layouts_and_speculation_at_their_own_rates():
    # a new user's sweep: a search of 7,572,448 candidates (--mode all, --spec-method eagle) read "about 38 s at
    # 200,000 per second" and ran past 270 s: disaggregated layouts evaluate at ~50,000 per second, speculative
    # decoding at ~2.5x the time. 200,000 aggregated + 100,000 disaggregated: 1 s + 2 s, x 2.5 = 7.5 s
    from roofline.serving.search_budget import search_seconds

    assert search_seconds(200_000, 100_000) == pytest.approx(3.0)
    assert search_seconds(200_000, 100_000, speculative=True) == pytest.approx(7.5)
    with pytest.raises(RooflineInputError, match=r"over the limit of 10 \(about 8 s at 40,000 per second\)"):
        check_budget(300_000, 10, "plan", "raise --max-candidates", search_seconds(200_000, 100_000, True))


def test_a_serving_workload_under_tensorrt_llm_on_another_vendors_gpu_is_refused_before_any_job_runs():
    config_gpus = dict(CONFIG["gpus"] or {})
    err = _config_error(gpus={**config_gpus, "mi300x": None},
                        serving={"gpus": ["mi300x"], "workloads": [{"isl": 1024, "osl": 256, "concurrency": [8],
                                                                    "framework": "trtllm"}]})
    assert err == ("serving.workloads[0].framework: trtllm runs on NVIDIA GPUs only, and mi300x is AMD's; choose "
                   "vllm or sglang for it (or drop mi300x from serving.gpus)")


def test_a_served_plan_section_under_tensorrt_llm_on_another_vendors_gpu_is_refused_before_any_job_runs():
    err = _config_error(plan={"gpus": ["mi300x"], "mode": "aggregated", "framework": "trtllm"})
    assert err == ("plan.framework: trtllm runs on NVIDIA GPUs only, and mi300x is AMD's; choose vllm or sglang "
                   "for it")


def test_a_gpu_entry_under_tensorrt_llm_on_another_vendors_gpu_is_refused_by_the_step_model_too():
    # gpus.mi300x.framework: trtllm was accepted unless a served plan search was configured (the step model then
    # priced MI300X on no table, silently); the scenario's framework stays a preference (the default config.yaml
    # lists mi300x beside NVIDIA devices)
    config_gpus = dict(CONFIG["gpus"] or {})
    err = _config_error(gpus={**config_gpus, "mi300x": {"framework": "trtllm"}})
    assert err == ("gpus.mi300x.framework: trtllm runs on NVIDIA GPUs only, and mi300x is AMD's; choose vllm or "
                   "sglang for it")
    config = copy.deepcopy(CONFIG)
    config.update(gpus={**config_gpus, "mi300x": None}, plan=None, serving=None,
                  scenario={**(config.get("scenario") or {}), "framework": "trtllm"})
    assert "mi300x" in resolve_config(config).gpus  # the step model alone: mi300x falls back to its own tables


def test_a_gpu_files_own_framework_is_read_and_checked_by_serve_ops_and_totals(capsys, tmp_path):
    # a --gpu file naming framework: trtllm on an AMD base: ops and totals answered "calibration none" and serve
    # served vLLM (it ignored the entry's framework, which plan honours); now refused in one line by all three, and
    # a file naming sglang on an H100 is served under SGLang with SGLang's tables
    amd = tmp_path / "amd.yaml"
    amd.write_text("amd-trt:\n  base: mi300x\n  framework: trtllm\n")
    line = ("roofline: error: --gpu amd-trt: framework: trtllm runs on NVIDIA GPUs only, and amd-trt is AMD's; "
            "choose vllm or sglang for it")
    for argv in (["totals", "--stage", "decode"], ["ops", "--stage", "prefill"],
                 ["serve", "--isl", "1024", "--osl", "128", "--concurrency", "4"]):
        assert _error(capsys, *argv[:1], "--model", "llama-3.1-8b", "--gpu", str(amd), *argv[1:]).strip() == line
    sglang = tmp_path / "sg.yaml"
    sglang.write_text("h100-sg:\n  base: h100-sxm\n  framework: sglang\n")
    import json

    assert cli.main(["serve", "--model", "llama-3.1-8b", "--gpu", str(sglang), "--isl", "1024", "--osl", "128",
                     "--concurrency", "4", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)
    row = row[0] if isinstance(row, list) else row
    assert row["framework"] == "sglang" and "sglang" in row["calibration"]


def test_a_bad_config_json_is_named_by_the_option_that_gave_it(capsys, tmp_path):
    # a garbled --model file and a missing --spec-draft-model file were named 'hf_config:', the reader's own field
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{")
    err = _error(capsys, "plan", "--model", str(garbled), "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256")
    assert err.startswith(f"roofline: error: --model: file '{garbled}' is not readable JSON")
    err = _error(capsys, "plan", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                 "--spec-method", "draft", "--spec-draft-model", str(tmp_path / "none.json"), "--spec-acceptance",
                 "0.7")
    assert err.startswith(f"roofline: error: --spec-draft-model: file '{tmp_path / 'none.json'}' does not exist")


def test_plan_says_which_mode_of_mode_all_has_no_plan_and_names_a_users_memory_setting(capsys, tmp_path):
    # --mode all with no disaggregated plan meeting the targets printed aggregated rows alone and "--top N shows N of
    # each mode", as if both were there; a --memory-utilization that leaves no room was not named as the cause
    assert cli.main(["plan", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "256",
                     "--tpot-ms", "8", "--ttft-ms", "80", "--mode", "all", "--max-devices", "8", "--top", "3",
                     "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert {line.split(",")[0] for line in captured.out.splitlines()[1:]} == {"llama-3.1-70b"}
    assert "no disaggregated plan fits and meets the targets (--mode disaggregated alone says why)" in captured.err
    assert "no aggregated plan" not in captured.err
    assert cli.main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                     "--memory-utilization", "0.05", "--max-devices", "2", "--format", "csv"]) == 0
    assert capsys.readouterr().err.rstrip().endswith(", or a larger --memory-utilization than 0.05")
    # a --gpu file carrying config.yaml's parallel: says why it is refused
    plan_file = tmp_path / "tp8.yaml"
    plan_file.write_text("h100-tp8:\n  base: h100-sxm\n  parallel: {tp: 8}\n")
    err = _error(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", str(plan_file), "--isl", "1024", "--osl", "256")
    assert "parallel: is a config.yaml gpus: entry's deployment plan; on the command line drop it" in err


def test_a_directory_given_as_gpu_is_called_one(capsys, tmp_path):
    # it read as an unknown catalog key and listed every key
    err = _error(capsys, "totals", "--model", "llama-3.1-8b", "--gpu", str(tmp_path), "--stage", "decode")
    assert err.strip() == (f"roofline: error: --gpu: '{tmp_path}' is a directory; expected a catalog key (roofline "
                           "list gpus) or a YAML/JSON file holding one device as config.yaml's gpus: section writes it")


def test_a_speed_up_that_strays_from_the_bandwidths_says_so():
    # DeepSeek-V3 prefill, 16 x H100 (TP 8, PP 2) against 4 x MI300X (TP 4): "mostly memory-bound, so it follows
    # memory bandwidth ... 1.07x faster" beside 26.8 against 21.2 TB/s (1.26x). Here: 2 x H100 against 4 x RTX A6000,
    # 6.70 against 3.07 TB/s (2.18x), the step 1.80x apart (0.008 / 0.00444; 1.80 / 2.18 = 0.83, past the 10% the
    # sentence allows), 70% of it memory-bound on both: the other 30% named
    import pandas as pd

    from roofline.engine.hardware import get_accelerator
    from roofline.report.text.executive import FOLLOWS_WITHIN, _follows_clause

    rows = pd.DataFrame({"t_s": [0.00444, 0.008], "memory_bound_share": [0.7, 0.7], "network_share": [0.2, 0.2],
                         "tp": [2, 4]}, index=["h100-sxm", "rtx-a6000"])
    names = {"h100-sxm": "2 x H100", "rtx-a6000": "4 x RTX A6000"}
    gpus = {key: get_accelerator(key) for key in rows.index}
    assert _follows_clause(rows, gpus, {}, names) == (
        ", so memory bandwidth sets most of it: by the bound, 2 x H100 (6.70 TB/s over 2 devices) is 1.80× faster "
        "than 4 x RTX A6000 (3.07 TB/s over 4 devices), where the memory bandwidth alone would give 2.18×: the rest "
        "of the time (30%: the collectives and compute-bound operators) does not follow it")
    # within FOLLOWS_WITHIN of 2.18x it follows them, as before
    rows["t_s"] = [0.00444, 0.00444 * 2.18 * (1 - FOLLOWS_WITHIN / 2)]
    assert _follows_clause(rows, gpus, {}, names).startswith(", so it follows memory bandwidth: by the bound")


def test_a_footprint_says_what_it_is_held_against():
    # "170 GB per device of 4 x Instinct MI300X" beside a hardware table in GiB (192 GiB = 206 GB) could not be
    # checked: the usable share (memory_utilization 0.9: 185.5 GB) is now beside it, in the same decimal units
    import pandas as pd

    from roofline.report.text.executive import footprint_parts

    row = pd.Series({"footprint_bytes": 170e9, "usable_memory_bytes": 0.9 * 192 * 2**30, "devices": 4,
                     "deployment": "4 x Instinct MI300X, TP 4", "weight_bytes_per_device": 169e9,
                     "kv_cache_bytes_per_device": 144e6, "activation_bytes": 294e6})
    assert footprint_parts(row) == ("170 GB of 186 GB usable per device of 4 x Instinct MI300X, TP 4 (weights "
                                    "169 GB, KV cache 144 MB, activations 294 MB)")
    assert footprint_parts(row, everywhere=True).startswith("170 GB on every configured GPU (")


def test_the_fastest_setup_says_when_it_rests_on_a_default_estimate():
    # "Fastest setup that fits: prefill 37.5 ms ... on 1 x Instinct MI300X": the pooled fallback's time, ranked
    # against calibrated ones without a word (the served bullet says "a default estimate")
    import pandas as pd

    from roofline.report.text.executive import speed_sentence

    totals = pd.DataFrame({"stage": ["prefill", "decode"], "fits": [True, True], "ttft_s": [0.02, 0.0],
                           "ttft_expected_s": [0.0375, 0.0], "tpot_s": [0.0, 0.003], "tpot_expected_s": [0.0, 0.007],
                           "tokens_per_s_expected": [0.0, 143.0], "deployment": "1 x Instinct MI300X",
                           "estimate": ["default", "calibrated"]})
    text = speed_sentence(totals, {}, {"batch": 1, "seq_len": 2048})
    assert text == ("Fastest setup that fits: prefill 37.5 ms to the first token expected (bound 20.0 ms) on 1 x "
                    "Instinct MI300X for 1 × 2048 prompt tokens (a default estimate, see the caveats); decode 7.00 ms "
                    "per output token expected (bound 3.00 ms) on 1 x Instinct MI300X (143 tokens/s expected at "
                    "batch 1).")


def test_the_caveat_says_a_fallback_devices_collectives_are_at_their_bound():
    # 70B prefill on 4 x RTX A6000 (no table): its all-reduces at exactly the bound, beside 4 x L40S whose measured
    # PCIe all-reduces take 6.4x theirs, ranked the A6000 ahead without a word
    import pandas as pd

    from roofline.engine.hardware import get_accelerator
    from roofline.report.calibration import caveat

    gpus = {key: get_accelerator(key) for key in ("rtx-a6000", "l40s")}
    totals = pd.DataFrame({"gpu": ["rtx-a6000", "l40s"], "framework": ["", "vllm"],
                           "calibration": ["none", "l40s.vllm.csv.gz (aiconfigurator-core 0.12.0, vllm 0.24.0)"],
                           "estimate": ["default", "calibrated"], "devices": [4, 4]})
    text = caveat(gpus, totals)
    assert ("RTX A6000 (no table of their own): the pooled A100/H100 fallback, estimate default, with collectives at "
            "their bound (optimistic: no link of theirs is measured)") in text
    # one device has no collective to price; GPUs that all have tables take no sentence about the fallback
    single = caveat(gpus, totals.assign(devices=[1, 1]))
    assert "RTX A6000 (no table of their own): the pooled A100/H100 fallback, estimate default)" in single
    assert "collectives at their bound" not in single
    tabled = caveat({"l40s": gpus["l40s"]}, totals[totals["gpu"] == "l40s"])
    assert "pooled" not in tabled and "without a table" not in tabled


def test_a_tensor_parallel_lever_past_the_scale_up_domain_says_so():
    # DeepSeek-V3 on 8 x H200 (TP 8): "TP ×2 on 2× devices 1.26×" was TP 16 over two 8-GPU NVLink domains, a plan
    # parallel: auto itself avoids, and the report did not say its collectives cross nodes
    import pandas as pd

    from roofline.engine import hardware, models
    from roofline.engine.parallel import Parallel
    from roofline.engine.scenario import Scenario
    from roofline.engine.treatments import treatment_table
    from roofline.report.decision import best_lever

    scenario = Scenario(parallel=Parallel(tp=8, ep=8), weight_dtype="native")
    rows = pd.DataFrame(treatment_table(models.get_model("deepseek-v3"), hardware.get_accelerator("h200-sxm"),
                                         "prefill", scenario))
    label = rows.set_index("treatment").loc["more_devices", "label"]
    assert label.endswith("; its tensor-parallel group spans 2 scale-up domains of 8")
    top = rows.assign(speedup=rows["treatment"].eq("more_devices") * 9.0 + 1.0)
    assert best_lever(top)["text"] == "double TP (16 devices, across domains) 10.0×"
    inside = pd.DataFrame(treatment_table(models.get_model("llama-3.1-8b"), hardware.get_accelerator("h200-sxm"),
                                           "prefill", Scenario()))
    assert "scale-up" not in inside.set_index("treatment").loc["more_devices", "label"]  # TP 2 of 8: inside


def test_a_speed_up_of_single_devices_names_no_collectives():
    # H100 against A100, one device each, 1.64x the bandwidths apart: the rest of the time is compute-bound
    # operators alone (it said "the collectives and compute-bound operators" with no collective in either step)
    import pandas as pd

    from roofline.engine.hardware import get_accelerator
    from roofline.report.text.executive import _follows_clause

    rows = pd.DataFrame({"t_s": [0.004, 0.0055], "memory_bound_share": [0.7, 0.8], "network_share": [0.0, 0.0],
                         "tp": [1, 1]}, index=["h100-sxm", "a100-sxm-80gb"])
    gpus = {key: get_accelerator(key) for key in rows.index}
    text = _follows_clause(rows, gpus, {}, {"h100-sxm": "H100", "a100-sxm-80gb": "A100"})
    assert text.endswith(": compute-bound operators) does not follow it") and "collectives" not in text
