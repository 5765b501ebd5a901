"""The cluster path, run for real: `.ci/slurm-local up` starts a single-node SLURM cluster (munge, MariaDB + slurmdbd,
slurmctld, slurmd), profiles/slurm-local builds the tiny grid of .test/config.yaml through sbatch in a copy of the
workflow, and every table in results/ equals a local build's row for row; then `down` leaves nothing running and a
second `up` works.

Marked `slurm`. Skipped, with the reason, where the cluster cannot start: not root, the executor plugin (the `slurm`
extra) or Debian's packages missing, a daemon that does not start. .ci/run installs both. Takes 2-4 minutes: one
cluster build, one local build, two `up`s. A cluster that `up` started before the tests is stopped at the end.
The copies' config.yaml is the tiny grid, so that `--configfile .test/config.yaml` builds only that grid (merged
with the checkout's config.yaml it would be the full one).
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from workflow_copy import copy_workflow

ROOT = Path(__file__).resolve().parents[1]
SLURM_LOCAL = ROOT / ".ci" / "slurm-local"
TEST_CONFIG = yaml.safe_load((ROOT / ".test" / "config.yaml").read_text())
ANALYZE_JOBS = len(TEST_CONFIG["models"]) * len(TEST_CONFIG["gpus"]) * len(TEST_CONFIG["stages"])
#: what .ci/slurm-local sets up (the profile names them too)
ACCOUNT, PARTITION = "roofline", "local"
#: settings of profiles/slurm-local that describe the local cluster, not the workflow (marked "local:" there)
LOCAL_SETTINGS = {"jobs", "latency-wait", "slurm-init-seconds-before-status-checks", "seconds-between-status-checks",
                  "slurm-keep-successful-logs", "config"}
LOCAL_RESOURCES = {"slurm_account", "slurm_partition", "mem_mb"}


def slurm_local(action: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SLURM_LOCAL), action], capture_output=True, text=True, timeout=300)


def last_line(text: str) -> str:
    return ([line for line in text.splitlines() if line.strip()] or [""])[-1]


def why_no_cluster() -> str | None:
    """Why this machine cannot run the cluster, before trying; None if it may."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "needs root: .ci/slurm-local starts munge, MariaDB and SLURM daemons"
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return "snakemake-executor-plugin-slurm is not installed: pip install -e '.[slurm]'"
    if shutil.which("bash") is None:
        return "no bash"
    return None


def our_processes() -> str:
    """`pgrep -a` lines of every SLURM and munge process, and of the MariaDB server of .ci/slurm-local."""
    found = [subprocess.run(["pgrep", "-a", *pattern], capture_output=True, text=True).stdout
             for pattern in (["slurm"], ["munge"], ["-f", "mariadbd .*/var/lib/slurm-local/"])]
    return "".join(found)


def sacct(*args: str) -> list[list[str]]:
    run = subprocess.run(["sacct", "--noheader", "--parsable2", *args], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return [line.split("|") for line in run.stdout.splitlines() if line]


def workflow_with_tiny_grid(target: Path) -> Path:
    """A copy of the workflow whose config.yaml, like .test/config.yaml, is the tiny grid."""
    copy_workflow(target)
    (target / ".test").mkdir()
    for name in (".test/config.yaml", "config.yaml"):
        shutil.copy(ROOT / ".test" / "config.yaml", target / name)
    return target


def start_snakemake(work: Path, *args: str) -> subprocess.Popen:
    """Snakemake in `work`, its output into `work`/snakemake.out."""
    command = [sys.executable, "-m", "snakemake", "--configfile", ".test/config.yaml", *args]
    with open(work / "snakemake.out", "w") as out:
        return subprocess.Popen(command, cwd=work, stdout=out, stderr=subprocess.STDOUT, text=True)


def finished(run: subprocess.Popen, work: Path) -> str:
    """The output of Snakemake run `run` in `work`, which must exit 0."""
    returncode = run.wait(timeout=1200)
    output = (work / "snakemake.out").read_text()
    assert returncode == 0, output[-8000:]
    return output


@pytest.fixture(scope="module")
def cluster():
    reason = why_no_cluster()
    if reason:
        pytest.skip(reason)
    up = slurm_local("up")
    if up.returncode != 0:
        slurm_local("down")
        pytest.skip(f"the SLURM cluster did not start: {last_line(up.stderr)}")
    yield up.stdout
    slurm_local("down")


@pytest.fixture(scope="module")
def builds(cluster, tmp_path_factory):
    """The tiny grid built through SLURM with profiles/slurm-local, and locally with --cores 2 (the default
    profile), each in its own copy of the workflow."""
    root = tmp_path_factory.mktemp("slurm")
    on_cluster, local = workflow_with_tiny_grid(root / "cluster"), workflow_with_tiny_grid(root / "local")
    # at the same time: the cluster build mostly waits (sbatch, status polls)
    run = start_snakemake(on_cluster, "--workflow-profile", "profiles/slurm-local")
    reference = start_snakemake(local, "--cores", "2")
    try:
        log = finished(run, on_cluster)
        finished(reference, local)
    finally:
        for process in (run, reference):
            if process.poll() is None:
                process.kill()
                process.wait()
    return SimpleNamespace(cluster=on_cluster, local=local, log=log)


@pytest.mark.slurm
def test_the_analyze_jobs_ran_as_slurm_jobs(builds):
    job_ids = re.findall(r"has been submitted with SLURM jobid (\d+)", builds.log)
    assert job_ids, builds.log[-4000:]
    assert "localrule analyze" not in builds.log
    steps = []
    for job_id in job_ids:
        (job,) = sacct("-X", "-j", job_id, "-o", "JobID,State,ExitCode,Account,Partition")
        assert job == [job_id, "COMPLETED", "0:0", ACCOUNT, PARTITION]
        # each grouped analyze job is one step (srun) of the cluster job
        steps += [row for row in sacct("-j", job_id, "-o", "JobID,State") if re.fullmatch(r"\d+\.\d+", row[0])]
    assert len(steps) == ANALYZE_JOBS and {state for _, state in steps} == {"COMPLETED"}, steps


@pytest.mark.slurm
def test_every_result_equals_the_local_builds(builds):
    def files(work):
        return sorted(str(p.relative_to(work)) for p in (work / "results").rglob("*") if p.is_file())

    assert files(builds.cluster) == files(builds.local)
    assert any(name.endswith(".parquet") for name in files(builds.local))
    for name in files(builds.local):
        on_cluster, local = builds.cluster / name, builds.local / name
        if name.endswith(".parquet"):
            pd.testing.assert_frame_equal(pd.read_parquet(on_cluster), pd.read_parquet(local), check_exact=True)
        else:
            assert on_cluster.read_bytes() == local.read_bytes(), name


@pytest.mark.slurm
def test_the_reports_render(builds):
    for model in TEST_CONFIG["models"]:
        for name in (f"{model}.html", f"{model}.pdf", "summary.html", "summary.pdf", "index.html"):
            path = builds.cluster / "reports" / name
            assert path.is_file() and path.stat().st_size > 0, name
        assert (builds.cluster / "reports" / f"{model}.pdf").read_bytes().startswith(b"%PDF")
        assert sorted(p.name for p in (builds.cluster / "reports" / "figures" / model).iterdir()) == sorted(
            p.name for p in (builds.local / "reports" / "figures" / model).iterdir())


@pytest.mark.slurm
def test_down_stops_everything_and_up_works_again(cluster, builds):
    """Runs last: the builds are done with the cluster."""
    down = slurm_local("down")
    assert down.returncode == 0, down.stderr
    assert our_processes() == ""
    again = slurm_local("up")
    assert again.returncode == 0 and "slurm-local: up (" in again.stdout, again.stdout + again.stderr
    assert "already up" in slurm_local("up").stdout
    assert slurm_local("down").returncode == 0
    assert our_processes() == ""


def test_slurm_local_answers_a_wrong_call_with_one_line():
    run = subprocess.run(["bash", str(SLURM_LOCAL), "start"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 1 and run.stderr == "slurm-local: usage: bash .ci/slurm-local up|status|down\n"


def test_the_local_profile_is_the_cluster_profile_pointed_at_the_local_cluster():
    cluster, local = (yaml.safe_load((ROOT / "profiles" / name / "config.yaml").read_text())
                      for name in ("slurm", "slurm-local"))
    assert {k: v for k, v in local.items() if k not in LOCAL_SETTINGS | {"default-resources", "resources"}} == {
        k: v for k, v in cluster.items() if k not in LOCAL_SETTINGS | {"default-resources", "resources"}}
    assert {k: v for k, v in local["default-resources"].items() if k not in LOCAL_RESOURCES} == {
        k: v for k, v in cluster["default-resources"].items() if k not in LOCAL_RESOURCES}
    assert local["config"] == ["local_rules=[figures, report, summary, index]"]
