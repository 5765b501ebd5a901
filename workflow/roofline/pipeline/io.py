"""File I/O of the Snakemake pipeline: one function per rule, each writing its outputs atomically.

Every output is written to a hidden temporary file next to it and renamed into place only when all outputs of
the job are complete, so a failed or interrupted job leaves no half-written table behind. Each function appends
one line per output (or the error) to the rule's log. pandas is imported inside the functions: the Snakefile
imports this module at parse time, and a dry run should not pay for pandas.
"""
from __future__ import annotations

import json
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


def write_plan_table(rows: list[dict], reason: str, path: str) -> None:
    """results/plans/{model}.parquet (roofline.serving.plan_io.plan_arrow_table), written atomically."""
    import pyarrow.parquet as pq

    table = plan_arrow_table(rows, reason)
    with atomic([path]) as temps:
        pq.write_table(table, temps[str(path)])


def write_serving_table(rows: list[dict], path: str) -> None:
    """results/serving/{model}.parquet (SERVE_COLUMNS), written atomically."""
    import pandas as pd

    from ..engine.columns import SERVE_COLUMNS

    with atomic([path]) as temps:
        pd.DataFrame(rows, columns=list(SERVE_COLUMNS)).to_parquet(temps[str(path)], index=False)
