"""How each Hugging Face model_type is read: one `Family` entry per architecture in `FAMILIES`.

An entry names the traits the family always has (ModelSpec fields no config.json lists, checked against its HF
modeling code; models.csv rows take them from here too), the reader of its MLP, head, norm and position fields, its
sliding-window rule and the readers of its extra fields (MoE, MLA, linear attention). Readers receive the parsed
fields and `need` (hf_config's reader of a required field, which names a missing or mistyped one in one line) and
return ModelSpec fields. Adding an architecture is adding one entry (and, where its fields are new, one reader).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .errors import RooflineInputError

#: multimodal model_types whose language model is the `text_config` (read with that family's reader)
#: (Mistral Small 3.1, Qwen2-VL and Qwen2.5-VL: a Mistral / Qwen2 language model; older Qwen2-VL files list its
#: fields at the top level instead, read through FAMILY_ALIASES; Kimi-K2.5: a Kimi-K2; Qwen3-VL: a Qwen3 or Qwen3-MoE;
#: Qwen3.5: Qwen3-Next's hybrid, dense or MoE)
TEXT_WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral", "qwen2_vl": "qwen2",
                 "qwen2_5_vl": "qwen2", "kimi_k25": "deepseek_v3", "qwen3_vl": "qwen3", "qwen3_vl_moe": "qwen3_moe",
                 "qwen3_5": "qwen3_5", "qwen3_5_moe": "qwen3_next"}
#: transformers' Gemma3TextConfig defaults: Gemma 3's multimodal files list only the fields that differ from them
WRAPPED_DEFAULTS = {"gemma3_text": {"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4,
                                    "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
                                    "max_position_embeddings": 131072, "sliding_window": 4096}}


def _layer_count(cfg: dict, kind: str, fallback: int) -> int:
    """Layers of `kind` in layer_types (authoritative: one kind per layer, hf_config._check_layer_types), else
    `fallback`."""
    kinds = cfg.get("layer_types")
    if kinds:
        return sum(1 for value in kinds if value == kind)
    return fallback


def _partial_rotary_factor(cfg: dict):
    """partial_rotary_factor at the top level, or in transformers 5's rope_parameters; None when neither gives it."""
    parameters = cfg.get("rope_parameters")
    return cfg.get("partial_rotary_factor") or (parameters.get("partial_rotary_factor")
                                                if isinstance(parameters, dict) else None)


def _rope_dim(cfg: dict, head_dim: int, default_factor: float, where: str) -> int:
    """Rotated channels per head: head_dim x partial_rotary_factor (_partial_rotary_factor), a fraction in (0, 1]."""
    factor = _partial_rotary_factor(cfg) or default_factor
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise RooflineInputError(f"{where}: field 'partial_rotary_factor' is {factor!r:.40}; expected a fraction "
                                 "greater than 0 and at most 1")
    return int(head_dim * factor)


def _layer_list(cfg: dict, name: str, n_layers: int, where: str, values: tuple | None = None) -> list | None:
    """The list of integers field `name` holds (layer indices below n_layers, or flags among `values`), None
    when absent or empty."""
    items = cfg.get(name)
    if not items:
        return None
    allowed = values if values is not None else range(n_layers)
    if not isinstance(items, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i in allowed
                                              for i in items):
        what = f"flags {', '.join(map(str, values))}" if values is not None else f"layer indices 0 to {n_layers - 1}"
        raise RooflineInputError(f"{where}: field '{name}' is {items!r:.40}; expected a list of {what}")
    return items


# ------------------------------------------------------------- shape readers: MLP, heads, norm, positions
def _gated(kv_heads_default: bool = False, width: str = "intermediate_size",
           dense_optional: bool = False) -> Callable[..., dict]:
    """The reader of Llama-style fields: RMSNorm, a gated MLP of `width`, num_key_value_heads required unless
    `kv_heads_default` (transformers' defaults differ by family, Mistral/Mixtral 8, Qwen2 32, ...: only Llama, Phi-3,
    Qwen3 and DeepSeek fall back to the query-head count). `dense_optional`: a file whose every layer is MoE may
    leave the dense width out (Qwen3.5-MoE); ModelSpec requires it where a dense layer needs it."""

    def shape(cfg: dict, need, where: str, hidden: int, n_heads: int) -> dict:
        n_kv = need("num_key_value_heads", default=n_heads if kv_heads_default else None,
                    required=not kv_heads_default)
        intermediate = need(width, default=0, required=False) if dense_optional else need(width)
        return dict(n_kv_heads=n_kv, intermediate=intermediate, activation=need("hidden_act", "hidden_activation"),
                    norm="rmsnorm", mlp_type="gated", max_position=need("max_position_embeddings", minimum=1))

    return shape


def _gpt2(cfg: dict, need, where: str, hidden: int, n_heads: int) -> dict:
    """GPT-2: LayerNorm, a plain MLP of n_inner (default 4 x hidden), a learned position table of n_positions rows."""
    intermediate = need("n_inner", default=4 * hidden, required=False)
    activation, max_position = need("activation_function"), need("n_positions", minimum=1)
    return dict(n_kv_heads=n_heads, intermediate=intermediate, activation=activation, norm="layernorm",
                mlp_type="plain", max_position=max_position, learned_positions=max_position)


def _opt(cfg: dict, need, where: str, hidden: int, n_heads: int) -> dict:
    """OPT: LayerNorm, a plain MLP of ffn_dim, learned positions with OPT's offset of 2 rows."""
    projection = cfg.get("word_embed_proj_dim")
    if projection is not None and projection != hidden:
        raise RooflineInputError(
            f"{where}: word_embed_proj_dim {projection} != hidden_size {hidden} (OPT-350m's project_in/"
            f"project_out) is not supported; supported: word_embed_proj_dim = hidden_size")
    intermediate, activation = need("ffn_dim"), need("activation_function")
    max_position = need("max_position_embeddings", minimum=1)
    return dict(n_kv_heads=n_heads, intermediate=intermediate, activation=activation, norm="layernorm",
                mlp_type="plain", max_position=max_position, learned_positions=max_position + 2)


def _falcon(cfg: dict, need, where: str, hidden: int, n_heads: int) -> dict:
    """Falcon: multi-query attention unless new_decoder_architecture, LayerNorm, a plain GELU MLP.

    HF FalconDecoderLayer: sequential blocks have input_ + post_attention_layernorm; parallel blocks share one
    input_layernorm (Falcon-7B) or have ln_attn + ln_mlp (num_ln_in_parallel_attn 2, the default of
    new_decoder_architecture, Falcon-40B/180B)."""
    new_arch = bool(cfg.get("new_decoder_architecture"))
    n_kv = (1 if cfg.get("multi_query", True) and not cfg.get("new_decoder_architecture")
            else need("num_kv_heads", default=n_heads, required=False))
    parallel_block = bool(cfg.get("parallel_attn", True))
    n_ln = cfg.get("num_ln_in_parallel_attn") or (2 if new_arch else 1)
    return dict(n_kv_heads=n_kv, intermediate=cfg.get("ffn_hidden_size") or 4 * hidden, activation="gelu",
                norm="layernorm", mlp_type="plain", max_position=cfg.get("max_position_embeddings") or 2048,
                parallel_block=parallel_block, norms_per_layer=2 if (not parallel_block or n_ln == 2) else 1,
                linear_bias=bool(cfg.get("bias", False)))


def _starcoder2(cfg: dict, need, where: str, hidden: int, n_heads: int) -> dict:
    """StarCoder2: LayerNorm, a plain MLP (c_fc, c_proj) of intermediate_size, biases on every linear unless
    use_bias is false (HF Starcoder2: q/k/v/o, c_fc and c_proj; not lm_head). num_key_value_heads is required
    (transformers' default, 2, is StarCoder2-3B's)."""
    return dict(n_kv_heads=need("num_key_value_heads"), intermediate=need("intermediate_size"),
                activation=need("hidden_act"), norm="layernorm", mlp_type="plain",
                max_position=need("max_position_embeddings", minimum=1), linear_bias=bool(cfg.get("use_bias", True)))


def _cohere(cfg: dict, need, where: str, hidden: int, n_heads: int) -> dict:
    """Cohere (Command R, R+): a gated MLP beside attention in one parallel block behind one LayerNorm without a
    shift (the family's traits); use_qk_norm (Command R+) adds LayerNorms over q and k with weights per head."""
    qk_norm = bool(cfg.get("use_qk_norm", False))
    return {**_gated(kv_heads_default=True)(cfg, need, where, hidden, n_heads), "norm": "layernorm_nobias",
            "qk_norm": qk_norm, "qk_norm_full": qk_norm}


# --------------------------------------------- window readers: (sliding_window, layers that use it)
def _no_window(cfg: dict, need, n_layers: int) -> tuple[int | None, int]:
    return None, 0


def _every_layer(cfg: dict, need, n_layers: int) -> tuple[int | None, int]:
    """Mistral, Mixtral, Phi-3: sliding_window, when set, windows every layer."""
    window = cfg.get("sliding_window")
    return window, n_layers if window else 0


def _qwen2_window(cfg: dict, need, n_layers: int) -> tuple[int | None, int]:
    """Qwen2: only with use_sliding_window, and only the layers from max_window_layers on."""
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", False) else None
    if not window:
        return window, 0
    sliding_layers = max(0, n_layers - cfg.get("max_window_layers", n_layers))
    return (window if sliding_layers else None), sliding_layers


def _alternating(cfg: dict, need, n_layers: int) -> tuple[int | None, int]:
    """Gemma-2: local (even layer index) and global layers alternate."""
    window = cfg.get("sliding_window")
    return window, (n_layers + 1) // 2 if window else 0


def _when_enabled(cfg: dict, need, n_layers: int) -> tuple[int | None, int]:
    """Qwen3: every layer, only with use_sliding_window."""
    window = cfg.get("sliding_window")
    return (window, n_layers) if cfg.get("use_sliding_window", False) and window else (None, 0)


def _local_global(period: int) -> Callable[..., tuple[int | None, int]]:
    """Families that interleave sliding-window (local) and full (global) layers; without layer_types (older
    files) layer i is local unless (i + 1) % period == 0 (Gemma 3: 5 local then 1 global; gpt-oss: alternating,
    local first)."""

    def windows(cfg: dict, need, n_layers: int) -> tuple[int | None, int]:
        window = cfg.get("sliding_window")
        if not window:
            return None, 0
        every = need("sliding_window_pattern", "_sliding_window_pattern", default=period, required=False,
                     minimum=1)
        return window, sum(1 for i in range(n_layers) if (i + 1) % every)

    return windows


# ------------------------------------------------------------- extra readers: the fields of one family
def _mixtral(cfg: dict, need, kw: dict, where: str) -> dict:
    """Mixtral: every layer MoE, experts as wide as intermediate_size."""
    return dict(n_experts=need("num_local_experts", "num_experts", minimum=1),
                top_k=need("num_experts_per_tok", minimum=1),
                moe_intermediate=kw["intermediate"])


def _qwen3_moe(cfg: dict, need, kw: dict, where: str) -> dict:
    """Qwen3-MoE (and Qwen3-Next): layer i is MoE iff i not in mlp_only_layers and (i + 1) % decoder_sparse_step
    == 0 (HF Qwen3MoeDecoderLayer); the others have a dense MLP of intermediate_size. Only the count enters the
    costs. Expert counts: the hub files' names first, then the aliases transformers >= 5 writes (attribute_map)."""
    n_layers = kw["n_layers"]
    step = need("decoder_sparse_step", default=1, required=False)
    dense_only = cfg.get("mlp_only_layers") or []
    if step <= 0:
        raise RooflineInputError(f"{where}: field 'decoder_sparse_step' is {step}; it must be >= 1")
    if not isinstance(dense_only, list) or not all(isinstance(i, int) for i in dense_only):
        raise RooflineInputError(f"{where}: field 'mlp_only_layers' is {dense_only!r}; expected a list of "
                                 "layer indices")
    dense_only = set(dense_only)
    n_moe = sum(1 for i in range(n_layers) if i not in dense_only and (i + 1) % step == 0)
    return dict(n_experts=need("num_experts", "num_local_experts", minimum=1),
                top_k=need("num_experts_per_tok", minimum=1),
                moe_intermediate=need("moe_intermediate_size"), n_shared_experts=kw.get("n_shared_experts", 0),
                first_dense_layers=n_layers - n_moe)


def _deepseek(cfg: dict, need, kw: dict, where: str) -> dict:
    """DeepSeek-V3 (and Kimi-K2): MLA and a MoE with shared experts after first_k_dense_replace dense layers.

    q_lora_rank null means a plain q_proj (DeepSeek-V2-Lite); a missing key is an error because the reference
    implementations disagree on its default (transformers 1536). Same for first_k_dense_replace (transformers
    default 3, DeepSeek's own code 0) and n_shared_experts (transformers 1, DeepSeek's code None = none)."""
    for name in ("q_lora_rank", "n_shared_experts"):
        if name not in cfg:
            need(name)
    fields = dict(
        n_experts=need("n_routed_experts", "num_local_experts", minimum=1),
        top_k=need("num_experts_per_tok", minimum=1),
        moe_intermediate=need("moe_intermediate_size"), n_shared_experts=cfg["n_shared_experts"] or 0,
        first_dense_layers=need("first_k_dense_replace"),
        q_lora_rank=cfg.get("q_lora_rank"), kv_lora_rank=need("kv_lora_rank", minimum=1),
        qk_nope_head_dim=need("qk_nope_head_dim", minimum=0), qk_rope_head_dim=need("qk_rope_head_dim", minimum=0),
        v_head_dim=need("v_head_dim", minimum=1), head_dim=0,
    )
    if cfg.get("moe_layer_freq", 1) != 1:
        raise RooflineInputError(f"{where}: moe_layer_freq {cfg['moe_layer_freq']} is not supported (only 1)")
    return {**fields, **_routing_groups(cfg, need)}


def _sparse_indexer(cfg: dict, need, kw: dict, where: str) -> dict:
    """DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning indexer's heads, head width and the keys each
    query keeps (index_n_heads, index_head_dim, index_topk; all required: no default is shared by the
    implementations)."""
    return dict(index_n_heads=need("index_n_heads", minimum=1), index_head_dim=need("index_head_dim", minimum=1),
                index_topk=need("index_topk", minimum=1))


def _routing_groups(cfg: dict, need) -> dict:
    """Group-limited routing (DeepSeek-V3: n_group 8, topk_group 4): a token's experts come from topk_group of
    n_group equal groups; n_group 1 (Kimi-K2, GLM-4.5) or absent is plain top-k."""
    groups = need("n_group", default=1, required=False, minimum=1)
    if groups <= 1:
        return {}
    return dict(expert_groups=groups, groups_per_token=need("topk_group", default=groups, required=False, minimum=1))


def _deepseek_v2(cfg: dict, need, kw: dict, where: str) -> dict:
    """DeepSeek-V2 (and V2-Lite): DeepSeek-V3's MLA and MoE, its router without the score-correction bias (the
    family's traits); expert groups only under topk_method group_limited_greedy (V2: 8 groups, 3 per token; V2-Lite's
    greedy is plain top-k whatever n_group says)."""
    fields = _deepseek(cfg, need, kw, where)
    if cfg.get("topk_method", "greedy") != "group_limited_greedy":
        fields.pop("expert_groups", None)
        fields.pop("groups_per_token", None)
    return fields


def _shared_expert(cfg: dict, need, kw: dict, where: str) -> dict:
    """A shared expert of shared_expert_intermediate_size behind a sigmoid gate Linear(D, 1) (Qwen2-MoE, Qwen3-Next):
    priced as that many expert widths of moe_intermediate_size, so it must be a whole number of them."""
    expert, shared = need("moe_intermediate_size"), need("shared_expert_intermediate_size", default=0,
                                                         required=False)
    if expert <= 0 or shared % expert:
        raise RooflineInputError(f"{where}: shared_expert_intermediate_size {shared} is not a multiple of "
                                 f"moe_intermediate_size {expert}; supported: a whole number of expert widths")
    return dict(n_shared_experts=shared // expert, shared_expert_gate=shared > 0)


def _global_nope(cfg: dict, need, kw: dict, where: str) -> dict:
    """Cohere2 (Command R7B, Command A): only the sliding-window layers rotate q and k; the global layers have no
    position embedding (HF Cohere2Attention applies RoPE where sliding_window is set)."""
    return dict(nope_layers=kw["n_layers"] - kw["sliding_layers"])


def _attention_bias(cfg: dict, need, kw: dict, where: str) -> dict:
    """attention_bias (Granite, Cohere, OLMo-2): biases on q, k, v and o; mlp_bias, which no released checkpoint of
    these sets, is refused rather than left out."""
    if cfg.get("mlp_bias"):
        raise RooflineInputError(f"{where}: mlp_bias true is not supported (biases on the MLP's linears alone); "
                                 "supported: mlp_bias false")
    bias = bool(cfg.get("attention_bias", False))
    return dict(qkv_bias=bias, attn_out_bias=bias) if bias else {}


def _minimax_m2(cfg: dict, need, kw: dict, where: str) -> dict:
    """MiniMax-M2: every layer MoE (experts of intermediate_size; a sigmoid router with a score-correction bias, the
    family's traits), q/k RMSNorms over the whole projections, RoPE on rotary_dim channels of each head (released
    files; transformers 5 writes partial_rotary_factor). Its MTP modules (use_mtp: num_mtp_modules) are not part of a
    forward pass: only speculative decoding reads them."""
    head_dim = kw["head_dim"]
    rotary = cfg.get("rotary_dim")
    if rotary is None or _partial_rotary_factor(cfg):  # transformers: rotary_dim only where no factor is given
        rotary = _rope_dim(cfg, head_dim, 1.0, where)
    elif not 0 < rotary <= head_dim:
        raise RooflineInputError(f"{where}: field 'rotary_dim' is {rotary}; expected 1 to head_dim ({head_dim})")
    mtp = need("num_mtp_modules", default=0, required=False) if cfg.get("use_mtp") else 0
    return {**_mixtral(cfg, need, kw, where), "rope_dim": rotary, "mtp_layers": mtp}


def _gpt_oss(cfg: dict, need, kw: dict, where: str) -> dict:
    """gpt-oss: every layer MoE (experts of intermediate_size, with biases), biased attention with sinks."""
    bias = cfg.get("attention_bias", True)
    return dict(n_experts=need("num_local_experts", "num_experts", minimum=1),
                top_k=need("num_experts_per_tok", "experts_per_token", minimum=1), moe_intermediate=kw["intermediate"],
                qkv_bias=bool(bias), attn_out_bias=bool(bias))


def _llama4(cfg: dict, need, kw: dict, where: str) -> dict:
    """Llama 4: MoE layers every interleave_moe_layer_step (or moe_layers), one shared expert; layers whose
    no_rope_layers entry is 0 (HF: 1 = uses RoPE) have no RoPE and full attention, the others chunked attention."""
    L = kw["n_layers"]
    step = need("interleave_moe_layer_step", default=1, required=False, minimum=1)
    moe_layers = _layer_list(cfg, "moe_layers", L, where) or list(range(step - 1, L, step))
    interval = need("no_rope_layer_interval", default=4, required=False, minimum=1)
    rope_layers = (_layer_list(cfg, "no_rope_layers", L, where, values=(0, 1))
                   or [int((i + 1) % interval != 0) for i in range(L)])
    chunk = cfg.get("attention_chunk_size")
    chunked = _layer_count(cfg, "chunked_attention", sum(rope_layers)) if chunk else 0
    return dict(n_experts=need("num_local_experts", minimum=1), top_k=need("num_experts_per_tok", minimum=1),
                moe_intermediate=need("intermediate_size"), n_shared_experts=1,
                first_dense_layers=L - len(set(moe_layers)), nope_layers=L - sum(rope_layers),
                attention_chunk=chunk if chunked else None, chunked_layers=chunked)


def _glm4_moe(cfg: dict, need, kw: dict, where: str) -> dict:
    """GLM-4.5: DeepSeek-style MoE (leading dense layers, shared experts, e_score_correction_bias) under GQA with
    q/k/v biases and partial RoPE. The MTP layer (num_nextn_predict_layers) is not part of a forward pass."""
    return dict(n_experts=need("n_routed_experts", minimum=1), top_k=need("num_experts_per_tok", minimum=1),
                moe_intermediate=need("moe_intermediate_size"), n_shared_experts=need("n_shared_experts"),
                first_dense_layers=need("first_k_dense_replace"), qkv_bias=bool(cfg.get("attention_bias", False)),
                qk_norm=bool(cfg.get("use_qk_norm", False)), rope_dim=_rope_dim(cfg, kw["head_dim"], 0.5, where),
                **_routing_groups(cfg, need))


def _qwen3_next(cfg: dict, need, kw: dict, where: str) -> dict:
    """Qwen3-Next (and Qwen3.5): Gated DeltaNet layers, every full_attention_interval-th layer gated softmax
    attention (the MoE and its shared expert are read by _shared_expert and _qwen3_moe)."""
    L = kw["n_layers"]
    interval = need("full_attention_interval", default=4, required=False, minimum=1)
    linear = _layer_count(cfg, "linear_attention", sum(1 for i in range(L) if (i + 1) % interval))
    return dict(linear_layers=linear, linear_k_heads=need("linear_num_key_heads"),
                linear_v_heads=need("linear_num_value_heads"), linear_k_dim=need("linear_key_head_dim"),
                linear_v_dim=need("linear_value_head_dim"), linear_conv_kernel=need("linear_conv_kernel_dim"),
                rope_dim=_rope_dim(cfg, kw["head_dim"], 0.25, where))


# ---------------------------------------------------------------------------------------------- the table
class Family(NamedTuple):
    """How one model_type is read: the traits it always has (ModelSpec fields no config.json lists, checked
    against its HF modeling code), the reader of its MLP/head/norm/position fields, its window rule, the readers
    of its extra fields (applied in order), transformers' default of tie_word_embeddings, and the names of hidden
    size, layer count and head count."""

    traits: dict
    shape: Callable[..., dict] = _gated()
    windows: Callable[..., tuple[int | None, int]] = _no_window
    extras: tuple[Callable[..., dict], ...] = ()
    tied: bool = False
    dimensions: tuple[str, str, str] = ("hidden_size", "num_hidden_layers", "num_attention_heads")
    defaults: dict = {}  # transformers' defaults where a file may leave a field out and they are not derived ones


_LEARNED = {"positions": "learned", "linear_bias": True}
#: model_type -> how it is read; models.csv rows take their family's traits from here too
FAMILIES: dict[str, Family] = {
    "llama": Family({}, _gated(kv_heads_default=True)),
    "mistral": Family({}, windows=_every_layer),
    "mixtral": Family({}, windows=_every_layer, extras=(_mixtral,)),
    "qwen2": Family({"qkv_bias": True}, windows=_qwen2_window),
    "qwen3_moe": Family({"qk_norm": True}, windows=_when_enabled, extras=(_qwen3_moe,)),
    "phi3": Family({}, _gated(kv_heads_default=True), _every_layer),
    "gemma2": Family({"norms_per_layer": 4}, windows=_alternating, tied=True,
                     defaults={"head_dim": 256, "sliding_window": 4096}),
    "deepseek_v3": Family({"router_bias": True}, _gated(kv_heads_default=True), extras=(_deepseek,)),
    "gpt2": Family(_LEARNED, _gpt2, tied=True, dimensions=("n_embd", "n_layer", "n_head")),
    "opt": Family(_LEARNED, _opt, tied=True),
    "falcon": Family({"parallel_block": True, "norms_per_layer": 1}, _falcon, tied=True),
    "qwen3": Family({"qk_norm": True}, _gated(kv_heads_default=True), _when_enabled),
    "gemma3_text": Family({"norms_per_layer": 4, "qk_norm": True}, windows=_local_global(6), tied=True),
    "gpt_oss": Family({"qkv_bias": True, "attn_out_bias": True, "attention_sinks": True, "expert_bias": True,
                       "router_bias": True}, windows=_local_global(2), extras=(_gpt_oss,),
                      defaults={"sliding_window": 128}),
    # Llama 4's dense layers use intermediate_size_mlp; its intermediate_size is the experts' width
    "llama4_text": Family({}, _gated(width="intermediate_size_mlp"), extras=(_llama4,),
                          defaults={"attention_chunk_size": 8192}),
    "glm4_moe": Family({"qkv_bias": True, "router_bias": True}, extras=(_glm4_moe,)),
    "qwen3_next": Family({"qk_norm": True, "attn_output_gate": True, "shared_expert_gate": True},
                         _gated(dense_optional=True), extras=(_qwen3_next, _shared_expert, _qwen3_moe)),
    # ---- read from config.json only (no catalog row): checked against transformers' modules by
    # tests/test_validation_torch.py (FLOPs per module and parameters)
    "deepseek_v2": Family({}, _gated(kv_heads_default=True), extras=(_deepseek_v2,)),
    # DeepSeek-V3.2 and GLM-5 (glm_moe_dsa): DeepSeek-V3's MLA and MoE with DeepSeek Sparse Attention's indexer
    "deepseek_v32": Family({"router_bias": True}, _gated(kv_heads_default=True), extras=(_deepseek, _sparse_indexer)),
    "glm_moe_dsa": Family({"router_bias": True}, _gated(kv_heads_default=True), extras=(_deepseek, _sparse_indexer)),
    "qwen2_moe": Family({"qkv_bias": True, "shared_expert_gate": True}, windows=_qwen2_window,
                        extras=(_shared_expert, _qwen3_moe), defaults={"shared_expert_intermediate_size": 5632}),
    "gemma": Family({}, tied=True, defaults={"head_dim": 256}),
    "granite": Family({}, _gated(kv_heads_default=True), extras=(_attention_bias,)),
    "granitemoe": Family({}, _gated(kv_heads_default=True), extras=(_mixtral, _attention_bias)),
    "starcoder2": Family({}, _starcoder2, _every_layer, tied=True),
    "olmo2": Family({"qk_norm": True, "qk_norm_full": True}, _gated(kv_heads_default=True),
                    extras=(_attention_bias,)),
    "olmoe": Family({"qk_norm": True, "qk_norm_full": True}, _gated(kv_heads_default=True), extras=(_mixtral,)),
    "cohere": Family({"parallel_block": True, "norms_per_layer": 1}, _cohere, extras=(_attention_bias,), tied=True),
    # Qwen3.5's dense models: Qwen3-Next's Gated DeltaNet and gated attention layers with a dense MLP
    "qwen3_5": Family({"qk_norm": True, "attn_output_gate": True}, _gated(kv_heads_default=True),
                      extras=(_qwen3_next,), defaults={"head_dim": 256, "num_key_value_heads": 4}),
    "minimax_m2": Family({"router_bias": True, "qk_norm": True, "qk_norm_full": True}, extras=(_minimax_m2,),
                         defaults={"head_dim": 128}),
    "cohere2": Family({"parallel_block": True, "norms_per_layer": 1}, _cohere, _local_global(4),
                      extras=(_global_nope, _attention_bias), tied=True, defaults={"sliding_window": 4096}),
}
#: model_type spellings that load with another family's reader (Kimi-K2 is a DeepSeek-V3 with other sizes; MiMo-7B
#: is Qwen2's decoder with multi-token-prediction layers beside it)
#: and the model_types transformers gives the language models of multimodal checkpoints saved on their own
FAMILY_ALIASES = {"kimi_k2": "deepseek_v3", "mimo": "qwen2", "qwen2_vl": "qwen2", "qwen2_5_vl": "qwen2",
                  "qwen3_vl_text": "qwen3", "qwen3_vl_moe_text": "qwen3_moe", "qwen3_5_text": "qwen3_5",
                  "qwen3_5_moe_text": "qwen3_next"}
SUPPORTED_FAMILIES = tuple(FAMILIES)
#: the model_types an error lists: the families, their aliases and the multimodal wrappers (not the *_text names
#: transformers gives a wrapper's language model saved alone, which load too)
ACCEPTED_MODEL_TYPES = tuple(sorted({*FAMILIES, *TEXT_WRAPPERS,
                                     *(alias for alias in FAMILY_ALIASES if not alias.endswith("_text"))}))
