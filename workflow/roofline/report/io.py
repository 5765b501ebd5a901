"""Reading the report's inputs: aggregate parquet tables, results/specs.json, a figure directory's manifest."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..serving.plan_io import read_plan_search
from ..serving.table import read_serving_table

#: the manifest file the figures package writes into each reports/figures/{model}/ directory
MANIFEST = "figures.json"


def load_tables(paths: dict[str, str | Path]) -> dict[str, pd.DataFrame]:
    """{name: DataFrame} from {name: parquet path} (ops, totals, treatments, sweeps)."""
    return {name: pd.read_parquet(path) for name, path in paths.items()}


def load_plan(path: str | Path) -> pd.DataFrame:
    """The frontier table of results/plans/{model}.parquet; attrs["reason"] says why it is empty, attrs["search"]
    what was searched (plan_io.search_metadata) and attrs["workload"] its targets (tpot_s, ttft_s; when the table
    records them)."""
    table, reason, search = read_plan_search(str(path))
    table.attrs.update(reason=reason, search=search)
    if search.get("workload"):
        table.attrs["workload"] = dict(search["workload"])
    return table


def load_serving(path: str | Path) -> pd.DataFrame:
    """The served rows of results/serving/{model}.parquet; attrs["skipped"] what could not be served and why."""
    table, skipped = read_serving_table(str(path))
    table.attrs["skipped"] = skipped
    return table


def load_specs(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def load_manifest(directory: str | Path) -> list[dict]:
    """The figure list of one model's figure directory ([] when the directory has none), each interactive figure's
    plotly.js spec read in (`interactive_spec`: the HTML report carries it inline, since a page opened from disk may
    not fetch files)."""
    path = Path(directory) / MANIFEST
    entries = json.loads(path.read_text()) if path.is_file() else []
    for entry in entries:
        if entry.get("interactive"):
            entry["interactive_spec"] = (Path(directory) / entry["interactive"]).read_text()
    return entries
