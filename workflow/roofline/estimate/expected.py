"""Bounds and expected times together: the engine's rows and totals with the expected-time columns beside them.

Per operator, `t_expected_s` is its kernel alone (roofline.estimate.step.Kernels.seconds, standalone); the totals'
`ttft_expected_s` / `tpot_expected_s` are the step served under the device's framework (Kernels.step: fusions, the
time between kernels, the per-step overhead), at least the step's bound; `framework` and `calibration` name what
they rest on, `estimate` is calibrated | partial | default (roofline.estimate.calibration). The cost and energy
columns (roofline.engine.cost) follow from both.
"""
from __future__ import annotations

import math

from ..engine import analysis
from ..engine.cost import add_cost
from ..engine.graph import Op, build_operators
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from .lookup import Calibration, calibration_for
from .step import Kernels


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
    add_op_expected(calibration, gpu, model, stage, scenario.for_model(model), ops, rows)
    add_total_expected(calibration, gpu, model, stage, scenario.for_model(model), ops, total)
    add_cost(gpu, total)
    return rows, total


def add_op_expected(calibration: Calibration, gpu: Accelerator, model: ModelSpec, stage: str, scenario: Scenario,
                    ops: list[Op], rows: list[dict]) -> None:
    """`t_expected_s` (the operator's kernel alone) and `estimate` on each row, in place."""
    seconds, labels = Kernels(model, scenario, stage, ops, "").seconds(calibration, gpu, standalone=True)
    for row, expected, label in zip(rows, seconds[:, 0], labels):
        row["t_expected_s"], row["estimate"] = max(float(expected), row["t_s"]), label


def add_total_expected(calibration: Calibration, gpu: Accelerator, model: ModelSpec, stage: str,
                       scenario: Scenario, ops, total: dict) -> None:
    """The expected step and its label on the totals, in place (TOTAL_EXPECTED_COLUMNS)."""
    seconds, label = Kernels(model, scenario, stage, ops, calibration.framework).step(calibration, gpu)
    t_expected = max(float(seconds[0]), total["t_s"])
    prefill = stage == "prefill"
    total.update({
        "ttft_expected_s": t_expected if prefill else math.nan, "tpot_expected_s": math.nan if prefill else t_expected,
        "tokens_per_s_expected": total["tokens_per_s"] * total["t_s"] / t_expected,
        "estimate": label, "framework": calibration.framework or "none", "calibration": calibration.table,
    })
