"""The model and hardware section of a model report: the model's facts (size, shape, attention, KV cache,
experts) and the accelerators' specs (peaks, ridges, memory, bandwidth)."""
from __future__ import annotations

import dataclasses

import pandas as pd

from ..display import weights_label
from ..engine.dtypes import DTYPE_BYTES, PEAK_DTYPES
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec, indexer_cache_bytes_per_token, kv_bytes_per_token_layer, kv_elements_per_token
from . import units


def hardware_table(gpus: dict[str, Accelerator]) -> dict:
    """Per GPU its memory, bandwidth, source, L2 and, per dtype any of them publishes, the peak and the ridge."""
    dtypes = [d for d in PEAK_DTYPES if any(d in g.peak_flops_per_s for g in gpus.values())]
    rows = []
    for key, gpu in gpus.items():
        cells = []
        for dtype in dtypes:
            if dtype in gpu.peak_flops_per_s:
                cells.append({"peak": units.sig(gpu.peak(dtype) / 1e12), "ridge": units.sig(gpu.ridge(dtype))})
            else:
                cells.append({"peak": units.DASH, "ridge": ""})
        rows.append({"key": key, "name": gpu.name, "vendor": gpu.vendor, "memory": units.capacity(gpu.memory_bytes),
                     "bandwidth": units.bandwidth(gpu.bandwidth_bytes_per_s), "peaks": cells,
                     "source": gpu.source or units.DASH, "estimate": bool(gpu.estimate),
                     "l2": units.nbytes(gpu.l2_bytes) if gpu.l2_bytes else units.DASH})
    return {"dtypes": dtypes, "rows": rows}


def model_spec(entry: dict) -> ModelSpec:
    """The ModelSpec of a results/specs.json entry (keys the dataclass does not know are ignored)."""
    known = {f.name for f in dataclasses.fields(ModelSpec)}
    return ModelSpec(**{k: v for k, v in entry.items() if k in known})


def attention_facts(m: ModelSpec, scenario: dict) -> list[tuple[str, str]]:
    """Attention shape and the KV cache it stores per token (MLA: the latent, or decompressed per-head K and V)."""
    per_layer = kv_elements_per_token(m, scenario["mla_mode"])
    indexer = indexer_cache_bytes_per_token(m)
    per_token = units.nbytes(kv_bytes_per_token_layer(m, scenario["mla_mode"], DTYPE_BYTES[scenario["kv_dtype"]])
                             * m.n_layers)
    over = f"{per_token} per token over {m.n_layers} layers at {scenario['kv_dtype']}"
    if indexer:
        over += f", with the sparse-attention indexer's {indexer} bytes of fp8 keys per token per layer"
    if m.is_mla:
        q = f"; query latent {m.q_lora_rank:,}" if m.q_lora_rank else ""
        attention = (f"multi-head latent attention (MLA), {m.n_heads} heads; q/k head dim {m.qk_head_dim} "
                     f"({m.qk_nope_head_dim} without RoPE + {m.qk_rope_head_dim} RoPE), v head dim {m.v_head_dim}{q}")
        if m.is_sparse_attention:
            attention += (f"; DeepSeek Sparse Attention: an indexer of {m.index_n_heads} heads × {m.index_head_dim} "
                          f"picks the {m.index_topk:,} keys each query attends")
        if scenario["mla_mode"] == "decompressed":
            kv = (f"{m.n_heads} heads × ({m.qk_head_dim} + {m.v_head_dim}) = {per_layer:,} elements per token per "
                  f"layer (MLA {scenario['mla_mode']}: per-head K and V); {over}")
        else:
            kv = (f"latent {m.kv_lora_rank} + RoPE key {m.qk_rope_head_dim} = {per_layer:,} elements per token per "
                  f"layer (MLA {scenario['mla_mode']}); {over}")
        return [("attention", attention), ("KV cache", kv)]
    kind = "MHA" if m.n_kv_heads == m.n_heads else "MQA" if m.n_kv_heads == 1 else "GQA"
    attention = f"{m.n_heads} query heads, {m.n_kv_heads} KV heads ({kind}), head dim {m.head_dim}"
    if m.sliding_window and m.sliding_layers:
        attention += f"; sliding window of {m.sliding_window:,} tokens on {m.sliding_layers} of {m.n_layers} layers"
    kv = f"2 × {m.n_kv_heads} KV heads × {m.head_dim} = {per_layer:,} elements per token per layer; {over}"
    if m.sliding_window and m.sliding_layers:
        kv += f" (windowed layers keep at most {m.sliding_window:,} tokens)"
    return [("attention", attention), ("KV cache", kv)]


def model_facts(m: ModelSpec, scenario: dict, total: pd.Series) -> list[tuple[str, str]]:
    """The model facts table: size, shape, attention and KV cache, and (MoE) the experts."""
    if m.is_moe:
        params = (f"{units.count(total['total_params'])} total, {units.count(total['active_params'])} active per "
                  "token")
        layers = f"{m.n_layers} ({m.n_dense_layers} dense, {m.n_moe_layers} MoE)" if m.n_dense_layers else \
            f"{m.n_layers} (all MoE)"
    else:
        params, layers = units.count(total["total_params"]), str(m.n_layers)
    facts = [("parameters", params),
             ("weights", f"{units.nbytes(total['weight_bytes'])} at {weights_label(scenario)}"),
             ("layers", layers), ("hidden size", f"{m.hidden:,}"), *attention_facts(m, scenario)]
    if m.is_moe:
        shared = f" + {m.n_shared_experts} shared" if m.n_shared_experts else ""
        if m.n_shared_experts and m.shared_expert_gate:  # Qwen2-MoE, Qwen3-Next: one gated shared expert, priced
            # as whole expert widths (hf_families._shared_expert)
            shared = f" + 1 gated shared expert of width {m.n_shared_experts * m.moe_intermediate:,}"
        dense = f"; dense MLP width {m.intermediate:,} in the {m.n_dense_layers} dense layers" if m.n_dense_layers \
            else ""
        facts.append(("experts", f"{m.n_experts} routed (top-{m.top_k} per token){shared}, expert width "
                                 f"{m.moe_intermediate:,}{dense}; routing {scenario['expert_routing']}"))
    else:
        facts.append(("MLP", f"width {m.intermediate:,} ({m.mlp_type}, {m.activation})"))
    facts.append(("vocabulary", f"{m.vocab:,}"))
    return facts
