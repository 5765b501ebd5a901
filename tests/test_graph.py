"""The operator graph of a tiny model, checked by hand, and whole-model cross-checks."""
import math

import pytest

from roofline.engine import analysis, graph, hardware, models
from roofline.engine.scenario import Scenario


def _ops(model, stage, **kw):
    return {op.name: op for op in graph.build_operators(model, stage, Scenario(**kw))}


def test_tiny_prefill_rows(tiny):
    # B=1, S=4 -> T=4 tokens; D=8, H=2, Hkv=1, d=4, F=16, V=32, fp16, eager attention (three attention rows)
    ops = _ops(tiny, "prefill", batch=1, seq_len=4, attention="eager")
    assert list(ops) == ["embedding", "attn_norm", "q_proj", "k_proj", "v_proj", "rope", "kv_cache_write",
                         "qk_matmul", "softmax", "sv_matmul", "o_proj", "attn_add", "mlp_norm", "gate_proj",
                         "up_proj", "mlp_act", "down_proj", "mlp_add", "final_norm", "lm_head"]
    assert ops["q_proj"].count == 2 and ops["final_norm"].count == 1
    # q_proj: 2*4*8*8 = 512 FLOPs; k_proj 2*4*8*4 = 256
    assert ops["q_proj"].cost.flops == 512 and ops["k_proj"].cost.flops == 256
    # eager qk: full 4x4 block: 2*1*2*4*4*4 = 256 FLOPs. Prefill reads the fresh K (activations), once per KV
    # head: 1*1*4*4*2 = 32 bytes, plus Q 1*2*4*4*2 = 64 -> act_read 96; nothing from the KV cache
    qk = ops["qk_matmul"].cost
    assert qk.flops == 256 and qk.act_read == 96 and qk.kv_read == 0
    # with an int8 cache, prefill attention still reads K at the activation width and computes at fp16
    int8 = _ops(tiny, "prefill", batch=1, seq_len=4, kv_dtype="int8", attention="eager")["qk_matmul"]
    assert int8.cost == qk and int8.compute_dtype == "fp16"
    # SwiGLU acts on F=16: 5*4*16 = 320 FLOPs
    assert ops["mlp_act"].cost.flops == 320
    # lm_head for the last token only: 2*1*8*32 = 512
    assert ops["lm_head"].cost.flops == 512
    assert _ops(tiny, "prefill", batch=1, seq_len=4, logits="all")["lm_head"].cost.flops == 4 * 512
    # KV write: 4 tokens x 2*1*4 elements x 2 bytes = 64
    assert ops["kv_cache_write"].cost.kv_write == 64


def test_tiny_decode_attends_cache_plus_new_token(tiny):
    # decode with 4 cached tokens: one new token attends 5 keys: qk 2*1*2*1*5*4 = 80 FLOPs
    ops = _ops(tiny, "decode", batch=1, seq_len=4, attention="eager")
    assert ops["qk_matmul"].cost.flops == 80
    # K cache read once: 5 keys * 1 head * 4 * 2 bytes = 40, and not again in sv_matmul's K (only V: 40)
    assert ops["qk_matmul"].cost.kv_read == 40 and ops["sv_matmul"].cost.kv_read == 40
    # an int8 cache halves them: 5 * 4 * 1 = 20
    int8 = _ops(tiny, "decode", batch=1, seq_len=4, kv_dtype="int8", attention="eager")
    assert int8["qk_matmul"].cost.kv_read == 20 and int8["sv_matmul"].cost.kv_read == 20


def test_flash_is_causal_and_never_moves_more_bytes(tiny):
    eager = _ops(tiny, "prefill", seq_len=4, attention="eager")
    flash = _ops(tiny, "prefill", seq_len=4, attention="flash")
    assert "qk_matmul" not in flash and "fused_attention" in flash
    # causal pairs 4*5/2 = 10 per head: 1*2*10*(2*4 + 2*4 + 5) = 420
    assert flash["fused_attention"].cost.flops == 420
    eager_bytes = sum(eager[n].cost.bytes for n in ("qk_matmul", "softmax", "sv_matmul"))
    assert flash["fused_attention"].cost.bytes < eager_bytes


def test_sliding_window_caps_decode_keys():
    m = models.get_model("mistral-7b-v0.1")
    long = _ops(m, "decode", seq_len=10_000, attention="eager")
    # window 4096: the new token attends 4096 keys, not 10001
    assert long["qk_matmul"].cost.flops == 2 * 32 * 4096 * 128
    gemma = _ops(models.get_model("gemma-2-9b"), "decode", seq_len=10_000, attention="eager")
    assert gemma["qk_matmul"].count == 21 and gemma["qk_matmul_swa"].count == 21
    assert gemma["qk_matmul_swa"].cost.flops == 2 * 16 * 4096 * 256
    assert gemma["qk_matmul"].cost.flops == 2 * 16 * 10_001 * 256


@pytest.mark.parametrize("key", ["llama-2-7b", "llama-3.1-8b", "qwen2.5-7b", "mistral-7b-v0.1", "gpt2",
                                 "opt-6.7b", "falcon-7b", "phi-3-mini", "gemma-2-9b"])
def test_dense_prefill_flops_match_2_params_tokens_plus_attention(key):
    """Independent estimate: 2 x (non-embedding params) x tokens + eager attention 4*L*S^2*H*d*B."""
    m = models.get_model(key)
    B, S = 2, 1024
    sc = Scenario(batch=B, seq_len=S, logits="all", attention="eager")
    total = analysis.totals(m, hardware.get_accelerator("h100-sxm"), "prefill", sc)["flops"]
    params, _ = models.parameter_counts(m)
    matmul_params = params - m.vocab * m.hidden - m.learned_positions * m.hidden  # embedding gathers, no FLOPs
    if m.tie_embeddings:
        matmul_params += m.vocab * m.hidden  # the tied table is still the lm_head matmul
    estimate = 2 * matmul_params * B * S + 4 * m.n_layers * B * S * S * m.n_heads * m.head_dim
    assert total == pytest.approx(estimate, rel=0.03)


def test_decode_flops_match_2_params_per_token():
    m = models.get_model("llama-3.1-8b")
    total = analysis.totals(m, hardware.get_accelerator("h100-sxm"), "decode", Scenario(batch=1, seq_len=16))
    params, _ = models.parameter_counts(m)
    assert total["flops"] == pytest.approx(2 * (params - m.vocab * m.hidden), rel=0.01)


def test_moe_decode_loads_topk_experts_at_batch_1_and_nearly_all_at_64():
    m = models.get_model("mixtral-8x7b")
    one = _ops(m, "decode", batch=1)["expert_gate_proj"].cost
    many = _ops(m, "decode", batch=64)["expert_gate_proj"].cost
    matrix = 4096 * 14336 * 2
    assert one.weight == pytest.approx(2 * matrix)  # 8 * (1 - (6/8)^1) = 2 experts
    assert many.weight == pytest.approx(8 * (1 - 0.75**64) * matrix)
    assert many.weight / matrix > 7.99
    # FLOPs follow top-k per token: 2 * 64 tokens * 2 experts * 4096 * 14336
    assert many.flops == 2 * 64 * 2 * 4096 * 14336


def test_mla_cache_holds_latent_per_token():
    m = models.get_model("deepseek-v3")
    assert models.kv_elements_per_token(m) == 512 + 64
    assert models.kv_elements_per_token(m, "decompressed") == 128 * (192 + 128)
    names = set(_ops(m, "decode"))
    assert {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "q_absorb", "out_absorb", "router", "expert_up_proj",
            "shared_up_proj"} <= names
    assert "kv_b_proj" in set(_ops(m, "decode", mla_mode="naive"))
    # naive decode expands the cached latent rows (512 + 64 rope, at the cache width) every step; the expanded
    # per-head K/V are activations: an int8 cache halves the cache read and leaves attention's reads alone
    S = 4096
    for kv_dtype, c in (("fp16", 2), ("int8", 1)):
        naive = _ops(m, "decode", seq_len=S, mla_mode="naive", kv_dtype=kv_dtype, attention="eager")
        assert naive["kv_b_proj"].cost.kv_read == (S + 1) * (512 + 64) * c
        assert naive["qk_matmul"].cost.kv_read == 0
        assert naive["qk_matmul"].cost.act_read == (128 * 192 + 128 * (S + 1) * 192) * 2  # Q and the expanded K
    assert "kv_b_proj" in set(_ops(m, "prefill"))


def test_parameter_counts_match_models_csv():
    import csv
    from importlib import resources
    with resources.files("roofline").joinpath("data/models.csv").open() as handle:
        for row in csv.DictReader(handle):
            total, active = models.parameter_counts(models.get_model(row["key"]))
            assert round(total / 1e9, 3) == pytest.approx(float(row["computed_params_B"]), abs=0.0015), row["key"]
            assert total / 1e9 == pytest.approx(float(row["total_params_B"]), rel=0.07), row["key"]
            if row["computed_active_params_B"]:
                assert active / 1e9 == pytest.approx(float(row["computed_active_params_B"]), abs=0.006), row["key"]


def test_critical_batch_near_ridge_for_dense_16bit():
    m, gpu = models.get_model("llama-2-7b"), hardware.get_accelerator("h100-sxm")
    crit = analysis.critical_batch(m, gpu, Scenario())
    assert 295 <= crit <= 1.2 * 295  # ~ ridge x 2 bytes / 2, a little more for activation traffic
    # int4 weights (W4A16, 16-bit peak): a quarter of the bytes per weight -> ~ 295 / 4
    crit_int4 = analysis.critical_batch(m, gpu, Scenario(weight_dtype="int4"))
    assert 295 / 4 <= crit_int4 <= 1.3 * 295 / 4
    # decode GEMM intensity grows with batch and reaches the ridge exactly at the critical batch
    ridge = gpu.ridge("fp16")
    assert analysis._decode_gemm_intensity(m, Scenario(), int(crit)) >= ridge
    assert analysis._decode_gemm_intensity(m, Scenario(), int(crit) - 1) < ridge
    assert not math.isnan(crit)
