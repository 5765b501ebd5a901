"""roofline.pipeline.config: the config.yaml -> specs resolution and its one-line errors, and the JSON schema."""
import copy
import json
import typing
from dataclasses import asdict, fields
from pathlib import Path

import jsonschema
import pytest
import yaml

from roofline.engine.analysis import required_peak_dtypes
from roofline.engine.dtypes import STORAGE_DTYPES
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.hardware import Accelerator, get_accelerator
from roofline.engine.models import MAX_DIMENSION, ModelSpec, get_model
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import STAGES, Scenario
from roofline.pipeline import config as rc
from roofline.pipeline.schema import coerce_strings, load_schema
from roofline.pipeline.schema_messages import describe_schema_error

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())
HF_LLAMA = ROOT / "tests" / "data" / "hf_configs" / "llama-2-7b.json"


def small(**sections) -> dict:
    """A valid config with sections replaced."""
    cfg = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}, "rtx-a6000": {}}, "stages": ["prefill", "decode"],
           "scenario": {}}
    cfg.update(sections)
    return cfg


def schema_errors(cfg: dict) -> list[str]:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    return [describe_schema_error(error) for error in validator.iter_errors(cfg)]


# ------------------------------------------------------------------------------------------- the default config
def test_default_config_is_valid_and_resolves_the_issue_grid():
    assert schema_errors(DEFAULT) == []
    resolved = rc.resolve_config(DEFAULT, ROOT)
    assert list(resolved.models) == ["llama-2-7b", "llama-3.1-8b", "qwen2.5-7b", "llama-3.1-70b", "mixtral-8x7b",
                                     "deepseek-v3"]
    assert list(resolved.gpus) == ["rtx-a6000", "a100-sxm-80gb", "h100-sxm", "h200-sxm", "mi300x", "l40s"]
    assert resolved.stages == ("prefill", "decode")
    # the default scenario of config.yaml is the engine's default, with deployments planned (parallel: auto)
    assert resolved.scenario == Scenario(parallel="auto")
    # auto: single devices where the model fits, tensor parallelism where it does not
    assert resolved.plans["llama-2-7b"]["h100-sxm"] == Parallel()
    assert resolved.plans["llama-3.1-70b"]["h100-sxm"] == Parallel(tp=2)
    assert resolved.plans["llama-3.1-70b"]["rtx-a6000"] == Parallel(tp=4)
    assert resolved.models["mixtral-8x7b"] == get_model("mixtral-8x7b")
    assert resolved.gpus["h100-sxm"] == get_accelerator("h100-sxm")


def test_test_config_is_a_tiny_grid():
    cfg = yaml.safe_load((ROOT / ".test" / "config.yaml").read_text())
    assert schema_errors(cfg) == []
    resolved = rc.resolve_config(cfg, ROOT)
    assert len(resolved.models) >= 2  # tests/test_workflow.py edits one model and checks the other is left alone
    assert len(resolved.models) * len(resolved.gpus) * len(resolved.stages) <= 8


def test_specs_are_json_and_rebuild_the_dataclasses():
    resolved = rc.resolve_config(small(gpus={"a100-sxm-80gb": {"bandwidth_gbps": 1935}}), ROOT)
    specs = json.loads(json.dumps(resolved.specs()))
    assert set(specs) == {"models", "gpus", "scenario", "stages", "plans", "config_sha256"}
    assert Parallel(**specs["plans"]["llama-2-7b"]["a100-sxm-80gb"]) == resolved.plans["llama-2-7b"]["a100-sxm-80gb"]
    assert ModelSpec(**specs["models"]["llama-2-7b"]) == resolved.models["llama-2-7b"]
    assert Accelerator(**specs["gpus"]["a100-sxm-80gb"]) == resolved.gpus["a100-sxm-80gb"]
    # specs.json holds the scenario the jobs ran: weight_dtype "native" resolved where every model resolves alike
    assert Scenario(**specs["scenario"]) == resolved.scenario.for_model(resolved.models["llama-2-7b"])
    assert specs["stages"] == ["prefill", "decode"]
    assert resolved.model_params("llama-2-7b") == asdict(resolved.models["llama-2-7b"])


def test_model_specs_hold_one_model_and_change_only_with_what_that_model_depends_on():
    resolved = rc.resolve_config(small(models={"llama-2-7b": {}, "qwen2.5-7b": {}}), ROOT)
    specs, one = resolved.specs(), resolved.model_specs("qwen2.5-7b")
    assert set(one) == set(specs) and list(one["models"]) == ["qwen2.5-7b"]
    assert one["models"]["qwen2.5-7b"] == specs["models"]["qwen2.5-7b"]
    assert all(one[k] == specs[k] for k in ("gpus", "scenario", "stages"))
    assert len(one["config_sha256"]) == 64 and one["config_sha256"] != specs["config_sha256"]
    renamed = rc.resolve_config(small(models={"llama-2-7b": {"name": "L"}, "qwen2.5-7b": {}}), ROOT)
    assert renamed.model_specs("qwen2.5-7b") == one and renamed.specs() != specs
    assert renamed.model_specs("llama-2-7b") != resolved.model_specs("llama-2-7b")
    faster = rc.resolve_config(small(models={"llama-2-7b": {}, "qwen2.5-7b": {}},
                                     gpus={"h100-sxm": {"bandwidth_gbps": 3000}, "rtx-a6000": {}}), ROOT)
    assert faster.model_specs("qwen2.5-7b")["config_sha256"] != one["config_sha256"]


def test_config_sha256_follows_the_resolved_values_only():
    a = rc.resolve_config(small(), ROOT).config_sha256
    assert a == rc.resolve_config(small(), ROOT).config_sha256 and len(a) == 64
    # spelling the catalog value out changes the YAML, not the resolved spec
    same = small(gpus={"h100-sxm": {"bandwidth_gbps": 3350}, "rtx-a6000": {}})
    assert rc.resolve_config(same, ROOT).gpus["h100-sxm"].bandwidth_bytes_per_s == 3.35e12
    other = small(gpus={"h100-sxm": {"bandwidth_gbps": 3000}, "rtx-a6000": {}})
    assert rc.resolve_config(other, ROOT).config_sha256 != a
    assert rc.resolve_config(small(scenario={"batch": 2}), ROOT).config_sha256 != a


def test_catalog_override_changes_only_that_field():
    resolved = rc.resolve_config(small(gpus={"a100-sxm-80gb": {"bandwidth_gbps": 1935}}), ROOT)
    gpu, base = resolved.gpus["a100-sxm-80gb"], get_accelerator("a100-sxm-80gb")
    assert gpu.bandwidth_bytes_per_s == 1935e9  # decimal GB/s -> byte/s
    assert (gpu.memory_bytes, gpu.peak_flops_per_s, gpu.name) == (base.memory_bytes, base.peak_flops_per_s, base.name)


def test_new_accelerator_from_a_few_lines():
    entry = {"name": "ACME X1", "memory_gb": 96, "bandwidth_gbps": 4000,
             "peak_tflops": {"bf16": 1200, "fp16": 1200, "fp8": 2400, "int8": 2400}}
    assert schema_errors(small(gpus={"acme-x1": entry})) == []
    gpu = rc.resolve_config(small(gpus={"acme-x1": entry}), ROOT).gpus["acme-x1"]
    assert (gpu.name, gpu.memory_bytes, gpu.bandwidth_bytes_per_s) == ("ACME X1", 96 * 2**30, 4e12)  # GB read as GiB
    assert gpu.peak_flops_per_s == {"bf16": 1.2e15, "fp16": 1.2e15, "fp8": 2.4e15, "int8": 2.4e15}


def test_hf_config_path_is_relative_to_the_working_directory(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text(HF_LLAMA.read_text())
    cfg = small(models={"my-model": {"hf_config": "cfg/config.json", "max_position": 8192}})
    assert schema_errors(cfg) == []
    model = rc.resolve_config(cfg, tmp_path).models["my-model"]
    assert model.key == "my-model" and model.max_position == 8192
    assert (model.n_layers, model.hidden, model.n_kv_heads) == (32, 4096, 32)


# ------------------------------------------------------------------------------------------------ rejections
BAD = {
    "unknown gpu": (small(gpus={"h100-sxn": {}}), ["gpus", "'h100-sxn'", "did you mean 'h100-sxm'"]),
    "unknown gpu with a field": (small(gpus={"h100-sxn": {"bandwidth_gbps": 3000}}), ["did you mean 'h100-sxm'"]),
    "unknown model": (small(models={"llama-2-7bb": {}}), ["models", "did you mean 'llama-2-7b'", "hf_config"]),
    "new gpu without peaks": (small(gpus={"acme-x1": {"memory_gb": 96, "bandwidth_gbps": 4000}}),
                              ["gpus.acme-x1", "peak_tflops"]),
    "negative bandwidth": (small(gpus={"h100-sxm": {"bandwidth_gbps": -1}}),
                           ["gpus.h100-sxm.bandwidth_gbps", "-1", "positive"]),
    "zero peak": (small(gpus={"h100-sxm": {"peak_tflops": {"fp16": 0}}}), ["peak_tflops.fp16", "positive"]),
    "zero memory": (small(gpus={"h100-sxm": {"memory_gb": 0}}), ["memory_gb", "positive"]),
    "device without the dtype": (small(scenario={"weight_dtype": "fp8", "act_dtype": "fp8"}),
                                 ["gpus.rtx-a6000", "no fp8 peak", "publishes"]),
    "longer than the context": (small(scenario={"seq_len": 4096}),
                                ["models.llama-2-7b", "seq_len: 4096 is not allowed", "decode", "4097 positions"]),
    "unknown dtype": (small(scenario={"kv_dtype": "fp9"}), ["scenario.kv_dtype", "'fp9'", "did you mean"]),
    "missing hf_config": (small(models={"mine": {"hf_config": "nope/config.json"}}),
                          ["models.mine.hf_config", "nope/config.json", "does not exist"]),
    "parent path key": (small(models={"../evil": {}}), ["models", "'../evil'", "not allowed"]),
    "slash in a gpu key": (small(gpus={"a/b": {}}), ["gpus", "'a/b'"]),
    "markup key": (small(gpus={"<script>": {}}), ["gpus", "'<script>'"]),
    "hidden-file key": (small(models={".hidden": {}}), ["'.hidden'"]),
    "uppercase key": (small(models={"Llama-2-7b": {}}), ["'Llama-2-7b'"]),
    "reserved model key": (small(models={"summary": {}}), ["'summary' is reserved"]),
    "unknown stage": (small(stages=["prefil"]), ["stage", "did you mean 'prefill'"]),
    "stage twice": (small(stages=["decode", "decode"]), ["stages", "twice"]),
    "no models": (small(models={}), ["models", "empty"]),
    "unknown section": ({**small(), "gpu": {}}, ["config", "'gpu'", "did you mean 'gpus'"]),
    "unknown scenario field": (small(scenario={"bach": 2}), ["scenario", "did you mean 'batch'"]),
}


@pytest.mark.parametrize("name", BAD)
def test_resolve_config_rejects_with_one_line(name):
    cfg, fragments = BAD[name]
    with pytest.raises(RooflineInputError) as info:
        rc.resolve_config(copy.deepcopy(cfg), ROOT)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


@pytest.mark.parametrize("key", ["../evil", "a/b", "<script>", ".hidden", "-rf", "UPPER", "a b", "", "x\n"])
def test_unsafe_keys_are_refused(key):
    with pytest.raises(RooflineInputError):
        rc.check_key("models", key)


def test_long_keys_are_refused_with_one_line():
    with pytest.raises(RooflineInputError) as info:
        rc.check_key("gpus", "a" * (rc.MAX_KEY_LENGTH + 1))
    assert "\n" not in str(info.value) and f"at most {rc.MAX_KEY_LENGTH} characters" in str(info.value)
    assert rc.check_key("gpus", "a" * rc.MAX_KEY_LENGTH) == "a" * rc.MAX_KEY_LENGTH


@pytest.mark.parametrize("key", ["llama-2-7b", "qwen2.5-7b", "my_model", "a100-sxm-80gb", "x1"])
def test_safe_keys_pass(key):
    assert rc.check_key("gpus", key) == key


@pytest.mark.parametrize("weight, act, kv", [("fp16", "fp16", "fp16"), ("int4", "fp16", "fp16"),
                                             ("int8", "int8", "int8"), ("fp8", "fp8", "fp16"),
                                             ("fp16", "fp16", "fp8"), ("fp32", "bf16", "bf16")])
def test_required_peaks_are_the_dtypes_the_engine_computes_at(weight, act, kv):
    scenario = Scenario(weight_dtype=weight, act_dtype=act, kv_dtype=kv)
    used = set()
    for model in ("llama-2-7b", "deepseek-v3"):
        for stage in STAGES:
            used |= {op.compute_dtype for op in build_operators(get_model(model), stage, scenario)}
    assert set(required_peak_dtypes(scenario)) == used


# ----------------------------------------------------------------------------------------------------- schema
def _walk(schema, path="config"):
    """Yield (path, subschema) for every property the schema declares."""
    for name, sub in schema.get("properties", {}).items():
        yield f"{path}.{name}", sub
        yield from _walk(sub, f"{path}.{name}")
    for name, sub in schema.get("$defs", {}).items():
        yield from _walk(sub, f"$defs.{name}")


@pytest.mark.parametrize("path, sub", list(_walk(SCHEMA)), ids=lambda value: value if isinstance(value, str) else "")
def test_every_schema_key_has_a_type_and_a_description(path, sub):
    assert "description" in sub, path
    assert "type" in sub or "$ref" in sub or "enum" in sub, path


def test_schema_defaults_are_the_engine_defaults():
    props = SCHEMA["properties"]
    # config and CLI plan deployments (parallel: auto); the dataclass default stays one device for direct engine calls
    assert {k: v["default"] for k, v in props["scenario"]["properties"].items()} == asdict(Scenario(parallel="auto"))
    assert props["stages"]["default"] == list(STAGES)
    assert props["stages"]["items"]["enum"] == list(STAGES)
    assert SCHEMA["$defs"]["dtype"]["enum"] == list(STORAGE_DTYPES)
    assert set(SCHEMA["required"]) == {"models", "gpus"}


def test_schema_model_entry_lists_every_modelspec_field():
    declared = set(SCHEMA["$defs"]["model_entry"]["properties"])
    assert declared == {f.name for f in fields(ModelSpec)} - {"key"} | {"hf_config"}
    # no default inside an entry: validate() would write it over the catalog value
    assert not any("default" in sub for sub in SCHEMA["$defs"]["model_entry"]["properties"].values())
    assert not any("default" in sub for sub in SCHEMA["$defs"]["gpu_entry"]["properties"].values())


def test_schema_gpu_entry_fields_are_the_ones_the_engine_reads():
    from roofline.estimate.calibration import shipped_path

    entry = {"name": "X", "vendor": "V", "source": "s", "memory_gb": 1, "bandwidth_gbps": 1, "l2_mb": 1,
             "peak_tflops": {"fp16": 1}, "scaleup_link": "L", "scaleup_gbps": 100, "scaleup_domain": 4,
             "scaleout_gbps": 50, "scaleup_latency_us": 2, "scaleout_latency_us": 8, "in_network_reduction": True,
             "calibration": str(shipped_path("h100-sxm")), "calibration_any_device": True,  # new hardware: any chip
             "tdp_w": 700, "power_w": 550, "price_per_hour": 2.5, "framework": "vllm"}
    # `parallel` is read by the config layer (the deployment plan), every other field by the engine
    assert set(entry) | {"parallel", "base"} == set(SCHEMA["$defs"]["gpu_entry"]["properties"])
    gpu = rc.resolve_gpu("x", entry)
    assert gpu.l2_bytes == 1e6 and gpu.link(4) == (100e9, 2e-6) and gpu.link(8) == (50e9, 8e-6)
    assert gpu.framework == "vllm" and gpu.in_network_reduction
    assert not rc.resolve_gpu("a100-sxm-80gb", {}).in_network_reduction
    assert not rc.resolve_gpu("h100-sxm", {"in_network_reduction": False}).in_network_reduction
    # a measured bandwidth of the same link keeps it; another link reduces only when the entry says so
    assert rc.resolve_gpu("h100-sxm", {"scaleup_gbps": 400}).in_network_reduction
    same = rc.resolve_gpu("h100-sxm", {"in_network_reduction": True, "scaleup_gbps": 450})  # the catalog's own values
    assert same.source == rc.resolve_gpu("h100-sxm", {}).source and "changed by" not in same.source
    # the entry may come from a --configfile or a --gpu file, not config.yaml: the source says a gpus: entry
    assert rc.resolve_gpu("h100-sxm", {"scaleup_gbps": 400}).source.endswith("(some figures changed by a gpus: entry)")
    assert rc.resolve_gpu("x", {"memory_gb": 1, "bandwidth_gbps": 1, "peak_tflops": {"fp16": 1}}).source == (
        "user-defined (a gpus: entry)")
    assert not rc.resolve_gpu("x", {"base": "h100-sxm", "scaleup_link": "PCIe Gen5 x16",
                                    "scaleup_gbps": 64}).in_network_reduction
    assert rc.resolve_gpu("y", {"base": "h100-sxm", "scaleup_link": "NVLink 4 (NVL16)",
                                "in_network_reduction": True}).in_network_reduction
    with pytest.raises(RooflineInputError, match=r"gpus.h100-sxm.in_network_reduction: 'yes' is not allowed; "
                                                 r"expected true or false"):
        rc.resolve_gpu("h100-sxm", {"in_network_reduction": "yes"})


SCHEMA_BAD = {
    "enum with a suggestion": (small(scenario={"weight_dtype": "fp9"}),
                               "scenario.weight_dtype: unknown value 'fp9' (did you mean 'fp8'?)"),
    "unknown gpu field": (small(gpus={"h100-sxm": {"bandwith_gbps": 1}}),
                          "gpus.h100-sxm: unknown key 'bandwith_gbps' (did you mean 'bandwidth_gbps'?)"),
    "negative bandwidth": (small(gpus={"h100-sxm": {"bandwidth_gbps": -5}}),
                           "gpus.h100-sxm.bandwidth_gbps: -5 is not allowed; must be > 0"),
    "batch zero": (small(scenario={"batch": 0}), "scenario.batch: 0 is not allowed; must be >= 1"),
    "batch text": (small(scenario={"batch": "x"}), "scenario.batch: 'x' is not allowed; expected integer"),
    "hostile key": (small(models={"../evil": {}}), "models: key '../evil' is not allowed"),
    "peak dtype": (small(gpus={"x": {"peak_tflops": {"fp9": 1}}}), "gpus.x.peak_tflops: unknown value 'fp9'"),
    "missing gpus": ({"models": {"llama-2-7b": {}}}, "config: needs the key 'gpus'"),
    # a 250-character key once passed the schema and failed at run time with OSError: File name too long
    "long model key": (small(models={"m" * 250: {}}), "models: key 'mmmmmmmmmmmmmmmmmmmmmmmm...' (250 characters) "
                                                       "is too long; keys have at most 64 characters"),
    "long gpu key": (small(gpus={"g" * 65: {"memory_gb": 1, "bandwidth_gbps": 1, "peak_tflops": {"fp16": 1}}}),
                     "gpus: key 'gggggggggggggggggggggggg...' (65 characters) is too long"),
    "long model name": (small(models={"llama-2-7b": {"name": "N" * 121}}),
                        "models.llama-2-7b.name: 'NNNNNNNNNNNNNNNNNNNNNNNN...' (121 characters) is too long; at most "
                        "120 characters"),
    "long gpu name": (small(gpus={"h100-sxm": {"name": "N" * 300}}), "gpus.h100-sxm.name: 'NNNNNNNNNNNNNNNNNNNNNNNN"),
    "empty gpu name": (small(gpus={"h100-sxm": {"name": ""}}), "gpus.h100-sxm.name: ''"),
    "norms per layer": (small(models={"llama-2-7b": {"norms_per_layer": 3}}),
                        "models.llama-2-7b.norms_per_layer: 3 is not allowed; allowed: 1, 2, 4"),
    "huge n_layers": (small(models={"llama-2-7b": {"n_layers": 2**24 + 1}}),
                      "models.llama-2-7b.n_layers: 16777217 is not allowed; must be <= 16777216"),
    "huge vocab": (small(models={"llama-2-7b": {"vocab": 10**9}}), "models.llama-2-7b.vocab: 1000000000 is not"),
    "huge max_position": (small(models={"llama-2-7b": {"max_position": 2**31}}),
                          "models.llama-2-7b.max_position: 2147483648 is not allowed; must be <= 16777216"),
    "huge sliding_window": (small(models={"llama-2-7b": {"sliding_window": 2**25}}),
                            "models.llama-2-7b.sliding_window: 33554432 is not allowed"),
    "huge q_lora_rank": (small(models={"llama-2-7b": {"q_lora_rank": 10**8}}), "models.llama-2-7b.q_lora_rank"),
}


@pytest.mark.parametrize("name", SCHEMA_BAD)
def test_schema_errors_read_as_one_line(name):
    cfg, expected = SCHEMA_BAD[name]
    messages = schema_errors(cfg)
    assert messages and all("\n" not in m for m in messages)
    assert any(m.startswith(expected) for m in messages), messages


def _schema_maximum(sub: dict):
    """The maximum of a model_entry field, following a $ref."""
    if "$ref" in sub:
        sub = {**SCHEMA["$defs"][sub["$ref"].split("/")[-1]], **sub}
    return sub.get("maximum"), sub.get("type")


def test_schema_key_length_is_the_library_limit_and_the_bounds_are_the_engine_ones():
    assert SCHEMA["$defs"]["key"]["maxLength"] == rc.MAX_KEY_LENGTH
    longest = {"m" * rc.MAX_KEY_LENGTH: {"hf_config": "x.json", "name": "N" * 120}}
    assert schema_errors(small(models=longest)) == []
    assert SCHEMA["$defs"]["model_entry"]["properties"]["norms_per_layer"]["enum"] == [1, 2, 4]
    for norms in (1, 2, 4):
        assert schema_errors(small(models={"llama-2-7b": {"norms_per_layer": norms}})) == []
    # every integer field but norms_per_layer (an enum) is bounded as the engine bounds it
    bounded = {name: _schema_maximum(sub) for name, sub in SCHEMA["$defs"]["model_entry"]["properties"].items()
               if "integer" in str(_schema_maximum(sub)[1]) and name != "norms_per_layer"}
    int_fields = {name for name, kind in typing.get_type_hints(ModelSpec).items() if kind in (int, int | None)}
    assert set(bounded) == int_fields - {"norms_per_layer"}
    assert {maximum for maximum, _ in bounded.values()} == {MAX_DIMENSION}
    # every integer a catalog model has fits (the same fields as overrides)
    for key, spec in rc.resolve_config(DEFAULT, ROOT).models.items():
        override = {name: getattr(spec, name) for name in bounded if getattr(spec, name) is not None}
        assert schema_errors(small(models={key: override})) == [], key
    # a model with a million-token context (Qwen2.5-7B-Instruct-1M: 1010000) can say so
    assert schema_errors(small(models={"qwen2.5-7b": {"max_position": 1010000}})) == []


def test_coerce_strings_restores_types_of_config_overrides():
    # what `snakemake --config 'scenario={batch: 8}' 'gpus={h100-sxm: {bandwidth_gbps: 3000}}'` hands over
    raw = small(scenario={"batch": "8", "weight_dtype": "int8", "attention": "flash"},
                gpus={"h100-sxm": {"bandwidth_gbps": "3000", "name": "123"}},
                models={"llama-2-7b": {"tie_embeddings": "true", "sliding_window": "null"}})
    fixed = coerce_strings(raw, SCHEMA)
    assert fixed["scenario"] == {"batch": 8, "weight_dtype": "int8", "attention": "flash"}
    assert fixed["gpus"]["h100-sxm"] == {"bandwidth_gbps": 3000, "name": "123"}  # name stays a string
    assert fixed["models"]["llama-2-7b"] == {"tie_embeddings": True, "sliding_window": None}
    assert coerce_strings(small(scenario={"batch": "x"}), SCHEMA)["scenario"]["batch"] == "x"  # left to the schema
    assert schema_errors(fixed) == []
