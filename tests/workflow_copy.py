"""Helper shared by the end-to-end tests: a copy of the workflow (Snakefile, rules, package, profiles, templates)
that a test can run Snakemake on without touching the checkout."""
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what a copy of the workflow needs
WORKFLOW_FILES = ("Snakefile", "workflow", "profiles", "templates")


def copy_workflow(target: Path) -> Path:
    """Copy WORKFLOW_FILES of this checkout into `target` (created), without __pycache__; returns `target`."""
    target.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target / name)
    return target
