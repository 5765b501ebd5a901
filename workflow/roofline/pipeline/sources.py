"""What the compute jobs run: the roofline modules they import, found statically, and a stamp of their contents.

The compute rule's `run:` block imports roofline.pipeline.jobs once per Snakemake process, so Snakemake notices an
edit of the library only through files it is told about. engine_sources() follows the imports of that module
(at module level and inside functions) through the package: the engine, the estimate layer and the job glue. A
package's __init__.py passed on the way to a submodule counts with its module-level imports only: importing the
submodule runs that code, not the functions it defines (roofline/__init__.py's API imports the CLI when called). An
edit of the planner, a figure, the report or the CLI is not among them and reruns no compute job.
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from .atomic import atomic, log_to

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # workflow/roofline
COMPUTE_ENTRY = "roofline.pipeline.jobs"


def _module_file(name: str) -> Path | None:
    """The source file of module `name` of this package (a package's __init__.py), None if there is none."""
    parts = name.split(".")[1:]
    if not parts:
        return PACKAGE_DIR / "__init__.py"
    relative = Path(*parts)
    for path in (PACKAGE_DIR / relative.with_suffix(".py"), PACKAGE_DIR / relative / "__init__.py"):
        if path.is_file():
            return path
    return None


def _nodes(tree: ast.AST, in_functions: bool):
    """Every node of `tree`; without the bodies of functions unless `in_functions`."""
    for child in ast.iter_child_nodes(tree):
        if in_functions or not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield child
            yield from _nodes(child, in_functions)


def _imports(name: str, path: Path, in_functions: bool = True) -> set[str]:
    """Absolute names of the roofline modules (and packages) `path` imports, anywhere in the file (at module and
    class level only, without `in_functions`)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in _nodes(ast.parse(path.read_text(), str(path)), in_functions):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {n for n in found if n.split(".")[0] == "roofline" and _module_file(n) is not None}


@lru_cache(maxsize=1)
def _closure() -> tuple[Path, ...]:
    """Files of every module the compute entry imports, transitively, with the __init__.py of each package on
    the way (importing a submodule runs its package's __init__ first, at module level)."""
    files: dict[str, Path] = {}
    whole: set[str] = set()  # modules imported by name: the imports inside their functions count too
    todo = [COMPUTE_ENTRY]
    while todo:
        parts = todo.pop().split(".")
        for depth in range(1, len(parts) + 1):
            prefix, imported = ".".join(parts[:depth]), depth == len(parts)
            path = _module_file(prefix)
            if path is None or prefix in whole or (prefix in files and not imported):
                continue
            files[prefix] = path
            if imported:
                whole.add(prefix)
            todo.extend(_imports(prefix, path, in_functions=imported))
    return tuple(sorted(set(files.values())))


def engine_sources(relative_to: str | Path | None = None) -> list[str]:
    """The compute jobs' source files, sorted; relative to `relative_to` (default: the working directory) when
    the package lies inside it, else absolute."""
    base = Path(relative_to or os.getcwd()).resolve()
    return [str(p.relative_to(base)) if p.is_relative_to(base) else str(p) for p in _closure()]


def write_engine_stamp(sources: Iterable[str], path: str, log: str | None = None) -> None:
    """Write {"files": {source: sha256}, "sha256": digest of all} for the engine's source files.

    The compute rule takes this one file as input instead of the sources themselves: Snakemake checksums every
    input once per output file, and 14 sources x 4 outputs x 72 jobs took a second of a five-second rebuild.
    """
    sources = sorted(str(source) for source in sources)
    with log_to(log) as say:
        files = {_stamp_name(source): hashlib.sha256(Path(source).read_bytes()).hexdigest() for source in sources}
        digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
        with atomic([path]) as temps:
            temps[str(path)].write_text(json.dumps({"files": files, "sha256": digest}, indent=2) + "\n")
        say(f"{path}: {len(files)} engine files, sha256 {digest}")


def _stamp_name(source: str) -> str:
    """A source's name in the stamp: its path inside the package (two packages may hold files of one name)."""
    path = Path(source).resolve()
    return str(path.relative_to(PACKAGE_DIR)) if path.is_relative_to(PACKAGE_DIR) else path.name
