"""Issue 13, items 4, 5 and 8: a malformed config.json or hf_config path is one RooflineInputError line naming
models.<key> and the file, before any job (and exit status 2 with one line in the CLI)."""
import json
import os
from pathlib import Path

import pytest

from roofline.cli import app as cli
from roofline.engine.errors import RooflineInputError
from roofline.pipeline.config import resolve_config

QWEN = json.loads((Path(__file__).parent / "data" / "hf_configs" / "qwen2.5-7b.json").read_text())


def _config(path) -> dict:
    return {"models": {"mine": {"hf_config": str(path)}}, "gpus": {"h100-sxm": {}}, "scenario": {"seq_len": 8}}


def _refused(path, *expected):
    with pytest.raises(RooflineInputError) as error:
        resolve_config(_config(path))
    message = str(error.value)
    # one line of a few hundred characters: the file's path, the value cut to 60, the model_types it accepts (40)
    assert "\n" not in message and len(message) < 700, message
    for text in ("models.mine", *expected):
        assert text in message, message
    return message


BAD_FIELDS = {
    "model_type list": ({"model_type": ["llama"]}, "field 'model_type' is ['llama']; expected a string"),
    "model_type dict": ({"model_type": {}}, "field 'model_type' is {}; expected a string"),
    "max_window_layers text": ({"use_sliding_window": True, "max_window_layers": "x"},
                               "field 'max_window_layers' is 'x'; expected an integer"),
    "use_sliding_window text": ({"use_sliding_window": "yes"}, "field 'use_sliding_window' is 'yes'"),
    "_name_or_path number": ({"_name_or_path": 12345}, "field '_name_or_path' is 12345; expected a string"),
    "_name_or_path too long": ({"_name_or_path": "x" * 5000}, "(5002 characters); at most 120 characters"),
    "huge integer": ({"head_dim": 10 ** 40}, "head_dim: 1" + "0" * 40 + " is not allowed"),
    "model_type of 20000 characters": ({"model_type": "q" * 20000}, "(20000 characters)"),
}


@pytest.mark.parametrize("name", BAD_FIELDS)
def test_malformed_fields_are_one_line_naming_the_key_and_the_file(tmp_path, name):
    fields, *expected = BAD_FIELDS[name]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN, **fields}))
    _refused(path, str(path), *expected)


BAD_FILES = {
    "nested 100k deep": (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "nests JSON too deeply"),
    "integer of 5000 digits": (lambda p: p.write_text('{"model_type": "llama", "hidden_size": ' + "9" * 5000 + "}"),
                               "not readable JSON", "4300 digits"),
    "UTF-16": (lambda p: p.write_bytes(json.dumps(QWEN).encode("utf-16")), "is not UTF-8 text"),
    "Latin-1": (lambda p: p.write_bytes(json.dumps({**QWEN, "_name_or_path": "Qwën"}, ensure_ascii=False)
                                        .encode("latin-1")), "is not UTF-8 text"),
    "a JSON list": (lambda p: p.write_text("[1, 2]"), "holds a JSON list; expected a JSON object"),
    "a directory": (lambda p: p.mkdir(), "is a directory, not a config.json file"),
    "a FIFO": (lambda p: os.mkfifo(p), "is a FIFO, not a config.json file"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_unreadable_files_are_one_line_naming_the_key_and_the_file(tmp_path, name):
    make, *expected = BAD_FILES[name]
    path = tmp_path / "config.json"
    make(path)
    _refused(path, f"models.mine.hf_config: file '{path}'", *expected)


def test_device_and_empty_paths_say_what_they_are():
    _refused("/dev/zero", "models.mine.hf_config: file '/dev/zero' is a device, not a config.json file")
    _refused("", "models.mine.hf_config: empty; expected the path of a config.json file")


def test_nan_in_name_or_path_is_a_name(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN, "_name_or_path": "NaN"}))
    assert resolve_config(_config(path)).models["mine"].name == "NaN"


@pytest.mark.parametrize("name", ["model_type list", "max_window_layers text", "_name_or_path number"])
def test_cli_exits_2_with_one_line(capsys, tmp_path, name):
    fields, *expected = BAD_FIELDS[name]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN, **fields}))
    code = cli.main(["totals", "--model", str(path), "--gpu", "h100-sxm", "--stage", "prefill", "--seq-len", "8"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and expected[0] in err


def test_name_limit_of_config_json_is_the_schemas():
    from roofline.engine import hf_config
    from roofline.pipeline.schema import load_schema
    schema = load_schema(Path(__file__).parents[1] / "workflow" / "schemas" / "config.schema.yaml")
    assert schema["$defs"]["name"]["maxLength"] == hf_config.MAX_NAME_LENGTH


def test_null_fields_read_as_unset(tmp_path):
    # transformers writes null for unset fields: the family's default applies, nothing crashes
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN, "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": None,
                                "tie_word_embeddings": None, "_name_or_path": None}))
    spec = resolve_config(_config(path)).models["mine"]
    # max_window_layers unset = every layer (28): no layer slides; tie_word_embeddings unset = qwen2's default
    assert spec.sliding_layers == 0 and spec.tie_embeddings is False and spec.name == "mine"


def test_a_dimension_out_of_range_names_the_config_json_field_and_the_least_value(tmp_path):
    # num_key_value_heads -8 and 0: both "from 1" (it read "from 0" for -8, while 0 is refused too), with the
    # field the file holds, not only the spec's n_kv_heads; a negative head_dim the same ("from 0" before, though a
    # head of 0 is none; a head_dim of 0 is taken as unset, hidden / heads, as transformers does)
    for field, value in (("num_key_value_heads", -8), ("num_key_value_heads", 0), ("head_dim", -256)):
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**QWEN, field: value}))
        message = _refused(path, f"{value} is not allowed; expected an integer from 1 to", f": '{field}')")
        assert str(path) in message


@pytest.mark.parametrize("source, field, value", [
    ("mixtral-8x7b", "num_local_experts", 0),  # read as a dense model (0.58 B for OLMoE's 6.9 B), shared experts lost
    ("qwen3-235b-a22b", "num_experts", 0),
    ("qwen3-235b-a22b", "num_experts_per_tok", 0),
    ("deepseek-v3", "n_routed_experts", 0),
    ("deepseek-v3", "kv_lora_rank", -1),  # said "head_dim: 0 is not allowed", a field the file does not have
    ("deepseek-v3", "kv_lora_rank", 0),
    ("llama-3.1-8b", "max_position_embeddings", 0),  # accepted, and turned the context check off
])
def test_an_moe_or_mla_field_of_nothing_is_refused_by_its_name(tmp_path, source, field, value):
    config = json.loads((Path(__file__).parent / "data" / "hf_configs" / f"{source}.json").read_text())
    assert field in config
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, field: value}))
    _refused(path, f"field '{field}' is {value}; expected an integer >= 1")


@pytest.mark.parametrize("typo, field", [("num_key_value_head", "num_key_value_heads"),
                                         ("tie_word_embedding", "tie_word_embeddings"),
                                         ("max_position_embedding", "max_position_embeddings")])
def test_a_field_one_letter_off_is_refused_with_the_field_meant(tmp_path, typo, field):
    # transformers ignores an unknown field, and so did we: num_key_value_head fell back to multi-head attention
    # (Llama-3.2-1B 1.34 B parameters for 1.24 B), tie_word_embedding to untied (1.50 B)
    config = json.loads((Path(__file__).parent / "data" / "hf_configs" / "llama-3.1-8b.json").read_text())
    config[typo] = config.pop(field)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    _refused(path, f"field '{typo}' is not one the model is read from; did you mean '{field}'?")


def test_no_shipped_config_has_a_field_one_letter_off_another():
    # a letter added or dropped only (o_lora_rank is one letter changed from q_lora_rank, and real)
    for path in sorted((Path(__file__).parent / "data" / "hf_configs").glob("*.json")):
        resolve_config(_config(path))


def test_another_styles_field_in_a_file_is_no_misspelling(tmp_path):
    # a Llama file's leftover GPT-2-style n_heads is not a misspelt n_head (which Llama is not read from)
    config = json.loads((Path(__file__).parent / "data" / "hf_configs" / "llama-3.1-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "n_heads": 32, "n_layers": 4, "n_embed": 4096, "layer_type": "full"}))
    assert resolve_config(_config(path)).models["mine"].n_layers == config["num_hidden_layers"]
