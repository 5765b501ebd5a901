"""The optional `plan` config section: its resolution and one-line errors, and the plan rules end to end (a copy of
the workflow, a config with one model, two gpus and a plan section, only the plan targets built)."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from roofline.engine.columns import COST_COLUMNS, PLAN_COLUMNS, PLAN_TABLE_EXTRA_COLUMNS
from roofline.engine.errors import RooflineInputError
from roofline.pipeline import config as rc
from roofline.pipeline.io import read_plan_table
from roofline.pipeline.schema import load_schema
from workflow_copy import copy_workflow

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SCHEMA = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")
BASE = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}, "rtx-a6000": {"bandwidth_gbps": 700}},
        "stages": ["decode"]}


def resolve(**plan):
    return rc.resolve_config({**BASE, "plan": plan}, ROOT)


def test_plan_section_resolves_with_defaults_and_configured_gpus():
    assert rc.resolve_config(BASE, ROOT).plan_search is None  # absent: no search
    settings = resolve(tpot_ms=50, gpus=["rtx-a6000", "h200-sxm"]).plan_search
    assert (settings.workload.isl, settings.workload.osl, settings.workload.tpot_s) == (1024, 1024, 0.05)
    assert settings.workload.ttft_s is None and settings.max_devices == 8
    # a configured gpu keeps its config entry (the overridden bandwidth); a catalog key is taken as is
    assert [g.bandwidth_bytes_per_s for g in settings.gpus] == [700e9, 4800e9]
    assert [g.key for g in resolve().plan_search.gpus] == ["h100-sxm", "rtx-a6000"]  # default: every configured gpu
    # an attention dtype of its own means the serving model's search, as weight_dtypes does
    served = resolve(attention_weight_dtype="bf16").plan_search
    assert (served.attention_weight_dtype, served.mode) == ("bf16", "aggregated")
    block = resolve(fp8_scaling="block").plan_search  # so does an fp8 scaling
    assert (block.fp8_scaling, block.mode) == ("block", "aggregated")
    # the scenario's fp8 scaling is the search's unless the plan section sets its own, as memory_utilization
    inherited = rc.resolve_config({**BASE, "scenario": {"fp8_scaling": "block"}, "plan": {"mode": "aggregated"}},
                                  ROOT).plan_search
    assert inherited.fp8_scaling == "block"


@pytest.mark.parametrize("plan, message", [
    ({"gpus": ["h100-sxn"]}, "plan.gpus: unknown value 'h100-sxn' (did you mean 'h100-sxm'?)"),
    ({"isl": 4000, "osl": 200}, "plan.isl + osl: 4000 + 200 = 4200 tokens do not fit the context of llama-2-7b (4096"),
    ({"prefill": "chunked"}, "plan.prefill: unknown value 'chunked'"),
    ({"kv_dtypes": ["int4"]}, "plan.kv_dtypes: int4 is not served: no serving framework caches keys and values"),
    ({"attention_weight_dtype": "bf17"}, "plan.attention_weight_dtype: unknown value 'bf17' (did you mean 'bf16'?)"),
    ({"attention_weight_dtype": "bf16", "prefill": "separate"}, "plan.prefill: not with plan.mode"),
    ({"fp8_scaling": "blok"}, "plan.fp8_scaling: unknown value 'blok' (did you mean 'block'?)"),
    ({"fp8_scaling": "block", "prefill": "separate"}, "plan.prefill: not with plan.mode"),
])
def test_bad_plan_section_is_one_line(plan, message):
    with pytest.raises(RooflineInputError) as error:
        resolve(**plan)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_schema_describes_every_plan_key():
    plan = SCHEMA["properties"]["plan"]
    assert plan["additionalProperties"] is False
    assert all("description" in spec for spec in plan["properties"].values())
    assert set(yaml.safe_load((ROOT / "config.yaml").read_text())["plan"]) == set(plan["properties"])


@pytest.mark.parametrize("name", PLAN_COLUMNS + COST_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS)
def test_readme_lists_plan_column(name):
    assert f"`{name}`" in README


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("plan-e2e")
    repo, work = root / "repo", root / "work"
    copy_workflow(repo)
    work.mkdir()
    config = {**BASE, "models": {"llama-2-7b": {}, "llama-3.1-70b": {}}, "gpus": {"h100-sxm": {}, "rtx-a6000": {}},
              "plan": {"isl": 1024, "osl": 1024, "tpot_ms": 10, "gpus": ["h100-sxm", "rtx-a6000"],
                       "dtypes": ["fp16", "fp8", "int8"], "rank_on": "bound",  # the bounds' arithmetic below
                       "max_devices": 1}}  # one device: the arithmetic below stays simple
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    # the Pareto figure is one of the model's figures (reports/figures/{model}/pareto.*)
    targets = [target for m in config["models"] for target in (f"results/plans/{m}.parquet", f"reports/figures/{m}")]
    run = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory",
                          str(work), "--configfile", "config.yaml", "--replace-workflow-config", "--cores", "2",
                          *targets], cwd=work, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return work


def test_plan_table_holds_each_gpus_frontier(built):
    table, reason = read_plan_table(built / "results" / "plans" / "llama-2-7b.parquet")
    assert reason == "" and tuple(table.columns) == PLAN_COLUMNS + COST_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS
    assert set(table["gpu"]) == {"h100-sxm", "rtx-a6000"}
    assert table["fits"].all() and (table["tpot_s"] <= 0.010).all()
    assert table.groupby("gpu")["recommended"].sum().tolist() == [1, 1] and table["chosen"].sum() == 1
    best = table.loc[table["tokens_per_s_per_device"].idxmax()]
    assert best["chosen"] and best["on_frontier"] and best["gpu"] == "h100-sxm"  # 3.35 TB/s vs 0.77 TB/s
    # the A6000 just makes 10 ms: int8 weights (6.7 GB / 768 GB/s = 8.8 ms per step) at small batches
    a6000 = table[table["gpu"] == "rtx-a6000"]
    assert set(a6000["weight_dtype"]) == {"int8"} and a6000["batch"].max() < 8
    assert (built / "reports" / "figures" / "llama-2-7b" / "pareto.svg").stat().st_size > 0


def test_plan_table_is_empty_with_the_reason_when_nothing_qualifies(built):
    # Llama-3.1-70B at 8 bits (the narrowest dtypes searched here): one decode step reads its 68.5e9 layer weights
    # at 1 byte and lm_head's 1.05e9 at 16 bits (quantized checkpoints keep it so), 70.6 GB / 3.35 TB/s = 21.1 ms,
    # plus the KV cache (0.25 GB at 1536 tokens) on one H100 (and it never fits the 48 GB RTX A6000): no
    # single-device plan meets 10 ms
    table, reason = read_plan_table(built / "results" / "plans" / "llama-3.1-70b.parquet")
    assert len(table) == 0 and tuple(table.columns) == PLAN_COLUMNS + COST_COLUMNS + PLAN_TABLE_EXTRA_COLUMNS
    assert reason.startswith("no plan meets TPOT <= 10 ms: the lowest TPOT any plan that fits reaches is 21.2 ms: ")
    assert "1 x H100 SXM5 80GB at batch 1, fp8 weights" in reason
    assert (built / "reports" / "figures" / "llama-3.1-70b" / "pareto.png").stat().st_size > 0
