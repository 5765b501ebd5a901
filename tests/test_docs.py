"""The README documents every output column and the quick start that .ci/run executes."""
from pathlib import Path

import pytest

from roofline.engine import columns

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(set(columns.OP_COLUMNS + columns.OP_EXTRA_COLUMNS + columns.SCENARIO_COLUMNS
                                            + columns.TOTAL_COLUMNS + columns.TREATMENT_COLUMNS
                                            + columns.SWEEP_COLUMNS)))
def test_readme_lists_column(name):
    assert f"`{name}`" in README


def test_ci_runs_the_readme_test_command():
    quick_start = README.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.strip() for line in quick_start.strip().splitlines()]
    assert len(commands) == 2 and "snakemake --cores 4" in commands[0] and "pytest" in commands[1]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_example_figure_exists():
    figure = README.split("](", 1)[1].split(")", 1)[0]
    assert (ROOT / figure).is_file(), figure


def test_readme_table_of_shipped_calibrations_is_the_manifest():
    # the table under "Expected times" had drifted from the tables shipped (7 of its 27 counts) after a rebuild
    import json

    manifest = json.loads((ROOT / "workflow" / "roofline" / "data" / "calibrations" / "manifest.json").read_text())
    table = README.split("| device | default | tables (framework version, kernels kept) |\n|---|---|---|\n", 1)[1]
    assert len(table.split("\n\n", 1)[0].splitlines()) == len(manifest["devices"])  # no row left over
    for device, info in manifest["devices"].items():
        tables = ", ".join(f"{framework} {table['framework_version']} ({table['rows']:,})"
                           for framework, table in sorted(info["tables"].items()))
        assert f"| `{device}` | {info['default']} | {tables} |" in README, device
