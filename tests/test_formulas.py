"""Exact costs of every operator formula on tiny shapes; the arithmetic is in the comments."""
import pytest

from roofline.engine import formulas as f
from roofline.engine.formulas import Cost


def test_registry_has_every_formula_once():
    assert set(f.FORMULAS) >= {"linear", "qk_matmul", "softmax", "sv_matmul", "fused_attention", "norm",
                               "residual_add", "activation", "rope", "embedding", "kv_cache_write", "moe_combine"}
    with pytest.raises(ValueError, match="registered twice"):
        f.formula("linear", "gemm")(lambda: None)


def test_linear():
    # T=3 tokens, K=4, N=5, fp16 (2 bytes): flops 2*3*4*5 = 120; weight 4*5*2 = 40; x 3*4*2 = 24; y 3*5*2 = 30
    assert f.linear(3, 4, 5, 2, 2) == Cost(120, 40, 24, 30, 0, 0)
    # with bias: weight (20 + 5) * 2 = 50, bias FLOPs not counted (PyTorch convention)
    assert f.linear(3, 4, 5, 2, 2, bias=True) == Cost(120, 50, 24, 30, 0, 0)
    # int4 weights (0.5 byte): 20 * 0.5 = 10; 3 expert matrices streamed: 30
    assert f.linear(3, 4, 5, 0.5, 2, weight_sets=3).weight == 30
    # reading the input from the KV cache books it as kv_read
    # input read from the KV cache at 1 byte per element: 3*4*1 = 12 booked as kv_read
    assert f.linear(3, 4, 5, 2, 2, cached_input_width=1) == Cost(120, 40, 0, 30, 12, 0)


def test_qk_softmax_sv():
    # B=1, H=2, Hkv=1, S=3 queries, Skv=3 keys, d=4, a=c=2 bytes
    # qk: flops 2*1*2*3*3*4 = 144; Q 1*2*3*4*2 = 48; scores 1*2*3*3*2 = 36; K 1*1*3*4*2 = 24
    assert f.qk_matmul(1, 2, 1, 3, 3, 4, 2, 2) == Cost(144, 0, 48, 36, 24, 0)
    # softmax over 2*3*3 = 18 elements: 5*18 = 90 FLOPs, read 36, write 36
    assert f.softmax(1, 2, 3, 3, 2) == Cost(90, 0, 36, 36, 0, 0)
    # sv: flops 2*1*2*3*3*4 = 144; probs 36; out 1*2*3*4*2 = 48; V 24
    assert f.sv_matmul(1, 2, 1, 3, 3, 4, 2, 2) == Cost(144, 0, 36, 48, 24, 0)


def test_fused_attention_causal_pairs():
    # causal pairs of S=3: 3*4/2 = 6; window 2: 1 + 2 + 2 = 5 (formula: m=2 -> 3 + (3-2)*2 = 5)
    assert f.causal_pairs(3) == 6
    assert f.causal_pairs(3, 2) == 5
    # B=1, H=2, Hkv=1, S=3, pairs=6, Skv=3, d=dv=4: flops 2*6*(8+8+5) = 252
    # Q 2*3*4*2 = 48; O 48; K and V 1*3*(4+4)*2 = 48
    assert f.fused_attention(1, 2, 1, 3, 6, 3, 4, 4, 2, 2) == Cost(252, 0, 48, 48, 48, 0)
    # MLA latent row shared by K and V: kv_width 6 -> 1*3*6*2 = 36
    assert f.fused_attention(1, 2, 1, 3, 6, 3, 4, 4, 2, 2, kv_width=6).kv_read == 36


def test_norm_add_activation_rope():
    # T=3, D=4: RMSNorm 7*12 = 84 FLOPs; scale 4*2 = 8; x 24; y 24. LayerNorm reads 2 vectors: 16
    assert f.norm(3, 4, 2) == Cost(84, 8, 24, 24, 0, 0)
    assert f.norm(3, 4, 2, params_per_channel=2).weight == 16
    # residual add of two [3,4] tensors: 12 FLOPs, read 2*24 = 48, write 24
    assert f.residual_add(3, 4, 2) == Cost(12, 0, 48, 24, 0, 0)
    # SwiGLU on T=3, F=5: silu 4 + gate multiply 1 = 5 per element -> 75; read 2*15*2 = 60; write 30
    assert f.activation(3, 5, 2, 4, gated=True) == Cost(75, 0, 60, 30, 0, 0)
    # plain relu: 15 FLOPs, read 30, write 30
    assert f.activation(3, 5, 2, 1, gated=False) == Cost(15, 0, 30, 30, 0, 0)
    # rope on T=3 tokens, 3 heads, 4 rotated dims: 36 elements * 3 = 108 FLOPs; read 72 write 72
    assert f.rope(3, 3, 4, 2) == Cost(108, 0, 72, 72, 0, 0)


def test_embedding_kv_write_moe_combine():
    # gather T=3 rows of D=4 from V=32: weight 3*4*2 = 24; write 24; no FLOPs
    assert f.embedding(3, 4, 32, 2, 2) == Cost(0, 24, 0, 24, 0, 0)
    # at most V distinct rows: T=50 > V=32 -> 32*4*2 = 256
    assert f.embedding(50, 4, 32, 2, 2).weight == 256
    # learned positions (GPT-2): 3 more rows (24 bytes) and one add per element (12 FLOPs)
    assert f.embedding(3, 4, 32, 2, 2, position_rows=1024) == Cost(12, 48, 0, 24, 0, 0)
    # KV write: T=3 tokens * 8 elements: read 24*2 = 48 at fp16, write 24*1 = 24 at int8
    assert f.kv_cache_write(3, 8, 2, 1) == Cost(0, 0, 48, 0, 0, 24)
    # combine k=2 expert outputs of T=3, D=4: 2*3*2*4 = 48 FLOPs; read 2*12*2 = 48; write 24
    assert f.moe_combine(3, 4, 2, 2) == Cost(48, 0, 48, 24, 0, 0)
    # expert parallelism: the device reads only the 5 rows it computed (2*5*4 = 40 FLOPs, 5*4*2 = 40 bytes read);
    # a shared expert adds its T=3 rows (3*4 = 12 FLOPs, 24 bytes); the output is still T*D*a = 24
    assert f.moe_combine(3, 4, 2, 2, rows=5) == Cost(40, 0, 40, 24, 0, 0)
    assert f.moe_combine(3, 4, 2, 2, shared=True, rows=5) == Cost(52, 0, 64, 24, 0, 0)


def test_distinct_experts():
    # E=4, k=2: one token touches exactly 2; two tokens: 4*(1 - (1/2)^2) = 3 expected
    assert f.distinct_experts(1, 4, 2) == pytest.approx(2)
    assert f.distinct_experts(2, 4, 2) == pytest.approx(3)
    assert f.distinct_experts(1, 4, 2, "balanced") == 2
    assert f.distinct_experts(5, 4, 2, "balanced") == 4
    assert f.distinct_experts(1, 4, 2, "all") == 4


def test_registry_gives_each_formula_its_operator_class():
    # the graph takes a row's class from here: FORMULAS[name] = (op class, cost function)
    assert f.FORMULAS["linear"].op_class == "gemm" and f.FORMULAS["all_reduce"].op_class == "communication"
    assert {entry.op_class for entry in f.FORMULAS.values()} == set(f.OP_CLASSES)
    with pytest.raises(ValueError, match="unknown operator class"):
        f.formula("gemv", "matvec")
