"""The model spec: one `ModelSpec` dataclass for every supported decoder-only family, and its validation.

One `ModelSpec` describes MHA/GQA/MQA, multi-head latent attention (MLA), gated (SwiGLU/GeGLU) or plain MLPs, dense or
mixture-of-experts MLPs (with shared experts and leading dense layers), RMSNorm or LayerNorm, rotary or learned
positions, sliding windows on all or alternating layers, chunked attention and NoPE layers (Llama 4), Gated DeltaNet
linear-attention layers (Qwen3-Next), and the checkpoint's native dtypes. Built by `models` (the catalog, config
entries) and `hf_config` (a Hugging Face `config.json`).
"""
from __future__ import annotations

from dataclasses import dataclass

from .dtypes import FP8_SCALINGS, check_storage_dtype
from .errors import RooflineInputError, unknown

#: FLOPs per element of each activation function (convention: +, *, /, exp, tanh each count 1).
#: silu x/(1+exp(-x)): neg, exp, add, div = 4. gelu tanh form 0.5x(1+tanh(c(x+0.044715x^3))): 8. relu: 1.
ACTIVATION_FLOPS = {"silu": 4, "gelu": 8, "gelu_new": 8, "gelu_pytorch_tanh": 8, "relu": 1}

MLP_TYPES = ("gated", "plain")
NORM_TYPES = ("rmsnorm", "layernorm", "layernorm_nobias")
POSITION_TYPES = ("rope", "learned")


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer. Symbols used in the formulas are given in brackets."""

    key: str
    name: str
    family: str
    n_layers: int  # [L]
    hidden: int  # [D]
    n_heads: int  # [H] query heads
    n_kv_heads: int  # [Hkv] 1 = MQA, H = MHA, in between = GQA
    head_dim: int  # [d]
    intermediate: int  # [F] dense MLP width
    vocab: int  # [V]
    max_position: int = 0
    activation: str = "silu"
    mlp_type: str = "gated"
    norm: str = "rmsnorm"
    tie_embeddings: bool = False
    positions: str = "rope"
    learned_positions: int = 0  # rows of a learned position table (GPT-2, OPT)
    qkv_bias: bool = False
    linear_bias: bool = False  # bias on every linear (GPT-2, OPT)
    parallel_block: bool = False  # attention and MLP both read the layer input, outputs summed (Falcon)
    norms_per_layer: int = 2  # Gemma-2 has 4 (pre and post, around attention and MLP)
    qk_norm: bool = False  # per-head RMSNorm on q and k (Qwen3)
    qk_norm_full: bool = False  # ...with weights over the whole projections, H d and Hkv d (OLMo-2, Cohere)
    # sliding-window attention
    sliding_window: int | None = None  # [W]
    sliding_layers: int = 0  # how many of the L layers use the window
    # mixture of experts
    n_experts: int = 0  # [E] routed experts; 0 = dense model
    top_k: int = 0  # [k]
    moe_intermediate: int = 0  # [Fe]
    n_shared_experts: int = 0
    router_bias: bool = False  # a per-expert router bias (DeepSeek-V3 e_score_correction_bias, E values per layer)
    first_dense_layers: int = 0  # layers with a dense MLP instead of MoE: DeepSeek's leading first_k_dense_replace,
    # Qwen3-MoE's mlp_only_layers / decoder_sparse_step (only the count enters the costs)
    # multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: int | None = None  # 0/None = plain q_proj
    kv_lora_rank: int = 0  # [C] latent width; >0 switches MLA on
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    # DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): a lightning indexer scores every cached token for each query
    # (index_n_heads heads of index_head_dim over its own fp8 key cache) and MLA attends the index_topk best only
    index_n_heads: int = 0  # [Hi]
    index_head_dim: int = 0  # [di]
    index_topk: int = 0  # [Kt] keys each query attends; 0 = dense attention
    # 2025-26 architectures (gpt-oss, Gemma 3, Llama 4, GLM-4.5, Qwen3-Next)
    attn_out_bias: bool = False  # o_proj has a bias too (gpt-oss: q/k/v/o all biased)
    attention_sinks: bool = False  # one learned sink logit per head per layer (gpt-oss): H parameters
    expert_bias: bool = False  # biases on the experts' linears (gpt-oss)
    rope_dim: int = 0  # rotated channels per head; 0 = head_dim (GLM-4.5: half, Qwen3-Next: a quarter)
    nope_layers: int = 0  # layers without rotary embedding (Llama 4: every 4th)
    attention_chunk: int | None = None  # [Ck] chunked attention (Llama 4): a query sees its own chunk's keys only
    chunked_layers: int = 0  # how many of the L layers use chunked attention
    mtp_layers: int = 0  # multi-token-prediction modules shipped beside the L layers (DeepSeek-V3's
    # num_nextn_predict_layers, Qwen3-Next's mtp_num_hidden_layers): only speculative decoding (--spec-method mtp)
    # runs them; they are outside every parameter count, as the checkpoints' published sizes leave them out
    expert_groups: int = 1  # [G] group-limited routing (DeepSeek-V3's n_group): the experts in G equal groups...
    groups_per_token: int = 0  # ...of which a token's top-k come from this many (topk_group; 0 = any group)
    attn_output_gate: bool = False  # q_proj also emits a per-channel sigmoid gate on the attention output (Qwen3-Next)
    shared_expert_gate: bool = False  # a sigmoid gate Linear(D, 1) on the shared expert's output (Qwen3-Next)
    # Gated DeltaNet linear attention (Qwen3-Next): a fixed [Hv, dk, dv] state per sequence instead of a KV cache
    linear_layers: int = 0  # layers with linear attention instead of softmax attention
    linear_k_heads: int = 0  # [Hk]
    linear_v_heads: int = 0  # [Hv]
    linear_k_dim: int = 0  # [dk]
    linear_v_dim: int = 0  # [dv]
    linear_conv_kernel: int = 0  # [K] depthwise causal conv over q, k, v
    # the checkpoint's own dtypes (HF quantization_config), used by scenario weight_dtype 'native'; '' = 16-bit
    native_weight_dtype: str = ""  # every linear of attention and MLP blocks (fp8 of DeepSeek-V3 / Kimi-K2)
    native_expert_dtype: str = ""  # the routed experts, '' = as native_weight_dtype (mxfp4 of gpt-oss)
    native_attention_dtype: str = ""  # the attention projections, '' = as native_weight_dtype (NVIDIA's NVFP4 Kimi)
    native_fp8_scaling: str = ""  # an fp8 checkpoint's scales (dtypes.FP8_SCALINGS): 'block' = weight_block_size
    published_params: float | None = None  # total parameters as published (models.csv)
    published_active_params: float | None = None
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_sparse_attention(self) -> bool:
        """DeepSeek Sparse Attention: an indexer picks the index_topk keys each query attends."""
        return self.index_topk > 0

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.first_dense_layers if self.is_moe else 0

    @property
    def n_dense_layers(self) -> int:
        return self.n_layers - self.n_moe_layers

    @property
    def n_attention_layers(self) -> int:
        """Layers with softmax attention (and a KV cache); the others use linear attention."""
        return self.n_layers - self.linear_layers

    @property
    def rotary_dim(self) -> int:
        """Channels per head that RoPE rotates."""
        return self.rope_dim or self.head_dim

    @property
    def linear_key_width(self) -> int:
        return self.linear_k_heads * self.linear_k_dim

    @property
    def linear_value_width(self) -> int:
        return self.linear_v_heads * self.linear_v_dim

    @property
    def qk_head_dim(self) -> int:
        """Width of one query/key head (MLA: nope + rope part)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.is_mla else self.head_dim

    @property
    def attn_v_head_dim(self) -> int:
        return self.v_head_dim if self.is_mla else self.head_dim

    def validate(self) -> "ModelSpec":
        """Raise a one-line error for an impossible architecture; return self."""
        where = f"models.{self.key}"
        self._check_sizes(where)
        self._check_kinds(where)
        self._check_layers(where)
        return self

    def _check_sizes(self, where: str) -> None:
        """Integer fields in range, the dimensions every layer needs positive, heads that group."""
        # the dimensions every layer needs are positive; the rest may be 0 (none of that part)
        positive = ["n_layers", "hidden", "n_heads", "n_kv_heads", "vocab"]
        positive += ["intermediate"] if self.n_dense_layers else []
        mla = ["kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"]
        positive += mla if self.is_mla else ["head_dim"]
        for name in _INT_FIELDS:
            value, least = getattr(self, name), int(name in positive)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not least <= value <= MAX_DIMENSION):
                raise RooflineInputError(f"{where}.{name}: {value!r} is not allowed; expected an integer from "
                                         f"{least} to {MAX_DIMENSION}")
        if self.norms_per_layer not in (1, 2, 4):
            raise RooflineInputError(f"{where}.norms_per_layer: {self.norms_per_layer} is not allowed; expected 1 "
                                     "(one shared norm, Falcon-7B), 2 (pre-attention and pre-MLP) or 4 (Gemma-2)")
        if not 0 <= self.first_dense_layers <= self.n_layers or not 0 <= self.sliding_layers <= self.n_layers:
            raise RooflineInputError(f"{where}: first_dense_layers ({self.first_dense_layers}) and sliding_layers "
                                     f"({self.sliding_layers}) must lie between 0 and n_layers ({self.n_layers})")
        if self.n_heads % self.n_kv_heads:
            raise RooflineInputError(
                f"{where}.n_kv_heads: {self.n_kv_heads} does not divide n_heads={self.n_heads}")

    def _check_kinds(self, where: str) -> None:
        """Known activation, MLP and norm names; a routable MoE."""
        if self.activation not in ACTIVATION_FLOPS:
            raise unknown(f"{where}.activation", self.activation, ACTIVATION_FLOPS)
        if self.mlp_type not in MLP_TYPES:
            raise unknown(f"{where}.mlp_type", self.mlp_type, MLP_TYPES)
        if self.norm not in NORM_TYPES:
            raise unknown(f"{where}.norm", self.norm, NORM_TYPES)
        if self.is_moe and not (0 < self.top_k <= self.n_experts and self.moe_intermediate > 0):
            raise RooflineInputError(
                f"{where}: MoE needs 0 < top_k <= n_experts and moe_intermediate > 0 "
                f"(got top_k={self.top_k}, n_experts={self.n_experts}, moe_intermediate={self.moe_intermediate})")
        if self.expert_groups > 1 and (not self.is_moe or self.n_experts % self.expert_groups
                                       or self.groups_per_token > self.expert_groups):
            raise RooflineInputError(
                f"{where}: expert_groups {self.expert_groups} must divide the {self.n_experts} experts and be at "
                f"least groups_per_token ({self.groups_per_token})")
        groups = self.groups_per_token or self.expert_groups
        if self.expert_groups > 1 and self.top_k > groups * self.n_experts // self.expert_groups:
            raise RooflineInputError(
                f"{where}: top_k {self.top_k} experts do not fit in groups_per_token {groups} of {self.expert_groups} "
                f"expert groups ({self.n_experts // self.expert_groups} experts each)")

    def _check_layers(self, where: str) -> None:
        """Layer kinds that add up to n_layers and carry their sizes; storage dtypes the engine knows."""
        if self.sliding_layers + self.chunked_layers + self.linear_layers > self.n_layers or \
                self.nope_layers > self.n_layers:
            raise RooflineInputError(
                f"{where}: sliding_layers ({self.sliding_layers}) + chunked_layers ({self.chunked_layers}) + "
                f"linear_layers ({self.linear_layers}) and nope_layers ({self.nope_layers}) must not exceed "
                f"n_layers ({self.n_layers})")
        if self.linear_layers and min(self.linear_k_heads, self.linear_v_heads, self.linear_k_dim,
                                      self.linear_v_dim, self.linear_conv_kernel) <= 0:
            raise RooflineInputError(f"{where}: linear attention needs linear_k_heads, linear_v_heads, linear_k_dim, "
                                     "linear_v_dim and linear_conv_kernel > 0")
        if self.is_sparse_attention and (not self.is_mla or min(self.index_n_heads, self.index_head_dim) <= 0
                                         or self.sliding_layers or self.chunked_layers):
            raise RooflineInputError(f"{where}: sparse attention (index_topk {self.index_topk}) needs MLA "
                                     "(kv_lora_rank > 0), index_n_heads and index_head_dim > 0, and no sliding-window "
                                     "or chunked layers")
        if self.chunked_layers and not self.attention_chunk:
            raise RooflineInputError(f"{where}.attention_chunk: {self.attention_chunk} is not allowed with "
                                     f"chunked_layers {self.chunked_layers}; must be > 0")
        for name in ("native_weight_dtype", "native_expert_dtype", "native_attention_dtype"):
            if getattr(self, name):
                check_storage_dtype(f"{where}.{name}", getattr(self, name))
        if self.native_fp8_scaling and self.native_fp8_scaling not in FP8_SCALINGS:
            raise unknown(f"{where}.native_fp8_scaling", self.native_fp8_scaling, FP8_SCALINGS)
        if self.sliding_window is not None and self.sliding_window <= 0:
            raise RooflineInputError(f"{where}.sliding_window: {self.sliding_window} is not allowed; must be > 0")


#: Largest value of any size field: far beyond real models, small enough that every count stays exact
MAX_DIMENSION = 1 << 24

#: ModelSpec fields that must hold non-negative integers (None allowed where the type says so)
_INT_FIELDS = ("n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim", "intermediate", "vocab", "max_position",
               "learned_positions", "norms_per_layer", "sliding_window", "sliding_layers", "n_experts", "top_k",
               "moe_intermediate", "n_shared_experts", "first_dense_layers", "q_lora_rank", "kv_lora_rank",
               "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "index_n_heads", "index_head_dim",
               "index_topk", "rope_dim", "nope_layers", "attention_chunk",
               "chunked_layers", "linear_layers", "linear_k_heads", "linear_v_heads", "linear_k_dim", "linear_v_dim",
               "linear_conv_kernel", "mtp_layers", "expert_groups", "groups_per_token")
