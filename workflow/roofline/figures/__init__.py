"""Figures: matplotlib (Agg) drawings of the tidy tables. Imports the engine only (not the report)."""
import matplotlib

matplotlib.use("Agg")

from .charts import (batch_sweep_figure, cross_gpu_figure, roofline_figure, seq_sweep_figure,  # noqa: E402
                     time_breakdown_figure)
from .render import MANIFEST, render_model_figures, save  # noqa: E402
from .roofline import Roof, Series, draw_roofline, roof_for  # noqa: E402

__all__ = ["MANIFEST", "Roof", "Series", "batch_sweep_figure", "cross_gpu_figure", "draw_roofline",
           "render_model_figures", "roof_for", "roofline_figure", "save", "seq_sweep_figure",
           "time_breakdown_figure"]
