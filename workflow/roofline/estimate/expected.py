"""Bounds and expected times together: the engine's rows and totals with the calibrated columns beside them."""
from __future__ import annotations

from ..engine import analysis
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from .calibration import add_expected


def analyze(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> tuple[list[dict], dict]:
    """(per-operator rows, totals) for one (model, gpu, stage, scenario), with the expected-time columns
    (t_expected_s, ttft/tpot_expected_s, estimate) added to the engine's bounds; `parallel: auto` is resolved."""
    rows, total = analysis.analyze(model, gpu, stage, scenario)
    add_expected(gpu, stage, rows, total)
    return rows, total
