"""One exception type for bad input, with a "did you mean" helper.

Every user-facing check (config, CLI, HF config loader) raises `RooflineInputError` with one line that names the
key, the bad value and what is allowed, so the CLI and Snakemake can print it as is.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable

#: the control characters (line breaks, tabs, NUL, DEL) no name, link name or URL of one line may hold, as the body of
#: a regex character class: the config's checks (pipeline.config.CONTROL), the schema's one-line pattern
#: (pipeline.schema_messages.ONE_LINE) and the wiki's escape (report.wiki) share it
CONTROL_CHARACTERS = r"\x00-\x1f\x7f"


class RooflineInputError(ValueError):
    """Bad user input: unknown key, impossible value, missing file. The message is one self-contained line."""


def did_you_mean(value: object, allowed: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest allowed name, or '' when nothing is close. Names that begin with the
    value come first ('h200' -> 'h200-sxm', up to three, shortest first: 'a100' -> 'a100-sxm-80gb' or
    'a100-pcie-40gb'): the
    closest by edit distance is often another device ('h200' -> 'h20', 'gb200' -> 'b200')."""
    typed, names = str(value).lower(), [str(a) for a in allowed]
    same = [name for name in names if name.lower() == typed]  # 'L4' is 'l4' (keys are case-sensitive)
    if same:
        return f" (did you mean '{same[0]}'?)"
    longer = sorted((name for name in names if len(typed) >= 2 and name.lower().startswith(typed)),
                    key=lambda name: (len(name), name))
    if longer:
        return " (did you mean " + " or ".join(f"'{name}'" for name in longer[:3]) + "?)"
    close = difflib.get_close_matches(typed, names, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown(what: str, value: object, allowed: Iterable[str]) -> RooflineInputError:
    """Error for a value that is not one of `allowed`, listing them and suggesting the nearest."""
    allowed = sorted(set(allowed))  # a name in two sources (configured and catalog) listed once
    named = [name or "''" for name in allowed]  # an empty value allowed (a dtype 'as the weights') shows as ''
    shown = ", ".join(named) if len(named) <= 60 else ", ".join(named[:60]) + ", ..."
    return RooflineInputError(f"{what}: unknown value '{clip(value)}'{did_you_mean(value, allowed)}; allowed: {shown}")


def clip(value: object, limit: int = 60) -> str:
    """`value` as text, cut to `limit` characters with the full length noted: an error line quotes hostile input
    (a 100,000-character name) without becoming that long."""
    text = " ".join(str(value).split()) if isinstance(value, str) else str(value)  # one line, even for a '\n'
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
