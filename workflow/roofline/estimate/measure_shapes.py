"""The shapes a `roofline measure` ladder times: one device's share of a model's layer (its weight GEMMs, attention
heads, norm and MLP widths, routed experts) at a tensor-parallel degree, for Llama-3-8B and Qwen3-30B-A3B's experts by
default or for any catalog model with grouped-query or multi-head attention (`--model KEY --tp N`)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..engine.errors import RooflineInputError
from ..engine.model_spec import ModelSpec


@dataclass(frozen=True)
class Shapes:
    """One device's share of a layer: hidden width, attention heads (query, KV) and head size, the MLP width the
    SiLU-and-multiply runs at, the vocabulary, the weight GEMMs (op, k, n) and the routed experts (hidden, expert
    width, experts, experts per token; None for a dense model)."""

    label: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    mlp: int  # the width SiLU-and-multiply is timed at (the gated MLP's, or an expert's)
    vocab: int
    gemms: tuple[tuple[str, int, int], ...]
    moe: tuple[int, int, int, int] | None

    def scaled(self, scale: int) -> Shapes:
        """The shapes with widths (not head sizes, expert counts or top-k) divided by `scale`: a CPU's small run."""
        if scale == 1:
            return self
        moe = None if self.moe is None else (self.moe[0] // scale, max(self.moe[1] // scale, 1), *self.moe[2:])
        gemms = tuple((op, k // scale, n // scale) for op, k, n in self.gemms)
        return replace(self, label=f"{self.label}, widths / {scale}", hidden=self.hidden // scale,
                       heads=max(self.heads // scale, 1), kv_heads=max(self.kv_heads // scale, 1),
                       mlp=max(self.mlp // scale, 1), vocab=self.vocab // scale, gemms=gemms, moe=moe)


def _layer(label: str, d: int, heads: tuple[int, int, int], f: int, vocab: int, gated: bool, dense: bool, moe,
           shared: int = 0, q_gate: bool = False) -> Shapes:
    """A layer's shapes per device (`heads`: query, KV heads and head size; f the dense MLP width, `shared` the
    shared experts' (0: none); q/k/v fused and gate/up fused, as serving engines run them; `q_gate`: q_proj also
    emits a gate per channel, twice its width)."""
    h, kv, hd = heads
    gemms = [("qkv_proj", d, (h * (2 if q_gate else 1) + 2 * kv) * hd), ("o_proj", h * hd, d)]
    if dense:
        gemms += [("gate_up_proj", d, 2 * f) if gated else ("up_proj", d, f), ("down_proj", f, d)]
    if shared:
        gemms += [("shared_gate_up_proj", d, 2 * shared), ("shared_down_proj", shared, d)]
    return Shapes(label, d, h, kv, hd, f if dense else moe[1], vocab, tuple(gemms), moe)


#: Llama-3-8B's layer and Qwen3-30B-A3B's routed experts, on one device: the ladder without --model
DEFAULT = _layer("Llama-3-8B, Qwen3-30B-A3B experts", 4096, (32, 8, 128), 14336, 128256, True, True,
                 (2048, 768, 128, 8))


def shapes_for(model: ModelSpec, tp: int = 1) -> Shapes:
    """`model`'s layer on one device of `tp` (heads, KV heads, MLP and expert widths split; a KV head count below tp
    replicated); refused in one line where the ladder cannot time it (MLA) or tp does not split it."""
    if model.kv_lora_rank > 0 or model.linear_layers > 0:
        kind = "multi-head latent attention" if model.kv_lora_rank > 0 else "linear attention layers"
        raise RooflineInputError(f"--model: {model.key} uses {kind}; the measure ladder times grouped-query and "
                                 "multi-head attention (SDPA) only")
    if model.n_heads % tp or (model.n_kv_heads % tp and tp % model.n_kv_heads):
        raise RooflineInputError(f"--tp: {tp} does not split {model.key}'s {model.n_heads} query and "
                                 f"{model.n_kv_heads} KV heads; use a divisor of {model.n_heads}")
    dense = not model.is_moe or model.first_dense_layers > 0
    shared = model.moe_intermediate * model.n_shared_experts if model.is_moe else 0
    widths = [w for w in ([model.intermediate] if dense else []) + ([model.moe_intermediate, shared] if model.is_moe
                                                                      else []) if w]
    odd = next((w for w in widths if w % tp), None)
    if odd is not None:
        raise RooflineInputError(f"--tp: {tp} does not split {model.key}'s MLP width {odd}")
    moe = (model.hidden, model.moe_intermediate // tp, model.n_experts, model.top_k) if model.is_moe else None
    heads = (model.n_heads // tp, max(model.n_kv_heads // tp, 1), model.head_dim)
    return _layer(f"{model.key} at TP {tp}", model.hidden, heads, model.intermediate // tp, model.vocab,
                  model.mlp_type == "gated", dense, moe, shared // tp, model.attn_output_gate)
