"""Aggregated serving: continuous batching with chunked prefill on one deployment, in steady state.

The model (the README states it with its assumptions):

* Flow. A request brings `isl` prompt tokens (of which a share `prefix_hit` is found in the prefix cache; the rest,
  c, is computed) and leaves with `osl` tokens: its prefill yields the first, then (osl - 1) / a verify steps yield
  the rest, a = tokens per step (1, or the speculative gain). With D sequences decoding, (D a / (osl - 1)) requests
  finish per step, so in steady state every step is due p = c D a / (osl - 1) prompt tokens.
* Steps. A step may compute `budget` tokens (max_batched_tokens): its decode tokens D Q (Q = 1, or K + 1 when
  verifying) and prompt chunks. A step that carries prompt tokens carries all that are due, at least one prompt
  (or the chunk of one that fits) and at most the budget left: chunk = min(budget - D Q, max(c, p)); a share
  f = p / chunk of the steps carry one. Mixed frameworks (vLLM, TensorRT-LLM) run the chunk inside the decode step
  (weights read once); SGLang runs it as a prefill step of its own that pauses decoding. TPOT = the mean time
  between a sequence's steps, / a. Every step adds the framework's host time.
* TTFT = the request's overhead outside the steps + the rest of the step running when it arrives (the residual
  life of a step, E[t^2] / 2 E[t] over the step mix) + the wait for prefill room (M/D/1: rho / 2 (1 - rho) prompt
  times, rho = p / prompt room per step) + its own prompt: ceil(c / room) steps that carry prefill.
* Closed loop (`concurrency` N users, each sending its next request when the last one ends): at most `running`
  requests are in flight (the KV cache, roofline.serving.capacity); each spends S = TTFT + (osl - 1) TPOT in
  flight, so requests/s X = min(N, running) / S and D = X (osl - 1) TPOT (Little's law; solved by fixed-point
  iteration). Users beyond `running` wait N / X - S for a slot, added to their TTFT.
* Open loop (`request_rate` R per second, Poisson): X = R, D = R (osl - 1) TPOT; a rate the prompt room or the
  cache cannot keep up with has no steady state (`keeps_up` False).

Bound side: the same flow on the roofline times (no host time), prompts spread evenly over the steps and fused
into them (weights read once; by convexity of the roofline no mix of steps is faster), no waiting: TTFT = the
request's own prompt alone; throughput at the bound capacity (whole memory, mean in-flight length).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .steps import Mix

#: fixed-point iterations of the closed and open loops (the decode occupancy converges geometrically)
ITERATIONS = 40
#: prompt-room utilization beyond which the prefill queue is taken as saturated
MAX_UTILIZATION = 0.995


@dataclass(frozen=True)
class Load:
    """The requests: lengths, prefix-cache hit share, speculative setting (queries Q, tokens per step a)."""

    isl: int
    osl: int
    prefix_hit: float = 0.0
    queries: int = 1
    tokens_per_step: float = 1.0

    @property
    def computed(self) -> float:
        """Prompt tokens a prefill computes (the rest is in the prefix cache); at least one."""
        return max(float(np.ceil((1 - self.prefix_hit) * self.isl)), 1.0)

    @property
    def decode_steps(self) -> float:
        """Steps one request spends decoding after its first token."""
        return max(self.osl - 1, 0) / self.tokens_per_step

    @property
    def mean_kv(self) -> float:
        """Cached tokens of a decoding sequence, on average over its decode steps."""
        return self.isl + self.osl / 2


@dataclass(frozen=True)
class Scheduler:
    """How steps are formed (token budget, mixed or separate prefill) and the framework's fitted constants."""

    budget: float
    mixed: bool
    step_overhead_s: float = 0.0  # host time per step
    request_overhead_s: float = 0.0  # per request, outside the steps
    sync: float = 0.0  # 0: prompts arrive one by one; 1: whole groups arrive together (see cluster_size)
    waves: float = 0.0  # closed-loop benchmark length in waves of N requests (0: the steady state alone)


@dataclass(frozen=True)
class StepTable:
    """Step times tabulated over decode occupancy D and prompt tokens C (interpolated between points)."""

    decode: np.ndarray  # D grid
    chunk: np.ndarray  # C grid (prompt tokens in a step that carries prefill)
    light_bound: np.ndarray  # [D] a step without prompt tokens
    light_expected: np.ndarray
    heavy_bound: np.ndarray  # [D, C] a step with C prompt tokens (mixed: beside D decodes; separate: alone)
    heavy_expected: np.ndarray
    spread_bound: np.ndarray  # [D] bound of a step carrying the due prompt tokens of D decodes evenly (fused)
    lone_prompt_bound: float  # bound of one prompt computed alone (the TTFT bound)
    estimate: str


def decode_grid(largest: float) -> np.ndarray:
    """Occupancies to tabulate: every integer to 16, then ~8% apart up to `largest`."""
    dense = np.arange(0.0, 17.0)
    if largest <= 16:
        return dense
    return np.unique(np.concatenate([dense, np.geomspace(16, largest, max(int(np.log(largest / 16) / 0.08), 2))]))


def chunk_grid(computed: float, budget: float) -> np.ndarray:
    """Prompt tokens per step to tabulate: one prompt's worth up to the budget, ~25% apart (and one token)."""
    low = min(computed, budget)
    return np.unique(np.concatenate([[1.0, low, budget], np.geomspace(max(low, 1.0), max(budget, low), 12)]))


def step_table(price, draft, load: Load, scheduler: Scheduler, largest: float) -> StepTable:
    """Tabulate step times: `price(Mix, expected=True)` -> steps.Price of the target, `draft(D, C)` ->
    (bound, expected) of the draft's work in such a step (zeros without speculation)."""
    D, C = decode_grid(largest), chunk_grid(load.computed, scheduler.budget)
    common = dict(kv_len=load.mean_kv, prompt=float(load.isl), prefix=load.isl - load.computed,
                  queries=float(load.queries))
    light = price(Mix(decode=D, **common))
    grid_D = D[:, None] if scheduler.mixed else 0.0 * D[:, None]
    heavy = price(Mix(decode=grid_D, prefill=C[None, :], **common))
    due = np.minimum(load.computed * D / max(load.decode_steps, 1e-9), _room(scheduler, load, D))
    spread = price(Mix(decode=D, prefill=due, **common), expected=False)
    lone = price(Mix(prefill=float(load.computed), **common), expected=False).bound_s + draft(0.0, load.computed)[0]
    draft_light, draft_heavy = draft(D, 0.0 * D), draft(grid_D + 0.0 * C[None, :], 0.0 * grid_D + C[None, :])
    label = light.estimate if light.estimate == heavy.estimate else "default"
    host = scheduler.step_overhead_s
    return StepTable(decode=D, chunk=C, light_bound=light.bound_s + draft_light[0],
                     light_expected=light.expected_s + draft_light[1] + host,
                     heavy_bound=heavy.bound_s + draft_heavy[0],
                     heavy_expected=heavy.expected_s + draft_heavy[1] + host,
                     spread_bound=spread.bound_s + draft(D, due)[0], lone_prompt_bound=float(lone), estimate=label)


def _room(scheduler: Scheduler, load: Load, D):
    """Prompt tokens a step may still take: the budget less the decode tokens (mixed), at least one."""
    return np.maximum(scheduler.budget - D * load.queries, 1.0) if scheduler.mixed else scheduler.budget + 0 * D


def _light(table: StepTable, D, side: str):
    """A decode step's time at occupancy D (at least the sequence asking: one)."""
    return np.interp(np.maximum(D, 1.0), table.decode, getattr(table, f"light_{side}"))


def _heavy(table: StepTable, D, C, side: str):
    """Bilinear interpolation of the heavy-step table at (D, C) (C in log space)."""
    values = getattr(table, f"heavy_{side}")
    D, C = np.broadcast_arrays(np.asarray(D, dtype=float), np.asarray(C, dtype=float))
    i = np.clip(np.searchsorted(table.decode, D) - 1, 0, len(table.decode) - 2)
    j = np.clip(np.searchsorted(table.chunk, C) - 1, 0, len(table.chunk) - 2)
    d0, d1 = table.decode[i], table.decode[i + 1]
    c0, c1 = np.log(table.chunk[j]), np.log(table.chunk[j + 1])
    u = np.clip((D - d0) / (d1 - d0), 0, 1)
    v = np.clip((np.log(np.maximum(C, 1.0)) - c0) / np.where(c1 > c0, c1 - c0, 1.0), 0, 1)
    return ((1 - u) * (1 - v) * values[i, j] + u * (1 - v) * values[i + 1, j] + (1 - u) * v * values[i, j + 1]
            + u * v * values[i + 1, j + 1])


def cluster_size(load: Load, scheduler: Scheduler, active, D):
    """Prompts that arrive together (and are prefilled in the same step): closed-loop users whose requests ended in
    the same step send the next ones together, so a fixed-length benchmark keeps them in groups of up to
    g = min(active, room / c) (the prompts one step admits). 1 + sync x (g - 1): sync = 0 is arrival one by one,
    1 lockstep groups (a framework constant fitted on measured runs)."""
    group = np.clip(np.floor(_room(scheduler, load, D) / load.computed), 1.0, np.maximum(active, 1.0))
    return 1.0 + scheduler.sync * (group - 1.0)


def step_mix(table: StepTable, load: Load, scheduler: Scheduler, D, active, side: str) -> dict:
    """Times at decode occupancy D with `active` requests in flight: TPOT, TTFT parts, prompt-room use."""
    room = _room(scheduler, load, D)
    steps = max(load.decode_steps, 1e-9)
    if side == "bound":  # prompts fused evenly into the steps: no mix of steps is faster
        due = load.computed * D / steps
        return {"tpot": np.interp(np.maximum(D, 1.0), table.decode, table.spread_bound) / load.tokens_per_step,
                "ttft": table.lone_prompt_bound + 0.0 * D, "rho": due / room}
    cluster = cluster_size(load, scheduler, active, D)
    chunk = np.minimum(room, cluster * load.computed)
    per_cluster = np.ceil(cluster * load.computed / room)  # heavy steps one cluster's prompts take
    others = load.computed * np.maximum(active - cluster, 0.0) / steps  # others' prompt tokens per decode step
    light, heavy = _light(table, D, side), _heavy(table, np.maximum(D, 1.0) if scheduler.mixed else D, chunk, side)
    extra = others / chunk  # heavy steps per decode step of a request
    if scheduler.mixed:
        share = np.minimum(extra, 1.0)
        per_token = (1 - share) * light + share * heavy
        mean, square = per_token, (1 - share) * light ** 2 + share * heavy ** 2
    else:  # each decode step is followed by `extra` prefill steps
        per_token = light + extra * heavy
        mean, square = per_token / (1 + extra), (light ** 2 + extra * heavy ** 2) / (1 + extra)
    due = load.computed * active / (steps + per_cluster)  # prompt tokens per step, all requests
    rho = np.minimum(due / room, MAX_UTILIZATION)
    prompt = (per_cluster + 1) / 2 * heavy
    ttft = scheduler.request_overhead_s + square / (2 * mean) + rho / (2 * (1 - rho)) * prompt + prompt
    return {"tpot": per_token / load.tokens_per_step, "ttft": ttft, "rho": due / room, "heavy": heavy,
            "cluster": cluster}


def closed_loop(table: StepTable, load: Load, scheduler: Scheduler, concurrency, running, side: str) -> dict:
    """Steady state of N closed-loop users with at most `running` requests in flight (arrays broadcast)."""
    N = np.asarray(concurrency, dtype=float)
    active = np.minimum(N, running)
    D = active * load.decode_steps / (load.decode_steps + 1)
    for _ in range(ITERATIONS):
        times = step_mix(table, load, scheduler, D, active, side)
        in_flight = times["ttft"] + (load.osl - 1) * times["tpot"]
        rate = active / in_flight
        D = 0.5 * D + 0.5 * np.minimum(rate * (load.osl - 1) * times["tpot"], active)
    ttft = times["ttft"] + np.maximum(N / rate - in_flight, 0.0)
    if side == "expected" and scheduler.waves > 0:
        ttft = ttft + (first_wave(load, scheduler, active, times) - ttft) / scheduler.waves
    return {"ttft": ttft, "tpot": times["tpot"], "e2e": ttft + (load.osl - 1) * times["tpot"],
            "requests_per_s": rate, "decode": D, "running": active, "prefill_utilization": times["rho"],
            "keeps_up": np.ones_like(N, dtype=bool)}


def first_wave(load: Load, scheduler: Scheduler, active, times: dict):
    """Mean TTFT of the first `active` requests of a closed-loop benchmark, all sent at once: admitted in groups
    of g prompts, one group per heavy step; the i-th group waits i heavy steps."""
    group = np.clip(np.floor(scheduler.budget / load.computed), 1.0, np.maximum(active, 1.0))
    per_group = np.ceil(group * load.computed / scheduler.budget)
    groups = np.ceil(active / group)
    return scheduler.request_overhead_s + (groups + 1) / 2 * per_group * times["heavy"]


def open_loop(table: StepTable, load: Load, scheduler: Scheduler, request_rate, running, side: str) -> dict:
    """Steady state under Poisson arrivals of `request_rate` per second (arrays broadcast)."""
    rate = np.asarray(request_rate, dtype=float)
    scheduler = replace(scheduler, sync=0.0)  # independent arrivals: no closed-loop groups
    D = active = np.zeros_like(rate)
    for _ in range(ITERATIONS):
        times = step_mix(table, load, scheduler, D, np.maximum(active, 1.0), side)
        D = 0.5 * D + 0.5 * np.minimum(rate * (load.osl - 1) * times["tpot"], table.decode[-1])
        active = rate * (times["ttft"] + (load.osl - 1) * times["tpot"])
    keeps_up = (times["rho"] < 1) & (active <= running) & (D < table.decode[-1])
    return {"ttft": times["ttft"], "tpot": times["tpot"], "e2e": times["ttft"] + (load.osl - 1) * times["tpot"],
            "requests_per_s": rate, "decode": D, "running": active, "prefill_utilization": times["rho"],
            "keeps_up": keeps_up}
