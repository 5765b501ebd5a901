"""The search's solvers: the served times of every (candidate, concurrency) point of one kind of deployment, a
chunk of points at a time, on the stacked step tables of all candidates (roofline.serving.step_tables).

A point reads its candidate's rows of the stacked tables (its decode pool's and, disaggregated, its prefill pool's):
the tables are combined once for the whole stack (aggregated.Stepper) and read at each chunk's rows.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from . import aggregated as agg
from . import disaggregated as dis
from . import groups
from .step_tables import StepTables

#: points the solvers take at a time: enough to amortize each array operation, few enough to keep them in cache
CHUNK = 1 << 14
#: columns the solvers fill (per served candidate)
SOLVED = ("ttft_s", "tpot_s", "ttft_expected_s", "tpot_expected_s", "requests_per_s", "requests_per_s_expected",
          "decode_batch_expected", "kv_transfer_s")


@dataclass(frozen=True)
class Points:
    """The served points of one mode: each point's candidate (a place among the mode's candidates) and concurrency,
    and per candidate its budget and cache capacity (expected and bound)."""

    index: np.ndarray  # the search's index of each of the mode's candidates
    rows: np.ndarray  # each point's candidate: a place in `index`
    concurrency: np.ndarray
    budget: np.ndarray  # per candidate, as the four below
    running: np.ndarray
    running_bound: np.ndarray
    chunk: np.ndarray  # one request's prompt tokens per step (one attention replica's budget)
    #: called with the share of the points solved after each chunk (a long search's progress line), or None
    progress: Callable[[float], object] | None = None

    def chunks(self):
        """The points CHUNK at a time, each with its candidate's budget and capacities (the temporaries of a chunk
        stay in cache)."""
        for start in range(0, len(self.rows), CHUNK):
            rows = self.rows[start:start + CHUNK]
            yield Chunk(rows, self.concurrency[start:start + CHUNK], self.budget[rows], self.running[rows],
                        self.running_bound[rows], self.chunk[rows])


@dataclass(frozen=True)
class Chunk:
    """Points solved together: candidate (place among the mode's), concurrency, budget and capacities of each."""

    rows: np.ndarray
    concurrency: np.ndarray
    budget: np.ndarray
    running: np.ndarray
    running_bound: np.ndarray
    chunk: np.ndarray


def solve_chunks(points: Points, solve) -> dict:
    """solve(chunk) of every chunk of `points`, written into one column per name."""
    out: dict[str, np.ndarray] = {}
    for start, chunk in zip(range(0, len(points.rows), CHUNK), points.chunks()):
        for name, value in solve(chunk).items():
            if name not in out:
                out[name] = np.empty(len(points.rows), dtype=np.asarray(value).dtype)
            out[name][start:start + len(chunk.rows)] = value
        if points.progress is not None:
            points.progress((start + len(chunk.rows)) / len(points.rows))
    return out


def table_rows(selected, tables: StepTables, prefill: bool = False) -> np.ndarray:
    """The row of the stacked tables each candidate of `selected` reads: its decode pool's, or its prefill pool's."""
    return np.array([tables.rows[(replace(c.scenario, parallel=c.prefill_plan) if prefill else c.scenario, c.gpu.key)]
                     for c in selected], dtype=int)


def stepper(tables: dict[bool, StepTables], fw, drafted, spec) -> agg.Stepper:
    """The steps of every stacked table (the target's; with the draft's, row for row, when drafting), read at
    points with Stepper.at_points."""
    return agg.Stepper(target=tables[False].parts, mixed=fw.mixed,
                       passes=spec.tokens if drafted else 0, host_s=fw.step_overhead_s,
                       draft=tables[True].parts if drafted else None, even_prompts=fw.dp_balance is not None,
                       host_per_sequence_s=fw.host_per_sequence_s)


def aggregated(selected, points: Points, tables, load, fw, model, drafted, spec) -> dict:
    stacked, rows = stepper(tables, fw, drafted, spec), table_rows(selected, tables[False])
    scheduler = agg.Scheduler(budget=0.0, mixed=fw.mixed, step_overhead_s=fw.step_overhead_s,
                              request_overhead_s=fw.request_overhead_s, sync=groups.lockstep(fw.sync, load, fw.mixed),
                              dp_balance=fw.dp_balance,
                              batch_wait=fw.batch_wait)

    def solve(at: Chunk) -> dict:
        steps, N = stacked.at_points(rows[at.rows]), at.concurrency
        expected = agg.closed_loop(steps, load, replace(scheduler, budget=at.budget, chunk=at.chunk), N, at.running,
                                   "expected")
        ttft = steps.lone_prompt + 0 * N
        tpot = np.minimum(steps.pipelined(expected["decode"], "bound") / load.tokens_per_step, expected["tpot"])
        rate = agg.throughput_bound(steps, load, np.minimum(N, at.running_bound))
        return {"ttft_s": ttft, "tpot_s": tpot, "ttft_expected_s": expected["ttft"],
                "tpot_expected_s": expected["tpot"], "requests_per_s": agg.users_bound(rate, N, ttft, steps, load),
                "requests_per_s_expected": expected["requests_per_s"],
                "decode_batch_expected": expected["decode"], "kv_transfer_s": 0 * N}
    return solve_chunks(points, solve)


def disaggregated(selected, points: Points, tables, load, fw, model, drafted, spec) -> dict:
    decodes = stepper(tables, fw, drafted, spec)
    prefills = decodes.prompts_alone()  # the same combined tables; prompts run alone on the prefill pool
    prefill_rows, decode_rows = table_rows(selected, tables[False], prefill=True), table_rows(selected, tables[False])
    shapes = [dis.Pools(c.prefill_workers, c.decode_workers, c.prefill_plan.devices, c.scenario.parallel.devices)
              for c in selected]
    layouts = [np.array(v, dtype=float) for v in zip(*(
        (p.prefill_workers, p.decode_workers, p.prefill_devices, p.decode_devices) for p in shapes))]
    transfers = np.array([dis.transfer_seconds(model, c.scenario, c.gpu, load, p, c.prefill_plan)
                          for c, p in zip(selected, shapes)])

    def solve(at: Chunk) -> dict:
        prefill, decode = prefills.at_points(prefill_rows[at.rows]), decodes.at_points(decode_rows[at.rows])
        pools, transfer, N = dis.Pools(*(v[at.rows] for v in layouts)), transfers[at.rows], at.concurrency
        expected = dis.solve(prefill, decode, load, pools, at.budget, transfer, N, True, at.running, "expected",
                             fw.request_overhead_s + fw.handoff_s, chunk=at.chunk)
        per_worker = np.minimum(N / pools.decode_workers, at.running_bound)
        ttft = np.maximum(prefill.lone(load.computed), transfer)
        tpot = np.minimum(decode.pipelined(expected["decode"], "bound") / load.tokens_per_step, expected["tpot"])
        rate = dis.throughput_bound(prefill, decode, load, pools, per_worker)
        return {"ttft_s": ttft, "tpot_s": tpot, "ttft_expected_s": expected["ttft"],
                "tpot_expected_s": expected["tpot"], "requests_per_s": agg.users_bound(rate, N, ttft, decode, load),
                "requests_per_s_expected": expected["requests_per_s"],
                "decode_batch_expected": expected["decode"], "kv_transfer_s": transfer,
                "limited_by": expected["limited_by"]}
    return solve_chunks(points, solve)
