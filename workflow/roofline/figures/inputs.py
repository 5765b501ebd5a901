"""What every figure of one model is drawn from: its tables, the GPUs and stages it covers, the scenario, and the
deployments, read once from the aggregate tables and results/models/{model}/specs.json."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..engine.analysis import deployment_label
from ..engine.hardware import Accelerator
from ..engine.parallel import Parallel
from ..engine.scenario import STAGES, scenario_for_model

#: how many figures of a kind a model has: one per GPU, one per stage, or one
SCOPES = ("gpu", "stage", "model")


def specs_objects(specs: dict) -> tuple[dict[str, Accelerator], dict]:
    """Accelerators (config order) and the scenario dict from results/specs.json content."""
    return {key: Accelerator(**entry) for key, entry in specs["gpus"].items()}, specs["scenario"]


def _plan_words(plan: Parallel) -> str:
    """'16 devices, TP 8, PP 2' for a multi-device plan (figures name the hardware a deployment takes), 'single
    device' for one."""
    return "single device" if plan.devices == 1 else f"{plan.devices} devices, {plan.describe()}"


def misfit_pairs(totals: pd.DataFrame | None, model: str) -> frozenset[tuple[str, str]]:
    """(gpu, stage) of `model` whose footprint does not fit (the totals' `fits`); none without totals."""
    if totals is None:
        return frozenset()
    rows = totals[(totals["model"] == model) & ~totals["fits"].astype(bool)]
    return frozenset(zip(rows["gpu"], rows["stage"]))


@dataclass(frozen=True)
class PlanSearch:
    """One model's deployment search: its frontier table (results/plans/{model}.parquet), why it is empty, the
    TPOT target and the candidate devices' names."""

    table: pd.DataFrame
    reason: str = ""
    tpot_target_s: float | None = None
    names: tuple[tuple[str, str], ...] = ()  # (gpu key, display name)
    measured: pd.DataFrame | None = None  # the user's measured runs (results/measurements/{model}.parquet), if any
    rank_on: str = "expected"  # what the frontier was ranked on (PlanSettings.rank_on): the figure plots that side

    @classmethod
    def from_params(cls, table: pd.DataFrame, reason: str, settings: dict,
                    measured: pd.DataFrame | None = None) -> PlanSearch:
        """From the plan table and the plan rule's settings (roofline.serving.planner.PlanSettings as params)."""
        return cls(table, reason, settings["workload"]["tpot_s"],
                   tuple((gpu["key"], gpu["name"]) for gpu in settings["gpus"]), measured,
                   settings.get("rank_on", "expected"))


@dataclass(frozen=True)
class ModelFigures:
    """One model's tables and specs, as its figures need them."""

    model: str  # key
    name: str  # display name
    ops: pd.DataFrame  # this model's operator rows
    sweeps: pd.DataFrame  # this model's sweeps
    gpus: dict[str, Accelerator]  # the GPUs of its rows, config order
    scenario: dict  # the scenario, resolved for this model
    stages: list[str]  # the stages of its rows, in STAGES order
    deployments: dict[str, str]  # gpu -> "4 x H100 SXM5 80GB, TP 4" for the GPUs with a plan
    multi_device: dict[str, str]  # gpu -> "4 devices, TP 4" for the GPUs whose plan has several devices
    misfits: frozenset = frozenset()  # (gpu, stage) whose footprint does not fit
    plan: PlanSearch | None = None  # the deployment search (config section `plan`), when configured

    @classmethod
    def read(cls, model: str, ops: pd.DataFrame, sweeps: pd.DataFrame, specs: dict,
             misfits: frozenset = frozenset(), plan: PlanSearch | None = None) -> ModelFigures:
        gpus, scenario = specs_objects(specs)
        ops = ops[ops["model"] == model]
        plans = specs.get("plans", {}).get(model, {})
        gpus = {k: g for k, g in gpus.items() if k in set(ops["gpu"])}
        described = {key: _plan_words(Parallel(**plans[key])) for key in gpus if key in plans}
        return cls(model=model, name=specs["models"][model]["name"], ops=ops, sweeps=sweeps[sweeps["model"] == model],
                   gpus=gpus, scenario=scenario_for_model(scenario, specs["models"][model]),
                   stages=[s for s in STAGES if s in set(ops["stage"])],
                   deployments={key: deployment_label(gpu, Parallel(**plans[key])) for key, gpu in gpus.items()
                                if key in plans},
                   multi_device={key: text for key, text in described.items() if text != "single device"},
                   misfits=misfits, plan=plan)

    def items(self, scope: str) -> list:
        """The GPU keys, the stages, or [None] (one figure for the model), after `scope`."""
        return {"gpu": list(self.gpus), "stage": list(self.stages), "model": [None]}[scope]
