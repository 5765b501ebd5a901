# Figures: one job per model, drawn from that model's aggregate tables and specs (results/models/{model}/), so that
# editing one model's entry redraws only its figures (matplotlib is not thread-safe: script:, not run:).
from pathlib import Path

FIGURE_CODE = sorted(str(p) for p in (Path(workflow.basedir) / "workflow/roofline/figures").rglob("*.py"))


rule figures:
    """reports/figures/{model}/: the figures of roofline.figures.FIGURES (roofline per GPU, cross-GPU roofline per
    stage, time breakdown, batch and sequence-length sweeps), each as SVG (report) and PNG, plus figures.json (the
    manifest the report reads: kinds, files, captions, places); the totals say which setups do not fit (their
    timings are marked)."""
    input:
        ops=model_table("ops"),
        sweeps=model_table("sweeps"),
        totals=model_table("totals"),
        specs=rules.model_specs.output[0],
        code=ENGINE_SOURCES + FIGURE_CODE,
    output:
        directory("reports/figures/{model}"),
    log:
        "logs/figures/{model}.log",
    script:
        "../scripts/figures.py"
