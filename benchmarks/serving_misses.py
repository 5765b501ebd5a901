"""The largest misses of benchmarks/validate_serving.py: the runs of the largest errors, each with what it ran and
what the measured, expected and bound sides say (the README explains them)."""
from __future__ import annotations

import pandas as pd


def layout(row) -> str:
    """A run's plan in short: agg tpT[ dpD][ epE], or its pools: disagg PxtpT[ dpD][ epE] + DxtpT[ dpD][ epE]."""
    def plan(prefix: str) -> str:
        parts = [(name, row.get(f"{prefix}{column}")) for name, column in
                 (("tp", "tp_size"), ("dp", "attention_dp_size"), ("ep", "moe_ep_size"))]
        shown = [f"{name}{value:.0f}" for name, value in parts if value == value and value is not None
                 and (name == "tp" or value > 1)]
        return " ".join(shown) or "tp-"
    if row["mode"] != "disagg":
        return f"agg {plan('')}"
    return (f"disagg {row.get('prefill_num_workers', float('nan')):.0f}x{plan('prefill_')} + "
            f"{row.get('decode_num_workers', float('nan')):.0f}x{plan('decode_')}")


def largest_misses(frame: pd.DataFrame, quantity: str, n: int = 10) -> pd.DataFrame:
    """The `n` rows of the largest |error| of `quantity` (ttft | tpot): what they ran and what each side says, so
    that a miss can be read against its own run (the README explains the largest)."""
    worst = frame.loc[frame[f"{quantity}_error"].abs().nlargest(n).index]
    return pd.DataFrame({
        "run": worst.backend + " " + worst.backend_version.fillna("").astype(str) + " " + worst.model + " "
        + worst.gpu + " " + worst.apply(layout, axis=1),
        "isl/osl": worst.isl.astype(int).astype(str) + "/" + worst.osl.astype(int).astype(str),
        "users": worst.concurrency,
        "measured ms": worst[f"silicon_{quantity}_ms"].round(1),
        "expected ms": (worst[f"{quantity}_expected_s"] * 1e3).round(1),
        "bound ms": (worst[f"{quantity}_s"] * 1e3).round(1),
        "error %": (worst[f"{quantity}_error"] * 100).round(0)})
