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

Every row is evaluated through the operator registry (formulas.FORMULAS: formula name -> operator class and cost
function), as torch.utils.flop_counter maps each aten op to its formula: a row names its formula, the registry gives
its class and its cost.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from . import formulas as f
from .dtypes import DTYPE_BYTES, matmul_dtype, state_bytes_per_element, weight_bytes_per_element
from .errors import RooflineInputError
from .formulas import FORMULAS
from .models import (
    ACTIVATION_FLOPS,
    ModelSpec,
    indexer_cache_bytes_per_token,
    kv_elements_per_token,
    sparse_latent_fp8_bytes_per_token,
)
from .parallel import Parallel, kv_heads_per_device
from .parts import part_gemm, scenario_dtypes, weight_part
from .scenario import Scenario


class Op(NamedTuple):
    """One operator of the forward pass: name, class, instances per pass, cost of one instance (one device's
    share), compute dtype, and for communication the number of devices the collective spans."""

    name: str
    op_class: str
    count: int
    cost: f.Cost
    compute_dtype: str
    span: int = 1


_LINEAR, _NORM = FORMULAS["linear"], FORMULAS["norm"]


class _Builder:
    """Collects Op rows; holds the scenario's byte widths and compute dtypes so each call site stays one line."""

    def __init__(self, m: ModelSpec, sc: Scenario):
        if not isinstance(sc.parallel, Parallel):
            raise RooflineInputError(f"scenario.parallel: {sc.parallel!r} must be resolved to a plan (tp, pp, ep) "
                                     "before the operator graph is built (roofline.engine.analysis.resolve_plan)")
        self.m, self.sc, self.plan = m, sc, sc.parallel
        self.routed = 0  # tokens the expert-parallel group routes in the pass (_build sets it)
        # devices the attention heads, dense MLPs, embedding and lm_head are split over (1 under DP attention)
        self.tp = 1 if self.plan.attention_dp else self.plan.tp
        self.w, self.a, self.c = (weight_bytes_per_element(sc.weight_dtype, sc.weight_group_size),
                                  DTYPE_BYTES[sc.act_dtype], DTYPE_BYTES[sc.kv_dtype])
        self.w_expert = weight_bytes_per_element(sc.expert_dtype, sc.weight_group_size)
        self.s = state_bytes_per_element(sc.act_dtype)  # a linear-attention layer's state, not at the cache's dtype
        self.gemm_dtype = matmul_dtype(sc.weight_dtype, sc.act_dtype)
        self.expert_gemm_dtype = matmul_dtype(sc.expert_dtype, sc.act_dtype)
        self.dtypes = scenario_dtypes(sc)
        self.attn_dtype = self.dtypes.attention
        # an 8-bit act_dtype is the width of GEMM inputs only; every other activation is 16 bits at least
        self.gemm_a, self.a = self.a, DTYPE_BYTES[self.dtypes.act16]
        self.act16 = self.dtypes.act16
        self.norm_params_per_channel = 2 if m.norm == "layernorm" else 1
        # the embedding table and lm_head stay at 16 bits unless quantize_embeddings
        self.table_width = weight_bytes_per_element(self.dtypes.head_weight, sc.weight_group_size)
        self.ops: list[Op] = []
        # (bytes per weight, GEMM compute dtype, GEMM input bytes) of each weight part (part_gemm)
        self.parts = {"dense": (self.w, self.gemm_dtype, self.gemm_a),
                      "expert": (self.w_expert, self.expert_gemm_dtype, self.gemm_a)}
        for part, dtype in (("attention", sc.attention_weights_dtype), ("router", self.dtypes.router_weight)):
            compute, act = part_gemm(sc, dtype)
            self.parts[part] = (weight_bytes_per_element(dtype, sc.weight_group_size), compute, DTYPE_BYTES[act])

    def add(self, name, formula, count, dtype=None, span=1, adjust=None, **shape):
        """Row `name`: `count` instances of the registered `formula` at `shape` (its keyword arguments), of the
        formula's operator class; `adjust` rebooks the cost (a device's share, K/V read from fresh activations)."""
        if count:
            op_class, cost_of = FORMULAS[formula]
            cost = cost_of(**shape)
            self.ops.append(Op(name, op_class, count, cost if adjust is None else adjust(cost), dtype or self.act16,
                               span))

    def collective(self, name, formula, count, span, **shape):
        """A communication row over `span` devices (nothing when the plan keeps it on one device)."""
        if span > 1:
            self.add(name, formula, count, span=span, **shape)

    # the two most frequent rows call their registry entry directly: one keyword hop less per row
    def linear(self, name, count, T, K, N, bias=False, expert=False, weight_sets=1):
        """A weight GEMM; `expert` ones use the experts' weight dtype (scenario.expert_dtype), routers and
        attention projections theirs (part_weight_dtype)."""
        if count:
            w, dtype, a = self.parts["expert" if expert else weight_part(name)]
            cost = _LINEAR.cost(T=T, K=K, N=N, w=w, a=a, bias=bias, weight_sets=weight_sets, out_width=self.a)
            self.ops.append(Op(name, _LINEAR.op_class, count, cost, dtype, 1))

    def norm(self, name, count, T, D):
        """RMSNorm or LayerNorm (scale and shift) over D channels of T rows."""
        if count:
            cost = _NORM.cost(T=T, D=D, a=self.a, params_per_channel=self.norm_params_per_channel)
            self.ops.append(Op(name, _NORM.op_class, count, cost, self.act16, 1))

    def mlp(self, prefix, count, rows, width, weight_sets=1, expert=False):
        """A dense (gated or plain) MLP of `width` on `rows` token rows (MoE: token-expert pairs), streaming
        `weight_sets` copies of its weights (MoE: distinct experts touched)."""
        m, gated = self.m, self.m.mlp_type == "gated"
        bias = m.linear_bias or (expert and m.expert_bias)
        if gated:
            self.linear(f"{prefix}gate_proj", count, rows, m.hidden, width, bias, expert, weight_sets)
            self.linear(f"{prefix}up_proj", count, rows, m.hidden, width, bias, expert, weight_sets)
        else:
            self.linear(f"{prefix}up_proj" if prefix else "fc1", count, rows, m.hidden, width, bias, expert,
                        weight_sets)
        self.add(f"{prefix}act" if prefix else "mlp_act", "activation", count, T=rows, F=width, a=self.a,
                 act_flops=ACTIVATION_FLOPS[m.activation], gated=gated)
        down = "down_proj" if gated or prefix else "fc2"
        self.linear(f"{prefix}{down}", count, rows, width, m.hidden, bias, expert, weight_sets)


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
    builder = _Builder(m, sc.for_model(m))  # weight_dtype 'native' -> the checkpoint's dtypes
    B = sc.batch if batch is None else batch
    S = sc.seq_len if seq_len is None else seq_len
    plan = builder.plan
    prefill = stage == "prefill"
    # the tokens the whole expert-parallel group routes: every replica's, not tp times the busiest one's (one
    # sequence under DP attention over 8 replicas is one token at the experts, not 8)
    builder.routed = B * S if prefill else B
    if plan.attention_dp:  # each of the tp replicas serves its share of the sequences; the busiest gets ceil
        B = np.ceil(B / plan.tp) if isinstance(B, np.ndarray) else math.ceil(B / plan.tp)
    T = B * S if prefill else B  # tokens processed by every token-wise operator (on one device)
    _embedding(builder, T)
    _attention_block(builder, B, S, T, prefill)
    _mlp_block(builder, T)
    _pipeline_and_head(builder, B, T, prefill)
    return builder.ops


def _embedding(builder: _Builder, T):
    """The vocab-parallel embedding (each device gathers from its V / tp rows; the rows sum up over tp)."""
    m, tp = builder.m, builder.tp
    builder.add("embedding", "embedding", 1, adjust=lambda cost: cost._replace(weight=cost.weight / tp),
                T=T, D=m.hidden, V=m.vocab, w=builder.table_width, a=builder.a, position_rows=m.learned_positions)
    builder.collective("embed_all_reduce", "all_reduce", 1, tp, T=T, D=m.hidden, n=tp, a=builder.a)


def _attention_block(builder: _Builder, B, S, T, prefill):
    """Norm, attention (standard, MLA; linear attention beside it), the tensor-parallel all-reduce, residual add."""
    m, L, D, tp = builder.m, builder.m.n_layers, builder.m.hidden, builder.tp
    builder.norm("attn_norm", L, T, D)
    if m.is_mla:
        _mla_attention(builder, B, S, T, prefill)
    else:
        _standard_attention(builder, B, S, T, prefill)
    builder.collective("attn_all_reduce", "all_reduce", L, tp, T=T, D=D, n=tp, a=builder.a)
    if m.norms_per_layer == 4:
        builder.norm("post_attn_norm", L, T, D)
    builder.add("attn_add", "residual_add", L, T=T, D=D, a=builder.a)


def _mlp_block(builder: _Builder, T):
    """Norm, the dense and MoE MLPs, the tensor-parallel all-reduce, residual add."""
    m, L, D, tp = builder.m, builder.m.n_layers, builder.m.hidden, builder.tp
    if m.norms_per_layer >= 2:  # a parallel block with one shared input norm (Falcon-7B) has none
        builder.norm("mlp_norm", L, T, D)
    builder.mlp("", m.n_dense_layers, T, m.intermediate / tp)
    if m.is_moe:
        _moe(builder, T)
    # tensor parallelism sums the partial outputs of every MLP (dense, or the experts and shared expert together)
    builder.collective("mlp_all_reduce", "all_reduce", L if not builder.plan.attention_dp else 0, tp, T=T, D=D, n=tp,
                       a=builder.a)
    if m.norms_per_layer == 4:
        builder.norm("post_mlp_norm", L, T, D)
    builder.add("mlp_add", "residual_add", L, T=T, D=D, a=builder.a)


def _pipeline_and_head(builder: _Builder, B, T, prefill):
    """Pipeline hand-overs, the final norm and the vocab-parallel lm_head with its logits all-gather."""
    m, plan, tp, D = builder.m, builder.plan, builder.tp, builder.m.hidden
    builder.collective("pp_send", "p2p_send", plan.pp - 1, plan.devices if plan.pp > 1 else 1, T=T, D=D, a=builder.a)
    builder.norm("final_norm", 1, T, D)
    logits_rows = T if (prefill and builder.sc.logits == "all") else B
    builder.add("lm_head", "linear", 1, dtype=builder.dtypes.head, T=logits_rows, K=D, N=m.vocab / tp,
                w=builder.table_width, a=DTYPE_BYTES[builder.dtypes.head_input], out_width=builder.a)
    builder.collective("logits_all_gather", "all_gather", 1, tp, T=logits_rows, N=m.vocab, n=tp, a=builder.a)


def _keys_attended(S, window, prefill):
    """Keys per query row the kernel touches: prefill all S (eager computes the full block); decode S+1 capped at W."""
    if prefill:
        return S
    return S + 1 if window is None else np.minimum(S + 1, window)


def _attention_core(builder: _Builder, B, S, prefill, H, Hkv, d, dv, kv_width=None, from_cache=None, topk=None):
    """QK^T, softmax, PV (eager) or one fused kernel (flash), per attention group (full / sliding window / chunked).

    Decode reads K and V from the KV cache (at the cache dtype, booked as KV traffic); prefill reads the K and V
    its projections just produced (at the activation dtype, booked as activation traffic), as do MLA's naive
    decode steps, which re-expand the latent into fresh per-head K and V. `from_cache` overrides the default.
    Flash visits `pairs` (query, key) pairs per head; eager computes the full block of Skv keys per query.
    `topk` (DeepSeek Sparse Attention) caps the keys a query attends at its indexer's choice: a decode query
    reads min(S + 1, topk) cached rows, a prompt's queries visit sum_i min(i, topk) pairs (every key is read).
    """
    from_cache = (not prefill) if from_cache is None else from_cache
    if from_cache:
        a, c, adjust, dtype = builder.a, builder.c, None, builder.attn_dtype
    else:
        a, c, adjust, dtype = builder.a, builder.a, f.from_activations, builder.act16
    Sq = S if prefill else 1
    groups = []  # (suffix, layers, keys per query, pairs per head, cache row width)
    for suffix, window, count in attention_groups(builder.m):
        window = window if topk is None else topk  # a sparse model has no sliding window (ModelSpec.validate)
        Skv = _keys_attended(S, window, prefill)
        groups.append((suffix, count, Skv, f.causal_pairs(S, window) if prefill else Skv, kv_width))
    if builder.m.chunked_layers:
        # chunked attention (Llama 4): query i sees keys j <= i of its own chunk (j // Ck == i // Ck). Eager prefill
        # computes the full S x S block, as for the other layers; flash visits the in-chunk causal pairs; decode
        # attends the new token's chunk so far, S mod Ck + 1 keys
        chunk = builder.m.attention_chunk
        Skv = S if prefill else S % chunk + 1
        groups.append(("_chunked", builder.m.chunked_layers, Skv, f.chunked_causal_pairs(S, chunk) if prefill else Skv,
                       None))
    for suffix, count, Skv, pairs, width in groups:
        if builder.sc.attention == "flash":
            builder.add(f"fused_attention{suffix}", "fused_attention", count, dtype=dtype, adjust=adjust,
                        B=B, H=H, Hkv=Hkv, S=Sq, pairs=pairs, Skv=Skv, d=d, dv=dv, a=a, c=c, kv_width=width)
            continue
        builder.add(f"qk_matmul{suffix}", "qk_matmul", count, dtype=dtype, adjust=adjust,
                    B=B, H=H, Hkv=Hkv, S=Sq, Skv=Skv, d=d, a=a, c=c)
        builder.add(f"softmax{suffix}", "softmax", count, B=B, H=H, S=Sq, Skv=Skv, a=a)
        builder.add(f"sv_matmul{suffix}", "sv_matmul", count, dtype=dtype, adjust=adjust,
                    B=B, H=H, Hkv=Hkv, S=Sq, Skv=Skv, dv=dv, a=a, c=c)


def _standard_attention(builder: _Builder, B, S, T, prefill):
    m, L, tp = builder.m, builder.m.n_attention_layers, builder.tp
    H, Hkv, d, D = m.n_heads // tp, kv_heads_per_device(m.n_kv_heads, tp), m.head_dim, m.hidden
    bias = m.qkv_bias or m.linear_bias
    builder.linear("q_proj", L, T, D, H * d * (2 if m.attn_output_gate else 1), bias)
    builder.linear("k_proj", L, T, D, Hkv * d, bias)
    builder.linear("v_proj", L, T, D, Hkv * d, bias)
    if m.qk_norm_full:  # one norm over each token's whole projection (OLMo-2's RMSNorm(H d)): the same elements
        builder.norm("q_norm", L, T, H * d)
        builder.norm("k_norm", L, T, Hkv * d)
        # ...whose statistics span every device's slice under TP: at least one all-reduce of each token's fp32 sum
        # of squares per norm (vLLM's MiniMaxText01RMSNormTP; its OLMo-2 all-gathers q and k instead, more bytes)
        builder.collective("qk_norm_all_reduce", "all_reduce", 2 * L, tp, T=T, D=1, n=tp, a=4)
    elif m.qk_norm:
        builder.norm("q_norm", L, T * H, d)
        builder.norm("k_norm", L, T * Hkv, d)
    if m.positions == "rope":
        builder.add("rope", "rope", L - m.nope_layers, T=T, heads=H + Hkv, rot_dim=m.rotary_dim, a=builder.a)
    builder.add("kv_cache_write", "kv_cache_write", L, T=T, elements_per_token=2 * Hkv * d, a=builder.a,
                c=builder.c)  # this device's K, V
    _attention_core(builder, B, S, prefill, H=H, Hkv=Hkv, d=d, dv=d)
    if m.attn_output_gate:
        builder.add("attn_output_gate", "output_gate", L, T=T, N=H * d, a=builder.a)
    builder.linear("o_proj", L, T, H * d, D, m.linear_bias or m.attn_out_bias)
    if m.linear_layers:
        _linear_attention(builder, B, S, T, prefill)


def _linear_attention(builder: _Builder, B, S, T, prefill):
    """Gated DeltaNet layers (Qwen3-Next): projections, a depthwise causal conv over q/k/v, the gated delta rule
    on a fixed [Hv, dk, dv] state per sequence (booked as KV-cache traffic: it replaces the cache), a gated RMSNorm
    and out_proj. HF module names (in_proj_qkvz, in_proj_ba, conv1d, norm -> linear_attn_norm, out_proj). Under
    tensor parallelism each device holds 1/tp of the key and value heads (and of the conv channels)."""
    m, L, tp = builder.m, builder.m.linear_layers, builder.tp
    D, Hv, Hk, dk, dv = m.hidden, m.linear_v_heads // tp, m.linear_k_heads // tp, m.linear_k_dim, m.linear_v_dim
    Kw, Vw = m.linear_key_width // tp, m.linear_value_width // tp
    a, c = builder.a, builder.s  # the state's width (16 bits or more), not the attention cache's
    builder.linear("in_proj_qkvz", L, T, D, 2 * Kw + 2 * Vw)
    builder.linear("in_proj_ba", L, T, D, 2 * Hv)
    Sq = S if prefill else 1
    # q, k, v pass the conv; z (the output gate) does not
    builder.add("conv1d", "causal_conv1d", L, B=B, Sq=Sq, C=2 * Kw + Vw, K=m.linear_conv_kernel,
                w=builder.parts["attention"][0], a=a, c=c, decode=not prefill)  # its weights: the mixer's
    builder.add("gated_delta_rule", "gated_delta_rule", L, B=B, Sq=Sq, Hv=Hv, dk=dk, dv=dv, a=a, c=c, chunked=prefill,
                Hk=Hk)
    builder.norm("linear_attn_norm", L, T * Hv, dv)
    builder.add("linear_attn_gate", "activation", L, T=T, F=Vw, a=a, act_flops=ACTIVATION_FLOPS["silu"], gated=True)
    builder.linear("out_proj", L, T, Vw, D)


def _mla_attention(builder: _Builder, B, S, T, prefill):
    """Multi-head latent attention (DeepSeek-V2/V3). Prefill always decompresses K/V (compute-efficient for long
    prompts, what serving engines do); decode follows scenario.mla_mode. Under tensor parallelism each device holds
    H / tp heads; the latent projections and the latent cache are replicated."""
    m, L, mode = builder.m, builder.m.n_layers, builder.sc.mla_mode
    D, H, C, R = m.hidden, m.n_heads // builder.tp, m.kv_lora_rank, m.qk_rope_head_dim
    dn, dv, dq = m.qk_nope_head_dim, m.v_head_dim, m.qk_head_dim
    if m.q_lora_rank:
        builder.linear("q_a_proj", L, T, D, m.q_lora_rank)
        builder.norm("q_a_layernorm", L, T, m.q_lora_rank)
        builder.linear("q_b_proj", L, T, m.q_lora_rank, H * dq)
    else:
        builder.linear("q_proj", L, T, D, H * dq)
    builder.linear("kv_a_proj_with_mqa", L, T, D, C + R)
    builder.norm("kv_a_layernorm", L, T, C)
    builder.add("rope", "rope", L, T=T, heads=H + 1, rot_dim=R, a=builder.a)
    kv_per_token = kv_elements_per_token(m, mode) // (builder.tp if mode == "decompressed" else 1)
    # a sparse model's fp8 latent is FlashMLA's sparse layout (its scales and 16-bit RoPE dims: 656 bytes a token for
    # DeepSeek-V3.2, not 576), written and read as the footprint holds it (models.kv_bytes_per_token_layer)
    row = C + R if not (m.is_sparse_attention and builder.c == 1 and mode != "decompressed") else \
        sparse_latent_fp8_bytes_per_token(m)
    # the C + R values come in at the activations' width and go to the cache as `row` bytes
    builder.add("kv_cache_write", "kv_cache_write", L, T=T, elements_per_token=kv_per_token, a=builder.a, c=builder.c,
                adjust=lambda cost: cost._replace(kv_write=cost.kv_write * row / (C + R)))
    topk = m.index_topk or None
    if topk:
        _indexer(builder, B, S, T, prefill)
    if prefill or mode == "decompressed":
        builder.linear("kv_b_proj", L, T, C, H * (dn + dv))
        _attention_core(builder, B, S, prefill, H=H, Hkv=H, d=dq, dv=dv, topk=topk)
    elif mode == "naive":
        # every step re-expands the whole cached latent of each sequence into per-head K_nope and V
        # (the rope key R of each cached row is read with it; the expanded K/V are fresh activations)
        Skv = _keys_attended(S, topk, False)
        width, dtype, _ = builder.parts["attention"]
        builder.add("kv_b_proj", "linear", L, dtype=dtype,
                    adjust=lambda cost: cost._replace(kv_read=cost.kv_read * row / C),
                    T=B * Skv, K=C, N=H * (dn + dv), w=width, a=builder.a, cached_input_width=builder.c)
        _attention_core(builder, B, S, prefill, H=H, Hkv=H, d=dq, dv=dv, from_cache=False, topk=topk)
    else:  # absorbed: q_nope @ W_UK gives a query in latent space; attention reads the shared latent (Hkv = 1)
        builder.linear("q_absorb", L, T * H, dn, C, weight_sets=H)
        _attention_core(builder, B, S, prefill, H=H, Hkv=1, d=C + R, dv=C, kv_width=row, topk=topk)
        builder.linear("out_absorb", L, T * H, C, dv, weight_sets=H)
    builder.linear("o_proj", L, T, H * dv, D)


def _indexer(builder: _Builder, B, S, T, prefill):
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5), whole on every tensor-parallel rank
    (vLLM and SGLang replicate its weights): wq_b on the compressed query, wk and its LayerNorm, weights_proj, RoPE
    on the rotary channels of its query heads and key, the write of its fp8 key cache, and the scores of every
    cached key (prefill: the causal pairs) with the top-k choice, computed in fp8 as every implementation does
    (DeepGEMM's fp8 MQA logits; check_indexer_device refuses a device without fp8). Left out: the Hadamard
    rotation of q and k and their fp8 quantization (element-wise on tensors already counted)."""
    m, L = builder.m, builder.m.n_layers
    Hi, di, D, topk = m.index_n_heads, m.index_head_dim, m.hidden, m.index_topk
    builder.linear("indexer_wq_b", L, T, m.q_lora_rank or D, Hi * di)
    builder.linear("indexer_wk", L, T, D, di)
    builder.add("indexer_k_norm", "norm", L, T=T, D=di, a=builder.a, params_per_channel=2)
    builder.linear("indexer_weights_proj", L, T, D, Hi)
    builder.add("indexer_rope", "rope", L, T=T, heads=Hi + 1, rot_dim=m.qk_rope_head_dim, a=builder.a)
    key_bytes = indexer_cache_bytes_per_token(m)
    builder.add("indexer_cache_write", "kv_cache_write", L, T=T, elements_per_token=di, a=builder.a,
                c=key_bytes / di)
    Skv = S if prefill else S + 1
    pairs = f.causal_pairs(S) if prefill else Skv
    selected = f.causal_pairs(S, topk) if prefill else np.minimum(Skv, topk)
    builder.add("indexer_scores", "indexer_scores", L, dtype="fp8", adjust=f.from_activations if prefill else None,
                B=B, Hi=Hi, di=di, S=S if prefill else 1, pairs=pairs, Skv=Skv, selected=selected,
                key_bytes=key_bytes)


def _moe(builder: _Builder, T):
    """Router, routed experts, shared experts and the weighted combine of the MoE layers, for one device.

    Tensor-parallel experts (ep = 1) see every token-expert pair at 1/tp of each expert's width. With ep > 1 the
    busiest of the ep expert groups gets formulas.expected_max_load of the pairs (uniform routing) at 1/(tp/ep) of
    the width, and touches 1/ep of the distinct experts. Under DP attention the tokens of all tp replicas meet at
    the experts through an all-to-all dispatch and come back through an all-to-all combine, one copy of a token
    per rank its experts live on (formulas.distinct_ranks)."""
    m, count, plan = builder.m, builder.m.n_moe_layers, builder.plan
    E, k, ep, D = m.n_experts, m.top_k, plan.ep, m.hidden
    routing = builder.sc.expert_routing
    builder.linear("router", count, T, D, E, m.router_bias)
    tokens = builder.routed if plan.attention_dp else T  # tokens routed by the whole expert-parallel group
    pairs = tokens * k
    rows = f.expected_max_load(pairs, ep) if routing == "uniform" else pairs / ep
    touched = f.distinct_experts(tokens, E, k, routing) / ep
    all_to_all = count if plan.attention_dp else 0
    # a token travels once to each rank that holds one of its experts, at the experts' input width (quantized
    # before the dispatch, as DeepEP and TensorRT-LLM do for 8- and 4-bit activations), and its partial sums come
    # back once per rank at the activation width
    copies = T * f.distinct_ranks(E, k, ep, routing, m.expert_groups, m.groups_per_token)
    builder.collective("moe_dispatch", "all_to_all", all_to_all, ep, rows=copies, D=D, n=ep, a=builder.gemm_a)
    builder.mlp("expert_", count, rows, m.moe_intermediate / (plan.tp // ep), weight_sets=touched, expert=True)
    builder.collective("moe_combine_all_to_all", "all_to_all", all_to_all, ep, rows=copies, D=D, n=ep, a=builder.a)
    if m.n_shared_experts:
        builder.mlp("shared_", count, T, m.moe_intermediate * m.n_shared_experts / builder.tp)
    if m.shared_expert_gate:
        builder.linear("shared_expert_gate", count, T, D, 1)
    builder.add("moe_combine", "moe_combine", count, T=T, D=D, k=k, a=builder.a, shared=bool(m.n_shared_experts),
                rows=rows if ep > 1 else None)
