# Publishing: reports/wiki/ (a Markdown bundle for git-backed wikis) and, with publish.git in config.yaml, the push
# of that bundle to the wiki repository. Included after rule all: `publish` builds everything first.


rule wiki:
    """reports/wiki/: Home.md (summary table), one page per configured model, _Sidebar.md, the PDFs and key PNGs
    under files/; built only from the configured models, so a stale report of a removed model is never published."""
    input:
        **{table: expand(rules.model_aggregate.output[0], model=MODELS, table=table) for table in TABLES},
        summary=rules.summary.output.pdf,
        grid_totals=rules.aggregate.output[0].format(table="totals"),
        grid_treatments=rules.aggregate.output[0].format(table="treatments"),
        grid_specs=rules.specs.output[0],
        pdfs=expand(rules.report.output.pdf, model=MODELS),
        figures=expand(rules.figures.output[0], model=MODELS),
        specs=expand(rules.model_specs.output[0], model=MODELS),
        plans=all_plan_inputs,
        code=REPORT_CODE,
    output:
        directory("reports/wiki"),
    log:
        "logs/report/wiki.log",
    params:
        models=MODELS,
    script:
        "../scripts/wiki.py"


rule publish:
    """Everything rule all builds, reports/wiki/, and with publish.git set: clone (or reuse .publish/wiki), replace
    the pages it owns, commit when something changed, push. A failed push leaves reports/wiki/ as it is and says
    why in one line (logs/publish.log)."""
    input:
        rules.all.input,
        wiki=rules.wiki.output[0],
    log:
        "logs/publish.log",
    params:
        publish=config.get("publish") or {},
        clone=".publish/wiki",
    script:
        "../scripts/publish.py"
