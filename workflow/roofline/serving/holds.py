"""Where a scheduler holds a prompt back on purpose before computing it, to batch prompts (TensorRT-LLM's two
waits; vLLM and SGLang hold none). Each returns the mean time a prompt waits, added to TTFT
(roofline.serving.aggregated.step_mix); the bounds hold none.

* balance_wait: attention-DP balancing (`attention_dp_config`), a context request held until every attention
  replica has one.
* batch_wait: batch waiting without attention DP (`batch_wait_timeout_iters`, `batch_wait_max_tokens_ratio`),
  context requests held while requests decode, until a step's tokens reach a share of `max_num_tokens` or a
  number of steps has passed.
"""
from __future__ import annotations

import numpy as np

#: fixed-point rounds of a closed loop's rate with the hold inside it (the hold is a small part of a request's
#: time in flight, so two rounds leave it within a fraction of a percent)
ROUNDS = 2


def balance_wait(stepper, scheduler, step, rate=None, active=None, rest=None):
    """Time a prompt is held by attention-DP balancing (Scheduler.dp_balance = (T, b) steps: TensorRT-LLM's
    timeout_iters and batching_wait_iters): its context waits until every one of the r attention replicas of the
    Stepper has one, at most T steps, then b steps more. The router deals requests out in turn, so the other r - 1
    arrive over (r - 1) / X at X requests/s: (r - 1) / 2X on average. Open loop: X = `rate`. Closed loop: X =
    active / (rest + wait) (Little; `rest`: a request's time in flight without the wait), solved with the wait:
    X = (active - (r - 1) / 2) / (rest + b step) where that wait is under T steps, else the timeout's. 0 without
    balancing or attention DP (r = 1); `step`: the mean step time."""
    if scheduler.dp_balance is None:
        return 0.0
    timeout, batching = scheduler.dp_balance
    r, cap = np.asarray(stepper.replicas, dtype=float), timeout * step
    if rate is None:
        rate = (active - (r - 1) / 2) / (rest + batching * step)
    with np.errstate(divide="ignore"):
        held = np.where(rate > 0, np.minimum((r - 1) / (2 * np.maximum(rate, 1e-300)), cap), cap)
    return np.where(r > 1, held + batching * step, 0.0)


def batch_wait(stepper, scheduler, load, D, step, decoding, rate=None, active=None, rest=None):
    """Time a prompt is held by TensorRT-LLM's batch waiting (Scheduler.batch_wait = (T, f):
    batch_wait_timeout_iters and batch_wait_max_tokens_ratio; py_executor._waiting_requests). While requests decode,
    the context requests wait until the step's tokens, the decode tokens and the waiting prompts', reach f x
    max_num_tokens (the scheduler's budget), or until T steps have passed since they began to wait; then all go at
    once. A prompt of c computed tokens (the Load's) beside d = D Q decode tokens reaches the share with
    m = ceil((f budget - d) / c) prompts (m = 1: it goes at once), whose m - 1 others arrive over (m - 1) / X at X
    prompts/s, so the first to wait waits W = min(T step, (m - 1) / X, H) and the X W that arrive within that window
    wait W / 2 on average: W (1 + X W / 2) / (1 + X W) per prompt. The hold needs requests decoding: an arrival
    that finds k of them on average (`decoding`: D, less its own group's in a closed loop) finds one or more w.p.
    1 - exp(-k) (a lone user's, or an output of one token, never waits), and they all end within H = k / (k + 1) of
    a request's decode steps (the last of k spread over them), when the hold ends with them. Never under attention
    DP (the Stepper's replicas > 1: the balancing of balance_wait applies there). Open loop: X = `rate`; closed
    loop: X = active / (rest + wait) (Little; `rest`: a request's time in flight without the wait), solved in
    ROUNDS rounds. `step`: the mean step time. Only the hold is priced: the fuller steps it buys (prompts computed
    together) are priced one prompt at a time, as without it, so it never gains here."""
    if scheduler.batch_wait is None:
        return 0.0
    timeout, ratio = scheduler.batch_wait
    others = np.maximum(np.ceil((ratio * scheduler.budget - D * load.queries) / load.computed) - 1.0, 0.0)
    decoding = np.maximum(decoding, 0.0)
    ending = load.decode_steps * step * decoding / (decoding + 1.0)  # when the requests decoding have all ended
    closed = rate is None
    wait = 0.0
    for _ in range(ROUNDS if closed else 1):
        if closed:
            rate = active / (rest + wait)
        with np.errstate(divide="ignore", invalid="ignore"):
            window = np.minimum(np.minimum(timeout * step, ending),
                                np.where(others > 0, others / np.maximum(rate, 1e-300), 0.0))
        spread = rate * window
        wait = -np.expm1(-decoding) * window * (1 + spread / 2) / (1 + spread)
    return np.where(np.asarray(stepper.replicas) > 1, 0.0, wait)
