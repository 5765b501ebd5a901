"""The engine: what an operator costs and where it sits on a device's roofline.

Specs and catalogs (`dtypes`, `hardware`, `scenario`, `parallel`; models: `model_spec` < `hf_families` < `hf_config` <
`models`), the operator formulas and their registry (`formulas`), the operator graph of one step (`graph`), the
roofline itself (`roofline`: times per roof and the bound class), per-operator rows and totals (`analysis`),
treatments, sweeps and the column names of every table (`columns`). Pure functions over dataclasses: no Snakemake,
matplotlib, Jinja or WeasyPrint, and nothing of the packages above it (estimate, serving, pipeline, figures, report,
cli).
"""
