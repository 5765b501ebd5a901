"""Benchmark the Snakemake pipeline on the default grid (config.yaml), in a temporary copy of the workflow.

Measures, each `--repeat` times from a clean state (min and median wall time):
  compute    the (model, gpu, stage) jobs and the engine stamp: `snakemake --until analyze`
  floor      the same DAG (1 + N jobs, 4 outputs and a log each) with jobs that only `touch` their outputs:
             Snakemake's own cost per job, the target the compute jobs are held to (within 2x)
  aggregates the concatenated tables (per model and grid-wide), CSV copies and specs.json (after compute)
  figures    one matplotlib job per model (after aggregates)
  reports    HTML + PDF per model, summary, index (after figures)
  no-op      a second `snakemake` run with nothing to do
and which jobs a dry run plans after editing one GPU's bandwidth, then the wall time of that rebuild; the same
after renaming one model (its display name), which must redraw and re-render that model only.

    python benchmarks/bench_pipeline.py [--cores 4] [--repeat 3] [--skip-reports]
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW_FILES = ("Snakefile", "workflow", "profiles", "templates", "config.yaml")
GENERATED = ("results", "reports", "logs", ".snakemake")
RESULT_TARGETS = (*(f"results/{table}.parquet" for table in ("ops", "totals", "treatments", "sweeps")),
                  "results/ops.csv", "results/totals.csv", "results/specs.json")

FLOOR_SNAKEFILE = '''
M, G, S = {models!r}, {gpus!r}, {stages!r}
T = ["ops", "totals", "treatments", "sweeps"]

wildcard_constraints:
    t="|".join(T), m="|".join(M), g="|".join(G), s="|".join(S)

rule all:
    input: expand("results/{{t}}/{{m}}/{{g}}/{{s}}.parquet", t=T, m=M, g=G, s=S)

rule engine:
    output: "results/engine.json"
    log: "logs/engine.log"
    shell: "touch {{output}} {{log}}"

rule analyze:
    input: "results/engine.json"
    output: [f"results/{{t}}/{{{{m}}}}/{{{{g}}}}/{{{{s}}}}.parquet" for t in T]
    log: "logs/analyze/{{m}}/{{g}}/{{s}}.log"
    shell: "touch {{output}} {{log}}"
'''


def copy_workflow(destination: Path) -> Path:
    destination.mkdir(parents=True)
    for name in WORKFLOW_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, destination / name)
    return destination


def clean(directory: Path) -> None:
    for name in GENERATED:
        shutil.rmtree(directory / name, ignore_errors=True)


def snakemake(directory: Path, *args: str) -> tuple[float, str]:
    """Run Snakemake in `directory`; return (wall seconds, output). Fails loudly."""
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=directory, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"snakemake {' '.join(args)} failed in {directory}:\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
    return seconds, run.stdout + run.stderr


def planned_jobs(output: str) -> list[tuple[str, str]]:
    """(rule, wildcards) of each job a dry run prints."""
    jobs: list[tuple[str, str]] = []
    for line in output.splitlines():
        line = line.strip()
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line):
            jobs.append((match.group(1), ""))
        elif line.startswith("wildcards: ") and jobs:
            jobs[-1] = (jobs[-1][0], line.removeprefix("wildcards: "))
    return jobs


def summary(times: list[float]) -> str:
    return f"{min(times):6.2f} {statistics.median(times):6.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", default="4", help="as users type it (default 4; the machine may have fewer)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-reports", action="store_true", help="time compute, aggregates and no-op only")
    args = parser.parse_args()
    cores = ["--cores", args.cores, "--quiet", "all"]

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    models, gpus, stages = list(config["models"]), list(config["gpus"]), list(config.get("stages", []))
    n_jobs = len(models) * len(gpus) * len(stages)
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        wf = copy_workflow(Path(tmp) / "wf")
        floor = Path(tmp) / "floor"
        floor.mkdir()
        (floor / "Snakefile").write_text(FLOOR_SNAKEFILE.format(models=models, gpus=gpus, stages=stages))

        targets = RESULT_TARGETS if args.skip_reports else ()  # () = rule all
        compute, floor_times, aggregates, figures, reports, noop = [], [], [], [], [], []
        for _ in range(args.repeat):
            clean(floor)
            floor_times.append(snakemake(floor, *cores)[0])
            clean(wf)
            compute.append(snakemake(wf, "--until", "analyze", *cores)[0])
            aggregates.append(snakemake(wf, *RESULT_TARGETS, *cores)[0])
            if not args.skip_reports:
                figures.append(snakemake(wf, "--until", "figures", *cores)[0])
                reports.append(snakemake(wf, *cores)[0])
            noop.append(snakemake(wf, *targets, *cores)[0])
        clean(wf)
        full = snakemake(wf, *targets, *cores)[0]
        ratio = min(compute) / min(floor_times)
        rows += [
            (f"compute: {n_jobs} (model, gpu, stage) jobs + engine stamp", summary(compute), f"{ratio:.2f}x floor"),
            (f"floor: the same {n_jobs + 1} jobs, touch only", summary(floor_times), ""),
            (f"aggregates, CSV, specs.json ({4 * len(models) + 7} jobs)", summary(aggregates), ""),
        ]
        if not args.skip_reports:
            rows += [(f"figures ({len(models)} jobs)", summary(figures), ""),
                     (f"reports ({len(models)} model + summary + index)", summary(reports), "")]
        rows += [("no-op rerun (nothing to be done)", summary(noop), "start-up included in every row"),
                 ("full build in one invocation" + (" (results only)" if args.skip_reports else ""),
                  f"{full:6.2f}      -", "")]

        edited = dict(config, gpus={**config["gpus"], gpus[2]: {"bandwidth_gbps": 3000}})
        (wf / "config.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
        _, dry = snakemake(wf, "--dry-run", *targets)
        jobs = planned_jobs(dry)
        rerun_gpus = Counter(re.search(r"gpu=([^,]+)", w).group(1) for rule, w in jobs if rule == "analyze")
        seconds, _ = snakemake(wf, *targets, *cores)
        rows.append((f"rebuild after editing gpus.{gpus[2]}.bandwidth_gbps", f"{seconds:6.2f}      -", ""))

        model = models[2]
        renamed = dict(edited, models={**edited["models"], model: {"name": f"{model} (renamed)"}})
        (wf / "config.yaml").write_text(yaml.safe_dump(renamed, sort_keys=False))
        _, dry = snakemake(wf, "--dry-run", *targets)
        model_jobs = planned_jobs(dry)
        rerun_models = Counter(m.group(1) for _, w in model_jobs if (m := re.search(r"model=([^,]+)", w)))
        seconds, _ = snakemake(wf, *targets, *cores)
        rows.append((f"rebuild after editing models.{model}.name", f"{seconds:6.2f}      -", ""))

    print(f"\nPipeline benchmark: default grid {len(models)} models x {len(gpus)} GPUs x {len(stages)} stages, "
          f"--cores {args.cores}, {args.repeat} repeats (seconds: min median)\n")
    width = max(len(r[0]) for r in rows)
    print(f"{'step'.ljust(width)}   min    med")
    for name, times, note in rows:
        print(f"{name.ljust(width)} {times}  {note}")
    counts = Counter(rule for rule, _ in jobs)
    print(f"\nJobs planned after editing gpus.{gpus[2]}: " + ", ".join(f"{rule} {n}" for rule, n in counts.items()))
    print(f"analyze jobs by gpu: {dict(rerun_gpus)} (expected only {gpus[2]}: {len(models) * len(stages)} jobs)")
    counts = Counter(rule for rule, _ in model_jobs)
    print(f"\nJobs planned after editing models.{model}.name: " + ", ".join(f"{r} {n}" for r, n in counts.items()))
    print(f"per-model jobs by model: {dict(rerun_models)} (expected only {model})")


if __name__ == "__main__":
    main()
