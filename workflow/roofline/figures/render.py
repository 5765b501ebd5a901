"""Write all figures of one model (SVG for the report, PNG for wikis) and a manifest the report reads.

The manifest `figures.json` lists each figure's kind, GPU, stage and file names, so the report finds its figures
without importing this package (figures and report depend on the engine only, not on each other).

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

from ..engine.hardware import Accelerator
from ..engine.scenario import STAGES, scenario_for_model
from ..engine.analysis import deployment_label
from ..engine.parallel import Parallel
from .charts import (batch_sweep_figure, cross_gpu_figure, drawable, roofline_figure, seq_sweep_figure,
                     time_breakdown_figure)
from .style import style

MANIFEST = "figures.json"


def save(fig, directory: Path, stem: str) -> dict[str, str]:
    """Save `fig` as stem.svg (text as text, no date) and stem.png, close it, return the file names."""
    with style():
        fig.savefig(directory / f"{stem}.svg", metadata={"Date": None})
        fig.savefig(directory / f"{stem}.png")
    plt.close(fig)
    return {"svg": f"{stem}.svg", "png": f"{stem}.png"}


def specs_objects(specs: dict) -> tuple[dict[str, Accelerator], dict]:
    """Accelerators (config order) and the scenario dict from results/specs.json content."""
    return {key: Accelerator(**entry) for key, entry in specs["gpus"].items()}, specs["scenario"]


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


def misfit_pairs(totals: pd.DataFrame | None, model: str) -> frozenset[tuple[str, str]]:
    """(gpu, stage) of `model` whose footprint does not fit (the totals' `fits`); none without totals."""
    if totals is None:
        return frozenset()
    rows = totals[(totals["model"] == model) & ~totals["fits"].astype(bool)]
    return frozenset(zip(rows["gpu"], rows["stage"]))


def render_model_figures(model: str, ops: pd.DataFrame, sweeps: pd.DataFrame, specs: dict,
                         directory: str | Path, totals: pd.DataFrame | None = None) -> list[dict]:
    """All figures of `model` into `directory` (replacing it as a whole, see `atomic_directory`); returns (and
    writes) the manifest. With `totals`, timings of setups that do not fit are marked."""
    with atomic_directory(directory) as temp:
        return _render(model, ops, sweeps, specs, temp, misfit_pairs(totals, model))


def _render(model: str, ops: pd.DataFrame, sweeps: pd.DataFrame, specs: dict, directory: Path,
            misfits: frozenset = frozenset()) -> list[dict]:
    gpus, scenario = specs_objects(specs)
    scenario = scenario_for_model(scenario, specs["models"][model])
    name = specs["models"][model]["name"]
    ops = ops[ops["model"] == model]
    sweeps = sweeps[sweeps["model"] == model]
    stages = [s for s in STAGES if s in set(ops["stage"])]
    gpus = {k: g for k, g in gpus.items() if k in set(ops["gpu"])}
    manifest = []
    left_out = sorted(set(ops["op"]) - set(drawable(ops)["op"]))
    note = (f"Not drawn (no FLOPs, so no place on a log axis): {', '.join(left_out)}." if left_out else "")
    plans = specs.get("plans", {}).get(model, {})
    described = {key: Parallel(**plans[key]).describe() for key in gpus if key in plans}
    multi_device = {key: text for key, text in described.items() if text != "single device"}  # {gpu: "TP 4"}
    for key, gpu in gpus.items():
        deployment = deployment_label(gpu, Parallel(**plans[key])) if key in plans else None
        fig, _ = roofline_figure(ops[ops["gpu"] == key], gpu, scenario, name, deployment)
        manifest.append({"kind": "roofline", "gpu": key, "stage": None, "note": note,
                         **save(fig, directory, f"roofline_{key}")})
        if "decode" in stages and len(sweeps[(sweeps["gpu"] == key) & (sweeps["stage"] == "decode")]):
            fig = batch_sweep_figure(sweeps[sweeps["gpu"] == key], gpu, name)
            manifest.append({"kind": "batch_sweep", "gpu": key, "stage": "decode", "note": "",
                             **save(fig, directory, f"batch_sweep_{key}")})
    for stage in stages:
        fig, _ = cross_gpu_figure(ops, gpus, scenario, name, stage, multi_device)
        manifest.append({"kind": "cross_gpu", "gpu": None, "stage": stage, "note": note,
                         **save(fig, directory, f"cross_gpu_{stage}")})
    fig = time_breakdown_figure(ops, gpus, name, stages, misfits, multi_device)
    manifest.append({"kind": "time_breakdown", "gpu": None, "stage": None, "note": "",
                     **save(fig, directory, "time_breakdown")})
    if len(sweeps[sweeps["sweep"] == "seq_len"]):
        fig = seq_sweep_figure(sweeps, gpus, scenario, name)
        manifest.append({"kind": "seq_sweep", "gpu": None, "stage": None, "note": "",
                         **save(fig, directory, "seq_sweep")})
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
