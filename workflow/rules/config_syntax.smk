# config.yaml read strictly before the `configfile:` directive reads it: a YAML syntax error is refused in one line
# naming its line and column (Snakemake's own reading says "Config file is not valid JSON or YAML" and no more).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # the roofline package of this checkout
from roofline.engine.errors import RooflineInputError
from roofline.pipeline.yaml_loader import load_config_file

_replaced = workflow.config_settings.replace_workflow_config and workflow.config_settings.overwrite_config
if Path("config.yaml").is_file() and not _replaced:  # relative to the working directory, as `configfile:` reads it
    try:
        load_config_file("config.yaml")
    except RooflineInputError as error:
        print("Invalid configuration: " + " ".join(str(error).splitlines()), file=sys.stderr)
        sys.exit(2)  # bad input: the status the roofline command uses
