"""Rules report, summary and index: build the page's context from the tables and render HTML (+ PDF).

A model's report reads that model's tables and specs (results/models/{model}/); when the rule also hands it the
paper model's ops table and specs (paper_ops, paper_specs), they are added so that the report can link to the
paper comparison in that model's report. The summary and the index read the grid-wide tables and specs.
stderr (WeasyPrint's warnings included) goes to the rule's log.
"""
import logging
import os
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout
logging.basicConfig(stream=sys.stderr, level=logging.WARNING)

import pandas as pd  # noqa: E402

from roofline import report  # noqa: E402

inputs, outputs, page = snakemake.input, snakemake.output, snakemake.params.page  # noqa: F821
html = Path(outputs.html)
specs = report.load_specs(inputs.specs)
tables = report.load_tables({name: inputs[name] for name in ("ops", "totals", "treatments", "sweeps")
                             if name in inputs.keys()})
if "paper_ops" in inputs.keys():
    tables["ops"] = pd.concat([tables["ops"], report.load_tables({"ops": inputs.paper_ops})["ops"]],
                              ignore_index=True)
    specs["models"].update(report.load_specs(inputs.paper_specs)["models"])
if "plan" in inputs.keys():  # the deployment search of this model (config section `plan`)
    tables["plans"] = report.load_plan(inputs.plan)  # its metadata holds the workload and targets searched
if "serving" in inputs.keys():  # the served workloads of this model (config section `serving`)
    tables["serving"] = report.load_serving(inputs.serving)  # attrs["skipped"]: what could not be served
if page == "model":
    figures = Path(inputs.figures)
    context = report.model_context(snakemake.wildcards.model, tables, specs,  # noqa: F821
                                   report.load_manifest(figures), os.path.relpath(figures, html.parent),
                                   plotly_js=os.path.relpath(inputs.plotly_js, html.parent))
elif page == "summary":  # with each model's deployment search when the config has one (its served rows lead)
    plans = {Path(path).stem: report.load_plan(path) for path in inputs.get("plans", [])}
    context = report.summary_context(tables, specs, plans)
else:
    context = report.index_context(specs, {Path(d).name: report.load_manifest(d) for d in inputs.figures},
                                   snakemake.params.per_model)  # noqa: F821 (plans, serving: the sections run)
if page == "model":  # cost and energy per token on page 1, when a GPU has a price (config price_per_hour)
    context["cost"] = report.cost_section(tables["totals"])
if "measured" in inputs.keys():  # your own runs beside ours (config section `measurements`)
    context["measured"] = report.measured_section(pd.read_parquet(inputs.measured))
if "comparison" in inputs.keys():  # what moved since `compare_with`
    context["comparison"] = report.comparison_section(pd.read_csv(inputs.comparison), snakemake.config["compare_with"])  # noqa: F821
if "measured_runs" in inputs.keys():  # measured runs naming a model or gpu the config lacks
    context["unmatched_runs"] = report.unmatched_runs(pd.read_csv(inputs.measured_runs))
report.write_report(context, html, outputs.get("pdf"))
print(f"{page}: wrote {', '.join(outputs)}", file=sys.stderr)
