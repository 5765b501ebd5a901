"""Rule figures: every figure of one model from its tables and specs in results/models/{model}/ (stderr goes to the
rule's log)."""
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout

import json  # noqa: E402

import pandas as pd  # noqa: E402

from roofline.figures import render_model_figures  # noqa: E402

model = snakemake.wildcards.model  # noqa: F821
specs = json.loads(Path(snakemake.input.specs).read_text())  # noqa: F821
manifest = render_model_figures(model, pd.read_parquet(snakemake.input.ops),  # noqa: F821
                                pd.read_parquet(snakemake.input.sweeps), specs, snakemake.output[0],  # noqa: F821
                                totals=pd.read_parquet(snakemake.input.totals))  # noqa: F821
print(f"{model}: {len(manifest)} figures in {snakemake.output[0]}", file=sys.stderr)  # noqa: F821
