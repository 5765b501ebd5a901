"""Bounds and expected times together: the engine's rows and totals with the expected-time columns beside them.

Per operator, `t_expected_s` is its kernel alone (roofline.estimate.step.Kernels.seconds, standalone); the totals'
`ttft_expected_s` / `tpot_expected_s` are the step served under the device's framework (Kernels.step: fusions, the
time between kernels, the per-step overhead), at least the step's bound; a decode step (and each of its kernels) at
most what the same step padded to PADDING times its batch takes, as an engine could pad it (measured tables whose
first row holds host time had priced B200 vLLM fp8 decode of Llama-3.1-70B at 20.2 ms for one sequence, 16.0 ms for
two; the serving model's step tables hold the same rule: roofline.serving.steps.physical); `framework` and
`calibration` name what they rest on, `estimate` is calibrated | partial | default (roofline.estimate.calibration).
The cost and energy columns (roofline.engine.cost) follow from both.
"""
from __future__ import annotations

import math

import numpy as np

from ..engine import analysis
from ..engine.cost import add_cost
from ..engine.graph import Op, build_operators
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import MAX_BATCH, Scenario
from .lookup import Calibration, calibration_for
from .step import FUSIONS, Kernels


def calibration_of(gpu: Accelerator, scenario: Scenario) -> Calibration:
    """The device's calibration under its framework (the GPU's choice, else the scenario's, else its default)."""
    return calibration_for(gpu, gpu.framework or getattr(scenario, "framework", ""))


def analyze(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> tuple[list[dict], dict]:
    """(per-operator rows, totals) for one (model, gpu, stage, scenario), with the expected-time columns
    (t_expected_s, ttft/tpot_expected_s, tokens_per_s_expected, estimate, framework, calibration) added to the
    engine's bounds, then the cost and energy columns (roofline.engine.cost, from both); `parallel: auto` is
    resolved."""
    scenario = analysis.prepare(model, gpu, stage, scenario)
    ops = build_operators(model, stage, scenario)
    rows = [analysis.op_row(model.key, gpu, stage, op) for op in ops]
    total = analysis.totals(model, gpu, stage, scenario, ops)
    calibration = calibration_of(gpu, scenario)
    resolved = scenario.for_model(model)
    padded = [build_operators(model, stage, resolved.with_(batch=resolved.batch * factor))
              for factor in PADDING if resolved.batch * factor <= MAX_BATCH] if stage == "decode" else []
    add_op_expected(calibration, gpu, model, stage, resolved, ops, rows, padded)
    add_total_expected(calibration, gpu, model, stage, resolved, ops, total, padded, rows)
    add_cost(gpu, total)
    return rows, total


#: batch multiples a decode step is also priced at (those up to MAX_BATCH): its expected time is at most theirs (an
#: engine could pad it)
PADDING = (2, 4, 8, 16)


def add_op_expected(calibration: Calibration, gpu: Accelerator, model: ModelSpec, stage: str, scenario: Scenario,
                    ops: list[Op], rows: list[dict], padded: list[list[Op]] = ()) -> None:
    """`t_expected_s` (the operator's kernel alone, at most its kernel at a padded batch) and `estimate` on each
    row, in place."""
    seconds, labels = Kernels(model, scenario, stage, ops, "").seconds(calibration, gpu, standalone=True)
    expected, names = seconds[:, 0], [op.name for op in ops]
    for larger in padded:  # the same graph at a larger batch: its operators in the same order
        if [op.name for op in larger] == names:
            expected = np.minimum(expected, Kernels(model, scenario, stage, larger, "").seconds(
                calibration, gpu, standalone=True)[0][:, 0])
    for row, value, label in zip(rows, expected, labels):
        row["t_expected_s"], row["estimate"] = max(float(value), row["t_s"]), label


def add_total_expected(calibration: Calibration, gpu: Accelerator, model: ModelSpec, stage: str,
                       scenario: Scenario, ops, total: dict, padded: list[list[Op]] = (), rows=()) -> None:
    """The expected step (at most the step padded to a larger batch) and its label on the totals, in place
    (TOTAL_EXPECTED_COLUMNS). Without a framework model the step is its operators' `rows` alone, each padded as
    add_op_expected pads it (their sum, as the rows show it)."""
    seconds, label = Kernels(model, scenario, stage, ops, calibration.framework).step(calibration, gpu)
    if padded and calibration.framework not in FUSIONS:
        seconds = np.array([sum(row["count"] * row["t_expected_s"] for row in rows)])
    elif padded:
        for larger in padded:
            seconds = np.minimum(seconds, Kernels(model, scenario, stage, larger, calibration.framework).step(
                calibration, gpu)[0])
    t_expected = max(float(seconds[0]), total["t_s"])
    prefill = stage == "prefill"
    total.update({
        "ttft_expected_s": t_expected if prefill else math.nan, "tpot_expected_s": math.nan if prefill else t_expected,
        "tokens_per_s_expected": total["tokens_per_s"] * total["t_s"] / t_expected,
        "estimate": label, "framework": calibration.framework or "none", "calibration": calibration.table,
    })
