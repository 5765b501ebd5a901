"""How much work a deployment search is, before it runs: its number of candidates (candidates.candidate_groups x the
batches, nothing evaluated), the limits a search must stay under, and a progress line for long searches.

Limits: at most MAX_DEVICES devices in one deployment (the schema's plan.max_devices maximum), and at most
MAX_CANDIDATES candidates per search unless the user raises it (`--max-candidates`, config plan.max_candidates) up to
MAX_CANDIDATES_CEILING. The search evaluates 200,000-350,000 candidates per second on one core of a 2-core
development machine and keeps ~100-200 bytes per candidate in memory, so the default limit is ~40-70 s and ~2.8 GB:
it admits the default search (--max-devices 8, four dtypes, every catalog device) of every catalog model, the
largest being the MoE models at 12.9 M candidates (10.5 M until TPUs and Gaudi were searched at their own 16-bit
float, bf16); --max-devices 16 over every device is refused up front.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

from ..engine.dtypes import check_storage_dtype
from ..engine.errors import RooflineInputError
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from . import planner
from .candidates import candidate_groups

#: Most devices in one deployment (tp x pp); the schema's plan.max_devices maximum.
MAX_DEVICES = 4096
#: Default limit on the candidates of one search (see the module docstring).
MAX_CANDIDATES = 14_000_000
#: The highest limit a user may set (memory: ~100-200 bytes per candidate).
MAX_CANDIDATES_CEILING = 100_000_000
#: Candidates per second assumed for the time a refused search would have taken (the low end of the measured rate)
#: of the step model's search and of the serving model's aggregated one (bench_plan: 300,000-360,000 per second).
RATE = 200_000
#: The same for the serving model's disaggregated layouts (each a prefill and a decode pool solved together):
#: 52,000-69,000 per second measured (Llama-3.1-8B and Qwen3-30B-A3B on H100 + H200, 2026-12-05)
RATE_DISAGGREGATED = 50_000
#: How much slower a search with speculative decoding evaluates (draft and verify steps priced): 1.9-2.6x measured
SPECULATIVE_SLOWDOWN = 2.5
#: A search running longer than this prints a progress line, then one every PROGRESS_EVERY_S [s].
PROGRESS_AFTER_S = 3.0
PROGRESS_EVERY_S = 10.0
#: the share of the candidates done before a progress line estimates the time left
ESTIMATE_AFTER = 0.1


def count_candidates(model: ModelSpec, gpus: Sequence[Accelerator], dtypes: Iterable[str], max_devices: int,
                     memory_utilization: float = Scenario.memory_utilization, batches: int | None = None) -> int:
    """The number of candidates planner.search would evaluate: its groups (device, plan, dtypes, kernel) times the
    batches of each (planner.BATCH_GRID unless `batches` is given)."""
    check_max_devices("max_devices", max_devices)
    dtypes = tuple(dict.fromkeys(check_storage_dtype("dtypes", dtype) for dtype in dtypes))
    groups = candidate_groups(model, gpus, dtypes, max_devices, memory_utilization)
    return len(groups) * (len(planner.BATCH_GRID) if batches is None else batches)


def check_max_devices(where: str, value: object) -> int:
    """`value` if it is an integer from 1 to MAX_DEVICES, else one line naming `where`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DEVICES:
        raise RooflineInputError(f"{where}: {value!r} is not allowed; expected an integer from 1 to {MAX_DEVICES}")
    return value


def search_seconds(aggregated: int, disaggregated: int = 0, speculative: bool = False) -> float:
    """About how long a search of `aggregated` candidates (or the step model's) and `disaggregated` layouts x
    concurrencies takes at the rates above (the low ends measured)."""
    seconds = aggregated / RATE + disaggregated / RATE_DISAGGREGATED
    return seconds * (SPECULATIVE_SLOWDOWN if speculative else 1.0)


def check_budget(count: int, limit: int, what: str, fixes: str, seconds: float | None = None) -> None:
    """Refuse a search of `count` candidates over `limit`, in one line saying how many, about how long it would
    take (`seconds`: search_seconds; default all `count` at RATE), and `fixes` (the options or keys that shrink it or
    raise the limit)."""
    if count > limit:
        seconds = search_seconds(count) if seconds is None else seconds
        took = "under a second" if seconds < 1 else f"about {seconds:,.0f} s"
        raise RooflineInputError(f"{what}: {count:,} candidates to evaluate, over the limit of {limit:,} ({took} "
                                 f"at {count / max(seconds, 1e-9):,.0f} per second); {fixes}")


class Progress:
    """A search's progress callback (done, total groups): one line through `write` once the search has run
    PROGRESS_AFTER_S, then every PROGRESS_EVERY_S; quick searches say nothing. `turns`: the devices whose step
    tables the search builds, each when its turn comes."""

    def __init__(self, candidates: int, write: Callable[[str], object], clock: Callable[[], float] = time.monotonic,
                 turns: int = 1):
        self.candidates, self.write, self.clock, self.turns = candidates, write, clock, turns
        self.start = clock()
        self.next = self.start + PROGRESS_AFTER_S
        self.first: tuple[float, int] | None = None  # (time, done) when the first candidates were done

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if self.first is None and done > 0:
            self.first = (now, done)
        if now < self.next or done >= total:
            return
        self.next = now + PROGRESS_EVERY_S
        elapsed, share = now - self.start, done / total
        # the time left at the pace since the first candidates were done: the step tables a search builds before
        # it evaluates any are not counted against it (from the start, 1% done in 3 s of tables read "300 s left")
        # and none before a tenth is done: each device and framework builds its own tables when its turn comes, so
        # an early pace can be far off (1% in 3 s read "about 303 s left" of a search done 1.3 s later); over
        # several devices the tables come back with each one, so the pace since the start is the better guess
        # (26% in 3 s of two devices' search read "about 2 s left" of 8 s more)
        since, before = self.first if self.first is not None else (self.start, 0)
        if share < ESTIMATE_AFTER:
            left = float("nan")
        elif done > before and now > since and self.turns <= 1:
            left = (total - done) * (now - since) / (done - before)
        else:
            left = elapsed / share - elapsed if share else float("nan")
        about = ("the time left not yet known" if left != left else "under a second left" if left < 1
                 else f"about {left:.0f} s left")
        self.write(f"plan: {share:.0%} of {self.candidates:,} candidates evaluated in {elapsed:.0f} s, {about}")
