"""Helper shared by the figure and report tests: the four tables and specs of a small config, without Snakemake."""
from roofline.pipeline.config import resolve_config
from roofline.pipeline.tables import grid_tables


def grid(config: dict):
    """(tables, specs) of `config` as the pipeline's aggregates and results/specs.json would hold them."""
    resolved = resolve_config(config)
    tables = grid_tables(resolved.models.values(), resolved.gpus.values(), resolved.stages, resolved.scenario,
                         resolved.plans)
    return tables, resolved.specs()
