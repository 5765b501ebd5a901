"""The figures of a model, by kind: the function that draws each, its caption, and where the report shows it.

The renderer (`render`) draws every kind of this registry and writes one manifest entry per figure drawn; the report
reads kinds, files, captions and places from that manifest only (it does not import this package). The order of
the registry is the order of the figures within each place of the report.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable

from . import batch_sweep, breakdown, cross_gpu, gpu_roofline, interactive, plan, seq_sweep
from .inputs import SCOPES

#: where a figure goes in the model report: its Figures section (printed, and the wiki), or a GPU's details (HTML
#: only) after its memory footprint or at its end. The report's templates have exactly these places
#: (roofline.report.figure_list.PLACES; tests/test_figures.py checks that the two agree).
PLACES = ("figures", "gpu_head", "gpu_foot")
#: the files each place needs: the Figures section is printed (SVG: text stays text in the PDF) and published to
#: wikis (PNG); a GPU's details are HTML only (SVG). A figure is drawn once and saved in these formats only.
FORMATS = {"figures": ("svg", "png"), "gpu_head": ("svg",), "gpu_foot": ("svg",)}


def _always(_data, _item) -> bool:
    return True


@dataclass(frozen=True)
class Figure:
    """One kind of figure."""

    title: str  # short name in lists of figures (the index page)
    scope: str  # one figure per "gpu", per "stage", or one per "model" (inputs.SCOPES)
    place: str  # where the report shows it (PLACES)
    draw: Callable  # draw(ModelFigures, item) -> matplotlib Figure; item: the GPU key, the stage, or None
    caption: Callable  # caption(ModelFigures, item) -> str
    note: Callable | None = None  # note(ModelFigures, item) -> str added to the caption ('' = none)
    applies: Callable = _always  # applies(ModelFigures, item) -> whether this item has the figure
    stage: str | None = None  # the one stage a per-GPU figure shows
    interactive: Callable | None = None  # interactive(ModelFigures, item) -> plotly.js spec for the HTML report

    def __post_init__(self):
        if self.scope not in SCOPES or self.place not in PLACES:
            raise ValueError(f"figure {self.title!r}: scope {self.scope!r} or place {self.place!r} is unknown")


def _registry(*entries: tuple[str, Figure]) -> MappingProxyType:
    """{kind: Figure} in the given order; a kind registered twice is an error."""
    kinds = [kind for kind, _ in entries]
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"a figure kind is registered twice: {kinds}")
    return MappingProxyType(dict(entries))


FIGURES = _registry(
    ("pareto", Figure("Deployment search (Pareto frontier)", "model", "figures", plan.draw, plan.caption,
                      applies=plan.applies, interactive=lambda data, _item: interactive.plan_spec(
                          data.plan.table, data.name, data.plan.tpot_target_s, dict(data.plan.names),
                          data.plan.rank_on, data.plan.measured))),
    ("time_breakdown", Figure("Where the time goes", "model", "figures", breakdown.draw, breakdown.caption)),
    ("cross_gpu", Figure("Roofline on every GPU", "stage", "figures", cross_gpu.draw, cross_gpu.caption,
                         note=cross_gpu.note, interactive=interactive.cross_gpu_spec)),
    ("seq_sweep", Figure("Sequence-length sweep", "model", "figures", seq_sweep.draw, seq_sweep.caption,
                         applies=seq_sweep.applies)),
    ("roofline", Figure("Roofline", "gpu", "gpu_head", gpu_roofline.draw, gpu_roofline.caption,
                        note=gpu_roofline.note, interactive=interactive.roofline_spec)),
    ("batch_sweep", Figure("Decode batch sweep", "gpu", "gpu_foot", batch_sweep.draw, batch_sweep.caption,
                           applies=batch_sweep.applies, stage="decode")),
)
