"""Build a ModelSpec from a Hugging Face `config.json`: field names, aliases and defaults per model_type.

Each supported family's fields are read as transformers' config classes name them; where transformers' default for
a missing field differs from the family's real value (e.g. num_key_value_heads of Mistral), the field is required
and a missing one is named in the error.
"""
from __future__ import annotations

import json
import stat
from pathlib import Path

from .errors import RooflineInputError, unknown
from .models import _FAMILY_TRAITS, FAMILY_ALIASES, MAX_DIMENSION, SUPPORTED_FAMILIES, ModelSpec

#: config.json fields holding names; every other field _need reads must be an integer
_NAME_FIELDS = ("hidden_act", "hidden_activation", "activation_function")
#: A Hugging Face config.json is a few kB; anything much larger is not one (and is not read into memory whole).
MAX_FILE_BYTES = 4 * 2**20
#: Longest display name taken from `_name_or_path` (the schema's $defs/name maxLength).
MAX_NAME_LENGTH = 120
_INT, _BOOL, _STR, _LIST = (int,), (bool,), (str,), (list,)
#: Generic fields read by the family readers below, with the JSON type each holds (null is allowed for every one:
#: transformers writes null for an unset field). Checked once, before any family code runs, so a reader can trust
#: `cfg.get(name)`: a wrong type is one line, not a TypeError later.
FIELD_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("model_type", "_name_or_path", "hidden_act", "hidden_activation", "activation_function"), _STR),
    **dict.fromkeys((
        "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
        "max_position_embeddings", "max_window_layers", "decoder_sparse_step", "num_experts", "num_local_experts",
        "num_experts_per_tok", "moe_intermediate_size", "n_routed_experts", "first_k_dense_replace",
        "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "moe_layer_freq", "n_embd",
        "n_layer", "n_head", "n_positions", "ffn_dim", "num_ln_in_parallel_attn", "num_key_value_heads", "head_dim",
        "sliding_window", "n_inner", "ffn_hidden_size", "num_kv_heads", "word_embed_proj_dim", "q_lora_rank",
        "n_shared_experts"), _INT),
    **dict.fromkeys(("use_sliding_window", "tie_word_embeddings", "multi_query", "new_decoder_architecture",
                     "parallel_attn", "bias"), _BOOL),
    **dict.fromkeys(("layer_types", "mlp_only_layers"), _LIST),
}
#: Fields whose null means something other than "unset" (DeepSeek: q_lora_rank null = a plain q_proj,
#: n_shared_experts null = none); every other null field is dropped, so that readers see it as absent.
NULL_IS_A_VALUE = ("q_lora_rank", "n_shared_experts")
_TYPE_NAMES = {int: "an integer", bool: "true or false", str: "a string", list: "a list"}


def _need(cfg: dict, path: str, *names: str, default=None, required: bool = True):
    for name in names:
        value = cfg.get(name)
        if value is not None:
            wanted = str if name in _NAME_FIELDS else int
            if isinstance(value, bool) or not isinstance(value, wanted):
                raise RooflineInputError(f"{path}: field '{name}' is {_shown(value)}; expected "
                                         f"{'a name' if wanted is str else 'an integer'}")
            return value
    if required and default is None:
        aliases = "".join(f" (or '{name}')" for name in names[1:])
        raise RooflineInputError(
            f"{path}: model_type '{cfg.get('model_type')}' needs field '{names[0]}'{aliases}, which the file lacks")
    return default


def _shown(value: object, limit: int = 40) -> str:
    """A value as the error line quotes it: repr, cut to `limit` characters (a field may hold a whole document)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def not_a_file(path: Path) -> str | None:
    """Why `path` cannot be read as a config.json ('does not exist', 'is a directory', 'is a FIFO, not a regular
    file', ...), or None for a regular file."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    except ValueError:  # an embedded NUL byte
        return "is not a valid path"
    if stat.S_ISREG(mode):
        return None
    kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    return f"is {kind}, not a config.json file"


def read_hf_json(path: str | Path, where: str) -> dict:
    """The parsed dict of a config.json, or one RooflineInputError line starting with `where` and naming the file: it
    must be a regular UTF-8 file of at most MAX_FILE_BYTES holding one JSON object (model_from_hf_dict checks the
    fields' types)."""
    path = Path(path)
    problem = not_a_file(path)
    if problem:
        raise RooflineInputError(f"{where}: file '{path}' {problem}")
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise RooflineInputError(f"{where}: file '{path}' cannot be read ({error.strerror})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise RooflineInputError(f"{where}: file '{path}' is larger than {MAX_FILE_BYTES // 2**20} MiB; a "
                                 "config.json is a few kB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise RooflineInputError(f"{where}: file '{path}' is not UTF-8 text (byte {error.start}); save the "
                                 "config.json as UTF-8") from None
    try:
        cfg = json.loads(text)
    except RecursionError:
        raise RooflineInputError(f"{where}: file '{path}' nests JSON too deeply to be a config.json") from None
    except ValueError as error:  # JSONDecodeError, and integers of more than 4300 digits
        reason = str(error).split(";")[0] if "digits" in str(error) else " ".join(str(error).split())[:120]
        raise RooflineInputError(f"{where}: file '{path}' is not readable JSON ({reason})") from None
    if not isinstance(cfg, dict):
        raise RooflineInputError(f"{where}: file '{path}' holds a JSON {type(cfg).__name__}; expected a JSON object "
                                 "with the model's fields")
    return cfg


def check_field_types(cfg: dict, where: str) -> None:
    """One line for the first generic field (FIELD_TYPES) of the wrong JSON type (null passes), or a `_name_or_path` longer than
    MAX_NAME_LENGTH (integer bounds are ModelSpec.validate's)."""
    for name, allowed in FIELD_TYPES.items():
        if cfg.get(name) is None:
            continue
        value = cfg[name]
        wrong_bool = isinstance(value, bool) and bool not in allowed
        if wrong_bool or not isinstance(value, allowed):
            expected = " or ".join(_TYPE_NAMES[kind] for kind in allowed) + " (or null)"
            raise RooflineInputError(f"{where}: field '{name}' is {_shown(value)}; expected {expected}")
    name = cfg.get("_name_or_path")
    if name is not None and len(name) > MAX_NAME_LENGTH:
        raise RooflineInputError(f"{where}: field '_name_or_path' is {_shown(name)}; at most {MAX_NAME_LENGTH} "
                                 "characters (it becomes the display name)")


def model_from_hf_config(path: str | Path, key: str | None = None) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face `config.json` (the families in SUPPORTED_FAMILIES). Errors name the
    file and, when `key` is given, the config entry `models.<key>`."""
    path = Path(path)
    where = f"models.{key}: {path}" if key else str(path)
    cfg = read_hf_json(path, f"models.{key}.hf_config" if key else "hf_config")
    return model_from_hf_dict(cfg, key or path.stem, where, source=str(path))


def model_from_hf_dict(cfg: dict, key: str, where: str = "config.json", source: str | None = None) -> ModelSpec:
    """Build a ModelSpec from the parsed dict of a Hugging Face `config.json`; `where` starts each error line,
    `source` (default `where`) is the spec's source."""
    if not isinstance(cfg, dict):
        raise RooflineInputError(f"{where}: expected a JSON object with the model's fields, got a "
                                 f"{type(cfg).__name__}")
    check_field_types(cfg, where)
    cfg = {name: value for name, value in cfg.items() if value is not None or name in NULL_IS_A_VALUE}
    family = cfg.get("model_type")
    if family is None:
        raise RooflineInputError(f"{where}: the file has no 'model_type' field; supported: "
                                 f"{', '.join(SUPPORTED_FAMILIES)}")
    if family in _TEXT_WRAPPERS and isinstance(cfg.get("text_config"), dict):
        # a multimodal checkpoint (Gemma 3, Llama 4): the language model is its text_config; the vision tower is
        # not part of a text-only pass. Fields the file leaves out take transformers' defaults for the family.
        family = _TEXT_WRAPPERS[family]
        cfg = {**_WRAPPED_DEFAULTS.get(family, {}), **cfg["text_config"], "model_type": family,
               "quantization_config": cfg.get("quantization_config")}
    family = FAMILY_ALIASES.get(family, family)
    if family not in _FAMILY_TRAITS:
        raise unknown(f"{where}: model_type", family, SUPPORTED_FAMILIES)
    need = lambda *names, **kw: _need(cfg, where, *names, **kw)  # noqa: E731
    traits = dict(_FAMILY_TRAITS[family])
    if family in ("gpt2",):
        hidden, n_layers, n_heads = need("n_embd"), need("n_layer"), need("n_head")
        n_kv = n_heads
        intermediate = need("n_inner", default=4 * hidden, required=False)
        activation, norm, mlp_type = need("activation_function"), "layernorm", "plain"
        max_pos = need("n_positions")
        traits["learned_positions"] = max_pos
    else:
        hidden, n_layers, n_heads = need("hidden_size"), need("num_hidden_layers"), need("num_attention_heads")
        if family == "falcon":
            multi_query = cfg.get("multi_query", True)
            n_kv = (1 if multi_query and not cfg.get("new_decoder_architecture")
                    else need("num_kv_heads", default=n_heads, required=False))
            intermediate = cfg.get("ffn_hidden_size") or 4 * hidden
            activation, norm, mlp_type = "gelu", "layernorm", "plain"
            # HF FalconDecoderLayer: sequential blocks have input_ + post_attention_layernorm; parallel blocks share
            # one input_layernorm (Falcon-7B) or have ln_attn + ln_mlp (num_ln_in_parallel_attn 2, the default of
            # new_decoder_architecture, Falcon-40B/180B).
            new_arch = bool(cfg.get("new_decoder_architecture"))
            traits["parallel_block"] = bool(cfg.get("parallel_attn", True))
            n_ln = cfg.get("num_ln_in_parallel_attn") or (2 if new_arch else 1)
            traits["norms_per_layer"] = 2 if (not traits["parallel_block"] or n_ln == 2) else 1
            traits["linear_bias"] = bool(cfg.get("bias", False))
            max_pos = cfg.get("max_position_embeddings") or 2048
        elif family == "opt":
            projection = cfg.get("word_embed_proj_dim")
            if projection is not None and projection != hidden:
                raise RooflineInputError(
                    f"{where}: word_embed_proj_dim {projection} != hidden_size {hidden} (OPT-350m's project_in/"
                    f"project_out) is not supported; supported: word_embed_proj_dim = hidden_size")
            n_kv = n_heads
            intermediate = need("ffn_dim")
            activation, norm, mlp_type = need("activation_function"), "layernorm", "plain"
            max_pos = need("max_position_embeddings")
            traits["learned_positions"] = max_pos + 2
        else:
            # transformers' defaults differ by family (Mistral/Mixtral 8, Qwen2 32, ...): only Llama, Phi-3 and
            # DeepSeek fall back to the query-head count, the others must say it
            falls_back = family in ("llama", "phi3", "deepseek_v3", "qwen3")
            n_kv = need("num_key_value_heads", default=n_heads if falls_back else None, required=not falls_back)
            # Llama 4's dense layers use intermediate_size_mlp; its intermediate_size is the experts' width
            intermediate = need("intermediate_size_mlp") if family == "llama4_text" else need("intermediate_size")
            activation = need("hidden_act", "hidden_activation")
            norm, mlp_type = "rmsnorm", "gated"
            max_pos = need("max_position_embeddings")
    for name, value in (("hidden size", hidden), ("layer count", n_layers), ("head count", n_heads)):
        if not 0 < value <= MAX_DIMENSION:  # checked before any loop over layers
            raise RooflineInputError(f"{where}: the {name} is {value}; expected an integer from 1 to {MAX_DIMENSION}")
    head_dim = cfg.get("head_dim") or (hidden // n_heads)
    tied = cfg.get("tie_word_embeddings", family in ("gpt2", "gemma2", "opt", "falcon", "gemma3_text"))
    if not isinstance(tied, bool):
        raise RooflineInputError(f"{where}: field 'tie_word_embeddings' is {tied!r}; expected true or false")
    window = cfg.get("sliding_window")
    if family == "qwen2" and not cfg.get("use_sliding_window", False):
        window = None
    if family == "mistral" or family == "mixtral" or family == "phi3" or family == "qwen2":
        sliding_layers = n_layers if window else 0
        if family == "qwen2" and window:
            sliding_layers = max(0, n_layers - cfg.get("max_window_layers", n_layers))
            window = window if sliding_layers else None
    elif family == "gemma2":
        sliding_layers = (n_layers + 1) // 2 if window else 0
    elif family in ("qwen3_moe", "qwen3") and cfg.get("use_sliding_window", False) and window:
        sliding_layers = n_layers
    elif family in _LOCAL_GLOBAL and window:
        # without layer_types (older files): layer i is local unless (i + 1) % period == 0
        period = need("sliding_window_pattern", "_sliding_window_pattern", default=_LOCAL_GLOBAL[family],
                      required=False)
        sliding_layers = sum(1 for i in range(n_layers) if (i + 1) % period)
    else:
        window, sliding_layers = None, 0
    layer_types = cfg.get("layer_types")  # written by transformers >= 4.53 (Gemma-2, Qwen2, ...): authoritative
    if window and isinstance(layer_types, list) and len(layer_types) == n_layers:
        sliding_layers = sum(1 for kind in layer_types if kind == "sliding_attention")
        window = window if sliding_layers else None
    spec_kw: dict = dict(
        key=key, name=cfg.get("_name_or_path") or key, family=family, n_layers=n_layers, hidden=hidden,
        n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim, intermediate=intermediate,
        vocab=need("vocab_size"), max_position=max_pos, activation=activation, mlp_type=mlp_type, norm=norm,
        tie_embeddings=tied,
        sliding_window=window, sliding_layers=sliding_layers, source=source or where,
    )
    spec_kw.update(traits)
    # expert counts: the hub files' names first, then the aliases transformers >= 5 writes (attribute_map)
    spec_kw.update(_native_dtypes(cfg.get("quantization_config"), where))
    if family in _READERS:
        spec_kw.update(_READERS[family](cfg, need, spec_kw, where))
    if family in ("mixtral",):
        spec_kw.update(n_experts=need("num_local_experts", "num_experts"), top_k=need("num_experts_per_tok"),
                       moe_intermediate=intermediate)
    if family in ("qwen3_moe", "qwen3_next"):
        # layer i is MoE iff i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0 (HF
        # Qwen3MoeDecoderLayer); the others have a dense MLP of intermediate_size. Only the count enters the costs.
        step = need("decoder_sparse_step", default=1, required=False)
        dense_only = cfg.get("mlp_only_layers") or []
        if step <= 0:
            raise RooflineInputError(f"{where}: field 'decoder_sparse_step' is {step}; it must be >= 1")
        if not isinstance(dense_only, list) or not all(isinstance(i, int) for i in dense_only):
            raise RooflineInputError(f"{where}: field 'mlp_only_layers' is {dense_only!r}; expected a list of "
                                     "layer indices")
        dense_only = set(dense_only)
        n_moe = sum(1 for i in range(n_layers) if i not in dense_only and (i + 1) % step == 0)
        spec_kw.update(n_experts=need("num_experts", "num_local_experts"), top_k=need("num_experts_per_tok"),
                       moe_intermediate=need("moe_intermediate_size"),
                       n_shared_experts=spec_kw.get("n_shared_experts", 0), first_dense_layers=n_layers - n_moe)
    if family == "deepseek_v3":
        # q_lora_rank null means a plain q_proj (DeepSeek-V2-Lite); a missing key is an error because the reference
        # implementations disagree on its default (transformers 1536). Same for first_k_dense_replace (transformers
        # default 3, DeepSeek's own code 0) and n_shared_experts (transformers 1, DeepSeek's code None = none).
        for name in ("q_lora_rank", "n_shared_experts"):
            if name not in cfg:
                need(name)
        spec_kw.update(
            n_experts=need("n_routed_experts", "num_local_experts"), top_k=need("num_experts_per_tok"),
            moe_intermediate=need("moe_intermediate_size"), n_shared_experts=cfg["n_shared_experts"] or 0,
            first_dense_layers=need("first_k_dense_replace"),
            q_lora_rank=cfg.get("q_lora_rank"), kv_lora_rank=need("kv_lora_rank"),
            qk_nope_head_dim=need("qk_nope_head_dim"), qk_rope_head_dim=need("qk_rope_head_dim"),
            v_head_dim=need("v_head_dim"), head_dim=0,
        )
        if cfg.get("moe_layer_freq", 1) != 1:
            raise RooflineInputError(f"{where}: moe_layer_freq {cfg['moe_layer_freq']} is not supported (only 1)")
    try:
        return ModelSpec(**spec_kw).validate()
    except RooflineInputError as error:  # name the file the impossible value came from
        raise RooflineInputError(f"{error} (read from {source or where})") from None


# ------------------------------------------------------------------------------- 2025-26 families, one reader each
#: multimodal model_types whose language model is the `text_config` (read with that family's reader)
_TEXT_WRAPPERS = {"gemma3": "gemma3_text", "llama4": "llama4_text"}
#: transformers' Gemma3TextConfig defaults: Gemma 3's multimodal files list only the fields that differ from them
_WRAPPED_DEFAULTS = {"gemma3_text": {"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4,
                                     "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
                                     "max_position_embeddings": 131072, "sliding_window": 4096}}
#: families that interleave sliding-window (local) and full (global) layers: the period of the pattern, used when
#: the file has no layer_types (Gemma 3: 5 local then 1 global; gpt-oss: alternating, local first)
_LOCAL_GLOBAL = {"gemma3_text": 6, "gpt_oss": 2}


def _layer_count(cfg: dict, n_layers: int, kind: str, fallback: int) -> int:
    """Layers of `kind` in layer_types (authoritative when it lists every layer), else `fallback`."""
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and len(kinds) == n_layers:
        return sum(1 for value in kinds if value == kind)
    return fallback


def _rope_dim(cfg: dict, head_dim: int, default_factor: float) -> int:
    """Rotated channels per head: head_dim x partial_rotary_factor (top level, or in transformers 5's
    rope_parameters)."""
    factor = cfg.get("partial_rotary_factor") or (cfg.get("rope_parameters") or {}).get("partial_rotary_factor")
    return int(head_dim * (factor or default_factor))


def _native_dtypes(quantization: dict | None, where: str) -> dict:
    """The checkpoint's own dtypes from its HF quantization_config (scenario weight_dtype 'native')."""
    if not quantization:
        return {}
    if not isinstance(quantization, dict):
        raise RooflineInputError(f"{where}: field 'quantization_config' is {quantization!r}; expected an object")
    method = str(quantization.get("quant_method", "")).lower()
    if method == "mxfp4":  # gpt-oss: experts only (attention, router, embeddings, lm_head in modules_to_not_convert)
        return {"native_expert_dtype": "mxfp4"}
    if method == "fp8":  # DeepSeek-V3, Kimi-K2: every linear of the layers, e4m3 with 128 x 128 block scales
        return {"native_weight_dtype": "fp8"}
    bits = {4: "int4", 8: "int8"}.get(quantization.get("bits"))
    if method in ("gptq", "awq") and bits:
        return {"native_weight_dtype": bits}
    algo = {"NVFP4": "nvfp4", "FP8": "fp8"}.get(str(quantization.get("quant_algo", "")).upper())
    if method == "modelopt" and algo:
        return {"native_weight_dtype": algo}
    raise RooflineInputError(
        f"{where}: quantization_config quant_method '{method}' is not supported; supported: mxfp4, fp8, gptq or awq "
        "with bits 4 or 8, modelopt with quant_algo NVFP4 or FP8 (or delete quantization_config for 16-bit)")


def _gpt_oss(cfg: dict, need, kw: dict, where: str) -> dict:
    """gpt-oss: every layer MoE (experts of intermediate_size, with biases), biased attention with sinks."""
    bias = cfg.get("attention_bias", True)
    return dict(n_experts=need("num_local_experts", "num_experts"),
                top_k=need("num_experts_per_tok", "experts_per_token"), moe_intermediate=kw["intermediate"],
                qkv_bias=bool(bias), attn_out_bias=bool(bias))


def _llama4(cfg: dict, need, kw: dict, where: str) -> dict:
    """Llama 4: MoE layers every interleave_moe_layer_step (or moe_layers), one shared expert; layers whose
    no_rope_layers entry is 0 (HF: 1 = uses RoPE) have no RoPE and full attention, the others chunked attention."""
    L = kw["n_layers"]
    step = need("interleave_moe_layer_step", default=1, required=False)
    moe_layers = cfg.get("moe_layers") or list(range(step - 1, L, step))
    interval = need("no_rope_layer_interval", default=4, required=False)
    rope_layers = cfg.get("no_rope_layers") or [int((i + 1) % interval != 0) for i in range(L)]
    chunk = cfg.get("attention_chunk_size")
    chunked = _layer_count(cfg, L, "chunked_attention", sum(rope_layers)) if chunk else 0
    return dict(n_experts=need("num_local_experts"), top_k=need("num_experts_per_tok"),
                moe_intermediate=need("intermediate_size"), n_shared_experts=1,
                first_dense_layers=L - len(set(moe_layers)), nope_layers=L - sum(rope_layers),
                attention_chunk=chunk if chunked else None, chunked_layers=chunked)


def _glm4_moe(cfg: dict, need, kw: dict, where: str) -> dict:
    """GLM-4.5: DeepSeek-style MoE (leading dense layers, shared experts, e_score_correction_bias) under GQA with
    q/k/v biases and partial RoPE. The MTP layer (num_nextn_predict_layers) is not part of a forward pass."""
    return dict(n_experts=need("n_routed_experts"), top_k=need("num_experts_per_tok"),
                moe_intermediate=need("moe_intermediate_size"), n_shared_experts=need("n_shared_experts"),
                first_dense_layers=need("first_k_dense_replace"), qkv_bias=bool(cfg.get("attention_bias", False)),
                qk_norm=bool(cfg.get("use_qk_norm", False)), rope_dim=_rope_dim(cfg, kw["head_dim"], 0.5))


def _qwen3_next(cfg: dict, need, kw: dict, where: str) -> dict:
    """Qwen3-Next: Gated DeltaNet layers, every full_attention_interval-th layer gated softmax attention; MoE with a
    gated shared expert of shared_expert_intermediate_size (a multiple of moe_intermediate_size)."""
    L = kw["n_layers"]
    interval = need("full_attention_interval", default=4, required=False)
    linear = _layer_count(cfg, L, "linear_attention", sum(1 for i in range(L) if (i + 1) % interval))
    expert, shared = need("moe_intermediate_size"), need("shared_expert_intermediate_size", default=0,
                                                         required=False)
    if expert <= 0 or shared % expert:
        raise RooflineInputError(f"{where}: shared_expert_intermediate_size {shared} is not a multiple of "
                                 f"moe_intermediate_size {expert}; supported: a whole number of expert widths")
    return dict(linear_layers=linear, linear_k_heads=need("linear_num_key_heads"),
                linear_v_heads=need("linear_num_value_heads"), linear_k_dim=need("linear_key_head_dim"),
                linear_v_dim=need("linear_value_head_dim"), linear_conv_kernel=need("linear_conv_kernel_dim"),
                n_shared_experts=shared // expert, shared_expert_gate=shared > 0,
                rope_dim=_rope_dim(cfg, kw["head_dim"], 0.25))


#: model_type -> reader of the fields the generic part above does not cover
_READERS = {"gpt_oss": _gpt_oss, "llama4_text": _llama4, "glm4_moe": _glm4_moe, "qwen3_next": _qwen3_next}
