"""The model report's context: page 1 the decision (sentences and one table per stage), then operators × GPUs and
treatments × GPUs per stage, the model and hardware, the key figures, the Table 1 appendix and the caveats; per-GPU
details for the HTML. Every value a template shows is a ready string (units applied here); the templates only loop
and test flags."""
from __future__ import annotations

import pandas as pd

from ..engine.scenario import STAGES, scenario_for_model
from . import calibration, decision, matrix, served, text
from .facts import hardware_table, model_facts, model_spec
from .figure_list import figures_at
from .gpu_detail import gpu_detail
from .guard import check_context, user_text
from .page import CAVEATS, accelerators, plural, title_block
from .paper import appendix
from .workloads import workloads_section


def model_context(model: str, tables: dict[str, pd.DataFrame], specs: dict, manifest: list[dict],
                  figures_href: str, plotly_js: str = "") -> dict:
    """Everything the model report shows, for one model across the configured GPUs and stages: page 1 the
    decision (sentences and one table per stage), then operators × GPUs and treatments × GPUs per stage, the
    hardware, the key figures, the Table 1 appendix and the caveats; per-GPU detail for the HTML. `plotly_js`: the
    plotly.js bundle relative to the page (the HTML then draws the figures that have a spec interactively)."""
    gpus_all = accelerators(specs)
    spec = specs["models"][model]
    scenario = scenario_for_model(specs["scenario"], spec)  # weight_dtype 'native' resolved for this model
    plans = tables.get("plans")  # the deployment search (config section `plan`), when configured
    serving = tables.get("serving")  # the served workloads (config section `serving`), when configured
    mine = {name: frame[frame["model"] == model] for name, frame in tables.items()
            if name not in ("plans", "serving")}
    totals, treatments, ops = mine["totals"], mine["treatments"], mine["ops"]
    gpus = {k: g for k, g in gpus_all.items() if k in set(totals["gpu"])}
    stages = [s for s in STAGES if s in set(totals["stage"])]
    context = {
        "page": "model", "model": model, "model_name": spec["name"], "plotly_js": plotly_js,
        "header": title_block({**specs, "models": {model: spec}, "scenario": scenario},
                              f"Roofline report: {spec['name']}",
                              f"{plural(len(gpus), 'GPU type')}, {', '.join(stages)}",
                              hash_kind="inputs"),
        "facts": model_facts(model_spec(spec), scenario, totals.iloc[0]),
        "summary": [sentence for sentence in (served.served_sentence(plans),) if sentence]
        + text.executive_summary(spec["name"], totals, treatments, gpus, scenario, ops),
        "served": served.served_section(plans, {key: gpu.name for key, gpu in gpus.items()}),
        "decision": decision.decision_tables(totals, treatments, gpus, stages),
        "plans": decision.recommended_plans(plans, gpus_all) if plans is not None and not served.is_served(plans)
        else None,
        "workloads": workloads_section(serving, {key: gpu.name for key, gpu in gpus_all.items()}),
        "matrices": [matrices(stage, mine, gpus) for stage in stages],
        "hardware": hardware_table(gpus),
        "figures": figures_at(manifest, figures_href, "figures"),
        "gpus": [gpu_detail(key, gpu, stages, mine, gpus, scenario, manifest, figures_href)
                 for key, gpu in gpus.items()],
        "appendix": appendix(model, specs),
        "caveats": [*CAVEATS, calibration.caveat(gpus, totals)],
    }
    check_context(context, user=user_text(specs))
    return context


def matrices(stage: str, tables: dict[str, pd.DataFrame], gpus: dict) -> dict:
    """Operators × GPUs and treatments × GPUs of one stage (`tables`: this model's)."""
    totals, ops, treatments = (tables[name] for name in ("totals", "ops", "treatments"))
    stage_totals = totals[totals["stage"] == stage]
    return {"stage": stage, "title": stage.capitalize(),
            "operators": matrix.operator_matrix(ops[ops["stage"] == stage], stage_totals, gpus),
            "treatments": matrix.treatment_matrix(treatments[treatments["stage"] == stage], stage_totals, gpus)}
