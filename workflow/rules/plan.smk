# Deployment search (config section `plan`, optional): per model, each candidate gpu's Pareto frontier of tokens/s
# per device vs tokens/s per user under the targets, and its figure. Nothing runs when the section is absent.
from pathlib import Path

#: the search's own code (the engine and estimate layers it uses come in through rules.engine)
SERVING_CODE = sorted(str(p) for p in (Path(workflow.basedir) / "workflow/roofline/serving").rglob("*.py"))


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
    params:
        model=lambda wildcards: RESOLVED.model_params(wildcards.model),
        plan=RESOLVED.plan_search_params() if RESOLVED.plan_search else {},
    script:
        "../scripts/plan.py"


rule plan_figure:
    """reports/plans/{model}.svg and .png: tokens/s per device vs tokens/s per user, one curve per gpu, the chosen
    plan marked."""
    input:
        plan=rules.plan.output[0],
        code=FIGURE_CODE,
    output:
        svg="reports/plans/{model}.svg",
        png="reports/plans/{model}.png",
    log:
        "logs/plan_figure/{model}.log",
    params:
        model=lambda wildcards: RESOLVED.model_params(wildcards.model),
        plan=rules.plan.params.plan,
    script:
        "../scripts/plan_figure.py"


PLAN_TARGETS = (
    expand(rules.plan.output[0], model=MODELS) + expand(rules.plan_figure.output.svg, model=MODELS)
    if RESOLVED.plan_search
    else []
)
