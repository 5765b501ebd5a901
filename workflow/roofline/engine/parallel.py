"""Parallel plans: how one model is spread over several devices, and what each device holds.

A plan has four fields (the names vLLM, SGLang and Megatron use):

* tp, tensor parallel: every layer's attention heads and MLP columns/rows are split over tp devices (Megatron
  style: q/k/v and gate/up column-split, o_proj and down_proj row-split, an all-reduce after each block). KV heads
  are split too; a model with fewer KV heads than tp replicates each KV head on tp / Hkv devices. MLA's latent
  projections (q_a_proj, kv_a_proj_with_mqa) and its latent cache are replicated. Norms, residual adds and the
  router run on every device on all tokens. Embedding and lm_head are vocab-parallel (V / tp rows each).
* pp, pipeline parallel: the layers are cut into pp consecutive stages on pp groups of tp devices. Model chosen:
  no micro-batching; a step's batch visits the stages one after the other, so one token's time is the sum over all
  stages plus pp - 1 point-to-point sends, and only one stage is busy at a time (the (pp - 1) / pp bubble of
  decode; interleaving pp micro-batches would hide it for throughput, not for latency). Devices = tp x pp.
* ep, expert parallel: MoE layers spread their experts over ep groups inside the tp devices of a stage (ep divides
  tp and the number of experts); each group tensor-splits its E / ep experts over tp / ep devices. With tensor-
  parallel attention every device holds all tokens after the attention all-reduce, so each group picks its tokens
  locally and the MoE output joins the block's all-reduce. The busiest group gets more than its share of the
  token-expert pairs under random routing (formulas.expected_max_load).
* attention_dp, data-parallel attention (DeepSeek-style MLA serving): attention, dense MLPs, embedding and lm_head
  are replicated on each of the tp devices, which serve batch / tp sequences each (no attention all-reduce, a
  latent cache that is not replicated); MoE layers are expert-parallel over all tp devices (ep = tp) with an
  all-to-all dispatch and combine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .errors import RooflineInputError, unknown
from .models import (
    embedding_params,
    indexer_params,
    mixer_params,
    norm_params,
    parameter_counts,
    routed_expert_params,
    router_params,
)

#: the largest number of devices a plan may use (a GB200 NVL72 rack is 72; a few racks of scale-out beyond)
MAX_DEVICES = 4096
PLAN_FIELDS = ("tp", "pp", "ep", "attention_dp")


@dataclass(frozen=True)
class Parallel:
    """One deployment's parallel plan (see the module docstring). Devices = tp x pp."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    attention_dp: bool = False

    @property
    def devices(self) -> int:
        return self.tp * self.pp

    def describe(self) -> str:
        """"TP 4", "TP 8, PP 2", "TP 8, EP 8, DP attention"; "single device" for the trivial plan."""
        parts = [f"{name.upper()} {value}" for name, value in (("tp", self.tp), ("pp", self.pp), ("ep", self.ep))
                 if value > 1]
        if self.attention_dp:
            parts.append("DP attention")
        return ", ".join(parts) or "single device"

    def validate(self, where: str = "parallel") -> "Parallel":
        for name in ("tp", "pp", "ep"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEVICES:
                raise RooflineInputError(f"{where}.{name}: {value!r} is not allowed; expected an integer from 1 to "
                                         f"{MAX_DEVICES}")
        if not isinstance(self.attention_dp, bool):
            raise RooflineInputError(f"{where}.attention_dp: {self.attention_dp!r} is not allowed; expected true or "
                                     "false")
        if self.tp % self.ep:
            raise RooflineInputError(f"{where}: ep {self.ep} does not divide tp {self.tp}; expert groups live inside "
                                     "the tp devices of a stage (ep must divide tp)")
        if self.attention_dp and self.ep != self.tp:
            raise RooflineInputError(f"{where}: attention_dp needs ep = tp (experts spread over all devices of the "
                                     f"data-parallel attention group), got tp {self.tp}, ep {self.ep}")
        if self.devices > MAX_DEVICES:
            raise RooflineInputError(f"{where}: tp x pp = {self.devices} devices is more than {MAX_DEVICES}")
        return self

    @classmethod
    def from_value(cls, value, where: str = "parallel") -> "Parallel | str":
        """A Parallel from a config/CLI value: a Parallel, a {tp, pp, ep, attention_dp} mapping, or "auto"."""
        if isinstance(value, Parallel):
            return value.validate(where)
        if value == "auto":
            return "auto"
        if not isinstance(value, dict):
            raise RooflineInputError(f"{where}: {value!r} is not allowed; expected auto or a mapping such as "
                                     "{tp: 4, pp: 1, ep: 1}")
        for name in value:
            if name not in PLAN_FIELDS:
                raise unknown(where, name, PLAN_FIELDS)
        return cls(**value).validate(where)


def kv_heads_per_device(n_kv_heads: int, tp: int) -> int:
    """KV heads one device holds: Hkv / tp, or 1 (replicated) when there are fewer KV heads than devices."""
    return max(1, n_kv_heads // tp)


def check_plan(model, gpu, plan: Parallel) -> None:
    """Refuse a plan the model or the device cannot run, in one line naming the field, the value and the fix."""
    where = f"parallel (tp {plan.tp}, pp {plan.pp}, ep {plan.ep})"
    if model.n_heads % plan.tp:
        raise RooflineInputError(f"{where}: tp {plan.tp} does not divide the {model.n_heads} attention heads of "
                                 f"{model.key}; use a tp that divides {model.n_heads}")
    hkv = 1 if model.is_mla else model.n_kv_heads
    if not model.is_mla and hkv % plan.tp and plan.tp % hkv:
        raise RooflineInputError(f"{where}: tp {plan.tp} and the {hkv} KV heads of {model.key} do not divide one "
                                 "another (KV heads are split, or replicated when fewer than tp)")
    if model.linear_layers and (model.linear_v_heads % plan.tp or model.linear_k_heads % plan.tp):
        raise RooflineInputError(f"{where}: tp {plan.tp} does not divide the {model.linear_k_heads} key and "
                                 f"{model.linear_v_heads} value heads of {model.key}'s linear-attention layers")
    if plan.pp > model.n_layers:
        raise RooflineInputError(f"{where}: pp {plan.pp} is more than the {model.n_layers} layers of {model.key}")
    if plan.ep > 1 or plan.attention_dp:
        if not model.is_moe:
            fix = " and ".join((["use ep 1"] if plan.ep > 1 else []) + (["drop attention_dp"] if plan.attention_dp
                                                                         else []))
            raise RooflineInputError(f"{where}: ep/attention_dp need a mixture-of-experts model; {model.key} is dense "
                                     f"({fix})")
        if model.n_experts % plan.ep:
            raise RooflineInputError(f"{where}: ep {plan.ep} does not divide the {model.n_experts} experts of "
                                     f"{model.key}")
    if plan.devices > 1:
        if gpu.reach <= 1:  # a scale-up domain without the link's bandwidth links nothing
            raise RooflineInputError(f"{where}: gpu '{gpu.key}' is a single-device system (no scale-up link, no "
                                     "scale-out network); use tp 1, pp 1, or give the device's scaleup_gbps (with "
                                     "scaleup_domain) or scaleout_gbps")
        if plan.devices > gpu.scaleup_domain and not gpu.scaleout_bandwidth_bytes_per_s:
            raise RooflineInputError(f"{where}: {plan.devices} devices are more than one scale-up domain of "
                                     f"'{gpu.key}' ({gpu.scaleup_domain}) and it has no scale-out network")


# ------------------------------------------------------------------------------------------ per-device memory
def _replicated_parts(m) -> tuple[int, int, int, int]:
    """(norm, router and attention parameters every tensor-parallel device holds whole: the norms, the routers,
    MLA's latent projections and a sparse model's indexer (vLLM's ReplicatedLinear); the K/V projection parameters
    of standard attention, split by KV head), summed over all layers."""
    D = m.hidden
    norms = m.n_layers * m.norms_per_layer * norm_params(m, D)
    if m.is_mla:
        C, R = m.kv_lora_rank, m.qk_rope_head_dim
        latent = D * (C + R) + C + ((D * m.q_lora_rank + m.q_lora_rank) if m.q_lora_rank else 0)
        return norms, router_params(m), m.n_attention_layers * (latent + indexer_params(m)), 0
    kv = m.n_attention_layers * 2 * m.n_kv_heads * m.head_dim * (D + (1 if (m.qkv_bias or m.linear_bias) else 0))
    return norms, router_params(m), 0, kv


@lru_cache(maxsize=1024)
def weight_params_per_device(model, plan: Parallel, block_width: float = 1.0, table_width: float = 1.0,
                             expert_width: float | None = None, attention_width: float | None = None,
                             router_width: float | None = None) -> float:
    """Weights held by the busiest device, in parameters, or in bytes given the widths [byte per parameter] of the
    transformer blocks, of the embedding table and lm_head (16 bits in quantized checkpoints), of the routed
    experts, of the attention blocks' projections and of the routers (default: the blocks').

    Each device holds: the replicated parameters whole (norms, routers, MLA latent projections), its share of the
    KV heads of standard attention (kv_heads_per_device / Hkv), 1/tp of every other block parameter (1 under DP
    attention: replicated), 1/tp of the routed experts (E/ep experts, each split tp/ep ways), and 1/tp of the
    vocab-parallel embedding and lm_head. Pipeline stages take ceil(L/pp) layers at most; the busiest stage's
    layers are counted as MoE layers when the model has enough of them (the leading dense layers are smaller).
    """
    m = model
    expert_width = block_width if expert_width is None else expert_width
    attention_width = block_width if attention_width is None else attention_width
    router_width = block_width if router_width is None else router_width
    split = 1 if plan.attention_dp else plan.tp
    tables = embedding_params(m)
    routed = routed_expert_params(m)
    final_norm = norm_params(m, m.hidden)
    blocks = parameter_counts(m)[0] - tables - routed - final_norm
    norms, routers, latent, kv = _replicated_parts(m)
    mixers = mixer_params(m)
    kv_share = kv_heads_per_device(m.n_kv_heads, split) / m.n_kv_heads if kv else 0.0
    attention = latent + kv * kv_share + (mixers - latent - kv) / split
    rest = (blocks - norms - routers - mixers) / split  # dense MLPs, shared experts
    dense = norms * block_width + routers * router_width + attention * attention_width + rest * block_width
    layers = math.ceil(m.n_layers / plan.pp)
    held = layers * dense / m.n_layers
    if routed:
        held += routed / plan.tp * min(layers, m.n_moe_layers) / m.n_moe_layers * expert_width
    embed = (m.vocab + m.learned_positions) * m.hidden / split * table_width
    head = (tables / split * table_width - embed) + final_norm * block_width
    if m.tie_embeddings and plan.pp > 1:
        head += m.vocab * m.hidden / split * table_width  # the last stage keeps its own copy of the tied matrix
    return held + embed + head if plan.pp == 1 else held + max(embed, head)


def busiest_stage_layer_share(n_layers: int, pp: int) -> float:
    """Fraction of all layers the busiest pipeline stage holds (ceil(L / pp) / L)."""
    return math.ceil(n_layers / pp) / n_layers
