"""The strict reading of config files: YAML 1.2 numbers, a key written twice refused, files merged in order."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..engine.errors import RooflineInputError, clip


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
        said = str(error).replace('"<unicode string>"', f'"{path}"')  # PyYAML names the text it was given
        raise RooflineInputError(f"{path}: not valid YAML ({' '.join(said.split())[:200]})") from None
    except RecursionError:
        raise RooflineInputError(f"{path}: nested too deeply to be a config file") from None
    return loaded if isinstance(loaded, dict) else {}


def check_config_file(path: str | Path) -> dict:
    """load_config_file, and a file that holds no mapping of sections refused in one line (Snakemake's own reading
    says "Config file must be given as JSON or YAML with keys at top level" over two lines, and not what is
    needed)."""
    loaded = load_config_file(path)
    if not loaded:  # read again only to say what it holds instead
        raw = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=ConfigLoader)
        what = "empty (or only comments)" if raw is None else f"a {type(raw).__name__} at the top, not a mapping"
        raise RooflineInputError(f"{path}: {what}; it needs at least the sections models: and gpus:, e.g. models: "
                                 "{llama-3.1-8b: {}} and gpus: {h100-sxm: {}} (see the commented config.yaml)")
    return loaded


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
