"""Issue 20, H1, H2, H3, H10 and the messages: every deployment search is bounded (--max-devices against the
config's limit, the candidates counted before the search and refused past a limit with the count, a progress line
for long searches); `parallel: manual` in a gpu entry, a plan's tp of 0, '4' or 2.5, --tpot-ms 5e-324 and
implausible interconnect latencies are one line naming the field; `roofline measure` checks --out before measuring
and writes through temporary files."""
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roofline.cli import app as cli
from roofline.engine import hardware, models
from roofline.engine.errors import RooflineInputError
from roofline.pipeline import config as rc
from roofline.pipeline.schema import load_schema
from roofline.pipeline.schema_messages import check_schema
from roofline.serving import planner, search_budget
from workflow_copy import copy_workflow

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def _cli_error(capsys, *argv) -> str:
    assert cli.main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.removeprefix("roofline: error: ").strip()


# ------------------------------------------------------------------ H1: bounded searches
PLAN = ["plan", "--model", "kimi-k2", "--isl", "1024", "--osl", "1024"]


def test_max_devices_has_the_configs_limit(capsys):
    assert _cli_error(capsys, *PLAN, "--max-devices", "100000") == (
        "--max-devices: 100000 is not allowed; expected an integer from 1 to 4096")
    plan = SCHEMA["properties"]["plan"]["properties"]
    assert plan["max_devices"]["maximum"] == search_budget.MAX_DEVICES
    assert plan["max_candidates"]["default"] == search_budget.MAX_CANDIDATES
    assert plan["max_candidates"]["maximum"] == search_budget.MAX_CANDIDATES_CEILING


def test_a_search_too_large_is_refused_up_front_with_its_count(capsys):
    start = time.monotonic()
    err = _cli_error(capsys, *PLAN, "--max-devices", "64")
    assert time.monotonic() - start < 30  # counted, not searched (the search would take minutes)
    assert err.startswith("plan: 34,361,472 candidates to evaluate, over the limit of 14,000,000 (about ")
    assert err.endswith("lower --max-devices, give fewer --gpu or --dtypes, or raise --max-candidates")
    assert "over the limit of 1,000" in _cli_error(capsys, *PLAN, "--gpu", "h100-sxm", "--max-candidates", "1000")
    assert "--max-candidates: 0 is not allowed" in _cli_error(capsys, *PLAN, "--max-candidates", "0")


def test_the_count_is_what_the_search_evaluates():
    model, gpus = models.catalog()["mixtral-8x7b"], [hardware.get_accelerator(k) for k in ("h100-sxm", "l40s")]
    workload = planner.Workload(isl=512, osl=256)
    for dtypes, max_devices in ((("fp16", "fp8"), 4), (("int4", "fp8", "int4"), 8)):
        result = planner.search(model, gpus, workload, dtypes=dtypes, max_devices=max_devices)
        assert search_budget.count_candidates(model, gpus, dtypes, max_devices) == len(result)


def test_default_searches_of_every_catalog_model_over_every_catalog_device_are_within_the_limit():
    gpus = list(hardware.catalog().values())
    counts = {key: search_budget.count_candidates(model, gpus, planner.DEFAULT_DTYPES, 8)
              for key, model in models.catalog().items()}
    assert max(counts.values()) <= search_budget.MAX_CANDIDATES, counts


def test_repeated_gpus_are_searched_once(capsys):
    argv = [*PLAN[:2], "llama-3.1-8b", *PLAN[3:], "--gpu", "l4", "--max-devices", "2", "--top", "1"]
    assert cli.main(argv) == 0
    once = capsys.readouterr()
    assert cli.main(argv + ["--gpu", "l4", "--gpu", "l4"]) == 0
    assert capsys.readouterr().out == once.out


def test_the_config_plan_section_is_bounded_before_any_job():
    config = {"models": {"kimi-k2": {}}, "gpus": {"h200-sxm": {}},
              "plan": {"gpus": list(hardware.catalog()), "max_devices": 64}}
    with pytest.raises(RooflineInputError) as error:
        rc.resolve_config(config)
    assert str(error.value).startswith("plan (models.kimi-k2): 51,542,208 candidates to evaluate, over the limit")
    assert "raise plan.max_candidates" in str(error.value)
    config["plan"]["max_candidates"] = 60_000_000
    assert rc.resolve_config(config).plan_search.max_devices == 64
    with pytest.raises(RooflineInputError, match=r"^plan\.max_devices: 5000 is not allowed; expected an integer"):
        rc.resolve_config({**config, "plan": {**config["plan"], "max_devices": 5000}})


def test_progress_lines_only_for_long_searches():
    now, lines = [0.0], []
    progress = search_budget.Progress(1_000_000, lines.append, clock=lambda: now[0])
    for done, at in ((10, 1.0), (20, 2.9), (30, 3.0), (40, 6.0), (60, 13.5), (100, 20.0)):
        now[0] = at
        progress(done, 100)
    # the pace since the first candidates were done (at 1 s): 20 in 2 s leave 70 for 7 s, 50 in 12.5 s 40 for 10 s
    assert lines == ["plan: 30% of 1,000,000 candidates evaluated in 3 s, about 7 s left",
                     "plan: 60% of 1,000,000 candidates evaluated in 14 s, about 10 s left"]


def test_progress_leaves_the_tables_before_the_first_candidates_out():
    now, lines = [0.0], []
    progress = search_budget.Progress(1_000, lines.append, clock=lambda: now[0])
    for done, at in ((0, 2.0), (1, 2.9), (15, 3.0)):  # 2.9 s of step tables, then 14 candidates in 0.1 s
        now[0] = at
        progress(done, 100)
    # 85 left at 140 per second: under a second (from the start, 15% in 3 s would have said 17 s)
    assert lines == ["plan: 15% of 1,000 candidates evaluated in 3 s, under a second left"]


def test_progress_estimates_no_time_left_before_a_tenth_is_done():
    # each device and framework builds its tables in its turn: 1% in 3 s had read "about 303 s left" of a search
    # done 1.3 s later
    now, lines = [0.0], []
    progress = search_budget.Progress(4_733_440, lines.append, clock=lambda: now[0])
    for done, at in ((1, 0.5), (5, 3.0), (40, 13.0), (60, 23.0)):
        now[0] = at
        progress(done, 100)
    assert lines == ["plan: 5% of 4,733,440 candidates evaluated in 3 s, the time left not yet known",
                     "plan: 40% of 4,733,440 candidates evaluated in 13 s, about 19 s left",  # 60 at 39 per 12.5 s
                     "plan: 60% of 4,733,440 candidates evaluated in 23 s, about 15 s left"]


# ------------------------------------------------------------------ H2, H3 and the messages
def _schema_line(config: dict) -> str:
    with pytest.raises(RooflineInputError) as error:
        check_schema(config, SCHEMA)
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("where, value, expected", [
    ("gpu", "manual", "gpus.h100-sxm.parallel: unknown value 'manual'; allowed: auto (or a mapping of tp, pp, ep, "
                      "attention_dp)"),  # H2
    ("scenario", {"tp": 0}, "scenario.parallel.tp: 0 is not allowed; must be >= 1"),
    ("scenario", {"tp": "4"}, "scenario.parallel.tp: '4' is not allowed; expected integer"),
    ("scenario", {"tp": 2.5}, "scenario.parallel.tp: 2.5 is not allowed; expected integer"),
    ("gpu", {"ep": 0}, "gpus.h100-sxm.parallel.ep: 0 is not allowed; must be >= 1"),
    ("scenario", {"tq": 2}, "scenario.parallel: unknown key 'tq'"),
])
def test_plan_errors_name_the_field(where, value, expected):
    config = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}}}
    if where == "gpu":
        config["gpus"]["h100-sxm"]["parallel"] = value
    else:
        config["scenario"] = {"parallel": value}
    assert _schema_line(config).startswith(expected)


def test_latency_targets_that_round_to_zero_are_refused_in_their_own_words(capsys):
    base = [*PLAN[:2], "llama-3.1-8b", *PLAN[3:], "--gpu", "h100-sxm"]
    for value in ("5e-324", "0", "nan", "inf", "1e300"):
        assert _cli_error(capsys, *base, "--tpot-ms", value) == (
            f"--tpot-ms: {value} is not allowed; expected a number from 0.001 to 1e+07 ms")
    assert _cli_error(capsys, *base, "--ttft-ms", "x").startswith("--ttft-ms: 'x' is not a number")
    config = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}}, "plan": {"tpot_ms": 5e-324}}
    assert _schema_line(config) == "plan.tpot_ms: 5e-324 is not allowed; must be >= 0.001"


@pytest.mark.parametrize("field, value, expected", [
    ("scaleup_latency_us", 1e308, "gpus.h100-sxm.scaleup_latency_us: 1e+308 is not plausible (1e+302 s once "
                                  "converted); expected 1e-09 to 1 s"),  # H3
    ("scaleout_latency_us", 1e300, "gpus.h100-sxm.scaleout_latency_us: 1e+300 is not plausible"),
    ("scaleout_latency_us", 5e-324, "gpus.h100-sxm.scaleout_latency_us: 5e-324 is not plausible (0 s once"),
    ("scaleup_latency_us", 1e-4, "gpus.h100-sxm.scaleup_latency_us: 0.0001 is not plausible"),
    ("scaleup_gbps", 1e300, "gpus.h100-sxm.scaleup_gbps: 1e+300 is not plausible"),
    ("scaleout_gbps", 5e-324, "gpus.h100-sxm.scaleout_gbps: 5e-324 is not plausible"),
    ("peak_tflops", [989], "gpus.h100-sxm.peak_tflops: [989] is not allowed; expected a mapping"),
])
def test_every_numeric_device_field_is_range_checked(field, value, expected):
    with pytest.raises(RooflineInputError) as error:
        hardware.accelerator_from_entry("h100-sxm", {field: value})  # the engine's entry point: every path
    assert str(error.value).startswith(expected), str(error.value)
    with pytest.raises(RooflineInputError, match="^" + re.escape(expected.split(" is ")[0])):
        rc.resolve_config({"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {field: value}}})


def test_latencies_in_range_build(capsys):
    gpu = hardware.accelerator_from_entry("h100-sxm", {"scaleup_latency_us": 3, "scaleout_latency_us": 1e6})
    assert gpu.scaleup_latency_s == 3e-6 and gpu.scaleout_latency_s == 1.0
    for gpu in hardware.catalog().values():
        assert hardware.check_plausible(gpu.key, {}, gpu) is gpu


def test_the_readme_spells_the_keys_the_config_accepts():
    readme = (ROOT / "README.md").read_text()
    keys = SCHEMA["$defs"]["gpu_entry"]["properties"]
    assert "scaleup_GBps" not in readme and "scaleout_GBps" not in readme
    for key in ("scaleup_gbps", "scaleout_gbps", "scaleup_latency_us", "scaleout_latency_us", "scaleup_domain",
                "calibration_any_device"):
        assert key in keys and f"`{key}" in readme, key


def test_snakemake_says_a_mistyped_plan_in_one_line_with_status_2(tmp_path):  # H2, end to end
    work = copy_workflow(tmp_path / "work")
    (work / "config.yaml").write_text("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {parallel: manual}}\n")
    run = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(work / "Snakefile"), "--dry-run",
                          "--configfile", "config.yaml", "--replace-workflow-config"], cwd=work, capture_output=True,
                         text=True, timeout=600)
    lines = [line for line in run.stderr.splitlines() if line.startswith("Invalid configuration: ")]
    assert run.returncode == 2 and "Traceback" not in run.stderr + run.stdout, run.stderr[-2000:]
    assert lines == ["Invalid configuration: gpus.h100-sxm.parallel: unknown value 'manual'; allowed: auto (or a "
                     "mapping of tp, pp, ep, attention_dp)"]


# ------------------------------------------------------------------ H10: roofline measure --out
@pytest.fixture
def no_measuring(monkeypatch):
    from roofline.estimate import measure

    def refuse(*args, **kwargs):
        raise AssertionError("measured although --out cannot be written")
    monkeypatch.setattr(measure, "measure", refuse)


def test_measure_checks_out_before_measuring(tmp_path, capsys, no_measuring):
    import os
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    (tmp_path / "dir.csv").mkdir()
    (tmp_path / "t.parquet").mkdir()
    for out, expected in ((tmp_path / "dir.csv", "is a directory; expected a file path ending in .csv"),
                          (tmp_path / "missing" / "t.csv", "folder '{}' does not exist; create it first".format(
                              tmp_path / "missing")),
                          (fifo, "is a FIFO; expected a file path ending in .csv"),
                          (tmp_path / "t.csv", f"'{tmp_path / 't.parquet'}' is a directory"),
                          (tmp_path / "t.txt", "is not allowed; expected a path ending in .csv")):
        err = _cli_error(capsys, "measure", "--device", "cpu", "--quick", "--out", str(out))
        assert err.startswith("--out: ") and expected in err, err


def test_measure_writes_both_files_or_neither(tmp_path, monkeypatch):
    import pandas as pd

    from roofline.engine.columns import CALIBRATION_COLUMNS
    from roofline.estimate import measure
    rows = [dict.fromkeys(CALIBRATION_COLUMNS, 0) | {"op_class": "gemm", "dtype": "fp16", "bytes": 1.0,
                                                     "measured_s": 1e-5, "source": "measured"}]
    out = tmp_path / "t.csv"
    assert measure.write(rows, str(out)) == [str(out), str(out.with_suffix(".parquet"))]
    assert pd.read_parquet(out.with_suffix(".parquet")).shape == pd.read_csv(out).shape == (1, len(CALIBRATION_COLUMNS))
    before = out.read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(pd.DataFrame, "to_parquet", interrupted)
    rows[0]["measured_s"] = 2e-5
    with pytest.raises(KeyboardInterrupt):
        measure.write(rows, str(out))
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.parquet"]


def test_a_killed_measure_leaves_the_earlier_table_as_it_was(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "t.csv"
    out.write_text("earlier table\n")
    proc = subprocess.Popen([sys.executable, "-m", "roofline.cli.app", "measure", "--device", "cpu", "--quick",
                             "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)  # importing torch (~1.5 s), then measuring (~1 s): the table is written only at the end
    if proc.poll() is not None:
        pytest.skip("the quick measurement finished before the kill")
    proc.kill()
    proc.wait(timeout=30)
    text = out.read_text()
    if text != "earlier table\n":  # it ended between the poll and the kill: then the new table is whole
        assert text.startswith("device,gpu,") and text.endswith("\n")
        pytest.skip("the quick measurement finished before the kill")
    # a kill within the write itself may leave a hidden temporary file, never a visible or half-written table
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["t.csv"]


def test_the_served_count_is_what_the_served_search_evaluates():
    from roofline.serving import search

    model, gpus = models.catalog()["llama-3.1-8b"], [hardware.get_accelerator(k) for k in ("l40s", "h100-sxm")]
    workload = search.ServedWorkload(isl=512, osl=256)
    for mode in ("aggregated", "disaggregated", "all"):
        result = search.search(model, gpus, workload, ["fp16"], ["fp16", "fp8"], 4, mode)
        assert search.count_candidates(model, gpus, ["fp16"], ["fp16", "fp8"], 4, mode) == len(result)


def test_a_served_search_too_large_is_refused_before_any_work(capsys):
    start = time.monotonic()
    err = _cli_error(capsys, "plan", "--model", "mixtral-8x7b", "--isl", "1024", "--osl", "1024", "--mode", "all")
    assert time.monotonic() - start < 30 and err.startswith("plan: 113,603,232 candidates to evaluate")


@pytest.mark.parametrize("field, value, said", [
    ("bandwidth_gbps", True, "gpus.x.bandwidth_gbps: True is not a number; expected a positive number"),
    ("bandwidth_gbps", "800", "gpus.x.bandwidth_gbps: '800' is not a number; expected a positive number, without "
                              "quotes"),
    ("memory_gb", "48", "gpus.x.memory_gb: '48' is not a number; expected a positive number, without quotes"),
])
def test_a_device_file_takes_no_true_or_quoted_number_for_a_figure(field, value, said):
    # a --gpu file's `bandwidth_gbps: true` served at 1 GB/s (float(True)) and `"800"` as 800, where config.yaml's
    # schema and the integer fields (scaleup_domain: "8") refuse both
    from roofline.engine.errors import RooflineInputError
    from roofline.engine.hardware import accelerator_from_entry

    entry = {"base": "h100-sxm", field: value}
    with pytest.raises(RooflineInputError) as caught:
        accelerator_from_entry("x", entry)
    assert str(caught.value) == said
    with pytest.raises(RooflineInputError, match=r"peak_tflops.fp16: '100' is not a number"):
        accelerator_from_entry("x", {"base": "h100-sxm", "peak_tflops": {"fp16": "100"}})
    assert accelerator_from_entry("x", {"base": "h100-sxm", field: 100}).name  # a number still is one


def test_a_link_latency_may_be_written_as_its_default_zero():
    # README: scaleup_latency_us / scaleout_latency_us "add a latency per collective (default 0)"; writing that 0
    # was refused ("expected a positive number"), in a --gpu file and in config.yaml alike
    from roofline.engine.hardware import accelerator_from_entry

    entry = {"memory_gb": 48, "bandwidth_gbps": 800, "peak_tflops": {"fp16": 100}, "scaleup_domain": 8,
             "scaleup_gbps": 100, "scaleup_latency_us": 0, "scaleout_latency_us": 0}
    gpu = accelerator_from_entry("x1", entry)
    assert gpu.scaleup_latency_s == 0.0 and gpu.scaleout_latency_s == 0.0
    resolved = rc.resolve_config({"models": {"llama-3.1-8b": {}}, "gpus": {"x1": entry}, "scenario": {"seq_len": 8}})
    assert resolved.gpus["x1"].scaleup_latency_s == 0.0
    with pytest.raises(RooflineInputError, match=r"^gpus.x1.scaleup_latency_us: -1 is not allowed; expected a "
                                                 r"number >= 0$"):
        accelerator_from_entry("x1", {**entry, "scaleup_latency_us": -1})
    with pytest.raises(RooflineInputError, match="gpus.x1.bandwidth_gbps: 0 is not allowed; expected a positive"):
        accelerator_from_entry("x1", {**entry, "bandwidth_gbps": 0})


def test_a_device_that_links_to_none_is_not_told_to_use_more_devices(tmp_path):
    # DeepSeek-V2 (236 B) on a device file without links: serve said "use more devices, narrower weights" with int4
    # weights already (77 GB short), and plan "allow more devices (--max-devices)", which searched the same 8,256
    # candidates at any --max-devices
    import roofline

    gpu = tmp_path / "a40.yaml"
    gpu.write_text("a40: {name: NVIDIA A40, memory_gb: 48, bandwidth_gbps: 696, peak_tflops: {bf16: 149.7}}\n")
    with pytest.raises(RooflineInputError) as caught:
        roofline.serve(model="deepseek-v3", gpu=str(gpu), isl=1024, osl=256, concurrency=1, weight_dtype="int4")
    said = str(caught.value)
    assert said.endswith("GB per device); a40 links to no other device: scaleup_gbps and scaleup_domain, or "
                         "scaleout_gbps, in its entry would spread the model"), said  # int4 weights: no narrower
    assert "more devices" not in said and "narrower weights" not in said
    with pytest.raises(RooflineInputError) as caught:
        roofline.serve(model="deepseek-v3", gpu=str(gpu), isl=1024, osl=256, concurrency=1, weight_dtype="fp8")
    assert str(caught.value).endswith("; use narrower weights (a40 links to no other device: scaleup_gbps and "
                                      "scaleup_domain, or scaleout_gbps, in its entry would spread the model)")
    # a device file with a scale-up domain the plan fills: a larger domain, or a scale-out network
    domain = tmp_path / "a40x8.yaml"
    domain.write_text("a40x8: {name: NVIDIA A40, memory_gb: 48, bandwidth_gbps: 696, peak_tflops: {bf16: 149.7}, "
                      "scaleup_gbps: 32, scaleup_domain: 8}\n")
    with pytest.raises(RooflineInputError, match=r"; use narrower weights \(a40x8 links to no more than 8 devices: a "
                                                 r"larger scaleup_domain, or scaleout_gbps, in its entry would spread "
                                                 r"the model further\)$"):
        roofline.serve(model="deepseek-v3", gpu=str(domain), tp=8, isl=1024, osl=256, concurrency=1,
                       weight_dtype="fp8")
    # a catalog device that links to more: every remedy, one verb
    with pytest.raises(RooflineInputError, match=r"; use more devices or narrower weights$"):
        roofline.serve(model="deepseek-v3", gpu="h100-sxm", tp=8, isl=1024, osl=256, concurrency=1)
    # more users than its cache holds: no "more devices" either
    with pytest.raises(RooflineInputError, match=r"it holds \d+ under vllm's memory rule; use --concurrency <= \d+ or "
                                                 r"an fp8 KV cache, or --overflow queue"):
        roofline.serve(model="llama-3.1-8b", gpu=str(gpu), isl=4096, osl=512, concurrency=4096)


def test_plan_on_a_device_that_links_to_none_says_so(tmp_path, capsys):
    gpu = tmp_path / "a40.yaml"
    gpu.write_text("a40: {name: NVIDIA A40, memory_gb: 48, bandwidth_gbps: 696, peak_tflops: {bf16: 149.7}}\n")
    assert cli.main(["plan", "--model", "deepseek-v3", "--gpu", str(gpu), "--isl", "1024", "--osl", "256",
                     "--max-devices", "64"]) == 0
    said = capsys.readouterr()
    text = said.out + said.err
    assert ("on the devices allowed; narrower weights or an fp8 KV cache may help (a40 links to no other device: "
            "scaleup_gbps and scaleup_domain, or scaleout_gbps, in its entry would spread the model)") in text
    assert "allow more devices (--max-devices)" not in text


def test_progress_over_several_devices_counts_their_tables_in_its_pace():
    # OLMoE over a device file and an H100 (disaggregated, 1,045,120 candidates): "26% ... in 3 s, about 2 s left",
    # done 8 s later: the second device built its step tables when its turn came, which the pace since the first
    # candidates (the first device's tables left out) did not foresee; over several devices the pace since the
    # start: 26% in 3 s leave 74% for 8.5 s
    now, lines = [0.0], []
    progress = search_budget.Progress(1_045_120, lines.append, clock=lambda: now[0], turns=2)
    for done, at in ((1, 1.0), (26, 3.0)):
        now[0] = at
        progress(done, 100)
    assert lines == ["plan: 26% of 1,045,120 candidates evaluated in 3 s, about 9 s left"]


def test_a_device_whose_speeds_an_entry_changes_is_another_chip(tmp_path):
    # {base: h100-sxm, bandwidth_gbps: 20000, peak_tflops: {...5000}}: serve gave a 1.59 ms TPOT bound beside the
    # plain H100's measured 14.9 ms, "calibrated": the H100's kernel tables time another chip's kernels. They are
    # still the nearest evidence: borrowed (their efficiencies at the new bounds), labelled default (the pooled
    # fallback had priced a GH200, an H100 with 4.0 TB/s, slower than the H100: 8.16 against 6.51 ms)
    from roofline.engine.hardware import OTHER_CHIP, SAME_CHIP_WITHIN, accelerator_from_entry, get_accelerator
    from roofline.estimate.calibration import shipped_path, table_path

    h100 = get_accelerator("h100-sxm")
    fast = accelerator_from_entry("h100-fast", {"base": "h100-sxm", "bandwidth_gbps": 20000})
    assert h100.chip == "h100-sxm" and fast.chip == OTHER_CHIP and fast.tables_of == "h100-sxm"
    assert table_path(fast) == table_path(h100) == str(shipped_path("h100-sxm"))
    peak = h100.peak_flops_per_s["bf16"] / 1e12
    assert accelerator_from_entry("x", {"base": "h100-sxm", "peak_tflops": {"bf16": 2 * peak}}).chip == OTHER_CHIP
    # a clock variant within SAME_CHIP_WITHIN, more memory, other links or a dtype the base lacks: the same chip
    near = h100.bandwidth_bytes_per_s / 1e9 * (1 + SAME_CHIP_WITHIN / 2)
    for entry in ({"bandwidth_gbps": near}, {"memory_gb": 141}, {"scaleup_gbps": 900}, {"peak_tflops": {"fp4": 4000}}):
        assert accelerator_from_entry("x", {"base": "h100-sxm", **entry}).chip == "h100-sxm", entry
    # the catalog key itself overridden (its tables were found by its key when its chip was "")
    over = accelerator_from_entry("h100-sxm", {"bandwidth_gbps": 20000})
    assert over.chip == OTHER_CHIP and over.tables_of == "h100-sxm"
    import roofline

    for text in ("h100-fast: {base: h100-sxm, bandwidth_gbps: 20000}", "h100-sxm: {bandwidth_gbps: 20000}"):
        path = tmp_path / "fast.yaml"
        path.write_text(text + "\n")
        row = roofline.serve(model="llama-3.1-8b", gpu=str(path), isl=1024, osl=256, concurrency=16).iloc[0]
        assert row["estimate"] == "default" and row["calibration"].endswith("h100-sxm's at this device's bounds"), text
    gh200 = tmp_path / "gh200.yaml"
    gh200.write_text("x-gh200: {base: h100-sxm, memory_gb: 96, bandwidth_gbps: 4000}\n")
    plain, faster = (roofline.totals(model="llama-3.1-8b", gpu=gpu, stage="decode").iloc[0]
                     for gpu in ("h100-sxm", str(gh200)))
    assert faster["t_s"] < plain["t_s"] and faster["tpot_expected_s"] < plain["tpot_expected_s"]
