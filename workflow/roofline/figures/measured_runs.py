"""Your measured runs on the deployment search's Pareto figure (results/measurements/{model}.parquet): each run a
filled diamond at its measured tokens/s per device and per user (1 / measured TPOT), in its GPU's colour (grey for
a GPU without a curve), joined by a dotted line to the hollow diamond of what we expect for it at its own workload;
a run measured beyond its bound (faster than the hardware allows) has a red edge."""
from __future__ import annotations

import math

import pandas as pd

MEASURED_MARKER, OTHER_COLOR, BEYOND_COLOR = "D", "#7f7f7f", "#d62728"
#: the legend entry of the runs (one for all of them)
LEGEND = "your run, measured\nat its own workload\n(hollow: expected;\nred edge: beyond\nthe bound)"


def runs_to_draw(runs: pd.DataFrame) -> pd.DataFrame:
    """The predicted runs with a measured TPOT and tokens/s (the two axes), with their measured and expected
    points: per_user and per_device, per_user_expected and per_device_expected."""
    ok = runs[(runs["status"] == "predicted") & runs["tpot_measured_s"].gt(0) & runs["tokens_per_s_measured"].gt(0)]
    return ok.assign(per_user=1.0 / ok["tpot_measured_s"], per_device=ok["tokens_per_s_measured"] / ok["devices"],
                     per_user_expected=1.0 / ok["tpot_expected_s"],
                     per_device_expected=ok["tokens_per_s_expected"] / ok["devices"])


def draw_measured_runs(ax, runs: pd.DataFrame, styles: dict) -> None:
    """The runs on `ax` (log-log, tokens/s per user on x, per device on y); `styles`: gpu key -> GpuStyle of the
    curves already drawn. One legend entry for all of them."""
    points = runs_to_draw(runs)
    for i, run in enumerate(points.itertuples()):
        color = styles[run.gpu].color if run.gpu in styles else OTHER_COLOR
        if all(math.isfinite(v) for v in (run.per_user_expected, run.per_device_expected)):
            ax.plot([run.per_user, run.per_user_expected], [run.per_device, run.per_device_expected], ls=":",
                    lw=0.7, color=color, zorder=4)
            ax.plot([run.per_user_expected], [run.per_device_expected], MEASURED_MARKER, ms=4, mfc="white",
                    color=color, zorder=4)
        beyond = bool(run.beyond_bound)
        ax.plot([run.per_user], [run.per_device], MEASURED_MARKER, ms=5, color=color,
                mec=BEYOND_COLOR if beyond else "black", mew=1.2 if beyond else 0.5, zorder=6,
                label=LEGEND if i == 0 else None)
