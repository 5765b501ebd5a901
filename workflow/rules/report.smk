# Reports: HTML and PDF rendered from one context per page (WeasyPrint is not thread-safe: script:, not run:).
# A model's report reads that model's tables and specs (results/models/{model}/) and figures; the summary and the
# index, which show every model, read the grid-wide results/totals.parquet and results/specs.json.
from pathlib import Path

REPORT_CODE = sorted(
    str(p)
    for p in [
        *(Path(workflow.basedir) / "workflow/roofline/report").rglob("*.py"),  # text/ too
        *(Path(workflow.basedir) / "templates").glob("*"),
    ]
)


def plan_inputs(wildcards):
    """The model's deployment search (config section `plan`): its recommended plans go into the decision page."""
    return {"plan": expand(rules.plan.output[0], model=wildcards.model)} if RESOLVED.plan_search else {}


def serving_inputs(wildcards):
    """The model's served workloads (config section `serving`): a table per workload in its report."""
    return {"serving": expand(rules.serving.output[0], model=wildcards.model)} if RESOLVED.serving else {}


def all_plan_inputs(wildcards):
    """Every model's deployment search, for the summary (none without a `plan` section)."""
    return expand(rules.plan.output[0], model=MODELS) if RESOLVED.plan_search else []


localrules:
    plotly_js,


rule plotly_js:
    """reports/assets/plotly.min.js: the plotly.js bundle the HTML reports' interactive figures load from beside
    them (copied from the plotly package: no CDN, no network)."""
    output:
        "reports/assets/plotly.min.js",
    log:
        "logs/report/plotly_js.log",
    run:
        from roofline.report.assets import write_plotly_js

        write_plotly_js(output[0])


rule report:
    """reports/{model}.html and .pdf: the deep dive of one model on every configured GPU and stage."""
    input:
        unpack(paper_inputs),
        unpack(plan_inputs),
        unpack(serving_inputs),
        unpack(measured_inputs),
        ops=model_table("ops"),
        totals=model_table("totals"),
        treatments=model_table("treatments"),
        sweeps=model_table("sweeps"),
        specs=rules.model_specs.output[0],
        figures=rules.figures.output[0],
        plotly_js=rules.plotly_js.output[0],
        code=ENGINE_SOURCES + REPORT_CODE,
    output:
        html="reports/{model}.html",
        pdf="reports/{model}.pdf",
    log:
        "logs/report/{model}.log",
    params:
        page="model",
    script:
        "../scripts/report.py"


rule summary:
    """reports/summary.html and .pdf: one page, model x GPU (the treatments give the best lever and the maximum
    throughput)."""
    input:
        unpack(summary_extra_inputs),
        plans=all_plan_inputs,
        totals=expand(rules.aggregate.output[0], table="totals"),
        treatments=expand(rules.aggregate.output[0], table="treatments"),
        specs=rules.specs.output[0],
        code=ENGINE_SOURCES + REPORT_CODE,
    output:
        html="reports/summary.html",
        pdf="reports/summary.pdf",
    log:
        "logs/report/summary.log",
    params:
        page="summary",
    script:
        "../scripts/report.py"


rule index:
    """reports/index.html: links to the summary, every model report and every figure."""
    input:
        specs=rules.specs.output[0],
        figures=expand(rules.figures.output[0], model=MODELS),
        reports=expand(rules.report.output.html, model=MODELS),
        summary=rules.summary.output.html,
        code=REPORT_CODE,
    output:
        html="reports/index.html",
    log:
        "logs/report/index.log",
    params:
        page="index",
        per_model=[
            *(["plans"] if RESOLVED.plan_search else []),
            *(["serving"] if RESOLVED.serving else []),
        ],
    script:
        "../scripts/report.py"
