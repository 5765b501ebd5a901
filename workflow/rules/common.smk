# Config validation, wildcard constraints and target lists. Logic lives in roofline.config; this file only wires it.
import re
import sys
from pathlib import Path

from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # the roofline package of this checkout
from roofline.config import coerce_strings, describe_schema_error, load_schema, resolve_config
from roofline.errors import RooflineInputError
from roofline.pipeline_io import engine_sources

SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"


def _resolved_config():
    """Schema (fills defaults), then semantic checks; a bad config stops here with one line, before any job."""
    config.update(coerce_strings(config, load_schema(SCHEMA)))  # --config passes nested values as strings
    try:
        validate(config, SCHEMA)
        return resolve_config(config, base_dir=Path.cwd())
    except WorkflowError as error:
        if error.__context__ is None or not hasattr(error.__context__, "validator"):
            raise
        message = describe_schema_error(error.__context__)
    except RooflineInputError as error:
        message = str(error)
    sys.exit("Invalid configuration: " + " ".join(message.splitlines()))


RESOLVED = _resolved_config()
MODELS, GPUS, STAGES = list(RESOLVED.models), list(RESOLVED.gpus), list(RESOLVED.stages)
TABLES = ("ops", "totals", "treatments", "sweeps")  # one parquet file each per (model, gpu, stage) job
ENGINE_SOURCES = engine_sources()  # the engine modules: library edits rerun the jobs that import them


def _alternation(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    model=_alternation(MODELS),
    gpu=_alternation(GPUS),
    stage=_alternation(STAGES),
    table=_alternation(TABLES),


def job_outputs(table):
    """Per-job files of one table, every (model, gpu, stage) of the config."""
    return expand(f"results/{table}/{{model}}/{{gpu}}/{{stage}}.parquet", model=MODELS, gpu=GPUS, stage=STAGES)
