"""Report: one context per page from the tidy tables and results/specs.json, rendered to HTML and PDF.

Pages: `model` (a model on every GPU), `summary` (every model × GPU), `index` (links); their sections: `facts`
(model and hardware), `gpu_detail`, `matrix`, `decision`, `paper` (the Table 1 appendix), `figure_list` (the
figures, from the manifest the figures package writes), `text` (sentences), `cost` (cost and energy per token),
`measured` (your own runs beside ours) and `comparison` (what moved since a previous run). Imports the engine and
the estimate and serving layers' readers only (not the figures package): figures are found through their manifest.
"""
from .comparison import comparison_section
from .cost import cost_section
from .guard import check_context
from .index import index_context
from .io import load_manifest, load_plan, load_serving, load_specs, load_tables
from .measured import measured_section, unmatched_runs
from .model import model_context
from .render import render_html, report_fetcher, write_pdf, write_report
from .summary import summary_context

__all__ = ["check_context", "comparison_section", "cost_section", "index_context", "load_manifest", "load_plan",
           "load_serving", "load_specs", "load_tables", "measured_section", "model_context", "render_html",
           "report_fetcher", "summary_context", "unmatched_runs", "write_pdf", "write_report"]
