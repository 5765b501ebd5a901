"""DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning indexer's weights, FLOPs, bytes and key cache on
small integers, the top-k cap on the MLA core, the config readers (deepseek_v32, glm_moe_dsa) with the published
sizes, and the device rule (the indexer computes in fp8)."""
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from roofline.cli.app import main
from roofline.engine import formulas as f
from roofline.engine import hardware, models
from roofline.engine.analysis import analyze, kv_cache_bytes, prepare
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario

HF_CONFIGS = Path(__file__).parent / "data" / "hf_configs"

#: GLM-5 (zai-org/GLM-5 config.json, the fields the loader reads)
GLM_5 = dict(model_type="glm_moe_dsa", first_k_dense_replace=3, hidden_act="silu", hidden_size=6144,
             index_head_dim=128, index_n_heads=32, index_topk=2048, intermediate_size=12288, kv_lora_rank=512,
             max_position_embeddings=202752, moe_intermediate_size=2048, moe_layer_freq=1, n_group=1,
             n_routed_experts=256, n_shared_experts=1, num_attention_heads=64, num_experts_per_tok=8,
             num_hidden_layers=78, num_key_value_heads=64, num_nextn_predict_layers=1, q_lora_rank=2048,
             qk_nope_head_dim=192, qk_rope_head_dim=64, topk_group=1, v_head_dim=256, vocab_size=154880,
             tie_word_embeddings=False, head_dim=64)
#: a tiny sparse model: 2 layers, D 16, 2 heads, latent 8 + rope 4, indexer 2 heads of 4, top-k 3
TINY = dict(model_type="deepseek_v32", hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, intermediate_size=32, moe_intermediate_size=8, n_routed_experts=4,
            num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1, q_lora_rank=8, kv_lora_rank=8,
            qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4, vocab_size=64, max_position_embeddings=4096,
            index_n_heads=2, index_head_dim=4, index_topk=3, tie_word_embeddings=False, hidden_act="silu")


def tiny():
    return models.model_from_hf_dict(dict(TINY), "tiny-dsa")


def ops_of(model, stage, batch, seq_len, kv_dtype="bf16"):
    scenario = Scenario(weight_dtype="bf16", act_dtype="bf16", kv_dtype=kv_dtype, batch=batch, seq_len=seq_len,
                        attention="flash")
    return {op.name: op for op in build_operators(model, stage, prepare(model, hardware.get_accelerator("h100-sxm"),
                                                                        stage, scenario))}


def test_indexer_scores_formula_on_small_integers():
    # B 2 sequences, Hi 2 heads of di 4, one query each over 5 keys, 3 selected, keys of 8 bytes:
    # FLOPs 2 x 5 pairs x (2 heads x (2 x 4 + 3) + 1) = 230; queries and their fp32 weights 2 x 1 x 2 x (4 + 4) =
    # 32 bytes; indices 2 x 3 x 4 = 24 bytes; keys 2 x 5 x 8 = 80 bytes
    cost = f.indexer_scores(B=2, Hi=2, di=4, S=1, pairs=5, Skv=5, selected=3, key_bytes=8)
    assert (cost.flops, cost.act_read, cost.act_write, cost.kv_read) == (230, 32, 24, 80)


def test_indexer_weights_and_key_cache_bytes():
    m = tiny()
    # wq_b 8 x (2 x 4) = 64, wk 16 x 4 = 64, k_norm 2 x 4 = 8, weights_proj 16 x 2 = 32: 168 per layer
    assert models.indexer_params(m) == 168
    # 4 fp8 keys + one fp32 scale per block of 128 channels
    assert models.indexer_cache_bytes_per_token(m) == 8
    # latent (8 + 4) x 2 bytes + the indexer's 8 bytes, per token and layer; 2 layers, 3 sequences of 10 tokens
    scenario = Scenario(weight_dtype="bf16", act_dtype="bf16", kv_dtype="bf16", batch=3, seq_len=10)
    assert kv_cache_bytes(m, "prefill", scenario) == 3 * 10 * 2 * (12 * 2 + 8)
    dense = models.model_from_hf_dict({**TINY, "model_type": "deepseek_v3"}, "tiny-dense")
    assert models.parameter_counts(m)[0] - models.parameter_counts(dense)[0] == 2 * 168
    # an fp8 cache holds FlashMLA's sparse layout: 8 fp8 latent values + one fp32 scale + 4 RoPE dims at 2 bytes = 20,
    # with the indexer's 8: 28 per token and layer (GLM-5: 512 + 16 + 128 = 656, and 132)
    assert kv_cache_bytes(m, "prefill", scenario.with_(kv_dtype="fp8")) == 3 * 10 * 2 * 28
    assert models.sparse_latent_fp8_bytes_per_token(models.model_from_hf_dict(dict(GLM_5), "glm-5")) == 656


def test_decode_reads_every_indexer_key_and_the_top_k_latents():
    m = tiny()
    # seq_len 9: the new token's query scores 10 keys; MLA (absorbed) reads the top 3 latent rows of 12 elements
    ops = ops_of(m, "decode", batch=2, seq_len=9)
    scores, core = ops["indexer_scores"], ops["fused_attention"]
    assert scores.compute_dtype == "fp8" and scores.count == 2
    assert scores.cost.flops == 2 * 10 * (2 * (2 * 4 + 3) + 1)
    assert scores.cost.kv_read == 2 * 10 * 8 and scores.cost.act_write == 2 * 3 * 4
    assert core.cost.kv_read == 2 * 1 * 3 * 12 * 2
    # below the top-k every key is attended: seq_len 1 -> 2 keys
    short = ops_of(m, "decode", batch=2, seq_len=1)
    assert short["fused_attention"].cost.kv_read == 2 * 1 * 2 * 12 * 2
    assert short["indexer_scores"].cost.act_write == 2 * 2 * 4


def test_prefill_visits_the_top_k_pairs_and_the_indexer_all_causal_pairs():
    m = tiny()
    ops = ops_of(m, "prefill", batch=1, seq_len=6)
    # indexer: 6 x 7 / 2 = 21 causal pairs; core: sum_i min(i, 3) = 1 + 2 + 3 + 3 + 3 + 3 = 15 pairs per head
    assert ops["indexer_scores"].cost.flops == 21 * (2 * (2 * 4 + 3) + 1)
    assert ops["indexer_scores"].cost.act_write == 15 * 4 and ops["indexer_scores"].cost.kv_read == 0
    dq, dv = 8, 4  # decompressed prefill: nope 4 + rope 4 per query/key head, values of 4
    assert ops["fused_attention"].cost.flops == 2 * 15 * (2 * dq + 2 * dv + f.SOFTMAX_FLOPS_PER_ELEMENT)
    for name in ("indexer_wq_b", "indexer_wk", "indexer_weights_proj", "indexer_k_norm", "indexer_rope",
                 "indexer_cache_write"):
        assert ops[name].count == 2


def test_glm_5_and_deepseek_v3_2_have_their_published_sizes():
    glm = models.model_from_hf_dict(dict(GLM_5), "glm-5")
    total, active = models.parameter_counts(glm)
    assert round(total / 1e9, 1) == 743.9  # published: 744B
    assert (glm.index_n_heads, glm.index_head_dim, glm.index_topk) == (32, 128, 2048)
    v3 = json.loads((HF_CONFIGS / "deepseek-v3.json").read_text())
    dense = models.model_from_hf_dict(dict(v3), "deepseek-v3")
    sparse = models.model_from_hf_dict({**v3, "model_type": "deepseek_v32", "index_n_heads": 64,
                                        "index_head_dim": 128, "index_topk": 2048}, "deepseek-v3.2")
    # 61 indexers of 1536 x 8192 + 7168 x 128 + 256 + 7168 x 64 = 13,959,424 weights
    assert models.parameter_counts(sparse)[0] - models.parameter_counts(dense)[0] == 61 * 13_959_424


def test_sparse_attention_makes_long_decode_cheaper_than_dense_mla():
    glm = models.model_from_hf_dict(dict(GLM_5), "glm-5")
    dense = models.model_from_hf_dict({**GLM_5, "model_type": "deepseek_v3"}, "glm-5-dense")
    gpu = hardware.get_accelerator("h200-sxm")
    scenario = Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8", parallel=Parallel(tp=8), batch=32,
                        seq_len=65536)
    sparse_t = analyze(glm, gpu, "decode", scenario)[1]["tpot_s"]
    dense_t = analyze(dense, gpu, "decode", scenario)[1]["tpot_s"]
    assert sparse_t < 0.6 * dense_t
    short = scenario.with_(seq_len=1024)  # below the top-k the indexer only adds work
    assert analyze(glm, gpu, "decode", short)[1]["tpot_s"] > analyze(dense, gpu, "decode", short)[1]["tpot_s"]


def test_a_device_without_fp8_is_refused_in_one_line():
    with pytest.raises(RooflineInputError, match="indexer computes in fp8.*a100-sxm-80gb"):
        prepare(tiny(), hardware.get_accelerator("a100-sxm-80gb"), "decode", Scenario())


def test_malformed_sparse_configs_are_one_line():
    with pytest.raises(RooflineInputError, match="index_topk"):
        models.model_from_hf_dict({**TINY, "index_topk": None}, "bad")
    for change in ({"kv_lora_rank": 0, "head_dim": 4}, {"index_n_heads": 0}, {"sliding_window": 8,
                                                                                "sliding_layers": 1}):
        with pytest.raises(RooflineInputError, match="sparse attention .* needs MLA"):
            replace(tiny(), **change).validate()


def test_glm_5_serves_end_to_end(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GLM_5))
    fp8 = ["--weight-dtype", "fp8", "--act-dtype", "fp8", "--kv-dtype", "fp8"]
    assert main(["serve", "--model", str(path), "--gpu", "h200-sxm", "--tp", "8", *fp8, "--isl", "8192", "--osl",
                 "1024", "--concurrency", "32", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["fits"] and 0 < row["tpot_s"] <= row["tpot_expected_s"] and 0 < row["ttft_s"] <= row["ttft_expected_s"]
    assert np.isfinite(row["tokens_per_s_expected"]) and row["estimate"] == "partial"


def test_a_config_with_a_device_without_fp8_stops_before_any_job_and_the_search_skips_it(tmp_path):
    from roofline.pipeline import config as rc
    from roofline.serving.candidates import parallel_plans
    config = {"models": {"glm-5": {}}, "gpus": {"h200-sxm": {}, "rtx-a6000": {}}, "stages": ["decode"],
              "scenario": {}}
    with pytest.raises(RooflineInputError, match="model 'glm-5': its sparse-attention indexer .* gpu 'rtx-a6000'"):
        rc.resolve_config(config, tmp_path)
    glm = models.get_model("glm-5")
    assert parallel_plans(glm, hardware.get_accelerator("a100-sxm-80gb"), 8) == []
    assert parallel_plans(glm, hardware.get_accelerator("h200-sxm"), 8)


def test_every_tensor_parallel_rank_holds_the_whole_indexer_and_its_keys():
    from roofline.engine.analysis import kv_share_per_device
    from roofline.engine.parallel import weight_params_per_device
    m = tiny()
    total = models.parameter_counts(m)[0]
    # 2 ranks: everything but the replicated parts is halved; the two indexers (2 x 168) stay whole on each
    whole, split = weight_params_per_device(m, Parallel(tp=1)), weight_params_per_device(m, Parallel(tp=2))
    assert whole == total
    dense = models.model_from_hf_dict({**TINY, "model_type": "deepseek_v3"}, "tiny-dense")
    dense_split = weight_params_per_device(dense, Parallel(tp=2))
    assert split - dense_split == 2 * 168
    # decompressed MLA splits its per-head K/V (2 heads x (8 + 4) x 2 bytes = 48 per token and layer) over the ranks,
    # not the indexer's 8 bytes: (48 / 2 + 8) / (48 + 8)
    scenario = Scenario(kv_dtype="bf16", mla_mode="decompressed", parallel=Parallel(tp=2))
    assert kv_share_per_device(m, scenario, 1) == pytest.approx((48 / 2 + 8) / 56)


def test_expected_time_lookups_key_the_core_on_its_top_k_and_the_indexer_on_every_key():
    from roofline.estimate.step import keys_per_sequence
    m = tiny()
    ops = ops_of(m, "decode", batch=1, seq_len=9)
    assert keys_per_sequence(m, ops["fused_attention"], 9) == 3
    assert keys_per_sequence(m, ops["indexer_scores"], 9) == 10
    assert keys_per_sequence(m, ops["fused_attention"], 1) == 2


def test_prefix_cached_prompts_charge_each_attention_row_its_uncached_pairs():
    from roofline.serving.steps import uncached_attention
    m = tiny()
    scenario = prepare(m, hardware.get_accelerator("h100-sxm"), "prefill", Scenario(attention="flash"))
    whole = {op.name: op.cost for op in uncached_attention(m, scenario, 6.0, 0.0)}
    rest = {op.name: op.cost for op in uncached_attention(m, scenario, 6.0, 2.0)}
    # 6 queries, 2 cached: the indexer's causal pairs 21 - 3 = 18 of 21; the top-3 core's 15 - 3 = 12 of 15
    # (1 + 2 + 3 + 3 + 3 + 3 against 1 + 2); every kind of traffic in proportion
    assert rest["indexer_scores"].flops == pytest.approx(whole["indexer_scores"].flops * 18 / 21)
    assert rest["fused_attention"].flops == pytest.approx(whole["fused_attention"].flops * 12 / 15)
    assert rest["fused_attention"].bytes == pytest.approx(whole["fused_attention"].bytes * 12 / 15)
    eager = prepare(m, hardware.get_accelerator("h100-sxm"), "prefill", Scenario(attention="eager"))
    blocks = {op.name: op.cost.flops for op in uncached_attention(m, eager, 6.0, 2.0)}
    full = {op.name: op.cost.flops for op in uncached_attention(m, eager, 6.0, 0.0)}
    assert blocks["qk_matmul"] == pytest.approx(full["qk_matmul"] * 4 / 6)  # the full S x S block: 4 of 6 rows
