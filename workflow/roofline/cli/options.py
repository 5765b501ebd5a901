"""What every subcommand shares on the way in: the one-line-error parser, typed options, option text as specs, and
errors worded as the options that fix them."""
from __future__ import annotations

import argparse
import difflib
import math
import re
from pathlib import Path

from ..engine import hardware, models
from ..engine.errors import RooflineInputError, unknown

FORMATS = ("table", "csv", "json")
#: a word that is an option's negative value, not an option: a dash, then a digit, a point or inf/nan
NEGATIVE_VALUE = re.compile(r"-(\d|\.\d|inf|nan)", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: every parse error is a RooflineInputError naming the option. Options are
    spelt out (no abbreviations: `--prefill` on `serve` is another command's option, not a guess among its
    `--prefill-*`), and an option that takes one value is refused when given twice (argparse keeps the last)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args=None, namespace=None):
        if args is not None:
            args = self._negative_values(list(args))
            self._refuse_repeats(args)
            self._given = list(args)
        return super().parse_known_args(args, namespace)

    def _negative_values(self, args: list[str]) -> list[str]:
        """`--option -1,0.5` as `--option=-1,0.5` where the option takes a value: argparse reads a word that starts
        with a dash and is not a plain negative number as another option ("expected one argument"), so the range
        check that names what is allowed never saw it."""
        out = []
        for i, word in enumerate(args):
            if word == "--":  # what follows is positional
                return out + args[i:]
            action = self._option_string_actions.get(out[-1]) if out and out[-1].startswith("--") else None
            if action is not None and action.nargs != 0 and NEGATIVE_VALUE.match(word):
                out[-1] = f"{out[-1]}={word}"
                continue
            out.append(word)
        return out

    def _refuse_repeats(self, args: list[str]) -> None:
        repeatable = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
                      argparse._HelpAction, argparse._VersionAction)
        seen = {}
        for word in args:
            if word == "--":
                break
            name = word.split("=", 1)[0]
            action = self._option_string_actions.get(name) if name.startswith("--") else None
            if action is None or isinstance(action, repeatable):
                continue
            if action.dest in seen:
                also = "" if seen[action.dest] == name else f" (as {seen[action.dest]})"
                takes = (f"give every value after one {name}" if action.nargs in ("+", "*")
                         else "it takes one value" + (" (one command serves one device)" if name == "--gpu" else ""))
                raise RooflineInputError(f"{name}: given more than once{also}; {takes}")
            seen[action.dest] = name

    def error(self, message):  # one line, not usage + error
        # argparse prefixes type errors with "argument --x: "; our messages already start with "--x: "
        message = message.removeprefix("argument ")
        option, _, rest = message.partition(": ")
        if message.startswith("unrecognized arguments: "):
            raise self._unrecognized(message.removeprefix("unrecognized arguments: ").split()[0])
        if match := re.fullmatch(r"command: invalid choice: '(.*)' \(choose from (.*)\)", message, re.S):
            raise unknown("command", match.group(1), re.findall(r"'([^']*)'", match.group(2)))
        if message == "the following arguments are required: command":
            raise RooflineInputError(f"missing command; allowed: {', '.join(self._commands())} (or --version)")
        if match := re.fullmatch(r"the following arguments are required: (\w+(\|\w+)+)", message):
            raise RooflineInputError(f"missing argument: {match.group(1).replace('|', ' or ')}")
        if not option.startswith("-") and re.match(r"[\w-]+: ", rest):  # a positional's own check names itself
            raise RooflineInputError(rest)
        raise RooflineInputError(rest if rest.startswith(option + ": ") else message)

    def _unrecognized(self, word: str) -> RooflineInputError:
        owners = self._commands_taking(word)
        if owners:  # a real option, given to a command that does not take it
            return RooflineInputError(f"option '{word}' is not accepted here; it belongs to: {', '.join(owners)}")
        command = self._command_before(word)
        actions = self._commands()[command]._actions if command else self._actions  # before the command: its own
        options = sorted({o for action in actions for o in action.option_strings if o != "-h"})
        close = _closest_option(word, options)
        hint = f" (did you mean '{close}'?)" if close else ""
        return RooflineInputError(f"unrecognized option '{word}'{hint}; "
                                  f"allowed{f' with {command}' if command else ''}: {', '.join(options)}")

    def _command_before(self, option: str) -> str:
        """The sub-command `option` was given to ("" when it came before any): argparse reports an unknown option
        on the top parser, which must not suggest another command's options."""
        commands = self._commands()
        for word in getattr(self, "_given", ()):
            if word.split("=", 1)[0] == option.split("=", 1)[0]:
                return ""
            if word in commands:
                return word
        return ""

    def _commands(self) -> dict:
        """Sub-command name -> its parser."""
        return next((action.choices for action in self._actions if isinstance(action.choices, dict)), {})

    def _commands_taking(self, option: str) -> list[str]:
        return [name for name, sub in self._commands().items()
                if any(option in action.option_strings for action in sub._actions)]


def _closest_option(word: str, options: list[str]) -> str | None:
    """The option `word` most likely meant: the shortest one it abbreviates, else the closest by spelling with the
    dashes every option shares left out (with them, '--bogus' was "close" to '--osl')."""
    abbreviated = [option for option in options if option.startswith(word)]
    if abbreviated:
        return min(abbreviated, key=len)
    bare = {option.lstrip("-"): option for option in options}
    close = difflib.get_close_matches(word.lstrip("-").lower(), list(bare), n=1, cutoff=0.6)
    return bare[close[0]] if close else None


def int_in(option, low: int, maximum: int | None = None):
    """An argparse type: an integer from `low` (to `maximum`, when given), else one line naming the option."""
    allowed = f"an integer from {low} to {maximum}" if maximum else f"an integer >= {low}"

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option}: '{text}' is not an integer; expected {allowed}")
        if value < low or maximum and value > maximum:
            raise argparse.ArgumentTypeError(f"{option}: {value} is not allowed; expected {allowed}")
        return value
    return parse


def positive_int(option, maximum: int | None = None):
    return int_in(option, 1, maximum)


def non_negative_int(option):
    return int_in(option, 0)


def checked_float(option, accepts, allowed: str):
    """A number that `accepts(value)`, else one line naming `option` and saying what is `allowed`."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{option}: '{text}' is not a number; {allowed}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"{option}: {text} is not allowed; {allowed}")
        return value
    return parse


def positive_float(option):
    """A finite number above 0 (a price, a power)."""
    return checked_float(option, lambda value: value > 0 and math.isfinite(value), "expected a positive number")


def number_in(option, low: float, high: float, unit: str = ""):
    """A finite number from `low` to `high` (a value that would round to 0 s or overflow once converted is refused
    here, in the option's own words)."""
    return checked_float(option, lambda value: low <= value <= high,
                         f"expected a number from {low:g} to {high:g}{' ' + unit if unit else ''}")


def fraction(option):
    return checked_float(option, lambda value: 0.05 <= value <= 1, "expected a fraction from 0.05 to 1")


def choice(option, allowed):
    def parse(text):
        if text not in allowed:
            raise argparse.ArgumentTypeError(unknown(option, text, allowed).args[0])
        return text
    return parse


def choices(option, allowed):
    """A list option's type: each word checked as choice() does; a word may hold several, comma- or space-separated
    ('fp8,nvfp4'; 'fp8 nvfp4' as the Python API's keyword value), the forms users type for lists (ListOption
    flattens them)."""
    check = choice(option, allowed)

    def parse(text):
        return [check(part) for part in re.split(r"[,\s]+", text) if part] or [check(text)]
    return parse


class ListOption(argparse.Action):
    """nargs='+' with a choices() type: the words' values, flattened into one list."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, [value for word in values for value in word])


def add_format(parser) -> None:
    parser.add_argument("--format", type=choice("--format", FORMATS), default="table",
                        help="table (default: for reading), csv or json (every column, in SI base units)")


def add_price(parser) -> None:
    """--price-per-hour USD (one device-hour): the cost columns (roofline.engine.cost) of totals (and of serve)."""
    parser.add_argument("--price-per-hour", type=positive_float("--price-per-hour"),
                        help="USD per device-hour: adds cost per million tokens (none shipped)")


def model(text: str, option: str = "--model") -> models.ModelSpec:
    """--model (or `option`, another option that names a model): a catalog key, or the path of a Hugging Face
    config.json (models.model_or_file)."""
    return models.model_or_file(text, option)


#: file endings --gpu reads as a device description rather than a catalog key
GPU_FILES = (".yaml", ".yml", ".json")
#: --gpu's help, wherever the option is
GPU_HELP = "catalog key (roofline list gpus), or a .yaml/.json file holding one device as config.yaml's gpus: writes it"


def gpu(text: str) -> hardware.Accelerator:
    """--gpu: a catalog key, or the path of a YAML or JSON file holding one device as config.yaml's `gpus:` section
    writes it ({key: {name, memory_gb, bandwidth_gbps, peak_tflops, ...}}, or `base:` a catalog key with changes),
    resolved and checked as the config's entries are (hardware.accelerator_from_entry)."""
    if text in hardware.catalog():
        return hardware.catalog()[text]
    if Path(text).is_dir():  # a path, not a misspelt key: say so rather than list the catalog
        raise RooflineInputError(f"--gpu: '{text}' is a directory; expected a catalog key (roofline list gpus) or a "
                                 "YAML/JSON file holding one device as config.yaml's gpus: section writes it")
    if not text.endswith(GPU_FILES):
        raise unknown("--gpu", text, hardware.catalog())
    from ..pipeline.yaml_loader import load_config_file  # the config's strict reader: one parse rule for both

    if not Path(text).is_file():
        raise RooflineInputError(f"--gpu: file '{text}' does not exist; expected a catalog key or a YAML/JSON file "
                                 "holding one device as config.yaml's gpus: section writes it")
    entries = load_config_file(text)
    if isinstance(entries, dict) and list(entries) == ["gpus"] and isinstance(entries["gpus"], dict):
        raise RooflineInputError(f"--gpu: {text} holds a gpus: section; give the device's entry alone, its key at the "
                                 "top ({key: {name: ..., memory_gb: ...}}), one device a file")
    if not isinstance(entries, dict) or len(entries) != 1 or not isinstance(next(iter(entries.values())),
                                                                            (dict, type(None))):
        raise RooflineInputError(f"--gpu: {text} must hold one device as config.yaml's gpus: section writes it, "
                                 "{key: {name: ..., memory_gb: ..., bandwidth_gbps: ..., peak_tflops: {bf16: ...}}}")
    (key, entry), = entries.items()
    if isinstance(entry, dict) and "parallel" in entry:  # config.yaml's entries carry one; a command takes options
        raise RooflineInputError(f"--gpu {text}: parallel: is a config.yaml gpus: entry's deployment plan; on the "
                                 "command line drop it and give --tp/--pp/--ep (plan searches the plans itself)")
    try:
        return hardware.accelerator_from_entry(str(key), entry)
    except RooflineInputError as error:  # name the file the entry came from
        raise RooflineInputError(f"--gpu {text}: {error}") from None


def in_option_words(error: RooflineInputError) -> str:
    """The message of `error` as the command line says it: scenario fields named as the options that set them, and
    fixes the command line cannot apply replaced with ones it can."""
    return _as_options(_cli_fix(str(error)))


def _as_options(message: str) -> str:
    """Name scenario fields as the command-line options that set them ('scenario.seq_len=4' -> '--seq-len 4')."""
    fields = ("expert_weight_dtype|attention_weight_dtype|weight_group_size|weight_dtype|act_dtype|kv_dtype|seq_len|"
              "batch|expert_routing|mla_mode|memory_utilization")
    return re.sub(rf"(?:scenario\.)?(?<![-\w])({fields})\b(=?)",
                  lambda m: "--" + m.group(1).replace("_", "-") + (" " if m.group(2) else ""), message)


def _cli_fix(message: str) -> str:
    """Replace a fix the command line cannot apply (overriding a config field) with one it can, and name the options
    behind a plan or a config.json path (--tp/--pp/--ep, --model) where the library names its fields."""
    message = message.replace(" or override max_position",
                              " or give --model a config.json whose max_position_embeddings covers it")
    message = re.sub(r"^scenario\.parallel: ", "--tp/--pp/--ep: ", message)
    # check_plan's "parallel (tp 3, pp 1, ep 1): tp 3 does not divide ..." names the options that set the plan
    message = re.sub(r"^parallel \(tp (\d+), pp (\d+), ep (\d+)\): ", r"--tp \1 --pp \2 --ep \3: ",
                     message)
    message = re.sub(r"^hf_config: (file '.*' does not exist)$",
                     r"--model: \1 (give a catalog key, roofline list models, or the path of a config.json)", message)
    # the reader of a config.json names its own field: the option that gave the path instead
    message = re.sub(r"^(--[a-z-]+): hf_config: ", r"\1: ", message)
    return re.sub(r"^hf_config: ", "--model: ", message)


def distinct_devices(gpus: list[hardware.Accelerator], given: list[str]) -> None:
    """Refuse two --gpu values that name one device key (a file reusing a catalog key beside that key): the
    search keys its rows on it, so one would silently stand for both."""
    seen: dict[str, str] = {}
    for gpu, text in zip(gpus, dict.fromkeys(given)):
        if gpu.key in seen:
            raise RooflineInputError(f"--gpu: {text} names device '{gpu.key}' again (as {seen[gpu.key]} does); give it "
                                     f"a key of its own in its file (e.g. {gpu.key}-2: {{base: {gpu.key}, ...}})")
        seen[gpu.key] = text
