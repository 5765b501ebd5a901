"""Cost and energy of the tokens a deployment serves, from its throughput, its devices' price and their power.

Cost: devices x price_per_hour [USD per device-hour] buys 3600 s of the deployment, which serves tokens_per_s
tokens each second, so one million tokens cost price_per_hour x devices / 3600 / tokens_per_s x 1e6 USD. From the
roofline bound's throughput (the most any deployment can reach) this is a lower bound on the cost; from the
expected throughput it is the expected cost. Prefill rows count prompt tokens, decode rows output tokens.

Energy: each device draws at most its power (`power_w` when measured, else the datasheet's `tdp_w`), so a token
costs power x devices / tokens_per_s joules at the expected throughput: an upper estimate at that speed when the
power is the TDP (devices rarely draw their full TDP), the estimate itself when the power was measured.

No price ships with the catalog (prices change by the week and differ by provider): cost columns are NaN unless a
price is given (config `price_per_hour`, or the `--price-per-hour` option).
"""
from __future__ import annotations

import math

from .hardware import Accelerator

SECONDS_PER_HOUR = 3600.0
MILLION = 1e6
#: energy_basis values: what the power behind energy_per_token_j is ("" when the device has neither)
ENERGY_TDP, ENERGY_MEASURED = "tdp (upper estimate)", "measured power"


def _usable(value) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def cost_per_million_tokens(price_per_hour: float | None, devices: float, tokens_per_s: float) -> float:
    """USD per million tokens of a deployment of `devices` devices at `price_per_hour` USD per device-hour serving
    `tokens_per_s` tokens per second (the whole deployment); NaN without a price or a positive throughput.

    e.g. 2 devices at 3 USD/h serving 1000 token/s: 2 x 3 / 3600 USD/s / 1000 token/s x 1e6 = 1.6667 USD."""
    if not _usable(price_per_hour) or not _usable(tokens_per_s):
        return math.nan
    return price_per_hour * devices / SECONDS_PER_HOUR / tokens_per_s * MILLION


def energy_per_token_j(power_w: float | None, devices: float, tokens_per_s: float) -> float:
    """Joules per token of `devices` devices drawing `power_w` W each while serving `tokens_per_s` tokens per
    second (the whole deployment); NaN without a power or a positive throughput.

    e.g. 2 devices at 700 W serving 1000 token/s: 2 x 700 J/s / 1000 token/s = 1.4 J."""
    if not _usable(power_w) or not _usable(tokens_per_s):
        return math.nan
    return power_w * devices / tokens_per_s


def device_power(gpu: Accelerator) -> tuple[float | None, str]:
    """(watts per device, energy_basis): the measured `power_w` when given, else the datasheet `tdp_w`, else
    (None, "")."""
    if _usable(gpu.power_w):
        return gpu.power_w, ENERGY_MEASURED
    if _usable(gpu.tdp_w):
        return gpu.tdp_w, ENERGY_TDP
    return None, ""


def cost_columns(gpu: Accelerator, devices: float, tokens_per_s: float, tokens_per_s_expected: float) -> dict:
    """The COST_COLUMNS of one row: cost per million tokens from the bound's and the expected throughput (the
    deployment's), energy per token at the expected throughput, and what that energy rests on."""
    power, basis = device_power(gpu)
    energy = energy_per_token_j(power, devices, tokens_per_s_expected)
    return {
        "cost_per_million_tokens": cost_per_million_tokens(gpu.price_per_hour, devices, tokens_per_s),
        "cost_per_million_tokens_expected": cost_per_million_tokens(gpu.price_per_hour, devices, tokens_per_s_expected),
        "energy_per_token_j": energy,
        "energy_basis": basis if math.isfinite(energy) else "",
    }


def add_cost(gpu: Accelerator, total: dict) -> dict:
    """`total` (a totals row with its expected columns) with the COST_COLUMNS added, in place; returns it."""
    total.update(cost_columns(gpu, total["devices"], total["tokens_per_s"], total["tokens_per_s_expected"]))
    return total
