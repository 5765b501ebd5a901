"""Closed-loop lockstep groups and the requests and scheduler they are priced for (roofline.serving.aggregated's
model states them): the requests (Load), how steps are formed (Scheduler), how far users keep in lockstep
(lockstep, whole_group, cluster_size), the heavy steps a group's prompts take (cluster_steps), and a mixed
scheduler's decode steps beside lone prompts and whole groups (lockstep_mix, mixed_tokens)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .stepper import Stepper


@dataclass(frozen=True)
class Load:
    """The requests: lengths, prefix-cache hit share, speculative setting (queries Q, tokens per step a)."""

    isl: int
    osl: int
    prefix_hit: float = 0.0
    queries: int = 1
    tokens_per_step: float = 1.0
    spread: float = 0.0  # lengths spread uniformly over +-spread around isl and osl (0: every request exactly them)

    def __post_init__(self):
        object.__setattr__(self, "tokens_per_step", step_yield(self.tokens_per_step, self.osl))

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


def step_yield(accepted: float, osl: int) -> float:
    """Tokens a decode step yields on average: the speculative gain `accepted` (accepted drafts + 1), at most the
    osl - 1 tokens a request has left after its first (a verify step never emits past the request's end: with
    one token left it yields one, however many the drafts would have given). A user's measured accepted length
    comes back as given: it already averages the requests' last, shorter steps (a short output's last step is
    still priced at the mean: 6 tokens left at 5 a step take 1.2 steps here, 2 in a run)."""
    return float(min(accepted, max(osl - 1, 1)))


def lockstep(sync: float, load: Load, mixed: bool = True) -> float:
    """The framework's lockstep share `sync` for requests of `load`. Where prompt chunks ride in decode steps
    (`mixed`), groups form only of requests that end in the same step: 0 where their output lengths range over a
    token or more (2 x spread x osl >= 1: requests that start together end apart, and their users send the next ones
    apart, as in a benchmark of random lengths or real traffic), `sync` where every request has the same lengths (a
    fixed-length benchmark's users stay in the groups they start in). A prefill-first scheduler gathers the prompts
    that arrive during a decode step into its next prefill step whatever their lengths: `sync` (fitted on runs of
    both kinds: its random-length runs fit 0.25 better than 0, loss 56.5 against 58.5)."""
    return 0.0 if mixed and 2 * load.spread * load.osl >= 1 else sync


@dataclass(frozen=True)
class Scheduler:
    """How steps are formed (token budget, mixed or separate prefill) and the framework's fitted constants."""

    budget: float
    mixed: bool
    chunk: float = np.inf  # prompt tokens of one request a step may take (one attention replica's budget)
    step_overhead_s: float = 0.0  # host time per step
    request_overhead_s: float = 0.0  # per request, outside the steps
    sync: float = 0.0  # 0: prompts arrive one by one; 1: whole groups arrive together (see cluster_size)
    waves: float = 0.0  # closed-loop benchmark length in waves of N requests (0: the steady state alone)
    dp_balance: tuple | None = None  # (timeout, batching wait) steps of attention-DP balancing (balance_wait)
    batch_wait: tuple | None = None  # (timeout steps, token share) of TensorRT-LLM's batch waiting (batch_wait)


def prompt_room(scheduler: Scheduler, load: Load, D):
    """Prompt tokens a step may still take: the budget less the decode tokens (mixed), at least one."""
    return np.maximum(scheduler.budget - D * load.queries, 1.0) if scheduler.mixed else scheduler.budget + 0 * D


def whole_group(load: Load, scheduler: Scheduler, active, room):
    """Prompts that arrive together (and are prefilled together) where users keep in lockstep: closed-loop users
    whose requests ended in the same step send the next ones together, so a fixed-length benchmark keeps them in
    groups. A mixed scheduler (decode first, prompt chunks beside the decode tokens) spreads a group over the steps it
    fits in: groups of up to g = min(active, room / c), the prompts one step admits (`room`: prompt_room). A
    prefill-first scheduler (SGLang) computes every waiting prompt before it decodes again, so a group's members start
    and end decoding together: the group is up to every request in flight, g = active."""
    largest = np.maximum(active, 1.0)
    if scheduler.mixed:
        return np.clip(np.floor(room / load.computed), 1.0, largest)
    return largest


def cluster_size(scheduler: Scheduler, group):
    """The mean cluster of arrivals, 1 + sync x (g - 1) of a whole group g (whole_group; 1 where sync = 0): sync = 0
    is arrival one by one, 1 lockstep groups (a framework constant fitted on measured runs)."""
    return 1.0 + scheduler.sync * (group - 1.0)


def cluster_steps(load: Load, scheduler: Scheduler, group, room):
    """Heavy steps one cluster's prompts take (at least c / chunk): ceil(prompts x c / room) expected over the arrivals
    cluster_size averages (alone w.p. 1 - sync, with the whole `group` w.p. sync); the ceiling of the mean cluster
    jumped a step where the mean crossed an integer (10 closed-loop users then served fewer requests/s than 8)."""
    def steps(prompts):
        return np.maximum(np.ceil(prompts * load.computed / room), load.computed / scheduler.chunk)
    return (1 - scheduler.sync) * steps(1.0) + scheduler.sync * steps(group)


def mixed_tokens(light, heavy, heavy_square, extra) -> tuple:
    """(the mean time between a sequence's tokens, its mean square) where `extra` heavy steps (a share of at most
    all) fall among a request's decode steps: a heavy step of mean `heavy` and mean square `heavy_square`."""
    share = np.minimum(extra, 1.0)
    return (1 - share) * light + share * heavy, (1 - share) * light ** 2 + share * heavy_square


def lockstep_mix(stepper: Stepper, load: Load, scheduler: Scheduler, D, group, side: str, room, others) -> tuple:
    """A mixed scheduler's steps where closed-loop users keep some lockstep (sync > 0): a request's prompt arrives
    alone w.p. 1 - sync and with its whole `group` of g (whole_group) w.p. sync, and the two kinds of heavy
    step are priced apart, each at its own chunk (one prompt, or the g prompts; or every prompt due, where more are
    due per step). One step at the mean cluster priced neither: under data-parallel attention a lone prompt's step
    waits for the replica computing it while a group's is dealt over the replicas (Stepper._busiest), and the mean
    cluster's had dealt every prompt (a 0.25 share erased the unbalanced steps' wait that TensorRT-LLM's balancing
    removes). Returns (light, heavy, own, full, extra, (per_token, square)): heavy the mean heavy step over the
    kinds by how many of each a request decodes beside, own the step of the request's own prompt on average (by
    request), full the prompts' limit, extra the heavy steps per decode step."""
    prompt, sync = np.minimum(load.computed, scheduler.chunk), scheduler.sync
    lone = np.minimum(room, np.maximum(prompt, others))
    whole = np.minimum(room, np.maximum(group * prompt, others))
    light, (h_lone, h_whole, full) = stepper.light_and_heavy(D, (lone, whole, room), side, scheduler.chunk)
    x_lone, x_whole = (1 - sync) * others / lone, sync * others / whole
    extra = x_lone + x_whole
    own = (1 - sync) * h_lone + sync * h_whole
    counted = extra > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        heavy = np.where(counted, (x_lone * h_lone + x_whole * h_whole) / extra, own)
        heavy_square = np.where(counted, (x_lone * h_lone ** 2 + x_whole * h_whole ** 2) / extra,
                                (1 - sync) * h_lone ** 2 + sync * h_whole ** 2)
    return light, heavy, own, full, extra, mixed_tokens(light, heavy, heavy_square, extra)
