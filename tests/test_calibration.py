"""Calibrated estimates (roofline.estimate.calibration), `roofline measure` and a measured table through the
workflow."""
import csv
import gzip
import math
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from roofline.cli import app as cli
from roofline.engine import columns, hardware, models
from roofline.engine.errors import RooflineInputError
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.estimate import expected as estimator
from roofline.estimate.calibration import read_table, shipped_path
from roofline.estimate.curves import fit_grid, local_log_ratio
from roofline.estimate.lookup import calibration_for, expected_from
from roofline.pipeline import config as rc
from workflow_copy import copy_workflow

ROOT = Path(__file__).resolve().parents[1]
LLAMA = models.catalog()["llama-3.1-8b"]


def test_local_slope_of_time_against_the_bound():
    # bandwidth-like: time = 2 x bound (slope 1): a ratio of 2 inside the ladder and beyond it
    x = np.log10([[1e-6, 2e-6, 4e-6]])
    assert 10 ** local_log_ratio(x, np.log10([[2.0, 2.0, 2.0]]), np.log10([3e-6]))[0] == pytest.approx(2.0)
    assert 10 ** local_log_ratio(x, np.log10([[2.0, 2.0, 2.0]]), np.log10([1e-4]))[0] == pytest.approx(2.0)
    # launch-bound: 5 us whatever the bound (slope 0): a smaller kernel still takes 5 us
    bound = np.array([1e-9, 2e-9, 4e-9])
    flat = local_log_ratio(np.log10([bound]), np.log10([5e-6 / bound]), np.log10([5e-10]))[0]
    assert 5e-10 * 10 ** flat == pytest.approx(5e-6)


def _grid_of(bound, measured, intensity=None):
    intensity = np.ones_like(bound) if intensity is None else intensity
    return fit_grid([np.log10(bound), np.log10(intensity)], np.log10(measured / bound),
                    np.zeros(len(bound), dtype=bool), 3.0)


def test_grid_floor_below_proportional_above_and_never_below_the_bound():
    bound = np.geomspace(1e-6, 1e-4, 20)
    grid = _grid_of(bound, 2 * bound + 4e-6)  # a 4 us launch and half the bandwidth
    t = np.array([1e-9, 1e-5, 1e-2])
    floor = 6e-6  # the table's shortest kernel (roofline.estimate.calibration.Points.floor)
    expected = expected_from(grid, floor, t, [np.zeros(3)])
    assert expected[0] == pytest.approx(floor)  # far below the ladder: the launch floor
    assert expected[1] == pytest.approx(2.4e-5, rel=0.1)
    assert expected[2] == pytest.approx(2 * 1e-2, rel=0.1)  # beyond it: the ladder's fraction of the bound
    faster = _grid_of(bound, bound / 2)  # measurements faster than their bound never lower the bound
    assert (expected_from(faster, 0.0, t, [np.zeros(3)]) >= t).all()


@pytest.mark.parametrize("gpu", ["a100-sxm-80gb", "h100-sxm", "h200-sxm", "rtx-a6000", "mi300x"])
@pytest.mark.parametrize("stage", ["prefill", "decode"])
def test_expected_is_never_below_the_bound(gpu, stage):
    rows, total = estimator.analyze(LLAMA, hardware.get_accelerator(gpu), stage, Scenario(batch=4, seq_len=512))
    assert all(r["t_expected_s"] >= r["t_s"] > 0 for r in rows)
    column = "ttft_expected_s" if stage == "prefill" else "tpot_expected_s"
    assert total[column] >= total["t_s"]
    assert math.isnan(total["tpot_expected_s" if stage == "prefill" else "ttft_expected_s"])
    assert total["tokens_per_s_expected"] == pytest.approx(total["tokens_per_s"] * total["t_s"] / total[column])
    assert set(columns.OP_EXPECTED_COLUMNS) <= set(rows[0]) and set(columns.TOTAL_EXPECTED_COLUMNS) <= set(total)


def test_estimate_labels_follow_what_was_measured_on_the_device():
    flash = Scenario(attention="flash")
    for gpu in ("a100-sxm-80gb", "h100-sxm", "h200-sxm"):  # the package measured GEMMs and attention on each
        rows, total = estimator.analyze(LLAMA, hardware.get_accelerator(gpu), "decode", flash)
        assert {r["estimate"] for r in rows if r["op_class"] in ("gemm", "attention")} == {"calibrated"}
        assert total["estimate"] == "calibrated"
    rows, total = estimator.analyze(LLAMA, hardware.get_accelerator("rtx-a6000"), "decode", flash)  # no table
    assert {r["estimate"] for r in rows} == {"default"} and total["estimate"] == "default"
    int4 = estimator.analyze(LLAMA, hardware.get_accelerator("h200-sxm"), "decode", Scenario(weight_dtype="int4"))
    assert int4[1]["estimate"] == "partial"  # no int4 GEMM measured on the H200: GEMMs from the bf16 ones


def test_shipped_tables_have_the_documented_columns_and_say_what_is_measured():
    paths = [shipped_path(key) for key in ("a100-sxm-80gb", "h100-sxm", "h200-sxm")]
    paths += [shipped_path("h100-sxm").parent / f"{key}.vidur.csv.gz" for key in ("a100-sxm-80gb", "h100-sxm")]
    for path in paths:
        with gzip.open(path, "rt", newline="") as handle:
            assert tuple(csv.DictReader(handle).fieldnames) == columns.CALIBRATION_COLUMNS
        assert {r["source"] for r in read_table(str(path))} == {"measured"}
    # the H200's ceilings (measured for this project) ride with its default table
    assert any(r["op_class"] == "ceiling" for r in read_table(str(shipped_path("h200-sxm"))))


def test_bound_exceeds_a_measurement_only_for_the_l2_resident_residual_add():
    for key in ("a100-sxm-80gb", "h100-sxm"):  # vidur's element-wise kernels
        gpu = hardware.get_accelerator(key)
        path = shipped_path(key).parent / f"{key}.vidur.csv.gz"
        faster = {r["op"] for r in read_table(str(path))
                  if r["measured_s"] < max(r["flops"] / gpu.peak(r["dtype"]), r["bytes"] / gpu.bandwidth_bytes_per_s)}
        assert faster <= {"residual_add"}


def test_config_calibration_errors_name_the_key(tmp_path):
    with pytest.raises(RooflineInputError, match=r"gpus\.h100-sxm\.calibration: file .*nope\.csv' does not exist"):
        rc.resolve_gpu("h100-sxm", {"calibration": "nope.csv"}, tmp_path)
    bad = tmp_path / "bad.csv"
    bad.write_text("op_class,dtype\ngemm,fp16\n")
    with pytest.raises(RooflineInputError, match=r"gpus\.h100-sxm\.calibration: .*lacks column\(s\) flops"):
        rc.resolve_gpu("h100-sxm", {"calibration": "bad.csv"}, tmp_path)
    good = rc.resolve_gpu("h100-sxm", {"calibration": str(shipped_path("h200-sxm")), "calibration_any_device": True},
                          tmp_path)  # another chip's table: only with calibration_any_device (issue 20, H7)
    assert good.calibration == str(shipped_path("h200-sxm")) and good.source == hardware.catalog()["h100-sxm"].source


@pytest.fixture(scope="module")
def cpu_table(tmp_path_factory):
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("measure") / "cpu.csv"
    assert cli.main(["measure", "--device", "cpu", "--quick", "--out", str(out)]) == 0
    return out


def test_measure_cpu_quick_writes_a_well_formed_table(cpu_table):
    table = pd.read_csv(cpu_table)
    assert tuple(table.columns) == columns.CALIBRATION_COLUMNS
    assert pd.read_parquet(cpu_table.with_suffix(".parquet")).shape == table.shape
    kernels = {"ceiling", "gemm", "attention", "norm", "elementwise", "embedding"}
    # MoE expert blocks where this torch has a grouped GEMM (torch._grouped_mm; on a CPU too since 2.9)
    grouped = hasattr(__import__("torch"), "_grouped_mm")
    assert set(table["op_class"]) == kernels | ({"moe"} if grouped else set())
    moe = table[table["op_class"] == "moe"]
    assert (moe["experts"] == 128).all() and (moe["top_k"] == 8).all() and (moe["weight_dtype"] == "fp32").all()
    assert (table.loc[table["op_class"] == "gemm", "weight_dtype"] == "fp32").all()
    assert (table["measured_s"] > 0).all() and (table["bound_s"] > 0).all() and (table["bytes"] > 0).all()
    assert (table["source"] == "measured").all() and table["provenance"].str.contains("torch").all()
    gemm = table[(table["op"] == "qkv_proj")].iloc[0]
    assert gemm["flops"] == 2 * gemm["m"] * gemm["k"] * gemm["n"]  # 1 multiply-add = 2 FLOPs


def test_a_measured_table_calibrates_the_engine(cpu_table):
    gpu = replace(hardware.get_accelerator("h100-sxm"), calibration=str(cpu_table))
    fp32 = Scenario(weight_dtype="fp32", act_dtype="fp32", kv_dtype="fp32")
    rows, total = estimator.analyze(LLAMA, gpu, "decode", fp32)
    assert {r["estimate"] for r in rows} == {"calibrated"} and total["estimate"] == "calibrated"
    assert calibration_for(gpu).measured


def test_measure_rejects_a_device_that_is_not_there(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert cli.main(["measure", "--device", "cuda", "--quick"]) == 2
    assert "--device: 'cuda' is not available here" in capsys.readouterr().err


def test_a_measured_table_flows_through_snakemake_into_the_report(cpu_table, tmp_path):
    repo, work = tmp_path / "repo", tmp_path / "work"
    copy_workflow(repo)
    work.mkdir()
    shutil.copy(cpu_table, work / "cpu.csv")
    (work / "config.yaml").write_text(
        "models: {llama-2-7b: {}}\ngpus: {h100-sxm: {calibration: cpu.csv, calibration_any_device: true}}\n"
        "stages: [decode]\n"
        "scenario: {weight_dtype: fp32, act_dtype: fp32, kv_dtype: fp32}\n")
    run = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory",
                          str(work), "--configfile", "config.yaml", "--replace-workflow-config", "--cores", "2",
                          "reports/llama-2-7b.html"], cwd=work, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    totals = pd.read_parquet(work / "results" / "totals.parquet" if (work / "results/totals.parquet").exists()
                             else work / "results" / "models" / "llama-2-7b" / "totals.parquet")
    assert list(totals["estimate"]) == ["calibrated"] and (totals["tpot_expected_s"] > totals["tpot_s"]).all()
    html = (work / "reports" / "llama-2-7b.html").read_text()
    assert "expected (calibrated)" in html and "your table cpu.csv, estimate calibrated" in html


@pytest.mark.parametrize("name", columns.OP_EXPECTED_COLUMNS + columns.TOTAL_EXPECTED_COLUMNS
                         + columns.CALIBRATION_COLUMNS)
def test_readme_lists_the_calibration_columns(name):
    assert f"`{name}`" in (ROOT / "README.md").read_text()


def test_cli_calibration_option(capsys, tmp_path):
    argv = ["totals", "--model", "llama-2-7b", "--gpu", "rtx-a6000", "--stage", "decode", "--format", "csv"]
    assert cli.main(argv + ["--calibration", str(tmp_path / "missing.csv")]) == 2
    assert "--calibration: file" in capsys.readouterr().err
    assert cli.main(argv + ["--calibration", str(shipped_path("a100-sxm-80gb", "vllm")),
                            "--calibration-any-device"]) == 0
    row = next(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert row["estimate"] == "calibrated" and float(row["tpot_expected_s"]) > float(row["tpot_s"])


def test_figure_overlay_measured_points_and_roofs():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from roofline.figures.measured import draw_measured_roofs, measured_note, measured_series

    h200 = hardware.get_accelerator("h200-sxm")
    points = measured_series(h200, "fp16")  # the table is fp16: same rate as bf16
    assert points is not None and 0 < len(points.x) <= 240 and (points.y > 0).all()
    assert measured_series(hardware.get_accelerator("rtx-a6000"), "fp16") is None
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    assert draw_measured_roofs(ax, h200, "bf16", (0.1, 1e4))  # 4.31 TB/s and 785 TFLOP/s, measured
    assert len(ax.lines) == 2 and not ax.texts  # the values go to the legend note, not onto the plot
    assert measured_note(h200, "bf16").endswith("measured\nceilings (4.31 TB/s,\n785 TFLOP/s)")
    assert not draw_measured_roofs(ax, hardware.get_accelerator("h100-sxm"), "fp16", (0.1, 1e4))  # no ceilings
    plt.close(fig)


def test_communication_rows_keep_their_bound_where_no_collective_was_measured():
    # a device without a table (nothing timed its collectives): the bound itself, labelled default
    rows, _ = estimator.analyze(models.catalog()["llama-3.1-70b"], hardware.get_accelerator("mi300x"), "decode",
                               Scenario(parallel=Parallel(tp=4)))
    comm = [r for r in rows if r["op_class"] == "communication"]
    assert comm and all(r["t_expected_s"] == r["t_s"] and r["estimate"] == "default" for r in comm)


def test_zeros_in_the_text_columns_of_an_older_measured_table_read_as_empty(tmp_path):
    """`roofline measure` before 2026-12-01 wrote 0 into framework / weight_dtype / kv_dtype, which made every GEMM
    and attention lookup miss its curve (the operand "0" matched none): such a table still reads as measured."""
    table = pd.read_csv(shipped_path("h100-sxm"), nrows=50)
    table[["framework", "weight_dtype", "kv_dtype"]] = 0
    path = tmp_path / "old.csv"
    table.to_csv(path, index=False)
    rows = read_table(str(path))
    assert len(rows) == 50 and {(r["framework"], r["weight_dtype"], r["kv_dtype"]) for r in rows} == {("", "", "")}
