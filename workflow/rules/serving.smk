# Served predictions (config section `serving`, optional): per model, every configured gpu at the model's plan under
# every workload of the section (roofline.serving.table). Nothing runs when the section is absent.


rule serving:
    """results/serving/{model}.parquet: SERVE_COLUMNS rows, one per (gpu, workload, concurrency or request rate)."""
    input:
        engine=rules.engine.output[0],
        code=SERVING_CODE,
    output:
        "results/serving/{model}.parquet",
    log:
        "logs/serving/{model}.log",
    params:
        model=lambda wildcards: RESOLVED.model_params(wildcards.model),
        serving=lambda wildcards: RESOLVED.serving_params(wildcards.model) if RESOLVED.serving else {},
    script:
        "../scripts/serving.py"


SERVING_TARGETS = expand(rules.serving.output[0], model=MODELS) if RESOLVED.serving else []
