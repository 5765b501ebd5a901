# Figures: one job per model, drawn from that model's aggregate tables and specs (results/models/{model}/), so that
# editing one model's entry redraws only its figures (matplotlib is not thread-safe: script:, not run:).
from pathlib import Path

FIGURE_CODE = sorted(str(p) for p in (Path(workflow.basedir) / "workflow/roofline/figures").rglob("*.py"))


def plan_search_inputs(wildcards):
    """The model's deployment search (config section `plan`): its Pareto figure is one of the model's figures."""
    return {"plan": expand(rules.plan.output[0], model=wildcards.model)} if RESOLVED.plan_search else {}


rule figures:
    """reports/figures/{model}/: the figures of roofline.figures.FIGURES (the deployment search's Pareto figure,
    roofline per GPU, cross-GPU roofline per stage, time breakdown, batch and sequence-length sweeps), each drawn
    once and saved as SVG (report), PNG where a wiki shows it, and a plotly.js spec where the HTML report shows it
    interactive, plus figures.json (the manifest the report reads: kinds, files, captions, places); the totals
    say which setups do not fit (their timings are marked)."""
    input:
        unpack(plan_search_inputs),
        unpack(measured_inputs),
        ops=model_table("ops"),
        sweeps=model_table("sweeps"),
        totals=model_table("totals"),
        specs=rules.model_specs.output[0],
        code=ENGINE_SOURCES + FIGURE_CODE,
    output:
        directory("reports/figures/{model}"),
    log:
        "logs/figures/{model}.log",
    # every model's figures before any report (a report waits for its figures, so a figures job left for the end
    # runs alone with its report after it: ~10 s of one idle core on 2 cores); the plan jobs, longer, go first
    priority: 1
    params:
        plan=RESOLVED.plan_search_params() if RESOLVED.plan_search else {},
    script:
        "../scripts/figures.py"
