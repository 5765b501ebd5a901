"""The price of one serving step: its roofline bound and its expected time, for any mix of decode and prefill.

A serving step runs `decode` sequences (each `queries` new tokens: 1, or K + 1 for a speculative verify step)
attending over `kv_len` cached tokens, and `prefill` prompt tokens (chunks of prompts of `prompt` tokens, of which
`prefix` were found in the prefix cache). It reads the weights once: every token-wise operator (GEMMs, norms,
element-wise, embedding, collectives, MoE routing) is priced at the step's T = decode x queries + prefill tokens,
from the engine's decode graph at batch T (whose token-wise rows are those of a pass over T tokens; under
data-parallel attention it spreads them over the replicas as a serving engine does). Attention is priced per
sequence: the decode graph's attention rows at (decode, kv_len), and the prefill graph's attention rows of one
whole prompt, times the share of a prompt the step computes (prefill / computed prompt tokens). lm_head runs on
one row per sequence that samples: decode sequences (x queries) and the prompts that finish in the step.

NB: a prompt's attention is charged evenly over its chunks (the total over a prompt is exact: its causal pairs;
one chunk's share of them is not); a prefix hit removes its share of the prompt's causal pairs. MLA prompts are
priced on the decode graph's absorbed projections (q_absorb, out_absorb) rather than kv_b_proj: the same order of
FLOPs per token. A verify step's attention is its decode attention with K + 1 queries per sequence: FLOPs and
query/output traffic x (K + 1), the cached keys read once.

Everything is vectorized: the composition fields are NumPy arrays (broadcast together), so one call prices every
candidate of a search. `expected` is the one place that maps bounds to expected times (roofline.estimate).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..engine.analysis import op_times
from ..engine.graph import Op, build_operators
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from ..estimate.calibration import calibration_for

#: operators priced per sampled row rather than per token
LOGIT_OPS = ("lm_head", "logits_all_gather")


@dataclass(frozen=True)
class Mix:
    """What one step computes (every field a number or an array; broadcast together)."""

    decode: object = 0.0  # sequences decoding
    kv_len: object = 1.0  # tokens in the cache of each decoding sequence
    prefill: object = 0.0  # prompt tokens computed
    prompt: object = 1.0  # tokens of the prompts those belong to
    prefix: object = 0.0  # of which found in the prefix cache (not computed)
    queries: object = 1.0  # new tokens per decoding sequence (K + 1 when verifying K drafted tokens)

    def arrays(self) -> tuple[np.ndarray, ...]:
        return np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (
            self.decode, self.kv_len, self.prefill, self.prompt, self.prefix, self.queries)))


@dataclass(frozen=True)
class Price:
    """Bound and expected time [s] of steps (arrays of the Mix's shape), and the estimate label."""

    bound_s: np.ndarray
    expected_s: np.ndarray
    estimate: str


class StepPricer:
    """Prices steps of one model on one device under one resolved scenario (dtypes and a concrete plan)."""

    def __init__(self, model: ModelSpec, gpu: Accelerator, scenario: Scenario):
        self.model, self.gpu, self.scenario = model, gpu, scenario.for_model(model)

    def price(self, mix: Mix, expected: bool = True) -> Price:
        """Bound and expected time of the steps `mix` describes."""
        D, L, P, S, S0, Q = mix.arrays()
        parts = [self._tokenwise(D * Q + P), self._logits(D * Q + np.where(P > 0, P / np.maximum(S - S0, 1), 0)),
                 self._decode_attention(D, L, Q), self._prefill_attention(P, S, S0)]
        bound = sum(part[0] for part in parts)
        if not expected:
            return Price(bound, bound, "bound")
        labels = set().union(*(part[2] for part in parts))
        return Price(bound, sum(part[1] for part in parts),
                     "calibrated" if labels == {"calibrated"} else "default")

    # ---- the four parts: (bound, expected, labels), each an array of the mix's shape

    def _tokenwise(self, T):
        ops = [op for op in build_operators(self.model, "decode", self.scenario, batch=np.maximum(T, 1), seq_len=1.0)
               if op.op_class != "attention" and op.name not in LOGIT_OPS]
        return self._sum(ops, T > 0)

    def _logits(self, rows):
        ops = [op for op in build_operators(self.model, "decode", self.scenario, batch=np.maximum(rows, 1),
                                            seq_len=1.0) if op.name in LOGIT_OPS]
        return self._sum(ops, rows > 0)

    def _decode_attention(self, D, L, Q):
        ops = [_queries(op, Q) for op in build_operators(self.model, "decode", self.scenario,
                                                          batch=np.maximum(D, 1), seq_len=np.maximum(L, 1))
               if op.op_class == "attention"]
        return self._sum(ops, D > 0)

    def _prefill_attention(self, P, S, S0):
        """The attention of the prompts' share this step computes: per prompt (length S, S0 cached) the causal
        pairs of its S - S0 new queries, (S^2 - S0^2) / S^2 of the whole prompt's attention."""
        lengths = np.unique(S[P > 0]) if np.any(P > 0) else np.array([])
        bound, expected = np.zeros_like(P), np.zeros_like(P)
        labels: set[str] = set()
        for length in lengths:  # a few distinct prompt lengths per call (usually one)
            ops = [op for op in _prefill_ops(self.model, self.scenario, float(length)) if op.op_class == "attention"]
            b, e, lab = self._sum(ops, np.array(True))
            at = (S == length) & (P > 0)
            computed = np.maximum(length - S0, 1.0)
            share = np.where(at, P / computed * (1 - (S0 / length) ** 2) / self._replicas(), 0.0)
            bound, expected, labels = bound + share * b, expected + share * e, labels | lab
        return bound, expected, labels

    def _replicas(self) -> int:
        """Data-parallel attention replicas the prompts spread over (1 without)."""
        plan = self.scenario.parallel
        return plan.tp if plan.attention_dp else 1

    def _sum(self, ops: list[Op], active) -> tuple[np.ndarray, np.ndarray, set[str]]:
        """(bound, expected, labels) of count x time over `ops`, zero where not `active`."""
        peaks = {op.compute_dtype: self.gpu.peak(op.compute_dtype) for op in ops}
        bound = expected = 0.0
        labels: set[str] = set()
        for op in ops:
            t_compute, t_memory, t_network, t = op_times(self.gpu, op, peaks[op.compute_dtype], op.cost.bytes,
                                                         np.maximum)
            bound = bound + op.count * t
            e, label = expected_times(self.gpu, op, t_compute, t_memory, t_network, t)
            expected = expected + op.count * e
            labels.add(label)
        return np.where(active, bound, 0.0), np.where(active, expected, 0.0), labels


@lru_cache(maxsize=256)
def _prefill_ops(model: ModelSpec, scenario: Scenario, length: float) -> tuple[Op, ...]:
    return build_operators(model, "prefill", scenario, batch=1, seq_len=length)


def _queries(op: Op, Q) -> Op:
    """A decode attention row with Q queries per sequence: FLOPs and query/output traffic x Q, keys read once."""
    c = op.cost
    return op._replace(cost=c._replace(flops=c.flops * Q, act_read=c.act_read * Q, act_write=c.act_write * Q))


#: lattice of the expected-time lookup [decades of bound time, decades of intensity]: each point's ratio
#: expected / bound is the calibration's at the nearest lattice point (the ratio varies slowly across a step)
LATTICE_DECADES = (0.01, 0.05)


def expected_times(gpu: Accelerator, op: Op, t_compute, t_memory, t_network, t) -> tuple[np.ndarray, str]:
    """(expected time of one instance [s] at every point, estimate label) of `op`: the device's calibration
    (roofline.estimate.calibration) applied point by point, its ratio to the bound looked up once per lattice
    point. The one function a vectorized estimator replaces."""
    calibration = calibration_for(gpu)
    shape = np.shape(t)
    t_flat = np.broadcast_to(t, shape).ravel().astype(float)
    sides = _sides(*(np.broadcast_to(v, shape).ravel() for v in (t_compute, t_memory, t_network)))
    intensity = np.broadcast_to(op.cost.flops / np.maximum(op.cost.bytes, 1e-30), shape).ravel()
    keys = np.stack([np.round(np.log10(np.maximum(t_flat, 1e-30)) / LATTICE_DECADES[0]),
                     np.round(np.log10(np.maximum(intensity, 1e-3)) / LATTICE_DECADES[1]), sides], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    ratios, labels = np.empty(len(unique)), set()
    for n, (kt, ki, side) in enumerate(unique):
        ratios[n], label = _ratio(calibration, op.op_class, op.compute_dtype, int(side), float(kt), float(ki))
        labels.add(label)
    out = np.where(t_flat > 0, t_flat * ratios[inverse.ravel()], 0.0)
    return out.reshape(shape), "calibrated" if labels <= {"calibrated"} else "default"


SIDES = ("memory", "compute", "network")


def _sides(t_compute, t_memory, t_network) -> np.ndarray:
    """roofline.bound_class of every point as an index into SIDES."""
    network = (t_network > 0) & (t_network >= t_compute) & (t_network >= t_memory)
    return np.where(network, 2, np.where(t_compute > t_memory, 1, 0))


@lru_cache(maxsize=1 << 18)
def _ratio(calibration, op_class: str, dtype: str, side: int, log_t: float, log_intensity: float):
    """(expected / bound, label) at one lattice point."""
    bound = 10 ** (log_t * LATTICE_DECADES[0])
    expected, label = calibration.expected(op_class, dtype, SIDES[side], bound,
                                           10 ** (log_intensity * LATTICE_DECADES[1]))
    return expected / bound, label
