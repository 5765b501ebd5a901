# Deployment search (config section `plan`, optional): per model, each candidate gpu's Pareto frontier of tokens/s
# per device vs tokens/s per user under the targets (its figure: rules.figures). Nothing runs when the section is
# absent.
from pathlib import Path

from snakemake.logging import logger

#: the search's own code (the engine and estimate layers it uses come in through rules.engine)
SERVING_CODE = sorted(str(p) for p in (Path(workflow.basedir) / "workflow/roofline/serving").rglob("*.py"))

_beyond = RESOLVED.plan_beyond_gpus() if workflow.is_main_process else ""
if _beyond:  # said, not left for page 1 to surprise
    logger.warning(_beyond)


rule plan:
    """results/plans/{model}.parquet: each candidate gpu's frontier (roofline.serving.planner.plan_table), best first; the
    parquet metadata key `reason` says why it is empty when no plan fits and meets the targets."""
    input:
        engine=rules.engine.output[0],
        code=SERVING_CODE,
    output:
        "results/plans/{model}.parquet",
    log:
        "logs/plan/{model}.log",
    # the longest jobs of the grid (a model's figures wait for them): started first
    priority: 2
    params:
        model=lambda wildcards: RESOLVED.model_params(wildcards.model),
        plan=RESOLVED.plan_search_params() if RESOLVED.plan_search else {},
    script:
        "../scripts/plan.py"


#: the Pareto figure of each search is drawn with the model's other figures (rules.figures)
PLAN_TARGETS = expand(rules.plan.output[0], model=MODELS) if RESOLVED.plan_search else []
