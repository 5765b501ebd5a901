"""Wall time of rebuilding the default grid from scratch (every table, figure and report; not the install).

Copies the workflow (Snakefile, workflow/, profiles/, templates/, config.yaml) of a checkout into a temporary
folder, so edits made meanwhile do not leak into the run, then times `snakemake --cores N` there, `--repeat`
times, each from an empty results/ and reports/. Prints the times, the load average before and after (the machine
may be shared: a load above the core count means the numbers are pessimistic) and the page count of every PDF.

    python benchmarks/bench_rebuild.py [--cores 2] [--repeat 1] [--source CHECKOUT] [--target all]
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "workflow", "profiles", "templates", "config.yaml", "pyproject.toml")
GENERATED = ("results", "reports", "logs", ".snakemake")


def copy_workflow(source: Path, target: Path) -> None:
    for name in WORKFLOW_FILES:
        path = source / name
        if path.is_dir():
            shutil.copytree(path, target / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif path.exists():
            shutil.copy2(path, target / name)


def cpu_seconds() -> float:
    """User + system CPU time of every finished child process so far (Snakemake and its jobs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rebuild(workdir: Path, cores: int, target: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one build from scratch."""
    for name in GENERATED:
        shutil.rmtree(workdir / name, ignore_errors=True)
    snakemake = Path(sys.executable).with_name("snakemake")
    start, cpu = time.perf_counter(), cpu_seconds()
    subprocess.run([str(snakemake), "--cores", str(cores), "--quiet", target], cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--source", type=Path, default=ROOT, help="checkout to copy (default: this one)")
    parser.add_argument("--target", default="all", help="Snakemake target (default: all)")
    args = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        copy_workflow(args.source.resolve(), workdir)
        load_before = os.getloadavg()
        for _ in range(args.repeat):
            times.append(rebuild(workdir, args.cores, args.target))
        load_after = os.getloadavg()
        pdfs = sorted((workdir / "reports").glob("*.pdf"))
        pages = {}
        if shutil.which("pdfinfo"):
            for pdf in pdfs:
                info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
                pages[pdf.name] = next((line.split()[-1] for line in info.splitlines() if line.startswith("Pages")),
                                       "?")
    print(f"rebuild of {args.source} (target {args.target}) with --cores {args.cores} on a machine with "
          f"{os.cpu_count()} CPUs")
    print("wall time [s]: " + ", ".join(f"{t:.1f}" for t, _ in times) + f"   (min {min(t for t, _ in times):.1f})")
    print("CPU time, user + system [s]: " + ", ".join(f"{c:.1f}" for _, c in times)
          + "   (less sensitive to other load than the wall time)")
    print("load average 1/5/15 min: before " + "/".join(f"{x:.1f}" for x in load_before)
          + ", after " + "/".join(f"{x:.1f}" for x in load_after))
    if pages:
        print("PDF pages: " + ", ".join(f"{name} {n}" for name, n in pages.items())
              + f"   (total {sum(int(n) for n in pages.values() if n.isdigit())})")


if __name__ == "__main__":
    main()
