"""File I/O of the Snakemake pipeline: one function per rule, each writing its outputs atomically.

Every output is written to a hidden temporary file next to it and renamed into place only when all outputs of
the job are complete, so a failed or interrupted job leaves no half-written table behind. Each function appends
one line per output (or the error) to the rule's log. pandas is imported inside the functions: the Snakefile
imports this module at parse time, and a dry run should not pay for pandas.
"""
from __future__ import annotations

import hashlib
import json
import os
import traceback
import uuid
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path

#: Package modules that are not engine code: editing them must not rerun the compute jobs.
NOT_ENGINE = ("cli.py", "measure.py")  # measure: microbenchmarks (torch), not used by the compute jobs


def engine_sources(relative_to: str | Path | None = None) -> list[str]:
    """The engine's source files (this package's top-level modules, not figures/ or report/ nor the CLI), sorted.

    The compute rule lists them as input: its `run:` block imports them once per Snakemake process, and Snakemake
    notices code edits only in files it knows about. Paths are relative to `relative_to` (default: the working
    directory) when the package lies inside it, else absolute.
    """
    package = Path(__file__).resolve().parent
    base = Path(relative_to or os.getcwd()).resolve()
    files = sorted(p for p in package.glob("*.py") if p.name not in NOT_ENGINE)
    return [str(p.relative_to(base)) if p.is_relative_to(base) else str(p) for p in files]


@contextmanager
def _log_to(log: str | Path | None):
    """Yield a function that appends a line to `log`; on error, write the traceback there and re-raise."""
    lines: list[str] = []
    try:
        yield lines.append
    except BaseException:
        lines.append(traceback.format_exc())
        raise
    finally:
        if log is not None:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
            Path(log).write_text("".join(line if line.endswith("\n") else line + "\n" for line in lines))


@contextmanager
def _atomic(paths: Iterable[str | Path]):
    """Yield {path: temporary path}; rename all temporaries into place on success, delete them on error."""
    targets = [Path(p) for p in paths]
    token = uuid.uuid4().hex[:12]
    temps = {str(p): p.with_name(f".{p.name}.{token}.tmp") for p in targets}
    try:
        for temp in temps.values():
            temp.parent.mkdir(parents=True, exist_ok=True)
        yield temps
        for final, temp in temps.items():
            os.replace(temp, final)
    finally:
        for temp in temps.values():
            temp.unlink(missing_ok=True)


def write_job_tables(model: dict, gpu: dict, stage: str, scenario: dict, outputs: Mapping[str, str],
                     log: str | None = None) -> None:
    """One compute job: rebuild the specs from their params dicts and write each table of
    roofline.tables.job_records ("ops", "totals", "treatments", "sweeps") to outputs[name] as parquet, with the
    columns of tables.JOB_COLUMNS (the same tables as tables.job_tables, without building DataFrames)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .hardware import Accelerator
    from .models import ModelSpec
    from .scenario import Scenario
    from .tables import JOB_COLUMNS, job_records

    with _log_to(log) as say:
        records = job_records(ModelSpec(**model), Accelerator(**gpu), stage, Scenario(**scenario))
        with _atomic(outputs[name] for name in records) as temps:
            for name, rows in records.items():
                table = pa.table({column: [row[column] for row in rows] for column in JOB_COLUMNS[name]})
                pq.write_table(table, temps[str(outputs[name])])
                say(f"{outputs[name]}: {len(rows)} rows")


def concat_tables(inputs: Iterable[str], parquet: str, log: str | None = None) -> None:
    """Concatenate per-job parquet tables (same columns) into one parquet file, in input order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    inputs = list(inputs)
    with _log_to(log) as say:
        # permissive: a column that is all null in one job (e.g. a note) takes its type from the others
        table = pa.concat_tables([pq.read_table(path) for path in inputs], promote_options="permissive")
        with _atomic([parquet]) as temps:
            pq.write_table(table, temps[str(parquet)])
        say(f"{parquet}: {table.num_rows} rows from {len(inputs)} files")


def parquet_to_csv(parquet: str, csv: str, log: str | None = None) -> None:
    """The same table as CSV (for people without parquet tools)."""
    import pandas as pd

    with _log_to(log) as say:
        table = pd.read_parquet(parquet)
        with _atomic([csv]) as temps:
            table.to_csv(temps[str(csv)], index=False)
        say(f"{csv}: {len(table)} rows")


def write_engine_stamp(sources: Iterable[str], path: str, log: str | None = None) -> None:
    """Write {"files": {source: sha256}, "sha256": digest of all} for the engine's source files.

    The compute rule takes this one file as input instead of the sources themselves: Snakemake checksums every
    input once per output file, and 14 sources x 4 outputs x 72 jobs took a second of a five-second rebuild.
    """
    sources = sorted(str(source) for source in sources)
    with _log_to(log) as say:
        files = {Path(source).name: hashlib.sha256(Path(source).read_bytes()).hexdigest() for source in sources}
        digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
        with _atomic([path]) as temps:
            temps[str(path)].write_text(json.dumps({"files": files, "sha256": digest}, indent=2) + "\n")
        say(f"{path}: {len(files)} engine files, sha256 {digest}")


def write_json(data: dict, path: str, log: str | None = None) -> None:
    """Write `data` as indented JSON (e.g. results/specs.json from ResolvedConfig.specs())."""
    with _log_to(log) as say:
        with _atomic([path]) as temps:
            temps[str(path)].write_text(json.dumps(data, indent=2) + "\n")
        say(f"{path}: {len(data)} sections")


def write_plan_table(rows: list[dict], reason: str, path: str) -> None:
    """results/plans/{model}.parquet: roofline.planner.plan_table's rows (PLAN_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS,
    typed even when empty) and, in the parquet metadata key `reason`, why there are none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .columns import PLAN_COLUMNS, PLAN_TABLE_EXTRA_COLUMNS

    columns = PLAN_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS
    text = ("model", "gpu", "weight_dtype", "act_dtype", "kv_dtype", "attention", "bound", "estimate", "deployment")
    flags = ("attention_dp", "fits") + PLAN_TABLE_EXTRA_COLUMNS
    counts = ("devices", "tp", "pp", "ep", "batch", "isl", "osl", "seq_len")
    schema = pa.schema([(name, pa.string() if name in text else pa.bool_() if name in flags
                         else pa.int64() if name in counts else pa.float64()) for name in columns])
    table = pa.Table.from_pylist(rows, schema=schema)
    table = table.replace_schema_metadata({"reason": reason})
    with _atomic([path]) as temps:
        pq.write_table(table, temps[str(path)])


def read_plan_table(path: str):
    """(DataFrame, reason) of a results/plans/{model}.parquet file."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return table.to_pandas(), (table.schema.metadata or {}).get(b"reason", b"").decode()
