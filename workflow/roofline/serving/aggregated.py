"""Aggregated serving: continuous batching with chunked prefill on one deployment, in steady state.

The model (the README states it with its assumptions):

* Flow. A request brings `isl` prompt tokens (a share `prefix_hit` of them found in the prefix cache; the rest, c,
  is computed) and leaves with `osl` tokens: its prefill yields the first, then (osl - 1) / a steps yield the rest
  (a = tokens per step: 1, or the speculative gain).
* Groups. Closed-loop users whose requests end in the same step send their next ones together, so prompts arrive in
  groups, 1 + sync x (g - 1) on average (`sync`, a framework constant fitted on measured runs: 0 is arrival one by
  one, 1 lockstep). A mixed scheduler spreads a group over the steps: g = min(requests in flight, room / c), what one
  step's token budget admits beside its decode tokens. A prefill-first scheduler (SGLang) computes every waiting
  prompt before it decodes again, so a group's members start and end decoding together: g = every request in
  flight, and after its first token a request waits out the rest of its group's prefill steps. A mixed scheduler's
  lone prompts and whole groups are priced apart, each heavy step at its own chunk (groups.lockstep_mix).
  Open-loop (Poisson) arrivals come one by one.
* Steps. A step computes at most `budget` tokens (max_batched_tokens, per attention replica where the framework
  schedules each: Framework.step_budget): its decode tokens D Q (Q = 1, or K + 1 when verifying) and prompt chunks,
  one request's at most `chunk` (a request lives on one replica). A group's prompts take ceil(group x c / room)
  steps that carry prefill, a request's own at least c / chunk. A request's decode steps see the other groups'
  prompts that arrive while it decodes: (in flight - group) x (D / in flight) x c prompt tokens over its (osl - 1) / a
  steps (each other user sends its next prompt once per cycle; D / in flight is the cycle's decoding share, by
  Little's law), in chunks of a group's prompts, or where more prompt tokens are due per step than a group brings,
  all that are due (the scheduler packs every waiting prompt into a step, up to its room). The prompts allow at
  most room / (c x t) requests/s, t the time of a step whose room is all prompt tokens. vLLM and TensorRT-LLM run
  the chunk inside a decode step (weights read once), SGLang as a prefill step of its own that pauses decoding;
  TPOT = the mean time between a sequence's tokens over that mix. Every step adds the framework's host time: per
  step, and per decoding sequence of each attention replica (Stepper).
* TTFT = the request's time outside the steps + the rest of the step running when it arrives (the residual life of
  a step, E[t^2] / 2 E[t] over the step mix) + the M/D/1 wait for prompt room + its group's prefill steps (on
  average (n + 1) / 2 of n). The wait's utilization: open loop, the rate times a prompt's service, its share of a
  full step (c x full step / room), the wait u / 2 (1 - u) of that service (M/D/1); closed loop,
  the loop's own rate X times the full-step time of one prompt (c x heavy step / room), as much of it as an
  arrival sees ((N - g) / N: the loop without its own group), X and the wait solved together (_closed_queue), at
  most every other request's prompt ahead, so that past saturation the rate stays put. A group arrives as its
  members' last step ends: the residual and the queue count as far as other groups are in flight (none for a lone
  user or one whole group). A benchmark of a few `waves` of N requests adds its first wave, all at once (those
  the cache holds start together, the rest wait for a slot). Under TensorRT-LLM's attention-DP balancing a prompt
  is also held until every attention replica has one (balance_wait); the Stepper then deals fused prompt chunks
  evenly, and without it prices the replica computing one. Without attention DP its batch waiting holds prompts
  while requests decode, for a fuller step (batch_wait; both in roofline.serving.holds).
* Closed loop (`concurrency` N users, each sending its next request when the last one ends): at most `running`
  requests are in flight (the KV cache, roofline.serving.capacity); each spends S = TTFT + (osl - 1) TPOT in
  flight, so requests/s X = min(N, running) / S and D = X (osl - 1) TPOT (Little's law, solved by fixed-point
  iteration; a prefill-first scheduler's lockstep wave decodes whole: D = every request in flight at sync 1).
  Users beyond `running` wait N / X - S for a slot, added to their TTFT. X is at most what the prompts allow (every
  step a heavy one with `room` prompt tokens, at MAX_UTILIZATION); users beyond it wait the same way.
* Open loop (`request_rate` R): X = R, D = R (osl - 1) TPOT; past the prompt room or the cache (the requests in
  the engine, not those queued for prompt room): `keeps_up` False.

Bounds: TTFT's is the request's own prompt computed alone at the roofline; TPOT's a lone decode step at the expected
occupancy (lockstep groups can keep every prompt out of a request's decode steps); throughput's (throughput_bound)
the less of two: every request the whole device memory holds at the mean in-flight length decoding in every step
at the roofline, plus its prompt's attention; and every token a request computes (its prompt's and its decode
steps') at the compute roof, weights read never (prompts batched as one likes), plus its prompt's attention.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .groups import Load, Scheduler, cluster_size, cluster_steps, lockstep_mix, mixed_tokens, prompt_room, whole_group
from .holds import balance_wait, batch_wait
from .stepper import Stepper

#: fixed-point iterations of the closed and open loops (the decode occupancy converges geometrically)
ITERATIONS = 16
#: the open loop's damped iterations: near the prompt room's saturation the occupancy converges slowly, and 16 had
#: `keeps_up` hold up to ~13% past the rate the closed loop saturates at (an open loop is solved for one rate at a
#: time, by `serve`: the iterations cost milliseconds)
OPEN_ITERATIONS = 400
#: the closed loop's convergence: a point stops iterating once its occupancy moves less than this (relative)
TOLERANCE = 1e-7
#: prompt-room utilization beyond which the prefill queue is taken as saturated
MAX_UTILIZATION = 0.995


def step_mix(stepper: Stepper, load: Load, scheduler: Scheduler, D, active, side: str, closed: bool = True,
             rate=None, busy=1.0) -> dict:
    """Times at decode occupancy D with `active` requests in flight: TPOT, TTFT, prompt-room use (`closed`: users
    who send a request as their last one ends; False: independent arrivals at `rate` per second, which find the
    engine running a step with probability `busy`)."""
    room, steps = prompt_room(scheduler, load, D), max(load.decode_steps, 1e-9)
    if side == "bound":  # prompts fused evenly into the steps: no mix of steps is faster
        due = load.computed * D / steps
        tpot = stepper.spread(D, np.minimum(due, room)) / load.tokens_per_step
        return {"tpot": tpot, "ttft": stepper.lone_prompt + 0.0 * D, "rho": due / room, "most": np.inf + 0.0 * D}
    group = whole_group(load, scheduler, active, room) if scheduler.sync else 1.0  # one, where prompts come singly
    cluster, per_cluster = cluster_size(scheduler, group), cluster_steps(load, scheduler, group, room)
    # others' prompt tokens per decode step: each other user's next prompt lands in a request's decode steps as
    # often as the cycle decodes, D / active (Little); none where requests are prompts alone (osl 1)
    decoding_share = np.minimum(D / np.maximum(active, 1e-9), 1.0) if load.decode_steps else 0.0
    others = load.computed * np.maximum(active - cluster, 0.0) * decoding_share / steps
    if scheduler.mixed and scheduler.sync:  # lone prompts and whole groups, each chunk priced at its own size
        light, heavy, own, full, extra, (per_token, square) = lockstep_mix(stepper, load, scheduler, D, group,
                                                                             side, room, others)
    else:
        # a heavy step carries one group's prompt chunk, or where more prompt tokens are due per step than one group
        # brings, all that are due (the scheduler packs every waiting prompt into the step), at most the room
        chunk = np.minimum(room, np.maximum(cluster * np.minimum(load.computed, scheduler.chunk), others))
        # (full: the prompts' limit, a step whose room is all prompt tokens)
        light, (heavy, full) = stepper.light_and_heavy(D, (chunk, room), side, scheduler.chunk)
        extra, own = others / chunk, heavy  # heavy steps per decode step of a request; its own prompt's step
        if scheduler.mixed:
            per_token, square = mixed_tokens(light, heavy, heavy ** 2, extra)
    # a group's n heavy steps yield its first tokens after (n + 1) / 2 of them on average where a step holds whole
    # prompts; where a prompt spans steps the k-th of g ends k c / room steps in, (g + 1) c / 2 room on average
    # (a last, partial chunk counted at its share of a step)
    spans = np.minimum((cluster + 1) * load.computed / (2 * room), per_cluster)
    first = np.where(load.computed <= room, (per_cluster + 1) / 2, spans)
    # a request lives on one attention replica: its prompt takes at least c / chunk steps, however large the room
    # of all replicas together
    first = np.maximum(first, load.computed / scheduler.chunk)
    if scheduler.mixed:
        mean = per_token
    else:  # each decode step is followed by `extra` prefill steps; after its first token a request also waits out
        # the rest of its own group's prefill steps (n - first of them), in no decode step (osl 1: none)
        per_token = light + extra * heavy + ((per_cluster - first) * heavy / steps if load.decode_steps else 0.0)
        mean, square = (light + extra * heavy) / (1 + extra), (light ** 2 + extra * heavy ** 2) / (1 + extra)
    prompt = first * own
    # closed loop: a group arrives as the last step of its members' previous requests ends, so it waits for a running
    # step and for queued prompts only as far as other groups are in flight (none when one group holds them all)
    apart = np.maximum(active - cluster, 0.0) / np.maximum(active - 1.0, 1.0) if closed else busy
    ttft = scheduler.request_overhead_s + apart * square / (2 * mean) + prompt
    # the most requests/s the prompts allow: every step a full heavy one (at least the chunk's: tables not monotone)
    full = np.maximum(full, heavy)
    most = MAX_UTILIZATION * room / (load.computed * full)
    tpot = per_token / load.tokens_per_step
    if closed:
        # the prompt room's use per prompt: its share of the room of the heavy step it rides in (`own`: a lone
        # prompt's or a group's, by prompt; the single chunk's heavy step without lockstep groups)
        k = load.computed * own / room
        behind = np.maximum(active - cluster, 0.0)  # the requests in flight beside the arriving group
        rest = ttft + load.decode_steps * load.tokens_per_step * tpot
        queue, rho = _closed_queue(active, rest, apart * prompt / 2, k, apart * behind * k,
                                   behind / np.maximum(active, 1.0))
        held = rest + queue
        queue = queue + balance_wait(stepper, scheduler, mean, active=active, rest=held) + batch_wait(
            stepper, scheduler, load, D, mean, D * behind / np.maximum(active, 1.0), active=active, rest=held)
    else:  # M/D/1 whose service is a prompt's share of a full step's room, c / room x full: the utilization is
        # `rate` x that time and the wait u / 2 (1 - u) of it (the requests in flight per step instead had counted a
        # decode step as long as a prompt's and the time outside the steps, the request overhead and the queue
        # itself, as steps: Llama-3.1-8B's 8192-token prompts at 4/s on one H100 were 42% busy and 10 ms more per
        # request added 24 ms to TTFT; they are 80% busy). A caller that gives no rate: the requests in flight per
        # step, each spanning its steps, and a whole step of service
        if rate is None:
            service, rho = prompt, load.computed * active / (steps + per_cluster) / room
        else:
            service = load.computed * full / room
            rho = rate * service
        used = np.minimum(rho, MAX_UTILIZATION)
        queue = used / (2 * (1 - used)) * service  # M/D/1: its utilization already says how often it is busy
        if rate is not None:
            queue = queue + balance_wait(stepper, scheduler, mean, rate=rate) + batch_wait(
                stepper, scheduler, load, D, mean, D, rate=rate)
    return {"tpot": tpot, "ttft": ttft + queue, "rho": rho, "heavy": heavy, "most": most, "queue": queue}


def _closed_queue(active, rest, half_prompt, k, ahead, seen):
    """(the wait for prompt room, its utilization) of a closed loop: the M/D/1 wait at the utilization an arrival
    sees, u = seen k X (k: seconds of steps one prompt takes, its share of the room of the step it rides in; seen:
    the share of the loop's requests other than its own group, (N - g) / N: by the arrival theorem a request finds
    the loop without itself, so one user never waits and a few wait far less than M/D/1's endless arrivals would;
    Schweitzer's approximation of mean value analysis, exact in the limits), where X = active / (rest + wait)
    (Little) and wait = u / (1 - u) x half_prompt (half_prompt: half the prompt's steps, times the share of other
    groups in flight). Eliminating the wait: c (h - S) X^2 + (S + A c) X - A = 0 (c = seen k, S = rest,
    h = half_prompt, A = active), whose root in (0, 1 / c) is X = 2 A / (b + sqrt(b^2 + 4 a A)). Past saturation X
    tends to 1 / c (closed_loop caps it at what full prompt steps compute, `most`) while the wait grows as a queue's
    would. The wait is at most `ahead`, every other request's prompt ahead (a closed loop holds no more)."""
    c = seen * k
    a, b = c * (half_prompt - rest), rest + active * c
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = 2 * active / (b + np.sqrt(np.maximum(b * b + 4 * a * active, 0.0)))
        wait = np.minimum(np.maximum(active / rate - rest, 0.0), ahead)
        rate = active / (rest + wait)
    return wait, k * rate


def closed_loop(stepper: Stepper, load: Load, scheduler: Scheduler, concurrency, running, side: str) -> dict:
    """Steady state of N closed-loop users with at most `running` requests in flight (arrays broadcast)."""
    N = np.asarray(concurrency, dtype=float)
    active = np.minimum(N, running)
    D, times = _occupancy(stepper, load, scheduler, active, side)
    in_flight = times["ttft"] + (load.osl - 1) * times["tpot"]
    # at most what the prompts allow: past it, the users beyond wait in the server's queue (as beyond `running`)
    rate = np.minimum(active / in_flight, times["most"])
    ttft = times["ttft"] + np.maximum(N / np.maximum(rate, 1e-300) - in_flight, 0.0)
    if side == "expected" and scheduler.waves > 0:
        # the first wave's N requests sent at once: the `active` the cache holds start together (first_wave), the
        # rest wait for a slot as in the steady state
        ttft = ttft + active / N * (first_wave(stepper, load, scheduler, active) - ttft) / scheduler.waves
    return {"ttft": ttft, "tpot": times["tpot"], "e2e": ttft + (load.osl - 1) * times["tpot"],
            "requests_per_s": rate, "decode": D, "running": active + 0 * D, "prefill_utilization": times["rho"],
            "keeps_up": np.ones_like(D, dtype=bool)}


def _occupancy(stepper: Stepper, load: Load, scheduler: Scheduler, active, side: str) -> tuple[np.ndarray, dict]:
    """(D, the step mix's TTFT, TPOT and prompt-room use at D) of the closed loop: D is the fixed point of
    D = f(D), f = Little's count of the step mix at D (see decoding): the root of g(D) = f(D) - D. Each point
    takes a secant step on g (a plain step D <- f(D) first), kept inside a bracket [lo, hi] of the root (lo: the
    largest D seen with g > 0, hi: the smallest with g < 0) and bisecting the bracket where the step leaves it,
    until D moves less than TOLERANCE (relative), at most ITERATIONS times: where f is smooth the secant converges
    in a few steps, however steep f is, and at a cusp of f (a step-mix regime change, where f jumps over the
    diagonal and has no root) the bracket closes on the cusp. Converged points leave the iteration (the rest
    iterate on their own) with the times of their last iteration: the search's points take about three."""
    group = getattr(stepper, "group", None)
    shape = np.broadcast_shapes(np.shape(active), np.shape(group) if np.ndim(group) > 0 else (),
                                np.shape(scheduler.budget))
    active = np.broadcast_to(np.asarray(active, dtype=float), shape).ravel()
    D = active * load.decode_steps / (load.decode_steps + 1)
    out = {name: np.empty(D.size) for name in ("ttft", "tpot", "rho", "most")}
    # the bracket starts as [0, active]: g(0) = f(0) >= 0 and g(active) = min(f, active) - active <= 0 hold a root
    # between them (f may not be monotone: a secant step may land outside, where the midpoint is taken); (D, g) of
    # each point's previous iteration give the secant step
    # (a hair wider, so that a step to D = 0 or D = active, where the root sits for prompt-only or cache-bound
    # requests, is taken as it is)
    live, lo, hi = np.arange(D.size), np.full(D.size, np.nextafter(0.0, -1.0)), np.nextafter(active, np.inf)
    before, g_before = np.full(D.size, np.nan), np.full(D.size, np.nan)
    part, plan = _points(stepper, scheduler, live, shape)  # per-point arrays laid out as D
    for _ in range(ITERATIONS):
        here, busy = D[live], active[live]
        times = step_mix(part, load, plan, here, busy, side)
        for name, column in out.items():
            column[live] = times[name]
        rate = np.minimum(busy / (times["ttft"] + (load.osl - 1) * times["tpot"]), times["most"])
        g = np.minimum(decoding(plan, rate * (load.osl - 1) * times["tpot"], busy), busy) - here
        lo = np.where(g > 0, np.maximum(lo, here), lo)
        hi = np.where(g < 0, np.minimum(hi, here), hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            secant = here - g * (here - before) / (g - g_before)
        step = np.where(np.isfinite(secant), secant, here + g)
        D[live] = np.where((step > lo) & (step < hi), step, (lo + hi) / 2)
        moving = np.abs(D[live] - here) > TOLERANCE * here
        before, g_before = here, g
        if moving.all():
            continue
        live, lo, hi, before, g_before = (v[moving] for v in (live, lo, hi, before, g_before))
        if not live.size:
            break
        part, plan = _points(stepper, scheduler, live, shape)
    return D.reshape(shape), {name: column.reshape(shape) for name, column in out.items()}


def _points(stepper: Stepper, scheduler: Scheduler, points: np.ndarray, shape: tuple) -> tuple[Stepper, Scheduler]:
    """The stepper and scheduler read at some points of `shape`, flat (their per-point arrays broadcast to `shape`
    and taken at `points`)."""
    if np.ndim(getattr(stepper, "group", None)) > 0:
        stepper = stepper.at_points(np.broadcast_to(stepper.group, shape).ravel()[points])
    if np.ndim(scheduler.budget) > 0:
        scheduler = replace(scheduler, budget=np.broadcast_to(scheduler.budget, shape).ravel()[points])
    if np.ndim(scheduler.chunk) > 0:
        scheduler = replace(scheduler, chunk=np.broadcast_to(scheduler.chunk, shape).ravel()[points])
    return stepper, scheduler


def decoding(scheduler: Scheduler, past_first, active):
    """Sequences in a decode step: the requests past their first token (`past_first`, Little's law). Where prefill
    steps pause decoding, a lockstep wave's members decode together, all of them in every decode step (they wait out
    their wave's prefill steps in none): (1 - sync) of the former + sync x every request in flight."""
    if scheduler.mixed:
        return past_first
    return (1 - scheduler.sync) * past_first + scheduler.sync * active


def throughput_bound(stepper: Stepper, load: Load, active, prompts: bool = True):
    """Requests/s no run can beat with `active` requests in the cache, the less of two bounds on the time a run
    spends per request (`prompts` False: a disaggregated decode worker's, whose prompts the prefill pool computes:
    the first bound's decode share alone).

    * Decode: a request takes part in (osl - 1) / a steps of at most `active` sequences, each at least its lone
      decode step t(D), and t(D) / D falls with D: at least (osl - 1) t(active) / (active a) of the steps' time is
      its share. A step that carries prompt tokens is at least that decode step with their attention (the
      token-wise and logit parts only grow with tokens): its prompt's attention, c x r (r: per computed token),
      counts where it exceeds the request's share of the decode attention, as one kernel can run both (vLLM's
      varlen attention computes a mixed step's prompt and decode rows in one call: the decode rows' cache reads
      and the prompt rows' FLOPs overlap).
    * Work: whatever the batching, every token a step carries costs it at least its token-wise FLOPs at the compute
      roof (Parts.token_compute_bound, per token: weights read never, no fusion saves a FLOP): the request's c
      prompt tokens and its (osl - 1) Q / a decode tokens, each decode token's logit row and its prompt's one
      (Parts.logit_compute_bound), plus its prompt's attention. This is the bound of
      prefill-heavy loads (long prompts, short outputs), where the first leaves the prompts nearly free.

    Under a pipeline of p stages (the tables price a step through every stage in turn) the stages compute
    different micro-batches at once. The work and the prompts' attention are divided by p (at best p times the work
    of one stage). The decode steps are not: a round of every sequence's next token in m micro-batches takes at
    least one full step at active / p, t(active / p) (m < p: a micro-batch of at least active / m passes every
    stage in turn; m >= p: each stage computes every micro-batch and, memory-bound, reads its weights once per
    micro-batch, so p x a stage's t(active / p) at the least). Dividing t(active) by p instead had let a PP 2
    Llama-3.1-8B bound 256 users at 27,930 tokens/s, more than 256 / its own TPOT bound (15,165)."""
    active = np.maximum(np.asarray(active, dtype=float), 1.0)
    stages = stepper.stages
    share = max(load.osl - 1, 1) / (active * load.tokens_per_step)  # of each decode step, per request
    decode = share * stepper.pipelined(active, "bound")
    if not prompts:
        return 1.0 / decode
    attention = load.computed * stepper.prompt["bound"]
    attended = share * stepper.decode_attention(active, "bound")
    decoded = max(load.osl - 1, 0) * load.queries / load.tokens_per_step  # query tokens the decode steps carry
    # each carries a logit row, and the prompt its last token's (the work bound had left the logits out: 3.2% above
    # the FLOP roof for Llama-3.1-8B at 128/128)
    work = stepper.token_compute * (load.computed + decoded) + stepper.logit_compute * (1 + decoded)
    return 1.0 / np.maximum(decode + np.maximum(attention - attended, 0.0) / stages, (work + attention) / stages)


def prefill_bound(stepper: Stepper, load: Load):
    """Requests/s one prefill worker cannot beat: each prompt's c tokens at the compute roof of the token-wise part
    and their attention at the roofline, its pipeline stages at once (throughput_bound's work bound, without
    decode tokens)."""
    return stepper.stages / (load.computed * (stepper.token_compute + stepper.prompt["bound"]) + stepper.logit_compute)


def users_bound(requests_per_s, users, ttft_s, decode: Stepper, load: Load):
    """`requests_per_s` (a throughput bound) held to what `users` closed-loop users (inf: an open loop) can ask
    for: each request waits at least its TTFT bound `ttft_s` and (osl - 1) / a decode steps, none faster than a
    lone sequence's at the roofline, so by Little's law they finish at most users / (ttft_s + (osl - 1) t(1) / a)
    requests/s. Without it a short output (a free prompt, one step per two tokens) or several decode workers for
    one user (each counted at one sequence) gave bounds no run of that many users could reach. It reads no
    expected time: the bounds stay the roofline's alone."""
    per_request = ttft_s + max(load.osl - 1, 0) * decode.light(1.0, "bound") / load.tokens_per_step
    return np.minimum(requests_per_s, users / per_request)


def first_wave(stepper: Stepper, load: Load, scheduler: Scheduler, active):
    """Mean TTFT of the first `active` requests of a closed-loop benchmark, all sent at once: admitted in groups
    of g prompts (what one step's budget admits), the i-th group after i groups' steps."""
    group = np.clip(np.floor(scheduler.budget / load.computed), 1.0, np.maximum(active, 1.0))
    per_group = np.maximum(np.ceil(group * load.computed / scheduler.budget), load.computed / scheduler.chunk)
    chunk = np.minimum(group * np.minimum(load.computed, scheduler.chunk), scheduler.budget)
    groups = np.ceil(active / group)
    heavy = stepper.heavy(0.0 * active, chunk, "expected", scheduler.chunk)
    return scheduler.request_overhead_s + (groups + 1) / 2 * per_group * heavy


def open_loop(stepper: Stepper, load: Load, scheduler: Scheduler, request_rate, running, side: str,
              largest: float = 1e6) -> dict:
    """Steady state under Poisson arrivals of `request_rate` per second (arrays broadcast)."""
    rate = np.asarray(request_rate, dtype=float)
    scheduler = replace(scheduler, sync=0.0)  # independent arrivals: no closed-loop groups
    D = active = np.zeros_like(rate)
    for _ in range(OPEN_ITERATIONS):
        # a Poisson arrival sees the time-average of the requests in flight (PASTA), about Poisson in number while
        # they are served side by side: the engine is running a step w.p. 1 - exp(-active) (an idle one starts at once)
        times = step_mix(stepper, load, scheduler, D, np.maximum(active, 1.0), side, closed=False, rate=rate,
                         busy=-np.expm1(-active))
        D = 0.5 * D + 0.5 * np.minimum(rate * (load.osl - 1) * times["tpot"], largest)
        # past saturation both grow geometrically: held at `largest` (a run that does not keep up), not overflowed
        active = np.minimum(rate * (times["ttft"] + (load.osl - 1) * times["tpot"]), largest)
    # the cache holds the requests in the engine, not those queued for prompt room or outside the steps (counting
    # them had turned a rate whose queue outgrew the cache into a saturated closed loop's, without a queue: at
    # 8192/2 on one H100, TTFT 10 s at 4.945 requests/s and 0.24 s at 4.95)
    outside = times.get("queue", 0.0) + (scheduler.request_overhead_s if side == "expected" else 0.0)
    held = np.minimum(rate * (times["ttft"] - outside + (load.osl - 1) * times["tpot"]), largest)
    keeps_up = (times["rho"] < 1) & (held <= running) & (D < largest)
    return {"ttft": times["ttft"], "tpot": times["tpot"], "e2e": times["ttft"] + (load.osl - 1) * times["tpot"],
            "requests_per_s": rate, "decode": D, "running": held, "prefill_utilization": times["rho"],
            "keeps_up": keeps_up}
