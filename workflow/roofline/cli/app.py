"""`roofline`: one-off questions from the command line (per-operator table, totals, ridge points, catalogs).

Every bad input ends in one line on stderr naming the option, the value and what is allowed, and exit status 2.
The parser only dispatches: each subcommand is a module with HELP, add_arguments(parser) and run(args) -> text.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType

from ..engine.errors import RooflineInputError
from .options import Parser, in_option_words

#: subcommand -> the name of its module in this package, in the order of `roofline --help`
COMMANDS = {"ops": "ops", "totals": "totals", "ridge": "ridge", "plan": "plan", "serve": "serve",
            "compare": "compare", "measure": "measure", "calibrate": "calibrate", "list": "listing"}


def command(name: str) -> ModuleType:
    """The module of subcommand `name`, imported on first use: a one-shot `roofline totals` does not load the
    serving model's modules that `plan` and `serve` need (~60 ms of a ~0.3 s command)."""
    return importlib.import_module(f".{COMMANDS[name]}", __package__)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or where `argv` names one, of that one only (the others are listed in the
    usage line but not loaded; `roofline --help` and a misspelt command load them all)."""
    parser = Parser(prog="roofline", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    named = next((word for word in argv or () if not word.startswith("-")), None)
    for name in COMMANDS:
        if named in COMMANDS and name != named:
            sub.add_parser(name)
            continue
        module = command(name)
        module.add_arguments(sub.add_parser(name, help=module.HELP))
    return parser


def _version() -> str:
    import importlib.metadata  # only for --version: it costs a one-shot command ~30 ms

    try:
        return importlib.metadata.version("llm-roofline")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without `pip install`
        return "(not installed)"


class _Version(argparse.Action):
    """--version, the package version looked up only when asked."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"roofline {_version()}")
        parser.exit()


def run(argv: list[str] | None = None) -> str:
    """Execute one command and return its output text (raises RooflineInputError on bad input)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser(argv).parse_args(argv)
    except RooflineInputError:
        build_parser().parse_args(argv)  # words the error with every command loaded ("it belongs to: ...")
        raise
    return command(args.command).run(args)


def main(argv: list[str] | None = None) -> int:
    try:
        print(run(argv))
    except RooflineInputError as error:
        print(f"roofline: error: {in_option_words(error)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
