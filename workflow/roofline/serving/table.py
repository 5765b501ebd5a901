"""The pipeline's served table (config section `serving`, results/serving/{model}.parquet): every configured gpu
at the model's configured plan, under every workload of the section and every concurrency or request rate of it."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..engine.errors import RooflineInputError
from ..engine.hardware import FRAMEWORKS, Accelerator
from ..engine.models import ModelSpec, model_or_file
from ..engine.parallel import Parallel
from ..engine.scenario import Scenario
from .framework import BALANCING, DEFAULT_FRAMEWORK, WAIT_NEEDS_DECODING, batch_wait_setting, check_batch_waiting
from .serve import Disaggregation, Workload, check_context, prepare_served, serve_aggregated, serve_disaggregated
from .speculative import DEFAULT_SPEC_TOKENS, Speculation, check_has_decode


@dataclass(frozen=True)
class ServingWorkload:
    """One workload of the `serving` section: lengths, the concurrencies or request rates to serve it at, and how."""

    isl: int
    osl: int
    concurrency: tuple[int, ...] = ()
    request_rate: tuple[float, ...] = ()
    prefix_hit: float = 0.0
    length_spread: float = 0.0  # lengths uniform over isl and osl x (1 +- it); 0: every request exactly them
    framework: str = DEFAULT_FRAMEWORK
    mode: str = "aggregated"
    spec_method: str | None = None
    spec_tokens: int = DEFAULT_SPEC_TOKENS
    spec_acceptance: float | None = None
    spec_accepted_length: float | None = None
    spec_draft_model: str | None = None
    prefill_workers: int = 1
    decode_workers: int = 1
    prefill_plan: dict | None = None  # the prefill workers' plan {tp, pp, ep, attention_dp} (default: the model's)
    attention_dp_balance: bool | list | None = None  # trtllm: true (its defaults) or [timeout, wait] steps; None: off
    batch_wait: list | None = None  # trtllm, aggregated: [timeout steps, share of max_num_tokens]; None: off
    max_running: int | None = None  # sequences an engine (disaggregated: a decode worker) runs at once; None: default

    def dp_balance(self) -> tuple[int, int] | None:
        """(timeout_iters, batching_wait_iters) of the attention-DP balancing asked for, None when off."""
        value = self.attention_dp_balance
        if value is None or value is False:
            return None
        if self.framework not in BALANCING:
            raise RooflineInputError(f"attention_dp_balance: {self.framework} does not balance context requests "
                                     f"over the attention-DP ranks; only {', '.join(BALANCING)} does")
        if value is True:
            return BALANCING[self.framework]
        if (not isinstance(value, (list, tuple)) or len(value) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
            raise RooflineInputError(f"attention_dp_balance: {value!r} is not allowed; expected true or "
                                     "[timeout_iters, batching_wait_iters], two whole numbers of steps from 0")
        return int(value[0]), int(value[1])

    def waits(self) -> tuple[int, float] | None:
        """(batch_wait_timeout_iters, batch_wait_max_tokens_ratio) of the batch waiting asked for, None when off."""
        value = self.batch_wait
        if value is None or value is False:  # YAML's `off` reads as false
            return None
        check_batch_waiting(self.framework, "batch_wait")
        if self.mode != "aggregated":
            raise RooflineInputError(f"batch_wait: {WAIT_NEEDS_DECODING}")
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise RooflineInputError(f"batch_wait: {value!r} is not allowed; expected [timeout_iters, "
                                     "max_tokens_ratio]: a whole number of steps and a share from 0 to 1, or off")
        return batch_wait_setting(value[0], value[1], "batch_wait")

    def loads(self) -> list[Workload]:
        """One served workload per concurrency and per request rate, each checked."""
        if not self.concurrency and not self.request_rate:
            raise RooflineInputError("concurrency / request_rate: give at least one value of either")
        shared = dict(prefix_hit=self.prefix_hit, length_spread=self.length_spread)
        return ([Workload(self.isl, self.osl, concurrency=n, **shared) for n in self.concurrency]
                + [Workload(self.isl, self.osl, request_rate=r, **shared)
                   for r in self.request_rate])

    def speculation(self, model: ModelSpec) -> Speculation:
        if self.spec_method is None:
            return Speculation()
        option = "spec_draft_model"  # a catalog key, or a config.json's path (made absolute by serving_section)
        try:
            draft = model_or_file(self.spec_draft_model, option) if self.spec_draft_model else None
        except RooflineInputError as error:  # a config.json's own errors name the file: the key goes in front
            message = str(error)
            raise RooflineInputError(message if message.startswith(f"{option}: ") else f"{option}: {message}") from None
        return Speculation(self.spec_method, self.spec_tokens, self.spec_acceptance, self.spec_accepted_length,
                           draft).validate(model)

    def validate(self, model: ModelSpec) -> "ServingWorkload":
        if self.framework not in FRAMEWORKS:
            raise RooflineInputError(f"framework: '{self.framework}' is not one of {', '.join(FRAMEWORKS)}")
        for load in self.loads():
            check_context(model, load.validate())
        check_has_decode(self.spec_method, self.osl)
        self.speculation(model)
        self.dp_balance()
        self.waits()
        return self


@dataclass(frozen=True)
class ServingSettings:
    """The resolved `serving` section: its workloads, the gpus it serves on (keys of `gpus:`) and its framework
    (the workloads' default)."""

    workloads: tuple[ServingWorkload, ...] = field(default_factory=tuple)
    gpus: tuple[str, ...] = ()
    framework: str = DEFAULT_FRAMEWORK

    def params(self) -> dict:
        return asdict(self)

    @classmethod
    def from_params(cls, params: dict) -> "ServingSettings":
        return cls(workloads=tuple(ServingWorkload(**{**w, "concurrency": tuple(w["concurrency"]),
                                                      "request_rate": tuple(w["request_rate"])})
                                   for w in params["workloads"]), gpus=tuple(params["gpus"]),
                   framework=params.get("framework", DEFAULT_FRAMEWORK))


def serving_table(model: ModelSpec, gpus: dict[str, Accelerator], scenarios: dict[str, Scenario],
                  settings: ServingSettings) -> tuple[list[dict], list[str]]:
    """(SERVE_COLUMNS rows, lines saying what could not be served): each gpu of the settings (its scenario: the
    model's configured plan and dtypes) under each workload; a concurrency the cache cannot hold is served
    queueing (`fits` False); a deployment that holds not even one request is left out with a line."""
    rows, skipped = [], []
    for key in settings.gpus:
        for workload in settings.workloads:
            try:  # a setting this gpu's plan cannot take (SGLang's max_running below its DP ranks): a line
                served = prepare_served(model, gpus[key], scenarios[key], workload.framework,
                                        workload.speculation(model), dp_balance=workload.dp_balance(),
                                        batch_wait=workload.waits(), max_running=workload.max_running,
                                        request_tokens=max(load.isl + load.osl for load in workload.loads()))
            except RooflineInputError as error:
                skipped.append(f"{key}, isl {workload.isl}, osl {workload.osl}: {error}")
                continue
            for load in workload.loads():
                try:
                    rows.append(_serve(served, load, workload))
                except RooflineInputError as error:
                    line = f"{key}, isl {load.isl}, osl {load.osl}: {error}"
                    if line not in skipped:  # one line per reason, not one per concurrency it refuses
                        skipped.append(line)
    return rows, skipped


def _serve(served, load: Workload, workload: ServingWorkload) -> dict:
    if workload.mode == "aggregated":
        return serve_aggregated(served, load, overflow="queue")
    # a plan of its own, or ('auto' or none) the model's configured plan, as the decode workers'
    prefill = Parallel(**workload.prefill_plan) if isinstance(workload.prefill_plan, dict) else served.plan
    pools = Disaggregation(workload.prefill_workers, workload.decode_workers, prefill)
    return serve_disaggregated(served, load, pools, overflow="queue")


#: the metadata key of results/serving/{model}.parquet that holds what could not be served (JSON list of lines)
SKIPPED_KEY = b"skipped"


def read_serving_table(path: str):
    """(DataFrame, skipped lines) of a results/serving/{model}.parquet file ([] for a table written without them;
    roofline.pipeline.io.write_serving_table writes both)."""
    import json

    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return table.to_pandas(), json.loads((table.schema.metadata or {}).get(SKIPPED_KEY, b"[]").decode() or "[]")
