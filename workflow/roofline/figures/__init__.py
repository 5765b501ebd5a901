"""Figures: matplotlib (Agg) drawings of the tidy tables, one module per figure, and the `FIGURES` registry that
the renderer draws from and writes into the manifest the report reads. Imports the engine (and the estimate
layer's calibration tables) only, not the report."""
import matplotlib

matplotlib.use("Agg")

from .batch_sweep import batch_sweep_figure  # noqa: E402
from .breakdown import time_breakdown_figure  # noqa: E402
from .cross_gpu import cross_gpu_figure  # noqa: E402
from .gpu_roofline import roofline_figure  # noqa: E402
from .inputs import PlanSearch  # noqa: E402
from .registry import FIGURES, PLACES, Figure  # noqa: E402
from .render import MANIFEST, render_model_figures, save  # noqa: E402
from .roofline import Roof, Series, draw_roofline, roof_for  # noqa: E402
from .seq_sweep import seq_sweep_figure  # noqa: E402

__all__ = ["FIGURES", "MANIFEST", "PLACES", "Figure", "PlanSearch", "Roof", "Series", "batch_sweep_figure",
           "cross_gpu_figure", "draw_roofline", "render_model_figures", "roof_for", "roofline_figure", "save",
           "seq_sweep_figure", "time_breakdown_figure"]
