# config.yaml read strictly before the `configfile:` directive reads it: a YAML syntax error is refused in one line
# naming its line and column (Snakemake's own reading says "Config file is not valid JSON or YAML" and no more), and
# so is a file that holds no mapping of sections (empty, only comments, a list).
# Included first: it puts this checkout's roofline package on the path and holds what common.smk refuses with.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # the roofline package of this checkout
from roofline.engine.errors import RooflineInputError
from roofline.pipeline.yaml_loader import check_config_file


def refuse_config(message: str):
    """Stop before any job with one line naming what is wrong, exit 2 (the status the roofline command uses)."""
    print("Invalid configuration: " + " ".join(message.splitlines()), file=sys.stderr)
    sys.exit(2)


def workflow_config_replaced() -> bool:
    """Whether --replace-workflow-config (with a --configfile or --config) stands in for config.yaml."""
    return workflow.config_settings.replace_workflow_config and workflow.config_settings.overwrite_config


if Path("config.yaml").is_file() and not workflow_config_replaced():  # as `configfile:` reads it: from the cwd
    try:
        check_config_file("config.yaml")
    except RooflineInputError as error:
        refuse_config(str(error))
