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

from .analysis import check_device_dtypes
from .errors import RooflineInputError, unknown
from .hardware import Accelerator, accelerator_from_entry
from .models import ModelSpec, model_from_entry
from .scenario import STAGES, Scenario, check_context

#: Keys of models and gpus: lowercase letters, digits, '.', '-', '_', starting with a letter or digit.
SAFE_KEY = re.compile(r"[a-z0-9][a-z0-9._-]*")
#: Longest key (the schema's $defs/key maxLength): keys become parts of file names such as
#: reports/figures/{model}/roofline_{gpu}.svg, which must stay well below the usual 255-byte limit.
MAX_KEY_LENGTH = 64
#: Model keys that would collide with the report files reports/summary.* and reports/index.html.
RESERVED_MODEL_KEYS = ("summary", "index")
#: Top-level sections of config.yaml.
SECTIONS = ("models", "gpus", "stages", "scenario", "publish")


@dataclass(frozen=True)
class ResolvedConfig:
    """The config as specs, in config order. `specs()` is the content of results/specs.json, `model_specs(key)`
    that of results/models/{key}/specs.json."""

    models: dict[str, ModelSpec]
    gpus: dict[str, Accelerator]
    scenario: Scenario
    stages: tuple[str, ...]

    def model_params(self, key: str) -> dict:
        """JSON-able spec of one model (ModelSpec(**params) rebuilds it): a job's `params`."""
        return asdict(self.models[key])

    def gpu_params(self, key: str) -> dict:
        """JSON-able spec of one accelerator (Accelerator(**params) rebuilds it)."""
        return asdict(self.gpus[key])

    def scenario_params(self) -> dict:
        return asdict(self.scenario)

    def specs(self) -> dict:
        """{"models", "gpus", "scenario", "stages", "config_sha256"}: the resolved config, JSON-able."""
        return self._specs(list(self.models))

    def model_specs(self, key: str) -> dict:
        """The specs of one model: the same shape as specs(), with only model `key` under "models" (every gpu,
        the scenario and the stages as in specs()). This is all a model's figures and report depend on, so
        editing another model leaves it unchanged; its "config_sha256" is the digest of this content (it
        differs from the grid-wide one of specs())."""
        return self._specs([key])

    def _specs(self, models: list[str]) -> dict:
        body = {
            "models": {key: self.model_params(key) for key in models},
            "gpus": {key: self.gpu_params(key) for key in self.gpus},
            "scenario": self.scenario_params(),
            "stages": list(self.stages),
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
        if not full.is_file():
            raise RooflineInputError(f"models.{key}.hf_config: file '{path}' does not exist "
                                     f"(relative paths start at the working directory {base_dir})")
        entry["hf_config"] = str(full)
    return model_from_entry(key, entry, base_dir)


def resolve_gpu(key: str, entry: dict | None) -> Accelerator:
    check_key("gpus", key)
    return accelerator_from_entry(key, entry)


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
    gpus = {key: resolve_gpu(key, entry) for key, entry in gpus_cfg.items()}
    for key, gpu in gpus.items():
        try:
            check_device_dtypes(gpu, scenario)
        except RooflineInputError as error:
            raise RooflineInputError(f"gpus.{key}: {error}") from None
    for key, model in models.items():
        for stage in stages:
            try:
                check_context(model, stage, scenario)
            except RooflineInputError as error:
                raise RooflineInputError(f"models.{key}: {error}") from None
    return ResolvedConfig(models=models, gpus=gpus, scenario=scenario, stages=stages)


def load_schema(path: str | Path) -> dict:
    """The JSON schema (YAML file) of config.yaml."""
    return yaml.safe_load(Path(path).read_text())


def coerce_strings(value, schema: dict, root: dict | None = None):
    """`value` with strings read as YAML where `schema` wants no string (a number, integer, boolean or null).

    `snakemake --config 'scenario={batch: 8}'` parses nested values with YAML's BaseLoader, which keeps every
    scalar a string ('8'); this restores the types the schema expects so that `--config` overrides work. Strings
    that do not parse to such a scalar are left as they are for the schema to reject. Returns a new object.
    """
    root = schema if root is None else root
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
        return {key: coerce_strings(item, properties.get(key, extra if isinstance(extra, dict) else {}), root)
                for key, item in value.items()}
    if isinstance(value, list):
        items = schema.get("items", {})
        return [coerce_strings(item, items, root) for item in value]
    if isinstance(value, str) and types and "string" not in types:
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            return value
        if parsed is None or isinstance(parsed, (bool, int, float)):
            return parsed
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
    if kind == "type":
        wanted = expected if isinstance(expected, str) else " or ".join(expected)
        return f"{where}: {value!r} is not allowed; expected {wanted}"
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
