"""The deployment search on the serving model (`roofline plan --mode ...`): every candidate served, vectorized.

Candidates: device x parallel plan x weight dtype x KV dtype x attention kernel x concurrency (the batch of a
candidate is its closed-loop concurrency), and for disaggregated serving also the prefill pool's plan and the two
pools' worker counts. Every candidate gets the served TTFT, TPOT and tokens/s of roofline.serving (bounds and
expected): the step parts of each (scenario, device) are tabulated once (roofline.serving.step_tables, graphs
shared by the devices of a scenario) and stacked, so the closed loop of every candidate runs as one array program.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..engine.analysis import check_device_dtypes, deployment_label
from ..engine.dtypes import DTYPE_BYTES, check_storage_dtype
from ..engine.errors import RooflineInputError, unknown
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.parallel import Parallel
from ..engine.scenario import ATTENTION_IMPLS, MAX_BATCH, Scenario
from ..estimate.calibration import DEFAULT
from ..estimate.step import combine
from . import aggregated as agg
from . import disaggregated as dis
from .candidates import MIN_KV_BYTES, activation_dtype, parallel_plans
from .capacity import capacity
from .framework import DEFAULT_FRAMEWORK, framework_for
from .planner import BATCH_GRID
from .search_budget import check_budget
from .speculative import Speculation, draft_model
from .step_tables import tabulate_many
from .steps import Mix, Parts

SEARCH_MODES = ("aggregated", "disaggregated", "all")
#: concurrencies searched: the planner's batch grid
CONCURRENCY_GRID = BATCH_GRID
#: worker counts searched per pool (disaggregated)
WORKER_COUNTS = (1, 2, 3, 4, 6, 8)
#: concurrencies searched for disaggregated pools: ~12% steps from 1 to the grid's largest. Their layouts (prefill
#: plan x decode plan x workers) are ~100x the aggregated plans, so the aggregated grid's one-by-one steps would make
#: a one-device DeepSeek-V3 search 51 M candidates; this grid keeps it at ~4 M with the frontier still resolved.
DISAGGREGATED_GRID = np.unique(np.round(np.geomspace(1, CONCURRENCY_GRID[-1], 81)))


@dataclass(frozen=True)
class ServedWorkload:
    """What the search serves: lengths, targets [s], prefix hit, speculation, framework."""

    isl: int
    osl: int
    tpot_s: float | None = None
    ttft_s: float | None = None
    prefix_hit: float = 0.0
    spec: Speculation = field(default_factory=Speculation)
    framework: str = ""  # "" = DEFAULT_FRAMEWORK: the scheduler, host time and kernel tables of every candidate


@dataclass(frozen=True)
class Candidate:
    """Candidates that differ only in concurrency: device, scenario (the decode pool's plan), and for
    disaggregated serving the prefill plan and worker counts (prefill_workers 0 = aggregated)."""

    gpu: Accelerator
    scenario: Scenario
    prefill_plan: Parallel | None = None
    prefill_workers: int = 0
    decode_workers: int = 0

    @property
    def mode(self) -> str:
        return "disaggregated" if self.prefill_workers else "aggregated"

    @property
    def devices(self) -> int:
        plan = self.scenario.parallel
        if not self.prefill_workers:
            return plan.devices
        return self.prefill_workers * self.prefill_plan.devices + self.decode_workers * plan.devices

    def deployment(self) -> str:
        decode = deployment_label(self.gpu, self.scenario.parallel)
        if not self.prefill_workers:
            return decode
        return (f"prefill: {self.prefill_workers} x ({deployment_label(self.gpu, self.prefill_plan)}); "
                f"decode: {self.decode_workers} x ({decode})")


@dataclass
class ServedSearch:
    """Every candidate evaluated, column-wise: candidate index x concurrency, flattened."""

    model: ModelSpec
    workload: ServedWorkload
    candidates: list[Candidate]
    candidate: np.ndarray
    concurrency: np.ndarray
    columns: dict[str, np.ndarray]
    seconds: float = 0.0
    #: per candidate: (estimate, calibration) of its step tables (roofline.serving.steps.Parts)
    labels: list[tuple[str, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.concurrency)

    def meets(self, side: str = "expected") -> np.ndarray:
        """Candidates that fit and meet both targets (on the expected times, or on the bounds)."""
        w, c = self.workload, self.columns
        suffix = "_expected_s" if side == "expected" else "_s"
        ok = c["fits"].copy()
        if w.tpot_s is not None:
            ok &= c["tpot" + suffix] <= w.tpot_s
        if w.ttft_s is not None:
            ok &= c["ttft" + suffix] <= w.ttft_s
        return ok


def recipes(weight_dtypes: Sequence[str], kv_dtypes: Sequence[str]) -> list[Scenario]:
    """Scenarios of every (weight dtype, KV dtype, attention kernel): activations as the serving recipe."""
    weights = tuple(dict.fromkeys(check_storage_dtype("--weight-dtypes", d) for d in weight_dtypes))
    kvs = tuple(dict.fromkeys(check_storage_dtype("--kv-dtypes", d) for d in kv_dtypes))
    kvs = tuple(kv for kv in kvs if DTYPE_BYTES[kv] >= MIN_KV_BYTES)
    if not weights or not kvs:
        raise RooflineInputError("--kv-dtypes: no dtype of 8 bits or more for the KV cache; add one (e.g. fp8)")
    return [Scenario(weight_dtype=w, act_dtype=activation_dtype(w), kv_dtype=kv, attention=attention)
            for w in weights for kv in kvs for attention in ATTENTION_IMPLS]


def aggregated_candidates(model: ModelSpec, gpus: Sequence[Accelerator], scenarios: list[Scenario],
                          max_devices: int, memory_utilization: float | None = None) -> list[Candidate]:
    """Every (device, plan, recipe) the device can compute at and the engine accepts."""
    out = []
    for gpu in gpus:
        usable = [sc for sc in scenarios if _computes(gpu, sc)]
        out += [Candidate(gpu, replace(sc, parallel=plan)) for plan in parallel_plans(model, gpu, max_devices)
                for sc in usable]
    return out


def _computes(gpu: Accelerator, scenario: Scenario) -> bool:
    try:
        check_device_dtypes(gpu, scenario)
    except RooflineInputError:
        return False  # the device publishes no peak for this recipe: not a candidate
    return True


def disaggregated_candidates(model: ModelSpec, gpus: Sequence[Accelerator], scenarios: list[Scenario],
                             max_devices: int) -> list[Candidate]:
    """Every (device, recipe, prefill plan, decode plan, workers) whose pools fit `max_devices` devices."""
    out = []
    for gpu in gpus:
        usable = [sc for sc in scenarios if _computes(gpu, sc)]
        for prefill, decode, x, y in _pool_layouts(parallel_plans(model, gpu, max_devices), max_devices):
            out += [Candidate(gpu, replace(sc, parallel=decode), prefill, x, y) for sc in usable]
    return out


def _pool_layouts(plans: list[Parallel], max_devices: int):
    """(prefill plan, decode plan, prefill workers, decode workers) of every layout within `max_devices`."""
    for prefill in plans:
        for decode in plans:
            for x in WORKER_COUNTS:
                for y in WORKER_COUNTS:
                    if x * prefill.devices + y * decode.devices <= max_devices:
                        yield prefill, decode, x, y


def count_candidates(model: ModelSpec, gpus: Sequence[Accelerator], weight_dtypes: Sequence[str],
                     kv_dtypes: Sequence[str], max_devices: int | None, mode: str) -> int:
    """Candidates x concurrencies `search` would evaluate, counted without building or evaluating them (the
    budget check of roofline.serving.search_budget runs on this before the search)."""
    scenarios = recipes(weight_dtypes, kv_dtypes)
    count = 0
    for gpu in gpus:
        usable = sum(_computes(gpu, sc) for sc in scenarios)
        if mode in ("aggregated", "all"):
            count += len(parallel_plans(model, gpu, max_devices or 8)) * usable * len(CONCURRENCY_GRID)
        if mode in ("disaggregated", "all"):
            layouts = _layout_count(parallel_plans(model, gpu, max_devices or 16), max_devices or 16)
            count += layouts * usable * len(DISAGGREGATED_GRID)
    return count


def _layout_count(plans: list[Parallel], max_devices: int) -> int:
    """How many layouts _pool_layouts yields: pairs of pool loads (workers x devices of a plan), one per pool,
    that add up to at most `max_devices` (sorted loads and one binary search each, not a loop over the pairs)."""
    loads = np.sort(np.outer(WORKER_COUNTS, [plan.devices for plan in plans]).ravel())
    return int(np.searchsorted(loads, max_devices - loads, side="right").sum())


def check_search(workload: ServedWorkload, mode: str, concurrencies) -> np.ndarray:
    if mode not in SEARCH_MODES:
        raise unknown("--mode", mode, SEARCH_MODES)
    values = CONCURRENCY_GRID if concurrencies is None else np.asarray(sorted(set(concurrencies)), dtype=float)
    if values.size == 0 or values[0] < 1 or values[-1] > MAX_BATCH:
        raise RooflineInputError(f"concurrencies: expected integers from 1 to {MAX_BATCH}")
    if not 0 <= workload.prefix_hit < 1:
        raise RooflineInputError(f"--prefix-hit: {workload.prefix_hit!r} is not allowed; expected a share from 0 "
                                 "to below 1")
    return values


def search(model: ModelSpec, gpus: Sequence[Accelerator], workload: ServedWorkload, weight_dtypes: Sequence[str],
           kv_dtypes: Sequence[str], max_devices: int | None = None, mode: str = "aggregated",
           concurrencies=None, memory_utilization: float | None = None,
           max_candidates: int | None = None) -> ServedSearch:
    """Serve every candidate (see the module docstring); raises RooflineInputError when there is none, or, before
    any work, when the candidates outnumber `max_candidates`."""
    start = time.perf_counter()
    grid = check_search(workload, mode, concurrencies)
    if max_candidates is not None:
        check_budget(count_candidates(model, gpus, weight_dtypes, kv_dtypes, max_devices, mode), max_candidates,
                     "plan", "lower --max-devices, give fewer --gpu or --dtypes, or raise "
                     "--max-candidates")
    workload.spec.validate(model)
    if model.max_position and workload.isl + workload.osl > model.max_position:
        raise RooflineInputError(f"isl + osl: {workload.isl} + {workload.osl} tokens do not fit the context of "
                                 f"{model.key} ({model.max_position} positions)")
    scenarios = recipes(weight_dtypes, kv_dtypes)
    parts = []  # (candidates, concurrency grid) per mode
    if mode in ("aggregated", "all"):
        parts.append((aggregated_candidates(model, gpus, scenarios, max_devices or 8), grid))
    if mode in ("disaggregated", "all"):
        parts.append((disaggregated_candidates(model, gpus, scenarios, max_devices or 16),
                      DISAGGREGATED_GRID if concurrencies is None else grid))
    candidates = [c for part, _ in parts for c in part]
    if not candidates:
        raise RooflineInputError(f"gpus: no candidate: none of {', '.join(g.key for g in gpus)} computes at the "
                                 f"dtypes asked or holds {model.key} within the devices allowed")
    index, concurrency, columns, labels, offset = [], [], [], [], 0
    for part, values in parts:
        if part:
            evaluated, label = evaluate(model, part, workload, values, memory_utilization)
            index.append(np.repeat(np.arange(offset, offset + len(part)), len(values)))
            concurrency.append(np.tile(values, len(part)))
            columns.append({k: v.ravel() for k, v in evaluated.items()})
            labels += label
        offset += len(part)
    merged = {k: np.concatenate([c[k] for c in columns]) for k in columns[0]}
    return ServedSearch(model, workload, candidates, np.concatenate(index), np.concatenate(concurrency), merged,
                        time.perf_counter() - start, labels)


def _tables(model: ModelSpec, candidates: list[Candidate], workload: ServedWorkload, largest: float,
            budget: float) -> dict:
    """{(scenario, gpu key, draft): Parts} for every scenario a candidate runs (decode pool and prefill pool),
    one graph build per scenario shared by its devices."""
    load = agg.Load(workload.isl, workload.osl, workload.prefix_hit, workload.spec.queries,
                    workload.spec.tokens_per_step)
    needed: dict[tuple, dict[str, Accelerator]] = {}
    for c in candidates:
        needed.setdefault((c.scenario, False), {})[c.gpu.key] = c.gpu
        if c.prefill_plan is not None:
            needed.setdefault((replace(c.scenario, parallel=c.prefill_plan), False), {})[c.gpu.key] = c.gpu
    if draft_model(workload.spec, model) is not None:
        needed.update({(sc, True): gpus for (sc, _), gpus in list(needed.items())})
    tables = {}
    framework = workload.framework or DEFAULT_FRAMEWORK
    for drafted in dict.fromkeys(d for _, d in needed):
        target = draft_model(workload.spec, model) if drafted else model
        mix = Mix(kv_len=load.mean_kv, prompt=float(load.isl), prefix=load.isl - load.computed,
                  queries=1.0 if drafted else float(load.queries))
        jobs = {scenario: list(gpus.values()) for (scenario, d), gpus in needed.items() if d == drafted}
        parts = tabulate_many(target, jobs, mix, largest * load.queries + budget, largest, framework=framework)
        tables.update({(scenario, key, drafted): value for (scenario, key), value in parts.items()})
    return tables


def evaluate(model: ModelSpec, candidates: list[Candidate], workload: ServedWorkload, grid: np.ndarray,
             memory_utilization: float | None) -> tuple[dict[str, np.ndarray], list[tuple[str, str]]]:
    """(columns, labels): served columns of every candidate x concurrency ([candidates, concurrencies] arrays), and
    each candidate's (estimate, calibration). Only candidates whose concurrency the cache holds are served (the rest:
    fits False, NaN times)."""
    spec, drafted = workload.spec, draft_model(workload.spec, model)
    load = agg.Load(workload.isl, workload.osl, workload.prefix_hit, spec.queries, spec.tokens_per_step)
    frameworks = [framework_for(workload.framework, c.gpu, c.scenario.parallel.tp, memory_fraction=memory_utilization)
                  for c in candidates]
    budget = np.array([f.max_batched_tokens for f in frameworks], dtype=float)
    caps = _capacities(model, candidates, frameworks, workload, drafted)
    running = np.array([c.running for c in caps])
    slots = running * np.array([max(c.decode_workers, 1) for c in candidates]) * _prefill_fits(
        model, candidates, frameworks, workload)
    # step tables only for the candidates that serve at least one request (most plans of a large model do not fit)
    tables = _tables(model, [c for c, n in zip(candidates, slots) if n >= grid[0]], workload, float(grid[-1]),
                     float(budget.max()))
    shape = (len(candidates), len(grid))
    out = {name: np.full(shape, np.nan) for name in SOLVED}
    out["limited_by"] = np.full(shape, "none", dtype=object)
    for mode in ("aggregated", "disaggregated"):
        index = np.array([i for i, c in enumerate(candidates) if c.mode == mode and slots[i] >= grid[0]], dtype=int)
        rows, cols = np.nonzero(grid[None, :] <= slots[index][:, None])  # served: the cache holds them
        if rows.size:
            at_points = Points(index, rows, grid[cols], budget[index][rows], running[index][rows],
                               np.array([caps[i].running_bound for i in index])[rows])
            solver = _aggregated if mode == "aggregated" else _disaggregated
            values = solver([candidates[i] for i in index], at_points, tables, load, frameworks[0], model, drafted,
                            spec)
            for name, value in values.items():
                out[name][index[rows], cols] = value
    return _derived(out, candidates, grid, slots, workload), [_labels(c, tables) for c in candidates]


def _labels(candidate: Candidate, tables: dict) -> tuple[str, str]:
    """(estimate, calibration) of a candidate's step tables: its decode pool's, with its prefill pool's; (default,
    none) for a candidate that serves no request (it has no tables: no expected time is given)."""
    decode = tables.get((candidate.scenario, candidate.gpu.key, False))
    prefill = decode if candidate.prefill_plan is None else tables.get(
        (replace(candidate.scenario, parallel=candidate.prefill_plan), candidate.gpu.key, False))
    if decode is None or prefill is None:
        return DEFAULT, "none"
    return combine(prefill.estimate, decode.estimate), decode.calibration


#: points the solvers take at a time: enough to amortize each array operation, few enough to keep them in cache
CHUNK = 1 << 14
#: columns the solvers fill (per served candidate)
SOLVED = ("ttft_s", "tpot_s", "ttft_expected_s", "tpot_expected_s", "requests_per_s", "requests_per_s_expected",
          "decode_batch_expected", "kv_transfer_s")


@dataclass(frozen=True)
class Points:
    """The served candidates of one mode, flat: each point's row in the mode's stack, concurrency, budget and
    cache capacity (expected and bound)."""

    index: np.ndarray  # candidate index of each row of the stack
    rows: np.ndarray
    concurrency: np.ndarray
    budget: np.ndarray
    running: np.ndarray
    running_bound: np.ndarray

    def chunks(self):
        """The points CHUNK at a time (the temporaries of a chunk stay in cache)."""
        for start in range(0, len(self.rows), CHUNK):
            part = slice(start, start + CHUNK)
            yield Points(self.index, self.rows[part], self.concurrency[part], self.budget[part], self.running[part],
                         self.running_bound[part])


def _solve(points: Points, solve) -> dict:
    """solve(chunk) of every chunk of `points`, the columns joined."""
    solved = [solve(chunk) for chunk in points.chunks()]
    return {name: np.concatenate([part[name] for part in solved]) for name in solved[0]}


def _derived(out: dict, candidates: list[Candidate], grid: np.ndarray, slots: np.ndarray, workload) -> dict:
    devices = np.array([c.devices for c in candidates], dtype=float)[:, None]
    out["tokens_per_s"] = np.maximum(out.pop("requests_per_s"), out["requests_per_s_expected"]) * workload.osl
    out["tokens_per_s_expected"] = out["requests_per_s_expected"] * workload.osl
    out["tokens_per_s_per_device"] = out["tokens_per_s"] / devices
    out["tokens_per_s_per_device_expected"] = out["tokens_per_s_expected"] / devices
    out["tokens_per_s_per_user"] = 1 / out["tpot_s"]
    out["tokens_per_s_per_user_expected"] = 1 / out["tpot_expected_s"]
    out["kv_capacity_requests"] = slots[:, None] + 0 * grid
    out["fits"] = grid[None, :] <= slots[:, None]
    return out


def _stepper(selected, tables, fw, drafted, spec, prefill: bool = False) -> agg.Stepper:
    """The stacked steps of the candidates `selected` (read at points: Stepper.at_points)."""
    scenarios = [replace(c.scenario, parallel=c.prefill_plan) if prefill else c.scenario for c in selected]
    return agg.Stepper(
        target=Parts.stack([tables[(sc, c.gpu.key, False)] for sc, c in zip(scenarios, selected)]),
        mixed=fw.mixed and not prefill, passes=spec.tokens if drafted else 0, host_s=fw.step_overhead_s,
        draft=Parts.stack([tables[(sc, c.gpu.key, True)] for sc, c in zip(scenarios, selected)]) if drafted else None)


def _prefill_fits(model, candidates, frameworks, workload) -> np.ndarray:
    """1 where the candidate's prefill workers hold their weights and one prompt (always for aggregated)."""
    fits = {}
    for c, fw in zip(candidates, frameworks):
        if c.prefill_plan is not None and (c.prefill_plan, c.scenario, c.gpu.key) not in fits:
            scenario = replace(c.scenario, parallel=c.prefill_plan)
            fits[(c.prefill_plan, c.scenario, c.gpu.key)] = capacity(
                model, c.gpu, scenario, fw, workload.isl, 1, workload.prefix_hit).running >= 1
    return np.array([fits.get((c.prefill_plan, c.scenario, c.gpu.key), True) for c in candidates], dtype=float)


def _capacities(model, candidates, frameworks, workload, drafted):
    cache = {}
    for c, fw in zip(candidates, frameworks):
        key = (c.scenario, c.gpu.key)
        if key not in cache:
            cache[key] = capacity(model, c.gpu, c.scenario, fw, workload.isl, workload.osl, workload.prefix_hit,
                                  draft=(drafted, c.scenario) if drafted else None)
    return [cache[(c.scenario, c.gpu.key)] for c in candidates]


def _aggregated(selected, points: Points, tables, load, fw, model, drafted, spec) -> dict:
    stacked = _stepper(selected, tables, fw, drafted, spec)
    scheduler = agg.Scheduler(budget=0.0, mixed=fw.mixed, step_overhead_s=fw.step_overhead_s,
                              request_overhead_s=fw.request_overhead_s, sync=fw.sync)

    def solve(at: Points) -> dict:
        steps, N = stacked.at_points(at.rows), at.concurrency
        expected = agg.closed_loop(steps, load, replace(scheduler, budget=at.budget), N, at.running, "expected")
        return {"ttft_s": steps.lone_prompt + 0 * N,
                "tpot_s": np.minimum(steps.light(expected["decode"], "bound") / load.tokens_per_step,
                                     expected["tpot"]),
                "ttft_expected_s": expected["ttft"], "tpot_expected_s": expected["tpot"],
                "requests_per_s": agg.throughput_bound(steps, load, np.minimum(N, at.running_bound)),
                "requests_per_s_expected": expected["requests_per_s"],
                "decode_batch_expected": expected["decode"], "kv_transfer_s": 0 * N}
    return _solve(points, solve)


def _disaggregated(selected, points: Points, tables, load, fw, model, drafted, spec) -> dict:
    prefills = _stepper(selected, tables, fw, drafted, spec, prefill=True)
    decodes = _stepper(selected, tables, fw, drafted, spec)
    shapes = [dis.Pools(c.prefill_workers, c.decode_workers, c.prefill_plan.devices, c.scenario.parallel.devices)
              for c in selected]
    layouts = [np.array(v, dtype=float) for v in zip(*(
        (p.prefill_workers, p.decode_workers, p.prefill_devices, p.decode_devices) for p in shapes))]
    transfers = np.array([dis.transfer_seconds(model, c.scenario, c.gpu, load, p) for c, p in zip(selected, shapes)])

    def solve(at: Points) -> dict:
        prefill, decode = prefills.at_points(at.rows), decodes.at_points(at.rows)
        pools, transfer, N = dis.Pools(*(v[at.rows] for v in layouts)), transfers[at.rows], at.concurrency
        expected = dis.solve(prefill, decode, load, pools, at.budget, transfer, N, True, at.running, "expected",
                             fw.request_overhead_s + fw.handoff_s)
        per_worker = np.minimum(N / pools.decode_workers, at.running_bound)
        return {"ttft_s": np.maximum(prefill.lone(load.computed), transfer),
                "tpot_s": np.minimum(decode.light(expected["decode"], "bound") / load.tokens_per_step,
                                     expected["tpot"]),
                "ttft_expected_s": expected["ttft"], "tpot_expected_s": expected["tpot"],
                "requests_per_s": pools.decode_workers * agg.throughput_bound(decode, load, per_worker),
                "requests_per_s_expected": expected["requests_per_s"],
                "decode_batch_expected": expected["decode"], "kv_transfer_s": transfer,
                "limited_by": np.where(expected["prefill_utilization"] >= expected["decode_utilization"], "prefill",
                                       "decode")}
    return _solve(points, solve)


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both x and y (larger is better), in decreasing x."""
    order = np.lexsort((np.arange(len(x)), -y, -x))
    ys = y[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    return order[ys > best_before]


def frontier(result: ServedSearch, per_gpu: bool = False, side: str = "expected") -> np.ndarray:
    """Candidates that fit and meet the targets on the Pareto front of tokens/s per device against tokens/s per
    user (expected, or bounds with side="bound"), best first; `per_gpu`: one front per device, in device order."""
    suffix = "_expected" if side == "expected" else ""
    ok = np.flatnonzero(result.meets(side))
    x = result.columns[f"tokens_per_s_per_device{suffix}"][ok]
    y = result.columns[f"tokens_per_s_per_user{suffix}"][ok]
    if not per_gpu:
        return ok[pareto_front(x, y)]
    keys = np.array([c.gpu.key for c in result.candidates])[result.candidate[ok]]
    fronts = [ok[mask][pareto_front(x[mask], y[mask])]
              for key in dict.fromkeys(c.gpu.key for c in result.candidates) for mask in [keys == key]]
    return np.concatenate(fronts) if fronts else ok[:0]
