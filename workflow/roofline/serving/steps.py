"""The price of one serving step: its roofline bound and its expected time, for any mix of decode and prefill.

A serving step runs D sequences decoding (each Q new tokens: 1, or K + 1 for a speculative verify step) over their
cached tokens and P prompt tokens (chunks of prompts of S tokens, S0 of them found in the prefix cache). It reads
the weights once. Its time is the sum of four parts, each a function of one number:

    t(D, P) = tokenwise(D Q + P) + logits(D Q + P / (S - S0)) + attention(D) + P x prompt_attention

* tokenwise(T): every operator that works token by token (GEMMs, norms, element-wise, embedding, collectives, MoE
  routing and experts) on T tokens: the engine's decode graph at batch T without its attention and logit rows
  (under data-parallel attention it spreads the T tokens over the replicas, as a serving engine does);
* logits(R): lm_head (and its all-gather) on the R rows that sample: the decode tokens and the prompts that end;
* attention(D): the decode graph's attention rows at (D, cached length), with Q queries per sequence (FLOPs and
  query/output traffic x Q, the cached keys read once);
* prompt_attention: the prefill graph's attention of one whole prompt of S tokens per computed token, each row
  scaled by the (query, key) pairs its S - S0 new queries attend (uncached_attention: (S^2 - S0^2) / S^2 of a causal
  row's, less for windowed, chunked and top-k rows, (S - S0) / S of eager and linear-attention rows).

NB: a prompt's attention is charged evenly over its chunks (exact over a whole prompt: its causal pairs); MLA prompts
are priced on the decode graph's absorbed projections rather than kv_b_proj (the same order of FLOPs per token).

Each part is tabulated once per (model, scenario, device) on a log-spaced grid (GRID_RATIO apart) and interpolated
linearly in log space between grid points (roofline.serving.step_tables builds the tables of many scenarios and
devices at once). The graphs are the engine's (device-independent), their roofline the engine's, and their expected
times the estimator's (roofline.estimate.step.Kernels: `expected_times` for one device, kernel_times for many) on
the device's measured tables of the run's framework, the kernels as that framework runs them (fused QKV, gate-up and
MoE kernels, ...), each part at least its bound. NB: a fusion
joins operators of one part only (TensorRT-LLM's RoPE + KV-cache write + attention kernel is priced as its
members: RoPE and the cache write are token-wise, the attention is not).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..engine import formulas as f
from ..engine.analysis import op_times
from ..engine.graph import Op, build_operators
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from ..estimate.lookup import calibration_for
from ..estimate.step import Kernels, row_window

#: operators priced per sampled row rather than per token
LOGIT_OPS = ("lm_head", "logits_all_gather")
#: the routed experts' operators (and the weighted combine, which under expert parallelism reads the expert rows a
#: device computed: graph's moe_combine): under data-parallel attention the one token-wise work every rank shares
#: (the experts see all replicas' tokens); the rest of the token-wise part each replica computes for its own tokens
EXPERT_PREFIX = "expert_"
EXPERT_OPS = ("moe_combine",)


def expert_op(name: str) -> bool:
    """Whether an operator is the routed experts' work (EXPERT_PREFIX, EXPERT_OPS)."""
    return name.startswith(EXPERT_PREFIX) or name in EXPERT_OPS


#: spacing of the tabulation grids (tokens, rows, decode sequences): 4% apart, interpolated in log space
GRID_RATIO = 1.04


@dataclass(frozen=True)
class Mix:
    """What one step computes (every field a number or an array; broadcast together)."""

    decode: object = 0.0  # sequences decoding
    kv_len: object = 1.0  # tokens in the cache of each decoding sequence
    prefill: object = 0.0  # prompt tokens computed
    prompt: object = 1.0  # tokens of the prompts those belong to
    prefix: object = 0.0  # of which found in the prefix cache (not computed)
    queries: object = 1.0  # new tokens per decoding sequence (K + 1 when verifying K drafted tokens)


def grid(largest: float) -> np.ndarray:
    """1, GRID_RATIO, GRID_RATIO^2, ... up to at least `largest`."""
    return GRID_RATIO ** np.arange(int(np.ceil(np.log(max(largest, 1.0)) / np.log(GRID_RATIO))) + 2)


def physical(times: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Expected times of a part on the grid `points` (tokens, rows or sequences: the last axis of `times`) held to
    two regularities of a step: its time per token never grows with the tokens it carries (weights, launches and
    the cache's fixed costs amortize over more; a running minimum of time / point), and a step of fewer tokens never
    takes longer than one of more (an engine could pad it; a reversed running minimum). Measured kernel tables break
    both where a curve's first row holds host time (B200 vLLM fp8 GEMMs: 20 us at one token, 5 us at two, so one
    user decoded slower than two) or a fit mixes kernel shapes (a fused MoE kernel 4x dearer at 1.5x the tokens, so
    768 Mixtral users on a B200 delivered 17% less than 512). The tables are smooth fits, so a kernel's tile
    quantization (a sawtooth within a factor of two) is not theirs to keep; the bound's linear costs hold both."""
    t = np.array(times, dtype=float)
    if t.ndim == 0:  # a part without operators (0 everywhere)
        return t
    t = np.minimum.accumulate(t / points, axis=-1) * points
    return np.flip(np.minimum.accumulate(np.flip(t, axis=-1), axis=-1), axis=-1)


def locate(x):
    """(index k, weight w) of x on the grid, linear in log x (x below 1 reads the first point)."""
    u = np.log(np.maximum(np.asarray(x, dtype=float), 1.0)) * (1 / np.log(GRID_RATIO))
    k = u.astype(np.int64)
    return k, u - k


def read(table: np.ndarray, k, w, group=None) -> np.ndarray:
    """table at located points: a [K] table, or a [G, K] table read in row `group` (an index per point, broadcast
    against k); points past the end read the last value."""
    last = table.shape[-1] - 1
    k0 = np.minimum(k, last)
    k1 = np.minimum(k0 + 1, last)
    if table.ndim == 2:  # flat indices: np.take on a 1-D array is the fastest gather
        offset = np.asarray(group) * table.shape[1]
        k0, k1, table = k0 + offset, k1 + offset, table.ravel()
    low = np.take(table, k0)
    return low + (np.take(table, k1) - low) * w


def lookup(table: np.ndarray, x, group=None) -> np.ndarray:
    """table at GRID_RATIO^k, interpolated linearly in log x; a [G, K] table in row `group` of each point."""
    return read(table, *locate(x), group)


class Curve:
    """A [K] table, or [G, K] stacked tables, on the grid, kept for fast reads at many points: the values and each
    point's slope to the next (0 at the last point, which points past the end read), flat. at(*locate(x)) gives
    what lookup() gives, bit for bit (the same low + (high - low) x w), in half the array operations, and tables
    of one width share a locate: a solver reads its step tables at every point in every iteration."""

    def __init__(self, table: np.ndarray):
        table = np.asarray(table, dtype=float)
        slopes = np.zeros_like(table)
        slopes[..., :-1] = np.diff(table, axis=-1)
        self.width, self.values, self.slopes = table.shape[-1], table.ravel(), slopes.ravel()

    def offsets(self, group):
        """Each point's first flat index of its row (`group`: a row per point); None for a [K] table."""
        return None if group is None else np.asarray(group) * self.width

    def locate(self, x, offsets=None) -> tuple:
        """(flat index, weight) of x in each point's row: where at() reads this table, and any of its width."""
        k, w = locate(x)
        index = np.minimum(k, self.width - 1)
        return (index if offsets is None else index + offsets), w

    def at(self, index, w) -> np.ndarray:
        """The table at located points (locate())."""
        return np.take(self.values, index) + np.take(self.slopes, index) * w


def at(value, group):
    """A per-group value (a [G] array) at each point's group; a scalar as it is."""
    return value if group is None or np.ndim(value) == 0 else np.asarray(value)[group]


@dataclass(frozen=True)
class Parts:
    """The four parts of a step, tabulated for one (model, scenario, device) and one workload (cached length,
    prompt, queries): bound and expected arrays on `grid`, the prompt attention per computed token; beside them the
    routed experts' share of the token-wise part (the one share the ranks of data-parallel attention compute
    together; the rest each replica computes for its own tokens) and the attention replicas (tp under data-parallel
    attention, else 1)."""

    tokenwise_bound: np.ndarray
    tokenwise_expected: np.ndarray
    logits_bound: np.ndarray
    logits_expected: np.ndarray
    attention_bound: np.ndarray
    attention_expected: np.ndarray
    experts_bound: np.ndarray
    experts_expected: np.ndarray
    prompt_bound: float
    prompt_expected: float
    queries: float
    computed: float  # prompt tokens a prefill computes (S - S0)
    replicas: float  # attention replicas: tp under data-parallel attention, else 1
    #: the token-wise part's compute roof per token: its FLOPs at the device's peaks (no bytes, no links), the
    #: least time any step spends per token it carries however it is batched (FLOPs are linear in tokens)
    token_compute_bound: float
    #: pipeline stages (pp): the tables price a step through every stage in turn; under load the stages compute
    #: different micro-batches at once, so a throughput bound divides its device time by them
    stages: float
    #: the logits' compute roof per logit row (lm_head FLOPs at the device's peaks): every output token costs one
    #: row, every prompt one (its last token's)
    logit_compute_bound: float
    estimate: str  # calibrated | partial | default (roofline.estimate.step.step_label)
    calibration: str = "none"  # the table the expected times rest on (roofline.estimate.lookup.describe)

    def time(self, decode, prefill, side: str, group=None) -> np.ndarray:
        """t(D, P) on `side` (`bound` | `expected`); D, P (and `group`, for stacked tables) broadcast."""
        D, P = np.broadcast_arrays(np.asarray(decode, dtype=float), np.asarray(prefill, dtype=float))
        queries, computed = at(self.queries, group), at(self.computed, group)
        tokens, rows = D * queries + P, D * queries + P / computed
        t = lookup(getattr(self, f"tokenwise_{side}"), tokens, group)
        t = t + lookup(getattr(self, f"logits_{side}"), rows, group)
        t = t + np.where(D > 0, lookup(getattr(self, f"attention_{side}"), D, group), 0.0)
        return np.where(tokens > 0, t + P * at(getattr(self, f"prompt_{side}"), group), 0.0)


class StepPricer:
    """Prices steps of one model on one device under one scenario, exactly (no tables): the reference the tables
    are checked against, and the price of single steps (a lone prompt's bound)."""

    def __init__(self, model: ModelSpec, gpu: Accelerator, scenario: Scenario, framework: str = ""):
        self.model, self.gpu, self.scenario = model, gpu, scenario.for_model(model)
        self.framework = framework

    def price(self, mix: Mix, side: str = "bound") -> np.ndarray:
        D, L, P, S, S0, Q = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (
            mix.decode, mix.kv_len, mix.prefill, mix.prompt, mix.prefix, mix.queries)))
        expected = side == "expected"
        index = 1 if expected else 0
        tokens, rows = D * Q + P, D * Q + np.where(P > 0, P / np.maximum(S - S0, 1.0), 0.0)
        tokenwise = Pricing(self.model, self.scenario, "decode", 1.0, self.framework)
        t = _masked(_sum(self.gpu, [op for op in self._decode(np.maximum(tokens, 1), 1.0)
                                    if op.op_class != "attention" and op.name not in LOGIT_OPS], expected,
                         tokenwise)[index], tokens > 0)
        t = t + _masked(_sum(self.gpu, [op for op in self._decode(np.maximum(rows, 1), 1.0)
                                        if op.name in LOGIT_OPS], expected, tokenwise)[index], rows > 0)
        attention = Pricing(self.model, self.scenario, "decode", np.maximum(L, 1), self.framework)
        t = t + _masked(_sum(self.gpu, [_queries(op, Q) for op in self._decode(np.maximum(D, 1), np.maximum(L, 1))
                                        if op.op_class == "attention"], expected, attention)[index], D > 0)
        plan = self.scenario.parallel
        for length, cached in np.unique(np.stack([S[P > 0], S0[P > 0]], axis=-1).reshape(-1, 2), axis=0):  # few
            ops = uncached_attention(self.model, self.scenario, float(length), float(cached))
            prompt = Pricing(self.model, self.scenario, "prefill", float(length), self.framework)
            part = _sum(self.gpu, ops, expected, prompt)[index]
            share = P / np.maximum(length - cached, 1.0) / (plan.tp if plan.attention_dp else 1)
            t = t + np.where((S == length) & (S0 == cached) & (P > 0), share * part, 0.0)
        return t

    def _decode(self, batch, seq_len):
        return build_operators(self.model, "decode", self.scenario, batch=batch, seq_len=seq_len)


def _masked(values, active):
    return np.where(active, values, 0.0)


@lru_cache(maxsize=256)
def _prefill_ops(model: ModelSpec, scenario: Scenario, length: float) -> tuple[Op, ...]:
    return build_operators(model, "prefill", scenario, batch=1, seq_len=length)


def uncached_attention(model: ModelSpec, scenario: Scenario, length: float, cached: float) -> list[Op]:
    """The attention rows of one whole prompt of `length` tokens, each scaled to the share its `length - cached`
    uncached queries compute (prefix caching): their (query, key) pairs over all, by the row's pattern (causal,
    windowed, chunked, a sparse model's top-k core; the full S x S block of eager kernels and linear attention in
    proportion to the queries). The scaled rows keep their intensity."""
    ops = [op for op in _prefill_ops(model, scenario, length) if op.op_class == "attention"]
    if cached <= 0:
        return ops
    return [_scaled(op, _uncached_share(model, op, length, cached)) for op in ops]


def _scaled(op: Op, share: float) -> Op:
    """`op` with every FLOP and byte of its cost times `share`."""
    return op._replace(cost=op.cost._replace(**{kind: v * share for kind, v in op.cost._asdict().items()}))


def _uncached_share(model: ModelSpec, op: Op, S: float, S0: float) -> float:
    if op.name.startswith(("qk_matmul", "softmax", "sv_matmul")) or op.name in ("conv1d", "gated_delta_rule"):
        return (S - S0) / S
    if op.name.endswith("_chunked"):
        return 1 - f.chunked_causal_pairs(S0, model.attention_chunk) / f.chunked_causal_pairs(S, model.attention_chunk)
    window = row_window(model, op)
    return float(1 - f.causal_pairs(S0, window) / f.causal_pairs(S, window))


def _queries(op: Op, Q) -> Op:
    """A decode attention row with Q queries per sequence: FLOPs and query/output traffic x Q, keys read once."""
    c = op.cost
    return op._replace(cost=c._replace(flops=c.flops * Q, act_read=c.act_read * Q, act_write=c.act_write * Q))


def _sum(gpu: Accelerator, ops: list[Op], expected: bool = True, pricing: "Pricing | None" = None):
    """(bound, expected, core labels): count x time summed over `ops` (arrays of the ops' shape); the expected side
    from `pricing` (expected_times), never below the bound."""
    if not ops:
        return np.asarray(0.0), np.asarray(0.0), set()
    times = [op_times(gpu, op, gpu.peak(op.compute_dtype), op.cost.bytes, np.maximum)[3] for op in ops]
    counts = np.array([op.count for op in ops], dtype=float)
    shape = np.broadcast_shapes(*(np.shape(t) for t in times))
    bound = np.tensordot(counts, np.stack([np.broadcast_to(t, shape) for t in times]), axes=1)
    if not expected:
        return bound, bound, set()
    seconds, labels = expected_times(gpu, ops, shape, pricing)
    return bound, np.maximum(seconds, bound), labels


def _kernels(ops: list[Op], shape: tuple, pricing: "Pricing", framework: str) -> Kernels:
    """The stacked kernels of `ops` under `framework`, every cost broadcast to `shape` and flattened."""
    size = int(np.prod(shape, dtype=int))

    def pick(value):
        array = np.asarray(value, dtype=float)
        if array.shape == shape:  # most costs: already of the grid's shape (no broadcast, no copy)
            return array.reshape(size)
        return np.broadcast_to(array, shape).reshape(size)

    return Kernels(pricing.model, pricing.scenario, pricing.stage, ops, framework, pick=pick, seq_len=pricing.kv_len)


@dataclass(frozen=True)
class Pricing:
    """What the expected side of a part is priced with: the model and scenario its operators come from, the stage
    (which attention kernels), the cached tokens a decode attention reads per sequence, and the run's framework
    ("" = each device's own choice: roofline.estimate.calibration.framework_for)."""

    model: ModelSpec
    scenario: Scenario
    stage: str = "decode"
    kv_len: object = None
    framework: str = ""


def expected_times(gpu: Accelerator, ops: list[Op], shape: tuple, pricing: Pricing) -> tuple[np.ndarray, set[str]]:
    """(expected time [s] of the operators `ops` together at every point of `shape`, the labels of their core
    kernels): the estimator's (roofline.estimate.step.Kernels) under the device's calibration for the run's
    framework: the kernels as that framework runs them (its fusions, the time between two kernels), each looked up
    in the device's measured tables (the pooled fallback without them). The one place a step's expected time comes
    from."""
    calibration = calibration_for(gpu, pricing.framework)
    seconds, labels = _kernels(ops, shape, pricing, calibration.framework).kernel_time(calibration, gpu)
    return seconds.reshape(shape), labels
