"""Model architecture specs, the built-in catalog and a loader for Hugging Face `config.json` files.

One `ModelSpec` describes every supported decoder-only family: MHA/GQA/MQA, multi-head latent attention (MLA),
gated (SwiGLU/GeGLU) or plain MLPs, dense or mixture-of-experts MLPs (with shared experts and leading dense layers),
RMSNorm or LayerNorm, rotary or learned positions, sliding windows on all or alternating layers, chunked attention and
NoPE layers (Llama 4), Gated DeltaNet linear-attention layers (Qwen3-Next), and the checkpoint's native dtypes.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .dtypes import check_storage_dtype
from .errors import RooflineInputError, unknown

#: FLOPs per element of each activation function (convention: +, *, /, exp, tanh each count 1).
#: silu x/(1+exp(-x)): neg, exp, add, div = 4. gelu tanh form 0.5x(1+tanh(c(x+0.044715x^3))): 8. relu: 1.
ACTIVATION_FLOPS = {"silu": 4, "gelu": 8, "gelu_new": 8, "gelu_pytorch_tanh": 8, "relu": 1}

MLP_TYPES = ("gated", "plain")
NORM_TYPES = ("rmsnorm", "layernorm")
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
    # 2025-26 architectures (gpt-oss, Gemma 3, Llama 4, GLM-4.5, Qwen3-Next)
    attn_out_bias: bool = False  # o_proj has a bias too (gpt-oss: q/k/v/o all biased)
    attention_sinks: bool = False  # one learned sink logit per head per layer (gpt-oss): H parameters
    expert_bias: bool = False  # biases on the experts' linears (gpt-oss)
    rope_dim: int = 0  # rotated channels per head; 0 = head_dim (GLM-4.5: half, Qwen3-Next: a quarter)
    nope_layers: int = 0  # layers without rotary embedding (Llama 4: every 4th)
    attention_chunk: int | None = None  # [Ck] chunked attention (Llama 4): a query sees its own chunk's keys only
    chunked_layers: int = 0  # how many of the L layers use chunked attention
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
        for name in _INT_FIELDS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not 0 <= value <= MAX_DIMENSION):
                raise RooflineInputError(
                    f"{where}.{name}: {value!r} is not allowed; expected an integer from 0 to {MAX_DIMENSION}")
        if self.norms_per_layer not in (1, 2, 4):
            raise RooflineInputError(f"{where}.norms_per_layer: {self.norms_per_layer} is not allowed; expected 1 "
                                     "(one shared norm, Falcon-7B), 2 (pre-attention and pre-MLP) or 4 (Gemma-2)")
        positive = ["n_layers", "hidden", "n_heads", "n_kv_heads", "vocab"]
        positive += ["intermediate"] if self.n_dense_layers else []
        positive += ["kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"] if self.is_mla else []
        for name in positive:
            if getattr(self, name) <= 0:
                raise RooflineInputError(f"{where}.{name}: {getattr(self, name)} is not allowed; must be > 0")
        if not 0 <= self.first_dense_layers <= self.n_layers or not 0 <= self.sliding_layers <= self.n_layers:
            raise RooflineInputError(f"{where}: first_dense_layers ({self.first_dense_layers}) and sliding_layers "
                                     f"({self.sliding_layers}) must lie between 0 and n_layers ({self.n_layers})")
        if not self.is_mla and self.head_dim <= 0:
            raise RooflineInputError(f"{where}.head_dim: {self.head_dim} is not allowed; must be > 0")
        if self.n_heads % self.n_kv_heads:
            raise RooflineInputError(
                f"{where}.n_kv_heads: {self.n_kv_heads} does not divide n_heads={self.n_heads}")
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
        if self.chunked_layers and not self.attention_chunk:
            raise RooflineInputError(f"{where}.attention_chunk: {self.attention_chunk} is not allowed with "
                                     f"chunked_layers {self.chunked_layers}; must be > 0")
        for name in ("native_weight_dtype", "native_expert_dtype"):
            if getattr(self, name):
                check_storage_dtype(f"{where}.{name}", getattr(self, name))
        if self.sliding_window is not None and self.sliding_window <= 0:
            raise RooflineInputError(f"{where}.sliding_window: {self.sliding_window} is not allowed; must be > 0")
        return self


#: Largest value of any size field: far beyond real models, small enough that every count stays exact
MAX_DIMENSION = 1 << 24

#: ModelSpec fields that must hold non-negative integers (None allowed where the type says so)
_INT_FIELDS = ("n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim", "intermediate", "vocab", "max_position",
               "learned_positions", "norms_per_layer", "sliding_window", "sliding_layers", "n_experts", "top_k",
               "moe_intermediate", "n_shared_experts", "first_dense_layers", "q_lora_rank", "kv_lora_rank",
               "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "rope_dim", "nope_layers", "attention_chunk",
               "chunked_layers", "linear_layers", "linear_k_heads", "linear_v_heads", "linear_k_dim", "linear_v_dim",
               "linear_conv_kernel")


# --------------------------------------------------------------------------------------------- parameter counts
def attention_params(m: ModelSpec) -> int:
    """Weights of one attention block (projections and biases; MLA low-rank factors and their norms)."""
    D, H, Hkv, d = m.hidden, m.n_heads, m.n_kv_heads, m.head_dim
    if m.is_mla:
        dq, dv, C, R = m.qk_head_dim, m.v_head_dim, m.kv_lora_rank, m.qk_rope_head_dim
        q = (D * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * H * dq) if m.q_lora_rank else D * H * dq
        kv = D * (C + R) + C + C * H * (m.qk_nope_head_dim + dv)
        return q + kv + H * dv * D
    gate = 2 if m.attn_output_gate else 1  # a gated q_proj emits query and gate
    params = gate * D * H * d + 2 * D * Hkv * d + H * d * D
    if m.qkv_bias or m.linear_bias:
        params += gate * H * d + 2 * Hkv * d
    if m.linear_bias or m.attn_out_bias:
        params += D
    if m.qk_norm:
        params += 2 * d
    if m.attention_sinks:
        params += H
    return params


def linear_attention_params(m: ModelSpec) -> int:
    """Weights of one Gated DeltaNet block (Qwen3-Next): in_proj_qkvz [D, 2 Hk dk + 2 Hv dv], in_proj_ba [D, 2 Hv],
    depthwise conv [conv channels x K], dt_bias and A_log [Hv] each, the gated RMSNorm [dv], out_proj [Hv dv, D]."""
    D, Kw, Vw = m.hidden, m.linear_key_width, m.linear_value_width
    conv_channels = 2 * Kw + Vw
    return (D * (2 * Kw + 2 * Vw) + D * 2 * m.linear_v_heads + conv_channels * m.linear_conv_kernel
            + 2 * m.linear_v_heads + m.linear_v_dim + Vw * D)


def mlp_params(m: ModelSpec, width: int) -> int:
    """Weights of one dense MLP of intermediate `width`."""
    D = m.hidden
    matrices = 3 if m.mlp_type == "gated" else 2
    params = matrices * D * width
    if m.linear_bias:
        params += width + D
    return params


def expert_params(m: ModelSpec) -> int:
    """Weights of one routed expert (an MLP of moe_intermediate; gpt-oss adds biases on its two linears)."""
    params = mlp_params(m, m.moe_intermediate)
    if m.expert_bias and not m.linear_bias:
        params += (2 if m.mlp_type == "gated" else 1) * m.moe_intermediate + m.hidden
    return params


def routed_expert_params(m: ModelSpec) -> int:
    """Weights of all routed experts of all MoE layers (the part a checkpoint may store in another dtype)."""
    return m.n_moe_layers * m.n_experts * expert_params(m) if m.is_moe else 0


def norm_params(m: ModelSpec, width: int) -> int:
    return width * (2 if m.norm == "layernorm" else 1)


@lru_cache(maxsize=256)
def embedding_params(m: ModelSpec) -> int:
    """Parameters of the embedding table, learned positions and an untied lm_head (kept at 16 bits by quantized
    checkpoints unless the scenario sets quantize_embeddings)."""
    return (m.vocab + m.learned_positions) * m.hidden + (0 if m.tie_embeddings else m.vocab * m.hidden)


@lru_cache(maxsize=256)
def parameter_counts(m: ModelSpec) -> tuple[int, int]:
    """(total, active per token) parameters. Active counts top_k routed experts plus shared ones."""
    D, V = m.hidden, m.vocab
    embed = V * D + m.learned_positions * D
    head = 0 if m.tie_embeddings else V * D
    per_layer_common = m.norms_per_layer * norm_params(m, D)
    mixers = m.n_attention_layers * attention_params(m) + m.linear_layers * linear_attention_params(m)
    dense_mlp = mlp_params(m, m.intermediate)
    total = (embed + head + norm_params(m, D) + m.n_layers * per_layer_common + mixers
             + m.n_dense_layers * dense_mlp)
    active = total
    if m.is_moe:
        expert = expert_params(m)
        router = D * m.n_experts + (m.n_experts if m.router_bias else 0)
        shared = mlp_params(m, m.moe_intermediate * m.n_shared_experts) if m.n_shared_experts else 0
        shared += D if m.shared_expert_gate else 0
        total += m.n_moe_layers * (router + m.n_experts * expert + shared)
        active += m.n_moe_layers * (router + m.top_k * expert + shared)
    return total, active


# ---------------------------------------------------------------------------------------------- the catalog
#: Traits a family has that models.csv does not list (checked against each family's HF modeling code).
_FAMILY_TRAITS: dict[str, dict] = {
    "llama": {},
    "mistral": {},
    "mixtral": {},
    "qwen2": {"qkv_bias": True},
    "qwen3_moe": {"qk_norm": True},
    "phi3": {},
    "gemma2": {"norms_per_layer": 4},
    "deepseek_v3": {"router_bias": True},
    "gpt2": {"positions": "learned", "linear_bias": True},
    "opt": {"positions": "learned", "linear_bias": True},
    "falcon": {"parallel_block": True, "norms_per_layer": 1},
    "qwen3": {"qk_norm": True},
    "gemma3_text": {"norms_per_layer": 4, "qk_norm": True},
    "gpt_oss": {"qkv_bias": True, "attn_out_bias": True, "attention_sinks": True, "expert_bias": True,
                "router_bias": True},
    "llama4_text": {},
    "glm4_moe": {"qkv_bias": True, "router_bias": True},
    "qwen3_next": {"qk_norm": True, "attn_output_gate": True, "shared_expert_gate": True},
}
#: model_type spellings that load with another family's reader (Kimi-K2 is a DeepSeek-V3 with other sizes)
FAMILY_ALIASES = {"kimi_k2": "deepseek_v3"}
SUPPORTED_FAMILIES = tuple(_FAMILY_TRAITS)


def _int(text: str, default: int = 0) -> int:
    return int(float(text)) if text and text.strip() else default


#: optional models.csv columns (appended for the 2026 rows; blank or absent = the ModelSpec default or the family
#: rule below) holding ModelSpec fields of the same name
_CSV_LAYER_COUNTS = ("attention_chunk", "chunked_layers", "nope_layers", "rope_dim", "linear_layers",
                     "linear_k_heads", "linear_v_heads", "linear_k_dim", "linear_v_dim", "linear_conv_kernel")


def _from_models_csv(row: dict[str, str]) -> ModelSpec:
    family = row["family"]
    n_layers = _int(row["n_layers"])
    hidden, n_heads = _int(row["hidden_size"]), _int(row["n_heads"])
    window = _int(row["sliding_window"]) or None
    traits = dict(_FAMILY_TRAITS[family])
    sliding_layers = 0
    if window:
        # Gemma-2 alternates local (even layer index) and global layers; the others window every layer
        sliding_layers = (n_layers + 1) // 2 if family == "gemma2" else n_layers
        sliding_layers = _int(row.get("sliding_layers"), sliding_layers)
    counts = {name: _int(row[name]) for name in _CSV_LAYER_COUNTS if _int(row.get(name))}
    native = {name: row[name].strip() for name in ("native_weight_dtype", "native_expert_dtype") if row.get(name)}
    if row.get("qk_norm"):  # blank = the family's trait (GLM-4.5 has it, GLM-4.5-Air not)
        traits["qk_norm"] = row["qk_norm"].strip().lower() == "true"
    learned = {"gpt2": _int(row["max_position"]), "opt": _int(row["max_position"]) + 2}.get(family, 0)
    spec = ModelSpec(
        key=row["key"],
        name=row["hf_repo_id"],
        family=family,
        n_layers=n_layers,
        hidden=hidden,
        n_heads=n_heads,
        n_kv_heads=_int(row["n_kv_heads"]),
        head_dim=_int(row["head_dim"]) or (0 if row["attention"] == "MLA" else hidden // n_heads),
        intermediate=_int(row["intermediate_size"]),
        vocab=_int(row["vocab_size"]),
        max_position=_int(row["max_position"]),
        activation={"gpt2": "gelu_new", "gemma2": "gelu_pytorch_tanh"}.get(family, row["activation"]),
        mlp_type=row["mlp_type"],
        norm=row["norm"],
        tie_embeddings=row["tie_embeddings"].strip().lower() == "true",
        learned_positions=learned,
        sliding_window=window,
        sliding_layers=sliding_layers,
        n_experts=_int(row["moe_experts"]),
        top_k=_int(row["moe_top_k"]),
        moe_intermediate=_int(row["moe_intermediate"]),
        n_shared_experts=_int(row["shared_experts"]),
        first_dense_layers=_int(row.get("first_dense_layers"), 3 if family == "deepseek_v3" else 0),
        q_lora_rank=_int(row["q_lora_rank"]) or None,
        kv_lora_rank=_int(row["kv_lora_rank"]),
        qk_nope_head_dim=_int(row["qk_nope_head_dim"]),
        qk_rope_head_dim=_int(row["qk_rope_head_dim"]),
        v_head_dim=_int(row["v_head_dim"]),
        published_params=float(row["total_params_B"]) * 1e9,
        published_active_params=float(row["active_params_B"]) * 1e9 if row["active_params_B"] else None,
        source=row["source"],
        **traits, **counts, **native,
    )
    return spec.validate()


@lru_cache(maxsize=1)
def catalog() -> dict[str, ModelSpec]:
    """All built-in models by key."""
    with resources.files("roofline").joinpath("data/models.csv").open(newline="") as handle:
        return {row["key"]: _from_models_csv(row) for row in csv.DictReader(handle)}


def get_model(key: str) -> ModelSpec:
    try:
        return catalog()[key]
    except KeyError:
        raise unknown("model", key, catalog()) from None


def model_from_entry(key: str, entry: dict | None, base_dir: Path | None = None) -> ModelSpec:
    """Resolve a config `models:` entry: {} = catalog; {hf_config: path}; or catalog fields overridden."""
    entry = dict(entry or {})
    if "hf_config" in entry:
        path = Path(entry.pop("hf_config"))
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        spec = model_from_hf_config(path, key)
    elif key in catalog():
        spec = catalog()[key]
    else:
        raise RooflineInputError(unknown("models", key, catalog()).args[0]
                                 + "; or give {hf_config: path/to/config.json}")
    if entry:
        fields = set(ModelSpec.__dataclass_fields__) - {"key"}
        for name in entry:
            if name not in fields:
                raise unknown(f"models.{key}", name, sorted(fields | {"hf_config"}))
        spec = replace(spec, **entry).validate()
    return spec


def kv_elements_per_token(m: ModelSpec, mla_mode: str = "absorbed") -> int:
    """KV-cache elements stored per token per layer: 2 x Hkv x d; MLA latent C + rope dims (per token, not per head)
    unless the cache holds decompressed per-head K and V (mla_mode 'decompressed', as transformers 4.x does;
    transformers 5 caches the latent and re-expands it every step, mla_mode 'naive')."""
    if m.is_mla:
        if mla_mode == "decompressed":
            return m.n_heads * (m.qk_head_dim + m.v_head_dim)
        return m.kv_lora_rank + m.qk_rope_head_dim
    return 2 * m.n_kv_heads * m.head_dim


# the loader builds on ModelSpec and the family traits above; re-exported so `models` is the one entry point
from .hf_config import model_from_hf_config, model_from_hf_dict  # noqa: E402, F401
