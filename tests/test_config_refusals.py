"""Config refusals a new user's sweep of config.yaml found missing or misworded (2026-12-05, 271 dry runs): each is
one line before any job runs, naming the key as the file spells it, the value and what is allowed."""
from __future__ import annotations

import jsonschema
import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.pipeline import config as rc
from roofline.pipeline.schema_messages import describe_schema_error
from roofline.serving.serve import Workload, prepare_served, serve_aggregated
from test_hardening_config import ROOT, SCHEMA

BASE = {"models": {"llama-3.1-8b": {}}, "gpus": {"h100-sxm": {}}}


def _schema_line(config: dict) -> str:
    error = next(iter(jsonschema.Draft202012Validator(SCHEMA).iter_errors(config)), None)
    return describe_schema_error(error) if error is not None else ""


def _refusal(config: dict) -> str:
    with pytest.raises(RooflineInputError) as error:
        rc.resolve_config(config)
    return str(error.value)


def test_half_a_scale_up_link_is_refused_where_the_entry_is_read():
    # a domain without its bandwidth had passed the dry run and failed in rule analyze with a traceback ("has no link
    # for 2 devices"); then `parallel: auto` kept such a device to one device without a word, and a scaleup_gbps
    # with no domain (of one device) linked nothing as silently
    device = {"memory_gb": 96, "bandwidth_gbps": 4000, "peak_tflops": {"fp16": 1000, "bf16": 1000}}
    assert _refusal({**BASE, "gpus": {"acme-x1": {**device, "scaleup_domain": 8}}}) == (
        "gpus.acme-x1.scaleup_domain: 8 devices with no scaleup_gbps, so the domain links nothing; give scaleup_gbps "
        "(the link per device and direction, decimal GB/s) or leave scaleup_domain out")
    assert _refusal({**BASE, "gpus": {"acme-x1": {**device, "scaleup_gbps": 32}}}) == (
        "gpus.acme-x1.scaleup_gbps: 32 with a scale-up domain of one device links nothing; give scaleup_domain (the "
        "devices the link joins, e.g. 8)")
    linked = {**device, "scaleup_domain": 8, "scaleup_gbps": 100, "parallel": {"tp": 2}}
    assert rc.resolve_config({**BASE, "gpus": {"acme-x1": linked}}).gpus["acme-x1"].reach == 8
    # a catalog device's own link stays; a domain of one on it is a plain single-device choice
    assert rc.resolve_config({**BASE, "gpus": {"h100-sxm": {"scaleup_domain": 1}}}).gpus["h100-sxm"].scaleup_domain == 1


@pytest.mark.parametrize("entry, message", [
    ({"memory_gb": 24, "bandwidth_gbps": 300, "peak_tflops": {"bf16": 0.121}},  # L4's peak in PFLOP/s
     "gpus.x: peak_tflops.bf16 0.121 over bandwidth_gbps 300 is a ridge of 0.403 FLOP/byte"),
    ({"base": "h100-sxm", "bandwidth_gbps": 3.35},  # TB/s
     "gpus.x: peak_tflops.fp8 1978.9 over bandwidth_gbps 3.35 is a ridge of 5.91e+05 FLOP/byte"),
])
def test_a_peak_or_bandwidth_in_a_unit_1000x_off_is_refused_by_its_ridge(entry, message):
    # each figure alone lay in its plausible range, so the L4 at 0.4 FLOP/byte was "compute-bound" at decode
    line = _refusal({**BASE, "gpus": {"x": entry}})
    assert line.startswith(message) and line.endswith("real devices lie between 1 and 50,000 (H100 SXM bf16: 295): "
                                                      "check the units (dense TFLOP/s, decimal GB/s)"), line


@pytest.mark.parametrize("plan, message", [
    ({"tp": 3}, "tp 3 does not divide the 32 attention heads of llama-3.1-8b"),
    ({"tp": 2, "ep": 4}, "ep/attention_dp need a mixture-of-experts model; llama-3.1-8b is dense"),
])
def test_a_prefill_plan_the_model_cannot_run_is_refused_before_the_job_writes_an_empty_table(plan, message):
    workload = {"isl": 1024, "osl": 1024, "concurrency": [1, 8], "mode": "disaggregated"}
    line = _refusal({**BASE, "serving": {"workloads": [{**workload, "prefill_plan": plan}]}})
    assert line.startswith(f"serving.workloads[0].prefill_plan: {message}") and line.endswith(
        "(models.llama-3.1-8b)")
    assert rc.resolve_config({**BASE, "serving": {"workloads": [{**workload, "prefill_plan": {"tp": 2}}]}})


@pytest.mark.parametrize("publish, key", [
    ({"branch": "../../evil"}, "publish.branch"), ({"branch": "--force"}, "publish.branch"),
    ({"branch": "wiki.lock"}, "publish.branch"), ({"git": "--upload-pack=touch x"}, "publish.git"),
    ({"git": "ext::sh -c touch% x"}, "publish.git"),
])
def test_publish_settings_git_would_refuse_are_refused_before_the_build(publish, key):
    # `snakemake publish` builds everything first; these had failed only at the push step
    assert _refusal({**BASE, "publish": publish}).startswith(f"{key}: {publish[key.split('.')[1]]!r} is not allowed")


def test_publish_settings_of_real_wikis_pass():
    for publish in ({"git": "git@github.com:org/project.wiki.git", "branch": "master"},
                    {"git": "https://example.org/wiki.git", "branch": "release/1.2"}, {"git": "/srv/wiki.git"}):
        assert rc.resolve_config({**BASE, "publish": publish})


def test_the_framework_named_is_the_key_that_set_it():
    serving = {"workloads": [{"isl": 1024, "osl": 1024, "concurrency": [1]}]}
    amd = {**BASE, "gpus": {"mi300x": {}}}
    assert _refusal({**amd, "serving": {**serving, "framework": "trtllm"}}).startswith(
        "serving.framework: trtllm runs on NVIDIA GPUs only")
    entry = {**serving["workloads"][0], "framework": "trtllm"}
    assert _refusal({**amd, "serving": {"workloads": [entry]}}).startswith(
        "serving.workloads[0].framework: trtllm runs on NVIDIA GPUs only")


def test_speculative_settings_are_named_by_their_config_keys():
    # '--spec-acceptance / --spec-accepted-length' and '(--spec-tokens + 1)' had leaked from the command line
    eagle = {"isl": 1024, "osl": 1024, "concurrency": [1], "spec_method": "eagle"}
    line = _refusal({**BASE, "serving": {"workloads": [eagle]}})
    assert line.startswith("serving.workloads[0].spec_acceptance / spec_accepted_length: give exactly one of the two "
                           "with spec_method eagle") and "--" not in line
    line = _refusal({**BASE, "serving": {"workloads": [{**eagle, "spec_accepted_length": 9}]}})
    assert "(spec_tokens + 1)" in line and "--" not in line


@pytest.mark.parametrize("config, line", [
    ({"serving": {"framework": "trtllm", "workloads": [{"isl": 1, "osl": 1, "concurrency": [1],
                                                        "batch_wait": True}]}},
     "serving.workloads[0].batch_wait: true is not allowed; expected array or false"),
    ({"serving": {"framework": "trtllm", "workloads": [{"isl": 1, "osl": 1, "concurrency": [1],
                                                        "attention_dp_balance": [1, 2, 3]}]}},
     "serving.workloads[0].attention_dp_balance: [1, 2, 3] is not allowed; at most 2 items"),
    ({"serving": {"workloads": [{"isl": 1, "osl": 1, "concurrency": [8, 8]}]}},
     "serving.workloads[0].concurrency: [8, 8] lists a value more than once; give each once"),
    ({"scenario": None}, "scenario: empty (YAML reads a key with nothing under it as null); give its keys or delete "
                         "the line"),
    ({"stages": ["prefill", False]}, "stages[1]: false is not allowed; expected string (YAML reads yes/no/on/off as "
                                     "true/false: quote the word)"),
    ({"plan": {"fp8_scaling": "blocks"}}, "plan.fp8_scaling: unknown value 'blocks' (did you mean 'block'?); allowed: "
                                          "block, null, tensor"),
])
def test_schema_lines_say_what_is_allowed_in_the_files_words(config, line):
    assert _schema_line({**BASE, **config}) == line


def test_a_row_shows_balancing_only_where_replicas_balance():
    # a dense model's plan has no attention-DP replicas: its row had said attention_dp_balance "60,0"
    served = prepare_served(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"),
                            Scenario(parallel=Parallel(tp=1)), framework="trtllm", dp_balance=(60, 0))
    assert serve_aggregated(served, Workload(isl=128, osl=16, concurrency=4))["attention_dp_balance"] == "off"


def test_keys_and_entries_that_would_collide_or_change_nothing():
    # a model page home.md is the wiki's Home.md on case-insensitive file systems and wikis
    assert _refusal({**BASE, "models": {"home": {}}}) == ("models: key 'home' is reserved (the wiki's Home.md is a "
                                                          "page of its own); rename the model")
    # one file twice counted its runs twice (checked before either is read: these need not exist)
    assert _refusal({**BASE, "measurements": ["runs.csv", "./runs.csv"]}) == (
        "measurements: './runs.csv' is listed more than once; list each file once")
    assert _refusal({**BASE, "gpus": {"h100-sxm": {"calibration_any_device": True}}}).startswith(
        "gpus.h100-sxm.calibration_any_device: applies the entry's own calibration table, and it gives none")


def test_a_draft_model_may_be_a_config_json_beside_the_config(tmp_path):
    # the message offered "the path of a config.json", and a path was refused as an unknown catalog key; a relative
    # path starts at the config's folder, as models' hf_config does, and reaches the jobs absolute
    draft = ROOT / "tests" / "data" / "hf_configs" / "llama-3.1-8b.json"
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "small.json").write_text(draft.read_text())
    workload = {"isl": 1024, "osl": 256, "concurrency": [1], "spec_method": "draft", "spec_acceptance": 0.7,
                "spec_draft_model": "drafts/small.json"}
    config = {"models": {"llama-3.1-70b": {}}, "gpus": {"h100-sxm": {}}, "serving": {"workloads": [workload]}}
    resolved = rc.resolve_config(config, tmp_path).serving.workloads[0]
    assert resolved.spec_draft_model == str(tmp_path / "drafts" / "small.json")
    assert resolved.speculation(get_model("llama-3.1-70b")).draft_model.n_layers == 32
    missing = {**workload, "spec_draft_model": "drafts/none.json"}
    assert _refusal({**config, "serving": {"workloads": [missing]}}).startswith(
        "serving.workloads[0].spec_draft_model: ")


def test_a_measurements_file_without_runs_is_refused(tmp_path):
    # a header alone had been accepted, and the report showed no measured point without saying why
    header = "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,tokens_per_s\n"
    (tmp_path / "runs.csv").write_text(header)
    (tmp_path / "bench.json").write_text("[]")
    for name in ("runs.csv", "bench.json"):
        with pytest.raises(RooflineInputError, match=rf"^measurements: file '{name}' holds no run; add one row"):
            rc.resolve_config({**BASE, "measurements": name}, tmp_path)
    (tmp_path / "runs.csv").write_text(header + "llama-3.1-8b,h100-sxm,1,1024,256,8,50,10,700\n")
    assert len(rc.resolve_config({**BASE, "measurements": "runs.csv"}, tmp_path).measurements) == 1


@pytest.mark.parametrize("hit, words", [(1, "< 1"), (1.5, "< 1"), (-0.1, ">= 0")])
def test_a_workload_prefix_hit_outside_zero_to_below_one_is_refused_by_the_schema(hit, words):
    # a prompt wholly in the cache computes nothing: the share is below 1, as --prefix-hit's
    workload = {"isl": 1024, "osl": 128, "concurrency": [4], "prefix_hit": hit}
    line = _schema_line({**BASE, "serving": {"workloads": [workload]}})
    assert line.startswith(f"serving.workloads[0].prefix_hit: {hit!r} is not allowed; must be {words}")


def test_names_and_links_are_on_one_line_and_config_paths_hold_no_braces(tmp_path):
    # a line break in a display name started a heading of its own in the wiki's pages; braces in a path reached
    # Snakemake as a wildcard after the config had been accepted
    assert _schema_line({**BASE, "models": {"llama-3.1-8b": {"name": "L8\n# injected"}}}) == (
        "models.llama-3.1-8b.name: 'L8\\n# injected' is not allowed; write it on one line, without line breaks, tabs "
        "or other control characters")
    assert _schema_line({**BASE, "gpus": {"h100-sxm": {"scaleup_link": "NV\tlink"}}}).startswith(
        "gpus.h100-sxm.scaleup_link: 'NV\\tlink' is not allowed; write it on one line")
    braced = {**BASE, "gpus": {"h100-sxm": {"calibration": str(tmp_path / "cal{gpu}.csv")}}}
    assert _refusal(braced).startswith(f"gpus.h100-sxm.calibration: '{tmp_path}/cal{{gpu}}.csv' holds '{{' or '}}', "
                                       "which Snakemake reads as a wildcard")


def test_a_compare_with_table_this_tool_did_not_write_is_refused_before_any_job(tmp_path):
    # the check had looked for the file alone: the compare job then failed after the whole grid had run
    import pandas as pd

    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "totals.parquet").write_text("junk")
    assert "cannot be read as parquet" in _refusal({**BASE, "compare_with": str(tmp_path / "junk")})
    (tmp_path / "foreign").mkdir()
    pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "foreign" / "totals.parquet")
    assert "is not a table this tool wrote (no column 'model')" in _refusal(
        {**BASE, "compare_with": str(tmp_path / "foreign")})


def test_a_workload_listed_twice_is_refused_as_a_concurrency_listed_twice_is():
    # the two had doubled every row of results/serving/{model}.parquet
    workload = {"isl": 1024, "osl": 256, "concurrency": [1, 16]}
    line = _schema_line({**BASE, "serving": {"workloads": [workload, dict(workload)]}})
    assert line.startswith("serving.workloads: ") and line.endswith("lists a value more than once; give each once")


def test_a_plan_section_that_searches_devices_gpus_does_not_list_says_so():
    config = {**BASE, "plan": {"isl": 1024, "osl": 256, "gpus": ["h100-sxm", "h200-sxm"]}}
    assert rc.resolve_config(config).plan_beyond_gpus().startswith(
        "plan.gpus searches h200-sxm, which gpus: does not list")
    assert rc.resolve_config({**config, "plan": {"isl": 1024, "osl": 256}}).plan_beyond_gpus() == ""


def test_the_serving_sections_framework_follows_the_scenarios_as_the_plan_sections_does():
    serving = {"workloads": [{"isl": 1024, "osl": 256, "concurrency": [4]}]}
    resolved = rc.resolve_config({**BASE, "scenario": {"framework": "sglang"}, "serving": serving})
    assert resolved.serving.framework == "sglang" and resolved.serving.workloads[0].framework == "sglang"
    resolved = rc.resolve_config({**BASE, "scenario": {"framework": "sglang"},
                                  "serving": {**serving, "framework": "trtllm"}})
    assert resolved.serving.workloads[0].framework == "trtllm"
    assert rc.resolve_config({**BASE, "serving": serving}).serving.framework == "vllm"
    # a scenario's trtllm beside an AMD device: the single steps use it where tables exist; serving stays valid
    mixed = {**BASE, "gpus": {"h100-sxm": {}, "mi300x": {}}, "scenario": {"framework": "trtllm"}, "serving": serving}
    assert rc.resolve_config(mixed).serving.framework == "vllm"


def test_a_list_where_a_mapping_is_wanted_shows_the_mapping():
    # "gpus: ['h100-sxm', 'l40s'] is not allowed; expected object" is the first mistake many make
    assert _schema_line({**BASE, "gpus": ["h100-sxm", "l40s"]}) == (
        "gpus: ['h100-sxm', 'l40s'] is a list; expected a mapping of keys to entries, e.g. {h100-sxm: {}, l40s: {}} "
        "(one per line: '  h100-sxm: {}')")
    assert _schema_line({**BASE, "serving": {}}) == "serving: needs the key 'workloads'"


def test_a_workload_refusal_names_a_model_only_where_the_model_is_the_reason():
    two = {**BASE, "models": {"llama-3.1-8b": {}, "qwen2.5-7b": {}}}
    alike = {"isl": 1024, "osl": 256, "concurrency": [4], "mode": "disaggregated", "framework": "trtllm",
             "batch_wait": [20, 0.9]}
    line = _refusal({**two, "serving": {"workloads": [alike]}})
    assert line.startswith("serving.workloads[0].batch_wait") and "(models." not in line
    # a prompt past one model's context (Llama-2-7B's 4,096 positions; Llama-3.1-8B's 131,072)
    long = {"isl": 8000, "osl": 256, "concurrency": [1]}
    mixed = {**BASE, "models": {"llama-3.1-8b": {}, "llama-2-7b": {}}, "serving": {"workloads": [long]}}
    assert _refusal(mixed).endswith("(models.llama-2-7b)")


def test_where_serving_and_plan_both_give_a_workload_the_served_numbers_take_servings():
    plan = {"isl": 4096, "osl": 512, "framework": "trtllm"}
    serving = {"framework": "sglang", "workloads": [{"isl": 1024, "osl": 256, "concurrency": [4]}]}
    resolved = rc.resolve_config({**BASE, "plan": plan, "serving": serving})
    assert (resolved.serving.workloads[0].isl, resolved.plan_search.workload.isl) == (1024, 4096)
    assert resolved.served_framework() == "sglang"  # a measured run that names none is served as the section says
    assert rc.resolve_config({**BASE, "plan": plan}).served_framework() == "trtllm"


def test_speculation_on_a_one_token_output_is_refused_in_the_config_as_on_the_command_line():
    workload = {"isl": 1024, "osl": 1, "concurrency": [4], "spec_method": "ngram", "spec_acceptance": 0.5}
    assert _refusal({**BASE, "serving": {"workloads": [workload]}}).startswith(
        "serving.workloads[0].spec_method: a request of osl 1 has no decode step to speculate on")
