"""Write all figures of one model and a manifest the report reads: each figure drawn once and saved in the formats
its place needs (SVG for the report, PNG also for the wiki's figures: registry.FORMATS), plus a plotly.js spec for
the HTML report's interactive figures.

The figures are those of the `FIGURES` registry. The manifest `figures.json` lists each figure drawn: its kind,
GPU, stage, label, caption (and note), where the report shows it (place, and rank within the place) and its file
names (`svg`, `png` where published, `interactive` where it has a plotly.js spec), so the report finds and describes
its figures without importing this package (figures and report depend on the engine only, not on each other).

A model's figures are drawn into a temporary sibling folder that replaces the target folder only once every file
and the manifest are written: an interrupted job leaves the previous folder (or none), never a partial one.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from .inputs import SCOPES, ModelFigures, PlanSearch, misfit_pairs, specs_objects  # noqa: F401 (for callers)
from .registry import FIGURES, FORMATS, Figure
from .style import style

#: the manifest file in each reports/figures/{model}/ (roofline.report.io.MANIFEST reads it)
MANIFEST = "figures.json"


def save(fig, directory: Path, stem: str, formats=("svg", "png")) -> dict[str, str]:
    """Save `fig` as stem.svg (text as text, no date) and/or stem.png, close it, return the file names."""
    files = {}
    with style():
        for kind in formats:
            fig.savefig(directory / f"{stem}.{kind}", **({"metadata": {"Date": None}} if kind == "svg" else {}))
            files[kind] = f"{stem}.{kind}"
    plt.close(fig)
    return files


def save_spec(spec: dict, directory: Path, stem: str) -> dict[str, str]:
    """An interactive figure's plotly.js spec as stem.plotly.json (no NaN: JSON has none); its manifest key."""
    (directory / f"{stem}.plotly.json").write_text(json.dumps(spec, separators=(",", ":"), allow_nan=False))
    return {"interactive": f"{stem}.plotly.json"}


def leftovers(target: Path) -> list[Path]:
    """Temporary siblings of `target` (.NAME.xxxxxxxx.part or .old, as `atomic_directory` names them) that a killed
    job left behind; the exact pattern never matches another target's (a key may contain dots)."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.(part|old)")
    return [p for p in target.parent.iterdir() if pattern.fullmatch(p.name)]


@contextmanager
def atomic_directory(target: str | Path):
    """A fresh temporary folder next to `target` to fill; on success it is renamed to `target` (an older `target`
    is moved aside first and deleted after), on any failure or interruption it is deleted."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in leftovers(target):  # of a job killed before it could clean up (SIGKILL, power loss)
        shutil.rmtree(stale, ignore_errors=True)
    temp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part"))
    try:
        yield temp
        os.chmod(temp, 0o755)  # mkdtemp creates 0700
        old = None
        if target.exists() or target.is_symlink():
            old = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
            os.replace(target, old / target.name)
        try:
            os.replace(temp, target)
        except BaseException:
            if old is not None:  # put the previous folder back
                os.replace(old / target.name, target)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def render_model_figures(model: str, ops: pd.DataFrame, sweeps: pd.DataFrame, specs: dict,
                         directory: str | Path, totals: pd.DataFrame | None = None,
                         plan: PlanSearch | None = None) -> list[dict]:
    """All figures of `model` into `directory` (replacing it as a whole, see `atomic_directory`); returns (and
    writes) the manifest. With `totals`, timings of setups that do not fit are marked; with `plan` (the deployment
    search), its Pareto figure is drawn too."""
    data = ModelFigures.read(model, ops, sweeps, specs, misfit_pairs(totals, model), plan)
    with atomic_directory(directory) as temp:
        return _render(data, temp)


def _render(data: ModelFigures, directory: Path) -> list[dict]:
    """Per GPU, per stage, then for the model: each figure of the registry that applies, in registry order."""
    manifest = []
    for scope in SCOPES:
        for item in data.items(scope):
            for rank, (kind, figure) in enumerate(FIGURES.items()):
                if figure.scope == scope and figure.applies(data, item):
                    manifest.append(_draw(kind, rank, figure, data, item, directory))
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _draw(kind: str, rank: int, figure: Figure, data: ModelFigures, item: str | None, directory: Path) -> dict:
    """Draw and save one figure; its manifest entry."""
    gpu = item if figure.scope == "gpu" else None
    stage = item if figure.scope == "stage" else figure.stage
    stem = kind if item is None else f"{kind}_{item}"
    files = save(figure.draw(data, item), directory, stem, FORMATS[figure.place])
    if figure.interactive is not None:
        files.update(save_spec(figure.interactive(data, item), directory, stem))
    return {"kind": kind, "gpu": gpu, "stage": stage,
            # the index's link text: the GPU's display name, the stage where the title does not fix it
            "label": figure.title + "".join(f" · {value}" for value in (
                data.gpus[gpu].name if gpu else None, stage if figure.stage is None else None) if value),
            "place": figure.place, "rank": rank, "caption": figure.caption(data, item),
            "note": figure.note(data, item) if figure.note else "", **files}
