"""The `roofline` command: one-off questions (ops, totals, ridge, plan, serve, measure, calibrate, compare, list)
answered from the library.

`app` builds the parser and dispatches; each subcommand is one module (`ops`, `totals`, `ridge`, `plan`, `serve`,
`measure`, `calibrate`, `compare`, `listing`) with HELP, add_arguments(parser) and run(args); `options`, `scenario`
and `spec_options` hold the options they share, `formats` the table/CSV/JSON output. `api` runs ops, totals, plan
and serve for the Python API (`roofline.ops(...)`): the same parser and rows, as a DataFrame.
"""
from .app import main

__all__ = ["main"]
