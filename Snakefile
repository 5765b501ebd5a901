# Roofline analysis of LLM inference: models x GPUs x stages -> parquet tables -> figures -> HTML/PDF reports.
# Edit config.yaml, then run `snakemake --cores 4`. The default profile (profiles/default) is loaded automatically.
from snakemake.utils import min_version

min_version("9.0")


include: "workflow/rules/config_syntax.smk"  # config.yaml's YAML syntax, named by line, before Snakemake reads it


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/housekeeping.smk"
include: "workflow/rules/analyze.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/measurements.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/plan.smk"
include: "workflow/rules/serving.smk"


rule all:
    """Every table in results/ and every figure and report in reports/."""
    default_target: True
    input:
        expand(rules.aggregate.output[0], table=TABLES),
        expand(rules.csv.output[0], table=("ops", "totals")),
        rules.specs.output[0],
        expand(rules.model_aggregate.output[0], model=MODELS, table=TABLES),
        expand(rules.model_specs.output[0], model=MODELS),
        expand(rules.figures.output[0], model=MODELS),
        expand(rules.report.output.html, model=MODELS),
        expand(rules.report.output.pdf, model=MODELS),
        rules.summary.output,
        rules.index.output,
        PLAN_TARGETS,
        MEASURED_TARGETS,
        SERVING_TARGETS,


include: "workflow/rules/publish.smk"
