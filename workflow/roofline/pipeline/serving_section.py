"""The optional `serving` section of config.yaml, resolved: the workloads every model is served under (on the gpus
given, default every configured gpu, each at the model's configured plan and the scenario's dtypes)."""
from __future__ import annotations

from ..engine.errors import RooflineInputError, unknown
from ..engine.hardware import Accelerator
from ..engine.models import ModelSpec
from ..serving.framework import DEFAULT_FRAMEWORK
from ..serving.table import ServingSettings, ServingWorkload

#: keys a workload entry may carry (the schema describes each)
WORKLOAD_KEYS = tuple(ServingWorkload.__dataclass_fields__)


def resolve_serving_section(section: dict | None, gpus: dict[str, Accelerator],
                            models: dict[str, ModelSpec]) -> ServingSettings | None:
    """ServingSettings (None when the section is absent); every workload checked against every model."""
    if section is None:
        return None
    keys = tuple(section.get("gpus") or gpus)
    for key in keys:
        if key not in gpus:
            raise unknown("serving.gpus", key, gpus)
    defaults = {name: section[name] for name in ("framework", "mode") if name in section}
    workloads = []
    for i, entry in enumerate(section.get("workloads") or []):
        for name in entry:
            if name not in WORKLOAD_KEYS:
                raise unknown(f"serving.workloads[{i}]", name, WORKLOAD_KEYS)
        values = {**defaults, **entry}
        for name in ("concurrency", "request_rate"):
            values[name] = tuple(values.get(name) or ())
        workload = ServingWorkload(**values)
        for model in models.values():
            try:
                workload.validate(model)
            except RooflineInputError as error:
                raise RooflineInputError(f"serving.workloads[{i}].{error} (models.{model.key})") from None
        workloads.append(workload)
    if not workloads:
        raise RooflineInputError("serving.workloads: empty; give at least one, e.g. {isl: 1024, osl: 1024, "
                                 "concurrency: [1, 16, 64]}")
    return ServingSettings(workloads=tuple(workloads), gpus=keys,
                           framework=section.get("framework", DEFAULT_FRAMEWORK))
