"""File I/O of the Snakemake pipeline: one function per rule, each writing its outputs atomically.

Every output is written to a hidden temporary file next to it and renamed into place only when all outputs of
the job are complete, so a failed or interrupted job leaves no half-written table behind. Each function appends
one line per output (or the error) to the rule's log. pandas is imported inside the functions: the Snakefile
imports this module at parse time, and a dry run should not pay for pandas.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterable

from ..serving.plan_io import plan_arrow_table, read_plan_table  # noqa: F401 (read_plan_table: re-exported)
from .atomic import atomic, log_to
from .jobs import write_job_tables  # noqa: F401 (re-exported)
from .sources import engine_sources, write_engine_stamp  # noqa: F401 (re-exported)


def concat_tables(inputs: Iterable[str], parquet: str, log: str | None = None) -> None:
    """Concatenate per-job parquet tables (same columns) into one parquet file, in input order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    inputs = list(inputs)
    with log_to(log) as say:
        # permissive: a column that is all null in one job (e.g. a note) takes its type from the others
        table = pa.concat_tables([pq.read_table(path) for path in inputs], promote_options="permissive")
        with atomic([parquet]) as temps:
            pq.write_table(table, temps[str(parquet)])
        say(f"{parquet}: {table.num_rows} rows from {len(inputs)} files")


def parquet_to_csv(parquet: str, csv: str, log: str | None = None) -> None:
    """The same table as CSV (for people without parquet tools)."""
    import pandas as pd

    with log_to(log) as say:
        table = pd.read_parquet(parquet)
        with atomic([csv]) as temps:
            table.to_csv(temps[str(csv)], index=False)
        say(f"{csv}: {len(table)} rows")


def write_json(data: dict, path: str, log: str | None = None) -> None:
    """Write `data` as indented JSON (e.g. results/specs.json from ResolvedConfig.specs())."""
    with log_to(log) as say:
        with atomic([path]) as temps:
            temps[str(path)].write_text(json.dumps(data, indent=2) + "\n")
        say(f"{path}: {len(data)} sections")


def write_plan_table(rows: list[dict], reason: str, path: str, search: dict | None = None) -> None:
    """results/plans/{model}.parquet (roofline.serving.plan_io.plan_arrow_table; `search`: what was searched,
    plan_io.search_metadata), written atomically."""
    import pyarrow.parquet as pq

    table = plan_arrow_table(rows, reason, search)
    with atomic([path]) as temps:
        pq.write_table(table, temps[str(path)])


def write_measured_table(model: dict, gpus: dict, scenario: dict, runs: list[dict], path: str,
                         log: str | None = None, framework: str = "vllm") -> None:
    """results/measurements/{model}.parquet: the model's measured runs beside their predictions
    (roofline.serving.measured.measurement_rows, MEASUREMENT_COLUMNS; `framework`: the config's, for runs that name
    none) from a job's params dicts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..engine.columns import MEASUREMENT_COLUMNS
    from ..engine.hardware import Accelerator
    from ..engine.models import ModelSpec
    from ..engine.scenario import Scenario
    from ..serving.measured import MeasuredRun, measurement_rows

    with log_to(log) as say:
        rows = measurement_rows(ModelSpec(**model), {key: Accelerator(**gpu) for key, gpu in gpus.items()},
                                Scenario(**scenario), [MeasuredRun(**run) for run in runs], framework)
        with atomic([path]) as temps:
            pq.write_table(pa.table({column: [row[column] for row in rows] for column in MEASUREMENT_COLUMNS}),
                           temps[str(path)])
        say(f"{path}: {len(rows)} runs")
        for row in rows:  # said where the build prints, not only marked in the report
            if row["beyond_bound"]:
                line = (f"warning: measurements: {row['source']}: {row['beyond_bound']} measured beyond the roofline "
                        "bound (faster than the hardware allows): check its units and deployment")
                say(line)
                print(line, file=sys.stderr)


def write_measured_runs(runs: list[dict], path: str, log: str | None = None) -> None:
    """results/measurements/rows.csv: every measured run of every file, its status saying whether it is predicted
    (and in which model's table) or why not."""
    from dataclasses import fields

    import pandas as pd

    from ..serving.measured import MeasuredRun

    with log_to(log) as say:
        with atomic([path]) as temps:
            columns = [field.name for field in fields(MeasuredRun)]  # source, model, gpu, ..., status
            pd.DataFrame(runs, columns=columns).to_csv(temps[str(path)], index=False)
        say(f"{path}: {len(runs)} runs")


def write_comparison(old: str, new: str, path: str, threshold: float, log: str | None = None) -> None:
    """results/compare.csv: what moved between the `compare_with` folder and this run's results
    (roofline.pipeline.compare.compare_results, COMPARE_COLUMNS)."""
    import pandas as pd

    from ..engine.columns import COMPARE_COLUMNS
    from .compare import compare_results

    with log_to(log) as say:
        rows, notes = compare_results(old, new, threshold, names=("compare_with", "results"))
        with atomic([path]) as temps:
            pd.DataFrame(rows, columns=list(COMPARE_COLUMNS)).to_csv(temps[str(path)], index=False)
        say(f"{path}: {len(rows)} rows moved beyond {threshold:.0%} ({notes['compared']} compared)")


def write_serving_table(rows: list[dict], path: str, skipped: list[str] = ()) -> None:
    """results/serving/{model}.parquet (SERVE_COLUMNS), written atomically; `skipped` (what could not be served
    and why, one line each) in its metadata under "skipped" (read_serving_table)."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..engine.columns import SERVE_COLUMNS
    from ..serving.table import SKIPPED_KEY

    table = pa.Table.from_pandas(pd.DataFrame(rows, columns=list(SERVE_COLUMNS)), preserve_index=False)
    metadata = {**(table.schema.metadata or {}), SKIPPED_KEY: json.dumps(list(skipped)).encode()}
    with atomic([path]) as temps:
        pq.write_table(table.replace_schema_metadata(metadata), temps[str(path)])


def read_serving_table(path: str):
    """(DataFrame, skipped lines) of a results/serving/{model}.parquet file (roofline.serving.table's reader)."""
    from ..serving.table import read_serving_table as read

    return read(path)
