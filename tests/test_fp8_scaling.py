"""Block-scaled fp8 weights (Scenario.fp8_scaling = "block"): the same bounds, the measured block-scaled GEMM
kernels for the expected times (their own curve in the calibration tables), every interface that names it."""
from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from roofline.engine import hardware, models
from roofline.engine.analysis import prepare
from roofline.engine.errors import RooflineInputError
from roofline.engine.graph import build_operators
from roofline.engine.scenario import Scenario
from roofline.estimate.calibration import FP8_BLOCK_OPERAND, curve_key
from roofline.estimate.lookup import calibration_for
from roofline.estimate.step import operand_dtype
from roofline.serving.serve import Workload, prepare_served, serve_aggregated

FP8 = dict(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8")
H100 = hardware.get_accelerator("h100-sxm")


def _row(**fields):
    base = {"op_class": "gemm", "op": "gemm", "dtype": "fp8", "weight_dtype": "fp8", "kv_dtype": "", "group_size": "0"}
    return {**base, **fields}


def test_block_scaled_rows_have_a_curve_of_their_own():
    assert curve_key(_row()) == ("gemm", "fp8", "fp8", "")
    assert curve_key(_row(group_size="128")) == ("gemm", "fp8", FP8_BLOCK_OPERAND, "")
    # int4's group size is its scales' granularity, not another kernel: one curve
    assert curve_key(_row(dtype="bf16", weight_dtype="int4", group_size="128")) == ("gemm", "bf16", "int4", "")
    # MoE tables hold both kinds of fp8 experts as one (the faster per shape)
    assert curve_key(_row(op_class="moe", op="moe", group_size="128")) == ("moe", "fp8", "fp8", "")


def test_block_scaling_keys_the_dense_fp8_gemms_only():
    model = models.get_model("qwen3-30b-a3b")
    scenario = prepare(model, H100, "decode", Scenario(batch=8, seq_len=512, fp8_scaling="block", **FP8))
    ops = {op.name: op for op in build_operators(model, "decode", scenario)}
    assert operand_dtype(ops["q_proj"], scenario, "gemm") == FP8_BLOCK_OPERAND
    assert operand_dtype(ops["router"], scenario, "gemm") == "bf16"  # routers stay 16-bit
    assert operand_dtype(ops["expert_gate_proj"], scenario, "moe") == "fp8"
    tensor = prepare(model, H100, "decode", Scenario(batch=8, seq_len=512, **FP8))
    assert operand_dtype(ops["q_proj"], tensor, "gemm") == "fp8"
    # the bounds do not move: the same operators, bytes and FLOPs
    same = {op.name: op for op in build_operators(model, "decode", tensor)}
    assert all(ops[name].cost == same[name].cost for name in ops)


def _served(scaling: str):
    model = models.get_model("llama-3.1-8b")
    served = prepare_served(model, H100, Scenario(fp8_scaling=scaling, **FP8), framework="trtllm")
    return serve_aggregated(served, Workload(isl=1024, osl=128, concurrency=16))


def test_the_served_row_reads_the_block_scaled_kernels():
    tensor, block = _served("tensor"), _served("block")
    assert (tensor["fp8_scaling"], block["fp8_scaling"]) == ("tensor", "block")
    # the bounds: TTFT and tokens/s alike (the TPOT bound is a lone step at the expected occupancy, which moves)
    assert block["ttft_s"] == tensor["ttft_s"] and block["tokens_per_s"] == tensor["tokens_per_s"]
    assert block["tpot_expected_s"] != tensor["tpot_expected_s"]
    assert block["estimate"] == tensor["estimate"] == "calibrated"


def test_a_table_without_block_scaled_kernels_falls_back_to_its_per_tensor_ones():
    calibration = calibration_for(H100, "trtllm")
    # a table whose fp8 GEMMs are per tensor and int8 (listed first): block-scaled lookups read the per-tensor
    # curve, not exact (a `default` estimate); where it measured them, their own, exact
    grids = {("gemm", "fp8", "int8", ""): "int8 curve", ("gemm", "fp8", "fp8", ""): "per-tensor curve"}
    table = SimpleNamespace(grids=grids)
    assert calibration._grid(table, "gemm", "fp8", FP8_BLOCK_OPERAND, "") == ("per-tensor curve", False)
    grids[("gemm", "fp8", FP8_BLOCK_OPERAND, "")] = "block curve"
    assert calibration._grid(table, "gemm", "fp8", FP8_BLOCK_OPERAND, "") == ("block curve", True)
    assert calibration._grid(table, "gemm", "fp8", "fp8", "") == ("per-tensor curve", True)


def test_native_weights_take_the_checkpoints_scales():
    """weight_dtype native is the checkpoint as stored: DeepSeek-V3's fp8 with its 128 x 128 block scales
    (weight_block_size, models.csv native_fp8_scaling), whatever fp8_scaling says; an explicit fp8 keeps it."""
    deepseek, llama = models.get_model("deepseek-v3"), models.get_model("llama-3.1-8b")
    assert deepseek.native_fp8_scaling == "block" and llama.native_fp8_scaling == ""
    native = Scenario(weight_dtype="native", fp8_scaling="tensor")
    assert native.for_model(deepseek).fp8_scaling == "block" and native.for_model(deepseek).weight_dtype == "fp8"
    assert native.for_model(llama).fp8_scaling == "tensor"  # a 16-bit checkpoint: nothing to scale
    assert Scenario(weight_dtype="fp8").for_model(deepseek).fp8_scaling == "tensor"
    with pytest.raises(RooflineInputError, match=r"native_fp8_scaling: unknown value 'blok' \(did you mean"):
        models.model_from_entry("llama-3.1-8b", {"native_fp8_scaling": "blok"})


def test_the_served_row_of_a_native_block_checkpoint_says_block():
    run = subprocess.run([sys.executable, "-m", "roofline", "serve", "--model", "deepseek-v3", "--gpu", "h200-sxm",
                          "--tp", "8", "--isl", "1024", "--osl", "256", "--concurrency", "16", "--format", "json"],
                         capture_output=True, text=True, check=True)
    row = json.loads(run.stdout)
    row = row[0] if isinstance(row, list) else row
    assert (row["weight_dtype"], row["fp8_scaling"]) == ("fp8", "block")


def test_bad_fp8_scaling_is_one_line():
    message = r"scenario\.fp8_scaling: unknown value 'blocks' \(did you mean 'block'\?\)"
    with pytest.raises(RooflineInputError, match=message):
        Scenario(fp8_scaling="blocks").validate()


@pytest.mark.parametrize("command", [
    ["serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "512", "--osl", "64", "--concurrency", "4",
     "--weight-dtype", "fp8", "--kv-dtype", "fp8", "--framework", "trtllm", "--format", "json"],
    ["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "512", "--osl", "64", "--max-devices", "1",
     "--weight-dtypes", "fp8", "--kv-dtypes", "fp8", "--framework", "trtllm", "--top", "1", "--format", "json"],
])
def test_serve_and_plan_take_fp8_scaling(command):
    run = subprocess.run([sys.executable, "-m", "roofline", *command, "--fp8-scaling", "block"],
                         capture_output=True, text=True, check=True)
    rows = json.loads(run.stdout)
    rows = rows if isinstance(rows, list) else [rows]
    assert rows and all(r["fp8_scaling"] == "block" for r in rows)
    bad = subprocess.run([sys.executable, "-m", "roofline", *command, "--fp8-scaling", "blok"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "block" in bad.stderr


def test_totals_take_fp8_scaling():
    args = ["totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode", "--batch", "16",
            "--weight-dtype", "fp8", "--act-dtype", "fp8", "--kv-dtype", "fp8", "--framework", "trtllm",
            "--format", "json"]
    rows = [json.loads(subprocess.run([sys.executable, "-m", "roofline", *args, "--fp8-scaling", scaling],
                                      capture_output=True, text=True, check=True).stdout)
            for scaling in ("tensor", "block")]
    assert rows[0]["t_s"] == rows[1]["t_s"]  # the bound
    assert rows[0]["tpot_expected_s"] != rows[1]["tpot_expected_s"]
    assert rows[0]["estimate"] == rows[1]["estimate"] == "calibrated"


@pytest.mark.parametrize("command, weights", [
    (["totals", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode", "--weight-dtype", "bf16"],
     "bf16"),
    (["ops", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--stage", "decode"], "fp16"),  # native: 16-bit
    (["serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "512", "--osl", "64", "--concurrency", "4",
      "--weight-dtype", "int4"], "int4"),
    # fp8 experts only: the MoE tables hold one fp8 curve, so block changed nothing there either
    (["serve", "--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--isl", "512", "--osl", "64", "--concurrency", "4",
      "--weight-dtype", "bf16", "--expert-weight-dtype", "fp8"], "bf16"),
    (["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "512", "--osl", "64", "--dtypes", "fp16",
      "int4"], "fp16, int4"),
])
def test_block_scales_without_fp8_weights_are_refused(command, weights):
    # --fp8-scaling block scales fp8 dense and attention weights; asked of bf16, int4, a 16-bit checkpoint or fp8
    # experts alone it did nothing, and the served row said fp8_scaling block
    run = subprocess.run([sys.executable, "-m", "roofline", *command, "--fp8-scaling", "block"],
                         capture_output=True, text=True)
    give = "fp8 in --weight-dtypes or --dtypes" if command[0] == "plan" else "--weight-dtype fp8"
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        f"roofline: error: --fp8-scaling: block scales fp8 dense and attention weights, and these are {weights}; "
        f"give fp8 weights ({give}) or leave --fp8-scaling out"]


def test_block_scales_of_fp8_attention_or_a_native_fp8_checkpoint_stand():
    for extra in (["--model", "llama-3.1-8b", "--weight-dtype", "bf16", "--attention-weight-dtype", "fp8"],
                  ["--model", "deepseek-v3", "--tp", "8"]):
        run = subprocess.run([sys.executable, "-m", "roofline", "totals", "--gpu", "h200-sxm", "--stage", "decode",
                              *extra, "--fp8-scaling", "block", "--format", "json"], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr


def test_the_report_names_block_scales_with_the_weights():
    from roofline.display import weights_label

    assert weights_label({"weight_dtype": "fp8", "fp8_scaling": "block"}) == "fp8 (block scales)"
    assert weights_label({"weight_dtype": "fp8", "fp8_scaling": "tensor"}) == "fp8"
    assert weights_label({"weight_dtype": "bf16", "fp8_scaling": "block"}) == "bf16"  # nothing to scale


def test_a_measured_run_of_its_own_fp8_weights_keeps_the_configured_scales():
    """A run that names its weights (fp8) is predicted as `--weight-dtype fp8` serves: its scales as configured,
    whatever the config's weight_dtype (native: the checkpoint's block scales) would resolve to."""
    from roofline.serving.measured import MeasuredRun, predict_run

    model, gpu = models.get_model("deepseek-v3"), hardware.get_accelerator("h200-sxm")
    run = MeasuredRun(source="x", model="deepseek-v3", gpu="h200-sxm", tp=8, isl=1024, osl=256, concurrency=16,
                      ttft_s=0.5, tpot_s=0.03, tokens_per_s=500.0, framework="trtllm", weight_dtype="fp8")
    native, explicit = (predict_run(model, gpu, Scenario(weight_dtype=w, kv_dtype="fp8"), run)
                        for w in ("native", "fp8"))
    assert native["tpot_expected_s"] == explicit["tpot_expected_s"]
    # without a dtype of its own the run is the config's native checkpoint: block-scaled, priced apart
    run = MeasuredRun(**{**run.__dict__, "weight_dtype": "", "source": "y"})
    block = predict_run(model, gpu, Scenario(weight_dtype="native", act_dtype="fp8", kv_dtype="fp8"), run)
    tensor = predict_run(model, gpu, Scenario(weight_dtype="fp8", act_dtype="fp8", kv_dtype="fp8"), run)
    assert block["tpot_expected_s"] != tensor["tpot_expected_s"]


def test_an_empty_allowed_value_is_named_in_the_error_line():
    # models.<key>.native_fp8_scaling allows '' (none): the list shows it as '', not as a bare leading comma
    from roofline.engine.errors import unknown

    message = unknown("models.m.native_fp8_scaling", "blok", ["", "tensor", "block"]).args[0]
    assert message.endswith("allowed: '', block, tensor") and "did you mean 'block'" in message
