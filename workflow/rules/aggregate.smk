# Aggregates of every (model, gpu, stage) job: per model (what that model's figures and report read, so that
# editing one model's entry reruns only that model's figures and report) and grid-wide (results/{table}.parquet,
# what users and the summary read), a CSV copy for people without parquet tools, and the resolved specs.


localrules:
    model_aggregate,
    model_specs,
    aggregate,
    csv,
    specs,


rule model_aggregate:
    """results/models/{model}/{table}.parquet: one table (ops, totals, treatments, sweeps) of one model's jobs
    (every gpu and stage), concatenated."""
    input:
        lambda wildcards: model_outputs(wildcards.table, wildcards.model),
    output:
        "results/models/{model}/{table}.parquet",
    log:
        "logs/aggregate/{model}/{table}.log",
    # as the figures it feeds (rules.figures): a thread job under a second, before any report
    priority: 1
    run:
        from roofline.pipeline.io import concat_tables

        concat_tables(input, output[0], log=log[0])


rule aggregate:
    """results/{table}.parquet: one table of every job, concatenated from the per-model tables (config order:
    model, then gpu, then stage)."""
    input:
        expand(rules.model_aggregate.output[0], model=MODELS, allow_missing=True),
    output:
        "results/{table}.parquet",
    log:
        "logs/aggregate/{table}.log",
    run:
        from roofline.pipeline.io import concat_tables

        concat_tables(input, output[0], log=log[0])


rule csv:
    """results/{table}.csv: the same table as CSV."""
    input:
        rules.aggregate.output[0],
    output:
        "results/{table}.csv",
    log:
        "logs/csv/{table}.log",
    run:
        from roofline.pipeline.io import parquet_to_csv

        parquet_to_csv(input[0], output[0], log=log[0])


rule model_specs:
    """results/models/{model}/specs.json: the specs of this model, every gpu, the scenario and the stages (the
    shape of results/specs.json; its config_sha256 is the digest of this content). params hold this model's entry
    only, so editing another model's entry leaves it alone."""
    output:
        "results/models/{model}/specs.json",
    log:
        "logs/specs/{model}.log",
    priority: 1
    params:
        specs=lambda wildcards: RESOLVED.model_specs(wildcards.model),
    run:
        from roofline.pipeline.io import write_json

        write_json(params.specs, output[0], log=log[0])


rule specs:
    """results/specs.json: the resolved config (every model and gpu as the engine saw it) and its SHA-256."""
    output:
        "results/specs.json",
    log:
        "logs/specs.log",
    params:
        specs=RESOLVED.specs(),
    run:
        from roofline.pipeline.io import write_json

        write_json(params.specs, output[0], log=log[0])
