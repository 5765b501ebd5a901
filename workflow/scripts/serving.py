"""Rule serving: one model's served table (roofline.serving.table.serving_table) to results/serving/{model}.parquet.
stderr goes to the rule's log."""
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout

from roofline.engine.hardware import Accelerator  # noqa: E402
from roofline.engine.models import ModelSpec  # noqa: E402
from roofline.engine.scenario import Scenario  # noqa: E402
from roofline.pipeline.io import write_serving_table  # noqa: E402
from roofline.serving.table import ServingSettings, serving_table  # noqa: E402

params = snakemake.params.serving  # noqa: F821
model = ModelSpec(**snakemake.params.model)  # noqa: F821
gpus = {key: Accelerator(**spec) for key, spec in params["gpus"].items()}
scenarios = {key: Scenario(**spec) for key, spec in params["scenarios"].items()}
rows, skipped = serving_table(model, gpus, scenarios, ServingSettings.from_params(params["settings"]))
write_serving_table(rows, snakemake.output[0], skipped)  # noqa: F821
print(f"{model.key}: {len(rows)} served rows", file=sys.stderr)
for line in skipped:  # in the log, in the table's metadata, and on the console: a gpu left out is said aloud
    print(f"not served: {line}", file=sys.stderr)
    print(f"serving {model.key}: not served: {line}", file=sys.__stderr__)
