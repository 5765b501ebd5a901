"""Rule wiki: reports/wiki/ from the summary and each configured model's tables, specs, PDF and figures (stderr goes
to the rule's log)."""
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout

from roofline import report  # noqa: E402
from roofline.report import wiki  # noqa: E402

inputs, target = snakemake.input, Path(snakemake.output[0])  # noqa: F821
grid = report.load_tables({"totals": inputs.grid_totals, "treatments": inputs.grid_treatments})
plans = {Path(path).stem: report.load_plan(path) for path in inputs.plans}  # the deployment searches, if any
summary = report.summary_context(grid, report.load_specs(inputs.grid_specs), plans)
contexts, pdfs, figure_dirs = {}, {}, {}
for i, model in enumerate(snakemake.params.models):  # noqa: F821 - the configured models, in config order
    tables = report.load_tables({name: inputs[name][i] for name in ("ops", "totals", "treatments", "sweeps")})
    if model in plans:
        tables["plans"] = plans[model]
    figures = Path(inputs.figures[i])
    contexts[model] = report.model_context(model, tables, report.load_specs(inputs.specs[i]),
                                           report.load_manifest(figures), str(figures))
    pdfs[model], figure_dirs[model] = Path(inputs.pdfs[i]), figures
files = wiki.write_bundle(target, summary, contexts, pdfs, figure_dirs, inputs.summary)
print(f"wiki: {len(files)} files in {target}", file=sys.stderr)
