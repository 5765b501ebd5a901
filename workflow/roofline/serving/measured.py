"""Your own served runs beside ours: each measured run predicted at its own deployment and workload, with the
bound, the expected value and the error of the expected one against the measurement.

`predict_run` is the ONE place that says what a served run should take: the serving model
(roofline.serving.serve.serve_aggregated) at the run's deployment, dtypes and framework (where the run names none
we model: the config's, `serving.framework`, else `plan.framework`, else vllm), closed loop at the run's concurrency
and lengths: continuous batching with chunked prefill, TTFT with the wait for prefill slots, TPOT with the prompt
chunks mixed into decode steps and the framework's host time; a concurrency the KV cache cannot hold queues (`fits`
False). The bounds are the serving model's (never above a
measured run: benchmarks/validate_serving.py).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from ..engine.columns import MEASUREMENT_COLUMNS
from ..engine.errors import RooflineInputError
from ..engine.hardware import FRAMEWORKS, Accelerator
from ..engine.models import ModelSpec
from ..engine.parallel import Parallel
from ..engine.scenario import Scenario
from .candidates import activation_dtype
from .framework import DEFAULT_FRAMEWORK
from .serve import Workload, prepare_served, serve_aggregated

NAN = math.nan
#: the `status` of a row that was predicted (any other status says why it was not)
PREDICTED = "predicted"
#: the three measured quantities: (column stem, measured field of MeasuredRun)
QUANTITIES = (("ttft", "ttft_s"), ("tpot", "tpot_s"), ("tokens_per_s", "tokens_per_s"))


@dataclass(frozen=True)
class MeasuredRun:
    """One measured serving run, in SI units (NaN: not measured), with where it came from."""

    source: str  # "runs.csv line 4", "bench.json result 1": how errors and the report name it
    model: str  # the model's config key when it matched one, else the name as written
    gpu: str  # as written (a config key when it matched one)
    tp: int
    isl: int  # prompt tokens per request
    osl: int  # output tokens per request
    concurrency: int  # requests in flight
    ttft_s: float  # measured mean time to first token
    tpot_s: float  # measured mean time per output token
    tokens_per_s: float  # measured output tokens per second of the whole deployment
    pp: int = 1
    ep: int = 1
    framework: str = ""
    weight_dtype: str = ""  # "" = the config scenario's
    kv_dtype: str = ""
    status: str = PREDICTED  # or why it is not predicted (a model or gpu the config lacks)

    @property
    def plan(self) -> Parallel:
        return Parallel(tp=self.tp, pp=self.pp, ep=self.ep)

    def scenario(self, base: Scenario, gpu: Accelerator | None = None) -> Scenario:
        """`base` (the config's scenario, 'native' resolved) with this run's plan and dtypes (weights given here are
        served with the deployment search's activation recipe on `gpu`: fp8 as W8A8 where it has an fp8 peak,
        integers weight-only at its 16-bit float, candidates.activation_dtype) and its framework where it is one we
        have tables of (its expected times use that framework's measured kernels)."""
        changes: dict = {"parallel": self.plan}
        if self.framework in FRAMEWORKS:
            changes["framework"] = self.framework
        if self.weight_dtype:
            changes.update(weight_dtype=self.weight_dtype, act_dtype=activation_dtype(self.weight_dtype, gpu))
        if self.kv_dtype:
            changes["kv_dtype"] = self.kv_dtype
        return base.with_(**changes)


def predict_run(model: ModelSpec, gpu: Accelerator, scenario: Scenario, run: MeasuredRun,
                framework: str = DEFAULT_FRAMEWORK) -> dict:
    """What the run should take: bound and expected TTFT, TPOT and tokens/s, the fit and the deployment's name (see
    the module docstring); under the run's framework when it is one we model, else `framework` (the config's)."""
    resolved = scenario.for_model(model)
    if run.weight_dtype:  # the run's own dtype, not the checkpoint's: its scales as configured (Scenario.for_model)
        resolved = replace(resolved, fp8_scaling=scenario.fp8_scaling)
    sc = run.scenario(resolved, gpu)
    served = prepare_served(model, gpu, sc, run.framework if run.framework in FRAMEWORKS else framework,
                            request_tokens=run.isl + run.osl)
    row = serve_aggregated(served, Workload(run.isl, run.osl, concurrency=run.concurrency), overflow="queue")
    return {**{name: row[name] for name in ("ttft_s", "ttft_expected_s", "tpot_s", "tpot_expected_s",
                                            "tokens_per_s", "tokens_per_s_expected", "deployment")},
            "fits": bool(row["fits"]), "weight_dtype": row["weight_dtype"], "kv_dtype": row["kv_dtype"]}


def error(expected: float, measured: float) -> float:
    """Signed relative error of the expected value against the measurement: expected / measured - 1 (NaN when
    either is missing). e.g. expected 11 ms, measured 10 ms: +0.1."""
    if not (math.isfinite(expected) and math.isfinite(measured) and measured > 0):
        return NAN
    return expected / measured - 1.0


def measurement_rows(model: ModelSpec, gpus: Mapping[str, Accelerator], scenario: Scenario,
                     runs: Sequence[MeasuredRun], framework: str = DEFAULT_FRAMEWORK) -> list[dict]:
    """MEASUREMENT_COLUMNS records, one per run of `model`: predicted beside measured when its status is PREDICTED
    (its gpu is one of `gpus`), the prediction columns NaN otherwise (its status says why); `framework`: the
    config's, for runs that name none."""
    out = []
    for run in runs:
        guess, status = {}, run.status
        if status == PREDICTED:
            try:
                guess = predict_run(model, gpus[run.gpu], scenario, run, framework)
            except RooflineInputError as problem:  # e.g. a context the model does not have: said, not raised
                status = f"not predicted: {problem}"
        row = {"model": model.key, "gpu": run.gpu, "framework": run.framework, "source": run.source,
               "tp": run.tp, "pp": run.pp, "ep": run.ep, "devices": run.plan.devices,
               "deployment": guess.get("deployment", f"{run.plan.devices} x {run.gpu}"),
               "weight_dtype": guess.get("weight_dtype", run.weight_dtype),
               "kv_dtype": guess.get("kv_dtype", run.kv_dtype),
               "isl": run.isl, "osl": run.osl, "concurrency": run.concurrency}
        beyond = []
        for stem, field in QUANTITIES:
            bound, expected, measured, relative = quantity_columns(stem)
            value = getattr(run, field)
            row.update({bound: guess.get(bound, NAN), expected: guess.get(expected, NAN), measured: value,
                        relative: error(guess.get(expected, NAN), value)})
            if beyond_bound(stem, value, guess.get(bound, NAN)):
                beyond.append(stem)
        row.update({"fits": guess.get("fits", False), "status": status, "beyond_bound": ", ".join(beyond)})
        out.append(row)
    assert all(tuple(r) == MEASUREMENT_COLUMNS for r in out)
    return out


def beyond_bound(stem: str, measured: float, bound: float) -> bool:
    """Whether a measurement lies beyond its roofline bound: a time below it, a throughput above it (a small
    relative margin for rounding in the file)."""
    if not (math.isfinite(measured) and math.isfinite(bound)) or bound <= 0:
        return False
    return measured > bound * (1 + 1e-9) if stem == "tokens_per_s" else measured < bound * (1 - 1e-9)


def quantity_columns(stem: str) -> tuple[str, str, str, str]:
    """(bound, expected, measured, error) column names of one quantity: ttft_s, ttft_expected_s, ttft_measured_s,
    ttft_error; tokens_per_s, tokens_per_s_expected, tokens_per_s_measured, tokens_per_s_error."""
    if stem == "tokens_per_s":
        return stem, f"{stem}_expected", f"{stem}_measured", f"{stem}_error"
    return f"{stem}_s", f"{stem}_expected_s", f"{stem}_measured_s", f"{stem}_error"


def run_params(runs: Sequence[MeasuredRun]) -> list[dict]:
    """JSON-able runs (MeasuredRun(**params) rebuilds each): a Snakemake job's params."""
    return [asdict(run) for run in runs]
