"""One deployment and one workload in, one served row out (`roofline serve`, `roofline.serve(...)`).

Aggregated mode (roofline.serving.aggregated) or disaggregated (roofline.serving.disaggregated); both price steps
with roofline.serving.steps, size the cache with roofline.serving.capacity and draft with
roofline.serving.speculative. Each row gives the bounds beside the expected values (SERVE_COLUMNS).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..engine.analysis import AUTO_PP, AUTO_TP, deployment_label, prepare
from ..engine.columns import SERVE_COLUMNS
from ..engine.errors import RooflineInputError
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.parallel import MAX_DEVICES, Parallel, check_plan
from ..engine.scenario import MAX_BATCH, MAX_SEQ_LEN, Scenario
from ..estimate.step import combine
from . import aggregated as agg
from . import disaggregated as dis
from . import groups
from .capacity import capacity, footprint_share, room_lacking
from .framework import DEFAULT_FRAMEWORK, Framework, balance_label, batch_wait_label, framework_for, held_batch_wait
from .refusals import check_capacity, check_kv_served, check_reserve, memory_settings
from .speculative import Speculation, draft_model, draft_weight_bytes
from .step_tables import tabulate
from .steps import Mix, Parts
from .sustained import saturated_scheduler, sustained

MODES = ("aggregated", "disaggregated")
#: what a concurrency the KV cache cannot hold does: an error, or the excess users wait for a slot
OVERFLOWS = ("refuse", "queue")


@dataclass(frozen=True)
class Workload:
    """Served requests: lengths, and either a closed-loop concurrency or an open-loop request rate [1/s]."""

    isl: int
    osl: int
    concurrency: int | None = None
    request_rate: float | None = None
    prefix_hit: float = 0.0
    length_spread: float = 0.0  # lengths uniform over +-length_spread around isl and osl (groups.lockstep)

    def validate(self, waves: float = 0.0) -> "Workload":
        """Refuse (one line) what no served run has; `waves` (--benchmark-waves) is a closed-loop benchmark's."""
        for name in ("isl", "osl"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SEQ_LEN:
                raise RooflineInputError(f"--{name}: {value!r} is not allowed; expected an integer from 1 to "
                                         f"{MAX_SEQ_LEN}")
        if (self.concurrency is None) == (self.request_rate is None):
            raise RooflineInputError("--concurrency / --request-rate: give exactly one (closed-loop users, or "
                                     "requests per second)")
        if self.concurrency is not None and (isinstance(self.concurrency, bool) or not isinstance(
                self.concurrency, int) or not 1 <= self.concurrency <= MAX_BATCH):
            raise RooflineInputError(f"--concurrency: {self.concurrency!r} is not allowed; expected an integer from "
                                     f"1 to {MAX_BATCH}")
        if self.request_rate is not None and not (self.request_rate > 0 and math.isfinite(self.request_rate)):
            raise RooflineInputError(f"--request-rate: {self.request_rate!r} is not allowed; expected a positive "
                                     "number of requests per second")
        if waves and not 1 <= waves < math.inf:
            raise RooflineInputError(f"--benchmark-waves: {waves!r} is not allowed; expected a number of waves of "
                                     "--concurrency requests from 1 (the first wave alone) up, or leave it out for "
                                     "the steady state")
        if waves and self.request_rate is not None:
            raise RooflineInputError("--benchmark-waves: times a closed-loop benchmark's first wave of --concurrency "
                                     "requests sent at once; an open loop (--request-rate) has no waves: drop it")
        if not 0 <= self.prefix_hit < 1:
            raise RooflineInputError(f"--prefix-hit: {self.prefix_hit!r} is not allowed; expected a share from 0 to "
                                     "below 1 of the prompt tokens found in the prefix cache")
        if not 0 <= self.length_spread < 1:
            raise RooflineInputError(f"--length-spread: {self.length_spread!r} is not allowed; expected a share from "
                                     "0 to below 1 (lengths uniform over isl and osl x (1 +- it))")
        return self

    def load(self, spec: Speculation) -> agg.Load:
        return agg.Load(isl=self.isl, osl=self.osl, prefix_hit=self.prefix_hit, queries=spec.queries,
                        tokens_per_step=spec.tokens_per_step, spread=self.length_spread)


@dataclass(frozen=True)
class Served:
    """A deployment ready to price: model, device, resolved scenario, framework, speculation."""

    model: ModelSpec
    gpu: Accelerator
    scenario: Scenario
    framework: Framework
    spec: Speculation

    @property
    def plan(self) -> Parallel:
        return self.scenario.parallel

    def parts(self, load: agg.Load, sequences: float, scenario: Scenario | None = None, draft: bool = False):
        """The step parts of the target (or of its draft, one query per pass) for this workload."""
        model = draft_model(self.spec, self.model) if draft else self.model
        mix = Mix(kv_len=load.mean_kv, prompt=float(load.isl), prefix=load.isl - load.computed,
                  queries=1.0 if draft else float(load.queries))
        # the grid reaches a whole prompt computed at once (the TTFT bound) and the largest step
        tokens = sequences * load.queries + max(self.framework.step_budget((scenario or self.scenario).parallel),
                                                load.computed)
        return _parts(model, self.gpu, scenario or self.scenario, mix, tokens, sequences, self.framework.key)

    def stepper(self, load: agg.Load, sequences: float, scenario: Scenario | None = None) -> agg.Stepper:
        drafted = draft_model(self.spec, self.model) is not None
        return agg.Stepper(target=self.parts(load, sequences, scenario), mixed=self.framework.mixed,
                           draft=self.parts(load, sequences, scenario, draft=True) if drafted else None,
                           passes=self.spec.tokens if drafted else 0, host_s=self.framework.step_overhead_s,
                           even_prompts=self.framework.dp_balance is not None,
                           host_per_sequence_s=self.framework.host_per_sequence_s)


_PARTS: dict[tuple, object] = {}


def _parts(model: ModelSpec, gpu: Accelerator, scenario: Scenario, mix: Mix, tokens: float, sequences: float,
           framework: str):
    """step_tables.tabulate of one device under the run's framework (its kernel tables), kept for the process:
    served runs that differ only in concurrency (or in the framework's fitted constants) reuse the tables."""
    # the whole device (a --gpu file may reuse a catalog key with other figures), not its key alone
    key = (model, repr(gpu), scenario, mix, round(tokens), round(sequences), framework)
    if key not in _PARTS:
        if len(_PARTS) > 256:
            _PARTS.clear()
        _PARTS[key] = tabulate(model, [gpu], scenario, mix, tokens, sequences, framework=framework)[0]
    return _PARTS[key]


_CAPACITY: dict[tuple, object] = {}


def _capacity(served: "Served", scenario: Scenario, isl: int, osl: int, prefix_hit: float, draft,
              fw: Framework | None = None):
    """capacity.capacity under `fw` (default the served framework), kept for the process (its key: everything it
    reads)."""
    fw = fw or served.framework
    key = (served.model, served.gpu.key, served.gpu.memory_bytes, scenario, fw.key, fw.max_batched_tokens,
           fw.memory_fraction, fw.max_running, fw.running_given, isl, osl, prefix_hit, draft)
    if key not in _CAPACITY:
        if len(_CAPACITY) > 4096:
            _CAPACITY.clear()
        _CAPACITY[key] = capacity(served.model, served.gpu, scenario, fw, isl, osl, prefix_hit,
                                  draft_weight_bytes(served.spec, scenario, served.model),
                                  (draft, scenario) if draft else None)
    return _CAPACITY[key]


def prepare_served(model: ModelSpec, gpu: Accelerator, scenario: Scenario, framework: str = DEFAULT_FRAMEWORK,
                   spec: Speculation = Speculation(), max_batched_tokens: int | None = None,
                   memory_fraction: float | None = None, fitted: tuple | None = None,
                   dp_balance: tuple[int, int] | None = None, request_tokens: int = 0,
                   batch_wait: tuple[int, float] | None = None, max_running: int | None = None) -> Served:
    """Check the inputs together and resolve `native` dtypes and `parallel: auto` (both stages must fit; with
    `request_tokens`, isl + osl of the longest request to serve, one request and a full step must: _resolved);
    `dp_balance`: (timeout_iters, batching_wait_iters) of TensorRT-LLM's attention-DP balancing, None: off;
    `batch_wait`: (timeout_iters, max_tokens_ratio) of its batch waiting, None: off; `max_running`: the sequences
    one engine (of a disaggregated deployment: each decode worker) runs at once, as the framework counts its setting
    (Framework.running_cap), None: the framework's cap."""
    # the workload's lengths are checked by serve_*; the plan (auto: the smallest that holds the weights) here
    spec.validate(model)
    check_kv_served(scenario.kv_dtype)
    if max_batched_tokens is not None:  # a chunk that leaves SGLang no memory on one device: no plan helps
        check_reserve(gpu, framework_for(framework, gpu, 1, max_batched_tokens, memory_fraction,
                                         spec_method=spec.method), Parallel(tp=1), "--max-batched-tokens")
    scenario = replace(_resolved(model, gpu, scenario, framework, memory_fraction, max_batched_tokens, request_tokens,
                                 spec), batch=scenario.batch, seq_len=scenario.seq_len)
    for option, value in (("--max-batched-tokens", max_batched_tokens), ("--max-running", max_running)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 1 <= value <= MAX_BATCH):
            raise RooflineInputError(f"{option}: {value!r} is not allowed; expected an integer from 1 to {MAX_BATCH}")
    fw = framework_for(framework, gpu, scenario.parallel.tp, max_batched_tokens, memory_fraction, fitted, dp_balance,
                       spec_method=spec.method, gpus=scenario.parallel.devices, batch_wait=batch_wait,
                       max_running=max_running)
    ranks = scenario.parallel.tp if scenario.parallel.attention_dp else 1
    if max_running is not None and fw.running_cap(ranks) < 1:
        raise RooflineInputError(f"--max-running: {max_running} is below the {ranks} attention-DP ranks {fw.key} "
                                 f"splits its max_running_requests over (each runs it // {ranks}: none); give at "
                                 f"least {ranks}")
    return Served(model, gpu, scenario, fw, spec)


def _resolved(model: ModelSpec, gpu: Accelerator, scenario: Scenario, framework: str,
              memory_fraction: float | None, max_batched_tokens: int | None = None,
              request_tokens: int = 0, spec: Speculation = Speculation()) -> Scenario:
    """`scenario` prepared for a one-token prefill; `parallel: auto` resolved under the framework's memory rule
    where it is the stricter (SGLang keeps 0.64-0.91 of each device, by its memory and its engine), so that the plan
    chosen leaves its cache room beside the weights: given the `request_tokens` of one request (isl + osl), room for
    the activations of a full-budget step and the KV cache of that step's tokens or that request, whichever holds
    more (a plan sized for the weights alone had left Qwen2.5-72B fp8 on one H100 under vLLM without room for one
    request). The scenario's own memory_utilization is kept."""
    probe = replace(scenario, batch=1, seq_len=1)
    if scenario.parallel != "auto":
        return prepare(model, gpu, "prefill", probe)
    plan, ceiling, rejected = Parallel(tp=1), 1.0, None
    for _ in range(len(AUTO_TP) * len(AUTO_PP)):  # the fraction may fall with the engine it leads to (SGLang's, with
        # its tp and its GPUs): until it holds for that engine
        rule = framework_for(framework, gpu, plan.tp, max_batched_tokens, memory_fraction=memory_fraction,
                             spec_method=spec.method, gpus=plan.devices)
        limit = scenario.memory_utilization if rule.of_free_memory else min(scenario.memory_utilization,
                                                                            rule.memory_fraction)
        tokens = max(request_tokens, rule.max_batched_tokens) if request_tokens else 1
        tokens = min(tokens, model.max_position or tokens)  # a probe longer than the context is refused
        probed = replace(probe, memory_utilization=min(limit, ceiling), seq_len=tokens)
        planned = prepare(model, gpu, "prefill", probed)
        if (request_tokens and planned.parallel != rejected and room_lacking(
                model, gpu, planned, rule.for_engine(gpu, planned.parallel), request_tokens, spec) > 0):
            # the cache's own accounting (a full step's largest operator, the busiest stage) leaves this plan no
            # room for one request: the next plan, with a ceiling just under this one's footprint (the same plan
            # again: nothing larger fits, and the capacity check says so)
            ceiling, rejected = footprint_share(model, gpu, planned) * (1 - 1e-9), planned.parallel
            plan = planned.parallel
            continue
        if (planned.parallel.tp, planned.parallel.devices) == (plan.tp, plan.devices):
            break
        plan = planned.parallel
    return replace(planned, memory_utilization=scenario.memory_utilization)


def check_context(model: ModelSpec, workload: Workload) -> None:
    """Refuse a workload whose longest request does not fit the model's context: isl + osl, or with a length spread
    S its longest, (isl + osl) x (1 + S)."""
    tokens = workload.isl + workload.osl
    if model.max_position and tokens > model.max_position:
        raise RooflineInputError(f"isl + osl: {workload.isl} + {workload.osl} = {tokens} tokens do not fit the "
                                 f"context of {model.key} ({model.max_position} positions)")
    longest = math.ceil(tokens * (1 + workload.length_spread))
    if model.max_position and longest > model.max_position:
        raise RooflineInputError(f"--length-spread: the longest requests, ({workload.isl} + {workload.osl}) x "
                                 f"(1 + {workload.length_spread:g}) = {longest} tokens, do not fit the context of "
                                 f"{model.key} ({model.max_position} positions); narrow the spread or shorten them")


def serve_aggregated(served: Served, workload: Workload, overflow: str = "refuse", waves: float = 0.0) -> dict:
    """The served row of one aggregated deployment (SERVE_COLUMNS)."""
    workload.validate(waves)
    check_context(served.model, workload)
    load = workload.load(served.spec)
    draft = draft_model(served.spec, served.model)
    cap = _capacity(served, served.scenario, workload.isl, workload.osl, workload.prefix_hit, draft)
    check_capacity(served, workload, cap, overflow)
    scheduler = scheduler_for(served.framework, served.plan, load, waves)
    stepper = served.stepper(load, max(cap.running_bound, cap.running, 1.0))
    if workload.concurrency is not None:
        offered = workload.concurrency
        expected = agg.closed_loop(stepper, load, scheduler, offered, cap.running, "expected")
    else:
        offered = workload.request_rate
        saturated = saturated_scheduler(stepper, load, scheduler, cap.running)
        expected = sustained(agg.open_loop(stepper, load, scheduler, offered, cap.running, "expected"), offered,
                              lambda users: agg.closed_loop(stepper, load, saturated, users, cap.running, "expected"),
                              cap.running)
    users = offered if workload.concurrency is not None else np.inf
    rate = agg.throughput_bound(stepper, load, np.minimum(users, cap.running_bound))
    bound = {"requests_per_s": _offered_bound(agg.users_bound(rate, users, stepper.lone(load.computed),
                                                              stepper, load), workload)}
    # a lone decode step at the expected occupancy: lockstep groups keep prompts out of a request's decode steps
    tpot_bound = stepper.pipelined(expected["decode"], "bound") / load.tokens_per_step
    return _row(served, workload, cap, stepper.lone(load.computed), (stepper.target,), expected, bound, tpot_bound)


def _offered_bound(requests_per_s, workload: Workload):
    """The throughput bound [requests/s] of a workload: an open loop cannot serve more than its arrival rate."""
    return requests_per_s if workload.request_rate is None else np.minimum(requests_per_s, workload.request_rate)


def scheduler_for(framework: Framework, plan: Parallel, load: agg.Load, waves: float = 0.0) -> agg.Scheduler:
    """The aggregated scheduler of a framework on an engine of `plan` (its budget, mixing and fitted constants; the
    lockstep share as the requests of `load` keep it: groups.lockstep)."""
    sync = groups.lockstep(framework.sync, load, framework.mixed)
    return agg.Scheduler(budget=framework.step_budget(plan), mixed=framework.mixed, chunk=framework.request_chunk(plan),
                         step_overhead_s=framework.step_overhead_s, request_overhead_s=framework.request_overhead_s,
                         sync=sync, waves=waves, dp_balance=framework.dp_balance, batch_wait=framework.batch_wait)


@dataclass(frozen=True)
class Disaggregation:
    """Disaggregated pools: worker counts and the prefill workers' plan (the decode workers': the scenario's)."""

    prefill_workers: int = 1
    decode_workers: int = 1
    prefill_plan: Parallel = Parallel()
    max_devices: int | None = None  # refuse pools that need more devices

    def validate(self, served: Served) -> "Disaggregation":
        for name in ("prefill_workers", "decode_workers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEVICES:
                raise RooflineInputError(f"--{name.replace('_', '-')}: {value!r} is not allowed; expected an integer "
                                         f"from 1 to {MAX_DEVICES}")
        check_plan(served.model, served.gpu, self.prefill_plan.validate("prefill plan"))
        needed = self.pools(served).devices
        # without --max-devices, pools are held to the most one deployment may use (as any plan and `plan`)
        limit, what = ((self.max_devices, f"--max-devices {self.max_devices}") if self.max_devices is not None
                       else (MAX_DEVICES, f"{MAX_DEVICES} (the most one deployment may use)"))
        if needed > limit:
            raise RooflineInputError(
                f"--prefill-workers / --decode-workers: {self.prefill_workers} x {self.prefill_plan.devices} + "
                f"{self.decode_workers} x {served.plan.devices} = {needed} devices, more than {what}; use fewer "
                "workers or smaller plans")
        if needed > served.gpu.reach:  # the prefill pool hands each prompt's cache over to the decode pool
            reach = int(served.gpu.reach)
            raise RooflineInputError(
                f"--mode disaggregated: {needed} devices of {served.gpu.key} cannot hand caches over between the "
                "pools: " + ("it links to no other device" if reach < 2 else
                   f"its scale-up domain holds {reach}, with no scale-out network")
                + "; use --mode aggregated" + ("" if reach < 2 else " or fewer workers"))
        return self

    def pools(self, served: Served) -> dis.Pools:
        return dis.Pools(self.prefill_workers, self.decode_workers, self.prefill_plan.devices, served.plan.devices)

    def describe(self, served: Served) -> str:
        prefill = deployment_label(served.gpu, self.prefill_plan)
        return (f"prefill: {self.prefill_workers} x ({prefill}); decode: {self.decode_workers} x "
                f"({deployment_label(served.gpu, served.plan)})")


def _check_prefill_worker(served: Served, workload: Workload, plan: Parallel, scenario: Scenario,
                          rule: Framework) -> None:
    """Refuse (one line) a prefill worker of `plan` that cannot hold the weights and one prompt, naming what to
    change: the user's memory share where the framework's own would hold them, else the prefill plan (70B weights
    on one 80 GB card fit at no share)."""
    if _capacity(served, scenario, workload.isl, 1, workload.prefix_hit, None, rule).running >= 1:
        return
    plan_option = "--prefill-tp/--prefill-pp/--prefill-ep"
    check_reserve(served.gpu, rule, plan, plan_option)
    default = framework_for(rule.key, served.gpu, plan.tp, gpus=plan.devices)
    at_default = replace(rule, memory_fraction=default.memory_fraction)
    held_by_default = _capacity(served, scenario, workload.isl, 1, workload.prefix_hit, None, at_default).running >= 1
    option, settings = memory_settings(served, plan_option) if held_by_default else (plan_option, "")
    raise RooflineInputError(f"{option}: a prefill worker of {deployment_label(served.gpu, plan)} cannot hold "
                             f"{served.model.key}'s weights and one prompt of {workload.isl} tokens; use a wider "
                             f"prefill plan{settings}")


def serve_disaggregated(served: Served, workload: Workload, pools: Disaggregation, overflow: str = "refuse",
                        waves: float = 0.0) -> dict:
    """The served row of one disaggregated deployment (SERVE_COLUMNS)."""
    workload.validate(waves)
    check_context(served.model, workload)
    pools.validate(served)
    load = workload.load(served.spec)
    draft = draft_model(served.spec, served.model)
    cap = _capacity(served, served.scenario, workload.isl, workload.osl, workload.prefix_hit, draft)
    shape = pools.pools(served)
    prefill_scenario = replace(served.scenario, parallel=pools.prefill_plan)
    # SGLang: the worker's own memory fraction; --max-running caps the decode workers, not the prefill worker whose
    # room for one prompt is checked (SGLang's split of a small one over its DP ranks had left it none)
    prefill_rule = replace(served.framework.for_engine(served.gpu, pools.prefill_plan), running_given=0)
    _check_prefill_worker(served, workload, pools.prefill_plan, prefill_scenario, prefill_rule)
    check_capacity(served, workload, replace(cap, running=cap.running * shape.decode_workers), overflow,
                    shape.decode_workers)
    fw = served.framework
    sequences = max(cap.running_bound, cap.running, 1.0)
    prefill = served.stepper(load, sequences, prefill_scenario).prompts_alone()  # as in the search (search_solve)
    decode = served.stepper(load, sequences)
    transfer = dis.transfer_seconds(served.model, served.scenario, served.gpu, load, shape, pools.prefill_plan)
    closed = workload.concurrency is not None
    offered = workload.concurrency if closed else workload.request_rate
    def solve(users_or_rate, closed_loop: bool) -> dict:
        return dis.solve(prefill, decode, load, shape, fw.step_budget(pools.prefill_plan), transfer, users_or_rate,
                         closed_loop, cap.running, "expected", fw.request_overhead_s + fw.handoff_s, waves,
                         fw.request_chunk(pools.prefill_plan))

    expected = solve(offered, closed)
    if not closed:
        expected = sustained(expected, offered, lambda users: solve(users, True), cap.running * shape.decode_workers)
    per_worker = np.minimum(offered / shape.decode_workers if closed else np.inf, cap.running_bound)
    ttft_bound = max(float(prefill.lone(load.computed)), transfer)  # the transfer may overlap the prefill
    rate = dis.throughput_bound(prefill, decode, load, shape, per_worker)
    bound = {"requests_per_s": _offered_bound(agg.users_bound(rate, offered if closed else np.inf, ttft_bound,
                                                              decode, load), workload), "ttft": ttft_bound}
    tpot_bound = decode.pipelined(expected["decode"], "bound") / load.tokens_per_step
    limited = str(np.asarray(expected["limited_by"]).reshape(-1)[0])
    row = _row(served, workload, replace(cap, running=cap.running * shape.decode_workers), bound["ttft"],
               (prefill.target, decode.target), expected, bound, tpot_bound, devices=shape.devices)
    return {**row, "mode": "disaggregated", "deployment": pools.describe(served),
            "prefill_workers": pools.prefill_workers, "decode_workers": pools.decode_workers,
            "kv_transfer_s": transfer, "limited_by": limited,
            "attention_dp_balance": balance_label(served.framework.dp_balance if pools.prefill_plan.attention_dp
                                                  else None)}


def _row(served: Served, workload: Workload, cap, ttft_bound, parts: tuple[Parts, ...], expected: dict, bound: dict,
         tpot_bound, devices: int | None = None) -> dict:
    """The SERVE_COLUMNS row; `parts`: the step tables it was priced on (their estimate and calibration)."""
    devices = devices or served.plan.devices
    tokens = float(expected["requests_per_s"] * workload.osl)
    tpot = float(min(tpot_bound, expected["tpot"]))
    tokens_bound = max(float(bound["requests_per_s"] * workload.osl), tokens)
    sc = served.scenario
    row = {
        "mode": "aggregated", "model": served.model.key, "gpu": served.gpu.key,
        "deployment": deployment_label(served.gpu, served.plan), "devices": devices, "tp": served.plan.tp,
        "pp": served.plan.pp, "ep": served.plan.ep, "attention_dp": served.plan.attention_dp,
        "framework": served.framework.key, "weight_dtype": sc.weight_dtype, "act_dtype": sc.act_dtype,
        "kv_dtype": sc.kv_dtype,
        "concurrency": workload.concurrency if workload.concurrency is not None else float("nan"),
        "request_rate": _or_nan(workload.request_rate), "isl": workload.isl, "osl": workload.osl,
        "prefix_hit": float(workload.prefix_hit), "length_spread": float(workload.length_spread),
        "max_batched_tokens": served.framework.max_batched_tokens,
        "ttft_s": float(ttft_bound), "tpot_s": tpot,
        "ttft_expected_s": float(expected["ttft"]), "tpot_expected_s": float(expected["tpot"]),
        "e2e_latency_s": float(ttft_bound + (workload.osl - 1) * tpot),
        "e2e_latency_expected_s": float(expected["e2e"]), "tokens_per_s": tokens_bound,
        "tokens_per_s_expected": tokens, "tokens_per_s_per_device": tokens_bound / devices,
        "tokens_per_s_per_device_expected": tokens / devices,
        "tokens_per_s_per_user": float(1 / tpot), "tokens_per_s_per_user_expected": float(1 / expected["tpot"]),
        "requests_per_s": tokens_bound / workload.osl, "requests_per_s_expected": float(expected["requests_per_s"]),
        "decode_batch_expected": float(expected["decode"]), "kv_capacity_requests": float(cap.running),
        "kv_cache_utilization": float(min(expected["running"], cap.running) / cap.running),
        "fits": bool(workload.concurrency <= cap.running if workload.concurrency is not None
                     else expected["running"] <= cap.running),
        "keeps_up": bool(expected["keeps_up"]), "spec_method": served.spec.method or "none",
        "accepted_tokens_per_step": groups.step_yield(served.spec.tokens_per_step, workload.osl), "prefill_workers": 0,
        "decode_workers": 0,
        "kv_transfer_s": 0.0, "limited_by": expected.get("limited_by", "none"),
        "estimate": combine(*(p.estimate for p in parts)),
        "calibration": parts[-1].calibration, "expert_weight_dtype": sc.expert_dtype,
        "attention_weight_dtype": sc.attention_weights_dtype, "fp8_scaling": sc.fp8_scaling,
        # balancing acts on the attention-DP replicas that compute prompts: none, none to show
        "attention_dp_balance": balance_label(served.framework.dp_balance if served.plan.attention_dp else None),
        "batch_wait": batch_wait_label(held_batch_wait(served.framework.batch_wait, "aggregated", served.plan)),
        "max_running": served.framework.running_given,
    }
    assert tuple(row) == SERVE_COLUMNS
    return row


def _or_nan(value) -> float:
    return float("nan") if value is None else float(value)


