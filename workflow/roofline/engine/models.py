"""Models: parameter counts, the built-in catalog (`data/models.csv`) and the config's `models:` entries.

The one entry point for models: the spec (`ModelSpec`, from `model_spec`) and the Hugging Face loader
(`model_from_hf_config`, from `hf_config`) are re-exported here. Dependencies point one way: models imports
hf_config and hf_families (the per-family table), all of them import model_spec; nothing imports models back.
"""
from __future__ import annotations

import csv
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .errors import RooflineInputError, unknown
from .hf_config import model_from_hf_config, model_from_hf_dict  # noqa: F401 (re-exported)
from .hf_families import FAMILIES, SUPPORTED_FAMILIES  # noqa: F401 (re-exported)
from .model_spec import ACTIVATION_FLOPS, MAX_DIMENSION, ModelSpec  # noqa: F401 (re-exported)


# --------------------------------------------------------------------------------------------- parameter counts
def attention_params(m: ModelSpec) -> int:
    """Weights of one attention block (projections and biases; MLA low-rank factors and their norms)."""
    D, H, Hkv, d = m.hidden, m.n_heads, m.n_kv_heads, m.head_dim
    if m.is_mla:
        dq, dv, C, R = m.qk_head_dim, m.v_head_dim, m.kv_lora_rank, m.qk_rope_head_dim
        q = (D * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * H * dq) if m.q_lora_rank else D * H * dq
        kv = D * (C + R) + C + C * H * (m.qk_nope_head_dim + dv)
        return q + kv + H * dv * D + indexer_params(m)
    gate = 2 if m.attn_output_gate else 1  # a gated q_proj emits query and gate
    params = gate * D * H * d + 2 * D * Hkv * d + H * d * D
    if m.qkv_bias or m.linear_bias:
        params += gate * H * d + 2 * Hkv * d
    if m.linear_bias or m.attn_out_bias:
        params += D
    if m.qk_norm:
        params += (H + Hkv) * d if m.qk_norm_full else 2 * d
    if m.attention_sinks:
        params += H
    return params


def indexer_params(m: ModelSpec) -> int:
    """Weights of one DeepSeek Sparse Attention indexer: wq_b [q_lora_rank, Hi di] (on the compressed query; a model
    without q_lora_rank projects the hidden state), wk [D, di], its LayerNorm k_norm (scale and shift, di each)
    and weights_proj [D, Hi] (one weight per indexer head); 0 for dense attention."""
    if not m.is_sparse_attention:
        return 0
    Hi, di = m.index_n_heads, m.index_head_dim
    return (m.q_lora_rank or m.hidden) * Hi * di + m.hidden * di + 2 * di + m.hidden * Hi


#: fp8 caches of sparse-attention models keep one fp32 scale per block of this many channels: the indexer's keys
#: (DeepSeek-V3.2's reference, vLLM's and SGLang's indexer caches, whatever the KV cache's own dtype) and the MLA
#: latent in FlashMLA's sparse layout
FP8_SCALE_BLOCK = 128


def indexer_cache_bytes_per_token(m: ModelSpec) -> int:
    """Bytes one token adds to one layer's indexer key cache: di fp8 keys + 4 bytes per FP8_SCALE_BLOCK; 0 for
    dense attention."""
    if not m.is_sparse_attention:
        return 0
    return m.index_head_dim + 4 * -(-m.index_head_dim // FP8_SCALE_BLOCK)


def sparse_latent_fp8_bytes_per_token(m: ModelSpec) -> int:
    """Bytes of one token's MLA latent in one layer of a sparse-attention model's fp8 cache: FlashMLA's sparse layout
    that vLLM and SGLang store (C fp8 values, an fp32 scale per 128 of them, the R RoPE dims at 16 bits: 656 for
    DeepSeek-V3.2 and GLM-5, against 576 one byte each)."""
    C, R = m.kv_lora_rank, m.qk_rope_head_dim
    return C + 4 * -(-C // FP8_SCALE_BLOCK) + 2 * R


def kv_bytes_per_token_layer(m: ModelSpec, mla_mode: str, kv_bytes: float) -> float:
    """Bytes one token adds to one attention layer's cache at `kv_bytes` per element (kv_elements_per_token), in a
    sparse-attention model's fp8 cache the FlashMLA sparse layout, plus its indexer's keys."""
    latent = kv_elements_per_token(m, mla_mode) * kv_bytes
    if m.is_sparse_attention and kv_bytes == 1 and mla_mode != "decompressed":
        latent = sparse_latent_fp8_bytes_per_token(m)
    return latent + indexer_cache_bytes_per_token(m)


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


def router_params(m: ModelSpec) -> int:
    """Weights of the routers (and Qwen's shared-expert gates) of all MoE layers, whole on every device and 16-bit
    in every quantized checkpoint."""
    if not m.is_moe:
        return 0
    gate = m.hidden if m.shared_expert_gate else 0
    return m.n_moe_layers * (m.hidden * m.n_experts + (m.n_experts if m.router_bias else 0) + gate)


def mixer_params(m: ModelSpec) -> int:
    """Weights of the attention and linear-attention blocks of all layers (Scenario.attention_weight_dtype; their
    few norm scales with them)."""
    return m.n_attention_layers * attention_params(m) + m.linear_layers * linear_attention_params(m)


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
    mixers = mixer_params(m)
    dense_mlp = mlp_params(m, m.intermediate)
    total = (embed + head + norm_params(m, D) + m.n_layers * per_layer_common + mixers
             + m.n_dense_layers * dense_mlp)
    active = total
    if m.is_moe and m.n_moe_layers:  # an EAGLE head of an MoE model is one of its dense layers: no MoE layer
        expert = expert_params(m)
        router = router_params(m) // m.n_moe_layers
        shared = mlp_params(m, m.moe_intermediate * m.n_shared_experts) if m.n_shared_experts else 0
        total += m.n_moe_layers * (router + m.n_experts * expert + shared)
        active += m.n_moe_layers * (router + m.top_k * expert + shared)
    return total, active


# ---------------------------------------------------------------------------------------------- the catalog
def _int(text: str, default: int = 0) -> int:
    return int(float(text)) if text and text.strip() else default


#: optional models.csv columns (appended for the 2026 rows; blank or absent = the ModelSpec default or the family
#: rule below) holding ModelSpec fields of the same name
_CSV_LAYER_COUNTS = ("attention_chunk", "chunked_layers", "nope_layers", "rope_dim", "linear_layers",
                     "linear_k_heads", "linear_v_heads", "linear_k_dim", "linear_v_dim", "linear_conv_kernel",
                     "mtp_layers", "expert_groups", "groups_per_token", "index_n_heads", "index_head_dim",
                     "index_topk")


def _from_models_csv(row: dict[str, str]) -> ModelSpec:
    family, n_layers = row["family"], _int(row["n_layers"])
    hidden, n_heads = _int(row["hidden_size"]), _int(row["n_heads"])
    spec = ModelSpec(
        key=row["key"], name=row["hf_repo_id"], family=family, n_layers=n_layers, hidden=hidden, n_heads=n_heads,
        n_kv_heads=_int(row["n_kv_heads"]),
        head_dim=_int(row["head_dim"]) or (0 if row["attention"] == "MLA" else hidden // n_heads),
        intermediate=_int(row["intermediate_size"]), vocab=_int(row["vocab_size"]),
        max_position=_int(row["max_position"]), mlp_type=row["mlp_type"], norm=row["norm"],
        tie_embeddings=row["tie_embeddings"].strip().lower() == "true",
        n_experts=_int(row["moe_experts"]), top_k=_int(row["moe_top_k"]),
        moe_intermediate=_int(row["moe_intermediate"]), n_shared_experts=_int(row["shared_experts"]),
        q_lora_rank=_int(row["q_lora_rank"]) or None, kv_lora_rank=_int(row["kv_lora_rank"]),
        qk_nope_head_dim=_int(row["qk_nope_head_dim"]), qk_rope_head_dim=_int(row["qk_rope_head_dim"]),
        v_head_dim=_int(row["v_head_dim"]),
        published_params=float(row["total_params_B"]) * 1e9,
        published_active_params=float(row["active_params_B"]) * 1e9 if row["active_params_B"] else None,
        source=row["source"],
        **_family_fields(row, family, n_layers),
    )
    return spec.validate()


def _family_fields(row: dict[str, str], family: str, n_layers: int) -> dict:
    """The fields a models.csv row leaves to its family (the traits of hf_config.FAMILIES, the windowed layers,
    learned positions, the exact activation name, DeepSeek's leading dense layers) and its optional columns."""
    fields = dict(FAMILIES[family].traits)
    if row.get("qk_norm"):  # blank = the family's trait (GLM-4.5 has it, GLM-4.5-Air not)
        fields["qk_norm"] = row["qk_norm"].strip().lower() == "true"
    window = _int(row["sliding_window"]) or None
    sliding_layers = 0
    if window:
        # Gemma-2 alternates local (even layer index) and global layers; the others window every layer
        sliding_layers = (n_layers + 1) // 2 if family == "gemma2" else n_layers
        sliding_layers = _int(row.get("sliding_layers"), sliding_layers)
    max_position = _int(row["max_position"])
    fields.update(
        sliding_window=window, sliding_layers=sliding_layers,
        learned_positions={"gpt2": max_position, "opt": max_position + 2}.get(family, 0),
        activation={"gpt2": "gelu_new", "gemma2": "gelu_pytorch_tanh"}.get(family, row["activation"]),
        first_dense_layers=_int(row.get("first_dense_layers"), 3 if family == "deepseek_v3" else 0))
    fields.update({name: _int(row[name]) for name in _CSV_LAYER_COUNTS if _int(row.get(name))})
    fields.update({name: row[name].strip() for name in ("native_weight_dtype", "native_expert_dtype",
                                                         "native_fp8_scaling") if row.get(name)})
    return fields


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


def model_or_file(text: str, option: str = "model") -> ModelSpec:
    """A model named as users name one on the command line and in a serving workload's spec_draft_model: a catalog
    key, or the path of a Hugging Face config.json (a catalog key wins over a same-named folder); an unknown key
    names `option`."""
    if text in catalog() and not text.endswith(".json"):
        return catalog()[text]
    if text.endswith(".json") or "/" in text or Path(text).exists():
        return model_from_hf_config(text)
    raise unknown(option, text, catalog())


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

