"""The KV cache: its bytes for a batch after a stage (attention layers' keys and values, MLA's latent, a sparse
indexer's keys, linear-attention layers' fixed state) and the share of it the busiest device holds."""
from __future__ import annotations

import math

import numpy as np

from .dtypes import DTYPE_BYTES, state_bytes_per_element
from .graph import attention_groups
from .models import ModelSpec, indexer_cache_bytes_per_token, kv_bytes_per_token_layer, kv_elements_per_token
from .parallel import busiest_stage_layer_share, kv_heads_per_device
from .scenario import Scenario


def kv_cache_bytes(model: ModelSpec, stage: str, scenario: Scenario, batch=None, seq_len=None):
    """KV cache of the batch after the stage: prefill S tokens, decode S + 1 tokens per sequence (windowed layers
    keep at most W: a rolling buffer; chunked layers the current chunk, at most Ck). Linear-attention layers hold
    a fixed state instead (linear_state_elements). `batch`/`seq_len` override the scenario's and may be arrays."""
    B = scenario.batch if batch is None else batch
    S = scenario.seq_len if seq_len is None else seq_len
    tokens = S if stage == "prefill" else S + 1
    c = DTYPE_BYTES[scenario.kv_dtype]
    # (a sparse-attention model's indexer keeps its own fp8 key cache beside the latent, whatever kv_dtype)
    per_token_layer = kv_bytes_per_token_layer(model, scenario.mla_mode, c)
    total = linear_state_bytes(model, scenario, 1)
    for _suffix, window, count in attention_groups(model):
        kept = tokens if window is None else np.minimum(tokens, window)
        total = total + count * kept * per_token_layer
    if model.chunked_layers:
        total = total + model.chunked_layers * np.minimum(tokens, model.attention_chunk) * per_token_layer
    return B * total


def kv_bytes_per_device(model: ModelSpec, scenario: Scenario, batch, whole):
    """The busiest device's part of `whole`, the deployment's KV cache of `batch` sequences (kv_cache_bytes): the
    attention layers' at kv_share_per_device, the linear-attention layers' state at its own share (tp splits their
    heads evenly)."""
    state = linear_state_bytes(model, scenario, batch)
    return (whole - state) * kv_share_per_device(model, scenario, batch) + state * kv_share_per_device(
        model, scenario, batch, state=True)


def linear_state_bytes(model: ModelSpec, scenario: Scenario, batch):
    """The linear-attention layers' fixed state of `batch` sequences (dtypes.state_bytes_per_element wide)."""
    return batch * model.linear_layers * linear_state_elements(model) * state_bytes_per_element(scenario.act_dtype)


def kv_share_per_device(model: ModelSpec, scenario: Scenario, batch, state: bool = False) -> float:
    """Fraction of the deployment's KV cache the busiest device holds: its stage's layers, its KV heads (MLA's
    latent is replicated over tp, its decompressed per-head cache split), its sequences under DP attention;
    `state`: of the linear-attention layers' state instead, whose heads tp splits evenly."""
    plan = scenario.parallel
    share = busiest_stage_layer_share(model.n_layers, plan.pp)
    if plan.attention_dp:
        ceil = np.ceil if isinstance(batch, np.ndarray) else math.ceil
        return share * ceil(batch / plan.tp) / batch
    if state:
        return share / plan.tp
    if model.is_mla and scenario.mla_mode == "decompressed":  # per-head K/V split; a sparse indexer's keys whole
        heads = kv_elements_per_token(model, "decompressed") * DTYPE_BYTES[scenario.kv_dtype]
        indexer = indexer_cache_bytes_per_token(model)
        return share * (heads / plan.tp + indexer) / (heads + indexer)
    if model.is_mla:
        return share
    return share * kv_heads_per_device(model.n_kv_heads, plan.tp) / model.n_kv_heads


def linear_state_elements(model: ModelSpec) -> int:
    """Elements of one sequence's fixed state in one linear-attention layer: the [Hv, dk, dv] delta-rule state and
    the conv state (the last K-1 inputs of the 2 Hk dk + Hv dv conv channels)."""
    m = model
    channels = 2 * m.linear_key_width + m.linear_value_width
    return m.linear_v_heads * m.linear_k_dim * m.linear_v_dim + channels * (m.linear_conv_kernel - 1)
