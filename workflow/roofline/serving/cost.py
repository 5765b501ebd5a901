"""Cost and energy of the deployment search's rows, and the ranking on expected cost (`roofline plan --rank-on
cost`).

A plan row's tokens are output tokens: its cost per million tokens is that of its decode steps at its batch
(roofline.engine.cost.cost_columns on the deployment's tokens/s, bound and expected). Ranking on cost keeps, among
the rows of every device's frontier, those no other row beats on both expected cost per million tokens (lower is
better) and expected tokens/s per user (1 / tpot_expected_s), cheapest first; each next row is faster per user.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ..engine.cost import cost_columns
from ..engine.errors import RooflineInputError
from ..engine.hardware import Accelerator
from .evaluate import RANK_ON as SEARCH_RANK_ON
from .planner import pareto_front

#: what `--rank-on` may rank the frontier on: the search's own order on the expected times or on the bounds (most
#: tokens/s per device first; the targets checked on the same), or the expected cost per million tokens (the
#: targets checked on the expected times)
RANK_ON = (*SEARCH_RANK_ON, "cost")


def add_plan_cost(rows: Sequence[dict], gpus: Mapping[str, Accelerator]) -> list[dict]:
    """`rows` (plan records) with the COST_COLUMNS added, priced and powered as gpus[row["gpu"]] says."""
    return [{**row, **cost_columns(gpus[row["gpu"]], row["devices"], row["tokens_per_s"],
                                   row["tokens_per_s_per_device_expected"] * row["devices"])} for row in rows]


def check_priced(gpus: Sequence[Accelerator]) -> None:
    """Ranking on cost needs a price for every candidate: a one-line error naming the first device without one."""
    unpriced = next((gpu.key for gpu in gpus if not (gpu.price_per_hour or 0) > 0), None)
    if unpriced is not None:
        raise RooflineInputError(f"--rank-on: cost needs a price for every candidate gpu; '{unpriced}' has none "
                                 f"(give --price-per-hour USD, or --price-per-hour {unpriced}=USD)")


def rank_on_cost(rows: Sequence[dict]) -> list[dict]:
    """The rows (with COST_COLUMNS) on the front of lowest expected cost per million tokens and most expected
    tokens/s per user, cheapest first; rows without an expected cost are left out."""
    rows = [row for row in rows if math.isfinite(row["cost_per_million_tokens_expected"])]
    if not rows:
        return []
    cost = np.array([row["cost_per_million_tokens_expected"] for row in rows])
    per_user = np.array([1.0 / row["tpot_expected_s"] for row in rows])
    return [rows[int(i)] for i in pareto_front(-cost, per_user)]
