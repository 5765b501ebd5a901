"""The config's JSON schema as a type guide: the config Snakemake assembles, re-typed as the files write it.

Snakemake hands `--config` values over as strings and YAML reads `1e3` as a float; `typed_config` restores the
types the schema expects before the schema validates (messages for its errors: `schema_messages`).
"""
from __future__ import annotations

from pathlib import Path

import yaml

from .yaml_loader import ConfigLoader, load_config_file, merge_config


def load_schema(path: str | Path) -> dict:
    """The JSON schema (YAML file) of config.yaml."""
    return yaml.safe_load(Path(path).read_text())


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


def _dereferenced(schema: dict, root: dict) -> dict:
    """`schema` with its `$ref`s (JSON pointers into `root`) followed, its own keys winning."""
    while "$ref" in schema:
        target = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _retyped(value, schema: dict, root: dict, strings: bool):
    schema = _dereferenced(schema, root)
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
