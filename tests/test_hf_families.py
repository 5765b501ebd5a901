"""Architectures read from a config.json alone (no catalog row): DeepSeek-V2, Qwen2-MoE, Gemma, Granite, Granite-MoE,
StarCoder2, OLMo-2, OLMoE, Cohere and Cohere2, and the language models of Mistral Small 3.1 and Qwen2(.5)-VL.
tests/test_validation_torch.py checks their FLOPs per module, parameters and KV cache against transformers' own
modules on tiny shapes; here the full-size configs' parameter counts meet the published ones, the family rules
(routing groups, shared experts, biases, norms) are exact on small integers, and each serves end to end."""
import json
import re
from pathlib import Path

import pytest

from roofline.cli.app import main
from roofline.engine import models
from roofline.engine.errors import RooflineInputError
from roofline.engine.scenario import Scenario

DATA = Path(__file__).parent / "data" / "hf_configs"
#: the fields of each model's config.json on the Hugging Face Hub that the loader reads
CONFIGS = {
    "DeepSeek-V2-Lite": dict(model_type="deepseek_v2", vocab_size=102400, hidden_size=2048,
                             intermediate_size=10944, moe_intermediate_size=1408, num_hidden_layers=27,
                             num_attention_heads=16, num_key_value_heads=16, n_shared_experts=2, n_routed_experts=64,
                             num_experts_per_tok=6, kv_lora_rank=512, q_lora_rank=None, qk_nope_head_dim=128,
                             qk_rope_head_dim=64, v_head_dim=128, first_k_dense_replace=1, moe_layer_freq=1,
                             tie_word_embeddings=False, max_position_embeddings=163840, hidden_act="silu",
                             topk_method="greedy", n_group=1, topk_group=1),
    "DeepSeek-V2": dict(model_type="deepseek_v2", vocab_size=102400, hidden_size=5120, intermediate_size=12288,
                        moe_intermediate_size=1536, num_hidden_layers=60, num_attention_heads=128,
                        num_key_value_heads=128, n_shared_experts=2, n_routed_experts=160, num_experts_per_tok=6,
                        kv_lora_rank=512, q_lora_rank=1536, qk_nope_head_dim=128, qk_rope_head_dim=64,
                        v_head_dim=128, first_k_dense_replace=1, moe_layer_freq=1, tie_word_embeddings=False,
                        max_position_embeddings=163840, hidden_act="silu", topk_method="group_limited_greedy",
                        n_group=8, topk_group=3),
    "Qwen1.5-MoE-A2.7B": dict(model_type="qwen2_moe", vocab_size=151936, hidden_size=2048, intermediate_size=5632,
                              moe_intermediate_size=1408, shared_expert_intermediate_size=5632, num_hidden_layers=24,
                              num_attention_heads=16, num_key_value_heads=16, num_experts=60, num_experts_per_tok=4,
                              tie_word_embeddings=False, max_position_embeddings=8192, hidden_act="silu",
                              decoder_sparse_step=1),
    "Qwen2-57B-A14B": dict(model_type="qwen2_moe", vocab_size=151936, hidden_size=3584, intermediate_size=18944,
                           moe_intermediate_size=2560, shared_expert_intermediate_size=20480, num_hidden_layers=28,
                           num_attention_heads=28, num_key_value_heads=4, num_experts=64, num_experts_per_tok=8,
                           tie_word_embeddings=False, max_position_embeddings=131072, hidden_act="silu",
                           decoder_sparse_step=1),
    "gemma-7b": dict(model_type="gemma", vocab_size=256000, hidden_size=3072, intermediate_size=24576,
                     num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=16, head_dim=256,
                     hidden_act="gelu", max_position_embeddings=8192),
    "granite-3.1-8b-base": dict(model_type="granite", vocab_size=49155, hidden_size=4096, intermediate_size=12800,
                                num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=8,
                                tie_word_embeddings=True, max_position_embeddings=131072, hidden_act="silu"),
    "granite-3.0-3b-a800m-base": dict(model_type="granitemoe", vocab_size=49155, hidden_size=1536,
                                      intermediate_size=512, num_hidden_layers=32, num_attention_heads=24,
                                      num_key_value_heads=8, num_local_experts=40, num_experts_per_tok=8,
                                      tie_word_embeddings=True, max_position_embeddings=4096, hidden_act="silu"),
    "starcoder2-3b": dict(model_type="starcoder2", vocab_size=49152, hidden_size=3072, intermediate_size=12288,
                          num_hidden_layers=30, num_attention_heads=24, num_key_value_heads=2, sliding_window=4096,
                          use_bias=True, max_position_embeddings=16384, hidden_act="gelu_pytorch_tanh"),
    "OLMo-2-1124-7B": dict(model_type="olmo2", vocab_size=100352, hidden_size=4096, intermediate_size=11008,
                           num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                           max_position_embeddings=4096, hidden_act="silu", tie_word_embeddings=False),
    "OLMoE-1B-7B-0924": dict(model_type="olmoe", vocab_size=50304, hidden_size=2048, intermediate_size=1024,
                             num_hidden_layers=16, num_attention_heads=16, num_key_value_heads=16, num_experts=64,
                             num_experts_per_tok=8, max_position_embeddings=4096, hidden_act="silu",
                             tie_word_embeddings=False),
    "c4ai-command-r-v01": dict(model_type="cohere", vocab_size=256000, hidden_size=8192, intermediate_size=22528,
                               num_hidden_layers=40, num_attention_heads=64, num_key_value_heads=64,
                               max_position_embeddings=8192, hidden_act="silu", use_qk_norm=False),
    "c4ai-command-r-plus": dict(model_type="cohere", vocab_size=256000, hidden_size=12288, intermediate_size=33792,
                                num_hidden_layers=64, num_attention_heads=96, num_key_value_heads=8,
                                max_position_embeddings=8192, hidden_act="silu", use_qk_norm=True),
    "c4ai-command-r7b-12-2024": dict(model_type="cohere2", vocab_size=256000, hidden_size=4096,
                                     intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                                     num_key_value_heads=8, max_position_embeddings=8192, hidden_act="silu",
                                     sliding_window=4096, sliding_window_pattern=4),
}


@pytest.mark.parametrize("name, total_B, active_B", [
    # model cards: DeepSeek-V2-Lite 15.7B total (2.4B active without the 0.21B embedding table: 2.661 - 0.210),
    # DeepSeek-V2 236B / 21B, Qwen1.5-MoE-A2.7B 14.3B / 2.7B, Qwen2-57B-A14B 57.4B / 14B, Gemma 7B 8.54B,
    # Granite 3.1 8B 8.17B, Granite 3.0 3B-A800M 3.3B / 800M, StarCoder2-3B 3.03B, OLMo 2 7B 7.30B, OLMoE 6.9B /
    # 1.3B, Command R 35B, Command R+ 104B, Command R7B 8.03B
    ("DeepSeek-V2-Lite", 15.706, 2.661), ("DeepSeek-V2", 235.741, 21.376), ("Qwen1.5-MoE-A2.7B", 14.316, 2.689),
    ("Qwen2-57B-A14B", 57.409, 14.249), ("gemma-7b", 8.538, 8.538), ("granite-3.1-8b-base", 8.171, 8.171),
    ("granite-3.0-3b-a800m-base", 3.299, 0.883), ("starcoder2-3b", 3.030, 3.030),
    ("OLMo-2-1124-7B", 7.299, 7.299), ("OLMoE-1B-7B-0924", 6.919, 1.282), ("c4ai-command-r-v01", 34.981, 34.981),
    ("c4ai-command-r-plus", 103.811, 103.811), ("c4ai-command-r7b-12-2024", 8.028, 8.028),
])
def test_full_size_configs_have_the_published_parameter_counts(name, total_B, active_B):
    total, active = models.parameter_counts(models.model_from_hf_dict(dict(CONFIGS[name]), name))
    assert (round(total / 1e9, 3), round(active / 1e9, 3)) == (total_B, active_B)


def test_deepseek_v2_routes_in_groups_only_under_group_limited_greedy():
    v2 = models.model_from_hf_dict(dict(CONFIGS["DeepSeek-V2"]), "v2")
    assert (v2.expert_groups, v2.groups_per_token, v2.router_bias) == (8, 3, False)
    # V2-Lite's greedy top-k ignores n_group, whatever it says
    lite = models.model_from_hf_dict(dict(CONFIGS["DeepSeek-V2-Lite"], n_group=8, topk_group=3), "lite")
    assert (lite.expert_groups, lite.q_lora_rank, lite.is_mla) == (1, None, True)


def test_qwen2_moe_shared_expert_is_whole_expert_widths():
    # 20480 / 2560 = 8 expert widths, behind a sigmoid gate; q/k/v biased like Qwen2
    m = models.model_from_hf_dict(dict(CONFIGS["Qwen2-57B-A14B"]), "q")
    assert (m.n_shared_experts, m.shared_expert_gate, m.qkv_bias, m.first_dense_layers) == (8, True, True, 0)
    with pytest.raises(RooflineInputError, match="shared_expert_intermediate_size 20000 is not a multiple of "
                                                 "moe_intermediate_size 2560"):
        models.model_from_hf_dict(dict(CONFIGS["Qwen2-57B-A14B"], shared_expert_intermediate_size=20000), "q")


def test_starcoder2_is_a_plain_biased_layernorm_model_with_a_window_on_every_layer():
    m = models.model_from_hf_dict(dict(CONFIGS["starcoder2-3b"]), "sc")
    assert (m.mlp_type, m.norm, m.linear_bias, m.sliding_window, m.sliding_layers, m.tie_embeddings) == \
        ("plain", "layernorm", True, 4096, 30, True)
    # one layer: q 3072^2 + k, v 2 x 3072 x 256 + o 3072^2 = 20,447,232 weights, biases 3072 + 2 x 256 + 3072 =
    # 6,656; MLP 2 x 3072 x 12288 = 75,497,472 weights + 12288 + 3072 = 15,360 biases; 2 LayerNorms 4 x 3072
    per_layer = 20_447_232 + 6_656 + 75_497_472 + 15_360 + 12_288
    total, _ = models.parameter_counts(m)
    assert total == 30 * per_layer + 49152 * 3072 + 2 * 3072  # + the tied table + the final LayerNorm
    with pytest.raises(RooflineInputError, match="field 'use_bias' is 'yes'; expected true or false"):
        models.model_from_hf_dict(dict(CONFIGS["starcoder2-3b"], use_bias="yes"), "sc")


def test_whole_projection_qk_norms_weigh_h_d_and_hkv_d():
    # OLMo-2 7B: RMSNorm(32 x 128) on q and RMSNorm(32 x 128) on k = 8,192 weights per layer (Qwen3's per-head
    # norms would be 2 x 128); Command R+: per-head LayerNorms on 96 query and 8 KV heads of 128 = 13,312
    olmo = models.model_from_hf_dict(dict(CONFIGS["OLMo-2-1124-7B"]), "o")
    plain = models.model_from_hf_dict(dict(CONFIGS["OLMo-2-1124-7B"], model_type="llama"), "l")
    assert models.parameter_counts(olmo)[0] - models.parameter_counts(plain)[0] == 32 * 8_192
    plus = models.model_from_hf_dict(dict(CONFIGS["c4ai-command-r-plus"]), "p")
    assert (plus.qk_norm_full, models.attention_params(plus) - models.attention_params(
        models.model_from_hf_dict(dict(CONFIGS["c4ai-command-r-plus"], use_qk_norm=False), "r"))) == (True, 13_312)


def test_cohere_is_one_shift_free_layernorm_per_parallel_block():
    m = models.model_from_hf_dict(dict(CONFIGS["c4ai-command-r-v01"]), "c")
    assert (m.norm, m.parallel_block, m.norms_per_layer, m.tie_embeddings) == ("layernorm_nobias", True, 1, True)
    # 40 layers: attention 4 x 8192^2 + MLP 3 x 8192 x 22528 + one norm of 8192; the tied table; the final norm
    total, _ = models.parameter_counts(m)
    assert total == 40 * (4 * 8192**2 + 3 * 8192 * 22528 + 8192) + 256000 * 8192 + 8192


def test_cohere2_rotates_only_its_sliding_window_layers():
    # 32 layers, pattern 4: layers 3, 7, ..., 31 are global (8 of them) and have no RoPE
    m = models.model_from_hf_dict(dict(CONFIGS["c4ai-command-r7b-12-2024"]), "r7b")
    assert (m.sliding_window, m.sliding_layers, m.nope_layers) == (4096, 24, 8)


@pytest.mark.parametrize("outer, inner", [("mistral3", "mistral"), ("qwen2_5_vl", "qwen2"), ("qwen2_vl", "qwen2")])
def test_vision_language_files_read_their_language_model(outer, inner):
    text = dict(model_type=inner, vocab_size=131072, hidden_size=5120, intermediate_size=32768, num_hidden_layers=40,
                num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=131072,
                hidden_act="silu")
    wrapped = models.model_from_hf_dict({"model_type": outer, "text_config": text, "vision_config": {}}, "w")
    assert (wrapped.family, wrapped.n_layers, wrapped.head_dim) == (inner, 40, 128)
    if outer.startswith("qwen"):  # older Qwen2-VL files list the language model's fields at the top level
        flat = models.model_from_hf_dict(dict(text, model_type=outer, vision_config={}), "f")
        assert (flat.family, flat.qkv_bias) == ("qwen2", True)


def test_unknown_model_type_lists_the_new_families():
    with pytest.raises(RooflineInputError, match="did you mean 'qwen2_moe'") as error:
        models.model_from_hf_dict({"model_type": "qwen2moe"}, "x")
    for family in ("deepseek_v2", "gemma", "granite", "granitemoe", "starcoder2", "olmo2", "olmoe", "cohere",
                   "cohere2"):
        assert family in str(error.value)


@pytest.mark.parametrize("name", ["DeepSeek-V2-Lite", "Qwen1.5-MoE-A2.7B", "granite-3.0-3b-a800m-base",
                                  "OLMoE-1B-7B-0924", "c4ai-command-r7b-12-2024"])
def test_config_only_families_serve_end_to_end(name, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIGS[name]))
    assert main(["serve", "--model", str(path), "--gpu", "h100-sxm", "--isl", "1024", "--osl", "256",
                 "--concurrency", "16", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["fits"] and 0 < row["tpot_s"] <= row["tpot_expected_s"] and 0 < row["ttft_s"] <= row["ttft_expected_s"]


# ---------------------------------------------------------------------------- 2026 checkpoints (wrapped, quantized)
MINIMAX_M2_5 = dict(model_type="minimax_m2", num_hidden_layers=62, hidden_size=3072, num_attention_heads=48,
                    num_key_value_heads=8, head_dim=128, intermediate_size=1536, vocab_size=200064,
                    num_experts_per_tok=8, num_local_experts=256, max_position_embeddings=196608, rotary_dim=64,
                    hidden_act="silu", tie_word_embeddings=False, use_qk_norm=True, qk_norm_type="per_layer",
                    use_routing_bias=True, use_mtp=True, num_mtp_modules=3, shared_intermediate_size=0,
                    quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128]})
QWEN3_5_397B = dict(attn_output_gate=True, full_attention_interval=4, head_dim=256, hidden_act="silu",
                    hidden_size=4096, linear_conv_kernel_dim=4, linear_key_head_dim=128, linear_num_key_heads=16,
                    linear_num_value_heads=64, linear_value_head_dim=128, max_position_embeddings=262144,
                    mlp_only_layers=[], model_type="qwen3_5_moe_text", moe_intermediate_size=1024,
                    mtp_num_hidden_layers=1, num_attention_heads=32, num_experts=512, num_experts_per_tok=10,
                    num_hidden_layers=60, num_key_value_heads=2, shared_expert_intermediate_size=1024,
                    vocab_size=248320, rope_parameters={"partial_rotary_factor": 0.25})


def test_minimax_m2_5_has_its_published_size():
    # MiniMax-M2: 229B total, 10B active without the embedding table and lm_head (11.03 - 2 x 200064 x 3072 = 9.80)
    m = models.model_from_hf_dict(dict(MINIMAX_M2_5), "minimax-m2.5")
    total, active = models.parameter_counts(m)
    assert (round(total / 1e9, 2), round(active / 1e9, 2)) == (228.69, 11.03)
    assert (m.rope_dim, m.qk_norm_full, m.router_bias, m.mtp_layers, m.native_weight_dtype) == \
        (64, True, True, 3, "fp8")


def test_qwen3_5_moe_is_qwen3_next_s_hybrid_without_a_dense_width():
    # Qwen3.5-397B-A17B's language model: 45 Gated DeltaNet + 15 gated attention layers, 512 experts and one shared
    # expert; 397B with its vision tower (0.6B), 17B active
    wrapped = {"model_type": "qwen3_5_moe", "text_config": dict(QWEN3_5_397B), "tie_word_embeddings": False,
               "vision_config": {"depth": 27}}
    m = models.model_from_hf_dict(wrapped, "qwen3.5-397b")
    total, active = models.parameter_counts(m)
    assert (m.family, m.linear_layers, m.n_shared_experts, m.rope_dim, m.intermediate) == ("qwen3_next", 45, 1, 64, 0)
    assert (round(total / 1e9, 2), round(active / 1e9, 2)) == (396.35, 17.35)


def test_kimi_k2_5_reads_its_text_config_and_int4_experts():
    text = dict(model_type="kimi_k2", hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
                num_hidden_layers=61, num_attention_heads=64, num_key_value_heads=64, n_routed_experts=384,
                n_shared_experts=1, num_experts_per_tok=8, first_k_dense_replace=1, kv_lora_rank=512, q_lora_rank=1536,
                qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, vocab_size=163840, hidden_act="silu",
                max_position_embeddings=262144, n_group=1, topk_group=1, bad_words_ids=None,
                quantization_config={"quant_method": "compressed-tensors", "config_groups": {"group_0": {
                    "weights": {"num_bits": 4, "type": "int", "group_size": 32, "strategy": "group"}}},
                    "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*"]})
    m = models.model_from_hf_dict({"model_type": "kimi_k25", "text_config": text, "tie_word_embeddings": False}, "k")
    assert (m.family, m.n_experts, m.native_weight_dtype, m.native_expert_dtype) == ("deepseek_v3", 384, "", "int4")
    assert round(models.parameter_counts(m)[0] / 1e9, 2) == 1026.41  # Kimi-K2's 1T


@pytest.mark.parametrize("quantization, fields", [
    # compressed-tensors over every linear (llm-compressor FP8): the whole checkpoint
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}},
      "ignore": ["lm_head"]}, {"native_weight_dtype": "fp8"}),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float",
                                                                                "group_size": 16}}}},
     {"native_weight_dtype": "nvfp4"}),
    # ModelOpt files that name their producer but no quant_method (Qwen3-32B-FP8-Static-PerTensor)
    ({"quant_algo": "FP8", "producer": {"name": "modelopt", "version": "0.31.0"}}, {"native_weight_dtype": "fp8"}),
])
def test_more_quantization_configs_set_the_native_dtypes(quantization, fields):
    m = models.model_from_hf_dict(dict(CONFIGS["granite-3.1-8b-base"], quantization_config=quantization), "q")
    assert {name: getattr(m, name) for name in fields} == fields


def test_an_unsupported_compressed_tensors_scheme_is_one_line():
    bad = {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 2, "type": "int"}}}}
    with pytest.raises(RooflineInputError, match=r"compressed-tensors\) weights \{'num_bits': 2, 'type': 'int'\} are "
                                                 "not supported"):
        models.model_from_hf_dict(dict(CONFIGS["granite-3.1-8b-base"], quantization_config=bad), "q")


def test_qwen3_vl_takes_the_outer_file_s_tied_embeddings():
    # Qwen3-VL-4B ties its embeddings at the top level of the file, not in text_config
    text = dict(model_type="qwen3_vl_text", hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=151936, hidden_act="silu",
                max_position_embeddings=262144)
    m = models.model_from_hf_dict({"model_type": "qwen3_vl", "text_config": text, "tie_word_embeddings": True}, "v")
    assert (m.family, m.tie_embeddings, m.qk_norm) == ("qwen3", True, True)
    assert round(models.parameter_counts(m)[0] / 1e9, 2) == 4.02  # Qwen3-VL-4B's 4.4B less its 0.4B vision tower


def test_mimo_is_qwen2_with_its_mtp_layer_beside_it():
    # MiMo-7B-Base: 7.62B in its 36 decoder layers (HF counts 7.83B with the MTP layer); one MTP layer for
    # --spec-method mtp
    cfg = dict(model_type="mimo", num_hidden_layers=36, hidden_size=4096, num_attention_heads=32,
               num_key_value_heads=8, head_dim=128, intermediate_size=11008, vocab_size=151680,
               max_position_embeddings=32768, hidden_act="silu", attention_bias=True, use_sliding_window=False,
               sliding_window=32768, max_window_layers=32, num_nextn_predict_layers=1, tie_word_embeddings=False)
    m = models.model_from_hf_dict(cfg, "mimo-7b")
    assert (m.family, m.qkv_bias, m.mtp_layers, m.sliding_layers) == ("qwen2", True, 1, 0)
    assert round(models.parameter_counts(m)[0] / 1e9, 2) == 7.62


# --------------------------------------------------------------------------- found by a review of the readers
def test_modelopt_nvfp4_files_that_keep_attention_16_bit_quantize_the_rest():
    # nvidia/MiniMax-M2.5-NVFP4 lists every layer's self_attn in its ignore list: bf16 attention, NVFP4 elsewhere
    quantization = {"quant_method": "modelopt", "quant_algo": "NVFP4",
                    "ignore": ["lm_head", "model.layers.0.self_attn*", "model.layers.1.self_attn*"]}
    m = models.model_from_hf_dict(dict(MINIMAX_M2_5, quantization_config=quantization), "m")
    assert (m.native_weight_dtype, m.native_expert_dtype, m.native_attention_dtype) == ("nvfp4", "", "bf16")
    resolved = Scenario().for_model(m)
    assert (resolved.weight_dtype, resolved.attention_weights_dtype) == ("nvfp4", "bf16")
    # a file that also keeps shared experts or MLP projections 16-bit (Moonshot's int4 Kimi-K2.5, NVIDIA's Qwen3.5
    # NVFP4) quantizes the routed experts alone
    for kept in ("re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*"):
        both = dict(quantization, ignore=[*quantization["ignore"], kept])
        m = models.model_from_hf_dict(dict(MINIMAX_M2_5, quantization_config=both), "m")
        assert (m.native_weight_dtype, m.native_expert_dtype, m.native_attention_dtype) == ("", "nvfp4", ""), kept


@pytest.mark.parametrize("quantization, message", [
    ({"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION"}, "quant_algo 'MIXED_PRECISION' is not supported"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": [1]}}, "weights None are not supported"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": [4], "type": "int"}}}},
     "weights {'num_bits': [4], 'type': 'int'} are not supported"),
    ({"quant_method": "compressed-tensors", "ignore": 5,
      "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}, "field 'ignore' is 5; expected a list"),
])
def test_malformed_quantization_configs_are_one_line(quantization, message):
    with pytest.raises(RooflineInputError, match=re.escape(message)) as error:
        models.model_from_hf_dict(dict(CONFIGS["granite-3.1-8b-base"], quantization_config=quantization), "q")
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("text_config", [None, [1, 2], "x"])
def test_a_wrapper_without_its_text_config_says_so(text_config):
    with pytest.raises(RooflineInputError, match="model_type 'kimi_k25' keeps its language model in 'text_config'"):
        models.model_from_hf_dict({"model_type": "kimi_k25", "text_config": text_config}, "k")


def test_fields_a_file_may_leave_out_take_transformers_defaults():
    # Gemma head_dim 256 (not 3072 / 16 = 192), MiniMax-M2 head_dim 128, Qwen2-MoE's shared expert 5632 wide,
    # Cohere2's window 4096 on 3 of every 4 layers
    gemma = {k: v for k, v in CONFIGS["gemma-7b"].items() if k != "head_dim"}
    assert models.model_from_hf_dict(gemma, "g").head_dim == 256
    minimax = {k: v for k, v in MINIMAX_M2_5.items() if k != "head_dim"}
    assert models.model_from_hf_dict(minimax, "m").head_dim == 128
    qwen = {k: v for k, v in CONFIGS["Qwen1.5-MoE-A2.7B"].items() if k != "shared_expert_intermediate_size"}
    assert models.model_from_hf_dict(qwen, "q").n_shared_experts == 4  # 5632 / 1408
    cohere2 = {k: v for k, v in CONFIGS["c4ai-command-r7b-12-2024"].items() if k != "sliding_window"}
    assert (models.model_from_hf_dict(cohere2, "c").sliding_window,
            models.model_from_hf_dict(cohere2, "c").sliding_layers) == (4096, 24)


def test_gemma2_gpt_oss_and_llama4_fields_left_out_take_transformers_defaults():
    # transformers' Gemma2Config: head_dim 256, sliding_window 4096 (alternating layers); GptOssConfig: 128;
    # Llama4TextConfig: attention_chunk_size 8192. They had been 3584 / 16 = 224, no window, no chunks
    gemma2 = dict(model_type="gemma2", vocab_size=256000, hidden_size=3584, intermediate_size=14336,
                  num_hidden_layers=42, num_attention_heads=16, num_key_value_heads=8,
                  hidden_activation="gelu_pytorch_tanh", max_position_embeddings=8192)
    spec = models.model_from_hf_dict(gemma2, "g")
    assert (spec.head_dim, spec.sliding_window, spec.sliding_layers) == (256, 4096, 21)
    gpt_oss = json.loads((DATA / "gpt-oss-20b.json").read_text())
    gpt_oss.pop("sliding_window")
    assert (models.model_from_hf_dict(gpt_oss, "o").sliding_window,
            models.model_from_hf_dict(gpt_oss, "o").sliding_layers) == (128, 12)
    scout = json.loads((DATA / "llama-4-scout.json").read_text())
    scout["text_config"].pop("attention_chunk_size")
    assert models.model_from_hf_dict(scout, "s").attention_chunk == 8192


@pytest.mark.parametrize("length", [10, 30])
def test_a_layer_types_list_that_does_not_describe_every_layer_is_refused(length):
    # a list of another length had been set aside for gpt-oss's alternating default, with exit 0
    gpt_oss = dict(json.loads((DATA / "gpt-oss-20b.json").read_text()), layer_types=["full_attention"] * length)
    with pytest.raises(RooflineInputError) as error:
        models.model_from_hf_dict(gpt_oss, "o", "config.json")
    assert str(error.value) == (f"config.json: field 'layer_types' lists {length} layers; expected one kind per layer "
                                "(num_hidden_layers 24)")


def test_hidden_size_not_a_multiple_of_the_heads_needs_head_dim():
    # Falcon-7B's 4544 typed as 4550 had been priced as 71 heads of 64 (q_proj 4550 -> 4544) with exit 0
    falcon = dict(model_type="falcon", vocab_size=65024, hidden_size=4550, num_hidden_layers=32,
                  num_attention_heads=71, multi_query=True, parallel_attn=True, new_decoder_architecture=False)
    with pytest.raises(RooflineInputError, match=r"^f: the hidden size 4550 is not a multiple of the 71 attention "
                                                 r"heads and the file gives no head_dim; give head_dim or fix the"):
        models.model_from_hf_dict(falcon, "f", "f")
    assert models.model_from_hf_dict(dict(falcon, hidden_size=4544), "f", "f").head_dim == 64


def test_flags_and_layer_kinds_are_type_checked():
    with pytest.raises(RooflineInputError, match="field 'use_qk_norm' is 'false'; expected true or false"):
        models.model_from_hf_dict(dict(CONFIGS["c4ai-command-r-plus"], use_qk_norm="false"), "c")
    with pytest.raises(RooflineInputError, match="field 'layer_types' is \\[1, 2, 3, 4\\]; expected a list of layer"):
        models.model_from_hf_dict(dict(QWEN3_5_397B, num_hidden_layers=4, layer_types=[1, 2, 3, 4]), "q")


def test_attention_bias_is_read_and_an_mlp_bias_refused():
    # Granite 3.1 8B with attention_bias: q, k, v, o biases = 4096 + 2 x 1024 + 4096 = 10,240 per layer x 40
    plain = models.parameter_counts(models.model_from_hf_dict(dict(CONFIGS["granite-3.1-8b-base"]), "g"))[0]
    biased = models.model_from_hf_dict(dict(CONFIGS["granite-3.1-8b-base"], attention_bias=True), "g")
    assert models.parameter_counts(biased)[0] - plain == 40 * 10_240
    with pytest.raises(RooflineInputError, match="mlp_bias true is not supported"):
        models.model_from_hf_dict(dict(CONFIGS["granite-3.1-8b-base"], mlp_bias=True), "g")


def test_minimax_partial_rotary_factor_wins_over_rotary_dim():
    # transformers sets partial_rotary_factor from rotary_dim only where none is given
    m = models.model_from_hf_dict(dict(MINIMAX_M2_5, partial_rotary_factor=0.25), "m")
    assert m.rope_dim == 32


def test_whole_projection_qk_norms_all_reduce_their_statistics_under_tp():
    # MiniMax-M2.5 at TP 4, 8 tokens: each of its 62 layers all-reduces the fp32 sum of squares of q and of k:
    # 2 x 62 collectives of 8 tokens x 4 bytes; on one device none
    from roofline.engine.graph import build_operators
    from roofline.engine.parallel import Parallel
    from roofline.engine.scenario import Scenario
    m = models.model_from_hf_dict(dict(MINIMAX_M2_5), "m")
    ops = {op.name: op for op in build_operators(m, "decode", Scenario(batch=8, seq_len=1024, parallel=Parallel(tp=4)))}
    reduce = ops["qk_norm_all_reduce"]
    assert (reduce.count, reduce.span, reduce.cost.act_read) == (124, 4, 8 * 4)
    assert "qk_norm_all_reduce" not in {op.name for op in build_operators(m, "decode", Scenario(batch=8))}
