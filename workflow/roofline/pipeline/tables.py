"""The pipeline's tables for one (model, gpu, stage) job as pandas DataFrames."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, replace

import pandas as pd

from ..engine.analysis import prepare
from ..engine.columns import (
    OP_COLUMNS,
    OP_EXPECTED_COLUMNS,
    OP_EXTRA_COLUMNS,
    SCENARIO_COLUMNS,
    SWEEP_COLUMNS,
    TOTAL_COLUMNS,
    TOTAL_EXPECTED_COLUMNS,
    TREATMENT_COLUMNS,
)
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..engine.scenario import Scenario
from ..engine.sweeps import sweep_table
from ..engine.treatments import treatment_table
from ..estimate.expected import analyze

#: Columns of each per-job table, in order.
JOB_COLUMNS: dict[str, tuple[str, ...]] = {
    "ops": (*OP_COLUMNS, *OP_EXPECTED_COLUMNS, *OP_EXTRA_COLUMNS, *SCENARIO_COLUMNS),
    "totals": (*TOTAL_COLUMNS, *TOTAL_EXPECTED_COLUMNS, *SCENARIO_COLUMNS),
    "treatments": TREATMENT_COLUMNS,
    "sweeps": SWEEP_COLUMNS,
}


def job_records(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> dict[str, list[dict]]:
    """{"ops", "totals", "treatments", "sweeps"}: the rows of one job as dicts with the keys of JOB_COLUMNS.

    The pipeline writes these to parquet through pyarrow directly: building four DataFrames per job cost more
    than computing them.
    """
    # the dtypes the job ran with ('native' resolved) and one concrete plan for the tables, treatments and sweeps
    scenario = prepare(model, gpu, stage, scenario.for_model(model))
    rows, total = analyze(model, gpu, stage, scenario)
    scenario_values = {k: v for k, v in asdict(scenario).items() if k in SCENARIO_COLUMNS}
    return {
        "ops": [{**row, **scenario_values} for row in rows],
        "totals": [{**total, **scenario_values}],
        "treatments": treatment_table(model, gpu, stage, scenario),
        "sweeps": sweep_table(model, gpu, stage, scenario),
    }


def job_tables(model: ModelSpec, gpu: Accelerator, stage: str, scenario: Scenario) -> dict[str, pd.DataFrame]:
    """{"ops", "totals", "treatments", "sweeps"}: the tidy tables of one (model, gpu, stage, scenario)."""
    return {name: pd.DataFrame(records, columns=list(JOB_COLUMNS[name]))
            for name, records in job_records(model, gpu, stage, scenario).items()}


def grid_tables(models: Iterable[ModelSpec], gpus: Iterable[Accelerator], stages: Iterable[str],
                scenario: Scenario, plans: dict[str, dict[str, object]] | None = None) -> dict[str, pd.DataFrame]:
    """The four tables of a whole grid in one process (what the pipeline's aggregates hold), for tests and
    benchmarks that need them without running Snakemake. `plans` ({model: {gpu: Parallel}}, as
    config.ResolvedConfig.plans) gives each cell its own deployment, as the pipeline's jobs get it."""
    gpus, stages = list(gpus), list(stages)
    records: dict[str, list[dict]] = {name: [] for name in JOB_COLUMNS}
    for model in models:
        for gpu in gpus:
            cell = replace(scenario, parallel=plans[model.key][gpu.key]) if plans else scenario
            for stage in stages:
                for name, rows in job_records(model, gpu, stage, cell).items():
                    records[name] += rows
    return {name: pd.DataFrame(rows, columns=list(JOB_COLUMNS[name])) for name, rows in records.items()}
