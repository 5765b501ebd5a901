"""What readers see (issue 19): bound labels that know the network, relative links only in published files, the
decision summary, devices added by hand, interactive HTML that works offline."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

import roofline
from roofline.report.text import step_bound

ROOT = Path(__file__).resolve().parents[1]


def test_totals_bound_is_network_where_the_collectives_take_most_of_the_step():
    row = roofline.totals(model="llama-3.1-70b", gpu="l40s", stage="prefill", tp=4).iloc[0]
    assert row["bound"] == "network" and row["network_share"] > 0.5
    assert "network" in step_bound(row) and "compute" not in step_bound(row)


def test_bound_words_follow_the_totals_column():
    row = pd.Series({"memory_bound_share": 0.3, "network_share": 0.35, "bound": "network"})
    assert step_bound(row) == "partly network-bound"  # 35%: the largest of three shares, no majority
    row = pd.Series({"memory_bound_share": 0.3, "network_share": 0.55, "bound": "network"})
    assert step_bound(row) == "mostly network-bound"
    assert step_bound(pd.Series({"memory_bound_share": 0.95, "network_share": 0.0})) == "memory-bound"


def test_plan_prints_a_bounded_number_of_rows_and_says_how_many_it_left_out(capsys):
    from roofline.cli.app import main

    argv = "plan --model llama-3.1-8b --gpu l40s --isl 512 --osl 256 --format csv".split()
    main(argv)
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1 + 20
    assert "20 of " in captured.err and "--top 0" in captured.err
    main(argv + ["--top", "0"])
    assert len(capsys.readouterr().out.splitlines()) > 21


def test_a_config_json_model_is_named_after_name_or_path(tmp_path):
    import json

    from roofline.engine.hf_config import model_from_hf_config

    source = json.loads((ROOT / "tests/data/hf_configs/llama-2-7b.json").read_text())
    folder = tmp_path / "my-checkout"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(source))
    assert model_from_hf_config(folder / "config.json").key == "Llama-2-7b-hf"
    del source["_name_or_path"]
    (folder / "config.json").write_text(json.dumps(source))
    assert model_from_hf_config(folder / "config.json").key == "my-checkout"


ACME = {"name": "ACME X1", "memory_gb": 96, "bandwidth_gbps": 4000,
        "peak_tflops": {"bf16": 1200, "fp16": 1200, "fp8": 2400, "int8": 2400}}


def acme_config(**gpus) -> dict:
    import yaml

    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config.update(models={"llama-3.1-70b": {}}, gpus=gpus, stages=["decode"])
    config["plan"] = {**config["plan"], "gpus": list(gpus), "max_devices": 4, "dtypes": ["fp16"]}
    return config


def test_an_accelerator_added_as_the_readme_shows_gets_tp_plans():
    """The README's acme-x1 block with scaleup_domain and scaleup_gbps: parallel auto and the deployment search
    split Llama-3.1-70B (141 GB at fp16) over several devices, as for a catalog device; without them it stays one
    device and the page says so and why."""
    from roofline.pipeline.config import resolve_config
    from roofline.report.text import fit_sentence
    from roofline.serving import planner

    config = acme_config(**{"acme-x1": {**ACME, "scaleup_domain": 8, "scaleup_gbps": 450}, "acme-x0": ACME})
    resolved = resolve_config(config, base_dir=ROOT)
    plans = resolved.plans["llama-3.1-70b"]
    assert plans["acme-x1"].tp == 2 and plans["acme-x0"].devices == 1
    search = resolved.plan_search
    rows, _ = planner.plan_table(resolved.models["llama-3.1-70b"], search)
    assert rows and min(row["tp"] for row in rows if row["gpu"] == "acme-x1") > 1  # 141 GB never fits one
    assert {row["devices"] for row in rows if row["gpu"] == "acme-x0"} <= {1}
    totals = pd.DataFrame([{"gpu": "acme-x0", "stage": "decode", "fits": False, "footprint_bytes": 1.5e11,
                            "deployment": "1 x ACME X1", "devices": 1, "weight_bytes_per_device": 1.4e11,
                            "kv_cache_bytes_per_device": 1e9, "activation_bytes": 1e6}])
    sentence = fit_sentence(totals, {"acme-x0": "ACME X0"}, {"acme-x0": resolved.gpus["acme-x0"]})
    assert "no interconnect" in sentence and "limited to one device" in sentence
    assert "parallel: auto, or a plan with more devices, spreads it" not in sentence


def test_header_shows_moe_routing_and_mla_only_for_models_that_read_them():
    from roofline.report.page import title_block
    scenario = {"batch": 1, "seq_len": 2048, "weight_dtype": "fp16", "act_dtype": "fp16", "kv_dtype": "fp16",
                "attention": "flash", "logits": "last", "expert_routing": "uniform", "mla_mode": "absorbed"}

    def shown(*models):
        specs = {"scenario": scenario, "stages": ["decode"], "config_sha256": "0" * 64,
                 "models": {f"m{i}": {"n_experts": e, "kv_lora_rank": c} for i, (e, c) in enumerate(models)}}
        return [name for name, _ in title_block(specs, "t", "s")["scenario"]]

    assert "MoE routing" not in shown((0, 0)) and "MLA" not in shown((0, 0))  # a dense model
    assert "MoE routing" in shown((8, 0)) and "MLA" not in shown((8, 0))  # Mixtral
    assert {"MoE routing", "MLA"} <= set(shown((0, 0), (256, 512)))  # a summary with DeepSeek-V3 among them


def test_a_range_whose_ends_read_the_same_is_one_value():
    # 10.1% and 10.4% both print as '10%': the prefill sentence said '10%–10% of its time'
    from roofline.report import units
    from roofline.report.text.words import value_range
    assert value_range({"a": 0.101, "b": 0.104}, units.percent) == "10%"
    assert value_range({"a": 0.91, "b": 0.97}, units.percent) == "91%–97%"
