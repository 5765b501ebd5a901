# Aggregates over all (model, gpu, stage) jobs, a CSV copy for people without parquet tools, and the resolved specs.


localrules:
    aggregate,
    csv,
    specs,


rule aggregate:
    """results/{table}.parquet: one table (ops, totals, treatments, sweeps) of every job, concatenated."""
    input:
        lambda wildcards: job_outputs(wildcards.table),
    output:
        "results/{table}.parquet",
    log:
        "logs/aggregate/{table}.log",
    run:
        from roofline.pipeline_io import concat_tables

        concat_tables(input, output[0], log=log[0])


rule csv:
    """results/{table}.csv: the same table as CSV."""
    input:
        "results/{table}.parquet",
    output:
        "results/{table}.csv",
    log:
        "logs/csv/{table}.log",
    run:
        from roofline.pipeline_io import parquet_to_csv

        parquet_to_csv(input[0], output[0], log=log[0])


rule specs:
    """results/specs.json: the resolved config (every model and gpu as the engine saw it) and its SHA-256."""
    output:
        "results/specs.json",
    log:
        "logs/specs.log",
    params:
        specs=RESOLVED.specs(),
    run:
        from roofline.pipeline_io import write_json

        write_json(params.specs, output[0], log=log[0])
