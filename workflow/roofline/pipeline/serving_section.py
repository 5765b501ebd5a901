"""The optional `serving` section of config.yaml, resolved: the workloads every model is served under (on the gpus
given, default every configured gpu, each at the model's configured plan and the scenario's dtypes)."""
from __future__ import annotations

import re
from pathlib import Path

from ..engine.errors import RooflineInputError, unknown
from ..engine.hardware import Accelerator
from ..engine.hardware import catalog as gpu_catalog
from ..engine.models import ModelSpec
from ..engine.parallel import MAX_DEVICES, Parallel, check_plan
from ..serving.framework import DEFAULT_FRAMEWORK, check_runs_on, runs_on
from ..serving.refusals import check_kv_served
from ..serving.table import ServingSettings, ServingWorkload

#: keys a workload entry may carry (the schema describes each)
WORKLOAD_KEYS = tuple(ServingWorkload.__dataclass_fields__)


def resolve_serving_section(section: dict | None, gpus: dict[str, Accelerator],
                            models: dict[str, ModelSpec], kv_dtype: str = "",
                            base_dir: Path = Path("."), framework: str = "") -> ServingSettings | None:
    """ServingSettings (None when the section is absent); every workload checked against every model, and the
    scenario's `kv_dtype` (the cache the workloads are served with) against what frameworks serve. The section's
    framework defaults to `framework` (scenario.framework, as the plan section's does) where it runs on every
    serving gpu, else DEFAULT_FRAMEWORK."""
    if section is None:
        return None
    if kv_dtype:
        check_kv_served(kv_dtype, "scenario.kv_dtype (the serving section's cache)")
    keys = tuple(section.get("gpus") or gpus)
    for key in keys:
        if key not in gpus:
            if key in gpu_catalog():  # a catalog device: served only where the config lists it
                raise RooflineInputError(f"serving.gpus: '{key}' is not in gpus:; serving runs on the configured "
                                         f"devices ({', '.join(gpus)}): add it to gpus: or drop it here")
            raise unknown("serving.gpus", key, gpus)
    defaults = {name: section[name] for name in ("framework", "mode") if name in section}
    # the scenario's framework where it runs on every serving gpu (its trtllm beside an AMD device stays the
    # single steps' preference where tables exist, as it is there), else the default
    inherited = framework if framework and all(runs_on(framework, gpus[key]) for key in keys) else ""
    defaults["framework"] = defaults.get("framework") or inherited or DEFAULT_FRAMEWORK
    workloads = []
    for i, entry in enumerate(section.get("workloads") or []):
        for name in entry:
            if name not in WORKLOAD_KEYS:
                raise unknown(f"serving.workloads[{i}]", name, WORKLOAD_KEYS)
        values = {**defaults, **entry}
        for name in ("concurrency", "request_rate"):
            values[name] = tuple(values.get(name) or ())
        draft = str(values.get("spec_draft_model") or "")
        if (draft.endswith(".json") or "/" in draft) and not Path(draft).is_absolute():  # as hf_config: beside the
            values["spec_draft_model"] = str(base_dir / draft)  # config, and absolute for the jobs that read it
        workload = ServingWorkload(**values)
        _validate_for(workload, models, f"serving.workloads[{i}]")
        _check_prefill_plan(f"serving.workloads[{i}].prefill_plan", workload, models, [gpus[key] for key in keys])
        _check_pools(f"serving.workloads[{i}]", workload, {key: gpus[key] for key in keys})
        framework_key = (f"serving.workloads[{i}].framework" if "framework" in entry else
                         "serving.framework" if "framework" in section else "scenario.framework")
        for key in keys:  # TensorRT-LLM on NVIDIA GPUs only: before any job runs
            try:
                check_runs_on(values.get("framework") or "", gpus[key], framework_key)
            except RooflineInputError as error:
                raise RooflineInputError(f"{error} (or drop {key} from serving.gpus)") from None
        workloads.append(workload)
    if not workloads:
        raise RooflineInputError("serving.workloads: empty; give at least one, e.g. {isl: 1024, osl: 1024, "
                                 "concurrency: [1, 16, 64]}")
    return ServingSettings(workloads=tuple(workloads), gpus=keys, framework=defaults["framework"])


def _validate_for(workload: ServingWorkload, models: dict[str, ModelSpec], where: str) -> None:
    """The workload checked against every model: one line, naming the first model it fails for, or none where it
    fails alike for every one of several (a batch_wait with a disaggregated mode is wrong whatever the model)."""
    errors = {}
    for model in models.values():
        try:
            workload.validate(model)
        except RooflineInputError as error:
            errors[model.key] = str(error)
    if errors:
        key, message = next(iter(errors.items()))
        every = len(models) > 1 and len(errors) == len(models) and len(set(errors.values())) == 1
        raise RooflineInputError(f"{where}.{_as_key(message)}" + ("" if every else f" (models.{key})"))


def _as_key(message: str) -> str:
    """A workload's one-line error with the options it names (`--spec-accepted-length: ... (--spec-tokens + 1)`)
    as the config keys (`spec_accepted_length: ... (spec_tokens + 1)`), so that the line names what to edit; an
    option that is no workload key stays as written."""
    def key(match: re.Match) -> str:
        name = match.group(1).replace("-", "_")
        return name if name in WORKLOAD_KEYS else match.group(0)
    return re.sub(r"--([a-z][a-z0-9-]*)", key, message)


def _check_prefill_plan(where: str, workload: ServingWorkload, models: dict[str, ModelSpec],
                        gpus: list[Accelerator]) -> None:
    """Refuse (one line, before any job runs) a prefill plan of its own that some model cannot run on any served gpu
    (tp against its heads, ep or attention_dp on a dense model, more devices than a gpu links): the job would serve
    no row and write an empty table over the last good one."""
    if workload.mode != "disaggregated" or not isinstance(workload.prefill_plan, dict):
        return
    plan = Parallel(**workload.prefill_plan)
    for model in models.values():
        errors = []
        for gpu in gpus:
            try:
                check_plan(model, gpu, plan)
            except RooflineInputError as error:
                errors.append(str(error))
        if errors and len(errors) == len(gpus):  # one gpu that runs it serves; the job names the rest
            raise RooflineInputError(f"{where}: {errors[0].split(': ', 1)[1]} (models.{model.key})")


def _check_pools(where: str, workload: ServingWorkload, gpus: dict[str, Accelerator]) -> None:
    """Refuse (one line, before any job runs) disaggregated pools that need more devices than any deployment may
    use, or than a served gpu reaches, at their smallest (one device per decode worker; the prefill workers at
    their plan, one device when it is the model's): beyond, no row could be served and the job would write an empty
    table over the last good one."""
    if workload.mode != "disaggregated":
        return
    prefill = Parallel(**workload.prefill_plan).devices if isinstance(workload.prefill_plan, dict) else 1
    least = workload.prefill_workers * prefill + workload.decode_workers
    if least > MAX_DEVICES:
        raise RooflineInputError(f"{where}.prefill_workers / decode_workers: {workload.prefill_workers} x {prefill} "
                                 f"+ {workload.decode_workers} x 1 or more = at least {least} devices, more than "
                                 f"{MAX_DEVICES} (the most one deployment may use); use fewer workers")
    if gpus and all(least > gpu.reach for gpu in gpus.values()):  # one that reaches serves; the job names the rest
        reach = ", ".join(f"{key} {int(gpu.reach)}" for key, gpu in gpus.items())
        fewer = "fewer workers, " if least > 2 else ""
        raise RooflineInputError(f"{where}.prefill_workers / decode_workers: at least {least} devices cannot hand "
                                 f"caches over between the pools on any served gpu (the devices each reaches: "
                                 f"{reach}); use {fewer}mode: aggregated or other serving.gpus")


#: workload keys that act only with another: the pools' with mode disaggregated, the drafts' with a spec_method
POOL_KEYS = ("prefill_workers", "decode_workers", "prefill_plan")
SPEC_KEYS = ("spec_tokens", "spec_acceptance", "spec_accepted_length", "spec_draft_model")


def check_given_keys(section: dict | None) -> None:
    """Refuse (one line) workload keys given where they would change nothing: pool sizes in an aggregated workload,
    a draft's settings without spec_method. Runs on the config as written, before the schema fills its defaults
    (after, every workload carries spec_tokens and the worker counts)."""
    if not isinstance(section, dict):
        return
    for i, entry in enumerate(section.get("workloads") or []):
        if not isinstance(entry, dict):
            continue
        mode = entry.get("mode", section.get("mode", "aggregated"))
        pools = [key for key in POOL_KEYS if key in entry]
        if mode != "disaggregated" and pools:
            raise RooflineInputError(f"serving.workloads[{i}].{pools[0]}: sizes the pools of mode: disaggregated, "
                                     f"and this workload is {mode}; give mode: disaggregated or leave it out")
        drafts = [key for key in SPEC_KEYS if key in entry]
        if entry.get("spec_method") is None and drafts:
            raise RooflineInputError(f"serving.workloads[{i}].{drafts[0]}: sets speculative decoding, which this "
                                     "workload does not use; give spec_method (mtp, eagle, draft or ngram) or leave "
                                     "it out")
