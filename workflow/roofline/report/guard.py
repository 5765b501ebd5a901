"""The guard of every context: no NaN and no raw float may reach a page (every number is formatted), while text
the user wrote ("NaNoLlama") is not mistaken for a missing number."""
from __future__ import annotations

import math

from .page import name_parts


def user_text(specs: dict) -> tuple[str, ...]:
    """Every text the user wrote into the specs (keys, names, vendors, sources; config.json's _name_or_path) and the
    '/'-parts a name is shown in (name_parts), longest first: check_context masks them, since "NaNoLlama" or "H100
    NaN edition" is a name, not a missing number."""
    texts = set()
    for section in ("models", "gpus"):
        for key, entry in specs.get(section, {}).items():
            texts.add(key)
            texts.update(value for value in entry.values() if isinstance(value, str) and value)
            texts.update(part["text"] for part in name_parts(str(entry.get("name", ""))) if part["text"])
    return tuple(sorted(texts, key=len, reverse=True))


def check_context(value, path: str = "context", user: tuple[str, ...] = ()) -> None:
    """Raise ValueError naming the first NaN or raw float in the context (every number must be formatted).

    The check is for numbers: text the user wrote (`user`, see user_text) is masked out of each string first."""
    if isinstance(value, float):
        raise ValueError(f"{path} holds the unformatted number {value!r}" if not math.isnan(value)
                         else f"{path} is NaN")
    if isinstance(value, dict):
        for key, item in value.items():
            check_context(item, f"{path}.{key}", user)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_context(item, f"{path}[{i}]", user)
    elif isinstance(value, str):
        shown = value
        for written in user:  # the user's own words may hold "nan" (NaNoLlama); the guard checks numbers
            shown = shown.replace(written, " ")
        if "nan" in shown.split() or "NaN" in shown:
            raise ValueError(f"{path} shows a NaN: {value!r}")
