"""Rule figures: every figure of one model from its tables and specs in results/models/{model}/, and the Pareto
figure of its deployment search when the config has a `plan` section (stderr goes to the rule's log)."""
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout

import json  # noqa: E402

import pandas as pd  # noqa: E402

from roofline.figures import PlanSearch, render_model_figures  # noqa: E402

inputs, model = snakemake.input, snakemake.wildcards.model  # noqa: F821
specs = json.loads(Path(inputs.specs).read_text())
plan = None
if "plan" in inputs.keys():  # the deployment search (config section `plan`)
    from roofline.serving.plan_io import read_plan_table

    measured = pd.read_parquet(inputs.measured) if "measured" in inputs.keys() else None  # your runs, as points
    plan = PlanSearch.from_params(*read_plan_table(inputs.plan), snakemake.params.plan, measured)  # noqa: F821
manifest = render_model_figures(model, pd.read_parquet(inputs.ops), pd.read_parquet(inputs.sweeps), specs,
                                snakemake.output[0], totals=pd.read_parquet(inputs.totals), plan=plan)  # noqa: F821
print(f"{model}: {len(manifest)} figures in {snakemake.output[0]}", file=sys.stderr)  # noqa: F821
