"""The deployment search on the serving model (`roofline plan --mode ...`): every candidate served, vectorized.

Candidates: device x parallel plan x weight dtype x KV dtype x attention kernel x concurrency (the batch of a candidate
is its closed-loop concurrency), and for disaggregated serving also the prefill pool's plan and the two pools' worker
counts. Every candidate at every concurrency its KV cache holds gets the served TTFT, TPOT and tokens/s of
roofline.serving (bounds and expected; the rest count as evaluated but get no row): the step tables of every
(scenario, device) are built together and stacked (roofline.serving.step_tables), and the closed loops run as array
programs over the points, a chunk at a time (roofline.serving.search_solve).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..engine.analysis import check_indexer_device, deployment_label
from ..engine.errors import RooflineInputError, unknown
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.parallel import Parallel
from ..engine.scenario import MAX_BATCH, Scenario
from ..estimate.calibration import DEFAULT
from ..estimate.step import combine
from . import aggregated as agg
from . import search_solve as solvers
from .candidates import layout_count, parallel_plans, pool_layouts, recipes, recipes_on
from .capacity import capacity
from .framework import DEFAULT_FRAMEWORK, framework_for, held_batch_wait
from .hugepages import without_hugepage_advice
from .planner import BATCH_GRID, fronts
from .search_budget import check_budget, search_seconds
from .speculative import Speculation, draft_model, draft_weight_bytes
from .step_tables import StepTables, tabulate_many
from .steps import Mix

SEARCH_MODES = ("aggregated", "disaggregated", "all")
#: concurrencies searched: the planner's batch grid
CONCURRENCY_GRID = BATCH_GRID
#: a frontier point whose tokens/s per device and per user gain less than this share over a smaller concurrency of the
#: same candidate, while its TTFT grows as its extra users' queue would, is left out (they only wait: _waiting_users)
SURPLUS_GAIN = 0.01
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
    dp_balance: tuple[int, int] | None = None  # TensorRT-LLM's attention-DP balancing (framework.Framework)
    length_spread: float = 0.0  # lengths uniform over +-length_spread around isl and osl (groups.lockstep)
    batch_wait: tuple[int, float] | None = None  # its batch waiting (framework.held_batch_wait: where it holds)


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
    """Every candidate evaluated; column-wise, the points served (candidate and concurrency of each, candidate by
    candidate): a concurrency the KV cache cannot hold has no row (`fits` is true throughout); len() counts them."""

    model: ModelSpec
    workload: ServedWorkload
    candidates: list[Candidate]
    candidate: np.ndarray
    concurrency: np.ndarray
    columns: dict[str, np.ndarray]
    seconds: float = 0.0
    #: per candidate: (estimate, calibration) of its step tables (roofline.serving.steps.Parts)
    labels: list[tuple[str, str]] = field(default_factory=list)
    #: configurations evaluated: every candidate x concurrency of the search space
    evaluated: int = 0
    #: per candidate: the serving framework it ran under (candidate_framework; empty: the workload's for all)
    frameworks: list[str] = field(default_factory=list)
    #: the memory share the frameworks' KV caches were sized with (None: each framework's own rule)
    memory_utilization: float | None = None

    def framework_of(self, candidate: int) -> str:
        """The framework candidate number `candidate` was evaluated under."""
        return self.frameworks[candidate] if self.frameworks else self.workload.framework

    def __len__(self) -> int:
        return self.evaluated

    def meets(self, side: str = "expected") -> np.ndarray:
        """Points that meet both targets (on the expected times, or on the bounds); every point fits."""
        w, c = self.workload, self.columns
        suffix = "_expected_s" if side == "expected" else "_s"
        ok = c["fits"].copy()
        if w.tpot_s is not None:
            ok &= c["tpot" + suffix] <= w.tpot_s
        if w.ttft_s is not None:
            ok &= c["ttft" + suffix] <= w.ttft_s
        return ok


def aggregated_candidates(model: ModelSpec, gpus: Sequence[Accelerator], scenarios: list[Scenario],
                          max_devices: int, memory_utilization: float | None = None) -> list[Candidate]:
    """Every (device, plan, recipe) the device can compute at and the engine accepts."""
    out = []
    for gpu in gpus:
        usable = recipes_on(gpu, scenarios)
        out += [Candidate(gpu, replace(sc, parallel=plan)) for plan in parallel_plans(model, gpu, max_devices)
                for sc in usable]
    return out


def disaggregated_candidates(model: ModelSpec, gpus: Sequence[Accelerator], scenarios: list[Scenario],
                             max_devices: int) -> list[Candidate]:
    """Every (device, recipe, prefill plan, decode plan, workers) whose pools fit `max_devices` devices and the
    device's links (the prefill pool hands each cache over to the decode pool: both within its reach)."""
    out = []
    for gpu in gpus:
        usable = recipes_on(gpu, scenarios)
        for prefill, decode, x, y in pool_layouts(parallel_plans(model, gpu, max_devices), gpu, max_devices):
            out += [Candidate(gpu, replace(sc, parallel=decode), prefill, x, y) for sc in usable]
    return out


def count_candidates(*args) -> int:
    """Candidates x concurrencies `search` would evaluate (counts_by_mode's arguments), counted without building
    or evaluating them: the budget check of roofline.serving.search_budget runs on this before the search."""
    return sum(counts_by_mode(*args))


def counts_by_mode(model: ModelSpec, gpus: Sequence[Accelerator], weight_dtypes: Sequence[str],
                   kv_dtypes: Sequence[str], max_devices: int | None, mode: str) -> tuple[int, int]:
    """count_candidates' (aggregated, disaggregated) parts: they evaluate at different rates (search_seconds)."""
    scenarios = recipes(weight_dtypes, kv_dtypes)
    aggregated = disaggregated = 0
    for gpu in gpus:
        usable = len(recipes_on(gpu, scenarios))
        if mode in ("aggregated", "all"):
            aggregated += len(parallel_plans(model, gpu, max_devices or 8)) * usable * len(CONCURRENCY_GRID)
        if mode in ("disaggregated", "all"):
            layouts = layout_count(parallel_plans(model, gpu, max_devices or 16), gpu, max_devices or 16)
            disaggregated += layouts * usable * len(DISAGGREGATED_GRID)
    return aggregated, disaggregated


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


@without_hugepage_advice()
def search(model: ModelSpec, gpus: Sequence[Accelerator], workload: ServedWorkload, weight_dtypes: Sequence[str],
           kv_dtypes: Sequence[str], max_devices: int | None = None, mode: str = "aggregated",
           concurrencies=None, memory_utilization: float | None = None,
           max_candidates: int | None = None, attention_weight_dtype: str = "",
           fp8_scaling: str = "tensor", progress: Callable[[int, int], object] | None = None) -> ServedSearch:
    """Serve every candidate (see the module docstring); raises RooflineInputError when there is none, or, before
    any work, when the candidates outnumber `max_candidates`. `progress(done, total)` hears the configurations
    evaluated as the solvers go (a long search's progress line: search_budget.Progress)."""
    start = time.perf_counter()
    grid = check_search(workload, mode, concurrencies)
    if max_candidates is not None:
        parts = counts_by_mode(model, gpus, weight_dtypes, kv_dtypes, max_devices, mode)
        check_budget(sum(parts), max_candidates, "plan", "lower --max-devices, give fewer --gpu or --dtypes, or raise "
                     "--max-candidates", search_seconds(*parts, speculative=bool(workload.spec.method)))
    workload.spec.validate(model)
    if model.max_position and workload.isl + workload.osl > model.max_position:
        raise RooflineInputError(f"isl + osl: {workload.isl} + {workload.osl} tokens do not fit the context of "
                                 f"{model.key} ({model.max_position} positions)")
    scenarios = recipes(weight_dtypes, kv_dtypes, attention_weight_dtype, fp8_scaling)
    parts = []  # (candidates, concurrency grid) per mode
    if mode in ("aggregated", "all"):
        parts.append((aggregated_candidates(model, gpus, scenarios, max_devices or 8), grid))
    if mode in ("disaggregated", "all"):
        parts.append((disaggregated_candidates(model, gpus, scenarios, max_devices or 16),
                      DISAGGREGATED_GRID if concurrencies is None else grid))
    # each candidate under its device's own framework first, else the workload's (the step model's rule,
    # roofline.estimate.calibration.framework_for): one evaluation per (mode, framework)
    groups = []
    for part, values in parts:
        by_framework: dict[str, list[Candidate]] = {}
        for c in part:
            by_framework.setdefault(candidate_framework(workload, c.gpu), []).append(c)
        groups += [(members, values, key) for key, members in by_framework.items()]
    candidates = [c for members, _, _ in groups for c in members]
    if not candidates:
        if len(gpus) == 1:
            check_indexer_device(model, gpus[0])  # where the device cannot run the model at all, its line says why
        unlinked = mode == "disaggregated" and all(gpu.reach < 2 for gpu in gpus)
        raise RooflineInputError(
            f"gpus: no candidate: none of {', '.join(g.key for g in gpus)} " + (
                "links to another device, and a disaggregated deployment hands each prompt's cache from one "
                "device to another (use --mode aggregated)" if unlinked else
                f"computes at the dtypes asked or holds {model.key} within the devices allowed"))
    index, concurrency, columns, labels, offset = [], [], [], [], 0
    sizes = [len(part) * len(values) for part, values, _ in groups]  # configurations of each evaluation
    for n, (part, values, key) in enumerate(groups):
        report = None if progress is None else (
            lambda share, done=sum(sizes[:n]), size=sizes[n]: progress(int(done + share * size), sum(sizes)))
        served, evaluated, label = evaluate(model, part, replace(workload, framework=key), values, memory_utilization,
                                            report)
        index.append(served[0] + offset)
        concurrency.append(served[1])
        columns.append(evaluated)
        labels += label
        offset += len(part)
    merged = columns[0] if len(columns) == 1 else {k: np.concatenate([c[k] for c in columns]) for k in columns[0]}
    return ServedSearch(model, workload, candidates, np.concatenate(index), np.concatenate(concurrency), merged,
                        time.perf_counter() - start, labels, sum(len(part) * len(values) for part, values in parts),
                        [key for members, _, key in groups for _ in members], memory_utilization)


def candidate_framework(workload: ServedWorkload, gpu: Accelerator) -> str:
    """The framework a candidate on `gpu` is served under: the device's own (its `gpus:` entry), else the
    workload's (--framework, the plan section's, the scenario's), else DEFAULT_FRAMEWORK."""
    return gpu.framework or workload.framework or DEFAULT_FRAMEWORK


def _tables(model: ModelSpec, candidates: list[Candidate], workload: ServedWorkload, largest: float,
            budget: float) -> dict[bool, StepTables]:
    """The stacked step tables of every (scenario, device) a candidate runs (decode pool and prefill pool): the
    target's (key False) and, when drafting, the draft's (key True, row for row)."""
    load = agg.Load(workload.isl, workload.osl, workload.prefix_hit, workload.spec.queries,
                    workload.spec.tokens_per_step)
    needed: dict[Scenario, dict[str, Accelerator]] = {}
    for c in candidates:
        needed.setdefault(c.scenario, {})[c.gpu.key] = c.gpu
        if c.prefill_plan is not None:
            needed.setdefault(replace(c.scenario, parallel=c.prefill_plan), {})[c.gpu.key] = c.gpu
    jobs = {scenario: list(gpus.values()) for scenario, gpus in needed.items()}
    tables = {}
    for drafted in (False, True) if draft_model(workload.spec, model) is not None else (False,):
        target = draft_model(workload.spec, model) if drafted else model
        mix = Mix(kv_len=load.mean_kv, prompt=float(load.isl), prefix=load.isl - load.computed,
                  queries=1.0 if drafted else float(load.queries))
        # the grids reach the largest step and a whole prompt computed at once (the TTFT bound)
        tables[drafted] = tabulate_many(target, jobs, mix, largest * load.queries + max(budget, load.computed),
                                        largest, framework=workload.framework or DEFAULT_FRAMEWORK)
    return tables


def evaluate(model: ModelSpec, candidates: list[Candidate], workload: ServedWorkload, grid: np.ndarray,
             memory_utilization: float | None, progress: Callable[[float], object] | None = None
             ) -> tuple[tuple[np.ndarray, np.ndarray], dict, list[tuple[str, str]]]:
    """((candidate, concurrency) of each point served, its columns, each candidate's (estimate, calibration)) of
    `candidates` of one mode. The points served are the candidates x concurrencies whose requests the KV cache
    holds, candidate by candidate."""
    spec, drafted = workload.spec, draft_model(workload.spec, model)
    load = agg.Load(workload.isl, workload.osl, workload.prefix_hit, spec.queries, spec.tokens_per_step,
                    workload.length_spread)
    frameworks = [framework_for(workload.framework, c.gpu, c.scenario.parallel.tp, memory_fraction=memory_utilization,
                                dp_balance=workload.dp_balance, spec_method=spec.method,
                                gpus=c.scenario.parallel.devices,
                                batch_wait=held_batch_wait(workload.batch_wait, c.mode, c.scenario.parallel))
                  for c in candidates]
    plans = [c.prefill_plan or c.scenario.parallel for c in candidates]  # the plan whose steps carry the prompts
    budget = np.array([f.step_budget(plan) for f, plan in zip(frameworks, plans)], dtype=float)
    caps = _capacities(model, candidates, frameworks, workload, drafted)
    running = np.array([c.running for c in caps])
    slots = running * np.array([max(c.decode_workers, 1) for c in candidates]) * _prefill_fits(
        model, candidates, frameworks, workload)
    # step tables only for the candidates that serve at least one request (most plans of a large model do not fit)
    tables = _tables(model, [c for c, n in zip(candidates, slots) if n >= grid[0]], workload, float(grid[-1]),
                     float(budget.max()))
    mode = candidates[0].mode  # search() evaluates one mode at a time
    index = np.array([i for i, n in enumerate(slots) if n >= grid[0]], dtype=int)
    rows, cols = np.nonzero(grid[None, :] <= slots[index][:, None])  # served: the cache holds them
    candidate, concurrency = index[rows], grid[cols]
    if rows.size:
        chunk = np.array([f.request_chunk(plan) for f, plan in zip(frameworks, plans)], dtype=float)
        at_points = solvers.Points(index, rows, concurrency, budget[index], running[index],
                                   np.array([caps[i].running_bound for i in index]), chunk[index], progress)
        solver = solvers.aggregated if mode == "aggregated" else solvers.disaggregated
        out = solver([candidates[i] for i in index], at_points, tables, load, frameworks[0], model, drafted, spec)
    else:
        out = {name: np.zeros(0) for name in solvers.SOLVED}
    out.setdefault("limited_by", np.broadcast_to(np.array("none", dtype=object), rows.size))  # read-only, no copy
    served = (candidate, concurrency)
    return served, _derived(out, candidates, served, slots, workload), [_labels(c, tables) for c in candidates]


def _labels(candidate: Candidate, tables: dict[bool, StepTables]) -> tuple[str, str]:
    """(estimate, calibration) of a candidate's step tables: its decode pool's, with its prefill pool's; (default,
    none) for a candidate that serves no request (it has no tables: no expected time is given)."""
    rows = tables[False].rows
    decode = rows.get((candidate.scenario, candidate.gpu.key))
    prefill = decode if candidate.prefill_plan is None else rows.get(
        (replace(candidate.scenario, parallel=candidate.prefill_plan), candidate.gpu.key))
    if decode is None or prefill is None:
        return DEFAULT, "none"
    labels = tables[False].labels
    return combine(labels[prefill][0], labels[decode][0]), labels[decode][1]


def _derived(out: dict, candidates: list[Candidate], served: tuple, slots: np.ndarray, workload) -> dict:
    """The columns that follow from the solved ones, at the points `served` (candidate, concurrency)."""
    candidate = served[0]
    devices = np.array([c.devices for c in candidates], dtype=float)[candidate]
    tokens = out.pop("requests_per_s")  # the bound's requests/s, never below the expected one: its tokens/s
    out["tokens_per_s"] = np.multiply(np.maximum(tokens, out["requests_per_s_expected"], out=tokens), workload.osl,
                                      out=tokens)
    out["tokens_per_s_expected"] = out["requests_per_s_expected"] * workload.osl
    out["tokens_per_s_per_device"] = out["tokens_per_s"] / devices
    out["tokens_per_s_per_device_expected"] = np.divide(out["tokens_per_s_expected"], devices, out=devices)
    out["tokens_per_s_per_user"] = 1 / out["tpot_s"]
    out["tokens_per_s_per_user_expected"] = 1 / out["tpot_expected_s"]
    out["kv_capacity_requests"] = slots.astype(float)[candidate]
    out["fits"] = np.ones(len(candidate), dtype=bool)
    return out


def _prefill_fits(model, candidates, frameworks, workload) -> np.ndarray:
    """1 where the candidate's prefill workers hold their weights and one prompt (always for aggregated)."""
    fits = {}
    for c, fw in zip(candidates, frameworks):
        if c.prefill_plan is not None and (c.prefill_plan, c.scenario, c.gpu.key) not in fits:
            scenario = replace(c.scenario, parallel=c.prefill_plan)
            fits[(c.prefill_plan, c.scenario, c.gpu.key)] = capacity(  # SGLang: the worker's own fraction
                model, c.gpu, scenario, fw.for_engine(c.gpu, c.prefill_plan), workload.isl, 1,
                workload.prefix_hit).running >= 1
    return np.array([fits.get((c.prefill_plan, c.scenario, c.gpu.key), True) for c in candidates], dtype=float)


def _capacities(model, candidates, frameworks, workload, drafted):
    cache = {}
    for c, fw in zip(candidates, frameworks):
        key = (c.scenario, c.gpu.key)
        if key not in cache:
            cache[key] = capacity(model, c.gpu, c.scenario, fw, workload.isl, workload.osl, workload.prefix_hit,
                                  draft_weight_bytes(workload.spec, c.scenario, model),
                                  (drafted, c.scenario) if drafted else None)
    return [cache[(c.scenario, c.gpu.key)] for c in candidates]


def frontier(result: ServedSearch, per_gpu: bool = False, side: str = "expected", per_mode: bool = False) -> np.ndarray:
    """Candidates that fit and meet the targets on the Pareto front of tokens/s per device against tokens/s per
    user (expected, or bounds with side="bound"), best first; `per_gpu`: one front per device, in device order;
    `per_mode` (--mode all): one front per mode, merged best first, so that each mode's best plans are there even
    where the other mode's beat them (an aggregated plan is not dropped for a disaggregated one)."""
    suffix = "_expected" if side == "expected" else ""
    meets = result.meets(side)
    ok = np.flatnonzero(meets & ~_waiting_users(result, meets, side))
    x = result.columns[f"tokens_per_s_per_device{suffix}"][ok]
    y = result.columns[f"tokens_per_s_per_user{suffix}"][ok]
    if per_mode:
        modes = np.array([c.mode for c in result.candidates])[result.candidate[ok]]
        merged = fronts(ok, x, y, modes, ("aggregated", "disaggregated"))
        return merged[np.argsort(-result.columns[f"tokens_per_s_per_device{suffix}"][merged], kind="stable")]
    if not per_gpu:
        return fronts(ok, x, y)
    gpus = [c.gpu.key for c in result.candidates]
    return fronts(ok, x, y, np.array(gpus)[result.candidate[ok]], dict.fromkeys(gpus))


def _waiting_users(result: ServedSearch, meets: np.ndarray, side: str) -> np.ndarray:
    """Which points only add waiting users: against the point before their run (below), both throughputs gain less
    than SURPLUS_GAIN while TTFT grows by at least half what the extra users would wait in a queue at the point's
    rate (Little: their number / requests per second). Past a pool's saturation more closed-loop users add to TTFT
    alone, and a front on the two throughputs would keep such points for a hair's gain. Points are stored candidate
    by candidate, concurrency ascending. A run is a stretch of points each of which passes the test against the
    point just before it; each point of a run is measured from the last point kept (at first the point before the
    run), so that small gains do not add up unseen, and a gain that does add up past SURPLUS_GAIN keeps its point
    and is measured from in turn (measured from the run's start alone, a slow plateau kept every point past its
    first 1%): the runs are walked together, one position per pass."""
    suffix = "_expected" if side == "expected" else ""
    x = result.columns[f"tokens_per_s_per_device{suffix}"]
    y = result.columns[f"tokens_per_s_per_user{suffix}"]
    ttft = result.columns["ttft_expected_s" if side == "expected" else "ttft_s"]
    rate = result.columns[f"tokens_per_s{suffix}"] / result.workload.osl  # requests/s
    users, candidate = result.concurrency, result.candidate

    def waits(point, before):
        with np.errstate(divide="ignore", invalid="ignore"):
            queued = ttft[point] - ttft[before] >= 0.5 * (users[point] - users[before]) / rate[point]
        return ((candidate[before] == candidate[point]) & meets[before] & queued
                & (x[point] <= (1 + SURPLUS_GAIN) * x[before]) & (y[point] <= (1 + SURPLUS_GAIN) * y[before]))

    waiting = np.zeros(len(candidate), dtype=bool)
    if len(candidate) < 2:
        return waiting
    points = np.arange(1, len(candidate))
    in_run = np.zeros(len(candidate), dtype=bool)
    in_run[1:] = waits(points, points - 1)
    starts = np.flatnonzero(in_run & ~np.roll(in_run, 1))
    ends = np.flatnonzero(in_run & ~np.roll(in_run, -1)) + 1
    anchor = starts - 1  # the last point kept before each run's current position
    for k in range(int((ends - starts).max(initial=0))):
        live = np.flatnonzero(starts + k < ends)
        point = starts[live] + k
        waiting[point] = waits(point, anchor[live])
        anchor[live] = np.where(waiting[point], anchor[live], point)
    return waiting
