# One job per (model, gpu, stage): per-operator table, totals, treatments and sweeps.


localrules:
    engine,


rule engine:
    """results/engine.json: a hash per engine source file. The compute jobs import the engine once per Snakemake
    process (run: in threads), so Snakemake sees library edits only through this file."""
    input:
        ENGINE_SOURCES,
    output:
        "results/engine.json",
    log:
        "logs/engine.log",
    run:
        from roofline.pipeline.sources import write_engine_stamp

        write_engine_stamp(input, output[0], log=log[0])


rule analyze:
    """Roofline tables of one (model, gpu, stage); params carry the resolved specs of this model and this gpu only,
    so editing one entry of config.yaml reruns only the jobs that use it."""
    input:
        engine=rules.engine.output[0],
        # the gpu's calibration table (config or shipped) and its fit: editing one reruns the jobs on that gpu
        calibration=lambda wildcards: RESOLVED.calibration_inputs(wildcards.gpu),
    output:
        ops="results/ops/{model}/{gpu}/{stage}.parquet",
        totals="results/totals/{model}/{gpu}/{stage}.parquet",
        treatments="results/treatments/{model}/{gpu}/{stage}.parquet",
        sweeps="results/sweeps/{model}/{gpu}/{stage}.parquet",
    log:
        "logs/analyze/{model}/{gpu}/{stage}.log",
    # before any report: every model's figures wait for all of its jobs (rules.figures)
    priority: 1
    params:
        model=lambda wildcards: RESOLVED.model_params(wildcards.model),
        gpu=lambda wildcards: RESOLVED.gpu_params(wildcards.gpu),
        scenario=lambda wildcards: RESOLVED.job_scenario_params(wildcards.model, wildcards.gpu),
    run:
        from roofline.pipeline.jobs import write_job_tables

        write_job_tables(
            params.model, params.gpu, wildcards.stage, params.scenario, dict(output.items()), log=log[0]
        )
