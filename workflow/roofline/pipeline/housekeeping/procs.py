"""Live processes as Linux's /proc shows them: start times (to tell a process from a later one that reuses its
pid), parents, command lines and working directories. Elsewhere (no /proc) every function answers "unknown" (None or
empty), and callers then leave things as they are."""
from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")


def available() -> bool:
    return (PROC / "self" / "stat").exists()


def _stat_fields(pid: int) -> list[str] | None:
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # the command name, in parentheses, may hold spaces


def start_time(pid: int) -> int | None:
    """Clock ticks after boot at which `pid` started, or None if no such process (a zombie counts as gone)."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def parents() -> dict[int, int]:
    """pid -> parent pid of every live process."""
    result = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (fields := _stat_fields(int(entry.name))) and fields[0] not in ("Z", "X"):
            result[int(entry.name)] = int(fields[1])
    return result


def descendants(pid: int) -> dict[int, int]:
    """{pid: start time} of every live descendant of `pid` (children, their children, ...)."""
    children: dict[int, list[int]] = {}
    for child, parent in parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = {}, list(children.get(pid, []))
    while todo:
        child = todo.pop()
        started = start_time(child)
        if started is not None and child not in found:
            found[child] = started
            todo += children.get(child, [])
    return found


def command_line(pid: int) -> list[str]:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def working_directory(pid: int) -> Path | None:
    try:
        return Path(os.readlink(PROC / str(pid) / "cwd"))
    except OSError:  # gone, or another user's process
        return None


def is_snakemake(argv: list[str]) -> bool:
    """Whether a command line runs Snakemake itself (`snakemake ...`, `python .../bin/snakemake ...`, `python -m
    snakemake ...`), not a job script it started (`python .snakemake/scripts/tmpab12.figures.py`)."""
    head = argv[:6]  # the interpreter and its options come first: python3 -X dev -m snakemake
    return (any(Path(arg).name == "snakemake" for arg in head)
            or any(arg == "-m" and nxt == "snakemake" for arg, nxt in zip(head, head[1:])))


def ancestors(pid: int) -> set[int]:
    """The live processes `pid` descends from (its parent, theirs, ... up to init)."""
    up, found = parents(), set()
    while (pid := up.get(pid, 0)) > 0 and pid not in found:
        found.add(pid)
    return found


def snakemake_runs_in(workdir: Path, exclude: int | None = None) -> list[int]:
    """Pids of live Snakemake processes whose working directory is `workdir`, other than `exclude` and the processes
    it descends from (a wrapper that started it, `timeout 900 snakemake ...` or `nice snakemake ...`, names
    Snakemake on its own command line, and is this run, not another one)."""
    workdir = Path(workdir).resolve()
    skip = set() if exclude is None else {exclude} | ancestors(exclude)
    found = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        pid = int(entry.name)
        if is_snakemake(command_line(pid)) and working_directory(pid) == workdir and start_time(pid) is not None:
            found.append(pid)
    return sorted(found)
