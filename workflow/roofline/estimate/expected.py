"""Bounds and expected times together: the engine's rows and totals with the calibrated columns beside them."""
from __future__ import annotations

from ..engine import analysis
from ..engine.cost import add_cost
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from .calibration import add_expected


def analyze(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> tuple[list[dict], dict]:
    """(per-operator rows, totals) for one (model, gpu, stage, scenario), with the expected-time columns
    (t_expected_s, ttft/tpot_expected_s, estimate) added to the engine's bounds, then the cost and energy columns
    (roofline.engine.cost, from both); `parallel: auto` is resolved."""
    rows, total = analysis.analyze(model, gpu, stage, scenario)
    add_expected(gpu, stage, rows, total)
    add_cost(gpu, total)
    return rows, total
