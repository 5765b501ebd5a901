"""Defects of the command line found in review: each check names the option it concerns, in one line, exit 2."""
import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from roofline.cli import app as cli
from roofline.cli import scenario
from roofline.engine import hardware
from roofline.engine.errors import RooflineInputError
from roofline.estimate import aic_source
from roofline.estimate.calibration import data_dir

ROOT = Path(__file__).resolve().parent.parent
H200_VLLM, H200_SGLANG = (str(data_dir() / f"h200-sxm.{fw}.csv.gz") for fw in ("vllm", "sglang"))
SERVE = ["serve", "--model", "llama-3.1-8b", "--isl", "1024", "--osl", "128", "--concurrency", "4"]
DISAGG = ["serve", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--tp", "8", "--isl", "1024", "--osl", "1024",
          "--concurrency", "64", "--mode", "disaggregated"]


def _error(capsys, *argv) -> str:
    """The one error line of `roofline ARGV` (exit status 2)."""
    assert cli.main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_serve_refuses_a_table_of_another_device(capsys):
    err = _error(capsys, *SERVE, "--gpu", "mi300x", "--calibration", H200_VLLM)
    assert err.startswith("roofline: error: --calibration: ") and "measured on h200-sxm, not on mi300x" in err
    assert "--calibration-any-device" in err
    assert "needs --calibration" in _error(capsys, *SERVE, "--gpu", "h200-sxm", "--calibration-any-device")


def test_a_table_of_another_framework_is_refused_under_an_explicit_framework(capsys):
    for command in (SERVE + ["--gpu", "h200-sxm"], ["totals", "--model", "llama-3.1-8b", "--gpu", "h200-sxm",
                                                    "--stage", "decode"]):
        err = _error(capsys, *command, "--framework", "vllm", "--calibration", H200_SGLANG)
        assert "--calibration: " in err and "measured under sglang, not under vllm (--framework)" in err
        assert "--calibration-any-device" in err


def test_any_device_lets_serve_apply_a_foreign_table():
    """The check itself (a full serve on another chip's table refits it: ~10 s)."""
    args = argparse.Namespace(calibration=H200_SGLANG, calibration_any_device=True, framework="vllm")
    gpu = scenario.calibrated(hardware.catalog()["mi300x"], args)
    assert gpu.calibration == str(Path(H200_SGLANG).resolve()) and gpu.calibration_any_device
    with pytest.raises(RooflineInputError, match="not on mi300x"):
        scenario.calibrated(hardware.catalog()["mi300x"], argparse.Namespace(**{**vars(args),
                                                                                "calibration_any_device": False}))


def test_the_aic_install_line_is_the_pin_of_the_extra(monkeypatch):
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["aic"]
    assert aic_source.INSTALL == f"pip install {extra[0]}" and len(extra) == 1  # llm-roofline is not on PyPI
    monkeypatch.setattr(aic_source.importlib.util, "find_spec", lambda name: None)
    aic_source.package_root.cache_clear()
    try:
        with pytest.raises(RooflineInputError, match=r"install it: pip install aiconfigurator-core==0\.12\.0$"):
            aic_source.package_root()
    finally:
        aic_source.package_root.cache_clear()


def test_a_misspelt_draft_model_names_its_option(capsys):
    argv = ["serve", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "128",
            "--concurrency", "4", "--spec-method", "draft", "--spec-tokens", "3", "--spec-acceptance", "0.7",
            "--spec-draft-model"]
    err = _error(capsys, *argv, "llama-3.2-1bb")
    assert err.startswith("roofline: error: --spec-draft-model: unknown value 'llama-3.2-1bb'")
    assert _error(capsys, *argv, "/nonexistent/config.json").startswith("roofline: error: --spec-draft-model: ")


@pytest.mark.parametrize("options, named", [
    (["--prefill-attention-dp"], "--prefill-attention-dp: "),
    (["--prefill-ep", "2"], "--prefill-ep: "),  # ep on a dense model
    (["--prefill-tp", "3"], "--prefill-tp: "),  # 3 does not divide 64 heads
    (["--prefill-pp", "100"], "--prefill-pp: "),  # 80 layers
])
def test_a_bad_prefill_plan_names_its_prefill_option(capsys, options, named):
    err = _error(capsys, *DISAGG, *options)
    assert err.startswith(f"roofline: error: {named}prefill plan (tp ")


def test_disaggregated_pools_are_capped_without_max_devices(capsys):
    err = _error(capsys, *DISAGG, "--prefill-workers", "1000", "--decode-workers", "1000")
    assert "--prefill-workers / --decode-workers: 1000 x 8 + 1000 x 8 = 16000 devices, more than 4096" in err
    assert "--max-devices: 5000 is not allowed" in _error(capsys, *DISAGG, "--max-devices", "5000")


def test_plan_refuses_disaggregated_within_one_device(capsys):
    err = _error(capsys, "plan", "--model", "llama-3.1-8b", "--gpu", "h200-sxm", "--isl", "1024", "--osl", "128",
                 "--mode", "disaggregated", "--max-devices", "1")
    assert err.startswith("roofline: error: --max-devices: 1 is not allowed with --mode disaggregated")
    assert "at least 2 devices" in err


def test_python_dash_m_roofline_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "roofline", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: roofline"), done.stderr


# Fifth review (a new user's pass over the README, 2026-12-02)
def test_an_option_given_twice_is_refused_not_overridden(capsys):
    # argparse keeps the last of two values: `serve --gpu h100-sxm --gpu h200-sxm` served on the H200 alone
    err = _error(capsys, *SERVE, "--gpu", "h100-sxm", "--gpu", "h200-sxm")
    assert "--gpu: given more than once; it takes one value (one command serves one device)" in err
    err = _error(capsys, "totals", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "decode", "--batch", "2",
                 "--batch=4")
    assert "--batch: given more than once" in err
    # options that collect values stay repeatable
    assert cli.main(["plan", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu", "h200-sxm", "--isl", "128",
                     "--osl", "128", "--top", "1", "--format", "csv"]) == 0


def test_options_are_spelt_out(capsys):
    # `--prefill` on serve was argparse's "ambiguous option" among the --prefill-* options; `--conc` was accepted
    err = _error(capsys, *SERVE, "--gpu", "h100-sxm", "--prefill", "interleaved")
    assert "option '--prefill' is not accepted here; it belongs to: plan" in err
    err = _error(capsys, "serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "128", "--osl", "128",
                 "--conc", "4")
    assert "unrecognized option '--conc' (did you mean '--concurrency'?)" in err


def test_spec_tokens_need_a_method(capsys):
    assert "--spec-tokens: only with --spec-method" in _error(capsys, *SERVE, "--gpu", "h100-sxm", "--spec-tokens", "4")


def test_library_field_names_become_options(capsys):
    err = _error(capsys, *SERVE, "--gpu", "h100-sxm", "--tp", "2", "--ep", "4")
    assert err.startswith("roofline: error: --tp/--pp/--ep: ep 4 does not divide tp 2")
    err = _error(capsys, "totals", "--model", "no/such/config.json", "--gpu", "h100-sxm", "--stage", "decode")
    assert err.startswith("roofline: error: --model: file 'no/such/config.json' does not exist (give a catalog key")
    # an fp4 recipe on a device without fp4 suggests the narrowest float it computes, not fp32
    err = _error(capsys, *SERVE, "--gpu", "h100-sxm", "--weight-dtype", "nvfp4", "--act-dtype", "nvfp4")
    assert err.rstrip().endswith("try --weight-dtype/--act-dtype/--kv-dtype fp8")
    # fp16 on a device that publishes bf16 and fp8 (Gaudi 3) suggests bf16, the same width, not the narrowest float
    err = _error(capsys, *SERVE, "--gpu", "gaudi3", "--weight-dtype", "fp16")
    assert "has no fp16 peak" in err and err.rstrip().endswith("try --weight-dtype/--act-dtype/--kv-dtype bf16")


def test_tables_print_a_dash_where_a_value_does_not_apply(capsys):
    assert cli.main([*SERVE, "--gpu", "h100-sxm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "nan" not in " ".join(lines) and any(line.split() == ["request_rate", "-"] for line in lines)
    keys = [line.index(line.split()[1]) for line in lines]  # every value starts in one column
    assert len(set(keys)) == 1


def _csv(capsys, *argv) -> list[dict]:
    import csv
    import io
    assert cli.main([*argv, "--format", "csv"]) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


@pytest.mark.parametrize("gpu", ["gaudi2", "tpu-v5p"])
def test_the_default_16_bit_float_is_the_devices_own(capsys, gpu):
    # a bf16-only device (no fp16 peak) ran nothing with default options: "--act-dtype fp16" was refused for a
    # bf16 checkpoint (Llama-3.1-8B); the unset 16-bit dtypes now take bf16 there, as if given
    for command in (["totals", "--stage", "decode"], ["ops", "--stage", "prefill", "--seq-len", "512"]):
        argv = [*command, "--model", "llama-3.1-8b", "--gpu", gpu]
        assert _csv(capsys, *argv) == _csv(capsys, *argv, "--act-dtype", "bf16", "--kv-dtype", "bf16")
    served = _csv(capsys, *SERVE, "--gpu", gpu)[0]
    assert (served["weight_dtype"], served["act_dtype"], served["kv_dtype"]) == ("bf16", "bf16", "bf16")
    assert _csv(capsys, *SERVE, "--gpu", "h100-sxm")[0]["kv_dtype"] == "fp16"  # fp16 where the device has it
    # weight-only integer recipes compute at the device's 16-bit float too (W8A16 was W8A fp16 everywhere)
    served = _csv(capsys, *SERVE, "--gpu", gpu, "--weight-dtype", "int8")[0]
    assert (served["weight_dtype"], served["act_dtype"]) == ("int8", "bf16")


@pytest.mark.parametrize("gpu", ["tpu-v5e", "gaudi3"])
def test_the_plan_searches_the_devices_own_16_bit_float(capsys, gpu):
    # a default `plan` on a TPU found no candidate at all ("none of tpu-v5e computes at the dtypes asked"): its
    # default lists name fp16 for weights and KV cache, a dtype the TPU publishes no peak for; on a Gaudi 3 it
    # searched fp8 alone. The search's 16-bit float is now the device's own (bf16 there, fp16 on an H100)
    argv = ["plan", "--model", "llama-3.1-8b", "--isl", "1024", "--osl", "256", "--top", "0", "--gpu"]
    rows = _csv(capsys, *argv, gpu)
    recipes = {(r["weight_dtype"], r["act_dtype"]) for r in rows}
    assert ("bf16", "bf16") in recipes and not any("fp16" in recipe for recipe in recipes)
    assert all(r["kv_dtype"] != "fp16" for r in rows)
    assert "fp16" in {r["act_dtype"] for r in _csv(capsys, *argv, "h100-sxm")}
    asked = _csv(capsys, *argv, "h100-sxm", "--dtypes", "bf16")
    assert asked and {r["weight_dtype"] for r in asked} == {"bf16"}


def test_the_default_sequence_length_stays_inside_a_short_context(capsys):
    # GPT-2 has 1,024 positions, OPT 2,048: the default 2,048 was refused though the user gave no --seq-len
    for model, stage, length in (("gpt2", "prefill", 1024), ("gpt2", "decode", 1023), ("opt-6.7b", "decode", 2047)):
        argv = ["totals", "--model", model, "--gpu", "h100-sxm", "--stage", stage]
        default = _csv(capsys, *argv)
        assert default == _csv(capsys, *argv, "--seq-len", str(length))
    assert cli.main(["totals", "--model", "gpt2", "--gpu", "h100-sxm", "--stage", "decode"]) == 0
    assert "note: --seq-len 1023" in capsys.readouterr().err
    assert "--seq-len: 2048 is not allowed" in _error(capsys, "totals", "--model", "opt-6.7b", "--gpu", "h100-sxm",
                                                       "--stage", "decode", "--seq-len", "2048")


def test_fp8_weights_serve_weight_only_where_the_device_has_no_fp8_peak(capsys):
    # an FP8 checkpoint on an A100 (or a TPU v5e) was refused by `serve` ("no fp8 peak") and found no candidate in
    # `plan --weight-dtypes fp8`: vLLM and SGLang serve it W8A16 there (FP8 Marlin). In a search that has int8
    # weights too, the same recipe with int8 weights stands for it (same bytes, same 16-bit compute)
    served = _csv(capsys, *SERVE, "--gpu", "a100-sxm-80gb", "--weight-dtype", "fp8")[0]
    assert (served["weight_dtype"], served["act_dtype"]) == ("fp8", "fp16")
    assert _csv(capsys, *SERVE, "--gpu", "h100-sxm", "--weight-dtype", "fp8")[0]["act_dtype"] == "fp8"
    argv = ["plan", "--model", "llama-3.1-8b", "--isl", "1024", "--osl", "256", "--top", "0", "--gpu"]
    fp8 = _csv(capsys, *argv, "a100-sxm-80gb", "--weight-dtypes", "fp8")
    assert fp8 and {(r["weight_dtype"], r["act_dtype"]) for r in fp8} == {("fp8", "fp16")}
    both = _csv(capsys, *argv, "a100-sxm-80gb", "--weight-dtypes", "fp8", "int8")
    assert both and {r["weight_dtype"] for r in both} == {"int8"}


@pytest.mark.parametrize("gpu", ["rtx-a6000", "mi250x"])
def test_fp8_weight_only_is_priced_as_the_int8_it_stands_in_for(capsys, gpu):
    # a search with both keeps int8's row for fp8 weight-only; their expected times differed by 6% (A6000) and 24%
    # (MI250X): fp8 weights at 16-bit compute fell back to the dense bf16 GEMM curve, int8 read the weight-only one.
    # Now fp8 weight-only reads the int8 weight-only curve (a stand-in, `default`)
    rows = {w: _csv(capsys, *SERVE, "--gpu", gpu, "--weight-dtype", w)[0] for w in ("fp8", "int8")}
    assert rows["fp8"]["act_dtype"] == rows["int8"]["act_dtype"] == "fp16"
    assert float(rows["fp8"]["tpot_expected_s"]) == pytest.approx(float(rows["int8"]["tpot_expected_s"]), rel=1e-9)


def test_a_measured_fp8_run_on_a_tpu_is_predicted_at_bf16():
    # the pipeline's measured runs took the recipe's literal fp16 for weight-only activations: an fp8 run on a TPU
    # v5e was refused ("no fp16 peak") where `serve` serves it at bf16
    from roofline.engine.models import get_model
    from roofline.engine.scenario import Scenario
    from roofline.serving.measured import MeasuredRun

    run = MeasuredRun(source="runs.csv line 2", model="llama-3.1-8b", gpu="tpu-v5e", tp=1, isl=1024, osl=256,
                      concurrency=8, ttft_s=0.1, tpot_s=0.01, tokens_per_s=800.0, weight_dtype="fp8")
    base = Scenario(weight_dtype="bf16", act_dtype="bf16", kv_dtype="bf16").for_model(get_model("llama-3.1-8b"))
    scenario = run.scenario(base, hardware.get_accelerator("tpu-v5e"))
    assert (scenario.weight_dtype, scenario.act_dtype) == ("fp8", "bf16")
