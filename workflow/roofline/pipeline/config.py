"""Resolve the workflow's `config.yaml` into specs: the semantic checks the JSON schema cannot express.

`resolve_config` turns the validated config dict (models, gpus, stages, scenario) into a `ResolvedConfig` of
ModelSpec / Accelerator / Scenario dataclasses, and raises `RooflineInputError` with one line for anything the
pipeline cannot run: an unknown catalog key (with a "did you mean"), a non-positive bandwidth, memory or peak, a
compute dtype a device publishes no peak for, a missing `config.json`, or a key that is not a safe file name (keys
become path components under results/ and reports/). Reading the files is `yaml_loader`'s job, re-typing them
`schema`'s, and `schema_messages.describe_schema_error` words a jsonschema error as the same kind of line. Imports
no Snakemake: the Snakefile and the tests call it alike.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ..engine.analysis import check_device_dtypes, check_indexer_device, resolve_plan
from ..engine.dtypes import check_storage_dtype
from ..engine.errors import CONTROL_CHARACTERS, RooflineInputError, clip, unknown
from ..engine.hardware import Accelerator, accelerator_from_entry, check_plausible  # noqa: F401 (re-export)
from ..engine.hardware import catalog as gpu_catalog
from ..engine.hf_config import not_a_file
from ..engine.models import ModelSpec, model_from_entry
from ..engine.parallel import Parallel, check_plan
from ..engine.scenario import FP8_SCALINGS, STAGES, Scenario, check_context
from ..estimate.calibration import check_table, fit_path, framework_for, table_path
from ..serving.candidates import served_kv_dtypes
from ..serving.framework import DEFAULT_FRAMEWORK, check_runs_on
from ..serving.measured import PREDICTED, MeasuredRun, run_params
from ..serving.planner import DEFAULT_DTYPES, PlanSettings, Workload, check_workload_context
from ..serving.search import counts_by_mode as served_counts
from ..serving.search_budget import MAX_CANDIDATES, check_budget, check_max_devices, count_candidates, search_seconds
from ..serving.table import ServingSettings
from .compare import checked_results_folder
from .measurements import resolve_measurements
from .serving_section import resolve_serving_section

#: Keys of models and gpus: lowercase letters, digits, '.', '-', '_', starting with a letter or digit.
SAFE_KEY = re.compile(r"[a-z0-9][a-z0-9._-]*")
#: Longest key (the schema's $defs/key maxLength): keys become parts of file names such as
#: reports/figures/{model}/roofline_{gpu}.svg, which must stay well below the usual 255-byte limit.
MAX_KEY_LENGTH = 64
#: Model keys that would collide with the report files reports/summary.* and reports/index.html, or with the wiki
#: bundle's Home.md (a model page home.md is the same file on case-insensitive file systems and wikis).
RESERVED_MODEL_KEYS = ("summary", "index", "home")
#: Top-level sections of config.yaml.
SECTIONS = ("models", "gpus", "stages", "scenario", "plan", "serving", "publish", "local_rules", "measurements",
            "compare_with")


@dataclass(frozen=True)
class ResolvedConfig:
    """The config as specs, in config order. `specs()` is the content of results/specs.json, `model_specs(key)`
    that of results/models/{key}/specs.json."""

    models: dict[str, ModelSpec]
    gpus: dict[str, Accelerator]
    scenario: Scenario
    stages: tuple[str, ...]
    plans: dict[str, dict[str, Parallel]]  # model -> gpu -> the concrete plan of that deployment
    plan_search: PlanSettings | None = None  # the optional deployment search (config section `plan`)
    measurements: tuple[MeasuredRun, ...] = ()  # your own runs (config section `measurements`), in file order
    compare_with: str = ""  # a previous results folder (config key `compare_with`), "" = none

    def unasked_outputs(self) -> list[str]:
        """Single result files a former config asked for and this one does not (moved aside at the start of a run:
        housekeeping.stale)."""
        wanted = {"results/measurements/rows.csv": bool(self.measurements), "results/compare.csv": bool(
            self.compare_with)}
        return [path for path, asked in wanted.items() if not asked]

    def measured_models(self) -> list[str]:
        """Models (config order) with at least one measured run: results/measurements/{model}.parquet."""
        return [key for key in self.models if any(run.model == key for run in self.measurements)]

    def measurement_params(self, key: str | None = None) -> list[dict]:
        """JSON-able runs of one model, or of every file (a job's `params`; MeasuredRun(**params) rebuilds each)."""
        return run_params([run for run in self.measurements if key is None or run.model == key])

    def measured_gpu_params(self, key: str) -> dict:
        """The specs of the gpus model `key`'s predicted runs use (a job's `params`)."""
        used = {run.gpu for run in self.measurements if run.model == key and run.status == PREDICTED}
        return {gpu: self.gpu_params(gpu) for gpu in self.gpus if gpu in used}
    serving: ServingSettings | None = None  # the optional served predictions (config section `serving`)

    def served_framework(self) -> str:
        """The framework served predictions assume where nothing else names one (a measured run without its own):
        the `serving` section's, else the `plan` section's, else the default."""
        if self.serving is not None:
            return self.serving.framework
        return self.plan_search.framework if self.plan_search is not None else DEFAULT_FRAMEWORK

    def plan_beyond_gpus(self) -> str:
        """A warning where the plan section searches devices gpus: does not list (its own list, e.g. the shipped
        config's, after gpus: was trimmed): page 1's served table recommends among them; '' otherwise."""
        beyond = [gpu.key for gpu in (self.plan_search.gpus if self.plan_search else ()) if gpu.key not in self.gpus]
        if not beyond:
            return ""
        return (f"plan.gpus searches {', '.join(beyond)}, which gpus: does not list: page 1 of each report "
                "recommends among them too (edit plan.gpus, or drop it to search the gpus: devices)")

    def plan_search_params(self) -> dict:
        """JSON-able plan settings (PlanSettings.from_params rebuilds them): the plan jobs' `params`."""
        return asdict(self.plan_search)

    def serving_params(self, model: str) -> dict:
        """JSON-able settings of one model's served table: the section, each gpu's spec and scenario (the model's
        configured plan and dtypes)."""
        return {"settings": self.serving.params(), "gpus": {key: self.gpu_params(key) for key in self.serving.gpus},
                "scenarios": {key: self.job_scenario_params(model, key) for key in self.serving.gpus}}

    def model_params(self, key: str) -> dict:
        """JSON-able spec of one model (ModelSpec(**params) rebuilds it): a job's `params`."""
        return asdict(self.models[key])

    def gpu_params(self, key: str) -> dict:
        """JSON-able spec of one accelerator (Accelerator(**params) rebuilds it)."""
        return asdict(self.gpus[key])

    def calibration_inputs(self, key: str) -> list[str]:
        """The files one accelerator's expected times rest on: its table (its own, or the one shipped for its chip
        under its framework, the GPU entry's else the scenario's) and the fit kept beside it; job inputs, so
        editing one reruns the jobs on that gpu ([] without a table)."""
        gpu = self.gpus[key]
        table = table_path(gpu, framework_for(gpu, self.scenario.framework))
        return [] if table is None else [table] + [str(fit) for fit in [fit_path(table)] if fit.is_file()]

    def scenario_params(self, model: str | None = None) -> dict:
        """The scenario as `model`'s jobs run it (weight_dtype 'native' resolved to its checkpoint's dtypes); for
        the whole grid, resolved where every model resolves alike, else as configured ('native')."""
        keys = [model] if model is not None else list(self.models)
        resolved = {self.scenario.for_model(self.models[key]) for key in keys}
        return asdict(resolved.pop() if len(resolved) == 1 else self.scenario)

    def job_scenario_params(self, model: str, gpu: str) -> dict:
        """The scenario of one (model, gpu) job with its concrete plan (a job's `params`)."""
        return asdict(replace(self.scenario, parallel=self.plans[model][gpu]))

    def specs(self) -> dict:
        """{"models", "gpus", "scenario", "stages", "config_sha256"}: the resolved config, JSON-able."""
        return self._specs(list(self.models))

    def model_specs(self, key: str) -> dict:
        """The specs of one model: the same shape as specs(), with only model `key` under "models" (every gpu,
        the scenario and the stages as in specs()). This is all a model's figures and report depend on, so
        editing another model leaves it unchanged; its "config_sha256" is the digest of this content (it
        differs from the grid-wide one of specs()). Its scenario is the one the model's jobs ran (weight_dtype
        'native' resolved to the checkpoint's dtypes)."""
        return self._specs([key], resolved=True)

    def _specs(self, models: list[str], resolved: bool = False) -> dict:
        body = {
            "models": {key: self.model_params(key) for key in models},
            "gpus": {key: self.gpu_params(key) for key in self.gpus},
            "scenario": self.scenario_params(models[0] if resolved else None),
            "stages": list(self.stages),
            "plans": {key: {gpu: asdict(plan) for gpu, plan in self.plans[key].items()} for key in models},
        }
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        return {**body, "config_sha256": digest}

    @property
    def config_sha256(self) -> str:
        """SHA-256 of the canonical JSON of the resolved specs (catalog values included, not the YAML text)."""
        return self.specs()["config_sha256"]


def check_key(section: str, key: object) -> str:
    """`key` if it is a safe path component (see SAFE_KEY, MAX_KEY_LENGTH), else a one-line error."""
    if not isinstance(key, str) or not SAFE_KEY.fullmatch(key):
        lower = key.lower() if isinstance(key, str) else ""
        hint = f" (did you mean '{lower}'?)" if SAFE_KEY.fullmatch(lower) else ""
        raise RooflineInputError(
            f"{section}: key {key!r} is not allowed{hint}; keys use lowercase letters, digits, '.', '-' and '_' and "
            "start with a letter or digit (they become file names under results/ and reports/)")
    if len(key) > MAX_KEY_LENGTH:
        raise RooflineInputError(
            f"{section}: key '{key[:24]}...' ({len(key)} characters) is too long; keys have at most "
            f"{MAX_KEY_LENGTH} characters (they become file names under results/ and reports/)")
    return key


def resolve_model(key: str, entry: dict | None, base_dir: Path) -> ModelSpec:
    check_key("models", key)
    if key in RESERVED_MODEL_KEYS:
        page = "the wiki's Home.md" if key == "home" else f"reports/{key}.html"
        raise RooflineInputError(f"models: key '{key}' is reserved ({page} is a page of its own); rename the model")
    entry = dict(entry or {})
    if "hf_config" in entry:
        path = Path(str(entry["hf_config"]))
        full = path if path.is_absolute() else base_dir / path
        if not str(entry["hf_config"]).strip():
            raise RooflineInputError(f"models.{key}.hf_config: empty; expected the path of a config.json file")
        problem = not_a_file(full)
        if problem:
            hint = "" if path.is_absolute() else f" (relative paths start at the working directory {base_dir})"
            raise RooflineInputError(f"models.{key}.hf_config: file '{clip(path, 240)}' {problem}{hint}")
        entry["hf_config"] = str(full)
    return model_from_entry(key, entry, base_dir)


def resolve_gpu(key: str, entry: dict | None, base_dir: Path = Path(".")) -> Accelerator:
    check_key("gpus", key)
    entry = dict(entry or {})
    hint = ""
    if "calibration" in entry:  # an absolute path, read once here so that a bad table stops the run before any job
        path = Path(str(entry["calibration"]))
        full = path if path.is_absolute() else base_dir / path
        hint = "" if path.is_absolute() else f" (relative paths start at the working directory {base_dir})"
        try:
            entry["calibration"] = str(full.resolve())
        except (OSError, ValueError, RuntimeError):  # a NUL byte, a symlink loop: the table check names it
            entry["calibration"] = str(full)
        no_braces(entry["calibration"], f"gpus.{key}.calibration")
    gpu = accelerator_from_entry(key, entry)  # figures checked there (hardware.check_plausible)
    if gpu.calibration:
        try:
            check_table(gpu.calibration, gpu)
        except RooflineInputError as error:
            raise RooflineInputError(f"gpus.{key}.{error}{hint}") from None
    return gpu


#: a git branch name (`git check-ref-format --branch`), narrowed to plain characters: no leading '-', '/' or '.',
#: no '..', '//', '/.' or '@{', not ending in '/', '.' or '.lock'
BRANCH = re.compile(r"(?![-/.])(?!.*(\.\.|//|/\.|@\{|\.lock(/|$)))[A-Za-z0-9._/-]+(?<![/.])")
#: a control character (a line break, a tab, NUL): no URL or display name holds one
CONTROL = re.compile(f"[{CONTROL_CHARACTERS}]")
#: a git remote that names a transport helper (`ext::sh -c ...` runs a command of the URL's choosing)
HELPER_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")


def check_publish(section) -> None:
    """Refuse (one line, before any job runs: `snakemake publish` builds everything first) a publish.branch git
    would refuse or read as an option, and a publish.git that is an option or a transport helper (the publish step
    refuses both too, after the build)."""
    if not isinstance(section, dict):
        return
    branch = section.get("branch")
    # 'HEAD' passes check-ref-format yet no branch may be called so; 'refs/...' would publish to refs/heads/refs/...
    if branch is not None and (not BRANCH.fullmatch(str(branch)) or str(branch) == "HEAD"
                               or str(branch).startswith("refs/")):
        raise RooflineInputError(f"publish.branch: {branch!r} is not allowed; expected a git branch name of letters, "
                                 "digits, '.', '_', '-' and '/' (not starting with '-', '/' or '.', no '..' or '//', "
                                 "not ending in '/', '.' or '.lock', not HEAD or refs/...), e.g. master")
    git = section.get("git")
    if git is not None and (str(git).startswith("-") or HELPER_URL.match(str(git)) or CONTROL.search(str(git))):
        raise RooflineInputError(f"publish.git: {git!r} is not allowed; expected the wiki repository's URL (https://, "
                                 "ssh://, git@host:path) or a local path on one line, not an option or a transport "
                                 "helper (ext::)")


def resolve_config(config: dict, base_dir: str | Path = ".") -> ResolvedConfig:
    """Check and resolve a (schema-validated) config dict; `base_dir` anchors relative hf_config paths."""
    base_dir = Path(base_dir)
    for section in config:
        if section not in SECTIONS:
            raise unknown("config", section, SECTIONS)
    models_cfg, gpus_cfg = config.get("models") or {}, config.get("gpus") or {}
    if not models_cfg:
        raise RooflineInputError("models: empty; list at least one model, e.g. models: {llama-2-7b: {}}")
    if not gpus_cfg:
        raise RooflineInputError("gpus: empty; list at least one accelerator, e.g. gpus: {h100-sxm: {}}")
    stages = tuple(config.get("stages") or STAGES)
    for stage in stages:
        if stage not in STAGES:
            raise unknown("stages", stage, STAGES)
    if len(set(stages)) != len(stages):
        raise RooflineInputError(f"stages: {list(stages)} lists a stage twice")
    check_publish(config.get("publish"))
    scenario = Scenario.from_dict(config.get("scenario"))
    models = {key: resolve_model(key, entry, base_dir) for key, entry in models_cfg.items()}
    gpu_plans = {key: _gpu_plan(key, entry) for key, entry in gpus_cfg.items()}
    gpus = {key: resolve_gpu(key, {k: v for k, v in (entry or {}).items() if k != "parallel"}, base_dir)
            for key, entry in gpus_cfg.items()}
    for key, gpu in gpus.items():
        if gpu.framework:  # a device's own framework must run on it (the scenario's is a preference where tables exist)
            check_runs_on(gpu.framework, gpu, f"gpus.{key}.framework")
        for model in models.values():
            try:
                check_device_dtypes(gpu, scenario.for_model(model))
            except RooflineInputError as error:
                raise RooflineInputError(f"gpus.{key}: {error}") from None
    for key, model in models.items():
        for stage in stages:
            try:
                check_context(model, stage, scenario)
            except RooflineInputError as error:
                raise RooflineInputError(f"models.{key}: {error}") from None
    plans = {key: {gpu_key: _plan(model, gpu, gpu_plans[gpu_key], scenario, stages) for gpu_key, gpu in gpus.items()}
             for key, model in models.items()}
    return ResolvedConfig(models=models, gpus=gpus, scenario=scenario, stages=stages, plans=plans,
                          plan_search=resolve_plan_section(config.get("plan"), gpus, models, scenario),
                          measurements=resolve_measurements(config.get("measurements"), models, gpus, scenario,
                                                            base_dir),
                          compare_with=_compare_with(config.get("compare_with"), base_dir),
                          serving=resolve_serving_section(config.get("serving"), gpus, models,
                                                          scenario.kv_dtype, base_dir, scenario.framework))


def _compare_with(path, base_dir: Path) -> str:
    """The `compare_with` results folder as an absolute path ("" when absent), checked to hold totals.parquet."""
    if not path:
        return ""
    full = Path(str(path)) if Path(str(path)).is_absolute() else base_dir / str(path)
    return no_braces(str(checked_results_folder(full, "compare_with").resolve()), "compare_with")


def no_braces(path: str, key: str) -> str:
    """`path`, refused in one line where it holds '{' or '}': a job input, Snakemake would read them as a wildcard
    and stop (or read another file) after the config had been accepted."""
    if "{" in path or "}" in path:
        raise RooflineInputError(f"{key}: '{clip(path, 240)}' holds '{{' or '}}', which Snakemake reads as a wildcard "
                                 "in a job's input; rename the file or its folder")
    return path


def _gpu_plan(key: str, entry: dict | None) -> Parallel | str | None:
    """The plan a gpus: entry carries (None: the scenario's)."""
    if not entry or "parallel" not in entry:
        return None
    return Parallel.from_value(entry["parallel"], f"gpus.{key}.parallel")


def _plan(model: ModelSpec, gpu: Accelerator, gpu_plan, scenario: Scenario, stages) -> Parallel:
    """The concrete plan of one (model, gpu): the gpu entry's or the scenario's, `auto` resolved; a plan the model
    or the device cannot run stops here, naming where the plan came from."""
    where = f"gpus.{gpu.key}.parallel" if gpu_plan is not None else "scenario.parallel"
    planned = replace(scenario, parallel=gpu_plan if gpu_plan is not None else scenario.parallel)
    check_indexer_device(model, gpu)  # not a plan's fault: its own line
    try:
        if planned.parallel != "auto":
            check_plan(model, gpu, planned.parallel)
        return resolve_plan(model, gpu, planned, stages).parallel
    except RooflineInputError as error:
        raise RooflineInputError(f"{where} for models.{model.key}: {error}") from None


def resolve_plan_section(section: dict | None, gpus: dict[str, Accelerator], models: dict[str, ModelSpec],
                         scenario: Scenario) -> PlanSettings | None:
    """The `plan` section (None when absent): candidate gpus are keys of `gpus:` or of the catalog (default: every
    configured gpu); every model must hold a whole request (isl + osl tokens) in its context; the scenario's
    memory_utilization applies."""
    if section is None:
        return None
    section = {key: value for key, value in section.items() if value is not None}  # null = absent
    keys = section.get("gpus") or list(gpus)
    for key in keys:
        if key not in gpus and key not in gpu_catalog():
            raise unknown("plan.gpus", key, [*gpus, *gpu_catalog()])
    served = any(key in section for key in ("mode", "weight_dtypes", "kv_dtypes", "attention_weight_dtype",
                                            "fp8_scaling"))
    if "prefill" in section and served:
        raise RooflineInputError("plan.prefill: not with plan.mode / plan.weight_dtypes / plan.kv_dtypes / "
                                 "plan.attention_weight_dtype / plan.fp8_scaling; prefill is the step model of the "
                                 "previous release, mode the serving model (drop one)")
    milliseconds = {name: section.get(f"{name}_ms") for name in ("tpot", "ttft")}
    try:
        workload = Workload(isl=section.get("isl", 1024), osl=section.get("osl", 1024),
                            tpot_s=milliseconds["tpot"] / 1e3 if milliseconds["tpot"] else None,
                            ttft_s=milliseconds["ttft"] / 1e3 if milliseconds["ttft"] else None,
                            prefill=section.get("prefill", "separate")).validate()
    except RooflineInputError as error:
        raise RooflineInputError(f"plan.{error}") from None
    for key, model in models.items():
        try:
            check_workload_context(model, workload)
        except RooflineInputError as error:
            raise RooflineInputError(f"plan.{error} (models.{key})") from None
    attention = section.get("attention_weight_dtype") or ""
    if attention:
        check_storage_dtype("plan.attention_weight_dtype", attention)
    scaling = section.get("fp8_scaling") or scenario.fp8_scaling  # as memory_utilization: the scenario's
    if scaling not in FP8_SCALINGS:
        raise unknown("plan.fp8_scaling", scaling, FP8_SCALINGS)
    settings = PlanSettings(workload=workload, gpus=tuple(gpus.get(k) or accelerator_from_entry(k, None) for k in keys),
                            max_devices=check_max_devices("plan.max_devices", section.get("max_devices", 8)),
                            dtypes=tuple(section.get("dtypes", DEFAULT_DTYPES)),
                            memory_utilization=scenario.memory_utilization,
                            mode=section.get("mode", "aggregated") if served else None,
                            weight_dtypes=tuple(section.get("weight_dtypes", ())),
                            kv_dtypes=tuple(section.get("kv_dtypes") or served_kv_dtypes(section.get("dtypes"))),
                            attention_weight_dtype=attention, fp8_scaling=scaling,
                            framework=section.get("framework") or scenario.framework,
                            rank_on=section.get("rank_on", "expected"))
    for gpu in settings.gpus if settings.mode is not None else ():  # the serving model's framework runs on them
        if not gpu.framework:  # a device's own framework: checked with its gpus: entry (resolve_config)
            check_runs_on(settings.framework, gpu, "plan.framework")
    for key, model in models.items():  # every search bounded before any job runs
        seconds = None
        if settings.mode is None:  # the step model's search
            count = count_candidates(model, settings.gpus, settings.dtypes, settings.max_devices,
                                     settings.memory_utilization)
        else:  # the serving model's: what roofline.serving.search.search counts
            try:
                parts = served_counts(model, settings.gpus, settings.weight_dtypes or settings.dtypes,
                                      settings.kv_dtypes, settings.max_devices, settings.mode)
                count, seconds = sum(parts), search_seconds(*parts)
            except RooflineInputError as error:  # name the config keys, not the command line's options
                raise RooflineInputError(str(error).replace("--weight-dtypes", "plan.weight_dtypes").replace(
                    "--kv-dtypes", "plan.kv_dtypes")) from None
        check_budget(count, section.get("max_candidates", MAX_CANDIDATES), f"plan (models.{key})",
                     "lower plan.max_devices, list fewer plan.gpus or plan.dtypes, or raise plan.max_candidates",
                     seconds)
    return settings
