"""The Python API (`roofline.ops`, `roofline.totals`, `roofline.plan`): the same columns and values as the command's
`--format csv`, the same one-line errors, and an `import roofline` that loads nothing heavy."""
import contextlib
import inspect
import io
import subprocess
import sys

import pandas as pd
import pytest

import roofline
from roofline.cli import app as cli
from roofline.engine.errors import RooflineInputError


def cli_csv(argv: list[str]) -> pd.DataFrame:
    """`roofline ARGV --format csv` parsed with pandas."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main([*argv, "--format", "csv"]) == 0
    return pd.read_csv(io.StringIO(out.getvalue()))


def cli_error(argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        assert cli.main(argv) == 2
    return err.getvalue().strip().removeprefix("roofline: error: ")


def assert_same_table(api: pd.DataFrame, command: pd.DataFrame) -> None:
    assert list(api.columns) == list(command.columns)
    assert len(api) == len(command) > 0
    # the CSV cannot say whether 1 was an int or 1.0 a float: compare values, not dtypes
    pd.testing.assert_frame_equal(api.reset_index(drop=True), command, check_dtype=False, check_exact=True)


CASES = [
    ("totals", dict(model="llama-3.1-8b", gpu="h100-sxm", stage="decode"),
     "totals --model llama-3.1-8b --gpu h100-sxm --stage decode"),
    ("totals", dict(model="llama-3.1-70b", gpu="h100-sxm", stage="prefill", tp=4, seq_len=8192, kv_dtype="fp8"),
     "totals --model llama-3.1-70b --gpu h100-sxm --stage prefill --tp 4 --seq-len 8192 --kv-dtype fp8"),
    ("ops", dict(model="llama-2-7b", gpu="rtx-a6000", stage="prefill"),
     "ops --model llama-2-7b --gpu rtx-a6000 --stage prefill"),
    ("ops", dict(model="deepseek-v3", gpu="h200-sxm", stage="decode", tp=8, ep=8, attention_dp=True, batch=256),
     "ops --model deepseek-v3 --gpu h200-sxm --stage decode --tp 8 --ep 8 --attention-dp --batch 256"),
    ("ops", dict(model="qwen3-30b-a3b", gpu="h100-sxm", stage="decode", batch=16, weight_dtype="int4",
                 memory_utilization=0.8), "ops --model qwen3-30b-a3b --gpu h100-sxm --stage decode --batch 16 "
                                          "--weight-dtype int4 --memory-utilization 0.8"),
    ("plan", dict(model="llama-3.1-70b", gpu=["h100-sxm", "h200-sxm"], isl=1024, osl=1024, tpot_ms=50, top=5),
     "plan --model llama-3.1-70b --gpu h100-sxm --gpu h200-sxm --isl 1024 --osl 1024 --tpot-ms 50 --top 5"),
    ("plan", dict(model="mixtral-8x7b", gpu="h100-sxm", isl=4096, osl=512, dtypes=["fp16", "fp8"],
                  prefill="interleaved", top=3),
     "plan --model mixtral-8x7b --gpu h100-sxm --isl 4096 --osl 512 --dtypes fp16 fp8 --prefill interleaved --top 3"),
]


@pytest.mark.parametrize("function,options,command", CASES, ids=[c[2] for c in CASES])
def test_api_returns_the_csv_of_the_same_command(function, options, command):
    api = getattr(roofline, function)(**options)
    assert isinstance(api, pd.DataFrame)
    assert_same_table(api, cli_csv(command.split()))


def test_acceptance_example_is_one_row_with_the_csv_columns():
    result = roofline.totals(model="llama-3.1-8b", gpu="h100-sxm", stage="decode")
    header = cli_csv("totals --model llama-3.1-8b --gpu h100-sxm --stage decode".split()).columns
    assert len(result) == 1 and list(result.columns) == list(header)


def test_positional_arguments_and_defaults_are_the_commands():
    assert_same_table(roofline.ops("llama-2-7b", "h100-sxm", "decode", batch=None),
                      cli_csv("ops --model llama-2-7b --gpu h100-sxm --stage decode".split()))


@pytest.mark.parametrize("function,options,argv", [
    ("totals", dict(model="llama-2-7b", gpu="h100-sxm", stage="decode", batch=0),
     "totals --model llama-2-7b --gpu h100-sxm --stage decode --batch 0"),
    ("totals", dict(model="llama-2-7b", gpu="h100-sxm", stage="prefill", seq_len=10**6),
     "totals --model llama-2-7b --gpu h100-sxm --stage prefill --seq-len 1000000"),
    ("ops", dict(model="lama-2-7b", gpu="h100-sxm", stage="decode"),
     "ops --model lama-2-7b --gpu h100-sxm --stage decode"),
    ("ops", dict(model="llama-2-7b", gpu="h100-sxm", stage="decode", parallel="auto", tp=2),
     "ops --model llama-2-7b --gpu h100-sxm --stage decode --parallel auto --tp 2"),
    ("plan", dict(model="llama-3.1-8b", gpu="l40s", isl=512, osl=256, dtypes=["fp9"]),
     "plan --model llama-3.1-8b --gpu l40s --isl 512 --osl 256 --dtypes fp9"),
])
def test_bad_input_raises_the_command_lines_message(function, options, argv):
    with pytest.raises(RooflineInputError) as caught:
        getattr(roofline, function)(**options)
    assert str(caught.value) == cli_error(argv.split())
    assert roofline.RooflineInputError is RooflineInputError


def test_keywords_are_the_options():
    with pytest.raises(RooflineInputError, match=r"roofline.totals: unknown keyword 'bach' \(did you mean 'batch'\?\)"):
        roofline.totals("llama-2-7b", "h100-sxm", "decode", bach=8)
    with pytest.raises(RooflineInputError, match="'format' is not a keyword here"):
        roofline.ops("llama-2-7b", "h100-sxm", "decode", format="csv")
    with pytest.raises(RooflineInputError, match="attention_dp: 'yes' is not allowed; expected True or False"):
        roofline.ops("llama-2-7b", "h100-sxm", "decode", attention_dp="yes")


@pytest.mark.parametrize("function", ["ops", "totals", "plan", "serve"])
def test_docstrings_name_every_option(function):
    parser = cli.build_parser()
    command = next(a.choices for a in parser._actions if isinstance(a.choices, dict))[function]
    named = set(inspect.signature(getattr(roofline, function)).parameters)
    doc = getattr(roofline, function).__doc__
    missing = [a.dest for a in command._actions if a.option_strings and a.dest not in ("help", "format")
               and a.dest not in named and a.dest not in doc]
    assert not missing, f"roofline.{function}'s docstring does not name {missing}"


def test_empty_plan_says_why_in_attrs():
    result = roofline.plan("llama-3.1-8b", "l40s", isl=512, osl=256, tpot_ms=0.001)
    assert result.empty and list(result.columns) == list(cli_csv(
        "plan --model llama-3.1-8b --gpu l40s --isl 512 --osl 256".split()).columns)
    assert result.attrs["reason"].startswith("no plan meets TPOT") and result.attrs["evaluated"] > 0


def test_import_roofline_loads_nothing_heavy():
    code = ("import sys, roofline; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('roofline', 'pandas', 'numpy', 'yaml', 'typing', 'argparse'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == ["roofline"]


def test_serve_says_why_an_open_loop_does_not_keep_up_and_lists_take_spaces():
    import roofline

    # 500 requests/s of 1024 + 256 tokens on one H100: far past what it completes; the command's stderr note rides
    # in attrs (it had been lost to the Python API)
    flooded = roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=256, request_rate=500)
    assert flooded.attrs["reason"].startswith("1 x H100 SXM5 80GB completes at most ")
    assert "the queue grows without end" in flooded.attrs["reason"]
    assert roofline.serve(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=256, concurrency=4).attrs["reason"] == ""
    # "fp8 fp16" as the README writes a list (it had been one unknown value)
    spaced = roofline.plan(model="llama-3.1-8b", gpu="h100-sxm", isl=1024, osl=256, max_devices=1, top=0,
                           weight_dtypes="fp8 fp16", kv_dtypes="fp8")
    assert set(spaced["weight_dtype"]) <= {"fp8", "fp16"} and len(spaced) > 0
