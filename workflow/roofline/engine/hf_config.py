"""Build a ModelSpec from a Hugging Face `config.json`: field names, aliases and defaults per model_type.

Each supported family's fields are read as transformers' config classes name them; where transformers' default for
a missing field differs from the family's real value (e.g. num_key_value_heads of Mistral), the field is required
and a missing one is named in the error. Which readers apply to a model_type, and the traits a family always has, is
one table (`hf_families.FAMILIES`): adding an architecture is adding one entry there.
"""
from __future__ import annotations

import json
import re
import stat
from pathlib import Path

from .errors import RooflineInputError, unknown
from .hf_families import (
    ACCEPTED_MODEL_TYPES,
    FAMILIES,
    FAMILY_ALIASES,
    TEXT_WRAPPERS,
    WRAPPED_DEFAULTS,
    Family,
)
from .model_spec import MAX_DIMENSION, ModelSpec

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
    **dict.fromkeys(("model_type", "_name_or_path", "hidden_act", "hidden_activation", "activation_function",
                     "topk_method"), _STR),
    **dict.fromkeys((
        "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
        "max_position_embeddings", "max_window_layers", "decoder_sparse_step", "num_experts", "num_local_experts",
        "num_experts_per_tok", "moe_intermediate_size", "n_routed_experts", "first_k_dense_replace",
        "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "moe_layer_freq", "n_embd",
        "n_layer", "n_head", "n_positions", "ffn_dim", "num_ln_in_parallel_attn", "num_key_value_heads", "head_dim",
        "sliding_window", "n_inner", "ffn_hidden_size", "num_kv_heads", "word_embed_proj_dim", "q_lora_rank",
        "n_shared_experts", "shared_expert_intermediate_size", "rotary_dim", "num_mtp_modules", "index_n_heads",
        "index_head_dim", "index_topk"), _INT),
    **dict.fromkeys(("use_sliding_window", "tie_word_embeddings", "multi_query", "new_decoder_architecture",
                     "parallel_attn", "bias", "use_bias", "use_mtp", "use_qk_norm", "attention_bias", "mlp_bias"),
                    _BOOL),
    **dict.fromkeys(("layer_types", "mlp_only_layers"), _LIST),
}
#: Fields whose null means something other than "unset" (DeepSeek: q_lora_rank null = a plain q_proj,
#: n_shared_experts null = none); every other null field is dropped, so that readers see it as absent.
NULL_IS_A_VALUE = ("q_lora_rank", "n_shared_experts")
#: Fields whose null transformers replaces by another field's value (its config classes: `if num_key_value_heads is
#: None: num_key_value_heads = num_attention_heads`, where a field left out takes the class's own default instead)
NULL_TAKES = {"num_key_value_heads": "num_attention_heads"}
#: the config.json field a ModelSpec field is read from in most families, named in an error about its value where
#: the file holds it (GPT-2's n_head and the like are not: the error then names the file alone)
HF_FIELDS = {"n_kv_heads": "num_key_value_heads", "n_heads": "num_attention_heads", "n_layers": "num_hidden_layers",
             "hidden": "hidden_size", "intermediate": "intermediate_size", "vocab": "vocab_size",
             "head_dim": "head_dim", "sliding_window": "sliding_window", "kv_lora_rank": "kv_lora_rank",
             "qk_nope_head_dim": "qk_nope_head_dim", "qk_rope_head_dim": "qk_rope_head_dim",
             "v_head_dim": "v_head_dim"}
_TYPE_NAMES = {int: "an integer", bool: "true or false", str: "a string", list: "a list"}


def _need(cfg: dict, path: str, *names: str, default=None, required: bool = True, minimum: int | None = None):
    for name in names:
        value = cfg.get(name)
        if value is not None:
            wanted = str if name in _NAME_FIELDS else int
            if isinstance(value, bool) or not isinstance(value, wanted):
                raise RooflineInputError(f"{path}: field '{name}' is {_shown(value)}; expected "
                                         f"{'a name' if wanted is str else 'an integer'}")
            if minimum is not None and value < minimum:  # a period or step of 0 would divide by zero
                raise RooflineInputError(f"{path}: field '{name}' is {value}; expected an integer >= {minimum}")
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


def not_a_file(path: Path, what: str | None = "a config.json file") -> str | None:
    """Why `path` cannot be read as `what` ('does not exist', 'is a directory, not a config.json file', ...; 'is a
    directory' where `what` is None), or None for a regular file."""
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
    return f"is {kind}" + (f", not {what}" if what else "")


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
    """One line for the first generic field (FIELD_TYPES) of the wrong JSON type (null passes), or a `_name_or_path`
    longer than MAX_NAME_LENGTH (integer bounds are ModelSpec.validate's)."""
    for name, allowed in FIELD_TYPES.items():
        if cfg.get(name) is None:
            continue
        value = cfg[name]
        wrong_bool = isinstance(value, bool) and bool not in allowed
        if wrong_bool or not isinstance(value, allowed):
            expected = " or ".join(_TYPE_NAMES[kind] for kind in allowed) + " (or null)"
            raise RooflineInputError(f"{where}: field '{name}' is {_shown(value)}; expected {expected}")
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and not all(isinstance(kind, str) for kind in kinds):
        raise RooflineInputError(f"{where}: field 'layer_types' is {_shown(kinds)}; expected a list of layer kinds "
                                 "('full_attention', 'sliding_attention', 'linear_attention', ...)")
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
    return model_from_hf_dict(cfg, key or default_key(cfg, path), where, source=str(path))


def default_key(cfg: dict, path: Path) -> str:
    """The model's key when no config entry names it: the last part of `_name_or_path` ('meta-llama/Llama-2-7b-hf'
    -> 'Llama-2-7b-hf'), else the file's stem, or its folder's name for a file called config.json (every Hugging
    Face checkout names it so: 'config' would name no model)."""
    name = cfg.get("_name_or_path")
    if isinstance(name, str) and name.strip("/ "):
        return name.strip("/ ").rsplit("/", 1)[-1]
    return path.parent.name if path.stem == "config" and path.parent.name else path.stem


def model_from_hf_dict(cfg: dict, key: str, where: str = "config.json", source: str | None = None) -> ModelSpec:
    """Build a ModelSpec from the parsed dict of a Hugging Face `config.json`; `where` starts each error line,
    `source` (default `where`) is the spec's source."""
    family, cfg = _language_model(cfg, where)
    _check_misspelt(cfg, where, family)
    reader = FAMILIES[family]
    cfg = {**reader.defaults, **cfg}
    need = lambda *names, **kw: _need(cfg, where, *names, **kw)  # noqa: E731
    hidden, n_layers, n_heads = (need(name) for name in reader.dimensions)
    shape = reader.shape(cfg, need, where, hidden, n_heads)
    for name, value in (("hidden size", hidden), ("layer count", n_layers), ("head count", n_heads)):
        if not 0 < value <= MAX_DIMENSION:  # checked before any loop over layers
            raise RooflineInputError(f"{where}: the {name} is {value}; expected an integer from 1 to {MAX_DIMENSION}")
    head_dim = _head_dim(cfg, hidden, n_heads, where)
    tied = cfg.get("tie_word_embeddings", reader.tied)
    if not isinstance(tied, bool):
        raise RooflineInputError(f"{where}: field 'tie_word_embeddings' is {tied!r}; expected true or false")
    _check_layer_types(cfg.get("layer_types"), n_layers, where)
    window, sliding_layers = _windows(cfg, need, reader, n_layers)
    spec_kw = {
        "key": key, "name": cfg.get("_name_or_path") or key, "family": family, "n_layers": n_layers,
        "hidden": hidden, "n_heads": n_heads, "head_dim": head_dim, "vocab": need("vocab_size"),
        "tie_embeddings": tied, "sliding_window": window, "sliding_layers": sliding_layers,
        "source": source or where, **reader.traits, **shape,
    }
    spec_kw.update(_native_dtypes(cfg.get("quantization_config"), where))
    # Qwen3-Next's checkpoints carry one MTP module without naming it in config.json (vLLM serves it as
    # `qwen3_next_mtp`); the others name theirs
    named = [cfg[name] for name in ("num_nextn_predict_layers", "mtp_num_hidden_layers") if name in cfg]
    mtp = named[0] if named else int(family == "qwen3_next")
    if not isinstance(mtp, int) or isinstance(mtp, bool) or mtp < 0:
        raise RooflineInputError(f"{where}: the multi-token-prediction layer count is {mtp!r}; expected an integer "
                                 ">= 0")
    spec_kw["mtp_layers"] = mtp
    try:
        for extra in reader.extras:  # in order: a later reader may build on an earlier one's fields
            spec_kw.update(extra(cfg, need, spec_kw, where))
    except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as error:
        # a field the readers do not check one by one holds a value of the wrong kind: still one line
        if isinstance(error, RooflineInputError):
            raise
        raise RooflineInputError(f"{where}: a field of model_type '{family}' holds a value it cannot read "
                                 f"({type(error).__name__}: {_shown(str(error), 80)})") from None
    try:
        return ModelSpec(**spec_kw).validate()
    except RooflineInputError as error:  # name the file the impossible value came from, and its field
        field = re.match(r"models\.[^:\s]+?\.(\w+):", str(error))
        named = HF_FIELDS.get(field.group(1)) if field else None
        read = f"{source or where}: '{named}'" if named in cfg else (source or where)
        raise RooflineInputError(f"{error} (read from {read})") from None


#: fields only the GPT-2 / OPT / Falcon style configs hold (n_head ...), and per-layer lists: not the field a
#: one-letter-off name in another family's file meant (a Llama file's leftover n_heads is no misspelt n_head)
_OWN_STYLE = {"n_embd": ("gpt2",), "n_layer": ("gpt2", "falcon"), "n_head": ("gpt2", "falcon"),
              "n_positions": ("gpt2",), "n_inner": ("gpt2",), "ffn_dim": ("opt",), "word_embed_proj_dim": ("opt",),
              "layer_types": (), "mlp_only_layers": (), "model_type": (), "_name_or_path": ()}


def _check_misspelt(cfg: dict, where: str, family: str) -> None:
    """One line for a field one letter off a field the readers take (FIELD_TYPES; those of another style of
    config, _OWN_STYLE, only in their own families) that the file lacks: 'num_key_value_head' for
    num_key_value_heads. transformers ignores unknown fields, so a default stood in silently (multi-head attention:
    1.34 B parameters for Llama-3.2-1B's 1.24 B). A letter added or dropped only: no field of the 138 published
    configs checked (tests/data/hf_configs and aiconfigurator-core's model_configs) is one off another that its
    file lacks (a letter changed is: o_lora_rank, q_lora_rank)."""
    fields = [field for field in FIELD_TYPES if family in _OWN_STYLE.get(field, (family,))]
    for name in cfg:
        if name in FIELD_TYPES:
            continue
        meant = [field for field in fields if field not in cfg and _one_letter_off(name, field)]
        if meant:
            raise RooflineInputError(f"{where}: field {name!r} is not one the model is read from; did you mean "
                                     f"{meant[0]!r}? (the file has no {meant[0]!r}, so a default would stand in)")


def _one_letter_off(a: str, b: str) -> bool:
    """Whether `a` and `b` differ by one letter added or dropped."""
    if abs(len(a) - len(b)) != 1:
        return False
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return any(longer[:i] + longer[i + 1:] == shorter for i in range(len(longer)))


def _without_nulls(cfg: dict) -> dict:
    """`cfg` without its null fields (unset, as transformers writes them), but those whose null is a value, and
    with those whose null takes another field's value (NULL_TAKES) given it."""
    taken = {name: cfg[other] for name, other in NULL_TAKES.items()
             if name in cfg and cfg[name] is None and cfg.get(other) is not None}
    return {name: value for name, value in cfg.items() if value is not None or name in NULL_IS_A_VALUE} | taken


def _language_model(cfg: dict, where: str) -> tuple[str, dict]:
    """(family, fields) of the language model a config.json describes: typed fields, nulls dropped, a multimodal
    file's text_config unwrapped, model_type aliases resolved; one line for anything else."""
    if not isinstance(cfg, dict):
        raise RooflineInputError(f"{where}: expected a JSON object with the model's fields, got a "
                                 f"{type(cfg).__name__}")
    check_field_types(cfg, where)
    cfg = _without_nulls(cfg)
    family = cfg.get("model_type")
    if family is None:
        raise RooflineInputError(f"{where}: the file has no 'model_type' field; supported: "
                                 f"{', '.join(ACCEPTED_MODEL_TYPES)}")
    if family in TEXT_WRAPPERS and isinstance(cfg.get("text_config"), dict):
        # a multimodal checkpoint (Gemma 3, Llama 4): the language model is its text_config; the vision tower is
        # not part of a text-only pass. Fields the file leaves out take transformers' defaults for the family.
        wrapper, family, text = family, TEXT_WRAPPERS[family], cfg["text_config"]
        outer = {name: cfg[name] for name in ("quantization_config", "tie_word_embeddings") if name in cfg}
        # errors name the file's own model_type ("model_type 'qwen3_5_moe' needs field ...")
        cfg = {**WRAPPED_DEFAULTS.get(family, {}), **text, **outer, "model_type": wrapper}
        if "quantization_config" not in outer:  # Kimi-K2.5 quantizes inside text_config
            cfg["quantization_config"] = text.get("quantization_config")
        check_field_types(cfg, where)
        cfg = _without_nulls(cfg)
    elif family in TEXT_WRAPPERS and family not in FAMILY_ALIASES:
        raise RooflineInputError(f"{where}: model_type '{family}' keeps its language model in 'text_config', which "
                                 f"the file lacks or holds no object: {_shown(cfg.get('text_config'))}")
    family = FAMILY_ALIASES.get(family, family)
    if family not in FAMILIES:
        raise unknown(f"{where}: model_type", family, ACCEPTED_MODEL_TYPES)
    return family, cfg


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
        return {"native_weight_dtype": "fp8", "native_fp8_scaling": _fp8_scaling(quantization, where)}
    bits = {4: "int4", 8: "int8"}.get(quantization.get("bits"))
    if method in ("gptq", "awq") and bits:
        return {"native_weight_dtype": bits}
    algo_name = str(quantization.get("quant_algo", "")).upper()
    producer = quantization.get("producer")
    if method == "modelopt" or (not method and isinstance(producer, dict) and producer.get("name") == "modelopt"):
        algo = {"NVFP4": "nvfp4", "FP8": "fp8"}.get(algo_name)
        if not algo:
            raise RooflineInputError(f"{where}: quantization_config (modelopt) quant_algo '{algo_name[:40]}' is not "
                                     "supported; supported: NVFP4, FP8 (a MIXED_PRECISION file: give --weight-dtype "
                                     "and --expert-weight-dtype)")
        return _quantized(algo, quantization, where, scaling="tensor")  # ModelOpt FP8: per-tensor scales
    if method == "compressed-tensors":
        return _compressed_tensors(quantization, where)
    raise RooflineInputError(
        f"{where}: quantization_config quant_method '{method[:40]}' is not supported; supported: mxfp4, fp8, gptq or "
        "awq with bits 4 or 8, modelopt with quant_algo NVFP4 or FP8, compressed-tensors with int4, int8, fp8 or nvfp4 "
        "weights (or delete quantization_config for 16-bit)")


def _fp8_scaling(quantization: dict, where: str) -> str:
    """'block' where the file gives `weight_block_size` (the [rows, columns] of each weight scale's block), else
    'tensor' (one scale per weight matrix, as transformers' fp8 loader reads a file without it)."""
    size = quantization.get("weight_block_size")
    if size is None:
        return "tensor"
    if not (isinstance(size, list) and len(size) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in size)):
        raise RooflineInputError(f"{where}: quantization_config field 'weight_block_size' is {_shown(size)}; "
                                 "expected two positive integers, e.g. [128, 128]")
    return "block"


#: compressed-tensors weight schemes (num_bits, type) -> storage dtype (a 4-bit float is NVFP4's e2m1 in groups)
_COMPRESSED = {(4, "int"): "int4", (8, "int"): "int8", (8, "float"): "fp8", (4, "float"): "nvfp4"}


def _compressed_tensors(quantization: dict, where: str) -> dict:
    """The dtype of a compressed-tensors checkpoint (llm-compressor): its first config group's weights."""
    groups = quantization.get("config_groups")
    first = next(iter(groups.values()), None) if isinstance(groups, dict) and groups else None
    weights = first.get("weights") if isinstance(first, dict) else None
    bits, kind = (weights.get("num_bits"), weights.get("type")) if isinstance(weights, dict) else (None, None)
    scheme = (bits, kind.lower()) if isinstance(bits, int) and isinstance(kind, str) else None
    if scheme not in _COMPRESSED:
        shown = _shown(weights, 60)
        raise RooflineInputError(f"{where}: quantization_config (compressed-tensors) weights {shown} are not "
                                 "supported; supported: 4- or 8-bit int, 8-bit float, 4-bit float (NVFP4)")
    scaling = "block" if str(weights.get("strategy", "")).lower() == "block" else "tensor"  # channel: per tensor
    return _quantized(_COMPRESSED[scheme], quantization, where, scaling)


def _quantized(dtype: str, quantization: dict, where: str, scaling: str) -> dict:
    """`dtype` for every linear of the layers; where the file's ignore list keeps the attention 16-bit, the
    attention projections at bf16 (NVIDIA's NVFP4 MiniMax and Kimi files), or, where it keeps MLP projections or
    shared experts 16-bit too, the routed experts alone at `dtype` (NVIDIA's Qwen3.5 NVFP4, Moonshot's int4
    Kimi-K2.5: the engine has one dtype for the other linears, so such a file is read as keeping them all).
    fp8 dense weights carry `scaling` (native_fp8_scaling: tensor | block)."""
    ignored = quantization.get("ignore", quantization.get("exclude_modules")) or []
    if not isinstance(ignored, list):
        raise RooflineInputError(f"{where}: quantization_config field 'ignore' is {_shown(ignored)}; expected a list "
                                 "of module names or patterns")
    patterns = [str(pattern) for pattern in ignored]
    if not any("self_attn" in pattern for pattern in patterns):
        found = {"native_weight_dtype": dtype}
    elif any("shared_expert" in pattern or ("mlp" in pattern and "_proj" in pattern) for pattern in patterns):
        found = {"native_expert_dtype": dtype}
    else:
        found = {"native_weight_dtype": dtype, "native_attention_dtype": "bf16"}
    if dtype == "fp8" and "native_weight_dtype" in found:  # the scales of the dense GEMMs' fp8 weights
        found["native_fp8_scaling"] = scaling
    return found


def _head_dim(cfg: dict, hidden: int, n_heads: int, where: str) -> int:
    """The file's head_dim, else hidden / heads, which must divide (transformers' Falcon, Cohere, GPT-2 and OPT
    refuse the rest; Llama's would floor the width and project hidden -> heads x floor: a typo priced silently)."""
    if not cfg.get("head_dim") and hidden % n_heads:
        raise RooflineInputError(f"{where}: the hidden size {hidden} is not a multiple of the {n_heads} attention "
                                 "heads and the file gives no head_dim; give head_dim or fix the sizes")
    return cfg.get("head_dim") or (hidden // n_heads)


def _check_layer_types(kinds, n_layers: int, where: str) -> None:
    """One line for a layer_types list that does not name one kind per layer (a shorter or longer list had been set
    aside for the family's default pattern without a word). Kinds a family does not read ('deepseek_sparse_attention'
    of GLM-5.2's files: its indexer is read from other fields) price as full attention, as before."""
    if isinstance(kinds, list) and kinds and len(kinds) != n_layers:
        raise RooflineInputError(f"{where}: field 'layer_types' lists {len(kinds)} layers; expected one kind per "
                                 f"layer (num_hidden_layers {n_layers})")


def _windows(cfg: dict, need, reader: Family, n_layers: int) -> tuple[int | None, int]:
    """The family's window rule, then layer_types where the file has it (transformers >= 4.53 writes it for
    Gemma-2, Qwen2, ...: authoritative)."""
    window, sliding_layers = reader.windows(cfg, need, n_layers)
    layer_types = cfg.get("layer_types")  # one kind per layer where given (_check_layer_types)
    if window and layer_types:
        sliding_layers = sum(1 for kind in layer_types if kind == "sliding_attention")
        window = window if sliding_layers else None
    return window, sliding_layers
