"""The `measurements` and `compare_with` config keys end to end: a copy of the workflow, one model on one GPU, the
measured runs' table, the list of every run, the comparison with a previous results folder, the summary that shows
both; and a bad measurements file stopping Snakemake in one line before any job."""
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml

from roofline.engine import hardware, models
from roofline.engine.columns import MEASUREMENT_COLUMNS
from roofline.engine.scenario import Scenario
from roofline.pipeline.tables import grid_tables
from workflow_copy import copy_workflow

DATA = Path(__file__).resolve().parent / "data" / "measurements"
CONFIG = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {"price_per_hour": 2.5}}, "stages": ["decode"],
          "scenario": {"weight_dtype": "fp16"},
          "measurements": ["runs/example_runs.csv", "runs/example_vllm_bench.json"], "compare_with": "previous"}


def snakemake(repo: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory",
                           str(work), "--configfile", "config.yaml", "--replace-workflow-config", "--cores", "2",
                           *args], cwd=work, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("measured-e2e")
    repo, work = copy_workflow(root / "repo"), root / "work"
    (work / "runs").mkdir(parents=True)
    for name in ("example_runs.csv", "example_vllm_bench.json"):
        shutil.copy(DATA / name, work / "runs" / name)
    # the previous run: the same grid on an H100 with 10% less bandwidth (3015 GB/s), written as a results folder
    h100 = hardware.get_accelerator("h100-sxm")
    old = grid_tables([models.get_model("llama-2-7b")], [replace(h100, bandwidth_bytes_per_s=3015e9)], ["decode"],
                      Scenario(weight_dtype="fp16"))["totals"]
    (work / "previous").mkdir()
    old.to_parquet(work / "previous" / "totals.parquet")
    (work / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    targets = ["results/measurements/llama-2-7b.parquet", "results/measurements/rows.csv", "results/compare.csv",
               "reports/summary.html"]
    run = snakemake(repo, work, *targets)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return repo, work, run.stdout + run.stderr


def test_measured_runs_are_predicted_and_the_others_listed(built):
    _, work, log = built
    table = pd.read_parquet(work / "results" / "measurements" / "llama-2-7b.parquet")
    assert tuple(table.columns) == MEASUREMENT_COLUMNS
    # the CSV's two H100 rows, its A6000 and B200 rows (gpus this config lacks) and the vLLM result
    assert list(table["status"]) == ["predicted", "predicted", "gpu 'rtx-a6000' is not in the config",
                                     "gpu 'b200' is not in the config", "predicted"]
    assert table.loc[0, "tpot_measured_s"] == 0.00902 and table.loc[4, "concurrency"] == 32
    assert (table.loc[[0, 1, 4], "tpot_expected_s"] >= table.loc[[0, 1, 4], "tpot_s"]).all()
    rows = pd.read_csv(work / "results" / "measurements" / "rows.csv")
    assert len(rows) == 6 and rows.loc[3, "status"] == "model 'mistral-7b' is not in the config"
    assert "measurements: runs/example_runs.csv line 5 is not predicted: model 'mistral-7b' is not in the" in log


def test_comparison_and_summary(built):
    _, work, _ = built
    moved = pd.read_csv(work / "results" / "compare.csv")
    tpot = moved[moved["column"] == "tpot_s"].iloc[0]
    # memory-bound decode: 3350 / 3015 GB/s = 1/0.9 -> the step 10% shorter now: 0.9 - 1 = -10%
    assert tpot["what"] == "moved" and tpot["change"] == pytest.approx(0.9 - 1, abs=0.01)
    html = (work / "reports" / "summary.html").read_text()
    assert "What moved since the previous run" in html and "Measured runs not predicted" in html
    assert "mistral-7b" in html and str(work) not in html  # the folder as config.yaml names it


def test_bad_measurements_stop_before_any_job(built, tmp_path):
    repo, _, _ = built
    work = tmp_path / "bad"
    work.mkdir()
    (work / "runs.csv").write_text("model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,tokens_per_s\n"
                                   "llama-2-7b,h100-sxm,1,1024,256,8,30,eleven,700\n")
    (work / "config.yaml").write_text(yaml.safe_dump({**CONFIG, "measurements": "runs.csv", "compare_with": None}))
    run = snakemake(repo, work, "--dry-run")
    lines = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith("Invalid configuration: ")]
    assert run.returncode != 0 and lines == [
        "Invalid configuration: measurements: runs.csv line 2, column 'tpot_ms': 'eleven' is not a number; expected a "
        "positive number (or an empty cell: not measured)"]
    assert not (work / "results").exists()
