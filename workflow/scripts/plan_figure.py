"""Rule plan_figure: the Pareto figure of one model's deployment search (stderr goes to the rule's log)."""
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout

import pandas as pd  # noqa: E402

from roofline.figures import save  # noqa: E402
from roofline.figures.plan import plan_figure  # noqa: E402
from roofline.pipeline.io import read_plan_table  # noqa: E402

table, reason = read_plan_table(snakemake.input.plan)  # noqa: F821
plan = snakemake.params.plan  # noqa: F821
names = {gpu["key"]: gpu["name"] for gpu in plan["gpus"]}
measured = pd.read_parquet(snakemake.input.measured) if "measured" in snakemake.input.keys() else None  # noqa: F821
fig = plan_figure(table, snakemake.params.model["name"], reason, plan["workload"]["tpot_s"], names,  # noqa: F821
                  measured=measured)
svg = Path(snakemake.output.svg)  # noqa: F821
save(fig, svg.parent, svg.stem)
print(f"{svg}: {len(table)} frontier rows", file=sys.stderr)
