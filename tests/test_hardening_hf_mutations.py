"""Issue 20: every malformed config.json ends in one line. The values issue 20 found raising tracebacks
(sliding_window_pattern 0, moe_layers 3, partial_rotary_factor "x") name their field; then a property test mutates
the real configs of tests/data/hf_configs (any field, top level or text_config, set to any JSON value) and checks
that each either builds a model or is refused in one line."""
import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.cli import app as cli
from roofline.engine.errors import RooflineInputError
from roofline.engine.hf_config import model_from_hf_dict
from roofline.engine.model_spec import ModelSpec

CONFIGS = sorted((Path(__file__).parent / "data" / "hf_configs").glob("*.json"))
#: fields the family readers look at beyond FIELD_TYPES (checked one by one in hf_families)
READER_FIELDS = ("sliding_window_pattern", "_sliding_window_pattern", "moe_layers", "no_rope_layers",
                 "partial_rotary_factor", "rope_parameters", "full_attention_interval", "interleave_moe_layer_step",
                 "no_rope_layer_interval", "layer_types", "mlp_only_layers", "decoder_sparse_step",
                 "shared_expert_intermediate_size", "attention_chunk_size", "quantization_config", "moe_layer_freq",
                 "attention_bias", "use_sliding_window", "sliding_window", "text_config", "head_dim")


def _config(name: str) -> dict:
    return json.loads(next(p for p in CONFIGS if p.stem == name).read_text())


@pytest.mark.parametrize("name, field, value, expected", [
    ("gemma-3-12b", "sliding_window_pattern", 0, "field 'sliding_window_pattern' is 0; expected an integer >= 1"),
    ("qwen3-next-80b-a3b", "full_attention_interval", 0, "field 'full_attention_interval' is 0; expected an integer"),
    ("llama-4-maverick", "moe_layers", 3, "field 'moe_layers' is 3; expected a list of layer indices 0 to 47"),
    ("llama-4-maverick", "moe_layers", [1, "a"], "field 'moe_layers' is [1, 'a']; expected a list of layer indices"),
    ("llama-4-maverick", "no_rope_layers", [2] * 48, "field 'no_rope_layers' is [2, 2, 2"),
    ("llama-4-maverick", "interleave_moe_layer_step", 0, "field 'interleave_moe_layer_step' is 0; expected an"),
    ("glm-4.5-air", "partial_rotary_factor", "x", "field 'partial_rotary_factor' is 'x'; expected a fraction greater "
                                                  "than 0 and at most 1"),
    ("glm-4.5-air", "partial_rotary_factor", 1e308, "field 'partial_rotary_factor' is 1e+308; expected a fraction"),
    ("glm-4.5-air", "partial_rotary_factor", [0.5], "field 'partial_rotary_factor' is [0.5]; expected a fraction"),
])
def test_the_values_that_raised_tracebacks_name_their_field(tmp_path, capsys, name, field, value, expected):
    cfg = _config(name)
    (cfg["text_config"] if "text_config" in cfg and field not in cfg else cfg)[field] = value
    with pytest.raises(RooflineInputError) as error:
        model_from_hf_dict(cfg, "m", "config.json")
    assert str(error.value).startswith("config.json: " + expected), str(error.value)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert cli.main(["totals", "--model", str(path), "--gpu", "h100-sxm", "--stage", "decode"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.sampled_from([0, 1, -1, 2, 3, 4, 128, 2**31])
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12)


@st.composite
def mutated(draw):
    cfg = json.loads(draw(st.sampled_from(CONFIGS)).read_text())
    for _ in range(draw(st.integers(1, 3))):
        target = cfg["text_config"] if isinstance(cfg.get("text_config"), dict) and draw(st.booleans()) else cfg
        field = draw(st.sampled_from(sorted(set(target) | set(READER_FIELDS))))
        target[field] = draw(JSON)
    return cfg


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_any_mutation_of_a_real_config_builds_or_is_one_line(cfg):
    try:
        spec = model_from_hf_dict(cfg, "m", "config.json")
    except RooflineInputError as error:
        assert "\n" not in str(error) and "config.json" in str(error)
        return
    assert isinstance(spec, ModelSpec)
    assert all(math.isfinite(v) for v in (spec.n_layers, spec.hidden, spec.n_heads, spec.vocab))
