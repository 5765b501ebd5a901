"""The compute job of the pipeline: one (model, gpu, stage) -> ops, totals, treatments and sweeps parquet tables.

This module and what it imports are the compute jobs' code: roofline.pipeline.sources lists them, and an edit of
any of them reruns the jobs (an edit anywhere else does not).
"""
from __future__ import annotations

from collections.abc import Mapping

from .atomic import atomic, log_to


def write_job_tables(model: dict, gpu: dict, stage: str, scenario: dict, outputs: Mapping[str, str],
                     log: str | None = None) -> None:
    """One compute job: rebuild the specs from their params dicts and write each table of
    roofline.pipeline.tables.job_records ("ops", "totals", "treatments", "sweeps") to outputs[name] as parquet, with the
    columns of tables.JOB_COLUMNS (the same tables as tables.job_tables, without building DataFrames)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..engine.hardware import Accelerator
    from ..engine.models import ModelSpec
    from ..engine.scenario import Scenario
    from .tables import JOB_COLUMNS, job_records

    with log_to(log) as say:
        records = job_records(ModelSpec(**model), Accelerator(**gpu), stage, Scenario(**scenario))
        with atomic(outputs[name] for name in records) as temps:
            for name, rows in records.items():
                table = pa.table({column: [row[column] for row in rows] for column in JOB_COLUMNS[name]})
                pq.write_table(table, temps[str(outputs[name])])
                say(f"{outputs[name]}: {len(rows)} rows")
