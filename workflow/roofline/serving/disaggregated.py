"""Disaggregated serving: prefill workers compute the prompts, decode workers generate, the KV cache moves between.

The model (the README states it with its assumptions):

* Pools. `prefill_workers` X instances of the prefill plan and `decode_workers` Y instances of the decode plan, each
  an engine of its own; the deployment's devices are X x (prefill devices) + Y x (decode devices).
* Prefill worker. Prompts reach each worker at rate X_r / X; a prefill step batches what arrived while the last one
  ran (at least one prompt, at most the framework's token budget), so C tokens per step solve C = max(c, arrivals x
  c x t(C)); busy share b = arrivals x c x t(C) / C (1 once steps batch several prompts). Utilization u = arrivals
  over what full-budget steps compute (B / (c t(B))). TTFT = the request's overhead + the rest of a running step
  (b t / 2) + the queue beyond one step (M/D/1: u / 2 (1 - u) t) + its own step t(C) + the KV transfer.
* KV transfer: the prompt's KV cache (every layer, every head) leaves the prefill worker's devices over their links
  in parallel (min(prefill devices, decode devices) links): latency + bytes / (links x link bandwidth), over the
  scale-up link when both pools fit one scale-up domain, else the scale-out network.
* Decode worker: D sequences decode in every step (no prompt chunks), TPOT = its step time / a (speculation) plus
  the framework's host time; at most its cache's capacity in flight.
* Closed loop: X_r = N / (TTFT + (osl - 1) TPOT), D = X_r (osl - 1) TPOT / Y (solved by bisection on D), X_r at
  most what the prefill pool computes busy all the time (users beyond wait in its queue: TTFT = N / X_r - (osl - 1)
  TPOT) and D at most what a decode worker holds (its KV cache, at most the framework's max_running, --max-running):
  users beyond wait for a decode slot with their prompts computed (the slots stay full; TTFT as above); open loop:
  X_r = R.
  `limited_by` names the pool whose next worker raises the rate: under a request rate the one with the higher load
  share (prefill utilization, decode cache occupancy); under closed-loop users the prefill pool where it computes
  busy all the time (users wait in its queue), the decode pool where its cache is full, else the pool whose next
  worker shortens a request's cycle more per device (N users cycle through both pools: a prefill worker more cuts
  TTFT's wait, a decode worker more cuts every decode step's batch; `_next_worker`). 256 users of Llama-3.1-70B on
  1 + 1 H200 TP 2 pools at 1024/1024 (fp8): a prefill worker more gives 0%, a decode worker more +64%, though the
  prefill pool's utilization was the higher, which had named it; on 1 + 8 the prefill worker gives +10%, the decode
  worker +0.4%. Tokens/s per device counts every device of both pools.

Bound side: roofline times, no host time or waiting, the transfer overlapped with the prefill (layer by layer),
the decode pool's cache at the whole device memory and the mean in-flight length.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.analysis import kv_cache_bytes
from .aggregated import ITERATIONS, MAX_UTILIZATION, OPEN_ITERATIONS, TOLERANCE, Load, Stepper, prefill_bound
from .aggregated import throughput_bound as worker_bound

#: bisection steps of a closed loop's decode occupancy (to 2^-24 of the cache's hold)
CLOSED_ITERATIONS = 24


@dataclass(frozen=True)
class Pools:
    """Worker counts and the devices of one worker of each pool."""

    prefill_workers: int
    decode_workers: int
    prefill_devices: int
    decode_devices: int

    @property
    def devices(self) -> int:
        return self.prefill_workers * self.prefill_devices + self.decode_workers * self.decode_devices


def throughput_bound(prefill: Stepper, decode: Stepper, load: Load, pools: Pools, per_worker):
    """Requests/s no run of `pools` can beat: the less of its decode workers' bound (each holding `per_worker`
    requests; their prompts computed elsewhere) and its prefill workers' (aggregated.prefill_bound)."""
    return np.minimum(pools.decode_workers * worker_bound(decode, load, per_worker, prompts=False),
                      pools.prefill_workers * prefill_bound(prefill, load))


def transfer_seconds(model, scenario, gpu, load: Load, pools: Pools, prefill_plan) -> float:
    """Time to move one prompt's KV cache from the prefill pool (an engine of `prefill_plan`) to the decode pool
    (of scenario.parallel), over as many links in parallel as both sides have devices that hold the request: one per
    pipeline stage under data-parallel attention (the request lives on one attention replica of each stage), every
    device of the engine otherwise (each sends or receives its share; a copy replicated over tensor-parallel ranks,
    as MLA's latent cache, is counted as split between them and gathered over the engine's scale-up links)."""
    nbytes = float(kv_cache_bytes(model, "prefill", scenario, batch=1, seq_len=load.isl))
    links = min(_holders(prefill_plan, pools.prefill_devices), _holders(scenario.parallel, pools.decode_devices))
    bandwidth, latency = gpu.link(pools.devices if pools.devices > 1 else 2)
    return latency + nbytes / (links * bandwidth)


def _holders(plan, devices: int) -> int:
    """Devices of an engine that hold one request's KV cache (see transfer_seconds): under data-parallel attention
    its replica in each pipeline stage, every device otherwise."""
    return plan.pp if plan.attention_dp else devices


def _prefill_worker(prefill: Stepper, load: Load, budget: float, arrivals, saturation, side: str, chunk=np.inf):
    """(tokens per step C, step time, busy share, utilization) of one prefill worker receiving `arrivals`
    prompts/s. The busy share is the time it spends stepping: 1 wherever a step batches more than one prompt (the
    fixed point C = arrivals x c x t(C)); the utilization is the arrivals over what full-budget steps compute
    (`saturation`: saturation_rate), the load a queue beyond one step builds on."""
    least = np.minimum(load.computed, chunk)  # one prompt's part of a step: at most one replica's chunk
    C = np.minimum(least, budget) + 0.0 * np.asarray(arrivals, dtype=float)
    for _ in range(ITERATIONS):
        step = prefill.heavy(0.0 * C, C, side, chunk)
        C, before = np.clip(np.maximum(least, arrivals * load.computed * step), 1.0, budget), C
        if np.all(np.abs(C - before) <= TOLERANCE * before):  # converged (geometrically, at the busy share's rate)
            break
    step = prefill.heavy(0.0 * C, C, side, chunk)
    busy = np.minimum(arrivals * load.computed * step / C, 1.0)
    return C, step, busy, arrivals / saturation


def _prefill_side(prefill: Stepper, load: Load, pools: Pools, budget, transfer_s, side: str,
                  request_overhead_s: float, rate, lone, saturation, chunk=np.inf):
    """(TTFT, a prefill worker's utilization) at request rate `rate`: a prompt waits out the rest of the running
    step, then its own step; the queue beyond grows with the utilization (M/D/1 in the step time), as arrivals
    approach what full-budget steps compute. A prompt takes at most `chunk` tokens of a step (one attention
    replica's budget), so a longer one spans c / chunk steps."""
    _, step, busy, used = _prefill_worker(prefill, load, budget, rate / pools.prefill_workers, saturation, side,
                                          chunk)
    if side == "bound":  # the transfer overlaps the prefill layer by layer; nothing waits
        return np.maximum(lone, transfer_s) + 0.0 * rate, used
    rho = np.minimum(used, MAX_UTILIZATION)
    own = np.maximum(load.computed / chunk, 1.0) * step  # a prompt longer than one replica's chunk spans steps
    return request_overhead_s + busy * step / 2 + rho / (2 * (1 - rho)) * step + own + transfer_s, used


def _next_worker(prefill: Stepper, decode: Stepper, load: Load, pools: Pools, budget, transfer_s, side: str,
                 request_overhead_s: float, rate, lone, saturation, chunk, D, tpot, ttft):
    """(seconds a prefill worker more takes off a request's cycle per device it adds, the same of a decode worker
    more), to first order at the state reached: the prompts of `rate` spread over one prefill worker more (TTFT's
    wait), the decode batch D over one decode worker more ((osl - 1) TPOT)."""
    wider = Pools(pools.prefill_workers + 1, pools.decode_workers, pools.prefill_devices, pools.decode_devices)
    ttft_wider, _ = _prefill_side(prefill, load, wider, budget, transfer_s, side, request_overhead_s, rate, lone,
                                  saturation, chunk)
    share = pools.decode_workers / (pools.decode_workers + 1)
    tpot_wider = decode.light(np.maximum(D * share, 1e-9), side) / load.tokens_per_step
    return ((ttft - ttft_wider) / pools.prefill_devices,
            (load.osl - 1) * (tpot - tpot_wider) / pools.decode_devices)


def saturation_rate(prefill: Stepper, load: Load, budget, side: str, chunk=np.inf):
    """Prompts/s one prefill worker computes when busy all the time: full-budget steps (a prompt longer than the
    budget spans several)."""
    full = np.maximum(np.asarray(budget, dtype=float), 1.0)
    return full / (load.computed * prefill.heavy(0.0 * full, full, side, chunk))


def first_wave(prefill: Stepper, load: Load, pools: Pools, budget, active, transfer_s, request_overhead_s: float,
               chunk=np.inf):
    """Mean TTFT of the first `active` requests of a closed-loop benchmark, all sent at once: each prefill worker
    takes its share in groups of what one full-budget step admits, each group's steps (a prompt at least c / chunk
    of them) after the groups before it: on average (groups + 1) / 2 groups' steps."""
    prompts = np.ceil(active / pools.prefill_workers)
    per_step = np.clip(np.floor(budget / load.computed), 1.0, np.maximum(prompts, 1.0))
    per_group = np.maximum(np.ceil(per_step * load.computed / budget), load.computed / chunk)
    heavy = prefill.heavy(0.0 * active, np.minimum(per_step * np.minimum(load.computed, chunk), budget), "expected",
                          chunk)
    return request_overhead_s + (np.ceil(prompts / per_step) + 1) / 2 * per_group * heavy + transfer_s


def solve(prefill: Stepper, decode: Stepper, load: Load, pools: Pools, budget: float, transfer_s: float, offered,
          closed: bool, running: float, side: str, request_overhead_s: float = 0.0, waves: float = 0.0,
          chunk=np.inf) -> dict:
    """Steady state of the two pools under N closed-loop users (`closed`) or a request rate; `running` is what
    one decode worker's cache holds. `prefill` steps are separate (no decodes), `decode` steps carry no prompts.

    Closed loop: the decode occupancy D (per decode worker) is bisected. D sets TPOT and, by Little's law on the
    decode pool, the rate X(D) = Y D / ((osl - 1) TPOT(D)); the users' rate N / (TTFT(X) + (osl - 1) TPOT(D)),
    capped at what the prefill pool computes busy all the time, falls as D grows. X(D) grows with D while the decode
    step grows slower than its batch (the memory roof); where it grows faster the two rates can cross twice, and the
    bisection takes one of the crossings. D is at most the cache's hold (`running`: its KV cache's, at most the
    framework's max_running); users beyond the rate reached wait, their prompts computed, for a decode slot (or in
    the prefill queue where that pool is the one busy all the time)."""
    # every user cycles through both pools: a prompt is computed before its request takes a decode slot, so users
    # beyond the decode slots wait for one with their prompts done, and the slots stay full (D = running)
    offered = np.asarray(offered, dtype=float)
    lone = prefill.lone(load.computed)
    tpot = decode.light(1.0 + 0.0 * offered, side) / load.tokens_per_step
    saturation = saturation_rate(prefill, load, budget, side, chunk)  # prompts/s of a prefill worker always busy
    if closed:
        most = MAX_UTILIZATION * pools.prefill_workers * saturation
        decodes = load.osl > 1  # else prompts alone: the rate itself is bisected, no decode step runs
        lo = 0.0 * offered
        # the root has D <= N / Y (the users' rate is at most N / ((osl - 1) TPOT)): the bracket ends there, else at
        # the cache's hold, so that every concurrency past saturation reaches the same state (a tie the search's
        # frontier drops) and a few users' fraction of a sequence per worker is bisected at its own scale (over
        # [0, running] a step of running / 2^24 was coarse beside one user's D of 0.004 on two workers)
        hi = (np.minimum(running, offered / pools.decode_workers) if decodes else most) + lo
        for _ in range(CLOSED_ITERATIONS):
            x = (lo + hi) / 2
            D = x if decodes else 0.0 * x
            tpot = decode.light(np.maximum(D, 1e-9), side) / load.tokens_per_step
            rate = pools.decode_workers * D / ((load.osl - 1) * tpot) if decodes else x
            ttft, used = _prefill_side(prefill, load, pools, budget, transfer_s, side, request_overhead_s, rate, lone,
                                       saturation, chunk)
            short = np.minimum(offered / (ttft + (load.osl - 1) * tpot), most) > rate  # more users' rate: x too low
            lo, hi = np.where(short, x, lo), np.where(short, hi, x)
    else:
        rate, D, settled = offered, 0.0 * offered, np.zeros(offered.shape, dtype=bool)
        # from D = 0 the occupancy climbs to the least fixed point of D = R (osl - 1) TPOT(D) / Y (TPOT grows with
        # D), slowly near saturation, where it may have none below the cache's hold: OPEN_ITERATIONS steps as the
        # aggregated open loop takes, and a rate whose occupancy has not settled does not keep up (16 had called
        # rates past the closed loop's saturation sustained)
        for _ in range(OPEN_ITERATIONS):
            D, before = np.minimum(rate * (load.osl - 1) * tpot / pools.decode_workers, running), D
            tpot = decode.light(D, side) / load.tokens_per_step
            settled = np.abs(D - before) <= TOLERANCE * np.maximum(D, 1e-300)
            if settled.all():
                break
        ttft, used = _prefill_side(prefill, load, pools, budget, transfer_s, side, request_overhead_s, rate, lone,
                                       saturation, chunk)
    in_flight = ttft + (load.osl - 1) * tpot
    if closed:  # the bisection's last midpoint may sit a hair (2^-24 of its bracket) past the crossing: no closed
        # loop completes more than its users over their cycle (Little's law), so rate and occupancy come back to it
        little = np.minimum(rate, offered / in_flight)
        D, rate = D * little / np.maximum(rate, 1e-300), little
    occupancy = D / np.maximum(running, 1e-9)  # the decode caches' share in use
    if closed:
        # the wait of users beyond what the pools run is no prefill time: a prefill worker more does not shorten it
        more_prefill, more_decode = _next_worker(prefill, decode, load, pools, budget, transfer_s, side,
                                                 request_overhead_s, rate, lone, saturation, chunk, D, tpot, ttft)
        full = D >= running * (1 - 1e-6)  # every decode slot taken
        prefill_limits = (rate >= most * (1 - 1e-6)) | (~full & (more_prefill > more_decode))
        ttft = ttft + np.maximum(offered / rate - in_flight, 0.0)
    else:
        prefill_limits = used >= occupancy
    if closed and side == "expected" and waves > 0:  # those the decode caches hold start at once, the rest wait
        held = np.minimum(offered, pools.decode_workers * running)
        ttft = ttft + held / offered * (first_wave(prefill, load, pools, budget, held, transfer_s,
                                                   request_overhead_s, chunk) - ttft) / waves
    return {"ttft": ttft, "tpot": tpot, "e2e": ttft + (load.osl - 1) * tpot, "requests_per_s": rate,
            "decode": D, "running": np.minimum(rate * in_flight, offered) if closed else rate * in_flight,
            "prefill_utilization": used,
            "decode_utilization": occupancy,
            "keeps_up": np.ones_like(rate, dtype=bool) if closed else (used < 1) & (D < running) & settled,
            "limited_by": np.where(prefill_limits, "prefill", "decode").astype(object)}
