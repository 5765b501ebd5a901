"""Realistic defaults (issue 10): flash attention by default; 8-bit activations only as GEMM inputs; quantized
weights keep the embedding table and lm_head at 16 bits; the MoE critical batch stated per expert. Exact on tiny
shapes (tiny: 2 layers, D=8, H=2, Hkv=1, d=4, SwiGLU F=16, V=32, untied)."""
import json
import math

import pytest

from roofline.cli import app as cli
from roofline.engine import analysis, graph, hardware, models
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.engine.treatments import treatment_table


def _ops(model, stage, **kw):
    return {op.name: op for op in graph.build_operators(model, stage, Scenario(**kw))}


def test_flash_attention_is_the_default_of_engine_and_cli(capsys):
    assert Scenario().attention == "flash"
    assert cli.main(["totals", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "prefill",
                     "--format", "json"]) == 0
    flops = json.loads(capsys.readouterr().out)["flops"]
    m, gpu = models.get_model("llama-2-7b"), hardware.get_accelerator("h100-sxm")
    assert flops == analysis.totals(m, gpu, "prefill", Scenario(attention="flash"))["flops"]
    assert flops < analysis.totals(m, gpu, "prefill", Scenario(attention="eager"))["flops"]  # causal pairs only


def test_fp8_activations_are_gemm_inputs_only(tiny):
    # prefill B=1, S=4 -> T=4 tokens; weights and GEMM inputs fp8 (1 byte), everything else fp16 (2 bytes)
    ops = _ops(tiny, "prefill", batch=1, seq_len=4, weight_dtype="fp8", act_dtype="fp8", attention="eager")
    q = ops["q_proj"]  # [4,8] @ [8,8]: weight 64 x 1, input 32 x 1, output 32 x 2
    assert (q.cost.weight, q.cost.act_read, q.cost.act_write, q.compute_dtype) == (64, 32, 64, "fp8")
    down = ops["down_proj"]  # [4,16] @ [16,8]: weight 128 x 1, input 64 x 1, output 32 x 2
    assert (down.cost.weight, down.cost.act_read, down.cost.act_write) == (128, 64, 64)
    norm = ops["attn_norm"]  # read and write 4*8 = 32 elements x 2 bytes; scale 8 x 2
    assert (norm.cost.weight, norm.cost.act_read, norm.cost.act_write, norm.compute_dtype) == (16, 64, 64, "fp16")
    add = ops["attn_add"]  # reads 2 x 32 elements, writes 32, at 2 bytes
    assert (add.cost.act_read, add.cost.act_write) == (128, 64)
    act = ops["mlp_act"]  # SwiGLU on [4,16]: reads 2 x 64, writes 64, at 2 bytes
    assert (act.cost.act_read, act.cost.act_write) == (256, 128)
    softmax = ops["softmax"]  # B*H*S*Skv = 1*2*4*4 = 32 scores, read and written at 2 bytes
    assert (softmax.cost.act_read, softmax.cost.act_write, softmax.compute_dtype) == (64, 64, "fp16")
    qk = ops["qk_matmul"]  # Q 1*2*4*4 + fresh K 1*1*4*4 = 48 elements x 2 bytes; 16-bit matmul
    assert (qk.cost.act_read, qk.compute_dtype) == (96, "fp16")
    kv = ops["kv_cache_write"]  # 4 tokens x (K 4 + V 4): read 32 x 2 (16-bit projections), write 32 x 2 (fp16 cache)
    assert (kv.cost.act_read, kv.cost.kv_write) == (64, 64)
    head = ops["lm_head"]  # 16 bits unless quantize_embeddings: [1,8] @ [8,32]: weight 256 x 2, input 8 x 2
    assert (head.cost.weight, head.cost.act_read, head.cost.act_write, head.compute_dtype) == (512, 16, 64, "fp16")
    # the same scenario in fp16 differs only in the GEMMs' weights and inputs
    fp16 = _ops(tiny, "prefill", batch=1, seq_len=4, attention="eager")
    for name in ("attn_norm", "attn_add", "mlp_act", "softmax", "qk_matmul", "kv_cache_write", "rope", "lm_head"):
        assert ops[name].cost == fp16[name].cost, name
    assert fp16["q_proj"].cost.weight == 2 * 64 and fp16["q_proj"].cost.act_read == 2 * 32


def test_the_kv_cache_is_quantized_only_when_asked(tiny):
    # decode, 4 cached tokens: the new token reads 5 keys x 1 KV head x 4 = 20 K elements
    fp16_cache = _ops(tiny, "decode", batch=1, seq_len=4, weight_dtype="fp8", act_dtype="fp8", attention="eager")
    fp8_cache = _ops(tiny, "decode", batch=1, seq_len=4, weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8",
                     attention="eager")
    assert fp16_cache["qk_matmul"].cost.kv_read == 40 and fp8_cache["qk_matmul"].cost.kv_read == 20
    # Q stays 16-bit (2*4 elements x 2 bytes) and attention computes at 16 bits either way: the scenario's 16-bit
    # type, bf16 when none of its three dtypes is 16-bit
    assert fp16_cache["qk_matmul"].cost.act_read == 16 and fp16_cache["qk_matmul"].compute_dtype == "fp16"
    assert fp8_cache["qk_matmul"].cost.act_read == 16 and fp8_cache["qk_matmul"].compute_dtype == "bf16"
    # a device without that bf16 peak is refused by name (T4: fp16 and int8 only)
    all_int8 = Scenario(seq_len=4, weight_dtype="int8", act_dtype="int8", kv_dtype="int8")
    with pytest.raises(ValueError, match=r"no bf16 peak, which the attention .* bf16 when no scenario dtype is 16-bit"):
        analysis.check_device_dtypes(hardware.get_accelerator("t4"), all_int8)


def test_quantized_weights_keep_embedding_and_lm_head_at_16_bits_unless_asked(tiny):
    # parameters: embedding 32*8 = 256, lm_head 256, final norm 8, per layer q 64 + k 32 + v 32 + o 64 + norms 16
    # + MLP 3*8*16 = 384 -> 592, x 2 layers = 1184: total 1704
    assert models.parameter_counts(tiny)[0] == 1704 and models.embedding_params(tiny) == 512
    int4 = Scenario(weight_dtype="int4")
    w = 0.5 + 2 / 128  # int4 with an fp16 scale per 128 weights (weight_group_size): 4.125 bits = 0.515625 bytes
    ops = _ops(tiny, "decode", batch=1, seq_len=4, weight_dtype="int4")
    assert ops["q_proj"].cost.weight == 64 * w == 33  # [8,8] at 4.125 bits
    assert ops["lm_head"].cost.weight == 256 * 2  # [8,32] at 16 bits
    assert ops["embedding"].cost.weight == 1 * 8 * 2  # one row gathered at 16 bits
    assert analysis.weight_bytes(tiny, int4) == (1704 - 512) * w + 512 * 2  # 614.625 + 1024 = 1638.625
    asked = _ops(tiny, "decode", batch=1, seq_len=4, weight_dtype="int4", quantize_embeddings=True)
    assert asked["lm_head"].cost.weight == 256 * w and asked["embedding"].cost.weight == 8 * w
    assert analysis.weight_bytes(tiny, int4.with_(quantize_embeddings=True)) == 1704 * w
    # 16-bit weights are untouched by the switch
    assert analysis.weight_bytes(tiny, Scenario()) == 1704 * 2
    # per device, the same rule: pipeline stage 1 of 2 holds layer 1 (592 params), the final norm (8) at w and
    # lm_head (256 x 2 = 512): 600 w + 512; stage 0 holds layer 0 and the embedding table: 592 w + 512
    pp2 = int4.with_(parallel=Parallel(pp=2))
    assert analysis.weight_bytes_per_device(tiny, pp2) == 600 * w + 512
    assert analysis.weight_bytes_per_device(tiny, pp2.with_(quantize_embeddings=True)) == (600 + 256) * w
    # tp 2: the tables are vocab-parallel (256 params x 2 bytes); per layer q 32 + o 32 + replicated k 32, v 32 and
    # norms 16 + MLP 384 / 2 = 336 params, x 2 layers = 672; final norm 8: 680 w + 512
    assert analysis.weight_bytes_per_device(tiny, int4.with_(parallel=Parallel(tp=2))) == 512 + 680 * w
    # fp8 with quantize_embeddings: lm_head reads its input at 8 bits and computes at fp8
    fp8 = _ops(tiny, "decode", batch=1, seq_len=4, weight_dtype="fp8", act_dtype="fp8", quantize_embeddings=True)
    assert (fp8["lm_head"].cost.act_read, fp8["lm_head"].compute_dtype) == (8, "fp8")


def test_quantize_embeddings_must_be_a_boolean():
    with pytest.raises(ValueError, match=r"scenario.quantize_embeddings: 'yes' is not allowed; expected true or false"):
        Scenario(quantize_embeddings="yes").validate()


def test_fp8_treatment_halves_gemm_traffic_not_elementwise_traffic():
    m, gpu = models.get_model("llama-3.1-8b"), hardware.get_accelerator("h100-sxm")
    rows = {r["treatment"]: r for r in treatment_table(m, gpu, "decode", Scenario())}
    base = analysis.totals(m, gpu, "decode", Scenario())
    fp8 = analysis.totals(m, gpu, "decode", Scenario(weight_dtype="fp8", act_dtype="fp8"))
    assert rows["fp8_compute"]["speedup"] == pytest.approx(base["t_s"] / fp8["t_s"])
    # decode at batch 1 is weight traffic: the blocks' weights halve, lm_head (0.53 G params) and the KV cache stay
    assert 1.8 < rows["fp8_compute"]["speedup"] < 1.9
    tables = models.embedding_params(m) * 2  # 16-bit embedding table and lm_head
    assert fp8["weight_bytes"] == (models.parameter_counts(m)[0] * 2 - tables) / 2 + tables


def test_moe_critical_batch_is_stated_per_expert():
    mixtral = models.get_model("mixtral-8x7b")
    # a toy device with ridge 1.5 FLOP/byte: the GEMMs of a decode step reach it at batch 4, when
    # 8 x (1 - (6/8)^4) = 8 x 175/256 = 175/32 experts are touched: 4 x 2 / (175/32) = 256/175 tokens per expert
    toy = hardware.Accelerator(key="toy", name="toy", vendor="x", memory_bytes=1e12, bandwidth_bytes_per_s=1e12,
                               peak_flops_per_s={"fp16": 1.5e12})
    assert analysis.critical_batch(mixtral, toy, Scenario()) == 4
    assert analysis.critical_tokens_per_expert(mixtral, toy, Scenario()) == 256 / 175
    # balanced routing touches min(8, 4 x 2) = 8 experts: 8 / 8 = 1 token each
    balanced = Scenario(expert_routing="balanced")
    batch = analysis.critical_batch(mixtral, toy, balanced)
    assert analysis.critical_tokens_per_expert(mixtral, toy, balanced) == batch * 2 / min(8, batch * 2)
    # on an H100 every expert is touched at the critical batch: batch x 2 / 8
    h100 = hardware.get_accelerator("h100-sxm")
    total = analysis.totals(mixtral, h100, "decode", Scenario())
    assert total["critical_tokens_per_expert"] == total["critical_batch"] * 2 / 8
    # dense models: no experts
    dense = analysis.totals(models.get_model("llama-2-7b"), h100, "decode", Scenario())
    assert math.isnan(dense["critical_tokens_per_expert"]) and dense["critical_batch"] > 0
