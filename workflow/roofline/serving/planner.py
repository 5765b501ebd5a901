"""Deployment search (`roofline plan`): which device, how many, which parallel plan, precision, attention kernel
and batch give the most tokens/s per device while every user still sees the latency targets.

Serving model (stated once here; the README repeats it):

- A request has `isl` prompt tokens and `osl` output tokens. The deployment serves `batch` requests concurrently,
  in steady state: finished requests are replaced at once, so their progress is spread evenly and a decode step
  runs at the mean KV length `isl + osl // 2` (cached tokens per request; the step attends to one more).
- TPOT = the time of that decode step (engine totals, stage decode, seq_len = isl + osl // 2, batch = batch).
  tokens/s = batch / TPOT for the whole deployment; per device = tokens/s / devices; per user = 1 / TPOT.
- TTFT = the prefill of ONE request of `isl` tokens on the same deployment (engine totals, stage prefill, batch 1),
  i.e. no queueing and no batching of prompts.
- Fit: the decode step with every request holding its whole `isl + osl` tokens (stage decode at
  seq_len = isl + osl - 1, which writes the last token) and the one-request prefill must both fit the device memory
  (the engine's `fits`). Conservative: a batch whose requests all reach their end together still fits.
- Prefill and decode: by default (`prefill="separate"`) decode steps are not slowed by prompts: the prefills run
  on other devices (disaggregated serving; their cost is not counted here) or are negligible. With
  `prefill="interleaved"` the prompts run on the same devices, time-shared with decode and not fused with it: every
  decode step is due batch / osl prefills on average, so the mean time between a user's tokens becomes
  TPOT + (batch / osl) x TTFT and tokens/s = batch / that. Chunked prefill that fuses prompt chunks into the decode
  batch shares the weight reads and lands between the two.
- Two sets of times: the roofline bounds (ttft_s, tpot_s, tokens_per_s...) and the expected times of the same steps
  (their `_expected` twins: roofline.estimate, the device's measured kernels under its serving framework). The
  targets are checked and the candidates ranked on the expected times (`rank_on="expected"`, the default) or on the
  bounds (`rank_on="bound"`); every row carries both. `estimate`: calibrated | partial | default.

Candidates: device x parallel plan (roofline.engine.parallel: tp, pp, ep, data-parallel attention; devices = tp x pp <=
max_devices; every plan the engine accepts for the model and the device) x weight dtype x KV dtype x attention
kernel x batch. Every time, footprint and fit is the engine's (sharding and communication included). One engine
call evaluates every batch of a (device, plan, dtypes, kernel) group at once: build_operators accepts NumPy arrays,
and the expected times come in bulk too (roofline.serving.evaluate), so the search runs at well over 100,000
candidates per second.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..engine.analysis import operator_table
from ..engine.columns import PLAN_COLUMNS
from ..engine.dtypes import DTYPE_BYTES, check_storage_dtype
from ..engine.errors import RooflineInputError, unknown
from ..engine.graph import build_operators
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.roofline import dominant_bound
from ..engine.scenario import MAX_BATCH, MAX_SEQ_LEN, Scenario
from .candidates import DEFAULT_DTYPES, MIN_KV_BYTES, Group, candidate_groups
from .evaluate import RANK_ON, bounds, expected, expected_pass
from .hugepages import without_hugepage_advice
from .marks import mark_frontier

#: batch sizes searched (concurrent requests of the whole deployment): every batch from 1 to 256, every 16th to
#: 4096, every 64th to 16384 (fine where latency targets bind; wide for data-parallel attention over many devices)
BATCH_GRID = np.concatenate([np.arange(1, 257), np.arange(272, 4097, 16), np.arange(4160, 16385, 64)]).astype(float)
PREFILL_MODES = ("separate", "interleaved")


@dataclass(frozen=True)
class Workload:
    """The requests (isl prompt tokens, osl output tokens) and the latency targets [s] (None = no target)."""

    isl: int
    osl: int
    tpot_s: float | None = None
    ttft_s: float | None = None
    prefill: str = "separate"

    def validate(self) -> "Workload":
        for name in ("isl", "osl"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SEQ_LEN:
                raise RooflineInputError(f"{name}: {value!r} is not allowed; expected an integer from 1 to "
                                         f"{MAX_SEQ_LEN}")
        for name in ("tpot_s", "ttft_s"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise RooflineInputError(f"{name}: {value!r} is not allowed; expected a positive number of seconds")
        if self.prefill not in PREFILL_MODES:
            raise unknown("prefill", self.prefill, PREFILL_MODES)
        return self

    @property
    def decode_seq_len(self) -> int:
        """Tokens in the cache at the mean decode step of a request."""
        return self.isl + self.osl // 2

    @property
    def final_seq_len(self) -> int:
        """Tokens in the cache at the last decode step (the step writes the request's isl + osl-th token)."""
        return self.isl + self.osl - 1


def check_workload_context(model: ModelSpec, workload: Workload) -> None:
    """Refuse requests longer than the model's context: a request ends with isl + osl tokens in its cache."""
    tokens = workload.isl + workload.osl
    if model.max_position and tokens > model.max_position:
        raise RooflineInputError(
            f"isl + osl: {workload.isl} + {workload.osl} = {tokens} tokens do not fit the context of {model.key} "
            f"({model.max_position}, max_position); use a shorter isl or osl, or override max_position")


@dataclass
class Search:
    """Every candidate evaluated, column-wise (one entry per candidate), and how long it took."""

    model: ModelSpec
    workload: Workload
    groups: list[Group]
    group: np.ndarray  # index into groups
    batch: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray  # decode step time (the engine's tpot)
    step_s: np.ndarray  # mean time between a user's tokens (TPOT, plus prefills under prefill="interleaved")
    tokens_per_s: np.ndarray
    memory_bound_share: np.ndarray
    network_share: np.ndarray
    fits: np.ndarray
    footprint_bytes: np.ndarray
    seconds: float = 0.0  # wall-clock time of the search
    ttft_expected_s: np.ndarray | None = None  # expected twins (NaN where pruned: roofline.serving.evaluate)
    tpot_expected_s: np.ndarray | None = None
    step_expected_s: np.ndarray | None = None
    labels: list | None = None  # per group: (estimate, framework, calibration)
    rank_on: str = "bound"  # what meets() and frontier() use: "expected" or "bound"

    def __len__(self) -> int:
        return len(self.batch)

    def ranked(self, name: str) -> np.ndarray:
        """`ttft_s` or `step_s` as the search ranks them: the expected time when ranking on it, else the bound."""
        twin = {"ttft_s": self.ttft_expected_s, "step_s": self.step_expected_s}[name]
        return twin if self.rank_on == "expected" and twin is not None else getattr(self, name)

    @property
    def devices(self) -> np.ndarray:
        return np.array([g.devices for g in self.groups], dtype=float)[self.group]

    @property
    def tokens_per_s_per_device(self) -> np.ndarray:
        return self.tokens_per_s / self.devices

    @property
    def tokens_per_s_per_user(self) -> np.ndarray:
        return 1.0 / self.step_s

    def meets(self) -> np.ndarray:
        """Candidates that fit and meet both targets (on the ranked times; a pruned candidate never does)."""
        w = self.workload
        ok = self.fits & np.isfinite(self.ranked("step_s"))
        if w.tpot_s is not None:
            ok &= self.ranked("step_s") <= w.tpot_s
        if w.ttft_s is not None:
            ok &= self.ranked("ttft_s") <= w.ttft_s
        return ok


@without_hugepage_advice()
def search(model: ModelSpec, gpus: Sequence[Accelerator], workload: Workload, dtypes: Sequence[str] = DEFAULT_DTYPES,
           max_devices: int = 8, batches: Iterable[int] | None = None,
           memory_utilization: float = Scenario.memory_utilization, rank_on: str = "expected",
           framework: str = "", progress: Callable[[int, int], None] | None = None) -> Search:
    """Evaluate every candidate (see the module docstring); raises RooflineInputError when there is none.
    `framework`: the serving framework whose tables the devices use (roofline.estimate: each device's default
    where it has none of it, and a device's own `framework` first). `progress(done, total)` is called after each
    batch of groups (search_budget.Progress prints a line)."""
    workload.validate()
    if rank_on not in RANK_ON:
        raise unknown("rank_on", rank_on, RANK_ON)
    dtypes = tuple(dict.fromkeys(check_storage_dtype("dtypes", dtype) for dtype in dtypes))
    if not any(DTYPE_BYTES[dtype] >= MIN_KV_BYTES for dtype in dtypes):
        raise RooflineInputError(f"dtypes: {' '.join(dtypes)} has no dtype of 8 bits or more for the KV cache; add "
                                 "one (e.g. fp8 or fp16)")
    check_workload_context(model, workload)
    batches = BATCH_GRID if batches is None else np.asarray(sorted(set(batches)), dtype=float)
    if batches.size == 0 or batches[0] < 1 or batches[-1] > MAX_BATCH:
        raise RooflineInputError(f"batches: expected integers from 1 to {MAX_BATCH}")
    start = time.perf_counter()
    Scenario(memory_utilization=memory_utilization).validate()
    groups = candidate_groups(model, gpus, dtypes, max_devices, memory_utilization, framework)
    if not groups:
        raise RooflineInputError(f"gpus: none of {', '.join(g.key for g in gpus)} publishes a peak for any of the "
                                 f"dtypes {', '.join(dtypes)}; add a dtype it supports (e.g. bf16)")
    by_scenario: dict[Scenario, list[Group]] = {}
    for group in groups:  # same scenario (plan included), another device: the same operator graph
        by_scenario.setdefault(group.scenario, []).append(group)
    scenarios = list(by_scenario.values())
    groups = [g for same in scenarios for g in same]
    parts, done = [], 0
    for same in scenarios:
        parts.append(bounds(model, same, workload, batches))
        done += len(same)
        if progress is not None:
            progress(done, len(groups))
    columns = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    labels = None
    if rank_on == "expected":
        offsets = np.cumsum([0] + [len(same) * len(batches) for same in scenarios])[:-1]
        labels = expected_pass(model, scenarios, list(offsets), columns, workload, batches)
    return Search(model=model, workload=workload, groups=groups,
                  group=np.repeat(np.arange(len(groups)), len(batches)), batch=np.tile(batches, len(groups)),
                  seconds=time.perf_counter() - start, labels=labels, rank_on=rank_on, **columns)


#: above this many points pareto_front first drops those a grid of PRUNE_BINS x-bins shows beaten (the sort is
#: what costs: ~1.4 s for the 4.6 million served points of a small MoE model's default search)
PRUNE_ABOVE = 1 << 16
PRUNE_BINS = 4096


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both x and y (larger is better), in decreasing x.

    Sorted by x (ties: larger y first), a point is on the front when its y exceeds every y before it; of equal
    points the first in input order is kept.
    """
    index = _not_beaten_by_a_higher_bin(x, y) if len(x) > PRUNE_ABOVE else np.arange(len(x))
    order = index[np.lexsort((index, -y[index], -x[index]))]
    ys = y[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    return order[ys > best_before]


def fronts(ok: np.ndarray, x: np.ndarray, y: np.ndarray, keys: np.ndarray | None = None, order=()) -> np.ndarray:
    """`ok` (indices of the points x, y) on the Pareto front (pareto_front), best first; with `keys` (one per point),
    one front per key, in `order`."""
    if keys is None:
        return ok[pareto_front(x, y)]
    parts = [ok[mask][pareto_front(x[mask], y[mask])] for key in order for mask in [keys == key]]
    return np.concatenate(parts) if parts else ok[:0]


def _not_beaten_by_a_higher_bin(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points whose y is at least that of every point in a strictly higher bin of x (equal-width
    bins). Exact for pareto_front: a point dropped here is beaten (larger x, larger y) by one that is kept, or by one
    dropped in turn and so on up to a kept one, which precedes it and every point it would precede."""
    lo, hi = x.min(), x.max()
    if not (np.isfinite(x).all() and np.isfinite(y).all()) or not hi > lo:
        return np.arange(len(x))
    bins = np.minimum(((x - lo) / (hi - lo) * PRUNE_BINS).astype(np.int64), PRUNE_BINS - 1)
    best = np.full(PRUNE_BINS, -np.inf)
    np.maximum.at(best, bins, y)
    above = np.append(np.maximum.accumulate(best[::-1])[::-1][1:], -np.inf)  # best y of the bins above each
    return np.flatnonzero(y >= above[bins])


def frontier(result: Search, per_gpu: bool = False) -> np.ndarray:
    """Candidates that fit and meet the targets and lie on the Pareto front of tokens/s per device versus
    tokens/s per user, best (most tokens/s per device) first; `per_gpu`: one front per device, in device order."""
    ok = np.flatnonzero(result.meets())
    step = result.ranked("step_s")[ok]
    x, y = result.batch[ok] / step / result.devices[ok], 1.0 / step
    if not per_gpu:
        return fronts(ok, x, y)
    gpus = [g.gpu.key for g in result.groups]
    return fronts(ok, x, y, np.array(gpus)[result.group[ok]], dict.fromkeys(gpus))


def rows(result: Search, indices: Iterable[int]) -> list[dict]:
    """PLAN_COLUMNS records of the given candidates: the search's bounds and their expected twins (computed here
    for candidates the search pruned or did not rank on)."""
    indices = [int(i) for i in indices]
    fill_expected(result, indices)
    out = []
    w, per_device, per_user = result.workload, result.tokens_per_s_per_device, result.tokens_per_s_per_user
    for i in indices:
        g = result.groups[result.group[i]]
        sc = g.scenario
        batch = int(result.batch[i])
        step_expected = float(result.step_expected_s[i])
        estimate, framework, table = result.labels[result.group[i]]
        out.append({
            "model": result.model.key, "gpu": g.gpu.key, "devices": g.devices, "tp": g.plan.tp, "pp": g.plan.pp,
            "ep": g.plan.ep, "attention_dp": g.plan.attention_dp,
            "batch": batch, "weight_dtype": sc.weight_dtype, "act_dtype": sc.act_dtype,
            "kv_dtype": sc.kv_dtype, "attention": sc.attention, "isl": w.isl, "osl": w.osl,
            "seq_len": w.decode_seq_len, "ttft_s": float(result.ttft_s[i]), "tpot_s": float(result.step_s[i]),
            "decode_step_s": float(result.tpot_s[i]), "tokens_per_s": float(result.tokens_per_s[i]),
            "tokens_per_s_per_device": float(per_device[i]), "tokens_per_s_per_user": float(per_user[i]),
            "footprint_bytes": float(result.footprint_bytes[i]), "usable_memory_bytes": _usable(g),
            "fits": bool(result.fits[i]),
            "bound": dominant_bound(result.memory_bound_share[i], result.network_share[i]),
            "memory_bound_share": float(result.memory_bound_share[i]),
            "network_share": float(result.network_share[i]), "ttft_expected_s": float(result.ttft_expected_s[i]),
            "tpot_expected_s": step_expected, "tokens_per_s_expected": batch / step_expected,
            "tokens_per_s_per_device_expected": batch / step_expected / g.devices,
            "tokens_per_s_per_user_expected": 1.0 / step_expected, "estimate": estimate, "framework": framework,
            "calibration": table, "deployment": g.deployment(),
        })
    assert all(tuple(r) == PLAN_COLUMNS for r in out)
    return out


def fill_expected(result: Search, indices: list[int]) -> None:
    """Compute the expected times of the candidates `indices` whose search left them out (pruned, or ranked on
    the bound), group by group, in place."""
    if result.step_expected_s is None:
        n = len(result)
        result.ttft_expected_s, result.tpot_expected_s, result.step_expected_s = (np.full(n, np.nan) for _ in "abc")
    if result.labels is None:
        result.labels = [None] * len(result.groups)
    missing = [i for i in indices if not (np.isfinite(result.step_expected_s[i])
                                          and np.isfinite(result.ttft_expected_s[i]))]
    by_group: dict[int, list[int]] = {}
    for i in missing:
        by_group.setdefault(int(result.group[i]), []).append(i)
    w = result.workload
    for number, chosen in by_group.items():
        group, chosen = result.groups[number], np.array(chosen)
        batches = result.batch[chosen]
        seq = np.array([[w.decode_seq_len, w.final_seq_len]], dtype=float)
        ops = (build_operators(result.model, "prefill", group.scenario, batch=1, seq_len=w.isl),
               build_operators(result.model, "decode", group.scenario, batch=batches[:, None], seq_len=seq))
        bounds = {"ttft_s": result.ttft_s[chosen], "tpot_s": result.tpot_s[chosen]}
        found = expected(result.model, [group], w, batches, [np.arange(len(chosen))], [bounds], ops)[0]
        for name in ("ttft_expected_s", "tpot_expected_s", "step_expected_s"):
            getattr(result, name)[chosen] = found[name]
        result.labels[number] = found["labels"]


def _usable(group: Group) -> float:
    """Memory of one device the deployment may fill (the engine's usable_memory_bytes)."""
    return group.scenario.memory_utilization * group.gpu.memory_bytes


def _describe(result: Search, i: int) -> str:
    g = result.groups[result.group[i]]
    sc = g.scenario
    return (f"{g.deployment()} at batch {int(result.batch[i])}, {sc.weight_dtype} weights, {sc.kv_dtype} KV cache, "
            f"{sc.attention} attention, bound by {_roof(result, i)}")


def _roof(result: Search, i: int) -> str:
    """What bounds a candidate's decode step, in words: 'memory bandwidth', 'compute', or for the network the
    collective that takes longest and whether its link latency or its bandwidth dominates (from the engine's
    operator rows of that one candidate)."""
    bound = dominant_bound(result.memory_bound_share[i], result.network_share[i])
    if bound != "network":
        return "memory bandwidth" if bound == "memory" else "compute"
    g = result.groups[result.group[i]]
    sc = g.scenario.with_(batch=int(result.batch[i]), seq_len=result.workload.decode_seq_len)
    ops = [op for op in operator_table(result.model, g.gpu, "decode", sc) if op["op_class"] == "communication"]
    top = max(ops, key=lambda op: op["count"] * op["t_s"])
    transfer = top["bytes_network"] / top["network_bandwidth_bytes_per_s"]
    return f"the {top['op']} {'latency' if top['t_network_s'] - transfer > transfer else 'bandwidth'}"


def ms(seconds: float) -> str:
    """A time for a one-line reason, in milliseconds."""
    return f"{seconds * 1e3:.3g} ms"


def nearest_miss(among: np.ndarray, ttft, tpot, ttft_target: float | None) -> tuple[str, int, np.ndarray]:
    """Where the plans `among` (indices) come closest to the targets and still miss: ("ttft", the plan of lowest
    TTFT) when none meets the TTFT target, else ("tpot", the plan of lowest TPOT among those that do); and the
    plans that meet the TTFT target."""
    ttft_ok = among if ttft_target is None else among[ttft[among] <= ttft_target]
    if ttft_ok.size == 0:
        return "ttft", int(among[np.nanargmin(ttft[among])]), ttft_ok
    return "tpot", int(ttft_ok[np.nanargmin(tpot[ttft_ok])]), ttft_ok


def no_plan_reason(result: Search) -> str:
    """One line saying why no candidate fits and meets the targets (call when the frontier is empty): on the
    bounds when none meets them even there, else on the expected times."""
    w = result.workload
    fits = np.flatnonzero(result.fits)
    raced = fits[np.isfinite(result.ranked("step_s")[fits])] if result.rank_on == "expected" else fits[:0]
    if raced.size:
        return _expected_reason(result, raced)
    if fits.size == 0:
        i = int(np.argmin(result.footprint_bytes / np.array([_usable(g) for g in result.groups])[result.group]))
        usable = _usable(result.groups[result.group[i]])
        return (f"no plan fits in memory: the smallest footprint, {result.footprint_bytes[i] / 1e9:.4g} GB per device "
                f"for {w.isl} + {w.osl} tokens, is {_describe(result, i)}, on {usable / 1e9:.4g} GB usable")
    missed, i, ttft_ok = nearest_miss(fits, result.ttft_s, result.step_s, w.ttft_s)
    if missed == "ttft":
        return (f"no plan meets TTFT <= {ms(w.ttft_s)}: the lowest TTFT any plan that fits reaches is "
                f"{ms(result.ttft_s[i])}: {_describe(result, i)}")
    both = (f" among plans that meet TTFT <= {ms(w.ttft_s)}" if w.ttft_s is not None and ttft_ok.size < fits.size
            else "")
    return (f"no plan meets TPOT <= {ms(w.tpot_s)}: the lowest TPOT any plan that fits{both} reaches is "
            f"{ms(result.step_s[i])}: {_describe(result, i)}")


def _expected_reason(result: Search, raced: np.ndarray) -> str:
    """Why none of the candidates whose bounds meet the targets (`raced`) meets them in expectation."""
    w = result.workload
    ttft, step = result.ttft_expected_s, result.step_expected_s
    missed, i, _ = nearest_miss(raced, ttft, step, w.ttft_s)
    if missed == "ttft":
        return (f"no plan meets TTFT <= {ms(w.ttft_s)} in expectation: the lowest expected TTFT any plan that fits "
                f"reaches is {ms(ttft[i])} (bound {ms(result.ttft_s[i])}): {_describe(result, i)}")
    return (f"no plan meets TPOT <= {ms(w.tpot_s)} in expectation: the lowest expected TPOT any plan that fits "
            f"reaches is {ms(step[i])} (bound {ms(result.step_s[i])}): {_describe(result, i)}")


@dataclass(frozen=True)
class PlanSettings:
    """The optional `plan` section of config.yaml, resolved: the workload and targets, the candidate devices, the
    largest deployment and the dtypes to search."""

    workload: Workload
    gpus: tuple[Accelerator, ...]
    max_devices: int = 8
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    memory_utilization: float = Scenario.memory_utilization  # the config's scenario.memory_utilization
    rank_on: str = "expected"  # what the targets are checked and the plans ranked on: expected | bound
    # the plan section's framework, else the scenario's ("" = none named: each device's own tables in the step
    # model, roofline.serving.framework.DEFAULT_FRAMEWORK in the serving model)
    framework: str = ""
    # the serving model's search (roofline.serving.search) when `mode` is set; the dtypes lists default to dtypes
    mode: str | None = None
    weight_dtypes: tuple[str, ...] = ()
    kv_dtypes: tuple[str, ...] = ()
    attention_weight_dtype: str = ""  # the serving model's candidates' attention projections ("" = as the weights)
    fp8_scaling: str = "tensor"  # the serving model's candidates' fp8 weight scales (Scenario.fp8_scaling)

    @classmethod
    def from_params(cls, params: dict) -> "PlanSettings":
        """Rebuild from dataclasses.asdict(settings) (a Snakemake job's params)."""
        return cls(**{**params, "workload": Workload(**params["workload"]),
                      "gpus": tuple(Accelerator(**g) for g in params["gpus"]), "dtypes": tuple(params["dtypes"]),
                      **{name: tuple(params.get(name, ())) for name in ("weight_dtypes", "kv_dtypes")}})


def plan_table(model: ModelSpec, settings: PlanSettings) -> tuple[list[dict], str]:
    """(rows, reason) for results/plans/{model}.parquet: each device's Pareto frontier (PLAN_COLUMNS +
    PLAN_TABLE_EXTRA_COLUMNS), devices in the given order, best first within each; reason is "" unless no
    candidate fits and meets the targets."""
    result = search(model, settings.gpus, settings.workload, settings.dtypes, settings.max_devices,
                    memory_utilization=settings.memory_utilization, rank_on=settings.rank_on,
                    framework=settings.framework)
    overall = frontier(result)
    if overall.size == 0:
        return [], no_plan_reason(result)
    per_gpu = frontier(result, per_gpu=True)
    return mark_frontier(rows(result, per_gpu), per_gpu, overall, settings.rank_on), ""
