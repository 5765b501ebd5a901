"""The report's calibration caveat: what the expected times rest on per GPU (its serving framework's measured
tables, or the pooled fallback) and how they were validated (roofline.estimate.validation: data/calibrations/
validation.csv and served.csv, written by benchmarks/validate_calibration.py and validate_served.py)."""
from __future__ import annotations

import pandas as pd

from ..engine.hardware import Accelerator
from ..estimate.calibration import manifest
from ..estimate.lookup import BORROWED
from ..estimate.validation import sentence


def _basis(rows: pd.DataFrame) -> str | None:
    """'framework version, estimate' of a GPU's expected times (its totals rows say which tables they used and how
    much of them they back), or None when they rest on no table of its own (the pooled fallback)."""
    used = [(framework, table.split(" ", 1)[0], table) for framework, table in dict.fromkeys(
        zip(rows["framework"], rows["calibration"])) if table != "none"]
    if not used:
        return None
    versions = {table["file"]: table.get("framework_version", "") for entry in manifest()["devices"].values()
                for table in entry["tables"].values()}
    # a device whose entry moved its chip's speeds borrows that chip's tables (lookup.calibration_for says whose)
    names = [(f"{framework} {versions[file]}" if file in versions else f"your table {file}")
             + (f" ({text.rsplit(', ', 1)[1]})" if text.endswith(BORROWED) else "")
             for framework, file, text in used]
    return f"{', '.join(names)}, estimate {'/'.join(dict.fromkeys(rows['estimate']))}"


def caveat(gpus: dict[str, Accelerator], totals: pd.DataFrame) -> str:
    """One paragraph: expected times against bounds, each GPU's framework and estimate (from its `totals` rows),
    the validation numbers."""
    named, fallback, split = [], [], False
    for key, gpu in gpus.items():
        rows = totals[totals["gpu"] == key]
        basis = _basis(rows)
        if basis is None:
            fallback.append(gpu.name)
            split = split or ("devices" in rows and bool((rows["devices"] > 1).any()))
        else:
            named.append(f"{gpu.name}: {basis}")
    package = f"{manifest().get('package', 'aiconfigurator-core')} {manifest().get('version', '')}".strip()
    # a fallback device's collectives have no measured link behind them: priced at the bound, which real ones
    # miss by far (the L40S's own PCIe all-reduces take 6x theirs), so its multi-device times read optimistic;
    # said only where such a device is split (a single device has no collective)
    collectives = ", with collectives at their bound (optimistic: no link of theirs is measured)" if split else ""
    without = ([f"{', '.join(fallback)} (no table of their own): the pooled A100/H100 fallback, estimate "
                f"default{collectives}"] if fallback else [])
    return ("Expected times scale each bound by what kernels measured on that GPU model under its serving framework "
            "achieve at the operator's size, intensity and shape (NVIDIA AIConfigurator's tables, "
            f"{package}, {manifest().get('licence', 'Apache-2.0')}: " + "; ".join([*named, *without])
            + "), never below the bound; a step is priced as the framework runs it (fused QKV, gate-up and MoE "
            "kernels). " + sentence() + _limits(gpus, named, fallback))


#: devices whose tables ran small decode GEMMs from their large L2 (the package does not flush it between
#: repetitions): dense models' expected decode steps there sit at 1.03-1.12x of the bound (README, "The bound never
#: exceeds"); steps of MoE and MLA models, whose other kernels are not L2-resident, sit higher
L2_RESIDENT = {"l40s": "up to 96 MB of L2: its AD102 die has 96 MB, NVIDIA does not state the L40S's share",
               "rtx-pro-6000": "128 MB of L2"}


def _limits(gpus: dict[str, Accelerator], named: list, fallback: list) -> str:
    """What to read with care: devices with and without tables side by side; large-L2 tables."""
    notes = []
    if named and fallback:
        notes.append("a GPU on the pooled fallback and one on its own tables may rank in expected time in the "
                     "opposite order to their bandwidths: compare bounds across the two kinds")
    large = [f"{gpus[k].name} ({size})" for k, size in L2_RESIDENT.items() if k in gpus]
    if large:
        notes.append(f"the tables of {', '.join(large)} timed small decode GEMMs from the L2 (kernels replayed "
                     "without flushing it): expected decode times there are optimistic (dense models' decode "
                     "steps only 1.03-1.12x above the bound)")
    return (" Read with care: " + "; ".join(notes) + ".") if notes else ""
