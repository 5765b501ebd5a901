# Your own measured runs beside ours (config section `measurements`) and the comparison with a previous run (config
# key `compare_with`). Nothing runs when neither is configured. Logic lives in roofline.serving.measured,
# roofline.pipeline.measurements and roofline.pipeline.compare.
from pathlib import Path

from snakemake.logging import logger

from roofline.pipeline.measurements import unmatched_lines

#: what predicts a measured run (the engine and estimate layers come in through rules.engine)
MEASURED_CODE = sorted(str(p) for p in (Path(workflow.basedir) / "workflow/roofline/serving").rglob("*.py"))

if workflow.is_main_process:
    for _line in unmatched_lines(RESOLVED.measurements):  # listed, never dropped silently
        logger.warning(_line)


localrules:
    measured_runs,
    compare,


rule measured:
    """results/measurements/{model}.parquet: the model's measured runs, each predicted at its own deployment and
    workload (bound, expected, measured, error; roofline.serving.measured.measurement_rows)."""
    input:
        engine=rules.engine.output[0],
        code=MEASURED_CODE,
    output:
        "results/measurements/{model}.parquet",
    log:
        "logs/measured/{model}.log",
    params:
        model=lambda wildcards: RESOLVED.model_params(wildcards.model),
        gpus=lambda wildcards: RESOLVED.measured_gpu_params(wildcards.model),
        scenario=lambda wildcards: RESOLVED.scenario_params(wildcards.model),
        runs=lambda wildcards: RESOLVED.measurement_params(wildcards.model),
        framework=RESOLVED.served_framework(),  # for runs that name none
    run:
        from roofline.pipeline.io import write_measured_table

        write_measured_table(
            params.model,
            params.gpus,
            params.scenario,
            params.runs,
            output[0],
            log=log[0],
            framework=params.framework,
        )


rule measured_runs:
    """results/measurements/rows.csv: every measured run of every file with its status (predicted, or why not: a
    model or gpu the config lacks)."""
    output:
        "results/measurements/rows.csv",
    log:
        "logs/measured/rows.log",
    params:
        runs=RESOLVED.measurement_params(),
    run:
        from roofline.pipeline.io import write_measured_runs

        write_measured_runs(params.runs, output[0], log=log[0])


rule compare:
    """results/compare.csv: what moved by more than 5% between the `compare_with` folder and this run's totals (and
    recommended plans where both have them)."""
    input:
        new=rules.aggregate.output[0].format(table="totals"),
        old=f"{RESOLVED.compare_with}/totals.parquet" if RESOLVED.compare_with else [],
        plans=lambda wildcards: (expand(rules.plan.output[0], model=MODELS) if RESOLVED.plan_search else []),
    output:
        "results/compare.csv",
    log:
        "logs/compare.log",
    params:
        old=RESOLVED.compare_with,
        threshold=0.05,
    run:
        from roofline.pipeline.io import write_comparison

        write_comparison(params.old, str(Path(input.new).parent), output[0], params.threshold, log=log[0])


def measured_inputs(wildcards):
    """The model's measured runs (config section `measurements`), for its report and its deployment search's figure."""
    if wildcards.model not in RESOLVED.measured_models():
        return {}
    return {"measured": expand(rules.measured.output[0], model=wildcards.model)}


def summary_extra_inputs(wildcards):
    """The comparison with `compare_with` and the list of measured runs, for the summary."""
    extra = {"comparison": rules.compare.output[0]} if RESOLVED.compare_with else {}
    return {**extra, "measured_runs": rules.measured_runs.output[0]} if RESOLVED.measurements else extra


MEASURED_TARGETS = (
    expand(rules.measured.output[0], model=RESOLVED.measured_models())
    + ([rules.measured_runs.output[0]] if RESOLVED.measurements else [])
    + ([rules.compare.output[0]] if RESOLVED.compare_with else [])
)
