"""Issue 13, items 1 and 9: recovery after SIGKILL / SIGHUP (a stale lock is removed, a live run's lock stands, the
jobs of a killed Snakemake stop) and outputs of keys no longer in the config moved aside.

Unit tests on fake locks and fake processes, then one end-to-end test on the tiny config (.test/config.yaml):
kill -9 a run while a figure or report job runs, rerun the same command (it must finish), then drop a model from the
config and check its outputs leave results/ and reports/.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from roofline.pipeline import config as rc
from roofline.pipeline.housekeeping import locks, procs, stale, watchdog
from workflow_copy import copy_workflow

pytestmark = pytest.mark.skipif(not procs.available(), reason="needs Linux /proc")

ROOT = Path(__file__).resolve().parents[1]


def _wait(condition, timeout=20.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def _lock(work: Path) -> Path:
    (work / locks.LOCKS).mkdir(parents=True, exist_ok=True)
    path = work / locks.LOCKS / "0.output.lock"
    path.write_text("results/ops.parquet\n")
    return path


@pytest.mark.parametrize("argv, expected", [
    (["/x/.venv/bin/python3", "/x/.venv/bin/snakemake", "--cores", "2"], True),
    (["snakemake", "-n"], True),
    (["python", "-m", "snakemake", "--target-jobs", "x"], True),
    (["python3", "-X", "dev", "-m", "snakemake"], True),
    (["/x/.venv/bin/python3", "/w/.snakemake/scripts/tmpab12.figures.py"], False),
    (["python", "-m", "pytest", "tests/test_workflow.py"], False),
    ([], False),
])
def test_snakemake_is_told_from_its_job_scripts(argv, expected):
    assert procs.is_snakemake(argv) is expected


def test_a_lock_no_live_run_holds_is_removed(tmp_path):
    lock = _lock(tmp_path)
    dead = {"host": socket.gethostname(), "pid": 2**22 + 7, "start_time": 1}  # no such process
    (tmp_path / locks.RUNS).mkdir(parents=True)
    (tmp_path / locks.RUNS / f"{socket.gethostname()}.{dead['pid']}.json").write_text(json.dumps(dead))
    message = locks.clear_stale_locks(tmp_path)
    assert message and "stale lock of run 4194311" in message
    assert not lock.exists() and not list((tmp_path / locks.RUNS).iterdir())


@pytest.fixture
def live_snakemake(tmp_path):
    """A live process named snakemake working in tmp_path/work (it only sleeps)."""
    work = tmp_path / "work"
    work.mkdir()
    fake = tmp_path / "bin" / "snakemake"
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(120)\n")
    process = subprocess.Popen([sys.executable, str(fake)], cwd=work)
    assert _wait(lambda: procs.snakemake_runs_in(work) == [process.pid])
    yield work, process
    process.kill()
    process.wait()


def test_a_wrapper_that_started_this_run_is_not_another_run(tmp_path):
    # `timeout 900 snakemake ...` names snakemake on the wrapper's command line: the run (its child) must not count
    # its own wrapper as a concurrent run, or it skips moving stale outputs aside
    work = tmp_path / "work"
    work.mkdir()
    wrapper = tmp_path / "bin" / "snakemake"
    wrapper.parent.mkdir()
    wrapper.write_text("import subprocess, sys\nchild = subprocess.Popen([sys.executable, '-c', "
                       "'import time; time.sleep(120)'])\nprint(child.pid, flush=True)\nchild.wait()\n")
    process = subprocess.Popen([sys.executable, str(wrapper)], cwd=work, stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        child = int(process.stdout.readline())
        assert _wait(lambda: procs.snakemake_runs_in(work) == [process.pid])
        assert process.pid in procs.ancestors(child)
        assert procs.snakemake_runs_in(work, exclude=child) == []
    finally:
        process.kill()
        process.wait()
        if child:
            os.kill(child, signal.SIGKILL)


def test_a_live_runs_lock_is_respected(live_snakemake):
    work, process = live_snakemake
    lock = _lock(work)
    assert locks.clear_stale_locks(work) is None and lock.exists()
    process.kill()
    process.wait()
    assert locks.clear_stale_locks(work) and not lock.exists()


def test_a_damaged_run_record_says_nothing(tmp_path):
    lock = _lock(tmp_path)
    (tmp_path / locks.RUNS).mkdir(parents=True)
    (tmp_path / locks.RUNS / "x.json").write_text('{"host": 1, "pid": "x"}')
    (tmp_path / locks.RUNS / "y.json").write_text('{"host": "h')  # cut by a kill
    assert locks.clear_stale_locks(tmp_path) and not lock.exists()


def test_a_run_recorded_on_another_host_is_respected(tmp_path):
    lock = _lock(tmp_path)
    (tmp_path / locks.RUNS).mkdir(parents=True)
    (tmp_path / locks.RUNS / "login2.123.json").write_text(json.dumps({"host": "login2", "pid": 123,
                                                                        "start_time": 5}))
    assert locks.clear_stale_locks(tmp_path) is None and lock.exists()


def test_a_recorded_live_run_is_respected_and_forgotten_when_it_ends(tmp_path):
    path = locks.record_run(tmp_path)  # this process, as a run that holds the lock
    assert json.loads(path.read_text())["pid"] == os.getpid()
    lock = _lock(tmp_path)
    assert locks.clear_stale_locks(tmp_path, me=1) is None and lock.exists()  # seen from another process
    locks.forget_run(tmp_path)
    assert not path.exists()
    assert locks.clear_stale_locks(tmp_path, me=1) and not lock.exists()


def test_the_watchdog_stops_the_jobs_of_a_killed_parent(tmp_path):
    # a stand-in for Snakemake: it starts a long job, then gets SIGKILL; the job must not outlive it
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time\n"
                               "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
                               "time.sleep(120)"])
    assert _wait(lambda: procs.descendants(parent.pid))
    guard = watchdog.start(parent.pid)
    job = next(iter(procs.descendants(parent.pid)))
    time.sleep(1 + 2 * watchdog.POLL_S)  # the watchdog starts and sees the job
    parent.kill()
    parent.wait()
    assert _wait(lambda: procs.start_time(job) is None, timeout=10)
    guard.wait(timeout=10)


def test_the_watchdog_also_stops_job_scripts_started_after_its_last_poll(tmp_path):
    scripts = tmp_path / ".snakemake" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "tmp1234.report.py").write_text("import time\ntime.sleep(120)\n")
    job = subprocess.Popen([sys.executable, str(scripts / "tmp1234.report.py")], cwd=tmp_path,
                           start_new_session=True)  # an orphan: no descendant of the watched process
    try:
        assert _wait(lambda: job.pid in watchdog.job_scripts(tmp_path))
        watchdog.watch(2**22 + 7, tmp_path)  # a process that is already gone
        assert job.wait(timeout=10) == -signal.SIGTERM
    finally:
        job.kill()


def test_stale_outputs_are_the_per_key_paths_of_keys_no_longer_configured(tmp_path):
    files = ["results/ops/llama/h100/prefill.parquet", "results/ops/llama/h100/decode.parquet",
             "results/ops/llama/a6000/prefill.parquet", "results/totals/qwen/h100/prefill.parquet",
             "results/models/qwen/ops.parquet", "results/models/llama/ops.parquet",
             "reports/figures/qwen/roofline_h100.svg", "reports/qwen.html", "reports/qwen.pdf", "reports/llama.pdf",
             "reports/summary.html", "reports/other.html", "results/ops.parquet",
             "reports/figures/.llama.ab12cd34.part/x.svg",  # a killed figure job's: its writer cleans it up
             "reports/figures/.qwen.ab12cd34.part/x.svg",  # ... but not any more for a removed model
             "results/plans/qwen.parquet", "results/serving/qwen.parquet", "results/plans/llama.parquet",
             "reports/qwen.txt"]  # one file per model: the tables stayed behind; a .txt is the user's own
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    found = stale.stale_outputs(tmp_path, ["llama"], ["h100"], ["prefill"], ["ops", "totals"])
    assert sorted(map(str, found)) == sorted([
        "results/ops/llama/h100/decode.parquet", "results/ops/llama/a6000", "results/totals/qwen",
        "results/models/qwen", "reports/figures/qwen", "reports/figures/.qwen.ab12cd34.part", "reports/qwen.html",
        "reports/qwen.pdf", "results/plans/qwen.parquet", "results/serving/qwen.parquet"])
    target = stale.move_aside(tmp_path, found)
    assert (target / "reports/qwen.pdf").is_file() and not (tmp_path / "reports/qwen.pdf").exists()
    assert stale.stale_outputs(tmp_path, ["llama"], ["h100"], ["prefill"], ["ops", "totals"]) == []
    assert (tmp_path / "reports/other.html").exists() and (tmp_path / "reports/llama.pdf").exists()
    assert (tmp_path / "results/plans/llama.parquet").exists() and (tmp_path / "reports/qwen.txt").exists()


def test_measured_outputs_the_config_no_longer_asks_for_are_stale(tmp_path):
    # `measurements: null`, or a file with no run of a model, had left results/measurements/{model}.parquet and
    # rows.csv of the former runs in results/ beside a report that no longer showed them
    files = ["results/measurements/llama.parquet", "results/measurements/qwen.parquet",
             "results/measurements/rows.csv", "results/compare.csv"]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    found = stale.stale_outputs(tmp_path, ["llama", "qwen"], ["h100"], ["prefill"], ["ops"], ["llama"],
                                ["results/measurements/rows.csv", "results/nothing.csv"])
    assert sorted(map(str, found)) == ["results/measurements/qwen.parquet", "results/measurements/rows.csv"]
    assert stale.stale_outputs(tmp_path, ["llama", "qwen"], ["h100"], ["prefill"], ["ops"]) == []  # not asked
    config = rc.resolve_config({"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}}})
    assert config.unasked_outputs() == ["results/measurements/rows.csv", "results/compare.csv"]


# ------------------------------------------------------------------------------------------------ end to end
def _snakemake_command(work: Path, config: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(work / "Snakefile"), "--cores", "2",
            "--configfile", config, "--replace-workflow-config"]


def _jobs_of(work: Path) -> list[int]:
    """Pids of job scripts (figures, report) running from this working copy."""
    return [pid for pid in procs.parents() if any(str(work / ".snakemake" / "scripts") in arg
                                                   for arg in procs.command_line(pid))]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    work = copy_workflow(tmp_path_factory.mktemp("recovery") / "work")
    shutil.copy(ROOT / ".test" / "config.yaml", work / "config.yaml")
    return work


def test_after_sighup_of_the_terminals_process_group_the_lock_is_cleared(work):
    # a closed terminal sends SIGHUP to its foreground process group: Snakemake and its jobs. The run gets SIGHUP's
    # default action, as a terminal's processes have, whatever this process inherited (under nohup it is ignored, and
    # the run had finished instead of dying, leaving the next test nothing to run)
    hung = subprocess.Popen(_snakemake_command(work, "config.yaml"), cwd=work, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    try:
        assert _wait(lambda: list((work / locks.LOCKS).glob("*.lock")), timeout=300, step=0.05)
    finally:
        os.killpg(hung.pid, signal.SIGHUP)
        hung.wait()
    assert hung.returncode == -signal.SIGHUP and list((work / locks.LOCKS).glob("*.lock"))
    dry = subprocess.run(_snakemake_command(work, "config.yaml") + ["--dry-run"], cwd=work, capture_output=True,
                         text=True, timeout=900)
    assert dry.returncode == 0 and "Removed the stale lock" in dry.stdout + dry.stderr, dry.stderr[-3000:]
    assert "cannot be locked" not in dry.stdout + dry.stderr, dry.stdout[-3000:]
    assert not list((work / locks.LOCKS).glob("*.lock"))


def test_a_live_runs_lock_stands_and_a_plain_rerun_recovers_after_sigkill_and_its_jobs_stop(work):
    killed = subprocess.Popen(_snakemake_command(work, "config.yaml"), cwd=work, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        assert _wait(lambda: list((work / locks.LOCKS).glob("*.lock")), timeout=300, step=0.05)
        # while it runs, its lock is respected: a second run stops
        second = subprocess.run(_snakemake_command(work, "config.yaml"), cwd=work, capture_output=True, text=True,
                                timeout=600)
        assert killed.poll() is None, "the first run ended before the second checked its lock"
        assert second.returncode != 0 and "LockException" in second.stdout + second.stderr
        assert "Removed the stale lock" not in second.stdout + second.stderr
        assert _wait(lambda: _jobs_of(work), timeout=300, step=0.05), "no figure or report job started"
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert _wait(lambda: not _jobs_of(work), timeout=15), "the killed run's jobs are still running"
    assert list((work / locks.LOCKS).glob("*.lock"))  # left behind: Snakemake would stop with LockException
    rerun = subprocess.run(_snakemake_command(work, "config.yaml"), cwd=work, capture_output=True, text=True,
                           timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Removed the stale lock" in rerun.stderr and "LockException" not in rerun.stderr
    assert (work / "reports" / "index.html").is_file() and (work / "reports" / "qwen2.5-7b.pdf").is_file()
    assert not list((work / locks.RUNS).glob("*.json")) and not (work / locks.LOCKS).exists()


def test_outputs_of_a_model_dropped_from_the_config_are_moved_aside(work):
    if not (work / "reports" / "qwen2.5-7b.pdf").exists():
        pytest.skip("needs the run of the test above")
    config = yaml.safe_load((work / "config.yaml").read_text())
    del config["models"]["qwen2.5-7b"]
    (work / "one-model.yaml").write_text(yaml.safe_dump(config))
    run = subprocess.run(_snakemake_command(work, "one-model.yaml"), cwd=work, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    gone = ["reports/qwen2.5-7b.pdf", "reports/qwen2.5-7b.html", "reports/figures/qwen2.5-7b",
            "results/models/qwen2.5-7b", "results/ops/qwen2.5-7b"]
    assert not [name for name in gone if (work / name).exists()]
    aside = max((work / stale.ASIDE).iterdir())  # the latest move
    assert all((aside / name).exists() for name in gone)
    assert "qwen2.5-7b" not in (work / "reports" / "index.html").read_text()
    assert (work / "reports" / "llama-2-7b.pdf").is_file()


def test_only_overrides_of_the_grid_leave_stale_outputs_in_place():
    # `--config 'stages=[decode]'` is a one-off: config.yaml's prefill outputs stay; a profile's local_rules (or a
    # scenario override, which keeps every key) is no narrowing and moves aside what the config file dropped
    assert stale.narrowed_for_one_run({"stages": ["decode"]}) and stale.narrowed_for_one_run({"models": {}})
    assert not stale.narrowed_for_one_run({"local_rules": ["figures"]})
    assert not stale.narrowed_for_one_run({"scenario": {"batch": 8}}) and not stale.narrowed_for_one_run(None)
