"""KV-cache capacity: how many requests one deployment can hold in flight, from the model and the device.

Per device: the KV budget is what the framework's memory rule leaves after the busiest device's weights (and the
activations of its largest step, `max_batched_tokens` tokens): roofline.serving.framework.Framework.kv_budget_bytes.
A request holds its prompt's and its outputs' KV (the engine's kv_cache_bytes: windowed layers keep at most their
window, linear-attention layers a fixed state), the busiest device its share (its layers, its KV heads; under
data-parallel attention a replica holds its own requests whole). Speculative decoding adds the draft's cache; a
prefix shared by every request (prefix caching) is held once.

Expected side: the framework's budget, each request at its full isl + osl tokens when the framework reserves that
(TensorRT-LLM's GUARANTEED_NO_EVICT), else at the mean in-flight length (vLLM admits while blocks are free; SGLang
reserves a decaying share of the outputs and retracts when full: GLM-5 measured on 8 x B200 at 1024/8192 and
concurrency 128, TTFT 0.5 s, held more than the 110 requests a full-length rule allows). Bound side: the whole device
memory but the weights, each request at its mean in-flight length isl + osl / 2 (no run can hold more).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..engine.analysis import aggregate, kv_bytes_per_device, kv_cache_bytes, weight_bytes_per_device
from ..engine.graph import build_operators
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from .framework import Framework
from .speculative import Speculation, draft_model, draft_weight_bytes


@dataclass(frozen=True)
class Capacity:
    """Requests the deployment holds at once (expected and bound), and the KV budget behind the expected one."""

    running: float  # expected: requests in flight the cache (and the framework's max_running) allows
    running_bound: float  # bound: whole memory, mean in-flight length
    kv_budget_bytes: float  # per device, expected side
    kv_per_request_bytes: float  # per device, one request at the length the expected side reserves


def kv_per_request(model: ModelSpec, scenario: Scenario, tokens) -> np.ndarray:
    """KV bytes one request of `tokens` cached tokens puts on the busiest device (arrays accepted)."""
    whole = kv_cache_bytes(model, "prefill", scenario, batch=1, seq_len=np.asarray(tokens, dtype=float))
    return kv_bytes_per_device(model, scenario, 1, whole)


@lru_cache(maxsize=16384)
def _kv_per_request(model: ModelSpec, scenario: Scenario, tokens: float) -> float:
    """kv_per_request of one length, cached (it does not depend on the device)."""
    return float(kv_per_request(model, scenario, tokens))


@lru_cache(maxsize=4096)
def activation_bytes(model: ModelSpec, scenario: Scenario, tokens: int) -> float:
    """The largest operator's inputs and outputs in a step of `tokens` tokens (the engine's activation_bytes);
    cached: a search asks it of every device a scenario runs on."""
    ops = build_operators(model, "decode", scenario, batch=float(tokens), seq_len=1.0)
    return float(max(op.cost.act_read + op.cost.act_write for op in ops))


def capacity(model: ModelSpec, gpu: Accelerator, scenario: Scenario, framework: Framework, isl: int, osl: int,
             prefix_hit: float = 0.0, extra_weight_bytes: float = 0.0, draft=None) -> Capacity:
    """Capacity of one deployment (draft: a (model, scenario) whose cache rides along, or None)."""
    weights, activations, held, shared, mean = per_device_bytes(
        model, scenario, framework.step_budget(scenario.parallel), framework.reserve_full_length, isl, osl, prefix_hit,
        extra_weight_bytes, draft)
    budget = framework.kv_budget_bytes(gpu.memory_bytes, weights, activations)
    replicas = scenario.parallel.tp if scenario.parallel.attention_dp else 1
    fit = math.floor(max(budget - shared, 0.0) / held) * replicas
    fit_bound = (gpu.memory_bytes - weights - shared) / mean * replicas
    return Capacity(running=float(min(fit, framework.running_cap(replicas))), running_bound=float(fit_bound),
                    kv_budget_bytes=float(budget), kv_per_request_bytes=float(held))


@lru_cache(maxsize=16384)
def per_device_bytes(model: ModelSpec, scenario: Scenario, max_batched_tokens: int, reserve_full_length: bool,
                     isl: int, osl: int, prefix_hit: float, extra_weight_bytes: float, draft) -> tuple:
    """(weights, activations of a full-budget step, one request's KV at the length the expected side reserves, the
    shared prefix's KV, one request's KV at the mean in-flight length) on the busiest device, in bytes: what
    capacity() needs beyond the device, once per scenario (a search asks it of every device)."""
    weights = weight_bytes_per_device(model, scenario) + extra_weight_bytes
    activations = activation_bytes(model, scenario, max_batched_tokens)
    shared = prefix_hit * isl  # held once for every request
    full, mean = isl - shared + osl, isl - shared + osl / 2

    def per_request(tokens):
        own = _kv_per_request(model, scenario, float(tokens))
        return own + (_kv_per_request(*draft, float(tokens)) if draft else 0.0)

    # the prefix's tokens alone: a linear-attention state is each request's own (in per_request), not the prefix's
    prefix = per_request(shared) - per_request(0.0)
    return (weights, activations, per_request(full if reserve_full_length else mean), prefix, per_request(mean))


def footprint_share(model: ModelSpec, gpu: Accelerator, scenario: Scenario) -> float:
    """The share of each device `scenario` (a prepared prefill probe) fills: what resolve_plan's fit compares
    (roofline.serving.serve._resolved)."""
    ops = build_operators(model, "prefill", scenario)
    totals = aggregate(model, gpu, "prefill", scenario, ops, scenario.batch, scenario.seq_len)
    return float(totals["footprint_bytes"]) / gpu.memory_bytes


def room_lacking(model: ModelSpec, gpu: Accelerator, scenario: Scenario, rule: Framework, tokens: int,
                 spec: Speculation) -> float:
    """Bytes per device the KV budget of `rule` on `scenario`'s plan lacks for one request of `tokens` tokens
    (capacity's accounting, a draft's weights and cache included), 0 where it holds one."""
    draft = draft_model(spec, model)
    weights, activations, held, _, _ = per_device_bytes(
        model, scenario, rule.step_budget(scenario.parallel), False, tokens, 0, 0.0,
        draft_weight_bytes(spec, scenario, model), (draft, scenario) if draft else None)
    return max(held - rule.kv_budget_bytes(gpu.memory_bytes, weights, activations), 0.0)
