"""Mixture of experts, multi-head latent attention and the HF config loader: exact small-integer tests, issue 5's
expectations (experts touched per decode step, routing switches, parameter counts) and the loader's errors."""
from __future__ import annotations

import csv
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from roofline.engine import formulas as f
from roofline.engine import models
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.scenario import Scenario

HF_CONFIGS = Path(__file__).parent / "data" / "hf_configs"
SHARED_HF_FILES = ("deepseek-v3", "gpt2", "llama-2-7b", "llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b")


def _csv_rows() -> dict[str, dict[str, str]]:
    with resources.files("roofline").joinpath("data/models.csv").open(newline="") as handle:
        return {row["key"]: row for row in csv.DictReader(handle)}


def _matches_csv(value_b: float, text: str) -> bool:
    """value (in billions) equals the CSV number to the decimals the CSV writes (37.55 -> 2, 671.026 -> 3)."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(value_b, decimals) == pytest.approx(float(text), abs=1e-9)


def _ops(spec, stage, **scenario):
    return {op.name: op for op in build_operators(spec, stage, Scenario(**scenario))}


# ------------------------------------------------------------------------------------- experts touched (issue 5)
def test_distinct_experts_uniform_exact():
    # E=4, k=2: an expert is idle with probability (1 - 2/4)^T = (1/2)^T
    # T=1: 4 * (1 - 1/2) = 2; T=2: 4 * (1 - 1/4) = 3; T=3: 4 * (1 - 1/8) = 3.5
    assert f.distinct_experts(np.array([1, 2, 3]), 4, 2).tolist() == [2.0, 3.0, 3.5]
    # E=8, k=2, T=2: 8 * (1 - (3/4)^2) = 8 * 7/16 = 3.5
    assert f.distinct_experts(2, 8, 2) == 3.5


def test_distinct_experts_balanced_and_all():
    # balanced = min(E, T*k): E=8, k=2 -> T=1: 2, T=3: 6, T=5: min(8, 10) = 8; all = E whatever T
    assert f.distinct_experts(np.array([1, 3, 5]), 8, 2, "balanced").tolist() == [2, 6, 8]
    assert f.distinct_experts(np.array([1, 64]), 8, 2, "all").tolist() == [8, 8]


@pytest.mark.parametrize("key", ["mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"])
def test_decode_loads_topk_experts_at_batch_1_and_nearly_all_at_64(key):
    m = models.get_model(key)
    E, k, D, Fe = m.n_experts, m.top_k, m.hidden, m.moe_intermediate
    matrix = D * Fe * 2  # one expert's gate (or up, or down) matrix in fp16 bytes (DeepSeek-V3 is natively fp8)
    for batch, expected in ((1, k), (64, E * (1 - (1 - k / E) ** 64))):
        op = _ops(m, "decode", batch=batch, seq_len=128, weight_dtype="fp16")["expert_up_proj"]
        assert op.cost.weight / matrix == pytest.approx(expected, rel=1e-12)
        assert op.count == m.n_moe_layers
        # FLOPs follow top-k per token whatever the routing: 2 * batch * k * D * Fe
        assert op.cost.flops == 2 * batch * k * D * Fe
    touched_64 = _ops(m, "decode", batch=64, seq_len=128, weight_dtype="fp16")["expert_up_proj"].cost.weight / matrix
    # mixtral 8 * (1 - 0.75^64) = 7.99999; qwen3 128 * (1 - (15/16)^64) = 125.9; deepseek 256 * (1 - (31/32)^64) = 222.6
    assert touched_64 > 0.85 * E


def test_routing_switches_change_weight_bytes_not_flops():
    m = models.get_model("mixtral-8x7b")  # E=8, k=2
    matrix = 4096 * 14336 * 2
    for routing, batch, touched in (("uniform", 1, 2), ("balanced", 1, 2), ("balanced", 3, 6), ("balanced", 64, 8),
                                    ("all", 1, 8), ("uniform", 3, 8 * (1 - 0.75 ** 3))):
        op = _ops(m, "decode", batch=batch, seq_len=64, expert_routing=routing)["expert_down_proj"]
        assert op.cost.weight == pytest.approx(touched * matrix, rel=1e-12), (routing, batch)
        assert op.cost.flops == 2 * batch * 2 * 14336 * 4096


# ------------------------------------------------------------------------------------------- parameter counts
@pytest.mark.parametrize("key", ["mixtral-8x7b", "mixtral-8x22b", "qwen3-30b-a3b", "deepseek-v3"])
def test_moe_total_and_active_parameters_match_models_csv(key):
    row = _csv_rows()[key]
    total, active = models.parameter_counts(models.get_model(key))
    assert _matches_csv(total / 1e9, row["computed_params_B"])
    assert _matches_csv(active / 1e9, row["computed_active_params_B"])
    # and the published totals to the precision they are published (46.7, 141, 30.5, 671; 12.9, 39, 3.3, 37)
    assert total / 1e9 == pytest.approx(float(row["total_params_B"]), rel=0.01)
    assert active / 1e9 == pytest.approx(float(row["active_params_B"]), rel=0.05)


def test_deepseek_v3_total_is_the_published_layer_by_layer_count():
    # 671,026,419,200 includes the router's e_score_correction_bias: 58 MoE layers x 256 experts = 14,848
    total, active = models.parameter_counts(models.get_model("deepseek-v3"))
    assert total == 671_026_419_200
    assert active == 37_552_297_472


def _tiny_deepseek(**overrides) -> dict:
    cfg = dict(model_type="deepseek_v3", hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
               num_key_value_heads=2, intermediate_size=16, moe_intermediate_size=4, n_routed_experts=4,
               num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=6, kv_lora_rank=4,
               qk_nope_head_dim=2, qk_rope_head_dim=2, v_head_dim=3, vocab_size=32, max_position_embeddings=64,
               hidden_act="silu")
    cfg.update(overrides)
    return cfg


def test_tiny_deepseek_parameter_count_with_router_bias():
    m = models.model_from_hf_dict(_tiny_deepseek(), "tiny-ds")
    # embed 32*8 = 256; untied lm_head 256; final norm 8
    # attention/layer: q 8*6 + 6 + 6*2*(2+2) = 102; kv 8*(4+2) + 4 + 4*2*(2+3) = 92; o 2*3*8 = 48 -> 242
    # + 2 RMSNorms 16 -> 258 per layer, x2 = 516; dense MLP (layer 0) 3*8*16 = 384
    # MoE layer 1: router 8*4 + 4 bias = 36; 4 experts * 3*8*4 = 384; 1 shared 96 -> 516
    # total 256 + 256 + 8 + 516 + 384 + 516 = 1936; active: MoE 36 + 2*96 + 96 = 324 -> 1936 - 516 + 324 = 1744
    assert models.parameter_counts(m) == (1936, 1744)
    router = _ops(m, "decode", batch=1, seq_len=4)["router"]
    assert router.count == 1
    # router GEMM 2*T*D*E = 2*1*8*4 = 64 FLOPs; weights (8*4 + 4) * 2 bytes = 72
    assert router.cost.flops == 64 and router.cost.weight == 72


# ------------------------------------------------------------------------------------- MLA operators, exact
def test_mla_decode_modes_exact():
    m = models.model_from_hf_dict(_tiny_deepseek(), "tiny-ds")
    B, S = 1, 3  # decode: one new token attending S + 1 = 4 keys; H=2, C=4, R=2, dn=2, dv=3, dq=4
    absorbed = _ops(m, "decode", batch=B, seq_len=S, attention="eager")  # QK and PV as separate rows
    # q_absorb: [B*H, dn] @ [dn, C] = 2*2*2*4 = 32; out_absorb [B*H, C] @ [C, dv] = 2*2*4*3 = 48
    assert absorbed["q_absorb"].cost.flops == 32 and absorbed["out_absorb"].cost.flops == 48
    # attention over the latent: QK 2*B*H*Skv*(C+R) = 2*1*2*4*6 = 96; PV 2*B*H*Skv*C = 2*1*2*4*4 = 64
    assert absorbed["qk_matmul"].cost.flops == 96 and absorbed["sv_matmul"].cost.flops == 64
    # their weights, fp16: W_UK per head [dn, C] = 2 heads * 2 * 4 * 2 B = 32; W_UV per head [C, dv] = 2*4*3*2 = 48
    # (read once per head, not once for all heads)
    assert absorbed["q_absorb"].cost.weight == 32 and absorbed["out_absorb"].cost.weight == 48
    # QK reads the latent cache once for all heads: Skv * (C + R) * 2 B = 4 * 6 * 2 = 48
    assert absorbed["qk_matmul"].cost.kv_read == 48
    # RoPE on the H query heads and the one shared rope key: 3 FLOPs * T * (H + 1) * R = 3 * 1 * 3 * 2 = 18
    assert absorbed["rope"].cost.flops == 18
    assert "kv_b_proj" not in absorbed
    naive = _ops(m, "decode", batch=B, seq_len=S, mla_mode="naive", attention="eager")
    # re-expands all 4 cached latents: 2 * 4 rows * C * H*(dn+dv) = 2*4*4*10 = 320
    assert naive["kv_b_proj"].cost.flops == 320
    # per-head attention: QK 2*1*2*4*4 = 64; PV 2*1*2*4*3 = 48
    assert naive["qk_matmul"].cost.flops == 64 and naive["sv_matmul"].cost.flops == 48
    decompressed = _ops(m, "decode", batch=B, seq_len=S, mla_mode="decompressed")
    assert decompressed["kv_b_proj"].cost.flops == 2 * 1 * 4 * 10  # the new token only: 80
    # cached elements per token and layer: latent C+R = 6; decompressed H*(dq+dv) = 2*(4+3) = 14
    assert models.kv_elements_per_token(m) == 6 and models.kv_elements_per_token(m, "decompressed") == 14


def test_mla_without_q_lora_uses_q_proj():
    m = models.model_from_hf_dict(_tiny_deepseek(q_lora_rank=None), "tiny-ds")
    ops = _ops(m, "prefill", batch=1, seq_len=2)
    assert "q_proj" in ops and "q_a_proj" not in ops
    # q_proj: 2*T*D*H*dq = 2*2*8*2*4 = 256
    assert ops["q_proj"].cost.flops == 256


# ------------------------------------------------------------------------------------------ the HF loader
@pytest.mark.parametrize("name", SHARED_HF_FILES)
def test_loader_accepts_each_shared_config_and_counts_match_models_csv(name):
    spec = models.model_from_hf_config(HF_CONFIGS / f"{name}.json")
    row = _csv_rows()[name]
    total, active = models.parameter_counts(spec)
    assert round(total / 1e9, 3) == pytest.approx(float(row["computed_params_B"]), abs=1e-9)
    if row["computed_active_params_B"]:
        assert _matches_csv(active / 1e9, row["computed_active_params_B"])
    # the loaded spec is the catalog's architecture (costs identical)
    catalog = models.get_model(name)
    assert models.parameter_counts(catalog) == (total, active)
    sc = Scenario(batch=4, seq_len=256)
    for stage in ("prefill", "decode"):
        assert [(o.name, o.count, o.cost) for o in build_operators(spec, stage, sc)] == \
               [(o.name, o.count, o.cost) for o in build_operators(catalog, stage, sc)]


@pytest.mark.parametrize("name, field", [
    ("deepseek-v3", "kv_lora_rank"), ("deepseek-v3", "qk_rope_head_dim"), ("deepseek-v3", "v_head_dim"),
    ("deepseek-v3", "q_lora_rank"), ("deepseek-v3", "first_k_dense_replace"), ("deepseek-v3", "n_shared_experts"),
    ("deepseek-v3", "n_routed_experts"), ("mixtral-8x7b", "num_local_experts"),
    ("mixtral-8x7b", "num_experts_per_tok"), ("llama-3.1-8b", "intermediate_size"), ("gpt2", "n_embd"),
])
def test_missing_field_error_names_the_field(tmp_path, name, field):
    cfg = json.loads((HF_CONFIGS / f"{name}.json").read_text())
    del cfg[field]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    with pytest.raises(RooflineInputError, match=f"needs field '{field}'.*which the file lacks") as error:
        models.model_from_hf_config(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_expert_count_aliases_written_by_transformers_5():
    # transformers >= 5 saves Qwen3-MoE's num_experts as num_local_experts (and accepts either for Mixtral/DeepSeek)
    base = json.loads((HF_CONFIGS / "mixtral-8x7b.json").read_text())
    renamed = dict(base, num_experts=base.pop("num_local_experts"))
    assert models.model_from_hf_dict(renamed, "m").n_experts == 8
    ds = _tiny_deepseek()
    ds["num_local_experts"] = ds.pop("n_routed_experts")
    assert models.model_from_hf_dict(ds, "d").n_experts == 4
    qwen = dict(model_type="qwen3_moe", hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, head_dim=4, intermediate_size=16, moe_intermediate_size=4,
                num_local_experts=4, num_experts_per_tok=2, vocab_size=32, max_position_embeddings=64,
                hidden_act="silu")
    assert models.model_from_hf_dict(qwen, "q").n_experts == 4


def test_qwen3_moe_dense_layers_from_sparse_step_and_mlp_only_layers():
    qwen = dict(model_type="qwen3_moe", hidden_size=8, num_hidden_layers=4, num_attention_heads=2,
                num_key_value_heads=1, head_dim=4, intermediate_size=16, moe_intermediate_size=4, num_experts=4,
                num_experts_per_tok=2, vocab_size=32, max_position_embeddings=64, hidden_act="silu",
                decoder_sparse_step=2, mlp_only_layers=[3])
    m = models.model_from_hf_dict(qwen, "q")
    # MoE iff i not in [3] and (i+1) % 2 == 0: i = 1 only -> 1 MoE layer, 3 dense (intermediate 16)
    assert (m.n_moe_layers, m.n_dense_layers) == (1, 3)
    ops = _ops(m, "decode", batch=1, seq_len=4)
    assert ops["router"].count == 1 and ops["gate_proj"].count == 3
    # gate_proj: 2*1*8*16 = 256 FLOPs; expert_gate_proj 2*1*2*8*4 = 128
    assert ops["gate_proj"].cost.flops == 256 and ops["expert_gate_proj"].cost.flops == 128


def test_layer_types_decide_the_sliding_layers():
    gemma = dict(model_type="gemma2", hidden_size=8, num_hidden_layers=3, num_attention_heads=2,
                 num_key_value_heads=1, head_dim=4, intermediate_size=16, vocab_size=32, max_position_embeddings=64,
                 hidden_activation="gelu_pytorch_tanh", sliding_window=4)
    assert models.model_from_hf_dict(gemma, "g").sliding_layers == 2  # default alternation: layers 0 and 2
    typed = dict(gemma, layer_types=["full_attention", "sliding_attention", "full_attention"])
    m = models.model_from_hf_dict(typed, "g")
    assert (m.sliding_window, m.sliding_layers) == (4, 1)
    ops = _ops(m, "decode", batch=1, seq_len=9, attention="eager")
    # one windowed layer attends min(9+1, 4) = 4 keys: QK 2*1*2*4*4 = 64; two global layers 10 keys: 160 each
    assert (ops["qk_matmul_swa"].count, ops["qk_matmul_swa"].cost.flops) == (1, 64)
    assert (ops["qk_matmul"].count, ops["qk_matmul"].cost.flops) == (2, 160)


def _tiny_falcon(**overrides) -> dict:
    cfg = dict(model_type="falcon", hidden_size=8, num_hidden_layers=2, num_attention_heads=2, vocab_size=32,
               multi_query=True, parallel_attn=True, new_decoder_architecture=False, bias=False)
    cfg.update(overrides)
    return cfg


def test_falcon_norms_follow_the_decoder_layer_variant():
    seven = models.model_from_hf_dict(_tiny_falcon(), "f7")
    # Falcon-7B: one shared input_layernorm per layer, MQA: Hkv = 1, d = 4
    # attention 8*2*4 + 2*8*1*4 + 2*4*8 = 64 + 64 + 64 = 192; MLP 2*8*32 = 512; LayerNorm 2*8 = 16 -> 720/layer
    # total 2*720 + 32*8 (tied embedding) + 16 (final norm) = 1712
    assert (seven.n_kv_heads, seven.norms_per_layer) == (1, 1)
    assert models.parameter_counts(seven)[0] == 1712
    assert "mlp_norm" not in _ops(seven, "decode", batch=1, seq_len=4)
    forty = models.model_from_hf_dict(_tiny_falcon(num_attention_heads=4, new_decoder_architecture=True,
                                                   num_kv_heads=2, bias=True), "f40")
    # new_decoder_architecture: ln_attn + ln_mlp, GQA with num_kv_heads 2, d = 2, biases on every linear
    # attention 64 + 2*8*2*2 + 64 = 192 + biases (8 + 8) + 8 = 216; MLP 512 + 32 + 8 = 552; norms 32 -> 800/layer
    # total 2*800 + 256 + 16 = 1872
    assert (forty.n_kv_heads, forty.norms_per_layer, forty.parallel_block) == (2, 2, True)
    assert models.parameter_counts(forty)[0] == 1872
    assert _ops(forty, "decode", batch=1, seq_len=4)["mlp_norm"].count == 2
    sequential = models.model_from_hf_dict(_tiny_falcon(parallel_attn=False), "fs")
    assert (sequential.norms_per_layer, sequential.parallel_block) == (2, False)


def test_opt_word_embedding_projection_is_refused_by_name():
    opt = dict(model_type="opt", hidden_size=16, num_hidden_layers=2, num_attention_heads=2, ffn_dim=32,
               vocab_size=32, max_position_embeddings=64, activation_function="relu", word_embed_proj_dim=8)
    with pytest.raises(RooflineInputError, match="word_embed_proj_dim 8 != hidden_size 16"):
        models.model_from_hf_dict(opt, "opt-350m-like")
    assert models.model_from_hf_dict(dict(opt, word_embed_proj_dim=16), "o").hidden == 16


def test_fused_attention_with_value_heads_narrower_than_key_heads():
    # B=1, H=2, Hkv=1, S=3 queries, 6 (query, key) pairs, Skv=3, d=4 (QK), dv=2 (PV), fp16 a=c=2:
    # FLOPs = B*H*pairs*(2d + 2dv + 5 softmax) = 2*6*(8+4+5) = 204; O written at dv: 1*2*3*2*2 = 24 B;
    # Q read at d: 1*2*3*4*2 = 48 B; the cache rows K and V: 1*1*3*(4+2)*2 = 36 B
    from roofline.engine import formulas as f

    cost = f.fused_attention(1, 2, 1, 3, 6, 3, 4, 2, 2, 2)
    assert (cost.flops, cost.act_write, cost.act_read, cost.kv_read) == (204, 24, 48, 36)
