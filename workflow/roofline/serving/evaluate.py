"""Evaluate the deployment search's candidates: the engine's bounds of every batch of one scenario on every device
at once, then the expected times (roofline.estimate) of the candidates that can still be chosen.

Bounds (`bounds`): the operator graphs (device-independent) are built once per scenario, decode at the mean and the
final KV length as one array, and the one-request prefill; then the roofline of each device (analysis.aggregate).

Expected times (`expected_pass`): a candidate's expected times are never below its bounds, so its expected tokens/s
per device and per user are at most its bounds'. Candidates are pruned, left NaN and counted as evaluated, when
(1) they do not fit, (2) their bounds miss a target, or (3) a candidate of the same device already evaluated beats
their bounds on both (their expected point cannot reach that device's frontier). Scenarios are taken best bound
first, so that the frontier forms early. The survivors of a scenario are evaluated together: the step's kernels
stacked once per framework (roofline.estimate.step.Kernels), one lookup per curve for the devices that share a
calibration.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..engine.analysis import aggregate
from ..engine.graph import build_operators
from ..engine.models import ModelSpec
from ..estimate.calibration import CALIBRATED, DEFAULT, PARTIAL
from ..estimate.expected import calibration_of
from ..estimate.step import Kernels

#: what the targets are checked and the candidates ranked on
RANK_ON = ("expected", "bound")
EXPECTED = ("ttft_expected_s", "tpot_expected_s", "step_expected_s")


def combine(*labels: str) -> str:
    """The estimate of a row from its prefill's and its decode step's."""
    if all(label == CALIBRATED for label in labels):
        return CALIBRATED
    return DEFAULT if all(label == DEFAULT for label in labels) else PARTIAL


def bounds(model: ModelSpec, groups: Sequence, workload, batches: np.ndarray) -> dict:
    """Bounds of every batch of groups that share one scenario (they differ in device only), group after group."""
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
        step = step_time(tpot, ttft, batches, workload)
        parts.append({
            "ttft_s": np.full(len(batches), ttft), "tpot_s": tpot, "step_s": step, "tokens_per_s": batches / step,
            "memory_bound_share": decode["memory_bound_share"][:, 0], "network_share": decode["network_share"][:, 0],
            "fits": decode["fits"][:, 1] & bool(prefill["fits"]), "footprint_bytes": decode["footprint_bytes"][:, 1],
        })
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def step_time(tpot, ttft, batches, workload):
    """Mean time between a user's tokens: the decode step, plus batch / osl prefills when interleaved."""
    return tpot + (batches / workload.osl) * ttft if workload.prefill == "interleaved" else tpot


def in_race(columns: dict, workload) -> np.ndarray:
    """Candidates that fit and whose bounds meet the targets."""
    ok = columns["fits"].copy()
    if workload.tpot_s is not None:
        ok &= columns["step_s"] <= workload.tpot_s
    if workload.ttft_s is not None:
        ok &= columns["ttft_s"] <= workload.ttft_s
    return ok


class Fronts:
    """Each device's frontier so far of (tokens/s per device, tokens/s per user) over evaluated candidates."""

    def __init__(self):
        self.points: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def beaten(self, device: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Points (x, y) some evaluated point of `device` beats on both (more x, at least as much y)."""
        if device not in self.points:
            return np.zeros(len(x), dtype=bool)
        fx, fy = self.points[device]  # decreasing x, increasing y
        after = np.searchsorted(-fx, -x, side="left")  # front points with fx > x: the first `after` ones
        best_y = np.concatenate([[-np.inf], np.maximum.accumulate(fy)])[after]
        return best_y >= y

    def add(self, device: str, x: np.ndarray, y: np.ndarray) -> None:
        if device in self.points:
            x, y = np.concatenate([self.points[device][0], x]), np.concatenate([self.points[device][1], y])
        order = np.lexsort((-y, -x))
        x, y = x[order], y[order]
        keep = y > np.concatenate([[-np.inf], np.maximum.accumulate(y)[:-1]])
        self.points[device] = (x[keep], y[keep])


def expected_pass(model: ModelSpec, scenarios: list[list], offsets: list[int], columns: dict, workload,
                  batches: np.ndarray) -> list:
    """Fill columns' expected times (EXPECTED, NaN where pruned) for `scenarios` (lists of groups sharing one;
    `offsets`: each scenario's first candidate in `columns`); returns every group's labels (estimate, framework,
    calibration)."""
    n = len(batches)
    for name in EXPECTED:
        columns[name] = np.full(len(columns["fits"]), np.nan)
    race = in_race(columns, workload)
    x_bound = columns["tokens_per_s"] / np.concatenate([np.full(n, g.devices, dtype=float) for s in scenarios
                                                         for g in s])
    y_bound = 1.0 / columns["step_s"]
    best = [np.max(x_bound[o:o + n * len(s)][race[o:o + n * len(s)]], initial=0.0) for s, o in zip(scenarios, offsets)]
    labels = [[(DEFAULT, "none", "none")] * len(s) for s in scenarios]
    fronts = Fronts()
    for number in np.argsort(best)[::-1]:
        groups, start = scenarios[number], offsets[number]
        wanted = []
        for i, group in enumerate(groups):
            chosen = np.flatnonzero(race[start + i * n:start + (i + 1) * n])
            at = start + i * n + chosen
            wanted.append(chosen[~fronts.beaten(group.gpu.key, x_bound[at], y_bound[at])])
        if not any(w.size for w in wanted):
            continue
        bound_parts = [{"ttft_s": columns["ttft_s"][start + i * n:start + (i + 1) * n],
                        "tpot_s": columns["tpot_s"][start + i * n:start + (i + 1) * n]} for i in range(len(groups))]
        found = expected(model, groups, workload, batches, wanted, bound_parts,
                         with_prefill=workload.ttft_s is not None or workload.prefill == "interleaved")
        for i, (group, result) in enumerate(zip(groups, found)):
            at = slice(start + i * n, start + (i + 1) * n)
            for name in EXPECTED:
                columns[name][at] = result[name]
            labels[number][i] = result["labels"]
            done = wanted[i]
            if done.size:
                step = result["step_expected_s"][done]
                fronts.add(group.gpu.key, batches[done] / step / group.devices, 1.0 / step)
    return [label for scenario in labels for label in scenario]


def expected(model: ModelSpec, groups: Sequence, workload, batches: np.ndarray, wanted: list, bounds_of: list,
             ops: tuple | None = None, with_prefill: bool = True) -> list[dict]:
    """Per group: ttft/tpot/step_expected_s of its candidates `wanted` (NaN elsewhere) and its labels (estimate,
    framework, calibration). The groups share one scenario; its operators are built for the batches wanted only
    (or `ops` = (prefill operators, decode operators over `batches` x [mean, final KV length]) given). The kernels
    are stacked once per framework, and devices that share a calibration (those without a table of their own: the
    pooled fallback) are looked up together. Without `with_prefill` (no TTFT target, prompts not interleaved: the
    search needs the decode step only) the TTFT stays NaN and the labels are the decode step's, for rows() to
    complete."""
    n = len(batches)
    nothing = np.full(n, np.nan)
    out = [{name: np.full(n, np.nan) if chosen.size else nothing for name in EXPECTED}
           | {"labels": (DEFAULT, "none", "none")} for chosen in wanted]
    union = np.unique(np.concatenate(wanted))
    if union.size == 0:
        return out
    sc = groups[0].scenario.for_model(model)
    if ops is None:
        seq = np.array([[workload.decode_seq_len, workload.final_seq_len]], dtype=float)
        ops = (build_operators(model, "prefill", sc, batch=1, seq_len=workload.isl) if with_prefill else (),
               build_operators(model, "decode", sc, batch=batches[union][:, None], seq_len=seq))
        position = np.zeros(n, dtype=np.intp)
        position[union] = np.arange(union.size)
        width = union.size
    else:
        position, width = np.arange(n), n
    calibrations, shared = _shared_calibrations(groups, wanted)
    stacked: dict[str, tuple] = {}
    for members in shared:
        calibration = calibrations[members[0]]
        framework = calibration.framework
        if framework not in stacked:
            prefill = (Kernels(model, sc.with_(batch=1, seq_len=workload.isl), "prefill", ops[0], framework)
                       if with_prefill else None)
            stacked[framework] = (prefill,
                                  Kernels(model, sc, "decode", ops[1], framework, pick=_mean_column(width),
                                          seq_len=float(workload.decode_seq_len)))
        prefill, decode = stacked[framework]
        devices = [(groups[m].gpu, position[wanted[m]]) for m in members]
        ttfts, prefill_label = (prefill.step(calibration, [(gpu, np.zeros(1, dtype=np.intp)) for gpu, _ in devices])
                                if with_prefill else (np.full(len(members), np.nan), None))
        tpots, decode_label = decode.step(calibration, devices)
        label = combine(prefill_label, decode_label) if with_prefill else combine(decode_label)
        start = 0
        for m, ttft in zip(members, ttfts):
            chosen = wanted[m]
            _fill(out[m], chosen, tpots[start:start + chosen.size], ttft, bounds_of[m], batches, workload)
            start += chosen.size
            out[m]["labels"] = (label, framework or "none", calibrations[m].table)
    return out


def _fill(out: dict, chosen: np.ndarray, tpot: np.ndarray, ttft: float, bounds_of: dict, batches, workload) -> None:
    """One device's expected times at its candidates `chosen`, each at least its bound (ttft NaN: not computed)."""
    tpot = np.maximum(tpot, bounds_of["tpot_s"][chosen])
    if ttft == ttft:  # not NaN
        ttft = max(float(ttft), float(bounds_of["ttft_s"][0]))
    out["ttft_expected_s"][chosen] = ttft
    out["tpot_expected_s"][chosen] = tpot
    out["step_expected_s"][chosen] = tpot if ttft != ttft else step_time(tpot, ttft, batches[chosen], workload)


def _shared_calibrations(groups: Sequence, wanted: list) -> tuple[dict, list[list[int]]]:
    """({group number: its calibration}, groups with candidates wanted, in lists of those that share one)."""
    shared: dict[tuple, list[int]] = {}
    calibrations = {}
    for number, group in enumerate(groups):
        if wanted[number].size:
            calibration = calibration_of(group.gpu, group.scenario)
            key = (id(calibration.own), calibration.framework, calibration.gap_s, calibration.measured)
            shared.setdefault(key, []).append(number)
            calibrations[number] = calibration
    return calibrations, list(shared.values())


def _mean_column(n: int):
    """pick: every decode cost at the mean KV length (column 0 of the batch x [mean, final] arrays; a cost that
    depends on neither stays a scalar, one that depends on the KV length only becomes one)."""
    def pick(value):
        array = np.asarray(value, dtype=float)
        return array[..., 0] if array.ndim == 2 else array
    return pick
