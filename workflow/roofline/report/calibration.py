"""The report's calibration caveat: what the expected times rest on per GPU, the measured launch floor, and the
validation numbers (data/calibrations/validation.csv, written by benchmarks/validate_calibration.py)."""
from __future__ import annotations

import csv
from importlib import resources

from ..engine.hardware import Accelerator
from ..estimate.calibration import CEILING, LAUNCH_GAP_S, holds_kernel_durations, read_table, table_path
from . import units


def _basis(gpu: Accelerator) -> str:
    """What a GPU's expected times rest on (without its name: GPUs on the same basis are listed together)."""
    path = table_path(gpu)
    if path is None:
        return "no table of their own: the default fallback (the shipped A100 and H100 measurements)"
    ladder = [r for r in read_table(path) if r["op_class"] != CEILING]
    floor = units.seconds(min(r["measured_s"] for r in ladder))
    kernels = "kernel durations" if holds_kernel_durations(path) else "single launches"
    if all(r["source"] == "measured" for r in ladder):
        return f"{len(ladder)} {kernels} measured on this GPU model, launch floor {floor}"
    return f"derived from another device's {kernels}, not measured on it (marked default), launch floor {floor}"


def _validation() -> str:
    with resources.files("roofline").joinpath("data/calibrations/validation.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    loo = [r for r in rows if r["check"] == "loo"]
    steps = [r for r in rows if r["check"] == "decode_step"]
    medians = [float(r["median_error"]) for r in loo]
    return ("Leave-one-out error of the per-kernel estimate on the shipped tables: median "
            f"{units.percent(min(medians))} to {units.percent(max(medians))} per operator class (p90 up to "
            f"{units.percent(max(float(r['p90_error']) for r in loo))}); whole decode steps held out: median error "
            + " and ".join(f"{units.percent(float(r['median_error']))} ({r['table'].split(',')[0]})" for r in steps)
            + ".")


def caveat(gpus: dict[str, Accelerator]) -> str:
    """One paragraph: expected times vs bounds, each GPU's calibration basis and launch floor, the validation."""
    groups: dict[str, list[str]] = {}
    for gpu in gpus.values():
        groups.setdefault(_basis(gpu), []).append(gpu.name)
    return ("Expected times scale each bound by what measured kernels of the same class, size and intensity achieve, "
            f"never below the launch floor, plus a {units.seconds(LAUNCH_GAP_S)} launch gap per kernel where a table "
            "holds kernel durations: " + "; ".join(f"{', '.join(names)}: {basis}" for basis, names in groups.items())
            + ". " + _validation())
