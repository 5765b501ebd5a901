"""Report: one context per page from the tidy tables and results/specs.json, rendered to HTML and PDF.

Imports the engine only (not the figures package): figures are found through the manifest they write.
"""
from .context import check_context, index_context, model_context, summary_context
from .io import load_manifest, load_plan, load_specs, load_tables
from .render import render_html, report_fetcher, write_pdf, write_report

__all__ = ["check_context", "index_context", "load_manifest", "load_plan", "load_specs", "load_tables", "model_context",
           "render_html", "report_fetcher", "summary_context", "write_pdf", "write_report"]
