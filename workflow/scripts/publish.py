"""Rule publish: push reports/wiki/ to the wiki repository of publish.git (config.yaml), if set. One line on the
terminal and in the rule's log says what happened or why it failed; a failure exits with status 1 and leaves
reports/wiki/ untouched."""
import sys
from pathlib import Path

log = open(snakemake.log[0], "w")  # noqa: F821 (snakemake is injected)
sys.path.insert(0, str(Path(snakemake.scriptdir).parent))  # noqa: F821 - the roofline package of this checkout

from roofline.report.publish import PublishError, publish  # noqa: E402


def say(line: str) -> None:
    for stream in (log, sys.stderr):
        print(f"publish: {line}", file=stream, flush=True)


settings, bundle = snakemake.params.publish, snakemake.input.wiki  # noqa: F821
if not settings.get("git"):
    say(f"wrote {bundle}; set publish.git in config.yaml to push it to a wiki repository")
    sys.exit(0)
try:
    say(publish(bundle, settings["git"], settings.get("branch", "master"),
                settings.get("message", "Update roofline reports"), snakemake.params.clone))  # noqa: F821
except PublishError as error:
    say(f"{error} (the bundle in {bundle} is intact)")
    sys.exit(1)
