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
- Times are roofline lower bounds (`estimate` = "bound") until a calibration exists for a device.

Candidates: device x parallel plan (roofline.engine.parallel: tp, pp, ep, data-parallel attention; devices = tp x pp <=
max_devices; every plan the engine accepts for the model and the device) x weight dtype x KV dtype x attention
kernel x batch. Every time, footprint and fit is the engine's (sharding and communication included). One engine
call evaluates every batch of a (device, plan, dtypes, kernel) group at once: build_operators accepts NumPy arrays,
so the search runs at hundreds of thousands of candidates per second.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..engine.analysis import aggregate, check_device_dtypes, deployment_label, operator_table
from ..engine.columns import PLAN_COLUMNS
from ..engine.dtypes import DTYPE_BYTES, check_storage_dtype
from ..engine.errors import RooflineInputError, unknown
from ..engine.graph import build_operators
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.parallel import Parallel, check_plan
from ..engine.roofline import dominant_bound
from ..engine.scenario import ATTENTION_IMPLS, MAX_BATCH, MAX_SEQ_LEN, Scenario
from ..estimate.expected import analyze

#: batch sizes searched (concurrent requests of the whole deployment): every batch from 1 to 256, every 16th to
#: 4096, every 64th to 16384 (fine where latency targets bind; wide for data-parallel attention over many devices)
BATCH_GRID = np.concatenate([np.arange(1, 257), np.arange(272, 4097, 16), np.arange(4160, 16385, 64)]).astype(float)
#: weight (and KV cache) dtypes searched by default
DEFAULT_DTYPES = ("fp16", "fp8", "int8", "int4")
#: KV caches narrower than 8 bits are left out of the search (rare in serving engines: accuracy)
MIN_KV_BYTES = 1.0
PREFILL_MODES = ("separate", "interleaved")
#: a row's `estimate`: its expected times are calibrated on the device's own measurements, or only the bound is
#: backed (the expected times then come from other devices' measurements: the engine's `default`)
ESTIMATE_CALIBRATED, ESTIMATE_BOUND = "calibrated", "bound"


def activation_dtype(weight_dtype: str) -> str:
    """The activation dtype of the serving recipe for a weight dtype: floats of 8 bits or more keep their own type
    (FP8 is served W8A8, computing at the fp8 peak); integer weights are weight-only quantization (W8A16, W4A16)."""
    return weight_dtype if weight_dtype in ("fp32", "fp16", "bf16", "fp8") else "fp16"


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


@dataclass(frozen=True)
class Group:
    """Candidates that differ only in batch: one device and one scenario (dtypes, kernel, parallel plan)."""

    gpu: Accelerator
    scenario: Scenario

    @property
    def plan(self) -> Parallel:
        return self.scenario.parallel

    @property
    def devices(self) -> int:
        return self.plan.devices

    def deployment(self) -> str:
        return deployment_label(self.gpu, self.plan)


#: tensor-parallel degrees, pipeline depths and expert-parallel degrees searched: powers of two, as deployed
POWERS_OF_TWO = tuple(2**i for i in range(13))


def parallel_plans(model: ModelSpec, gpu: Accelerator, max_devices: int) -> list[Parallel]:
    """Every plan of at most `max_devices` devices (tp x pp) that the engine accepts for this model and device
    (roofline.engine.parallel.check_plan: heads, layers, experts, scale-up domain and network): tp and pp powers of two;
    for MoE models also ep (a power of two dividing tp) and data-parallel attention (ep = tp)."""
    plans = []
    for tp in (n for n in POWERS_OF_TWO if n <= max_devices):
        for pp in (n for n in POWERS_OF_TWO if tp * n <= max_devices):
            eps = [n for n in POWERS_OF_TWO if n <= tp and tp % n == 0] if model.is_moe else [1]
            for ep in eps:
                for attention_dp in ((False, True) if model.is_moe and ep == tp > 1 else (False,)):
                    plan = Parallel(tp=tp, pp=pp, ep=ep, attention_dp=attention_dp)
                    try:
                        check_plan(model, gpu, plan.validate())
                    except RooflineInputError:
                        continue  # the model or the device cannot run it: not a candidate
                    plans.append(plan)
    return plans


def candidate_groups(model: ModelSpec, gpus: Sequence[Accelerator], dtypes: Sequence[str], max_devices: int,
                     memory_utilization: float = Scenario.memory_utilization) -> list[Group]:
    """Every (device, plan, weight dtype, KV dtype, attention) the device can compute at and the engine accepts."""
    recipes = [Scenario(weight_dtype=w, act_dtype=activation_dtype(w), kv_dtype=kv, attention=attention,
                        memory_utilization=memory_utilization)
               for w in dtypes for kv in dtypes if DTYPE_BYTES[kv] >= MIN_KV_BYTES for attention in ATTENTION_IMPLS]
    groups = []
    for gpu in gpus:
        usable = []
        for sc in recipes:
            try:
                check_device_dtypes(gpu, sc)
            except RooflineInputError:
                continue  # the device publishes no peak for this recipe: not a candidate
            usable.append(sc)
        groups += [Group(gpu, replace(sc, parallel=plan)) for plan in parallel_plans(model, gpu, max_devices)
                   for sc in usable]
    return groups


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

    def __len__(self) -> int:
        return len(self.batch)

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
        """Candidates that fit and meet both targets."""
        w = self.workload
        ok = self.fits.copy()
        if w.tpot_s is not None:
            ok &= self.step_s <= w.tpot_s
        if w.ttft_s is not None:
            ok &= self.ttft_s <= w.ttft_s
        return ok


def _evaluate(model: ModelSpec, groups: Sequence[Group], workload: Workload, batches: np.ndarray) -> dict:
    """Engine totals of every batch of groups that share one scenario and plan (they differ in device only):
    the operator graphs (device-independent) are built once, decode at the mean and the final KV length as one
    array, and the one-request prefill; then the roofline of each device."""
    sc = groups[0].scenario
    seq = np.array([[workload.decode_seq_len, workload.final_seq_len]], dtype=float)
    B = batches[:, None]
    prefill_ops = build_operators(model, "prefill", sc, batch=1, seq_len=workload.isl)
    decode_ops = build_operators(model, "decode", sc, batch=B, seq_len=seq)
    parts = []
    for group in groups:
        prefill = aggregate(model, group.gpu, "prefill", sc, prefill_ops, 1, workload.isl)
        decode = aggregate(model, group.gpu, "decode", sc, decode_ops, B, seq)
        ttft, tpot = float(prefill["t_s"]), decode["t_s"][:, 0]
        step = tpot + (batches / workload.osl) * ttft if workload.prefill == "interleaved" else tpot
        parts.append({
            "ttft_s": np.full(len(batches), ttft), "tpot_s": tpot, "step_s": step, "tokens_per_s": batches / step,
            "memory_bound_share": decode["memory_bound_share"][:, 0], "network_share": decode["network_share"][:, 0],
            "fits": decode["fits"][:, 1] & bool(prefill["fits"]), "footprint_bytes": decode["footprint_bytes"][:, 1],
        })
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def search(model: ModelSpec, gpus: Sequence[Accelerator], workload: Workload, dtypes: Sequence[str] = DEFAULT_DTYPES,
           max_devices: int = 8, batches: Iterable[int] | None = None,
           memory_utilization: float = Scenario.memory_utilization,
           progress: Callable[[int, int], None] | None = None) -> Search:
    """Evaluate every candidate (see the module docstring); raises RooflineInputError when there is none.
    `progress(done, total)` is called after each batch of groups (search_budget.Progress prints a line)."""
    workload.validate()
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
    groups = candidate_groups(model, gpus, dtypes, max_devices, memory_utilization)
    if not groups:
        raise RooflineInputError(f"gpus: none of {', '.join(g.key for g in gpus)} publishes a peak for any of the "
                                 f"dtypes {', '.join(dtypes)}; add a dtype it supports (e.g. bf16)")
    by_scenario: dict[Scenario, list[Group]] = {}
    for group in groups:  # same scenario (plan included), another device: the same operator graph
        by_scenario.setdefault(group.scenario, []).append(group)
    groups = [g for same in by_scenario.values() for g in same]
    parts, done = [], 0
    for same in by_scenario.values():
        parts.append(_evaluate(model, same, workload, batches))
        done += len(same)
        if progress is not None:
            progress(done, len(groups))
    columns = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    return Search(model=model, workload=workload, groups=groups,
                  group=np.repeat(np.arange(len(groups)), len(batches)), batch=np.tile(batches, len(groups)),
                  seconds=time.perf_counter() - start, **columns)


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both x and y (larger is better), in decreasing x.

    Sorted by x (ties: larger y first), a point is on the front when its y exceeds every y before it; of equal
    points the first in input order is kept.
    """
    order = np.lexsort((np.arange(len(x)), -y, -x))
    ys = y[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    return order[ys > best_before]


def frontier(result: Search, per_gpu: bool = False) -> np.ndarray:
    """Candidates that fit and meet the targets and lie on the Pareto front of tokens/s per device versus
    tokens/s per user, best (most tokens/s per device) first; `per_gpu`: one front per device, in device order."""
    ok = np.flatnonzero(result.meets())
    x, y = result.tokens_per_s_per_device[ok], result.tokens_per_s_per_user[ok]
    if not per_gpu:
        return ok[pareto_front(x, y)]
    gpu_keys = np.array([g.gpu.key for g in result.groups])[result.group[ok]]
    fronts = [ok[mask][pareto_front(x[mask], y[mask])]
              for key in dict.fromkeys(g.gpu.key for g in result.groups) for mask in [gpu_keys == key]]
    return np.concatenate(fronts) if fronts else ok[:0]


def rows(result: Search, indices: Iterable[int]) -> list[dict]:
    """PLAN_COLUMNS records of the given candidates: the search's bounds, and the engine's calibrated estimates of
    the same decode step and prefill (roofline.estimate.calibration, through analysis.analyze)."""
    out = []
    w, per_device, per_user = result.workload, result.tokens_per_s_per_device, result.tokens_per_s_per_user
    prefills: dict[int, dict] = {}  # one prefill per group
    for i in indices:
        g = result.groups[result.group[i]]
        sc = g.scenario
        batch = int(result.batch[i])
        if result.group[i] not in prefills:
            prefills[result.group[i]] = analyze(result.model, g.gpu, "prefill", sc.with_(batch=1, seq_len=w.isl))[1]
        prefill = prefills[result.group[i]]
        decode = analyze(result.model, g.gpu, "decode", sc.with_(batch=batch, seq_len=w.decode_seq_len))[1]
        ttft_expected = prefill["ttft_expected_s"]
        tpot_expected = decode["tpot_expected_s"] + (batch / w.osl * ttft_expected if w.prefill == "interleaved"
                                                     else 0.0)
        calibrated = decode["estimate"] == prefill["estimate"] == "calibrated"
        out.append({
            "model": result.model.key, "gpu": g.gpu.key, "devices": g.devices, "tp": g.plan.tp, "pp": g.plan.pp,
            "ep": g.plan.ep, "attention_dp": g.plan.attention_dp,
            "batch": int(result.batch[i]), "weight_dtype": sc.weight_dtype, "act_dtype": sc.act_dtype,
            "kv_dtype": sc.kv_dtype, "attention": sc.attention, "isl": w.isl, "osl": w.osl,
            "seq_len": w.decode_seq_len, "ttft_s": float(result.ttft_s[i]), "tpot_s": float(result.step_s[i]),
            "decode_step_s": float(result.tpot_s[i]), "tokens_per_s": float(result.tokens_per_s[i]),
            "tokens_per_s_per_device": float(per_device[i]), "tokens_per_s_per_user": float(per_user[i]),
            "footprint_bytes": float(result.footprint_bytes[i]), "usable_memory_bytes": _usable(g),
            "fits": bool(result.fits[i]),
            "bound": dominant_bound(result.memory_bound_share[i], result.network_share[i]),
            "memory_bound_share": float(result.memory_bound_share[i]),
            "network_share": float(result.network_share[i]), "ttft_expected_s": ttft_expected,
            "tpot_expected_s": tpot_expected, "tokens_per_s_per_device_expected": batch / tpot_expected / g.devices,
            "estimate": ESTIMATE_CALIBRATED if calibrated else ESTIMATE_BOUND, "deployment": g.deployment(),
        })
    assert all(tuple(r) == PLAN_COLUMNS for r in out)
    return out


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


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def no_plan_reason(result: Search) -> str:
    """One line saying why no candidate fits and meets the targets (call when the frontier is empty)."""
    w = result.workload
    fits = np.flatnonzero(result.fits)
    if fits.size == 0:
        i = int(np.argmin(result.footprint_bytes / np.array([_usable(g) for g in result.groups])[result.group]))
        usable = _usable(result.groups[result.group[i]])
        return (f"no plan fits in memory: the smallest footprint, {result.footprint_bytes[i] / 1e9:.4g} GB per device "
                f"for {w.isl} + {w.osl} tokens, is {_describe(result, i)}, on {usable / 1e9:.4g} GB usable")
    ttft_ok = fits if w.ttft_s is None else fits[result.ttft_s[fits] <= w.ttft_s]
    if ttft_ok.size == 0:
        i = fits[np.argmin(result.ttft_s[fits])]
        return (f"no plan meets TTFT <= {_ms(w.ttft_s)}: the lowest TTFT any plan that fits reaches is "
                f"{_ms(result.ttft_s[i])}: {_describe(result, i)}")
    i = ttft_ok[np.argmin(result.step_s[ttft_ok])]
    both = (f" among plans that meet TTFT <= {_ms(w.ttft_s)}" if w.ttft_s is not None and ttft_ok.size < fits.size
            else "")
    return (f"no plan meets TPOT <= {_ms(w.tpot_s)}: the lowest TPOT any plan that fits{both} reaches is "
            f"{_ms(result.step_s[i])}: {_describe(result, i)}")


@dataclass(frozen=True)
class PlanSettings:
    """The optional `plan` section of config.yaml, resolved: the workload and targets, the candidate devices, the
    largest deployment and the dtypes to search."""

    workload: Workload
    gpus: tuple[Accelerator, ...]
    max_devices: int = 8
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    memory_utilization: float = Scenario.memory_utilization  # the config's scenario.memory_utilization
    # the serving model's search (roofline.serving.search) when `mode` is set; the dtypes lists default to dtypes
    mode: str | None = None
    weight_dtypes: tuple[str, ...] = ()
    kv_dtypes: tuple[str, ...] = ()
    framework: str = "vllm"

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
                    memory_utilization=settings.memory_utilization)
    overall = frontier(result)
    if overall.size == 0:
        return [], no_plan_reason(result)
    per_gpu = frontier(result, per_gpu=True)
    on_frontier = set(overall.tolist())
    out, seen = [], set()
    for i, row in zip(per_gpu, rows(result, per_gpu)):
        out.append({**row, "on_frontier": int(i) in on_frontier, "recommended": row["gpu"] not in seen,
                    "chosen": int(i) == int(overall[0])})
        seen.add(row["gpu"])
    return out, ""
