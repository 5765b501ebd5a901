"""Page 1's served numbers (roofline.report.served): the serving model's deployment search, written as the plan rule
writes it and read back as the report reads it, leads the model page, the summary and the wiki."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from roofline.engine import hardware, models
from roofline.report import served, units
from roofline.report.io import load_plan
from roofline.report.render import environment
from roofline.serving.plan_io import plan_arrow_table, search_metadata
from roofline.serving.planner import PlanSettings, Workload
from roofline.serving.search_rows import plan_table_for

GPUS = ("h100-sxm", "h200-sxm")


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> pd.DataFrame:
    """Llama-3.1-8B served on an H100 and an H200 (fp8 weights and KV cache), written and read back as the plan
    rule and the report rule do."""
    import pyarrow.parquet as pq

    settings = PlanSettings(workload=Workload(isl=1024, osl=1024, tpot_s=0.05, ttft_s=1.0),
                            gpus=tuple(hardware.get_accelerator(key) for key in GPUS), max_devices=2,
                            dtypes=("fp8",), mode="aggregated", framework="vllm")
    rows, reason = plan_table_for(models.get_model("llama-3.1-8b"), settings)
    assert rows and not reason
    path = tmp_path_factory.mktemp("plans") / "llama-3.1-8b.parquet"
    pq.write_table(plan_arrow_table(rows, reason, search_metadata(settings)), path)
    return load_plan(path)


def test_the_plan_table_keeps_the_serving_columns_and_what_was_searched(searched):
    assert {"mode", "prefill_workers", "decode_workers", "spec_method", "tokens_per_s_per_user_expected"} <= set(
        searched.columns)
    assert searched.attrs["workload"] == {"isl": 1024, "osl": 1024, "tpot_s": 0.05, "ttft_s": 1.0}
    assert searched.attrs["search"]["mode"] == "aggregated" and searched.attrs["search"]["framework"] == "vllm"
    recipe = {key: searched.attrs["search"][key] for key in ("weight_dtypes", "fp8_scaling", "attention_weight_dtype")}
    assert recipe == {"weight_dtypes": ["fp8"], "fp8_scaling": "tensor", "attention_weight_dtype": ""}
    searched_kv = searched.attrs["search"]["kv_dtypes"]
    assert searched_kv and set(searched["kv_dtype"]) <= set(searched_kv)
    assert served.is_served(searched)


def test_the_served_table_has_one_row_per_gpu_with_expected_and_bound(searched):
    section = served.served_section(searched)
    picked = searched[searched["recommended"]]
    assert len(section["rows"]) == len(picked) == len(GPUS)
    # best first: both meet the targets in expectation, so the most expected tokens/s per GPU leads
    per_gpu = sorted(picked["tokens_per_s_per_device_expected"], reverse=True)
    first = picked[picked["tokens_per_s_per_device_expected"] == per_gpu[0]].iloc[0]
    row = section["rows"][0]
    assert row["deployment"]["text"] == first["deployment"]
    # 'expected (bound)', each half kept on one line (no-break spaces): a narrow column breaks between the two
    def both(expected, bound):
        return f"{units.seconds(expected)} ({units.seconds(bound)})".replace(" ", "\u00a0").replace("\u00a0(", " (")

    assert row["ttft"]["text"] == both(first["ttft_expected_s"], first["ttft_s"])
    assert row["tpot"]["text"] == both(first["tpot_expected_s"], first["tpot_s"])
    assert row["concurrency"]["text"] == units.integer(first["batch"])
    assert row["target"]["text"] == "yes" and first["tpot_expected_s"] <= 0.05 and first["ttft_expected_s"] <= 1.0
    # the mode and the estimate read the same in every row (both devices have measured vLLM tables): said once
    # under the table, not as columns
    assert not {"mode", "estimate"} & {column["key"] for column in section["columns"]}
    assert set(picked["estimate"]) == {"calibrated"}
    assert section["constant"] == "Mode: aggregated in every row. Estimate: calibrated in every row."
    assert "vllm" in section["workload"] and "TPOT ≤ 50.0 ms" in section["workload"]


def test_the_caption_says_what_the_plans_were_ranked_on(searched):
    # with plan.rank_on: bound it said "ranks first on the expected times" over rows that miss the targets in
    # expectation (a config fuzz of the pipeline)
    assert searched.attrs["search"]["rank_on"] == "expected"  # what search_metadata writes
    assert "ranks first on the expected times" in served.served_section(searched)["ranking"]
    on_bounds = searched.copy()
    on_bounds.attrs = {**searched.attrs, "search": {**searched.attrs["search"], "rank_on": "bound"}}
    assert served.served_section(on_bounds)["ranking"].startswith("ranks first on the roofline bounds among those "
                                                                  "that fit and whose bounds meet the targets")
    # and the order of the rows is said as it is: measured kernels first only where the search ranked on expected
    assert served.served_section(searched)["order"] == served.ORDERS["expected"]
    assert served.served_section(on_bounds)["order"] == served.ORDERS["bound"]


def test_the_first_sentence_names_the_best_deployment_under_load(searched):
    sentence = served.served_sentence(searched)
    best = served.served_section(searched)["rows"][0]
    assert sentence.startswith("Served under load (vllm, 1,024 prompt and 1,024 output tokens per request")
    assert best["deployment"]["text"] in sentence and "meets the targets in expectation" in sentence


def test_a_plan_that_misses_its_target_in_expectation_says_by_how_much(searched):
    strict = searched.copy()
    strict.attrs = {**searched.attrs, "workload": {**searched.attrs["workload"], "tpot_s": 0.001}}  # 1 ms: missed
    row = served.served_section(strict)["rows"][0]
    assert row["target"]["text"].startswith("no: TPOT ") and row["target"]["text"].endswith("> 1.00 ms expected")
    assert "misses: TPOT" in served.served_sentence(strict)


def test_a_step_model_search_keeps_the_old_table():
    steps = pd.DataFrame({"recommended": [True], "deployment": ["1 x H100"]})
    assert not served.is_served(steps) and served.served_section(steps) is None
    assert served.served_sentence(steps) == "" and served.served_section(None) is None


def test_an_estimate_that_differs_between_rows_gets_its_column(searched):
    mixed = searched.copy()
    mixed.attrs = searched.attrs
    first = mixed.index[mixed["recommended"]][0]
    mixed.loc[first, "estimate"] = "default"  # as a device without measured tables would be
    section = served.served_section(mixed)
    assert "estimate" in [column["key"] for column in section["columns"]]
    assert {row["estimate"]["text"] for row in section["rows"]} == {"default", "calibrated"}


def test_a_concurrency_the_deployment_cannot_raise_is_marked_full_and_explained(searched):
    # the search's concurrency stops at kv_capacity_requests (the KV cache's and the framework's running-sequence
    # cap, the smaller); a reader must not take that for the targets' limit
    assert served.CAPPED not in served.served_section(searched)["constant"]
    capped = searched.copy()
    capped.attrs = searched.attrs
    first = capped.index[capped["recommended"]][0]
    capped.loc[first, "kv_capacity_requests"] = capped.loc[first, "batch"]
    section = served.served_section(capped)
    users = {row["concurrency"]["text"] for row in section["rows"]}
    assert f"{units.integer(capped.loc[first, 'batch'])} (full)" in users
    assert section["constant"].endswith(served.CAPPED_NOTE) and "max_num_seqs" in section["constant"]
    # a capacity between two points of the search's grid (steps of 16 past 256): the next point did not fit
    capped.loc[first, ["batch", "kv_capacity_requests"]] = (592, 596.0)
    assert served.at_capacity(capped.loc[first]) and not served.at_capacity(capped.loc[first].replace(596.0, 700.0))
    capped.loc[first, "fits"] = False  # users beyond the cache wait: said by the cell's mark, not as full
    assert not any(served.CAPPED in row["concurrency"]["text"] for row in served.served_section(capped)["rows"])


def test_the_summary_groups_the_served_rows_by_model(searched):
    specs = {"models": {"llama-3.1-8b": {"name": "meta-llama/Llama-3.1-8B"}, "llama-2-7b": {"name": "Llama 2"}}}
    table = served.summary_served({"llama-3.1-8b": searched}, specs)
    assert [row["model"] for row in table["rows"]] == ["llama-3.1-8b"] * len(GPUS)
    assert [row["first"] for row in table["rows"]] == [True] + [False] * (len(GPUS) - 1)
    assert served.summary_served({}, specs) is None
    assert table["unmet"] == []
    # a model whose search kept no plan is said under the table (it was left out without a word)
    none = searched.iloc[:0].copy()
    none.attrs = {**searched.attrs, "reason": "no plan meets TPOT <= 0.001 ms"}
    table = served.summary_served({"llama-3.1-8b": searched, "llama-2-7b": none}, specs)
    assert table["unmet"] == [{"name": "Llama 2", "reason": "no plan meets TPOT <= 0.001 ms"}]
    alone = served.summary_served({"llama-2-7b": none}, specs)
    assert alone["rows"] == [] and alone["unmet"] and alone["columns"] == []


def test_the_model_page_renders_the_served_table_before_the_stage_tables(searched):
    section = served.served_section(searched)
    html = environment().from_string(
        '{% from "macros.html.j2" import td %}'
        "{% for row in served.rows %}{% for column in served.columns %}{{ td(row[column.key], column.numeric) }}"
        "{% endfor %}{% endfor %}").render(served=section)
    # a cell's two numbers may wrap before the parenthesis (macros.td): each part whole, the text as it reads
    assert section["rows"][0]["tpot"]["text"] in re.sub(r"<[^>]+>", "", html)
    assert '<span class="nowrap">' + section["rows"][0]["tpot"]["text"].split(" (")[0] + "</span>" in html
    template = (environment().loader.get_source(environment(), "model.html.j2")[0])
    assert template.index("Served under load") < template.index("{% for table in decision %}")


def test_fp8_weights_say_their_scales(searched):
    # DeepSeek-V3's header said "fp8 (block scales)" while its served row, "fp8 / fp8", was a per-tensor
    # re-quantization (plan.fp8_scaling tensor): the cell now says which
    cells = [row["precision"]["text"] for row in served.served_section(searched)["rows"]]
    assert cells and all(text == "fp8\u00a0(tensor) / fp8" for text in cells), cells
    block = searched.copy()
    block["fp8_scaling"] = "block"
    assert served.served_section(block)["rows"][0]["precision"]["text"] == "fp8\u00a0(block) / fp8"


def test_the_served_notes_say_what_tokens_count_and_what_the_times_rest_on(searched):
    # a reader compared page 1's served TTFT (the framework's time per request and a step's residual inside) with
    # the single-step prefill beside it, and asked whether tokens/s counted the prompts; the caveats named the step
    # model's kernel tables, not the served ones
    from roofline.serving.framework import FITTED

    section = served.served_section(searched, {"h100-sxm": "H100 SXM5 80GB", "h200-sxm": "H200 SXM 141GB"})
    basis = section["basis"]
    assert basis.startswith("Tokens/s counts output tokens (a request's prompt tokens are not in it).")
    assert f"vllm's {units.seconds(FITTED['vllm'][1])} per request outside the GPU steps" in basis
    assert "hand a request between disaggregated pools" not in basis  # every row aggregated
    for gpu in GPUS:  # each GPU's table, by the report's name
        name = {"h100-sxm": "H100 SXM5 80GB", "h200-sxm": "H200 SXM 141GB"}[gpu]
        calibration = searched[searched["gpu"] == gpu]["calibration"].iloc[0]
        assert f"{name}: {calibration}" in basis and f"{gpu}.vllm" in calibration
    summary = served.summary_served({"llama-3.1-8b": searched}, {"models": {"llama-3.1-8b": {"name": "Llama"}}})
    assert summary["basis"].startswith("Tokens/s counts output tokens")
    assert served.basis_note([]) == "" and served.basis_note([searched.iloc[:0]]) == ""
    # a device without a table of its own says so, a NaN calibration too (groupby had dropped it)
    bare = searched.assign(calibration="none")
    assert "h100-sxm: no measured table (the documented default)" in served.basis_note([bare])
    unknown = searched.assign(calibration=searched["calibration"].where(searched["gpu"] != "h200-sxm"))
    assert "h200-sxm: no measured table (the documented default)" in served.basis_note([unknown])
    # a table without a framework column still names its kernel tables
    assert "Measured kernels behind the expected times: h100-sxm: " in served.basis_note([searched.drop(
        columns="framework")])


def test_a_pair_of_numbers_wraps_before_its_parenthesis_only():
    from roofline.report.decision import cell

    html = environment().from_string('{% from "macros.html.j2" import td %}{{ td(a) }}{{ td(b) }}{{ td(c, False) }}'
                                     ).render(a=cell("47.2 ms (34.2 ms)"), b=cell("154"), c=cell("compute (mostly)"))
    assert ('<td class="num pair"><span class="nowrap">47.2 ms</span> <span class="nowrap">(34.2 ms)</span></td>'
            in html)
    # a lone number, and text cells, as they were
    assert '<td class="num">154</td>' in html and '<td class="">compute (mostly)</td>' in html


def test_the_interactive_pareto_marks_the_recommended_plan_as_the_static_figure_does(searched):
    # the subtitle said "ring" where the caption says "open dot"; the filled dots' white edges turned a dense
    # stretch of the frontier into a pale band that read as another category
    import numpy as np

    from roofline.figures.interactive import plan_spec

    spec = plan_spec(searched, "Llama", 0.05, {key: key for key in GPUS})
    assert "open dot: each device's recommended plan, star: the chosen one" in spec["layout"]["title"]["text"]
    for trace in spec["data"]:
        symbols, widths = np.array(trace["marker"]["symbol"]), np.array(trace["marker"]["line"]["width"])
        assert (widths[symbols == "circle-open"] == 2).all() and (widths[symbols != "circle-open"] == 0).all()
    assert any("circle-open" in trace["marker"]["symbol"] for trace in spec["data"])


def test_a_deployment_breaks_between_its_parts_only():
    # "4 x H200 SXM 141GB, TP 4, EP" / "4" in a narrow column: the plan's numbers stay with their names
    from roofline.report.decision import cell

    html = environment().from_string('{% from "macros.html.j2" import td, gpu_th %}{{ td(a, False) }}{{ gpu_th(b) }}'
                                     ).render(a=cell("4 x H200 SXM 141GB, TP 4, EP 4", css="name"),
                                              b={"name": "16 x RTX A6000, TP 8, PP 2", "misfit": ""})
    assert "4\u00a0x H200 SXM 141GB, TP\u00a04, EP\u00a04</td>" in html
    assert "16\u00a0x RTX A6000, TP\u00a08, PP\u00a02</th>" in html


def test_the_weights_label_names_the_parts_a_checkpoint_keeps_in_another_dtype():
    # gpt-oss-120b's served rows had read "fp16 / fp16": 117 B parameters in 16 bits on one H200
    import pandas as pd

    from roofline.report.served import NBSP, weights_label

    row = pd.Series({"weight_dtype": "fp16", "expert_weight_dtype": "mxfp4", "attention_weight_dtype": "fp16"})
    assert weights_label(row) == f"fp16, experts{NBSP}mxfp4"
    nvfp4 = pd.Series({"weight_dtype": "nvfp4", "attention_weight_dtype": "bf16", "fp8_scaling": "tensor"})
    assert weights_label(nvfp4) == f"nvfp4, attention{NBSP}bf16"
    assert weights_label(pd.Series({"weight_dtype": "fp8", "fp8_scaling": "block"})) == f"fp8{NBSP}(block)"


def test_lists_of_deployments_are_told_apart_where_their_names_hold_commas():
    # "on 2 x H100 SXM5 80GB, TP 2, 2 x A100 80GB SXM, TP 2, ..." could not be read back into deployments
    from roofline.report.text.words import and_list, names_joined

    plans = ["2 x H100 SXM5 80GB, TP 2", "2 x A100 80GB SXM, TP 2", "1 x L40S"]
    assert names_joined(plans) == "2 x H100 SXM5 80GB, TP 2; 2 x A100 80GB SXM, TP 2; 1 x L40S"
    assert and_list(plans) == "2 x H100 SXM5 80GB, TP 2; 2 x A100 80GB SXM, TP 2 and 1 x L40S"
    assert names_joined(["H100", "H200"]) == "H100, H200" and and_list(["a", "b", "c"]) == "a, b and c"


def test_devices_needed_says_when_the_device_links_to_no_other():
    # a device without an interconnect had been told "Devices needed ≥ 2" for Mixtral, a plan it cannot run
    import pandas as pd

    from roofline.report.decision import devices_needed

    misfit = pd.Series({"deployment": "1 x Globex", "devices": 1, "tokens_per_s_per_device": 1.0, "fits": False,
                        "footprint_bytes": 94e9, "usable_memory_bytes": 92.8e9})
    assert devices_needed(misfit) == "≥ 2"
    assert devices_needed(misfit, 1.0) == "≥ 2, no link"
    assert devices_needed(pd.Series({**misfit, "footprint_bytes": 400e9}), 4.0) == "≥ 5, links reach 4"
    assert devices_needed(pd.Series({**misfit, "fits": True}), 1.0) == "1"
