"""The Python API's path through the command line's code: keyword options -> the subcommand's own parser (same
types, defaults and messages) -> its `table(args)` rows -> a DataFrame with its `--format csv` columns."""
from __future__ import annotations

import argparse

from ..engine.errors import RooflineInputError, unknown
from .app import command as command_module
from .options import Parser, in_option_words

#: options the API does not take: it always returns a DataFrame (the csv format's columns)
_NOT_KEYWORDS = ("help", "format")


def frame(command: str, options: dict):
    """`roofline COMMAND` with `options` (keyword -> value) as a pandas DataFrame; notes (such as plan's `reason`) go to
    its `attrs`, but `columns`, which replaces the command's COLUMNS (plan --prefill prints fewer). Bad input raises
    RooflineInputError worded as the command line words it."""
    import pandas  # here, not at import: `import roofline` stays light

    module = command_module(command)
    parser = Parser(prog=f"roofline {command}")
    module.add_arguments(parser)
    argv = _argv(command, parser, options)
    try:
        rows, notes = module.table(parser.parse_args(argv))
    except RooflineInputError as error:
        raise RooflineInputError(in_option_words(error)) from None
    result = pandas.DataFrame(rows, columns=list(notes.pop("columns", module.COLUMNS)))
    result.attrs.update(notes)
    return result


def _argv(command: str, parser: argparse.ArgumentParser, options: dict) -> list[str]:
    """The command line `options` stand for: `seq_len=2048` -> `--seq-len=2048`, `attention_dp=True` -> the flag,
    `attention_dp_balance=True` -> the option alone, `(60, 0)` -> `=60,0` (as any pair of an option whose metavar
    names two values, `batch_wait=(20, 0.9)`),
    a list -> the option repeated (`gpu=[...]`) or its values (`dtypes=[...]`); None leaves the default; the
    command's positional arguments first, in their order (`old=..., new=...`)."""
    options = dict(options)
    actions = {a.dest: a for a in parser._actions if a.option_strings and a.dest not in _NOT_KEYWORDS}
    positional = [a.dest for a in parser._actions if not a.option_strings]  # compare's OLD_RESULTS NEW_RESULTS
    argv = [str(options.pop(name)) for name in positional if options.get(name) is not None]
    for name, value in options.items():
        if name not in actions:
            raise _not_a_keyword(command, name, actions)
        action, option = actions[name], actions[name].option_strings[0]
        if value is None:
            continue
        if action.nargs == 0:  # a flag
            if not isinstance(value, bool):
                raise RooflineInputError(f"{name}: {value!r} is not allowed; expected True or False")
            argv += [option] if value else []
            continue
        if action.nargs == "?":  # a flag that may take a value: True alone, a pair as "a,b" (--attention-dp-balance)
            if isinstance(value, bool):
                argv += [option] if value else []
            else:
                argv.append(f"{option}={','.join(map(str, value)) if isinstance(value, (list, tuple)) else value}")
            continue
        if isinstance(value, (list, tuple)) and "," in (action.metavar or ""):  # a pair option: (20, 0.9) -> 20,0.9
            argv.append(f"{option}={','.join(str(int(v)) if _whole_float(v) else str(v) for v in value)}")
            continue
        values = [value] if isinstance(value, str) or not isinstance(value, (list, tuple)) else list(value)
        values = [int(v) if _whole_float(v) else v for v in values]  # 32.0 users are 32
        if action.nargs == "+":
            argv += [option, *map(str, values)]
        elif isinstance(action, argparse._AppendAction):
            argv += [f"{option}={v}" for v in values]
        elif len(values) != 1 or isinstance(value, (list, tuple)):
            raise RooflineInputError(f"{name}: {value!r} is not allowed; roofline.{command} takes one value here")
        else:
            argv.append(f"{option}={values[0]}")
    return argv


def _whole_float(value) -> bool:
    """A float (Python's or NumPy's, without importing NumPy) that holds a whole number."""
    return (not isinstance(value, (bool, int, str)) and callable(getattr(value, "is_integer", None))
            and bool(value.is_integer()))


def _not_a_keyword(command: str, name: str, actions: dict) -> RooflineInputError:
    if name in _NOT_KEYWORDS:
        return RooflineInputError(f"roofline.{command}: '{name}' is not a keyword here; the function returns a "
                                  "DataFrame with the columns of --format csv")
    return RooflineInputError(unknown(f"roofline.{command}", name, actions).args[0]
                              .replace("unknown value", "unknown keyword"))
