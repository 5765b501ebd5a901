"""Stale Snakemake locks: a run killed by SIGKILL, SIGHUP (a closed terminal) or a power cut leaves
.snakemake/locks/ behind, and the next run stops with LockException until `snakemake --unlock`.

Each run of this workflow records itself (host, pid, start time) in .snakemake/roofline-runs/ once it holds its lock
and removes the record when it ends. Before Snakemake checks the lock, `clear_stale_locks` removes the lock files
only when no run can still hold them: no live Snakemake process works in this directory on this host, no record
names a live process of this host, and no unfinished record names another host (a run there cannot be checked
from here, so its lock is respected). Without /proc (not Linux) nothing is removed.
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from . import procs

LOCKS = Path(".snakemake") / "locks"
RUNS = Path(".snakemake") / "roofline-runs"


def _record_path(workdir: Path, pid: int) -> Path:
    return Path(workdir) / RUNS / f"{socket.gethostname()}.{pid}.json"


def record_run(workdir: Path, pid: int | None = None) -> Path:
    """Note that run `pid` (default: this process) holds the lock of `workdir`."""
    pid = pid or os.getpid()
    path = _record_path(workdir, pid)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "start_time": procs.start_time(pid)}))
    return path


def forget_run(workdir: Path, pid: int | None = None) -> None:
    """Remove the record of run `pid` (default: this process): it ended and released its lock."""
    _record_path(workdir, pid or os.getpid()).unlink(missing_ok=True)


def _records(workdir: Path) -> list[dict]:
    records = []
    for path in sorted((Path(workdir) / RUNS).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            record = None  # half-written by a run killed while writing it
        if isinstance(record, dict) and isinstance(record.get("host"), str) and isinstance(record.get("pid"), int):
            records.append({**record, "path": path})
    return records


def _alive(record: dict) -> bool:
    return procs.start_time(record["pid"]) == record.get("start_time") is not None


def clear_stale_locks(workdir: Path, me: int | None = None) -> str | None:
    """Remove the lock files of `workdir` if every run that could hold them is dead; return a line saying what was
    removed, or None when there was nothing to remove or a run may still be alive (then the lock stands and
    Snakemake refuses to start, as it should). `me` (default: this process) is not counted as a live run."""
    workdir = Path(workdir)
    locks = sorted((workdir / LOCKS).glob("*.lock"))
    if not procs.available():
        return None
    host = socket.gethostname()
    records = _records(workdir)
    for record in records:  # runs of this host that died: their records go, whatever the locks
        if record.get("host") == host and not _alive(record):
            record["path"].unlink(missing_ok=True)
    if not locks:
        return None
    me = me or os.getpid()
    if procs.snakemake_runs_in(workdir, exclude=me):
        return None
    if any(record.get("host") != host or (record.get("pid") != me and _alive(record)) for record in records):
        return None
    for lock in locks:
        lock.unlink(missing_ok=True)
    dead = [str(record.get("pid")) for record in records if record.get("host") == host]
    by = f" of run {', '.join(dead)}" if dead else ""
    return (f"Removed the stale lock{by} in {workdir / LOCKS} (no Snakemake process works in this directory any "
            "more: the run was killed or the machine stopped)")
