"""The index page's context: links to the summary, each model report and each figure (as the figure manifests
list them), the result tables and the GPUs."""
from __future__ import annotations

from .guard import check_context, user_text
from .page import accelerators, plural, title_block

#: the pipeline's result files (paths fixed by the file contract), named by the index
RESULT_FILES = (
    ("ops.csv", "per-operator rows (also ops.parquet)"),
    ("totals.csv", "one row per model, GPU and stage (also totals.parquet)"),
    ("treatments.parquet", "what each treatment buys"),
    ("sweeps.parquet", "batch and sequence-length sweeps"),
    ("specs.json", "the resolved configuration and its hash"),
)
#: the per-model result folders of optional config sections, named by the index when their section ran
PER_MODEL_FILES = {
    "plans": ("plans/{model}.parquet", "the deployment search's frontier per GPU (config plan)"),
    "serving": ("serving/{model}.parquet", "every GPU under each served workload (config serving; what could not "
                                           "be served in its metadata)"),
}


def result_tables(per_model=()) -> list[dict]:
    """The result files the index names ({"path", "what"}): RESULT_FILES, and PER_MODEL_FILES of `per_model`."""
    tables = [{"path": f"results/{name}", "what": what} for name, what in RESULT_FILES]
    return tables + [{"path": f"results/{PER_MODEL_FILES[kind][0]}", "what": PER_MODEL_FILES[kind][1]}
                     for kind in per_model]


def index_context(specs: dict, manifests: dict[str, list[dict]], per_model: list[str] = ()) -> dict:
    """Links to the summary, each model report and each figure; `per_model`: the optional sections whose
    per-model tables were written (PER_MODEL_FILES)."""
    models = []
    for model, spec in specs["models"].items():
        figures = [{"href": f"figures/{model}/{entry.get('png') or entry['svg']}",
                    "svg": f"figures/{model}/{entry['svg']}" if entry.get("png") else "",
                    "label": entry["label"]} for entry in manifests.get(model, [])]
        models.append({"model": model, "name": spec["name"], "html": f"{model}.html", "pdf": f"{model}.pdf",
                       "figures": figures})
    gpus = accelerators(specs)
    # named, not linked: they live in results/, beside reports/, and a link out of reports/ breaks as soon as
    # reports/ is copied alone (a wiki, a web server)
    context = {
        "page": "index",
        "tables": result_tables(per_model),
        "header": title_block(specs, "Roofline reports",
                              f"{plural(len(models), 'model')} × {plural(len(gpus), 'GPU type')}"),
        "models": models,
        "gpus": [{"key": k, "name": g.name} for k, g in gpus.items()],
    }
    check_context(context, user=user_text(specs))
    return context
