"""One line for each JSON-schema error in a config, in the words of the config's own keys."""
from __future__ import annotations

from ..engine.errors import RooflineInputError, clip, unknown
from .config import check_key

_BOUNDS = {"exclusiveMinimum": ">", "minimum": ">=", "maximum": "<=", "exclusiveMaximum": "<"}


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
    if kind in _BOUNDS:
        return f"{where}: {value!r} is not allowed; must be {_BOUNDS[kind]} {expected}"
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
