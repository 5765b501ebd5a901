"""Issue 11: 4-bit formats and native checkpoint dtypes, the 2025-26 architectures (loaders, catalog rows, new
operators) and the new accelerators. Exact integers on tiny shapes; the arithmetic is in the comments."""
import csv
import json
from dataclasses import asdict, replace
from importlib import resources
from pathlib import Path

import pytest

from roofline.cli.app import main
from roofline.engine import analysis, hardware, models
from roofline.engine import formulas as f
from roofline.engine.dtypes import DTYPE_BYTES, matmul_dtype, weight_bytes_per_element
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.scenario import Scenario
from roofline.estimate import expected as estimator

HF_CONFIGS = Path(__file__).parent / "data" / "hf_configs"
NEW_MODELS = ("qwen3-8b", "qwen3-32b", "qwen3-235b-a22b", "gpt-oss-20b", "gpt-oss-120b", "gemma-3-12b",
              "gemma-3-27b", "llama-4-scout", "llama-4-maverick", "glm-4.5", "glm-4.5-air", "kimi-k2",
              "qwen3-next-80b-a3b", "deepseek-v3.2", "glm-5")


def _ops(spec, stage, **scenario):
    return {op.name: op for op in build_operators(spec, stage, Scenario(**scenario))}


# ------------------------------------------------------------------------------------------------ formats
def test_block_scaled_formats_count_their_scales():
    # nvfp4: 4 bits + an 8-bit scale per 16 = 4.5 bits = 0.5625 byte; mxfp4: 4 + 8/32 = 4.25 bits = 0.53125 byte
    assert DTYPE_BYTES["nvfp4"] == 0.5625 and DTYPE_BYTES["mxfp4"] == 0.53125
    # int4 weights: 4 bits + a 16-bit scale per group: group 128 -> 4.125 bits = 0.515625; group 32 -> 4.5 bits
    assert weight_bytes_per_element("int4") == 0.515625
    assert weight_bytes_per_element("int4", 32) == 0.5625
    assert weight_bytes_per_element("mxfp4", 32) == 0.53125  # block scales are part of the format already


@pytest.mark.parametrize("operand, activation, peak", [
    ("nvfp4", "nvfp4", "fp4"),  # W4A4 NVFP4 on Blackwell: the fp4 peak
    ("mxfp4", "mxfp4", "fp4"),
    ("mxfp4", "fp16", "fp16"),  # gpt-oss's MXFP4 experts with 16-bit activations on Hopper: dequantized to 16 bit
    ("mxfp4", "fp8", "fp8"),  # ... with fp8 activations: the fp8 peak
    ("nvfp4", "mxfp4", "fp4"),  # equal element widths: the activation's (both 4-bit floats)
    ("int4", "fp16", "fp16"), ("int4", "int4", "int4"), ("fp8", "fp16", "fp16"), ("fp16", "fp8", "fp16"),
])
def test_compute_dtype_rule(operand, activation, peak):
    assert matmul_dtype(operand, activation) == peak


def test_int4_group_size_changes_weight_bytes_exactly():
    m = models.get_model("llama-2-7b")
    # q_proj [4096 x 4096] at int4 with group 64: 16,777,216 x (0.5 + 2/64) = 8,912,896 bytes
    assert _ops(m, "decode", weight_dtype="int4", weight_group_size=64)["q_proj"].cost.weight == 8_912_896
    # default group 128: 16,777,216 x 0.515625 = 8,650,752
    assert _ops(m, "decode", weight_dtype="int4")["q_proj"].cost.weight == 8_650_752
    with pytest.raises(RooflineInputError, match="weight_group_size: 0 is not allowed"):
        Scenario(weight_dtype="int4", weight_group_size=0).validate()


def test_w4a4_nvfp4_runs_at_the_fp4_peak_on_b200_and_is_refused_where_there_is_none():
    m, b200 = models.get_model("llama-3.1-8b"), hardware.get_accelerator("b200")
    sc = Scenario(weight_dtype="nvfp4", act_dtype="nvfp4", kv_dtype="fp8", batch=8)
    rows, total = estimator.analyze(m, b200, "decode", sc)
    by_op = {r["op"]: r for r in rows}
    assert by_op["q_proj"]["compute_dtype"] == "fp4" and by_op["q_proj"]["peak_flops_per_s"] == 9000e12
    assert total["ridge_flops_per_byte"] == 9000e12 / 8000e9  # 1125 FLOP/byte
    with pytest.raises(RooflineInputError, match="has no fp4 peak"):
        estimator.analyze(m, hardware.get_accelerator("h100-sxm"), "decode", sc)


# -------------------------------------------------------------------------------------- native dtypes
def test_native_resolves_per_model():
    sc = Scenario()  # weight_dtype native by default
    gpt = sc.for_model(models.get_model("gpt-oss-120b"))
    assert (gpt.weight_dtype, gpt.expert_dtype) == ("fp16", "mxfp4")  # 16-bit at act_dtype; MXFP4 experts
    assert sc.with_(act_dtype="fp8").for_model(models.get_model("gpt-oss-120b")).weight_dtype == "bf16"
    ds = sc.for_model(models.get_model("deepseek-v3"))
    assert (ds.weight_dtype, ds.expert_dtype) == ("fp8", "fp8")
    assert sc.for_model(models.get_model("llama-2-7b")).weight_dtype == "fp16"  # the paper's Table 1 case
    fixed = Scenario(weight_dtype="int4")
    assert fixed.for_model(models.get_model("gpt-oss-120b")) is fixed  # a concrete dtype wins


def test_gpt_oss_decode_streams_mxfp4_experts_and_16_bit_attention():
    m = models.get_model("gpt-oss-120b")
    ops = _ops(m, "decode", batch=1)
    # batch 1: the k = 4 routed experts; each up_proj [2880 x 2880] + bias 2880 at 4.25 bits:
    # 4 x (8,294,400 + 2,880) x 0.53125 = 17,631,720 bytes; computed at the 16-bit peak
    up = ops["expert_up_proj"]
    assert up.cost.weight == pytest.approx(17_631_720, rel=1e-12) and up.compute_dtype == "fp16"
    # q_proj [2880 x 64*64] + bias 4096 at 2 bytes: (11,796,480 + 4,096) x 2 = 23,601,152
    assert ops["q_proj"].cost.weight == 23_601_152 and ops["q_proj"].compute_dtype == "fp16"
    # resident weights: 36 layers x 128 experts x (3 x 2880^2 + 2 x 2880 + 2880 biases) = 114,701,598,720 at
    # 0.53125 byte, the rest at 2 bytes
    routed = models.routed_expert_params(m)
    assert routed == 36 * 128 * (3 * 2880 * 2880 + 3 * 2880) == 114_701_598_720
    total = models.parameter_counts(m)[0]
    assert analysis.weight_bytes(m, Scenario()) == (total - routed) * 2 + routed * 0.53125


def test_cli_gpt_oss_on_h100_runs_with_native_mxfp4_experts(capsys):
    code = main(["ops", "--model", "gpt-oss-120b", "--gpu", "h100-sxm", "--stage", "decode", "--format", "json"])
    rows = {r["op"]: r for r in json.loads(capsys.readouterr().out)}
    assert code == 0 and rows["expert_up_proj"]["bytes_weight"] == pytest.approx(17_631_720, rel=1e-12)
    assert main(["ridge", "--gpu", "b200", "--dtype", "fp4"]) == 0
    assert "1125.0" in capsys.readouterr().out  # 9000 TFLOP/s / 8000 GB/s
    # with a model: its exact critical decode batch in W4A4 NVFP4 (not '-' as for tf32, a compute mode only)
    assert main(["ridge", "--gpu", "b200", "--dtype", "fp4", "--model", "llama-3.1-8b"]) == 0
    critical = capsys.readouterr().out.splitlines()[1].split()[-1]
    assert critical.isdigit() and int(critical) > 1


@pytest.mark.parametrize("quantization, fields", [
    ({"quant_method": "mxfp4"}, {"native_expert_dtype": "mxfp4"}),
    ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
     {"native_weight_dtype": "fp8", "native_fp8_scaling": "block"}),
    ({"quant_method": "fp8", "activation_scheme": "static"},
     {"native_weight_dtype": "fp8", "native_fp8_scaling": "tensor"}),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, {"native_weight_dtype": "fp8", "native_fp8_scaling": "tensor"}),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {
        "num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}}}},
     {"native_weight_dtype": "fp8", "native_fp8_scaling": "block"}),
    ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {
        "num_bits": 8, "type": "float", "strategy": "channel"}}}},
     {"native_weight_dtype": "fp8", "native_fp8_scaling": "tensor"}),
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, {"native_weight_dtype": "int4"}),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, {"native_weight_dtype": "nvfp4"}),
])
def test_native_dtype_is_read_from_quantization_config(quantization, fields):
    cfg = json.loads((HF_CONFIGS / "qwen3-8b.json").read_text())
    spec = models.model_from_hf_dict({**cfg, "quantization_config": quantization}, "q")
    assert {k: getattr(spec, k) for k in fields} == fields


@pytest.mark.parametrize("size", [[128], "128", [128, 0], [128.0, 128], [True, 128]])
def test_a_bad_weight_block_size_is_refused(size):
    cfg = json.loads((HF_CONFIGS / "qwen3-8b.json").read_text())
    with pytest.raises(RooflineInputError, match="field 'weight_block_size' is .*; expected two positive integers"):
        models.model_from_hf_dict({**cfg, "quantization_config": {"quant_method": "fp8", "weight_block_size": size}},
                                  "q")


def test_unknown_quantization_is_refused_with_the_supported_list():
    cfg = json.loads((HF_CONFIGS / "qwen3-8b.json").read_text())
    with pytest.raises(RooflineInputError, match="quant_method 'bitsandbytes' is not supported; supported: mxfp4"):
        models.model_from_hf_dict({**cfg, "quantization_config": {"quant_method": "bitsandbytes"}}, "q")


# ------------------------------------------------------------------------------------- loaders and catalog
@pytest.mark.parametrize("key", NEW_MODELS)
def test_catalog_row_is_the_published_config(key):
    """Every field of the catalog row equals what the loader reads from the config.json copy; the computed
    parameter counts in models.csv are the engine's."""
    loaded = asdict(models.model_from_hf_config(HF_CONFIGS / f"{key}.json", key))
    catalog = asdict(models.get_model(key))
    differ = {k for k in catalog if catalog[k] != loaded[k]} - {"name", "source", "published_params",
                                                                  "published_active_params"}
    assert not differ, {k: (catalog[k], loaded[k]) for k in differ}
    with resources.files("roofline").joinpath("data/models.csv").open() as handle:
        row = {r["key"]: r for r in csv.DictReader(handle)}[key]
    total, active = models.parameter_counts(models.get_model(key))
    assert f"{total / 1e9:.3f}" == row["computed_params_B"]
    if row["computed_active_params_B"]:
        assert f"{active / 1e9:.3f}" == row["computed_active_params_B"]


@pytest.mark.parametrize("key, total_B, active_B", [
    # published totals (text model: Gemma 3 and Llama 4 publish totals with their vision encoders; GLM-4.5 with
    # its MTP layer) and active counts (gpt-oss, GLM and Qwen3-Next publish them without embedding tables)
    ("qwen3-8b", 8.191, None), ("qwen3-32b", 32.762, None), ("qwen3-235b-a22b", 235.094, 22.191),
    ("gpt-oss-20b", 20.915, 4.187), ("gpt-oss-120b", 116.829, 5.712), ("gemma-3-12b", 11.766, None),
    ("gemma-3-27b", 27.009, None), ("llama-4-scout", 107.770, 17.173), ("llama-4-maverick", 400.712, 17.185),
    ("glm-4.5", 352.798, 33.632), ("glm-4.5-air", 106.852, 13.424), ("kimi-k2", 1026.408, 32.862),
    ("qwen3-next-80b-a3b", 79.674, 3.875), ("deepseek-v3.2", 671.878, 38.404), ("glm-5", 743.911, 41.785),
])
def test_parameter_counts_match_the_published_ones(key, total_B, active_B):
    m = models.get_model(key)
    total, active = models.parameter_counts(m)
    assert round(total / 1e9, 3) == total_B and abs(total / m.published_params - 1) < 0.04
    if active_B is not None:
        assert round(active / 1e9, 3) == active_B
        # without the embedding table (and, for GLM/Qwen3-Next, lm_head), as gpt-oss and GLM count active
        embeddings = m.vocab * m.hidden * (1 if key.startswith("gpt-oss") else 2)
        published_like = active - embeddings if key.startswith(("gpt-oss", "glm", "qwen3-next")) else active
        assert abs(published_like / m.published_active_params - 1) < 0.1


def test_gpt_oss_120b_matches_openais_published_breakdown():
    # OpenAI's model card: 116.83B total, 5.13B active (without the 0.58B embedding table)
    m = models.get_model("gpt-oss-120b")
    total, active = models.parameter_counts(m)
    assert round(total / 1e9, 2) == 116.83
    assert round((active - m.vocab * m.hidden) / 1e9, 2) == 5.13


def test_wrapped_multimodal_configs_read_their_text_model_with_transformers_defaults():
    # Gemma 3's multimodal file leaves out fields equal to Gemma3TextConfig's defaults (vocab 262208, 8 heads)
    small = {"model_type": "gemma3", "text_config": {"hidden_size": 2560, "intermediate_size": 10240,
                                                     "model_type": "gemma3_text", "num_hidden_layers": 34,
                                                     "sliding_window": 1024}}
    m = models.model_from_hf_dict(small, "gemma-3-4b")
    assert (m.family, m.vocab, m.n_heads, m.n_kv_heads, m.head_dim) == ("gemma3_text", 262208, 8, 4, 256)
    # no layer_types: layer i is local unless (i + 1) % 6 == 0 -> 34 - 5 = 29 local layers
    assert (m.sliding_window, m.sliding_layers, m.tie_embeddings) == (1024, 29, True)


def test_kimi_k2_loads_through_the_deepseek_v3_reader():
    m = models.model_from_hf_config(HF_CONFIGS / "kimi-k2.json")
    assert (m.family, m.n_heads, m.n_experts, m.first_dense_layers, m.native_weight_dtype) == \
        ("deepseek_v3", 64, 384, 1, "fp8")


def test_layer_patterns_of_the_catalog():
    gemma, oss = models.get_model("gemma-3-27b"), models.get_model("gpt-oss-120b")
    assert (gemma.sliding_layers, gemma.sliding_window) == (52, 1024)  # 62 layers, every 6th global: 10
    assert (oss.sliding_layers, oss.sliding_window) == (18, 128)  # alternating
    scout, maverick = models.get_model("llama-4-scout"), models.get_model("llama-4-maverick")
    assert (scout.chunked_layers, scout.nope_layers, scout.attention_chunk, scout.n_moe_layers) == (36, 12, 8192, 48)
    assert maverick.n_moe_layers == 24 and maverick.n_dense_layers == 24
    nxt = models.get_model("qwen3-next-80b-a3b")
    assert (nxt.linear_layers, nxt.n_attention_layers, nxt.rotary_dim) == (36, 12, 64)


# ----------------------------------------------------------------------------------------- new operators
def test_registry_has_the_new_operators():
    assert {"output_gate", "causal_conv1d", "gated_delta_rule"} <= set(f.FORMULAS)


def test_chunked_causal_pairs():
    # S = 5, chunk 2: chunks {0,1} {2,3} {4}: 3 + 3 + 1 = 7 = 2 x (2 x 3 / 2) + 1 x 2 / 2
    assert f.chunked_causal_pairs(5, 2) == 7
    brute = sum(1 for i in range(5) for j in range(i + 1) if i // 2 == j // 2)
    assert brute == 7
    assert f.chunked_causal_pairs(5, 8) == f.causal_pairs(5) == 15  # a chunk beyond S changes nothing


def test_output_gate():
    # T = 3, N = 4, a = 2: sigmoid (4) + multiply (1) on 12 elements = 60 FLOPs; reads o and g 2 x 12 x 2 = 48
    assert f.output_gate(3, 4, 2) == f.Cost(60, 0, 48, 24, 0, 0)


def test_causal_conv1d():
    # prefill B = 2, S = 3, C = 5 channels, K = 4 taps, w = a = 2, state at c = 4 bytes:
    # FLOPs 2 x 6 x 5 x 4 = 240; weight 5 x 4 x 2 = 40; x 6 x 5 x 2 = 60 read and written;
    # writes the conv state 2 x 5 x (4 - 1) x 4 = 120
    assert f.causal_conv1d(2, 3, 5, 4, 2, 2, 4) == f.Cost(240, 40, 60, 60, 0, 120)
    # decode (1 token): 2 x 2 x 5 x 4 = 80 FLOPs; reads and writes the 120-byte state
    assert f.causal_conv1d(2, 1, 5, 4, 2, 2, 4, decode=True) == f.Cost(80, 40, 20, 20, 120, 120)


def test_gated_delta_rule_decode():
    # B = 2, Hk = 2, Hv = 4, dk = 8, dv = 12, a = 2, state c = 4: FLOPs 7 x 2 x 4 x 8 x 12 = 5,376;
    # reads q, k (2 x 2 x 8) + v (4 x 12) + g, beta (2 x 4) = 88 per token x 2 tokens x 2 bytes = 352;
    # writes o 2 x 48 x 2 = 192; state 2 x 4 x 8 x 12 x 4 = 3,072 bytes read and written
    assert f.gated_delta_rule(2, 1, 4, 8, 12, 2, 4, chunked=False, Hk=2) == f.Cost(5376, 0, 352, 192, 3072, 3072)


def test_gated_delta_rule_prefill_chunks():
    # B = 1, Hv = Hk = 1, dk = 2, dv = 3, chunk 4; per chunk 4 x 16 x 2 (K_beta K^T, Q K^T) + 4 x 3 x 5 (solves)
    # + 6 x 4 x 2 x 3 (state products) + 2 x 16 x 3 (A V_new) + 2 x 3 (decay) = 128 + 60 + 144 + 96 + 6 = 434
    cost = f.gated_delta_rule(1, 100, 1, 2, 3, 2, 4, chunked=True, chunk=4)
    assert cost.flops == 25 * 434  # 100 tokens = 25 chunks
    assert f.gated_delta_rule(1, 101, 1, 2, 3, 2, 4, chunked=True, chunk=4).flops == 26 * 434  # padded
    # reads 100 x (2 x 2 + 3 + 2) x 2 = 1,800; writes o 100 x 3 x 2 = 600 and the final state 2 x 3 x 4 = 24
    assert (cost.weight, cost.act_read, cost.act_write, cost.kv_read, cost.kv_write) == (0, 1800, 600, 0, 24)


def test_qwen3_next_graph_books_the_state_not_a_cache():
    m = models.get_model("qwen3-next-80b-a3b")
    decode = _ops(m, "decode", batch=1, seq_len=4096)
    core = decode["gated_delta_rule"]
    # 36 layers; state 32 x 128 x 128 x 2 bytes = 1,048,576 read and written per step, whatever seq_len
    assert core.count == 36 and core.cost.kv_read == core.cost.kv_write == 32 * 128 * 128 * 2
    assert decode["q_proj"].count == 12 and decode["q_proj"].cost.flops == 2 * 2048 * 16 * 256 * 2  # gated q
    assert decode["rope"].cost.flops == 3 * (16 + 2) * 64  # a quarter of the 256 channels rotate
    # footprint: 36 states (delta rule + conv (2 x 16 x 128 + 32 x 128) x 3) + 12 layers' K/V for S + 1 tokens
    state = 32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3
    assert analysis.kv_cache_bytes(m, "decode", Scenario(seq_len=4096)) == \
        2 * (36 * state + 12 * 4097 * 2 * 2 * 256)


def test_llama4_chunked_decode_attends_its_chunk():
    m = models.get_model("llama-4-scout")
    ops = _ops(m, "decode", seq_len=10000, attention="eager")
    # 36 chunked layers: 10000 mod 8192 + 1 = 1809 keys; 12 NoPE layers: all 10001
    assert ops["qk_matmul_chunked"].count == 36 and ops["qk_matmul_chunked"].cost.flops == 2 * 40 * 1809 * 128
    assert ops["qk_matmul"].count == 12 and ops["qk_matmul"].cost.flops == 2 * 40 * 10001 * 128
    assert ops["rope"].count == 36  # NoPE layers have no rotary embedding
    # cache: chunked layers keep at most one chunk (8192), the others every token
    per_token = 2 * 8 * 128 * 2
    assert analysis.kv_cache_bytes(m, "decode", Scenario(seq_len=10000)) == \
        36 * 8192 * per_token + 12 * 10001 * per_token


def test_gpt_oss_sinks_and_biases_in_the_parameter_count():
    m = models.get_model("gpt-oss-20b")
    plain = replace(m, attention_sinks=False, attn_out_bias=False, expert_bias=False)
    # per layer: 64 sinks + 2880 o_proj bias + 32 experts x (2 x 2880 + 2880) expert biases
    per_layer = 64 + 2880 + 32 * 3 * 2880
    assert models.parameter_counts(m)[0] - models.parameter_counts(plain)[0] == 24 * per_layer


# ----------------------------------------------------------------------------------------- accelerators
@pytest.mark.parametrize("key, fp4, bf16, gbps, memory_gb", [
    ("b200", 9000, 2250, 8000, 180), ("gb200-gpu", 10000, 2500, 8000, 186), ("b300", 13500, 2250, 8000, 288),
    ("gb300-gpu", 15000, 2500, 8000, 288), ("mi350x", 9228, 2307, 8000, 288), ("mi355x", 10066.3, 2516.6, 8000, 288),
    ("rtx-pro-6000", 2000, 500, 1597, 96), ("h20", None, 148, 4000, 96), ("tpu-v7", None, 2307, 7380, 192),
])
def test_new_accelerators(key, fp4, bf16, gbps, memory_gb):
    gpu = hardware.get_accelerator(key)
    assert gpu.peak("bf16") == bf16 * 1e12 and gpu.bandwidth_bytes_per_s == gbps * 1e9
    assert gpu.memory_bytes == memory_gb * 2**30  # the printed GB, read as GiB (the real capacity)
    assert ("fp4" in gpu.peak_flops_per_s) == (fp4 is not None)
    if fp4:
        assert gpu.peak("fp4") == fp4 * 1e12


def test_estimated_devices_say_why():
    for key in ("b300", "gb300-gpu", "h20", "rtx-pro-6000"):
        assert hardware.get_accelerator(key).estimate and hardware.ESTIMATED[key]
    assert not hardware.get_accelerator("tpu-v7").estimate and not hardware.get_accelerator("mi355x").estimate
