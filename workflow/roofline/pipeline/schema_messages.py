"""One line for each JSON-schema error in a config, in the words of the config's own keys."""
from __future__ import annotations

from ..engine.errors import CONTROL_CHARACTERS, RooflineInputError, clip, unknown
from .config import check_key

_BOUNDS = {"exclusiveMinimum": ">", "minimum": ">=", "maximum": "<=", "exclusiveMaximum": "<"}
#: the schema's pattern of text on one line (names, vendors, sources, link names: a line break in a display name
#: had started a heading of its own in the wiki's Markdown)
ONE_LINE = f"^[^{CONTROL_CHARACTERS}]*$"


def check_schema(config: dict, schema: dict) -> None:
    """One RooflineInputError line (describe_schema_error) for the first error of `config` against `schema`:
    checked before Snakemake's validate, which fills defaults and cannot where a value has the wrong type (a string
    where a plan mapping may be)."""
    import jsonschema  # pulled in by Snakemake anyway; here only when a config is checked

    error = next(iter(jsonschema.Draft202012Validator(schema).iter_errors(config)), None)
    if error is not None:
        raise RooflineInputError(describe_schema_error(error))


def key_path(parts) -> str:
    """'serving.workloads[0].isl': keys joined by dots, list positions in brackets, as the later checks name them
    ('config' for the top)."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "config"


def describe_schema_error(error) -> str:
    """One line for a `jsonschema.ValidationError`: where, the bad value, what is allowed."""
    where = key_path(error.absolute_path)
    value, kind, expected = error.instance, error.validator, error.validator_value
    if kind in ("oneOf", "anyOf") and error.context:
        return _alternatives(error)
    if kind == "enum" and not isinstance(value, str):
        return f"{where}: {_yaml(value)} is not allowed; allowed: {', '.join(_yaml(v) for v in expected)}"
    if kind == "enum":
        return unknown(where, value, [v if isinstance(v, str) else _yaml(v) for v in expected]).args[0]
    if kind == "const":
        return f"{where}: {_yaml(value)} is not allowed; expected {_yaml(expected)}"
    if kind == "additionalProperties" and isinstance(value, dict):
        allowed = list(error.schema.get("properties", {}))
        extra = sorted(set(value) - set(allowed))
        if extra:
            return unknown(where, extra[0], allowed).args[0].replace("unknown value", "unknown key")
    if kind in _BOUNDS:
        return f"{where}: {value!r} is not allowed; must be {_BOUNDS[kind]} {expected}"
    if kind == "type":
        return _type_message(error, where)
    if kind == "required":
        missing = next((name for name in expected if isinstance(value, dict) and name not in value), None)
        return f"{where}: needs the key '{missing}'" if missing else f"{where}: {error.message}"
    if kind == "pattern" and error.parent is None and "propertyNames" in error.schema_path:
        return _key_message(where, value)
    if kind == "pattern" and expected == ONE_LINE:
        return f"{where}: {clip(repr(value))} is not allowed; write it on one line, without line breaks, tabs or " \
               "other control characters"
    if kind == "minItems" and isinstance(value, list) and value and expected > 1:
        return f"{where}: {clip(repr(value))} is not allowed; expected {expected} items"
    if kind in ("minProperties", "minItems"):
        return f"{where}: must not be empty"
    if kind == "uniqueItems" and isinstance(value, list):
        return f"{where}: {clip(repr(value))} lists a value more than once; give each once"
    if kind == "maxItems" and isinstance(value, list):
        return f"{where}: {clip(repr(value))} is not allowed; at most {expected} items"
    if kind == "maxLength" and isinstance(value, str):
        if "propertyNames" in error.schema_path:
            return _key_message(where, value)
        return f"{where}: '{value[:24]}...' ({len(value)} characters) is too long; at most {expected} characters"
    return f"{where}: {error.message}"


def _type_message(error, where: str) -> str:
    """A value of the wrong type: an entry that is no mapping, a list where a mapping of entries is wanted, a key
    with nothing under it, or the type expected (with YAML's yes/no reading said)."""
    value, expected = error.instance, error.validator_value
    if len(error.absolute_path) == 2 and error.absolute_path[0] in ("models", "gpus"):
        key = error.absolute_path[1]
        said = " (YAML reads yes/no/on/off as true/false)" if isinstance(value, bool) else ""
        return (f"{where}: {clip(repr(value))} is not an entry{said}; write '{key}: {{}}' for the catalog entry, or a "
                "mapping of fields such as {name: ...}")
    if isinstance(value, list) and expected == "object" and len(error.absolute_path) == 1:
        names = [item for item in value[:3] if isinstance(item, str)] or ["key"]
        keys = ", ".join(f"{name}: {{}}" for name in names)
        return (f"{where}: {clip(repr(value))} is a list; expected a mapping of keys to entries, e.g. "
                f"{{{keys}}} (one per line: '  {names[0]}: {{}}')")
    if value is None:  # `scenario:` with nothing under it
        return f"{where}: empty (YAML reads a key with nothing under it as null); give its keys or delete the line"
    wanted = expected if isinstance(expected, str) else " or ".join(expected)
    said = " (YAML reads yes/no/on/off as true/false: quote the word)" if isinstance(value, bool) else ""
    return f"{where}: {clip(_yaml(value))} is not allowed; expected {wanted}{said}"


def _alternatives(error) -> str:
    """A oneOf/anyOf error in the words of the alternative whose type the value has (a plan mapping's bad `tp`
    names `...parallel.tp`); where no alternative has its type, or the value is a string that no alternative of
    the string type allows, the line lists every alternative."""
    branches: dict[int, list] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0], []).append(sub)
    typed = [subs for subs in branches.values() if not any(s.validator == "type" and not s.path for s in subs)]
    mappings = [b for b in error.validator_value if isinstance(b, dict) and b.get("type") == "object"]
    plan = f" (or a mapping of {', '.join(mappings[0].get('properties', {}))})" if mappings else ""
    if typed and not any(s.validator == "const" and not s.path for s in typed[0]):  # a constant says no more
        deepest = max(typed[0], key=lambda s: len(s.path))
        line = describe_schema_error(deepest)
        return line + plan if deepest.validator == "enum" and not deepest.path else line
    where = key_path(error.absolute_path)
    kinds = sorted({_yaml(b["const"]) if "const" in b else str(b.get("type")) for b in error.validator_value
                    if isinstance(b, dict) and ("type" in b or "const" in b)})
    return f"{where}: {clip(_yaml(error.instance))} is not allowed; expected {' or '.join(kinds)}{plan}"


def _yaml(value) -> str:
    """`value` as YAML spells it: null, true and false (Python's None, True and False are not words of the file)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _key_message(section: str, key: object) -> str:
    try:
        check_key(section, key)
    except RooflineInputError as error:
        return error.args[0]
    return f"{section}: key {key!r} is not allowed"
