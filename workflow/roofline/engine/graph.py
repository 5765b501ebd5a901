"""The operator graph of one forward pass: which operators run, each with its instance count and cost.

Operator names follow the Hugging Face module names where one exists (q_proj, o_proj, gate_proj, kv_b_proj, ...).
One row per distinct operator; `count` = instances per forward pass (usually the number of layers that have it).
Attention-core rows of the sliding-window layers of a model that mixes local and global layers (Gemma-2, Gemma 3,
gpt-oss) carry the suffix `_swa`, those of chunked-attention layers (Llama 4) `_chunked`; linear-attention layers
(Qwen3-Next) have their own rows (in_proj_qkvz, in_proj_ba, conv1d, gated_delta_rule, linear_attn_norm,
linear_attn_gate, out_proj) and no attention core.

Multi-device plans (roofline.engine.parallel): every row is ONE device's share of the operator (what that device's
roofline sees: its heads, its columns, its experts), and `count` is the number of instances one token passes
through on its way across all pipeline stages, so summing time x count over the rows gives the time of one step.
Communication rows (op_class `communication`) carry the devices their collective spans (`span`), which decides the
link: the scale-up link inside one domain, the scale-out network beyond it.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from . import formulas as f
from .dtypes import DTYPE_BYTES, matmul_dtype, unquantized_dtype, weight_bytes_per_element
from .errors import RooflineInputError
from .models import ACTIVATION_FLOPS, ModelSpec, kv_elements_per_token
from .parallel import Parallel, kv_heads_per_device
from .scenario import Scenario

OP_CLASSES = ("gemm", "attention", "norm", "elementwise", "embedding", "communication")


class Op(NamedTuple):
    """One operator of the forward pass: name, class, instances per pass, cost of one instance (one device's
    share), compute dtype, and for communication the number of devices the collective spans."""

    name: str
    op_class: str
    count: int
    cost: f.Cost
    compute_dtype: str
    span: int = 1


class ScenarioDtypes(NamedTuple):
    """The dtypes a scenario computes and stores at, beyond its three fields (rules in roofline.engine.dtypes)."""

    gemm: str  # weight GEMMs: weight_dtype x act_dtype
    act16: str  # every activation but a GEMM's input, and the non-matmul operators' compute: 16 bits at least
    attention: str  # attention over the KV cache: kv_dtype x act16
    head_weight: str  # embedding table and lm_head: 16 bits at least unless quantize_embeddings
    head_input: str  # lm_head's input
    head: str  # lm_head's compute: head_weight x head_input


@lru_cache(maxsize=1024)
def scenario_dtypes(sc: Scenario) -> ScenarioDtypes:
    """Which dtype each part of the graph uses: 8-bit activations only as GEMM inputs; embedding table and lm_head
    at 16 bits unless sc.quantize_embeddings (rules in roofline.engine.dtypes)."""
    act16 = unquantized_dtype(sc.act_dtype, sc.kv_dtype, sc.weight_dtype)
    if sc.quantize_embeddings:
        head_weight, head_input = sc.weight_dtype, sc.act_dtype
    else:
        head_weight, head_input = unquantized_dtype(sc.weight_dtype, act16), act16
    return ScenarioDtypes(gemm=matmul_dtype(sc.weight_dtype, sc.act_dtype), act16=act16,
                          attention=matmul_dtype(sc.kv_dtype, act16), head_weight=head_weight, head_input=head_input,
                          head=matmul_dtype(head_weight, head_input))


class _Builder:
    """Collects Op rows; holds the scenario's byte widths and compute dtypes so each call site stays one line."""

    def __init__(self, m: ModelSpec, sc: Scenario):
        sc = sc.for_model(m)  # weight_dtype 'native' -> the checkpoint's dtypes
        if not isinstance(sc.parallel, Parallel):
            raise RooflineInputError(f"scenario.parallel: {sc.parallel!r} must be resolved to a plan (tp, pp, ep) "
                                     "before the operator graph is built (roofline.engine.analysis.resolve_plan)")
        self.m, self.sc, self.plan = m, sc, sc.parallel
        # devices the attention heads, dense MLPs, embedding and lm_head are split over (1 under DP attention)
        self.tp = 1 if self.plan.attention_dp else self.plan.tp
        self.w, self.a, self.c = (weight_bytes_per_element(sc.weight_dtype, sc.weight_group_size),
                                  DTYPE_BYTES[sc.act_dtype], DTYPE_BYTES[sc.kv_dtype])
        self.w_expert = weight_bytes_per_element(sc.expert_dtype, sc.weight_group_size)
        self.gemm_dtype = matmul_dtype(sc.weight_dtype, sc.act_dtype)
        self.expert_gemm_dtype = matmul_dtype(sc.expert_dtype, sc.act_dtype)
        self.dtypes = scenario_dtypes(sc)
        self.attn_dtype = self.dtypes.attention
        # an 8-bit act_dtype is the width of GEMM inputs only; every other activation is 16 bits at least
        self.gemm_a, self.a = self.a, DTYPE_BYTES[self.dtypes.act16]
        self.ops: list[Op] = []

    def add(self, name, op_class, count, cost, dtype=None, span=1):
        if count:
            self.ops.append(Op(name, op_class, count, cost, dtype or self.dtypes.act16, span))

    def collective(self, name, count, cost, span):
        """A communication row over `span` devices (nothing when the plan keeps it on one device)."""
        if span > 1:
            self.add(name, "communication", count, cost, span=span)

    def linear(self, name, count, T, K, N, bias=False, expert=False, **kw):
        """A weight GEMM; `expert` ones use the experts' weight dtype (scenario.expert_dtype)."""
        w, dtype = (self.w_expert, self.expert_gemm_dtype) if expert else (self.w, self.gemm_dtype)
        self.add(name, "gemm", count, f.linear(T, K, N, w, self.gemm_a, bias=bias, out_width=self.a, **kw), dtype)

    def norm(self, name, count, T, D):
        per_channel = 2 if self.m.norm == "layernorm" else 1
        self.add(name, "norm", count, f.norm(T, D, self.a, per_channel))

    def mlp(self, prefix, count, rows, width, weight_sets=1, expert=False):
        """A dense (gated or plain) MLP of `width` on `rows` token rows (MoE: token-expert pairs), streaming
        `weight_sets` copies of its weights (MoE: distinct experts touched)."""
        m, gated = self.m, self.m.mlp_type == "gated"
        bias = m.linear_bias or (expert and m.expert_bias)
        kw = dict(weight_sets=weight_sets, expert=expert)
        if gated:
            self.linear(f"{prefix}gate_proj", count, rows, m.hidden, width, bias, **kw)
            self.linear(f"{prefix}up_proj", count, rows, m.hidden, width, bias, **kw)
        else:
            self.linear(f"{prefix}fc1" if not prefix else f"{prefix}up_proj", count, rows, m.hidden, width, bias,
                        **kw)
        act_name = f"{prefix}act" if prefix else "mlp_act"
        self.add(act_name, "elementwise", count, f.activation(rows, width, self.a, ACTIVATION_FLOPS[m.activation],
                                                               gated))
        down = "down_proj" if gated or prefix else "fc2"
        self.linear(f"{prefix}{down}", count, rows, width, m.hidden, bias, **kw)


def attention_groups(m: ModelSpec) -> list[tuple[str, int | None, int]]:
    """(row-name suffix, window or None, layer count) for the softmax-attention cores of the full and sliding-window
    layers (chunked layers: `chunked_layers`; linear-attention layers have none)."""
    layers = m.n_attention_layers - m.chunked_layers
    if not m.sliding_window or not m.sliding_layers:
        return [("", None, layers)]
    if m.sliding_layers >= layers:
        return [("", m.sliding_window, layers)]
    return [("", None, layers - m.sliding_layers), ("_swa", m.sliding_window, m.sliding_layers)]


def build_operators(m: ModelSpec, stage: str, sc: Scenario, batch=None, seq_len=None) -> tuple[Op, ...]:
    """All operators of one prefill pass or one decode step. `batch`/`seq_len` may be NumPy arrays (sweeps).

    The graph depends on model, stage and scenario only, never on the device: evaluating one scenario on many
    devices reuses it (cached; Ops are immutable)."""
    if batch is None and seq_len is None:
        return _cached_operators(m, stage, sc)
    return tuple(_build(m, stage, sc, batch, seq_len))


@lru_cache(maxsize=4096)
def _cached_operators(m: ModelSpec, stage: str, sc: Scenario) -> tuple[Op, ...]:
    return tuple(_build(m, stage, sc, None, None))


def _build(m: ModelSpec, stage: str, sc: Scenario, batch, seq_len) -> list[Op]:
    B = sc.batch if batch is None else batch
    S = sc.seq_len if seq_len is None else seq_len
    b = _Builder(m, sc)
    plan, tp = b.plan, b.tp
    if plan.attention_dp:  # each of the tp replicas serves its share of the sequences; the busiest gets ceil
        B = np.ceil(B / plan.tp) if isinstance(B, np.ndarray) else math.ceil(B / plan.tp)
    L, D = m.n_layers, m.hidden
    prefill = stage == "prefill"
    T = B * S if prefill else B  # tokens processed by every token-wise operator (on one device)
    Sq = S if prefill else 1  # queries per sequence

    table_width = weight_bytes_per_element(b.dtypes.head_weight, sc.weight_group_size)
    embed = f.embedding(T, D, m.vocab, table_width, b.a, m.learned_positions)
    b.add("embedding", "embedding", 1, embed._replace(weight=embed.weight / tp), b.dtypes.act16)
    b.collective("embed_all_reduce", 1, f.all_reduce(T, D, tp, b.a), tp)  # vocab-parallel rows sum up

    # ---- attention block (every layer)
    b.norm("attn_norm", L, T, D)
    if m.is_mla:
        _mla_attention(b, B, S, T, prefill)
    else:
        _standard_attention(b, B, S, T, Sq, prefill)
    b.collective("attn_all_reduce", L, f.all_reduce(T, D, tp, b.a), tp)
    if m.norms_per_layer == 4:
        b.norm("post_attn_norm", L, T, D)
    b.add("attn_add", "elementwise", L, f.residual_add(T, D, b.a))

    # ---- MLP block: dense layers and MoE layers
    if m.norms_per_layer >= 2:  # a parallel block with one shared input norm (Falcon-7B) has none
        b.norm("mlp_norm", L, T, D)
    b.mlp("", m.n_dense_layers, T, m.intermediate / tp)
    if m.is_moe:
        _moe(b, T)
    # tensor parallelism sums the partial outputs of every MLP (dense, or the experts and shared expert together)
    b.collective("mlp_all_reduce", L if not plan.attention_dp else 0, f.all_reduce(T, D, tp, b.a), tp)
    if m.norms_per_layer == 4:
        b.norm("post_mlp_norm", L, T, D)
    b.add("mlp_add", "elementwise", L, f.residual_add(T, D, b.a))

    # ---- pipeline hand-overs and the head
    b.collective("pp_send", plan.pp - 1, f.p2p_send(T, D, b.a), plan.devices if plan.pp > 1 else 1)
    b.norm("final_norm", 1, T, D)
    logits_rows = T if (prefill and sc.logits == "all") else B
    dt = b.dtypes  # the embedding table and lm_head stay at 16 bits unless quantize_embeddings
    b.add("lm_head", "gemm", 1, f.linear(logits_rows, D, m.vocab / tp, table_width, DTYPE_BYTES[dt.head_input],
                                         out_width=b.a), dt.head)
    b.collective("logits_all_gather", 1, f.all_gather(logits_rows, m.vocab, tp, b.a), tp)
    return b.ops


def _keys_attended(S, window, prefill):
    """Keys per query row the kernel touches: prefill all S (eager computes the full block); decode S+1 capped at W."""
    if prefill:
        return S
    return S + 1 if window is None else np.minimum(S + 1, window)


def _attention_core(b: _Builder, B, S, prefill, H, Hkv, d, dv, kv_width=None, from_cache=None):
    """QK^T, softmax, PV (eager) or one fused kernel (flash), per attention group (full / sliding window).

    Decode reads K and V from the KV cache (at the cache dtype, booked as KV traffic); prefill reads the K and V
    its projections just produced (at the activation dtype, booked as activation traffic), as do MLA's naive
    decode steps, which re-expand the latent into fresh per-head K and V. `from_cache` overrides the default.
    """
    from_cache = (not prefill) if from_cache is None else from_cache
    width = b.c if from_cache else b.a
    rebook = (lambda cost: cost) if from_cache else f.from_activations
    dtype = b.attn_dtype if from_cache else b.dtypes.act16
    Sq = S if prefill else 1
    for suffix, window, count in attention_groups(b.m):
        Skv = _keys_attended(S, window, prefill)
        if b.sc.attention == "flash":
            pairs = f.causal_pairs(S, window) if prefill else Skv
            cost = f.fused_attention(B, H, Hkv, Sq, pairs, Skv, d, dv, b.a, width, kv_width)
            b.add(f"fused_attention{suffix}", "attention", count, rebook(cost), dtype)
            continue
        qk = f.qk_matmul(B, H, Hkv, Sq, Skv, d, b.a, width)
        b.add(f"qk_matmul{suffix}", "attention", count, rebook(qk), dtype)
        b.add(f"softmax{suffix}", "attention", count, f.softmax(B, H, Sq, Skv, b.a))
        sv = f.sv_matmul(B, H, Hkv, Sq, Skv, dv, b.a, width)
        b.add(f"sv_matmul{suffix}", "attention", count, rebook(sv), dtype)
    if b.m.chunked_layers:
        _chunked_attention_core(b, B, S, prefill, H, Hkv, d, dv, width, rebook, dtype)


def _chunked_attention_core(b: _Builder, B, S, prefill, H, Hkv, d, dv, width, rebook, dtype):
    """Chunked attention (Llama 4): query i sees keys j <= i of its own chunk (j // Ck == i // Ck). Eager prefill
    computes the full S x S block, as for the other layers; flash visits the in-chunk causal pairs; decode attends
    the new token's chunk so far, S mod Ck + 1 keys."""
    count, chunk = b.m.chunked_layers, b.m.attention_chunk
    Sq = S if prefill else 1
    Skv = S if prefill else S % chunk + 1
    if b.sc.attention == "flash":
        pairs = f.chunked_causal_pairs(S, chunk) if prefill else Skv
        cost = f.fused_attention(B, H, Hkv, Sq, pairs, Skv, d, dv, b.a, width)
        b.add("fused_attention_chunked", "attention", count, rebook(cost), dtype)
        return
    b.add("qk_matmul_chunked", "attention", count, rebook(f.qk_matmul(B, H, Hkv, Sq, Skv, d, b.a, width)), dtype)
    b.add("softmax_chunked", "attention", count, f.softmax(B, H, Sq, Skv, b.a))
    b.add("sv_matmul_chunked", "attention", count, rebook(f.sv_matmul(B, H, Hkv, Sq, Skv, dv, b.a, width)), dtype)


def _standard_attention(b: _Builder, B, S, T, Sq, prefill):
    m, L, tp = b.m, b.m.n_attention_layers, b.tp
    H, Hkv, d, D = m.n_heads // tp, kv_heads_per_device(m.n_kv_heads, tp), m.head_dim, m.hidden
    bias = m.qkv_bias or m.linear_bias
    b.linear("q_proj", L, T, D, H * d * (2 if m.attn_output_gate else 1), bias)
    b.linear("k_proj", L, T, D, Hkv * d, bias)
    b.linear("v_proj", L, T, D, Hkv * d, bias)
    if m.qk_norm:
        b.norm("q_norm", L, T * H, d)
        b.norm("k_norm", L, T * Hkv, d)
    if m.positions == "rope":
        b.add("rope", "elementwise", L - m.nope_layers, f.rope(T, H + Hkv, m.rotary_dim, b.a))
    b.add("kv_cache_write", "elementwise", L, f.kv_cache_write(T, 2 * Hkv * d, b.a, b.c))  # this device's K, V
    _attention_core(b, B, S, prefill, H=H, Hkv=Hkv, d=d, dv=d)
    if m.attn_output_gate:
        b.add("attn_output_gate", "elementwise", L, f.output_gate(T, H * d, b.a))
    b.linear("o_proj", L, T, H * d, D, m.linear_bias or m.attn_out_bias)
    if m.linear_layers:
        _linear_attention(b, B, S, T, prefill)


def _linear_attention(b: _Builder, B, S, T, prefill):
    """Gated DeltaNet layers (Qwen3-Next): projections, a depthwise causal conv over q/k/v, the gated delta rule
    on a fixed [Hv, dk, dv] state per sequence (booked as KV-cache traffic: it replaces the cache), a gated RMSNorm
    and out_proj. HF module names (in_proj_qkvz, in_proj_ba, conv1d, norm -> linear_attn_norm, out_proj). Under
    tensor parallelism each device holds 1/tp of the key and value heads (and of the conv channels)."""
    m, L, tp = b.m, b.m.linear_layers, b.tp
    D, Hv, Hk, dk, dv = m.hidden, m.linear_v_heads // tp, m.linear_k_heads // tp, m.linear_k_dim, m.linear_v_dim
    Kw, Vw = m.linear_key_width // tp, m.linear_value_width // tp
    channels = 2 * Kw + Vw  # q, k, v pass the conv; z (the output gate) does not
    b.linear("in_proj_qkvz", L, T, D, 2 * Kw + 2 * Vw)
    b.linear("in_proj_ba", L, T, D, 2 * Hv)
    Sq = S if prefill else 1
    b.add("conv1d", "attention", L,
          f.causal_conv1d(B, Sq, channels, m.linear_conv_kernel, b.w, b.a, b.c, decode=not prefill))
    b.add("gated_delta_rule", "attention", L,
          f.gated_delta_rule(B, Sq, Hv, dk, dv, b.a, b.c, chunked=prefill, Hk=Hk))
    b.norm("linear_attn_norm", L, T * Hv, dv)
    b.add("linear_attn_gate", "elementwise", L, f.activation(T, Vw, b.a, ACTIVATION_FLOPS["silu"], True))
    b.linear("out_proj", L, T, Vw, D)


def _mla_attention(b: _Builder, B, S, T, prefill):
    """Multi-head latent attention (DeepSeek-V2/V3). Prefill always decompresses K/V (compute-efficient for long
    prompts, what serving engines do); decode follows scenario.mla_mode. Under tensor parallelism each device holds
    H / tp heads; the latent projections and the latent cache are replicated."""
    m, L, mode = b.m, b.m.n_layers, b.sc.mla_mode
    D, H, C, R = m.hidden, m.n_heads // b.tp, m.kv_lora_rank, m.qk_rope_head_dim
    dn, dv, dq = m.qk_nope_head_dim, m.v_head_dim, m.qk_head_dim
    if m.q_lora_rank:
        b.linear("q_a_proj", L, T, D, m.q_lora_rank)
        b.norm("q_a_layernorm", L, T, m.q_lora_rank)
        b.linear("q_b_proj", L, T, m.q_lora_rank, H * dq)
    else:
        b.linear("q_proj", L, T, D, H * dq)
    b.linear("kv_a_proj_with_mqa", L, T, D, C + R)
    b.norm("kv_a_layernorm", L, T, C)
    b.add("rope", "elementwise", L, f.rope(T, H + 1, R, b.a))
    kv_per_token = kv_elements_per_token(m, mode) // (b.tp if mode == "decompressed" else 1)
    b.add("kv_cache_write", "elementwise", L, f.kv_cache_write(T, kv_per_token, b.a, b.c))
    if prefill or mode == "decompressed":
        b.linear("kv_b_proj", L, T, C, H * (dn + dv))
        _attention_core(b, B, S, prefill, H=H, Hkv=H, d=dq, dv=dv)
    elif mode == "naive":
        # every step re-expands the whole cached latent of each sequence into per-head K_nope and V
        # (the rope key R of each cached row is read with it; the expanded K/V are fresh activations)
        Skv = _keys_attended(S, None, False)
        expand = f.linear(B * Skv, C, H * (dn + dv), b.w, b.a, cached_input_width=b.c)
        b.add("kv_b_proj", "gemm", L, expand._replace(kv_read=expand.kv_read * (C + R) / C), b.gemm_dtype)
        _attention_core(b, B, S, prefill, H=H, Hkv=H, d=dq, dv=dv, from_cache=False)
    else:  # absorbed: q_nope @ W_UK gives a query in latent space; attention reads the shared latent (Hkv = 1)
        b.linear("q_absorb", L, T * H, dn, C, weight_sets=H)
        _attention_core(b, B, S, prefill, H=H, Hkv=1, d=C + R, dv=C, kv_width=C + R)
        b.linear("out_absorb", L, T * H, C, dv, weight_sets=H)
    b.linear("o_proj", L, T, H * dv, D)


def _moe(b: _Builder, T):
    """Router, routed experts, shared experts and the weighted combine of the MoE layers, for one device.

    Tensor-parallel experts (ep = 1) see every token-expert pair at 1/tp of each expert's width. With ep > 1 the
    busiest of the ep expert groups gets formulas.expected_max_load of the pairs (uniform routing) at 1/(tp/ep) of
    the width, and touches 1/ep of the distinct experts. Under DP attention the tokens of all tp replicas meet at
    the experts through an all-to-all dispatch and come back through an all-to-all combine."""
    m, count, plan = b.m, b.m.n_moe_layers, b.plan
    E, k, ep = m.n_experts, m.top_k, plan.ep
    routing = b.sc.expert_routing
    b.linear("router", count, T, m.hidden, E, m.router_bias)
    tokens = T * plan.tp if plan.attention_dp else T  # tokens routed by the whole expert-parallel group
    pairs = tokens * k
    rows = f.expected_max_load(pairs, ep) if routing == "uniform" else pairs / ep
    touched = f.distinct_experts(tokens, E, k, routing) / ep
    width = m.moe_intermediate / (plan.tp // ep)
    b.collective("moe_dispatch", count if plan.attention_dp else 0, f.all_to_all(T * k, m.hidden, ep, b.a), ep)
    b.mlp("expert_", count, rows, width, weight_sets=touched, expert=True)
    b.collective("moe_combine_all_to_all", count if plan.attention_dp else 0, f.all_to_all(T * k, m.hidden, ep, b.a),
                 ep)
    if m.n_shared_experts:
        b.mlp("shared_", count, T, m.moe_intermediate * m.n_shared_experts / b.tp)
    if m.shared_expert_gate:
        b.linear("shared_expert_gate", count, T, m.hidden, 1)
    b.add("moe_combine", "elementwise", count, f.moe_combine(T, m.hidden, k, b.a, bool(m.n_shared_experts)))
