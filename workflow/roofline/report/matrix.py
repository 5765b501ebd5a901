"""The cross-GPU tables of a model report: operators × GPUs (the GPU-independent FLOPs, bytes and intensity once,
then one time column per GPU) and treatments × GPUs (the speed-up of each treatment on each GPU), per stage.

A GPU whose setup does not fit marks its whole column (header and cells): its times are never shown plain.
"""
from __future__ import annotations

import pandas as pd

from ..engine.hardware import Accelerator
from . import units
from .decision import cell, misfit_text
from .text import is_throughput


def gpu_columns(stage_totals: pd.DataFrame, gpus: dict[str, Accelerator]) -> list[dict]:
    """The GPU columns of a stage (config order), each named by its deployment ('4 x H100 SXM5 80GB, TP 4'), with
    the reason each is marked ('' when it fits)."""
    indexed = stage_totals.set_index("gpu")
    return [{"key": key, "name": str(indexed.loc[key, "deployment"]), "misfit": misfit_text(indexed.loc[key])}
            for key, gpu in gpus.items() if key in indexed.index]


def merged_order(lists: list[list[str]]) -> list[str]:
    """The operator names of every GPU's graph in one order: each list's order kept, an operator only some
    deployments have (a collective, a pipeline send) placed after its predecessor in the list that has it."""
    order: list[str] = []
    for names in lists:
        for i, name in enumerate(names):
            if name in order:
                continue
            previous = next((n for n in reversed(names[:i]) if n in order), None)
            order.insert(order.index(previous) + 1 if previous is not None else 0, name)
    return order


def operator_matrix(ops: pd.DataFrame, stage_totals: pd.DataFrame, gpus: dict[str, Accelerator]) -> dict:
    """Operators of one stage in graph order (every deployment's operators, matched by name): class, instances,
    FLOPs, bytes and intensity per instance (from the first GPU that has the operator; `same_everywhere` says
    whether every GPU agrees: deployments with other parallel plans hold other shares), and per GPU the time of
    all instances (t_s × count) coloured by its bound, '—' where its deployment has no such operator, plus the
    stage total per GPU."""
    columns = gpu_columns(stage_totals, gpus)
    per_gpu = {c["key"]: ops[ops["gpu"] == c["key"]].set_index("op", drop=False) for c in columns}
    order = merged_order([list(table["op"]) for table in per_gpu.values()])
    first = per_gpu[columns[0]["key"]]
    same = all(list(t["op"]) == list(first["op"]) and (t["flops"].to_numpy() == first["flops"].to_numpy()).all()
               and (t["bytes"].to_numpy() == first["bytes"].to_numpy()).all() for t in per_gpu.values())
    rows = []
    for op in order:
        r = next(table.loc[op] for table in per_gpu.values() if op in table.index)
        times = []
        for c in columns:
            mine = per_gpu[c["key"]]
            if op in mine.index:
                row = mine.loc[op]
                times.append(cell(units.seconds(row["t_s"] * row["count"]), c["misfit"], str(row["bound"])))
            else:
                times.append(cell(units.DASH))
        rows.append({"op": op, "op_class": r["op_class"], "count": str(int(r["count"])),
                     "flops": units.flops(r["flops"]),
                     "bytes": units.nbytes(r["bytes"]), "intensity": units.intensity(r["intensity"]), "times": times})
    indexed = stage_totals.set_index("gpu")
    total = [cell(units.seconds(indexed.loc[c["key"], "t_s"]), c["misfit"]) for c in columns]
    return {"columns": columns, "rows": rows, "total": total, "same_everywhere": same,
            "first_gpu": columns[0]["name"]}


def headline(treatment: str, label: str) -> str:
    """A treatment's label up to its first ':' with its parentheses closed ('FP8 GEMMs (W8A8-FP8: ...' -> 'FP8 GEMMs
    (W8A8-FP8)'); twice the tensor parallelism says that it doubles the hardware."""
    head = label.split(":")[0]
    head += ")" * (head.count("(") - head.count(")"))
    return head + " (twice the devices)" if treatment == "more_devices" else head


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
            cells.append(cell(units.times(r["speedup"]), misfit_text(r), str(r["bound"])))
        label = treatments.loc[treatments["treatment"] == treatment, "label"].iloc[0]
        rows.append({"treatment": treatment, "label": headline(treatment, label),
                     "metric": "throughput" if is_throughput(treatment) else "latency", "cells": cells})
    return {"columns": columns, "rows": rows}
