"""The pipeline's tables for one (model, gpu, stage) job as pandas DataFrames."""
from __future__ import annotations

from dataclasses import asdict

import pandas as pd

from .analysis import analyze
from .columns import (OP_COLUMNS, OP_EXTRA_COLUMNS, SCENARIO_COLUMNS, SWEEP_COLUMNS, TOTAL_COLUMNS,
                      TREATMENT_COLUMNS)
from .hardware import Accelerator
from .models import ModelSpec
from .scenario import Scenario
from .sweeps import sweep_table
from .treatments import treatment_table


def job_tables(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> dict[str, pd.DataFrame]:
    """{"ops", "totals", "treatments", "sweeps"}: the tidy tables of one (model, gpu, stage, scenario)."""
    rows, total = analyze(model, gpu, stage, scenario)
    scenario_values = {k: v for k, v in asdict(scenario).items() if k in SCENARIO_COLUMNS}
    ops = pd.DataFrame(rows, columns=[*OP_COLUMNS, *OP_EXTRA_COLUMNS]).assign(**scenario_values)
    totals = pd.DataFrame([total], columns=list(TOTAL_COLUMNS)).assign(**scenario_values)
    treatments = pd.DataFrame(treatment_table(model, gpu, stage, scenario), columns=list(TREATMENT_COLUMNS))
    sweeps = pd.DataFrame(sweep_table(model, gpu, stage, scenario), columns=list(SWEEP_COLUMNS))
    return {"ops": ops, "totals": totals, "treatments": treatments, "sweeps": sweeps}
