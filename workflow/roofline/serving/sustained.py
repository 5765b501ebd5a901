"""An open loop past what its arrivals one by one keep up with: whether a queue's batches still serve the rate, and
what a request then sees (roofline.serving.serve's open loops, aggregated and disaggregated)."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import aggregated as agg


def saturated_scheduler(stepper, load: agg.Load, scheduler: agg.Scheduler, running: float) -> agg.Scheduler:
    """The scheduler of an overloaded open loop: every slot taken, the queue never empty, so it batches what waits
    as a closed loop's lockstep groups would, or admits prompts one by one as Poisson arrivals come: whichever
    closed loop of `running` users serves more (with one lockstep share alone, SGLang's open loop had delivered 5%
    less past saturation than just below it (the share's groups) or 25% less than the same cache closed-loop
    (arrivals one by one))."""
    if scheduler.sync == 0:
        return scheduler
    alone = replace(scheduler, sync=0.0)
    grouped_rate, alone_rate = (agg.closed_loop(stepper, load, s, running, running, "expected")["requests_per_s"]
                                for s in (scheduler, alone))
    return scheduler if np.all(grouped_rate >= alone_rate) else alone


#: bisection steps of the closed loop that carries an open loop's rate (users to 2^-20 of the cache's hold)
CARRY_ITERATIONS = 20


def sustained(expected: dict, rate: float, closed, users: float) -> dict:
    """An open loop's steady state, or where the deployment cannot keep up with `rate` (`keeps_up` False) what it
    delivers then: its saturated state (`closed(users)`: the closed loop of as many users as the cache holds), at
    most `rate` requests/s, while the queue and with it TTFT and end-to-end latency grow without bound (inf)."""
    if bool(expected["keeps_up"]):
        return expected
    full = closed(users)
    if np.all(full["requests_per_s"] >= rate):
        # the open loop's independent arrivals saturate, but a queue batches what waits (SGLang as a lockstep
        # group) and the engine serves the rate: it keeps up, as the closed loop of the fewest users that carries
        # the rate does (Little: as many in flight as that rate needs; the full cache's state only as the rate
        # reaches what it serves: a full cache's wait at every such rate had read 9.7 s from 9 to 12.7 requests/s
        # of DeepSeek-V3 under SGLang, 0.69 s at 8.5), at the slower of its and the open loop's steps (upper
        # estimates; the open loop's own only where its decode batch stayed within the cache: past it they diverged)
        carried = carrying(closed, rate, users)
        tpot = np.where(expected["decode"] <= carried["running"], np.fmax(carried["tpot"], expected["tpot"]),
                        carried["tpot"])
        steps = (carried["e2e"] - carried["ttft"]) / carried["tpot"]  # osl - 1 (over tokens per step)
        return {**carried, "tpot": tpot, "e2e": carried["ttft"] + steps * tpot, "keeps_up": True,
                "requests_per_s": rate + 0.0 * carried["requests_per_s"]}
    if "limited_by" not in full:  # what one engine runs out of (disaggregated pools name theirs): the prompt room
        # where the saturated state computes prompts all the time, else the KV cache (every slot taken)
        used = float(np.max(full["prefill_utilization"]))
        full = {**full, "limited_by": "prefill" if used >= agg.MAX_UTILIZATION else "kv_cache"}
    return {**full, "ttft": np.inf, "e2e": np.inf, "keeps_up": False,
            "requests_per_s": np.minimum(rate, full["requests_per_s"])}


def carrying(closed, rate: float, users: float) -> dict:
    """The state of the closed loop of the fewest users (at most `users`, which carry at least `rate`) whose
    requests/s reach `rate`: bisected on a log scale of users (a closed loop's rate grows with its users)."""
    lo, hi = 1.0, float(users)
    low = closed(lo)
    if np.all(low["requests_per_s"] >= rate):
        return low
    for _ in range(CARRY_ITERATIONS):
        mid = math.sqrt(lo * hi)
        if np.all(closed(mid)["requests_per_s"] >= rate):
            hi = mid
        else:
            lo = mid
    return closed(hi)
