"""Resolve the workflow's `config.yaml` into specs: the semantic checks the JSON schema cannot express.

`resolve_config` turns the validated config dict (models, gpus, stages, scenario) into a `ResolvedConfig` of
ModelSpec / Accelerator / Scenario dataclasses, and raises `RooflineInputError` with one line for anything the
pipeline cannot run: an unknown catalog key (with a "did you mean"), a non-positive bandwidth, memory or peak, a
compute dtype a device publishes no peak for, a missing `config.json`, or a key that is not a safe file name (keys
become path components under results/ and reports/). `describe_schema_error` turns a jsonschema error into the
same kind of line. Imports no Snakemake: the Snakefile, the CLI and the tests call it alike.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from dataclasses import replace

from ..engine.analysis import check_device_dtypes, resolve_plan
from ..estimate.calibration import check_table
from ..engine.errors import RooflineInputError, unknown
from ..engine.hardware import Accelerator, accelerator_from_entry, catalog as gpu_catalog
from ..engine.errors import clip
from ..engine.hf_config import not_a_file
from ..engine.models import ModelSpec, model_from_entry
from ..engine.parallel import Parallel, check_plan
from ..serving.planner import DEFAULT_DTYPES, PlanSettings, Workload, check_workload_context
from ..engine.scenario import FRAMEWORKS, STAGES, Scenario, check_context

#: Keys of models and gpus: lowercase letters, digits, '.', '-', '_', starting with a letter or digit.
SAFE_KEY = re.compile(r"[a-z0-9][a-z0-9._-]*")
#: Longest key (the schema's $defs/key maxLength): keys become parts of file names such as
#: reports/figures/{model}/roofline_{gpu}.svg, which must stay well below the usual 255-byte limit.
MAX_KEY_LENGTH = 64
#: Model keys that would collide with the report files reports/summary.* and reports/index.html.
RESERVED_MODEL_KEYS = ("summary", "index")
#: Top-level sections of config.yaml.
SECTIONS = ("models", "gpus", "stages", "scenario", "plan", "publish")


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

    def plan_search_params(self) -> dict:
        """JSON-able plan settings (PlanSettings.from_params rebuilds them): the plan jobs' `params`."""
        return asdict(self.plan_search)

    def model_params(self, key: str) -> dict:
        """JSON-able spec of one model (ModelSpec(**params) rebuilds it): a job's `params`."""
        return asdict(self.models[key])

    def gpu_params(self, key: str) -> dict:
        """JSON-able spec of one accelerator (Accelerator(**params) rebuilds it)."""
        return asdict(self.gpus[key])

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
        raise RooflineInputError(
            f"{section}: key {key!r} is not allowed; keys use lowercase letters, digits, '.', '-' and '_' and start "
            "with a letter or digit (they become file names under results/ and reports/)")
    if len(key) > MAX_KEY_LENGTH:
        raise RooflineInputError(
            f"{section}: key '{key[:24]}...' ({len(key)} characters) is too long; keys have at most "
            f"{MAX_KEY_LENGTH} characters (they become file names under results/ and reports/)")
    return key


def resolve_model(key: str, entry: dict | None, base_dir: Path) -> ModelSpec:
    check_key("models", key)
    if key in RESERVED_MODEL_KEYS:
        raise RooflineInputError(f"models: key '{key}' is reserved (reports/{key}.html is a report of its own); "
                                 "rename the model")
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
    if "calibration" in entry:  # an absolute path, read once here so that a bad table stops the run before any job
        path = Path(str(entry["calibration"]))
        full = path if path.is_absolute() else base_dir / path
        try:
            entry["calibration"] = check_table(str(full.resolve()))
        except RooflineInputError as error:
            raise RooflineInputError(f"gpus.{key}.{error} (relative paths start at the working directory "
                                     f"{base_dir})") from None
    if "framework" in entry and entry["framework"] not in FRAMEWORKS:
        raise unknown(f"gpus.{key}.framework", entry["framework"], FRAMEWORKS)
    return check_plausible(key, entry, accelerator_from_entry(key, entry))


#: Plausible range of each device figure once converted to SI units, from a microcontroller to a whole rack, with
#: the entry field that sets it and the unit of the range. Outside it a figure is a typo (1.0e+308, 5.0e-324) that
#: would overflow or divide by zero in the jobs, so it is refused at config time. An attribute a device lacks or
#: leaves at 0 or None (no such figure) is not checked.
PLAUSIBLE_SI = {
    "memory_bytes": ("memory_gb", 1e6, 1e15, "byte"),                 # 1 MB .. 1 PB
    "bandwidth_bytes_per_s": ("bandwidth_gbps", 1e6, 1e16, "byte/s"),  # 1 MB/s .. 10 PB/s
    "l2_bytes": ("l2_mb", 1e3, 1e12, "byte"),                          # 1 kB .. 1 TB
    "peak_flops_per_s": ("peak_tflops", 1e6, 1e21, "FLOP/s"),          # 1 MFLOP/s .. 1 ZFLOP/s, per dtype
    "scaleup_bandwidth_bytes_per_s": ("scaleup_gbps", 1e6, 1e16, "byte/s"),
    "scaleout_bandwidth_bytes_per_s": ("scaleout_gbps", 1e6, 1e16, "byte/s"),
}


def check_plausible(key: str, entry: dict | None, gpu: Accelerator) -> Accelerator:
    """`gpu` if every figure in PLAUSIBLE_SI lies in its range after unit conversion, else one line naming
    gpus.<key>.<field> and the value as the entry wrote it."""
    entry = entry or {}
    for attribute, (field_name, low, high, unit) in PLAUSIBLE_SI.items():
        value = getattr(gpu, attribute, None)
        figures = value.items() if isinstance(value, dict) else [(None, value)]
        for dtype, number in figures:
            if not number or low * (1 - 1e-9) <= number <= high * (1 + 1e-9):  # 0.001 GB/s is 1e6 byte/s
                continue
            where = f"{field_name}.{dtype}" if dtype else field_name
            written = (entry.get(field_name) or {}).get(dtype) if dtype else entry.get(field_name)
            raise RooflineInputError(f"gpus.{key}.{where}: {written if written is not None else number} is not "
                                     f"plausible ({number:.3g} {unit} once converted); expected {low:g} to "
                                     f"{high:g} {unit}")
    return gpu


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
    scenario = Scenario.from_dict(config.get("scenario"))
    models = {key: resolve_model(key, entry, base_dir) for key, entry in models_cfg.items()}
    gpu_plans = {key: _gpu_plan(key, entry) for key, entry in gpus_cfg.items()}
    gpus = {key: resolve_gpu(key, {k: v for k, v in (entry or {}).items() if k != "parallel"}, base_dir)
            for key, entry in gpus_cfg.items()}
    for key, gpu in gpus.items():
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
                          plan_search=resolve_plan_section(config.get("plan"), gpus, models, scenario))


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
    try:
        if planned.parallel != "auto":
            check_plan(model, gpu, planned.parallel)
        return resolve_plan(model, gpu, planned, stages).parallel
    except RooflineInputError as error:
        raise RooflineInputError(f"{where} for models.{model.key}: {error}") from None


class ConfigLoader(yaml.SafeLoader):
    """PyYAML's safe loader plus YAML 1.2 numbers: an exponent without a dot (3e3, 1e-300) is a float, not the
    string YAML 1.1 makes of it."""


ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789"))


def load_config_file(path: str | Path) -> dict:
    """A config file (YAML or JSON) read with ConfigLoader; a key written twice in one mapping is one line naming
    the key and both line numbers (YAML would silently keep the last one and drop the override)."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        _refuse_duplicate_keys(yaml.compose(text, Loader=ConfigLoader), str(path), seen_nodes=set())
        loaded = yaml.load(text, Loader=ConfigLoader)
    except yaml.YAMLError as error:
        raise RooflineInputError(f"{path}: not valid YAML ({' '.join(str(error).split())[:200]})") from None
    except RecursionError:
        raise RooflineInputError(f"{path}: nested too deeply to be a config file") from None
    return loaded if isinstance(loaded, dict) else {}


def _refuse_duplicate_keys(node, path: str, where: str = "", seen_nodes: set | None = None) -> None:
    if seen_nodes is not None:  # an alias repeats a node: check it once (a YAML "billion laughs" stays linear)
        if id(node) in seen_nodes:
            return
        seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            name = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            line = key_node.start_mark.line + 1
            if name is not None and name in seen:
                raise RooflineInputError(
                    f"{where + '.' if where else ''}{clip(name)}: written twice in {path} (lines {seen[name]} and "
                    f"{line}); YAML would keep only the second, so merge the two into one entry")
            if name is not None:
                seen[name] = line
            _refuse_duplicate_keys(value_node, path, f"{where + '.' if where else ''}{clip(name)}", seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _refuse_duplicate_keys(item, path, f"{where}[{i}]", seen_nodes)


def merge_config(base: dict, override: dict) -> dict:
    """`base` updated in place with `override`, recursively, as Snakemake's update_config merges config files."""
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge_config(base[key], value)
        else:
            base[key] = value
    return base


def typed_config(files: list, overrides: dict, schema: dict) -> dict:
    """The config Snakemake assembles from config `files` (in order) and `--config` `overrides`, with types as the
    files write them: each file re-read with load_config_file (YAML 1.2 numbers, duplicate keys refused); strings
    converted to numbers, booleans or null only in `overrides` (coerce_strings), where Snakemake hands every value
    over as a string. A string in a file (batch: "8") stays a string, for the schema to refuse; a whole number in
    any notation (batch: 1e3) is an integer (whole_numbers)."""
    config: dict = {}
    for path in files:
        merge_config(config, load_config_file(path))
    return merge_config(whole_numbers(config, schema), coerce_strings(overrides, schema))


def resolve_plan_section(section: dict | None, gpus: dict[str, Accelerator], models: dict[str, ModelSpec],
                         scenario: Scenario) -> PlanSettings | None:
    """The `plan` section (None when absent): candidate gpus are keys of `gpus:` or of the catalog (default: every
    configured gpu); every model must hold a whole request (isl + osl tokens) in its context; the scenario's
    memory_utilization applies."""
    if section is None:
        return None
    section = dict(section)
    keys = section.get("gpus") or list(gpus)
    for key in keys:
        if key not in gpus and key not in gpu_catalog():
            raise unknown("plan.gpus", key, [*gpus, *gpu_catalog()])
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
    return PlanSettings(workload=workload, gpus=tuple(gpus.get(k) or accelerator_from_entry(k, None) for k in keys),
                        max_devices=section.get("max_devices", 8), dtypes=tuple(section.get("dtypes", DEFAULT_DTYPES)),
                        memory_utilization=scenario.memory_utilization, rank_on=section.get("rank_on", "expected"),
                        framework=scenario.framework)


def load_schema(path: str | Path) -> dict:
    """The JSON schema (YAML file) of config.yaml."""
    return yaml.safe_load(Path(path).read_text())


def coerce_strings(value, schema: dict):
    """`value` with strings read as YAML where `schema` wants no string (a number, integer, boolean or null), and
    whole-number floats made integers where it wants an integer (see whole_numbers).

    `snakemake --config 'scenario={batch: 8}'` parses nested values with YAML's BaseLoader, which keeps every
    scalar a string ('8'); this restores the types the schema expects so that `--config` overrides work. Strings
    that do not parse to such a scalar are left as they are for the schema to reject. Returns a new object.
    """
    return _retyped(value, schema, schema, strings=True)


def whole_numbers(value, schema: dict):
    """`value` with whole-number floats (`batch: 1e3` reads as 1000.0) made integers where `schema` wants an integer,
    so that YAML numbers in any notation are accepted. Returns a new object."""
    return _retyped(value, schema, schema, strings=False)


def _retyped(value, schema: dict, root: dict, strings: bool):
    while "$ref" in schema:
        ref = schema["$ref"]
        target = root
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        return {key: _retyped(item, properties.get(key, extra if isinstance(extra, dict) else {}), root, strings)
                for key, item in value.items()}
    if isinstance(value, list):
        items = schema.get("items", {})
        return [_retyped(item, items, root, strings) for item in value]
    if strings and isinstance(value, str) and types and "string" not in types:
        try:
            parsed = yaml.load(value, Loader=ConfigLoader)
        except yaml.YAMLError:
            return value
        if parsed is None or isinstance(parsed, (bool, int, float)):
            value = parsed
    if isinstance(value, float) and value.is_integer() and "integer" in types and "number" not in types:
        return int(value)
    return value


def describe_schema_error(error) -> str:
    """One line for a `jsonschema.ValidationError`: where, the bad value, what is allowed."""
    where = ".".join(str(part) for part in error.absolute_path) or "config"
    value, kind, expected = error.instance, error.validator, error.validator_value
    if kind == "enum" and not isinstance(value, str):
        return f"{where}: {value!r} is not allowed; allowed: {', '.join(str(v) for v in expected)}"
    if kind == "enum":
        return unknown(where, value, [str(v) for v in expected]).args[0]
    if kind == "additionalProperties" and isinstance(value, dict):
        allowed = list(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(allowed))
        if extra:
            return unknown(where, extra[0], allowed).args[0].replace("unknown value", "unknown key")
    if kind in ("exclusiveMinimum", "minimum", "maximum", "exclusiveMaximum"):
        op = {"exclusiveMinimum": ">", "minimum": ">=", "maximum": "<=", "exclusiveMaximum": "<"}[kind]
        return f"{where}: {value!r} is not allowed; must be {op} {expected}"
    if kind == "type" and len(error.absolute_path) == 2 and error.absolute_path[0] in ("models", "gpus"):
        key = error.absolute_path[1]
        return (f"{where}: {clip(repr(value))} is not an entry (YAML reads yes/no/on/off as true/false); write "
                f"'{key}: {{}}' for the catalog entry, or a mapping of fields such as {{name: ...}}")
    if kind == "type":
        wanted = expected if isinstance(expected, str) else " or ".join(expected)
        return f"{where}: {clip(repr(value))} is not allowed; expected {wanted}"
    if kind == "required":
        return f"{where}: {error.message}"
    if kind == "pattern" and error.parent is None and "propertyNames" in error.schema_path:
        return _key_message(where, value)
    if kind in ("minProperties", "minItems"):
        return f"{where}: must not be empty"
    if kind == "maxLength" and isinstance(value, str):
        if "propertyNames" in error.schema_path:
            return _key_message(where, value)
        return f"{where}: '{value[:24]}...' ({len(value)} characters) is too long; at most {expected} characters"
    return f"{where}: {error.message}"


def _key_message(section: str, key: object) -> str:
    try:
        check_key(section, key)
    except RooflineInputError as error:
        return error.args[0]
    return f"{section}: key {key!r} is not allowed"
