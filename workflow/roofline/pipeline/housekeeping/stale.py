"""Outputs of keys no longer in the config: removing a model, GPU or stage from config.yaml would leave its
reports, figures and results in place, where they mislead anyone browsing reports/ and would be published with the
rest. `stale_outputs` lists them; `move_aside` moves them under .snakemake/stale-outputs/<UTC time>/ (same relative
paths), out of results/ and reports/ but not deleted.

Only paths this workflow writes per key are considered (see `stale_outputs`); a top-level report is taken for a
former model's only if that model's results or figures folder was found, so other files in reports/ are never moved.
"""
from __future__ import annotations

import re
import shutil
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

ASIDE = Path(".snakemake") / "stale-outputs"
#: config keys whose --config override narrows the grid for one run: their outputs stay in place then (a profile's
#: or a one-off `local_rules`, `publish` or `scenario` override moves nothing either way)
GRID_KEYS = ("models", "gpus", "stages", "measurements", "plan", "serving", "compare_with")


def narrowed_for_one_run(overrides) -> bool:
    """Whether --config `overrides` (Snakemake's config_settings.config) narrow the grid for this run alone."""
    return bool(set(overrides or ()) & set(GRID_KEYS))


#: the temporary sibling an atomic writer makes of a folder NAME (figures.render.atomic_directory): .NAME.xxxxxxxx.part
_TEMPORARY = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.(?:part|old)")


def _dirs(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.is_dir()) if path.is_dir() else []


def _key(folder: Path) -> str:
    """The key a folder is named after; a temporary folder of an interrupted write counts as its target's (its
    writer cleans it up when that target is written again, so only a removed key's is stale)."""
    match = _TEMPORARY.fullmatch(folder.name)
    return match.group(1) if match else folder.name


#: results/{folder}/{model}.parquet tables (the plan and serving rules')
PER_MODEL_TABLES = ("plans", "serving")
#: reports/{model}{suffix}: the model's HTML and PDF report (other files there are the user's: never moved)
MODEL_REPORTS = (".html", ".pdf")


def stale_outputs(workdir: Path, models: Iterable[str], gpus: Iterable[str], stages: Iterable[str],
                  tables: Iterable[str], measured: Iterable[str] | None = None,
                  unasked: Iterable[str] = ()) -> list[Path]:
    """Paths (relative to `workdir`) of per-key outputs whose model, GPU or stage the config no longer lists:
    results/{table}/{model}/[{gpu}/[{stage}.parquet]], results/models/{model}/, results/plans|serving/{model}.parquet,
    reports/figures/{model}/ and reports/{model}.html|pdf; with `measured` (the models that have measured runs), the
    results/measurements/{model}.parquet of the others; and the files of `unasked` (outputs the config no longer asks
    for: results/measurements/rows.csv without measurements, ...) that exist."""
    workdir, models, gpus, stages = Path(workdir), set(models), set(gpus), set(stages)
    stale: list[Path] = []
    former: set[str] = set()
    for table in tables:
        for model_dir in _dirs(workdir / "results" / table):
            if _key(model_dir) not in models:
                stale.append(model_dir)
                former.add(_key(model_dir))
                continue
            for gpu_dir in _dirs(model_dir):
                if _key(gpu_dir) not in gpus:
                    stale.append(gpu_dir)
                    continue
                stale += sorted(p for p in gpu_dir.glob("*.parquet") if p.stem not in stages)
    for folder in (workdir / "results" / "models", workdir / "reports" / "figures"):
        for model_dir in _dirs(folder):
            if _key(model_dir) not in models:
                stale.append(model_dir)
                former.add(_key(model_dir))
    for folder in PER_MODEL_TABLES:  # one file per model: the deployment search's and the served table
        for table in sorted((workdir / "results" / folder).glob("*.parquet")):
            if table.stem not in models:
                stale.append(table)
                former.add(table.stem)
    if measured is not None:  # a model whose runs left the measurements files (or all of them left the config)
        measured = set(measured)
        stale += [table for table in sorted((workdir / "results" / "measurements").glob("*.parquet"))
                  if table.stem not in measured]
    stale += [workdir / path for path in unasked if (workdir / path).is_file()]
    for model in sorted(former):
        stale += [p for p in (workdir / "reports" / f"{model}{suffix}" for suffix in MODEL_REPORTS) if p.is_file()]
    return [p.relative_to(workdir) for p in stale]


def move_aside(workdir: Path, paths: list[Path], now: datetime | None = None) -> Path | None:
    """Move `paths` (relative to `workdir`) to .snakemake/stale-outputs/<UTC time>/ keeping their relative paths;
    return that folder (None when there is nothing to move)."""
    if not paths:
        return None
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S.%fZ")
    target = Path(workdir) / ASIDE / stamp
    for path in paths:
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(Path(workdir) / path), str(destination))
    return target
