"""Page 1's cost and energy table (the totals' COST_COLUMNS): per stage and GPU, the cost per million tokens from
the bound (a lower bound) and expected, and the energy per token; shown only when some GPU of the report has a
price (config `price_per_hour`)."""
from __future__ import annotations

import pandas as pd

from ..engine.cost import ENERGY_TDP
from ..engine.scenario import STAGES
from . import units
from .guard import check_context

TOKENS = {"prefill": "prompt", "decode": "output"}
NOTE = ("Cost per million tokens = price per device-hour × devices ÷ 3600 ÷ tokens/s × 10⁶: from the bound's "
        "tokens/s it is a lower bound (no deployment is faster), expected from the expected tokens/s; prefill counts "
        "prompt tokens, decode output tokens at the scenario's batch. Energy per token = power × devices ÷ expected "
        "tokens/s: with the datasheet TDP an upper estimate at that speed (devices rarely draw their whole TDP), "
        "with a measured power_w the estimate itself.")


def _usd(value) -> str:
    return units.DASH if units.missing(value) else f"{units.sig(value)} USD"


def _energy(value, basis: str) -> str:
    if units.missing(value):
        return units.DASH
    return units.prefixed(value, "J") + (" (TDP: at most)" if basis == ENERGY_TDP else " (measured power)")


def cost_section(totals: pd.DataFrame) -> dict | None:
    """{"rows", "note"}: one row per (stage, gpu) of one model's totals, None when none is priced."""
    if "cost_per_million_tokens" not in totals or totals["cost_per_million_tokens"].isna().all():
        return None
    rows = []
    for stage in [s for s in STAGES if s in set(totals["stage"])]:
        for _, row in totals[totals["stage"] == stage].iterrows():
            rows.append({"stage": f"{stage} ({TOKENS[stage]} tokens)", "deployment": row["deployment"],
                         "fits": bool(row["fits"]), "cost": _usd(row["cost_per_million_tokens"]),
                         "cost_expected": _usd(row["cost_per_million_tokens_expected"]),
                         "energy": _energy(row["energy_per_token_j"], row["energy_basis"])})
    section = {"rows": rows, "note": NOTE}
    check_context(section, "cost", user=tuple(map(str, totals["deployment"])))
    return section
