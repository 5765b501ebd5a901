"""The summary's section "What moved since the previous run" (results/compare.csv, config key `compare_with`):
every value a ready string in the unit of its column."""
from __future__ import annotations

import pandas as pd

from . import units
from .guard import check_context


def _usd(value: float) -> str:
    return f"{units.sig(value)} USD"


def _joules(value: float) -> str:
    return units.prefixed(value, "J")


#: how a compared column's values are shown: (test on its name, formatter), the first that matches
_FORMATS = ((lambda c: c.startswith("cost_per_million_tokens"), _usd),
            (lambda c: c.startswith("tokens_per_s"), units.tokens_per_s),
            (lambda c: c.endswith("_bytes"), units.nbytes), (lambda c: c.endswith("_share"), units.percent),
            (lambda c: c.endswith("_j"), _joules), (lambda c: c.endswith("_s"), units.seconds))
WHAT = {"moved": "moved", "changed": "changed", "added": "only in this run", "removed": "only in the previous run"}


def value_text(column: str, value) -> str:
    """A compared value in its column's unit ('18.6 ms', '1.2 ktokens/s'), text as it is."""
    if value is None or isinstance(value, str) and not _is_number(value):
        return "" if value is None else str(value)
    number = float(value)
    if units.missing(number):
        return units.DASH
    return next((fmt(number) for test, fmt in _FORMATS if test(column)), units.sig(number))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def change_text(change) -> str:
    """'+12.3%', '−4.0%', '—' (text or a value that appeared or vanished)."""
    if units.missing(change):
        return units.DASH
    change = float(change)
    if abs(change) == float("inf"):
        return "from 0"
    return f"{change * 100:+.1f}%".replace("-", "−")


def comparison_section(table: pd.DataFrame, previous: str, threshold: float = 0.05) -> dict:
    """{"rows", "previous" (the folder), "threshold" ('5%'), "empty" (nothing moved)}; one row per value that
    moved, per model, gpu and stage."""
    rows = []
    for _, row in table.iterrows():
        column = "" if units.missing(row["column"]) else str(row["column"])
        rows.append({"table": row["table"], "model": row["model"], "gpu": row["gpu"],
                     "stage": "" if units.missing(row["stage"]) else row["stage"], "column": column,
                     "old": "" if units.missing(row["old"]) else value_text(column, row["old"]),
                     "new": "" if units.missing(row["new"]) else value_text(column, row["new"]),
                     "change": change_text(row["change"]), "what": WHAT.get(row["what"], row["what"])})
    section = {"rows": rows, "previous": previous, "threshold": units.percent(threshold), "empty": not rows}
    check_context(section, "comparison", user=(previous, *map(str, table["model"]), *map(str, table["gpu"])))
    return section
