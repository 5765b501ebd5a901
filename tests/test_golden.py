"""Golden CLI outputs: the stdout of a fixed set of `roofline` commands, byte for byte.

The commands are in tests/golden/commands.txt (one per line, without the leading `roofline`); each command's
expected stdout is tests/golden/<line number>.out. The outputs were recorded before the package was reorganized
(issue 16), so a refactor that changes a number fails here. A change that moves numbers on purpose regenerates them
with `python tests/test_golden.py --update` and lists what moved in its commit message.
"""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).parent.parent


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


@pytest.mark.parametrize("number,argv", golden_commands(), ids=lambda v: str(v) if isinstance(v, int) else None)
def test_cli_output_is_unchanged(number: int, argv: list[str]) -> None:
    expected = (GOLDEN / f"{number}.out").read_text()
    assert run_cli(argv) == expected, f"stdout of `roofline {shlex.join(argv)}` moved from golden/{number}.out"


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_golden.py --update")
    for number, argv in golden_commands():
        (GOLDEN / f"{number}.out").write_text(run_cli(argv))
        print(f"golden/{number}.out: roofline {shlex.join(argv)}")
