"""Rule plan: the deployment search of one model (roofline.serving.search_rows.plan_table_for) to
results/plans/{model}.parquet. stderr goes to the rule's log."""
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout

from roofline.engine.models import ModelSpec  # noqa: E402
from roofline.pipeline.io import write_plan_table  # noqa: E402
from roofline.serving.cost import add_plan_cost  # noqa: E402
from roofline.serving.plan_io import search_metadata  # noqa: E402
from roofline.serving.planner import PlanSettings  # noqa: E402
from roofline.serving.search_rows import plan_table_for  # noqa: E402

model = ModelSpec(**snakemake.params.model)  # noqa: F821
settings = PlanSettings.from_params(snakemake.params.plan)  # noqa: F821
rows, reason = plan_table_for(model, settings)
rows = add_plan_cost(rows, {gpu.key: gpu for gpu in settings.gpus})  # priced and powered as the config says
write_plan_table(rows, reason, snakemake.output[0], search_metadata(settings))  # noqa: F821
print(f"{model.key}: {len(rows)} frontier rows{'; ' + reason if reason else ''}", file=sys.stderr)
