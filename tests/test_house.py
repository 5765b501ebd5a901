"""The house rules of the `roofline` package (issue 16), checked on its source with `ast`.

* Layers: engine < estimate < serving < {pipeline, figures, report} < cli < the module `__main__` (`python -m
  roofline`). A module imports only from its own package, from packages of lower layers, and from
  `roofline.display` and the top-level `roofline` package; the three packages of one level do not import each other.
* No import cycle between modules (imports inside functions count: a cycle closed by a late import is a cycle).
* The engine imports no Snakemake, matplotlib, Jinja2 or WeasyPrint.
* Size: no function over 80 lines, at most 5 over 50; no module over 450 lines.
* No positional `Cost(...)` call: every cost names its byte kinds.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "workflow" / "roofline"

#: package -> layer; a module may import packages of lower layers (and its own package)
LAYERS = {"engine": 0, "estimate": 1, "serving": 2, "pipeline": 3, "figures": 3, "report": 3, "cli": 4}
#: `python -m roofline`: one module, not a package, above the command it runs
ENTRY_POINT = "roofline.__main__"
#: importable from every layer
SHARED = {"roofline", "roofline.display"}
FOREIGN_TO_ENGINE = ("snakemake", "matplotlib", "jinja2", "weasyprint")

MAX_FUNCTION_LINES, LONG_FUNCTION_LINES, MAX_LONG_FUNCTIONS, MAX_MODULE_LINES = 80, 50, 5, 450


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=1)
def modules() -> dict[str, tuple[Path, ast.Module]]:
    return {module_name(path): (path, ast.parse(path.read_text(), str(path))) for path in sorted(PACKAGE.rglob("*.py"))}


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name `from <node.module> import ...` refers to inside `module`."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str) -> set[str]:
    """Every module `module` imports (absolute names; `from pkg import name` counts `pkg.name` when that is a
    module of ours, else `pkg`). Imports under `if TYPE_CHECKING:` are ignored: they never run."""
    path, tree = modules()[module]
    found: set[str] = set()
    type_only = {id(n) for node in ast.walk(tree)
                 if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path, node)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in modules() else base)
    return found


def layer_of(module: str) -> tuple[str, int] | None:
    """(package, layer) of one of our modules, None for the shared ones."""
    parts = module.split(".")
    if module == ENTRY_POINT:
        return "__main__", max(LAYERS.values()) + 1
    if module in SHARED or len(parts) < 2:
        return None
    return parts[1], LAYERS.get(parts[1], -1)


def test_every_module_belongs_to_a_layer():
    strays = [m for m in modules() if m not in SHARED and (layer_of(m) or ("", 0))[1] < 0]
    assert not strays, f"modules outside the layered packages {sorted(LAYERS)}: {strays}"


def test_imports_point_down():
    wrong = []
    for module in modules():
        here = layer_of(module)
        if here is None:
            continue
        for target in imports(module):
            if not target.startswith("roofline.") or target in SHARED:
                continue
            there = layer_of(target)
            if there is None or there[0] == here[0]:
                continue
            if there[1] >= here[1]:
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports that do not point to a lower layer:\n" + "\n".join(sorted(wrong))


def test_no_import_cycle():
    graph = {m: {t for t in imports(m) if t in modules() and t != m} for m in modules()}
    # a package's __init__ re-exporting its modules is not an edge back into the package from its modules
    for m in graph:
        graph[m] = {t for t in graph[m] if not m.startswith(t + ".")}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                loop = stack[stack.index(nxt):] + [node, nxt] if nxt in stack else [node, nxt]
                cycles.append(" -> ".join(loop))
            elif nxt not in state:
                visit(nxt, stack + [node])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_engine_imports_no_presentation_or_workflow_library():
    offenders = [f"{m} -> {t}" for m in modules() if (layer_of(m) or ("", 9))[0] == "engine"
                 for t in imports(m) if t.split(".")[0] in FOREIGN_TO_ENGINE]
    assert not offenders, offenders


def _functions():
    for module, (path, tree) in modules().items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield f"{module}.{node.name}", node.end_lineno - node.lineno + 1


def test_function_and_module_sizes():
    functions = dict(_functions())
    too_long = {name: n for name, n in functions.items() if n > MAX_FUNCTION_LINES}
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines: {too_long}"
    long = {name: n for name, n in functions.items() if n > LONG_FUNCTION_LINES}
    assert len(long) <= MAX_LONG_FUNCTIONS, f"more than {MAX_LONG_FUNCTIONS} functions over 50 lines: {long}"
    big = {m: len(p.read_text().splitlines()) for m, (p, _) in modules().items()}
    assert not {m: n for m, n in big.items() if n > MAX_MODULE_LINES}, {m: n for m, n in big.items() if n > 450}


def test_no_positional_cost_construction():
    positional = [f"{module}:{node.lineno}" for module, (_, tree) in modules().items() for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Cost"
                  and node.args]
    assert not positional, f"Cost(...) with positional arguments at {positional}"


def test_every_package_says_what_it_offers():
    missing = [p for p in LAYERS if not (PACKAGE / p / "__init__.py").is_file()]
    assert not missing and (PACKAGE / "__init__.py").is_file(), f"packages without __init__.py: {missing}"
    silent = [p for p in LAYERS if not ast.get_docstring(modules()[f"roofline.{p}"][1])]
    assert not silent, f"packages whose __init__.py has no docstring: {silent}"
