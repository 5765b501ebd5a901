"""Where the `aiconfigurator-core` package keeps its measured kernel tables, and which version of each one a
serving framework uses (read from the package's data files; none of its code is imported or run).

Layout of the package's data: systems/data/{system}/{family}/{framework}/{version}/{table}.parquet with a
collection_meta.yaml beside each table (runtime framework and version, provenance, status), and
systems/query_versions.yaml naming the current version per (system, framework). `latency` columns hold
milliseconds, columns ending in `_us` microseconds (LATENCY_UNITS).
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from functools import lru_cache
from pathlib import Path

from ..engine.errors import RooflineInputError, unknown
from ..engine.hardware import FRAMEWORKS

PACKAGE = "aiconfigurator-core"
#: the one line that installs it: the pin of pyproject.toml's `aic` extra (llm-roofline is not on PyPI, so
#: `pip install 'llm-roofline[aic]'` would not resolve outside a checkout)
INSTALL = "pip install aiconfigurator-core==0.12.0"
#: catalog key -> the package's system name (devices it measured; a100_pcie, h100_pcie, l4 and a30 hold no data)
SYSTEMS = {
    "h100-sxm": "h100_sxm", "h200-sxm": "h200_sxm", "b200": "b200_sxm", "b300": "b300_sxm",
    "gb200-gpu": "gb200", "gb300-gpu": "gb300", "l40s": "l40s", "rtx-pro-6000": "rtx_pro_6000_server",
    "a100-sxm-80gb": "a100_sxm",
}
#: seconds per unit of a time column, by name: `latency` is in milliseconds, `*_us` in microseconds
LATENCY_UNITS = {"latency": 1e-3, "_us": 1e-6, "_ms": 1e-3}


def seconds_per_unit(column: str) -> float:
    """The unit of a time column of the package's tables (LATENCY_UNITS), in seconds."""
    for suffix, unit in LATENCY_UNITS.items():
        if column == suffix or column.endswith(suffix):
            return unit
    raise ValueError(f"{column}: not a time column of {PACKAGE}")


@lru_cache(maxsize=1)
def package_root() -> Path:
    """The installed package's folder (located without importing it: its import loads a compiled engine)."""
    spec = importlib.util.find_spec("aiconfigurator_core")
    if spec is None or not spec.submodule_search_locations:
        raise RooflineInputError(f"--from aiconfigurator: the package {PACKAGE} is not installed; install it: "
                                 f"{INSTALL}")
    return Path(next(iter(spec.submodule_search_locations)))


def package_version() -> str:
    return importlib.metadata.version(PACKAGE)


def resolve_system(text: str) -> tuple[str, str]:
    """(catalog key, package system) of `text`, given as either name; an unknown one lists the valid ones."""
    by_system = {system: key for key, system in SYSTEMS.items()}
    if text in SYSTEMS:
        return text, SYSTEMS[text]
    if text in by_system:
        return by_system[text], text
    raise unknown("--system", text, SYSTEMS)


def check_framework(framework: str) -> str:
    if framework not in FRAMEWORKS:
        raise unknown("--framework", framework, FRAMEWORKS)
    return framework


def _version_key(text: str) -> tuple:
    """Sortable form of '1.3.0rc20', '0.5.6.post2', '2.27': numbers, then a pre-release below the release."""
    parts = re.findall(r"\d+|[a-z]+", text.lower())
    key = []
    for part in parts:
        if part.isdigit():
            key.append((1, int(part)))
        else:  # rc/dev before the release, post after it
            key.append((2 if part == "post" else 0, part))
    return tuple(key)


@lru_cache(maxsize=64)
def current_version(system: str, framework: str) -> str | None:
    """The version the package queries by default for (system, framework) (query_versions.yaml: `current`)."""
    import yaml

    data = yaml.safe_load((package_root() / "systems" / "query_versions.yaml").read_text())
    slot = (data.get("overrides") or {}).get(system, {}).get(framework) or data["defaults"].get(framework) or {}
    return slot.get("current")


def versions(system: str, family: str, framework: str) -> list[str]:
    """Versions of one op family measured for (system, framework), oldest first."""
    folder = package_root() / "systems" / "data" / system / family / framework
    return sorted((p.name for p in folder.iterdir() if p.is_dir()), key=_version_key) if folder.is_dir() else []


def framework_versions(system: str, framework: str) -> list[str]:
    """Every version of `framework` with any table on `system`."""
    found = {v for family in ("gemm", "attention", "moe", "mla", "comm", "quantize")
             for v in versions(system, family, framework)}
    return sorted(found, key=_version_key)


def pick_version(system: str, framework: str, requested: str | None) -> str:
    """The framework version to import: `requested`, else the package's current one; an unknown one lists those
    measured."""
    have = framework_versions(system, framework)
    if not have:
        raise RooflineInputError(f"--framework: {PACKAGE} holds no {framework} tables for {system}; try one of: "
                                 + ", ".join(f for f in FRAMEWORKS if framework_versions(system, f)))
    version = requested or current_version(system, framework) or have[-1]
    if version not in have:
        raise unknown("--version", version, have)
    return version


def table_dir(system: str, family: str, framework: str, version: str) -> Path | None:
    """The folder of one op family at `version`, or, where that version did not re-measure the family, at the
    newest older one (never a newer one); None when the framework has no such family on the system."""
    older = [v for v in versions(system, family, framework) if _version_key(v) <= _version_key(version)]
    return package_root() / "systems" / "data" / system / family / framework / older[-1] if older else None


def newest_dir(system: str, family: str, framework: str) -> Path | None:
    """The folder of the newest version measured (NCCL collectives carry NCCL's own version)."""
    have = versions(system, family, framework)
    return package_root() / "systems" / "data" / system / family / framework / have[-1] if have else None


@lru_cache(maxsize=256)
def collection_meta(folder: Path) -> dict:
    """The collection_meta.yaml of a table folder ({} where absent)."""
    import yaml

    path = folder / "collection_meta.yaml"
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def read_table(folder: Path, name: str):
    """One parquet table of a folder as a DataFrame with a `seconds` column (its time column converted), or None.

    Tables whose collection_meta.yaml marks them other than complete are read too (their rows are measurements),
    and their provenance says so."""
    import pandas as pd

    path = folder / f"{name}.parquet"
    if not path.is_file():
        return None
    frame = pd.read_parquet(path)
    column = "latency" if "latency" in frame else next(c for c in frame if c.endswith(("_us", "_ms")))
    frame["seconds"] = frame[column].astype(float) * seconds_per_unit(column)
    status = ((collection_meta(folder).get("tables") or {}).get(name) or {}).get("status", "complete")
    frame["status"] = status
    return frame


@lru_cache(maxsize=4096)
def provenance(folder: Path, name: str, kernel_source: str) -> str:
    """`aiconfigurator-core 0.12.0: h200_sxm/gemm/trtllm/1.3.0rc20/gemm_perf, kernel torch_flow` (and the runtime's
    framework and version where collection_meta.yaml names others than the folder, and a status not complete)."""
    meta = collection_meta(folder)
    runtime = meta.get("runtime") or {}
    system, family, framework, version = folder.parts[-4:]
    status = ((meta.get("tables") or {}).get(name) or {}).get("status", "complete")
    ran = (str(runtime.get("framework", framework)).lower(), str(runtime.get("version", version)))
    return (f"{PACKAGE} {package_version()}: {system}/{family}/{framework}/{version}/{name}, kernel {kernel_source}"
            + ("" if ran == (framework, version) else f", runtime {ran[0]} {ran[1]}")
            + ("" if status == "complete" else f", status {status}"))
