"""Where benchmarks/validate_serving.py's misses are: MAPE tables per group and per harness, and the runs of the
largest errors, each with what it ran and what the measured, expected and bound sides say (the README explains
them)."""
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


def mape(values: pd.Series) -> float:
    return float(values.abs().mean() * 100)


def table(frame: pd.DataFrame, by) -> pd.DataFrame:
    groups = frame.groupby(by)
    columns = {"rows": groups.size(), "TTFT MAPE %": groups.ttft_error.apply(mape),
               "TPOT MAPE %": groups.tpot_error.apply(mape)}
    if "ttft_today_error" in frame:
        columns.update({"TTFT today %": groups.ttft_today_error.apply(mape),
                        "TPOT today %": groups.tpot_today_error.apply(mape)})
    columns.update({"TTFT bias %": groups.ttft_error.median() * 100, "TPOT bias %": groups.tpot_error.median() * 100})
    return pd.DataFrame(columns).round(1)


def dataset(frame: pd.DataFrame) -> pd.Series:
    """The measured dataset of each row: its source file and job, without the run's concurrency."""
    return frame.silicon_data_source.str.replace(r";\s*silicon_concurrency=\d+", "", regex=True)


def harness(frame: pd.DataFrame) -> pd.Series:
    """Who measured each row, in short: the gap-analysis harness's runs by their folder (system/framework/version:
    fixed isl and osl, one framework release each), SemiAnalysis' InferenceX runs by their dump (a dated
    source_file or db-dump/DATE: lengths spread, recipes per run), any other source by its file."""
    source = dataset(frame).fillna("")
    folder = source.str.extract(r"/data/([^/]+/[^/]+/[^/]+)/", expand=False)
    name = source.str.extract(r"^(?:source_file=)?([^;]+)", expand=False).fillna(source)
    dated = name.str.fullmatch(r"\d{4}-\d{2}-\d{2}\.csv|db-dump/\d{4}-\d{2}-\d{2}")
    return ("gap-analysis " + folder).fillna(("InferenceX " + name).where(dated, name))


def by_harness(frame: pd.DataFrame) -> pd.DataFrame:
    """`table` per harness and framework, with each group's share of the rows' TTFT MAPE (its summed absolute error
    over all the rows: the shares add up to the MAPE, before rounding), largest first: where the misses come from."""
    by = [harness(frame).rename("harness"), frame.backend]
    shares = (frame.ttft_error.abs().groupby(by).sum() / len(frame) * 100).rename("TTFT MAPE share")
    return table(frame, by).join(shares.round(1)).sort_values("TTFT MAPE share", ascending=False)
