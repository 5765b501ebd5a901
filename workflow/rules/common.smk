# Config validation, wildcard constraints and target lists. Logic lives in roofline.pipeline (config, schema,
# schema_messages); this file only wires it.
import re
from pathlib import Path

from snakemake.utils import validate

# the roofline package is on the path and refuse_config / workflow_config_replaced defined: config_syntax.smk
from roofline.engine.errors import RooflineInputError
from roofline.pipeline.config import resolve_config
from roofline.pipeline.serving_section import check_given_keys
from roofline.pipeline.schema import load_schema, typed_config
from roofline.pipeline.schema_messages import check_schema, describe_schema_error
from roofline.pipeline.sources import engine_sources

SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"


def _config_files():
    """The config files Snakemake merged, in order: the `configfile:` above (unless --replace-workflow-config
    replaced it), then each --configfile."""
    given = list(workflow.config_settings.configfiles)
    own = [f for f in workflow.configfiles if Path(f).absolute() not in given]
    return ([] if workflow_config_replaced() else own) + given


def _resolved_config():
    """Files re-read strictly (duplicate keys, YAML 1.2 numbers; strings coerced only in --config values, which
    Snakemake passes as strings), schema (fills defaults), then semantic checks; a bad config stops here with one
    line, before any job."""
    try:
        schema = load_schema(SCHEMA)
        typed = typed_config(_config_files(), workflow.config_settings.config, schema)
        config.clear()
        config.update(typed)
        check_schema(config, schema)  # one line, before validate() fills defaults (it fails on a mistyped value)
        check_given_keys(config.get("serving"))  # keys that act on nothing, as written (before the defaults)
        validate(config, SCHEMA)
        return resolve_config(config, base_dir=Path.cwd())
    except WorkflowError as error:
        if error.__context__ is None or not hasattr(error.__context__, "validator"):
            raise
        message = describe_schema_error(error.__context__)
    except RooflineInputError as error:
        message = str(error)
    refuse_config(message)


RESOLVED = _resolved_config()
MODELS, GPUS, STAGES = list(RESOLVED.models), list(RESOLVED.gpus), list(RESOLVED.stages)
TABLES = ("ops", "totals", "treatments", "sweeps")  # one parquet file each per (model, gpu, stage) job
ENGINE_SOURCES = engine_sources()  # the engine modules: library edits rerun the jobs that import them
# profiles/slurm-local keeps the light figure and report rules on the submitting node (config key local_rules; the
# localrules directive takes names only)
workflow.localrules(*config["local_rules"])


def refuse_replaced_config_on_a_cluster():
    """Snakemake 9 passes --configfile on to cluster jobs but not --replace-workflow-config: the jobs would merge
    config.yaml back in and plan or compute another grid than this run. Called on start (while the Snakefile is
    parsed, the executor is not known yet)."""
    if workflow.non_local_exec and workflow.config_settings.replace_workflow_config:
        raise WorkflowError(
            "--replace-workflow-config does not reach cluster jobs (they would read config.yaml too): put the "
            "config in config.yaml, or give it with --configfile alone"
        )


def _alternation(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    model=_alternation(MODELS),
    gpu=_alternation(GPUS),
    stage=_alternation(STAGES),
    table=_alternation(TABLES),


#: The model of the paper's Table 1 (roofline.report.paper.MODEL, not imported here: roofline.report pulls in
#: pandas at parse time; tests/test_workflow.py checks that both agree). Its report carries the comparison with
#: the paper; every other model's report links to it, so it reads that model's ops table (see paper_inputs).
PAPER_MODEL = "llama-2-7b"


def model_outputs(table, model):
    """Per-job files of one table of one model, every (gpu, stage) of the config (rule analyze's outputs)."""
    return expand(getattr(rules.analyze.output, table), model=model, gpu=GPUS, stage=STAGES)


def paper_inputs(wildcards):
    """Extra inputs of the report rule: the paper model's ops table and specs, for every other model's report when
    the paper model is configured. Such a report links to the comparison in the paper model's report when that
    comparison exists, which the configured gpus, stages and scenario decide (each of them reruns every report
    anyway), not the paper model's entry. Hence ancient(): the files must exist, but rebuilding them after an
    edit of the paper model's entry does not rerun the other reports; adding or removing the paper model changes
    this list of inputs, which does."""
    if wildcards.model == PAPER_MODEL or PAPER_MODEL not in MODELS:
        return {}
    return {
        "paper_ops": ancient(rules.model_aggregate.output[0].format(model=PAPER_MODEL, table="ops")),
        "paper_specs": ancient(rules.model_specs.output[0].format(model=PAPER_MODEL)),
    }


def model_table(table):
    """rules.model_aggregate's output for one table, {model} left open: results/models/{model}/<table>.parquet."""
    return expand(rules.model_aggregate.output[0], table=table, allow_missing=True)[0]
