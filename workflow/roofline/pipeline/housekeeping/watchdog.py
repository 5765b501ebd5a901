"""Stop the jobs of a Snakemake process that dies without stopping them (SIGKILL, a power cut of the terminal's
session): figure and report jobs run as child processes, and an orphan would keep writing outputs that the next run
rewrites at the same time.

`start(pid)` launches `python -m roofline.pipeline.housekeeping.watchdog PID` in its own session (a closed terminal
does not stop it). It polls every POLL_S seconds; while Snakemake lives it remembers its descendants (pid and start
time); once Snakemake is gone it sends SIGTERM to those still running (and their own children), and to job scripts
started from this directory's .snakemake/scripts/ since the last poll (unless another Snakemake works here), SIGKILL
to any left after GRACE_S, and exits. A Snakemake that ends normally has no job left, so the watchdog just exits.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import procs

POLL_S = 1.0
GRACE_S = 3.0


def start(pid: int | None = None) -> subprocess.Popen | None:
    """Launch the watchdog of Snakemake process `pid` (default: this process), in this working directory (the
    run's); None where /proc is missing."""
    if not procs.available():
        return None
    package_root = str(Path(__file__).resolve().parents[2])  # the directory holding the roofline package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", "roofline.pipeline.housekeeping.watchdog", str(pid or os.getpid())],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True, env=env)


def _signal(jobs: dict[int, int], signum: int) -> dict[int, int]:
    """Send `signum` to each job still alive as the same process; return those."""
    alive = {}
    for pid, started in jobs.items():
        if procs.start_time(pid) == started:
            try:
                os.kill(pid, signum)
                alive[pid] = started
            except OSError:
                pass
    return alive


def stop(jobs: dict[int, int]) -> None:
    """SIGTERM the jobs {pid: start time} and their descendants, then SIGKILL what is left after GRACE_S."""
    for pid in list(jobs):
        if procs.start_time(pid) == jobs[pid]:
            jobs = {**jobs, **procs.descendants(pid)}
    jobs.pop(os.getpid(), None)
    alive = _signal(jobs, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_S
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = {pid: started for pid, started in alive.items() if procs.start_time(pid) == started}
    _signal(alive, signal.SIGKILL)


def job_scripts(workdir: Path) -> dict[int, int]:
    """{pid: start time} of the job scripts Snakemake runs from `workdir` (python .snakemake/scripts/tmpXXXX.py)."""
    scripts = str(Path(workdir).resolve() / ".snakemake" / "scripts") + os.sep
    return {pid: started for pid in procs.parents()
            if any(arg.startswith(scripts) for arg in procs.command_line(pid))
            and (started := procs.start_time(pid)) is not None}


def watch(pid: int, workdir: Path) -> None:
    """Poll Snakemake process `pid` (working in `workdir`) until it is gone, then stop the jobs it left (see the
    module docstring)."""
    started = procs.start_time(pid)
    jobs: dict[int, int] = {}
    while started is not None and procs.start_time(pid) == started:
        jobs = procs.descendants(pid)
        time.sleep(POLL_S)
    if not procs.snakemake_runs_in(workdir):  # a job started after the last poll is no descendant any more
        jobs = {**jobs, **job_scripts(workdir)}
    jobs.pop(os.getpid(), None)
    stop(jobs)


if __name__ == "__main__":
    watch(int(sys.argv[1]), Path.cwd())
