"""Golden CLI outputs: the stdout of a fixed set of `roofline` commands, byte for byte.

The commands are in tests/golden/commands.txt (one per line, without the leading `roofline`); each command's
expected stdout is tests/golden/<line number>.out. The outputs were recorded before the package was reorganized
(issue 16), so a refactor that changes a number fails here. A change that moves numbers on purpose regenerates them
with `python tests/test_golden.py --update` and lists what moved in its commit message.

Text is compared byte for byte; numbers are compared to RELATIVE_TOLERANCE, because the last bits of a float's
shortest repr move with NumPy's summation order across releases (NumPy 2.4.6 moved nine outputs by at most 3.4e-14),
while every change of ours that moves a number moves it far more than that.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import shlex
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).parent.parent
#: numbers in an output match a golden one within this relative difference (float noise, not a model change)
RELATIVE_TOLERANCE = 1e-12
#: a number as the outputs print it (CSV, JSON, table): sign, digits, fraction, exponent
_NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def golden_commands() -> list[tuple[int, list[str]]]:
    """(number, argv) for every command line of commands.txt, numbered from 1 in file order."""
    lines = (GOLDEN / "commands.txt").read_text().splitlines()
    commands = [shlex.split(line) for line in lines if line.strip() and not line.startswith("#")]
    return list(enumerate(commands, start=1))


def run_cli(argv: list[str]) -> str:
    """The stdout of `roofline ARGV`, run in this process from the repository root (paths in argv are relative)."""
    from roofline.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    assert status in (0, None), f"roofline {shlex.join(argv)} exited {status}: {err.getvalue()}"
    return out.getvalue()


def same_output(got: str, expected: str) -> bool:
    """True when `got` is `expected` with every number equal to RELATIVE_TOLERANCE and all other text identical."""
    if got == expected:
        return True
    if _NUMBER.split(got) != _NUMBER.split(expected):  # the text between the numbers
        return False
    pairs = zip(_NUMBER.findall(got), _NUMBER.findall(expected), strict=True)
    return all(a == b or math.isclose(float(a), float(b), rel_tol=RELATIVE_TOLERANCE) for a, b in pairs)


def test_same_output_tolerates_float_noise_only():
    assert same_output("x,0.00041416666240152864\n", "x,0.0004141666624015286\n")  # 1.3e-16 apart
    assert not same_output("x,0.000414167\n", "x,0.0004141666624015286\n")  # 8e-9 apart: a real change
    assert not same_output("x,1.5\n", "x,1.5,2\n")  # a number more
    assert not same_output("y,1.5\n", "x,1.5\n")  # other text
    assert not same_output("x,15\n", "x,1.5\n")


@pytest.mark.parametrize("number,argv", golden_commands(), ids=lambda v: str(v) if isinstance(v, int) else None)
def test_cli_output_is_unchanged(number: int, argv: list[str]) -> None:
    expected = (GOLDEN / f"{number}.out").read_text()
    moved = f"stdout of `roofline {shlex.join(argv)}` moved from golden/{number}.out"
    assert same_output(run_cli(argv), expected), moved


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_golden.py --update")
    for number, argv in golden_commands():
        (GOLDEN / f"{number}.out").write_text(run_cli(argv))
        print(f"golden/{number}.out: roofline {shlex.join(argv)}")
