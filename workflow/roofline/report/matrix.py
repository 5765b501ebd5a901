"""The cross-GPU tables of a model report: operators × GPUs (the GPU-independent FLOPs, bytes and intensity once,
then one time column per GPU) and treatments × GPUs (the speed-up of each treatment on each GPU), per stage.

A GPU whose setup does not fit marks its whole column (header and cells): its times are never shown plain.
"""
from __future__ import annotations

import pandas as pd

from ..hardware import Accelerator
from . import units
from .decision import cell, misfit_text


def gpu_columns(stage_totals: pd.DataFrame, gpus: dict[str, Accelerator]) -> list[dict]:
    """The GPU columns of a stage (config order) with the reason each is marked ('' when it fits)."""
    indexed = stage_totals.set_index("gpu")
    return [{"key": key, "name": gpu.name, "misfit": misfit_text(indexed.loc[key], gpu)}
            for key, gpu in gpus.items() if key in indexed.index]


def operator_matrix(ops: pd.DataFrame, stage_totals: pd.DataFrame, gpus: dict[str, Accelerator]) -> dict:
    """Operators of one stage in graph order: class, instances, FLOPs, bytes and intensity per instance (taken from
    the first GPU; `same_everywhere` says whether every GPU agrees), and per GPU the time of all instances
    (t_s × count) coloured by its bound, plus the stage total per GPU."""
    columns = gpu_columns(stage_totals, gpus)
    per_gpu = {c["key"]: ops[ops["gpu"] == c["key"]].reset_index(drop=True) for c in columns}
    first = per_gpu[columns[0]["key"]]
    same = all(len(t) == len(first) and (t["op"] == first["op"]).all() and (t["flops"] == first["flops"]).all()
               and (t["bytes"] == first["bytes"]).all() for t in per_gpu.values())
    rows = []
    for i, r in enumerate(first.itertuples()):
        times = []
        for c in columns:
            mine = per_gpu[c["key"]]
            if i < len(mine) and mine.loc[i, "op"] == r.op:
                times.append(cell(units.seconds(mine.loc[i, "t_s"] * mine.loc[i, "count"]), c["misfit"],
                                  str(mine.loc[i, "bound"])))
            else:
                times.append(cell(units.DASH))
        rows.append({"op": r.op, "op_class": r.op_class, "count": str(int(r.count)), "flops": units.flops(r.flops),
                     "bytes": units.nbytes(r.bytes), "intensity": units.intensity(r.intensity), "times": times})
    indexed = stage_totals.set_index("gpu")
    total = [cell(units.seconds(indexed.loc[c["key"], "t_s"]), c["misfit"]) for c in columns]
    return {"columns": columns, "rows": rows, "total": total, "same_everywhere": same,
            "first_gpu": columns[0]["name"]}


def treatment_matrix(treatments: pd.DataFrame, stage_totals: pd.DataFrame, gpus: dict[str, Accelerator]) -> dict:
    """Treatments of one stage × GPUs: the speed-up (latency; throughput for batching) coloured by the new bound,
    a dash where the treatment does not apply, marked where its result does not fit."""
    columns = gpu_columns(stage_totals, gpus)
    order = list(dict.fromkeys(treatments["treatment"]))
    indexed = treatments.set_index(["treatment", "gpu"])
    rows = []
    for treatment in order:
        cells = []
        for c in columns:
            if (treatment, c["key"]) not in indexed.index:
                cells.append(cell(units.DASH))
                continue
            r = indexed.loc[(treatment, c["key"])]
            if not bool(r["applicable"]):
                cells.append(cell(units.DASH, css="na"))
                continue
            cells.append(cell(units.times(r["speedup"]), misfit_text(r, gpus[c["key"]]), str(r["bound"])))
        label = treatments.loc[treatments["treatment"] == treatment, "label"].iloc[0]
        rows.append({"treatment": treatment, "label": label.split(":")[0],
                     "metric": "throughput" if treatment == "batching" else "latency", "cells": cells})
    return {"columns": columns, "rows": rows}
