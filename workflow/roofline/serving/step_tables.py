"""Step tables (roofline.serving.steps.Parts) of many (scenario, device) pairs at once: the deployment search's.

A step's parts (steps module docstring; the experts' share of the token-wise part apart) are sums of seven
pieces, each priced once for every scenario it is identical in, and every device's expected times of one
calibration come from one batched lookup per curve (roofline.estimate.step.kernel_times), not one per (scenario,
part, device):

    tokenwise = core + experts + kv_write + stage;   logits;   attention;   prompt;   experts (again, alone)

* core: the token-wise operators other than the routed experts, the KV-cache write and the pipeline send (GEMMs,
  norms, element-wise, collectives, the router and shared experts); they
  depend on the KV dtype only through the 16-bit activation dtype it helps choose (graph.scenario_dtypes) and not on
  the attention kernel, so one table serves the (KV dtype, attention kernel) pairs of a weight dtype and plan (an
  engine invariant that tests/test_step_tables.py checks on every catalog model);
* experts: under data-parallel attention the routed experts' operators (steps.expert_op: one fused MoE kernel and
  the weighted combine of their rows), also a part of their own: the one token-wise work the ranks share, the rest
  each attention replica computes for its own tokens (the Stepper prices the busiest replica's share of a step's
  prompt tokens with it); empty without DP attention (the experts stay in the core: no step needs them apart);
* kv_write: the KV-cache write (its bytes follow the KV dtype, not the attention kernel);
* stage: the pipeline send between stages (none at pp 1), the one operator a pipeline adds to a step's rows (they
  count every stage's layers), so the other pieces of plans that differ only in pp share their kernel times;
* logits: lm_head and its all-gather, per sampled row (no KV dtype, no attention kernel either);
* attention: the decode attention at (D sequences, cached length, Q queries each);
* prompt: one whole prompt's attention (prefill graph), per computed token: each row scaled to the pairs its S - S0
  uncached queries attend (steps.uncached_attention), / (S - S0) (/ tp under data-parallel attention).

A part's bound is the sum of its pieces' bounds; its expected time the sum of their kernels' times, at least that
bound. Splitting the token-wise part changes no kernel (no fusion takes the pipeline send): the one fusion with
a KV-cache write (TensorRT-LLM's RoPE + KV-cache write + attention, estimate.step.FUSIONS) needs the attention
kernel, which is never in that part.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ..engine.analysis import devices_time
from ..engine.collectives import collective_kind
from ..engine.graph import Op, build_operators, scenario_dtypes
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from ..estimate.calibration import DEFAULT
from ..estimate.lookup import calibration_for
from ..estimate.step import Kernels, combine, kernel_times, step_label
from .steps import (
    LOGIT_OPS,
    Mix,
    Parts,
    Pricing,
    _kernels,
    _queries,
    expert_op,
    grid,
    physical,
    uncached_attention,
)

#: token-wise operators whose cost follows the KV dtype (the rest of the token-wise part does not)
KV_WRITE_OPS = ("kv_cache_write",)
#: token-wise operators a pipeline adds (the stage piece)
STAGE_OPS = ("pp_send",)
#: the pieces of each part (module docstring)
PARTS = {"tokenwise": ("core", "experts", "kv_write", "stage"), "logits": ("logits",), "attention": ("attention",),
         "experts": ("experts",), "prompt": ("prompt",)}
PIECES = tuple(dict.fromkeys(name for names in PARTS.values() for name in names))
#: tokens of the step the token-wise compute roof is read at (Parts.token_compute_bound): its FLOPs per token under
#: balanced routing are the same at any count (each expert group its mean share of the token-expert pairs), and a
#: power of two divides evenly among the attention-DP replicas; one count, whatever grid a caller's tables span, so
#: that `serve` and `plan` bound a deployment alike
COMPUTE_TOKENS = float(2 ** 20)


@dataclass(frozen=True)
class StepTables:
    """The step tables of many (scenario, device) pairs, stacked: row `rows[(scenario, device key)]` of every array
    of `parts` ([pairs, K] tables, [pairs] scalars) is that pair's; `labels[row]` its (estimate, calibration)."""

    parts: Parts
    rows: dict[tuple[Scenario, str], int]
    labels: list[tuple[str, str]]

    def of(self, scenario: Scenario, key: str) -> Parts:
        """One pair's Parts (views of its rows)."""
        row, p = self.rows[(scenario, key)], self.parts
        return Parts(*(getattr(p, name)[row] for name in ARRAYS), *(float(getattr(p, name)[row]) for name in SCALARS),
                     *self.labels[row])


#: the fields of Parts that are tables ([K] per pair) and numbers (one per pair)
ARRAYS = ("tokenwise_bound", "tokenwise_expected", "logits_bound", "logits_expected", "attention_bound",
          "attention_expected", "experts_bound", "experts_expected")
SCALARS = ("prompt_bound", "prompt_expected", "queries", "computed", "replicas", "token_compute_bound", "stages",
           "logit_compute_bound")


def tabulate(model: ModelSpec, gpus: list[Accelerator], scenario: Scenario, mix: Mix, tokens: float,
             sequences: float, expected: bool = True, framework: str = "") -> list[Parts]:
    """Parts of one scenario on each device of `gpus` (tabulate_many of one scenario)."""
    tables = tabulate_many(model, {scenario: gpus}, mix, tokens, sequences, expected, framework)
    return [tables.of(scenario, gpu.key) for gpu in gpus]


def tabulate_many(model: ModelSpec, jobs: dict[Scenario, list[Accelerator]], mix: Mix, tokens: float,
                  sequences: float, expected: bool = True, framework: str = "") -> StepTables:
    """The step tables of every scenario on its devices (`jobs`; rows in that order), under `framework`'s tables
    (the run's; "" = each device's choice). `mix` gives the workload (kv_len, prompt, prefix, queries); the grids
    reach `tokens` and `sequences`."""
    T, D = grid(tokens), grid(sequences)
    pieces = _Pieces(model, mix, T, D, framework)
    for scenario, gpus in jobs.items():
        for name in PIECES:
            pieces.want(name, scenario.for_model(model), gpus)
    priced = pieces.price(expected)
    pairs = [(scenario, gpu) for scenario, gpus in jobs.items() for gpu in gpus]
    S, S0 = float(mix.prompt), float(mix.prefix)
    widths = {"tokenwise": len(T), "logits": len(T), "attention": len(D), "experts": len(T)}
    arrays = {name: np.empty((len(pairs), widths[name.rsplit("_", 1)[0]])) for name in ARRAYS}
    scalars = {name: np.empty(len(pairs)) for name in SCALARS}
    scalars["queries"][:], scalars["computed"][:] = float(mix.queries), max(S - S0, 1.0)
    labels, row, ids, parts = [], 0, {key: n for n, key in enumerate(pieces.wanted)}, {}
    for scenario, gpus in jobs.items():
        resolved = scenario.for_model(model)
        replicas = resolved.parallel.tp if resolved.parallel.attention_dp else 1
        per_token = 1 / max(S - S0, 1.0) / replicas  # the prompt piece is the uncached queries' share already
        scalars["replicas"][row:row + len(gpus)] = replicas
        scalars["stages"][row:row + len(gpus)] = resolved.parallel.pp
        keys = {part: [pieces.key(name, resolved) for name in names] for part, names in PARTS.items()}
        members = {part: tuple(ids[key] for key in part_keys) for part, part_keys in keys.items()}
        for gpu in gpus:
            core = set()
            for part in PARTS:
                # a part is summed once per (pieces, device): scenarios that differ only in what its pieces leave
                # out share it (piece ids, not keys: keys hash whole scenarios)
                if (members[part], gpu.key) not in parts:
                    parts[(members[part], gpu.key)] = _part([priced[(key, gpu.key)] for key in keys[part]])
                bound, seconds, used = parts[(members[part], gpu.key)]
                core |= used
                if part == "prompt":
                    scalars["prompt_bound"][row] = bound * per_token
                    scalars["prompt_expected"][row] = seconds * per_token
                else:
                    arrays[f"{part}_bound"][row], arrays[f"{part}_expected"][row] = bound, seconds
            scalars["token_compute_bound"][row] = sum(pieces.compute[(key, gpu.key)] for key in keys["tokenwise"])
            scalars["logit_compute_bound"][row] = sum(pieces.compute[(key, gpu.key)] for key in keys["logits"])
            labels.append((step_label(core) if expected else DEFAULT,
                           calibration_for(gpu, framework).table if expected else "none"))
            row += 1
    if expected:
        _held_physical(arrays, T, D)
    stacked = Parts(*arrays.values(), *scalars.values(), combine(*(e for e, _ in labels)) if labels else DEFAULT,
                    "; ".join(dict.fromkeys(c for _, c in labels)))
    return StepTables(stacked, {(scenario, gpu.key): row for row, (scenario, gpu) in enumerate(pairs)}, labels)


def _held_physical(arrays: dict, T: np.ndarray, D: np.ndarray) -> None:
    """Each part's expected table held to a step's regularities (steps.physical: its time per token, row or sequence
    never growing with their number, and no step of fewer slower than one of more), never below its bound; in
    place."""
    for part, points in (("tokenwise", T), ("logits", T), ("attention", D), ("experts", T)):
        arrays[f"{part}_expected"] = np.maximum(physical(arrays[f"{part}_expected"], points), arrays[f"{part}_bound"])


def _part(pieces: list[tuple]) -> tuple:
    """(bound, expected, labels) of a part from its pieces' (bound, kernel time, labels): the expected time at
    least the bound."""
    bound = sum(p[0] for p in pieces)
    return bound, np.maximum(sum(p[1] for p in pieces), bound), set().union(*(p[2] for p in pieces))


class _Pieces:
    """The distinct pieces a set of scenarios needs, each with the devices it is wanted on, priced together."""

    def __init__(self, model: ModelSpec, mix: Mix, tokens: np.ndarray, sequences: np.ndarray, framework: str):
        self.model, self.mix, self.tokens, self.sequences, self.framework = model, mix, tokens, sequences, framework
        self.wanted: dict[tuple, tuple[Scenario, dict[str, Accelerator]]] = {}
        self._graph: tuple | None = None  # (scenario, its token-wise decode graph): the last one built
        self._balanced: dict = {}  # {scenario: its decode graph at COMPUTE_TOKENS, routing balanced}
        self.compute: dict[tuple, float] = {}  # {(token-wise piece key, device key): its compute roof per token}

    @staticmethod
    @lru_cache(maxsize=65536)
    def key(name: str, scenario: Scenario) -> tuple:
        """What a piece depends on: core and logits not on the KV dtype (beyond the 16-bit activation dtype it helps
        choose: graph.scenario_dtypes) or the attention kernel, kv_write not on the attention kernel; no piece but
        stage on the pipeline depth (a step's rows count every stage's layers), and none but core and experts on expert
        parallelism (attention heads split by tp whatever ep is; under DP attention ep = tp, so its plans differ in
        tp too). Cached: a search asks it of every device of every scenario."""
        parallel = scenario.parallel
        if name != "stage":
            parallel = replace(parallel, pp=1)
        if name not in ("core", "experts") and not parallel.attention_dp:
            parallel = replace(parallel, ep=1)
        scenario = replace(scenario, parallel=parallel)
        if name in ("core", "experts", "logits", "stage"):
            dtypes = scenario_dtypes(scenario)._replace(attention="")
            return name, replace(scenario, kv_dtype="", attention=""), dtypes
        return name, replace(scenario, attention="") if name == "kv_write" else scenario

    def want(self, name: str, scenario: Scenario, gpus: list[Accelerator]) -> None:
        _, devices = self.wanted.setdefault(self.key(name, scenario), (scenario, {}))
        devices.update((gpu.key, gpu) for gpu in gpus)

    def ops(self, name: str, scenario: Scenario, tokenwise: tuple[Op, ...] | None = None
            ) -> tuple[list[Op], str, object]:
        """(operators, stage, cached length) of one piece of `scenario` (a token-wise piece's from the graph
        `tokenwise`, if given: else the grid's)."""
        model, mix = self.model, self.mix
        if name == "prompt":
            length = float(mix.prompt)
            return uncached_attention(model, scenario, length, float(mix.prefix)), "prefill", length
        if name == "attention":
            ops = build_operators(model, "decode", scenario, batch=self.sequences, seq_len=float(mix.kv_len))
            ops = [_queries(op, float(mix.queries)) for op in ops if op.op_class == "attention"]
            return ops, "decode", float(mix.kv_len)
        ops = self._tokenwise(scenario) if tokenwise is None else tokenwise
        if name == "logits":
            return [op for op in ops if op.name in LOGIT_OPS], "decode", float(mix.kv_len)
        apart = scenario.parallel.attention_dp  # the experts a piece of their own (else in the core: none needs them)
        if name == "experts":
            return [op for op in ops if apart and expert_op(op.name)], "decode", float(mix.kv_len)
        if name != "core":  # kv_write, stage
            names = KV_WRITE_OPS if name == "kv_write" else STAGE_OPS
            return [op for op in ops if op.name in names], "decode", float(mix.kv_len)
        others = LOGIT_OPS + KV_WRITE_OPS + STAGE_OPS
        return [op for op in ops if op.op_class != "attention" and op.name not in others
                and not (apart and expert_op(op.name))], "decode", float(mix.kv_len)

    def _tokenwise(self, scenario: Scenario) -> tuple[Op, ...]:
        """The decode graph at every token count of the grid (the core, kv_write and logits pieces' operators),
        built once per scenario."""
        if self._graph is None or self._graph[0] != scenario:
            self._graph = scenario, build_operators(self.model, "decode", scenario, batch=self.tokens, seq_len=1.0)
        return self._graph[1]

    def _compute_roof(self, name: str, scenario: Scenario, gpus: list[Accelerator]) -> list[float]:
        """A token-wise piece's FLOPs per token at each device's peaks, from the decode graph at COMPUTE_TOKENS under
        balanced routing: a bound holds for the best routing a step could see (the busiest expert group at its mean
        share: formulas.expected_max_load's spread is an expectation, not a floor)."""
        if scenario not in self._balanced:
            balanced = replace(scenario, expert_routing="balanced")
            self._balanced[scenario] = build_operators(self.model, "decode", balanced, batch=COMPUTE_TOKENS,
                                                       seq_len=1.0)
        ops, _, _ = self.ops(name, scenario, self._balanced[scenario])
        return _compute_per_token(gpus, ops, np.array([COMPUTE_TOKENS]))

    def price(self, expected: bool) -> dict[tuple, tuple]:
        """{(piece key, device key): (bound, kernel time, core labels)}: bounds per piece for all its devices at
        once, kernel times batched per calibration."""
        out, jobs = {}, {}
        for key, (scenario, devices) in self.wanted.items():
            ops, stage, kv_len = self.ops(key[0], scenario)
            gpus = list(devices.values())
            for gpu, bound in zip(gpus, _bounds(gpus, ops)):
                out[(key, gpu.key)] = (bound, bound, set())
            if key[0] in PARTS["tokenwise"] + PARTS["logits"]:  # FLOPs no batching saves (a throughput bound's)
                for gpu, seconds in zip(gpus, self._compute_roof(key[0], scenario, gpus)):
                    self.compute[(key, gpu.key)] = seconds
            if not expected or not ops:
                continue
            shape = np.shape(out[(key, gpus[0].key)][0])
            kernels: dict[str, Kernels] = {}
            for gpu in gpus:
                calibration = calibration_for(gpu, self.framework)
                if calibration.framework not in kernels:
                    pricing = Pricing(self.model, scenario, stage, kv_len, self.framework)
                    kernels[calibration.framework] = _kernels(ops, shape, pricing, calibration.framework)
                group = (id(calibration.own), calibration.measured, calibration.gap_s, calibration.framework,
                         calibration.table)
                jobs.setdefault(group, (calibration, {}))[1].setdefault(
                    (key, calibration.framework), (kernels[calibration.framework], shape, []))[2].append(gpu)
        for calibration, batch in jobs.values():
            # one device: its kernels priced as they are (no candidate columns to gather)
            requests = [(kernels, gpus[0] if len(gpus) == 1 else [(gpu, np.arange(math.prod(shape))) for gpu in gpus])
                        for kernels, shape, gpus in batch.values()]
            for ((key, _), (_, shape, gpus)), (seconds, labels) in zip(batch.items(),
                                                                      kernel_times(calibration, requests)):
                size = math.prod(shape)
                for slot, gpu in enumerate(gpus):
                    bound = out[(key, gpu.key)][0]
                    out[(key, gpu.key)] = (bound, seconds[slot * size:(slot + 1) * size].reshape(shape), labels)
        return out


def _compute_per_token(gpus: list[Accelerator], ops: list[Op], tokens: np.ndarray) -> list[float]:
    """Per device: count x FLOPs at the device's peak for their dtype, per token, of token-wise operators priced on
    the `tokens` grid (their FLOPs are linear in the tokens: read at the last point). No bytes and no links: a
    fusion can save traffic, never FLOPs."""
    total = np.zeros(len(gpus))
    for op in ops:
        flops = np.broadcast_to(np.asarray(op.cost.flops, dtype=float), np.shape(tokens)).reshape(-1)[-1]
        total += op.count * devices_time(gpus, np.asarray(flops), np.asarray(0.0), np.asarray(0.0), op.compute_dtype,
                                         1, lambda values: values)
    return list(total / tokens[-1])


def _bounds(gpus: list[Accelerator], ops: list[Op]) -> list[np.ndarray]:
    """Per device: count x roofline bound summed over `ops` (engine.analysis.devices_time), every device at once."""
    if not ops:
        return [np.asarray(0.0) for _ in gpus]
    shape = np.broadcast_shapes(*(np.shape(c) for op in ops for c in (op.cost.flops, op.cost.bytes, op.cost.network)))
    lead = (len(gpus),) + (1,) * len(shape)
    total = np.zeros((len(gpus),) + shape)
    for op in ops:
        c = op.cost
        total += op.count * devices_time(gpus, np.asarray(c.flops, dtype=float), np.asarray(c.bytes, dtype=float),
                                         np.asarray(c.network, dtype=float), op.compute_dtype, op.span,
                                         lambda values: values.reshape(lead), collective_kind(op.name))
    return list(total)
