"""Operator cost formulas: FLOPs and compulsory DRAM bytes of one operator instance, and their registry.

`FORMULAS` maps each formula's name to its operator class and cost function (as torch/utils/flop_counter.py maps
each aten op to its formula): the operator graph (roofline.engine.graph) evaluates every row through it.

Conventions (stated once, used everywhere):

* 1 multiply-add = 2 FLOPs (as PyTorch's FlopCounterMode; fvcore counts 1). A [T x K] @ [K x N] matmul costs
  2*T*K*N FLOPs. Bias adds (T*N) are not counted as FLOPs, as in PyTorch; their weights are counted as bytes.
* Element-wise ops count each +, *, /, exp, tanh, rsqrt as 1 FLOP: residual add 1/element, softmax 5/element
  (max, subtract, exp, sum, divide), rotary embedding 3/element, activation functions per ACTIVATION_FLOPS in
  models.py (+1 for the gate multiply of SwiGLU/GeGLU). NB: norms use 7 FLOPs/element for RMSNorm and LayerNorm
  alike, the convention of LLM-Viewer and of the paper's Table 1, so the norm intensity is comparable (a minimal
  RMSNorm is 4/element). Norms and element-wise ops are memory-bound by two orders of magnitude either way, so
  this choice does not change any time or bound.
* Bytes are compulsory DRAM traffic of an unfused kernel: every input read once, every output written once, weights
  read once per forward pass. No cache reuse across operators (an L2 hit would lower bytes) and no re-reads
  inside a kernel (tiling re-reads would raise them). Bytes split by kind: weight, activation read/write,
  KV-cache read/write.
* Attention in prefill reads the K and V its projections just produced (activation dtype, booked as activation
  traffic); decode reads them from the KV cache (cache dtype, booked as KV traffic). A quantized cache therefore
  speeds up decode attention, and prefill only through the cache write.
* Ignored, with reasons: dropout (inference), the causal mask add and softmax scaling (folded into the softmax by
  every kernel), router softmax/top-k (T x E elements, < 0.1% of the MoE block), Gemma-2 logit soft-capping and
  embedding scaling (element-wise on tensors already counted), bias-add FLOPs (see above), the quantization and
  dequantization arithmetic of int8/int4/fp8/fp4 tensors (hidden under the memory time of the ops that need it),
  Llama 4's parameter-free L2 q/k norm and gpt-oss's attention-sink softmax column (one logit per query row), and
  DeepSeek Sparse Attention's top-k selection (comparisons, not arithmetic) and the Hadamard rotation of its
  indexer's q and k (d log d adds per vector, beside the d^2-scale projections).
* Communication (multi-device deployments, roofline.engine.parallel): a collective moves `network` bytes over the
  link of each device, booked apart from DRAM bytes; its time is latency + network bytes / link bandwidth (per
  device, per direction), beside its DRAM time (read the send buffer, write the received data). All-reduce is the ring
  algorithm: a reduce-scatter and an all-gather, 2(n-1)/n of the tensor on the link of each of n devices, one
  latency per collective (NCCL's tree and one-shot kernels move as many or more bytes; their latency is similar
  for the small messages of decode); on a link whose switch reduces in flight (NVLink SHARP) the tensor crosses
  once each way instead, and across scale-up domains both links and the cut between them bound the time
  (roofline.engine.collectives). All-gather and all-to-all move (n-1)/n, a point-to-point send the whole tensor.
  Default overlap: none. Communication time adds to the compute and memory times of the other operators, as every
  operator's time adds to the others'; the `overlap_communication` treatment prices hiding it.
* Quantized activations (rule in dtypes.py): an 8-bit (or narrower) act_dtype applies to GEMM inputs only, so a
  GEMM reads its input at act_dtype's width and writes its output at 16 bits; every other activation tensor (norms,
  softmax, residual adds, RoPE, attention's Q/K/V/output) is read and written at 16 bits. The embedding table and
  lm_head of quantized weights stay at 16 bits unless the scenario sets quantize_embeddings.
* Every formula accepts Python numbers or NumPy arrays for the shape symbols, so one call can evaluate a whole
  sweep; hence `np.minimum` rather than `min` and no branching on shape values.

Symbols: n devices in a collective, B batch, S sequence (query) length, Skv keys attended, T tokens processed (B*S in
prefill, B in decode), D hidden, H query heads, Hkv KV heads, d head dim, F MLP width, V vocab, W sliding window,
E experts, k top-k.
Byte widths: w weights, a activations, c KV cache.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

NORM_FLOPS_PER_ELEMENT = 7
SOFTMAX_FLOPS_PER_ELEMENT = 5
ROPE_FLOPS_PER_ELEMENT = 3
ADD_FLOPS_PER_ELEMENT = 1


class Cost(NamedTuple):
    """FLOPs and bytes of one operator instance, bytes split by kind (all in FLOP and byte). Built with keywords,
    each kind named (house rule); a kind left out is 0."""

    flops: float
    weight: float = 0.0
    act_read: float = 0.0
    act_write: float = 0.0
    kv_read: float = 0.0
    kv_write: float = 0.0
    network: float = 0.0  # bytes on the device's link (collectives only); not DRAM traffic

    @property
    def bytes(self):
        """Compulsory DRAM bytes (the five DRAM kinds; network bytes are not DRAM traffic)."""
        return self.weight + self.act_read + self.act_write + self.kv_read + self.kv_write

    def dram_bytes(self) -> dict:
        """{"bytes_weight": ..., "bytes_kv_write": ...}: the DRAM kinds under their table column names."""
        return {f"bytes_{kind}": getattr(self, kind) for kind in DRAM_KINDS}


#: the DRAM byte kinds of a Cost, in column order; the `bytes_*` columns of the operator table derive from them
DRAM_KINDS = ("weight", "act_read", "act_write", "kv_read", "kv_write")


#: the operator classes of the graph's rows (each formula belongs to one)
OP_CLASSES = ("gemm", "attention", "norm", "elementwise", "embedding", "communication")


class Formula(NamedTuple):
    """A registered operator: its class and its cost function."""

    op_class: str
    cost: Callable[..., Cost]


#: the operator registry: formula name -> (op class, cost function); the graph evaluates its rows through it
FORMULAS: dict[str, Formula] = {}


def formula(name: str, op_class: str):
    """Register an operator formula under `name` with its operator class; registering a name twice is an error."""
    if op_class not in OP_CLASSES:
        raise ValueError(f"formula '{name}': unknown operator class '{op_class}'")

    def register(func: Callable[..., Cost]) -> Callable[..., Cost]:
        if name in FORMULAS:
            raise ValueError(f"formula '{name}' registered twice")
        FORMULAS[name] = Formula(op_class, func)
        return func

    return register


@formula("linear", "gemm")
def linear(T, K, N, w, a, bias=False, weight_sets=1, cached_input_width=None, out_width=None) -> Cost:
    """y[T,N] = x[T,K] @ W[K,N] (+ b[N]); `weight_sets` matrices are streamed (MoE: distinct experts touched).

    `a`: bytes per element of x; `out_width`: of y (defaults to `a`; 16 bits when x is quantized to 8 bits).
    `cached_input_width`: x is read from the KV cache at that many bytes per element (MLA's naive decode expands
    the cached latent every step) and is booked as KV-cache traffic.
    """
    weight = weight_sets * (K * N + (N if bias else 0)) * w
    y = a if out_width is None else out_width
    if cached_input_width is None:
        return Cost(flops=2 * T * K * N, weight=weight, act_read=T * K * a, act_write=T * N * y)
    return Cost(flops=2 * T * K * N, weight=weight, act_write=T * N * y, kv_read=T * K * cached_input_width)


def from_activations(cost: Cost) -> Cost:
    """The same kernel reading its K/V from freshly computed activations instead of the KV cache: the bytes
    booked as KV reads move to activation reads (the caller sized them at the activation width)."""
    return cost._replace(act_read=cost.act_read + cost.kv_read, kv_read=0.0 * cost.kv_read)


@formula("qk_matmul", "attention")
def qk_matmul(B, H, Hkv, S, Skv, d, a, c) -> Cost:
    """scores[B,H,S,Skv] = Q[B,H,S,d] @ K[B,Hkv,Skv,d]^T; the full S x Skv block, as eager kernels compute it."""
    return Cost(flops=2 * B * H * S * Skv * d, act_read=B * H * S * d * a, act_write=B * H * S * Skv * a,
                kv_read=B * Hkv * Skv * d * c)


@formula("softmax", "attention")
def softmax(B, H, S, Skv, a) -> Cost:
    """probs[B,H,S,Skv] = softmax(scores) over Skv: read and write the score matrix."""
    elements = B * H * S * Skv
    return Cost(flops=SOFTMAX_FLOPS_PER_ELEMENT * elements, act_read=elements * a, act_write=elements * a)


@formula("sv_matmul", "attention")
def sv_matmul(B, H, Hkv, S, Skv, dv, a, c) -> Cost:
    """out[B,H,S,dv] = probs[B,H,S,Skv] @ V[B,Hkv,Skv,dv]."""
    return Cost(flops=2 * B * H * S * Skv * dv, act_read=B * H * S * Skv * a, act_write=B * H * S * dv * a,
                kv_read=B * Hkv * Skv * dv * c)


@formula("fused_attention", "attention")
def fused_attention(B, H, Hkv, S, pairs, Skv, d, dv, a, c, kv_width=None) -> Cost:
    """FlashAttention: QK^T, softmax and PV in one kernel over `pairs` (query, key) pairs per head; the scores
    never reach DRAM. Reads Q [B,S,H,d] and the cache rows [B,Hkv,Skv,kv_width] once, writes O [B,S,H,dv].
    kv_width defaults to d + dv (separate K and V); MLA's latent cache shares one row for K and V.

    NB: K/V re-reads across query tiles (S/Br passes in FlashAttention-2) are ignored: they hit L2 for the sizes
    here and are not compulsory.
    """
    kv_width = d + dv if kv_width is None else kv_width
    flops = B * H * pairs * (2 * d + 2 * dv + SOFTMAX_FLOPS_PER_ELEMENT)
    return Cost(flops=flops, act_read=B * H * S * d * a, act_write=B * H * S * dv * a,
                kv_read=B * Hkv * Skv * kv_width * c)


@formula("indexer_scores", "attention")
def indexer_scores(B, Hi, di, S, pairs, Skv, selected, key_bytes) -> Cost:
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2, GLM-5): for each of `pairs` (query, key) pairs
    of a sequence, sum over Hi heads of w_h relu(q_h . k) (2 di + 3 FLOPs per head: the dot product, the ReLU and
    the weighted sum) times the key's scale (1), then the best keys per query, `selected` indices per sequence in
    all (int32). Reads the S fp8 queries (di bytes per head) with their fp32 head weights (the queries' scales
    folded in, as DeepSeek's reference and vLLM do) and the Skv cached keys of `key_bytes` each (fp8 keys and their
    scales); the logits stay on chip (a kernel that writes them moves more: the expected time's business) and the
    top-k selection is comparisons, not FLOPs."""
    flops = B * pairs * (Hi * (2 * di + 3) + 1)
    return Cost(flops=flops, act_read=B * S * Hi * (di + 4), act_write=B * selected * 4, kv_read=B * Skv * key_bytes)


@formula("norm", "norm")
def norm(T, D, a, params_per_channel=1) -> Cost:
    """RMSNorm/LayerNorm over D channels of T tokens: read x, write y, read the scale (and shift) vectors."""
    return Cost(flops=NORM_FLOPS_PER_ELEMENT * T * D, weight=params_per_channel * D * a, act_read=T * D * a,
                act_write=T * D * a)


@formula("residual_add", "elementwise")
def residual_add(T, D, a, inputs=2) -> Cost:
    """y = x + r: reads `inputs` tensors [T,D] and writes one."""
    return Cost(flops=ADD_FLOPS_PER_ELEMENT * (inputs - 1) * T * D, act_read=inputs * T * D * a, act_write=T * D * a)


@formula("activation", "elementwise")
def activation(T, F, a, act_flops, gated) -> Cost:
    """Plain: y = act(x) on [T,F]. Gated (SwiGLU/GeGLU): y = act(gate) * up, reading two [T,F] tensors."""
    if gated:
        return Cost(flops=(act_flops + 1) * T * F, act_read=2 * T * F * a, act_write=T * F * a)
    return Cost(flops=act_flops * T * F, act_read=T * F * a, act_write=T * F * a)


@formula("rope", "elementwise")
def rope(T, heads, rot_dim, a) -> Cost:
    """Rotary embedding on `heads` heads of `rot_dim` rotated channels: x*cos + rotate(x)*sin (3 FLOPs/element)."""
    elements = T * heads * rot_dim
    return Cost(flops=ROPE_FLOPS_PER_ELEMENT * elements, act_read=elements * a, act_write=elements * a)


@formula("embedding", "embedding")
def embedding(T, D, V, w, a, position_rows=0) -> Cost:
    """Gather T rows of the [V,D] table (at most V distinct rows are read); add learned positions if present."""
    rows = np.minimum(T, V) if isinstance(T, np.ndarray) else min(T, V)  # NumPy on scalars costs ~1 us a call
    positions = np.minimum(T, position_rows) if isinstance(T, np.ndarray) else min(T, position_rows)
    weight = rows * D * w + positions * D * w
    flops = T * D * ADD_FLOPS_PER_ELEMENT if position_rows else 0.0 * T
    return Cost(flops=flops, weight=weight, act_write=T * D * a)


@formula("kv_cache_write", "elementwise")
def kv_cache_write(T, elements_per_token, a, c) -> Cost:
    """Copy the new tokens' K and V (or MLA latent) into the cache: read at dtype a, write at dtype c."""
    elements = T * elements_per_token
    return Cost(flops=0.0 * T, act_read=elements * a, kv_write=elements * c)


@formula("moe_combine", "elementwise")
def moe_combine(T, D, k, a, shared=False, rows=None) -> Cost:
    """Weighted sum of the expert outputs of T tokens (+ the shared-expert output): 2 FLOPs per product. A device
    reads the `rows` expert outputs it computed: all T k of them by default (tensor-parallel experts); under expert
    parallelism only its own group's (the rest are summed where they were computed)."""
    rows = T * k if rows is None else rows
    return Cost(flops=2 * rows * D + (T * D if shared else 0), act_read=(rows + (T if shared else 0)) * D * a,
                act_write=T * D * a)


@formula("all_reduce", "communication")
def all_reduce(T, D, n, a) -> Cost:
    """Ring all-reduce of x[T,D] over n devices: 2(n-1)/n x T*D*a bytes leave each device (reduce-scatter, then
    all-gather), (n-1)/n x T*D additions; the input is read and the sum written once."""
    elements = T * D
    return Cost(flops=(n - 1) / n * elements, act_read=elements * a, act_write=elements * a,
                network=2 * (n - 1) / n * elements * a)


@formula("all_gather", "communication")
def all_gather(T, N, n, a) -> Cost:
    """All-gather of n shards x[T, N/n] into x[T, N] on every device: (n-1)/n x T*N*a bytes arrive at each."""
    return Cost(flops=0.0 * T, act_read=T * N / n * a, act_write=T * N * a, network=(n - 1) / n * T * N * a)


@formula("all_to_all", "communication")
def all_to_all(rows, D, n, a) -> Cost:
    """All-to-all of `rows` token rows [rows, D] over n devices (MoE dispatch or combine): the (n-1)/n of them
    bound for other devices leave through the link; the rows are read once and the received ones written once."""
    return Cost(flops=0.0 * rows, act_read=rows * D * a, act_write=rows * D * a, network=(n - 1) / n * rows * D * a)


@formula("p2p_send", "communication")
def p2p_send(T, D, a) -> Cost:
    """Pipeline-stage hand-over of the activations x[T,D] to the next stage: read here, written there."""
    return Cost(flops=0.0 * T, act_read=T * D * a, act_write=T * D * a, network=T * D * a)


def distinct_ranks(E, k, ep, routing="uniform", groups=1, per_token=0):
    """Expected number of the ep expert-parallel ranks (E / ep experts each) that one token's k distinct experts
    live on: the copies of the token an all-to-all that sends it once per rank moves (DeepEP's dispatch and
    combine, TensorRT-LLM's MoE all-to-all; the experts on one rank share the copy).

    uniform: the k experts are a uniform draw without replacement, so a rank holds none of them with probability
    C(E - E/ep, k) / C(E, k) = prod_i (E - E/ep - i) / (E - i), and ep (1 - that) ranks are hit (top-8 of 256:
    3.6 of ep 4, 5.3 of 8, 6.5 of 16, 7.3 of 32). Group-limited routing (DeepSeek-V3: `groups` 8, `per_token` 4):
    the token first takes per_token of the groups, then its k experts uniformly from their P = per_token E / groups
    experts; a rank misses unless one of its groups is taken and it holds one of the k (exact where ranks and groups
    nest, one inside the other; a lower estimate otherwise, which the bound may use) (DeepSeek-V3: 2.9 of ep 4,
    3.6 of 8, 5.3 of 16). balanced and all: each pick on a rank of its own, min(k, ep)."""
    if ep <= 1:
        return 1.0
    if routing != "uniform":
        return float(min(k, ep))
    if groups > 1 and 0 < per_token < groups:
        return ep * (1 - _group_limited_miss(E, k, ep, groups, per_token))
    return ep * (1 - _miss(E, E / ep, k))


def _miss(pool, held, k):
    """Chance that k distinct draws from `pool` items miss all `held` of them: prod_i (pool - held - i) / (pool - i)."""
    return max(float(np.prod([(pool - held - i) / (pool - i) for i in range(int(k))])), 0.0)


def _group_limited_miss(E, k, ep, groups, per_token):
    """Chance that a rank holds none of a token's experts under group-limited routing (distinct_ranks)."""
    pool = per_token * E / groups
    if ep >= groups:  # a rank holds E / ep experts of one group: missed unless the group is taken and a draw hits
        return 1 - per_token / groups + per_token / groups * _miss(pool, E / ep, k)
    owned = groups // ep  # whole groups per rank: j of them taken with hypergeometric odds, then all draws elsewhere
    return sum(math.comb(owned, j) * math.comb(groups - owned, per_token - j) / math.comb(groups, per_token)
               * _miss(pool, j * E / groups, k) for j in range(0, min(owned, per_token) + 1))


def expected_max_load(pairs, n):
    """Expected token-expert pairs reaching the busiest of n equal expert groups when `pairs` pairs are routed
    uniformly at random: mean + std x sqrt(2 ln n) (the Gaussian approximation of the maximum of n binomials,
    mean pairs/n, variance pairs(1/n)(1-1/n)), capped at all pairs. n = 1 gives all pairs."""
    if n == 1:
        return pairs
    mean = pairs / n
    spread = np.sqrt(pairs * (1 / n) * (1 - 1 / n) * 2 * np.log(n))
    return np.minimum(pairs, mean + spread)


def causal_pairs(S, window=None):
    """(query, key) pairs a causal kernel visits for S queries: S(S+1)/2, or sum_i min(i, W) with a window."""
    if window is None:
        return S * (S + 1) / 2
    m = np.minimum(S, window)
    return m * (m + 1) / 2 + (S - m) * window


def distinct_experts(tokens, E, k, routing="uniform"):
    """Expected number of distinct experts a layer loads for `tokens` routed tokens.

    uniform: each token picks k of E experts uniformly and independently, so an expert stays idle with
    probability (1 - k/E)^T and E * (1 - (1 - k/E)^T) are touched (batch 1 decode ~k; batch 64 ~E).
    balanced: a load balancer spreads the T*k picks over as many experts as possible, min(E, T*k).
    all: kernels that stream every expert regardless of routing (the worst case).
    """
    if routing == "uniform":
        return E * (1 - (1 - k / E) ** tokens)
    if routing == "balanced":
        return np.minimum(E, tokens * k)
    if routing == "all":
        return E + 0 * tokens
    raise ValueError(routing)


def chunked_causal_pairs(S, chunk):
    """(query, key) pairs of chunked causal attention (Llama 4): S = q*Ck + r queries, each seeing the keys of its own
    chunk up to itself: q * Ck(Ck+1)/2 + r(r+1)/2."""
    full, rest = S // chunk, S % chunk
    return full * chunk * (chunk + 1) / 2 + rest * (rest + 1) / 2


@formula("output_gate", "elementwise")
def output_gate(T, N, a) -> Cost:
    """y[T,N] = o * sigmoid(g) (Qwen3-Next's gated attention): reads o and g, writes y; sigmoid 4 + multiply 1."""
    return Cost(flops=5 * T * N, act_read=2 * T * N * a, act_write=T * N * a)


@formula("causal_conv1d", "attention")
def causal_conv1d(B, Sq, C, K, w, a, c, decode=False) -> Cost:
    """Depthwise causal conv over C channels with a K-tap kernel, Sq new positions per sequence: y[B,Sq,C] =
    sum_k W[C,k] x[B,t-k,C] (2 FLOPs per tap). Prefill (Sq > 1) writes the last K-1 inputs as the conv state;
    decode (Sq = 1) reads that state and writes it back shifted (state at c bytes: the state's width, 16 bits
    or more; booked as KV)."""
    T = B * Sq
    state = B * C * (K - 1) * c
    return Cost(flops=2 * T * C * K, weight=C * K * w, act_read=T * C * a, act_write=T * C * a,
                kv_read=state if decode else 0.0 * T, kv_write=state)


#: tokens per chunk of the chunked gated-delta-rule kernels (FLA's chunk_gated_delta_rule and HF's torch fallback)
DELTA_RULE_CHUNK = 64


@formula("gated_delta_rule", "attention")
def gated_delta_rule(B, Sq, Hv, dk, dv, a, c, chunked=True, Hk=None, chunk=DELTA_RULE_CHUNK) -> Cost:
    """Gated DeltaNet core on a [B, Hv, dk, dv] state (Qwen3-Next linear attention), Sq tokens per sequence.

    Decode (recurrent, per token and value head): state decay (dk dv), S^T k, the rank-1 update k (beta(v - S^T k))^T
    and the read-out S^T q: 1 + 2 + 2 + 2 = 7 dk dv FLOPs; reads and writes the state.
    Prefill (chunked, Sq padded to a multiple of Ck = 64, n chunks; per chunk and value head): K_beta K^T and Q K^T
    [Ck,dk]x[dk,Ck] (4 Ck^2 dk), two unit-triangular solves against V_beta and the decayed K_beta
    (Ck(Ck-1)(dk+dv)), the state reads K_cum S and Q S and the update K^T V_new (6 Ck dk dv), the intra-chunk
    A V_new (2 Ck^2 dv) and the state decay (dk dv); writes the final state once. q and k are read per key head Hk.
    NB: per-element gates (exp of the decays, beta scaling) are ignored, O(Ck) per token against O(Ck dk).
    """
    Hk = Hv if Hk is None else Hk
    T = B * Sq
    state = B * Hv * dk * dv * c
    reads = T * (2 * Hk * dk + Hv * dv + 2 * Hv) * a  # q, k, v, decay g and beta
    writes = T * Hv * dv * a
    if not chunked:
        return Cost(flops=7 * T * Hv * dk * dv, act_read=reads, act_write=writes, kv_read=state, kv_write=state)
    chunks = -(-Sq // chunk)  # ceil: the kernels pad the last chunk
    per_chunk = (4 * chunk * chunk * dk + chunk * (chunk - 1) * (dk + dv) + 6 * chunk * dk * dv
                 + 2 * chunk * chunk * dv + dk * dv)
    return Cost(flops=B * Hv * chunks * per_chunk, act_read=reads, act_write=writes, kv_read=0.0 * T, kv_write=state)
