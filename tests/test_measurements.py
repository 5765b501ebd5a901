"""Your own measurements beside ours: reading CSV and vllm bench serve files, matching them to the config, predicting
each run, the report's section, and one line per bad input (naming the file, the row and the column).

The example files in tests/data/measurements/ hold made-up values in the real layouts (not measurements)."""
import json
import math
from dataclasses import replace
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from roofline.engine import hardware, models
from roofline.engine.analysis import totals
from roofline.engine.columns import MEASUREMENT_COLUMNS
from roofline.engine.errors import RooflineInputError
from roofline.engine.parallel import Parallel
from roofline.engine.scenario import Scenario
from roofline.pipeline import config as rc
from roofline.pipeline.measurements import match_model, read_runs, resolve_measurements, unmatched_lines
from roofline.pipeline.schema_messages import describe_schema_error
from roofline.report.measured import error_text, measured_section
from roofline.report.render import environment
from roofline.serving.measured import PREDICTED, MeasuredRun, error, measurement_rows, predict_run
from roofline.serving.serve import Workload, prepare_served, serve_aggregated
from test_plan_workflow import SCHEMA

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "measurements"
CSV, VLLM = DATA / "example_runs.csv", DATA / "example_vllm_bench.json"
LLAMA2, H100, A6000 = (models.get_model("llama-2-7b"), hardware.get_accelerator("h100-sxm"),
                       hardware.get_accelerator("rtx-a6000"))
CONFIG = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}, "rtx-a6000": {}},
          "scenario": {"weight_dtype": "fp16"}}
HEADER = "model,gpu,tp,isl,osl,concurrency,ttft_ms,tpot_ms,tokens_per_s"


def resolve(measurements, base=ROOT):
    return rc.resolve_config({**CONFIG, "measurements": measurements}, base).measurements


def test_csv_rows_in_si_units_with_defaults_and_extra_columns_ignored():
    first, second, a6000, *_ = read_runs(CSV, "runs.csv")
    assert (first.source, first.model, first.gpu, first.tp, first.pp, first.ep) == ("runs.csv line 2", "llama-2-7b",
                                                                                      "h100-sxm", 1, 1, 1)
    # 28.1 ms, 9.02 ms: milliseconds / 1000
    assert (first.isl, first.osl, first.concurrency, first.ttft_s, first.tpot_s, first.tokens_per_s) == (
        1024, 256, 1, 0.0281, 0.00902, 110.5)
    assert (a6000.tp, a6000.framework, second.concurrency) == (2, "sglang", 8)


def test_vllm_bench_serve_result_is_mapped():
    (run,) = read_runs(VLLM, "bench.json")
    # isl = total_input_tokens / completed = 204800 / 200, osl = 51200 / 200; model_id is the catalog name of
    # llama-2-7b; gpu and tp come from --metadata (tp as the string "1", as vLLM writes it)
    assert (run.source, run.gpu, run.tp, run.isl, run.osl, run.concurrency) == ("bench.json result 1", "h100-sxm",
                                                                                 1, 1024, 256, 32)
    assert (run.ttft_s, run.tpot_s, run.tokens_per_s, run.framework) == (0.0417, 0.0198, 1216.2, "vllm")
    assert match_model(run.model, {"llama-2-7b": LLAMA2}) == "llama-2-7b"


def test_vllm_appended_results_one_object_per_line(tmp_path):
    result = json.loads(VLLM.read_text())
    lines = [json.dumps({**result, "max_concurrency": n, "model": "llama-2-7b"}) for n in (4, 16)]
    (tmp_path / "appended.json").write_text("\n".join(lines) + "\n")
    runs = read_runs(tmp_path / "appended.json", "appended.json")
    assert [run.concurrency for run in runs] == [4, 16] and runs[1].source == "appended.json result 2"


def test_model_names_match_keys_names_and_repo_ids():
    catalog = {"llama-2-7b": LLAMA2}
    for name in ("llama-2-7b", "meta-llama/Llama-2-7b-hf", "Llama-2-7b-hf", "LLAMA-2-7B"):
        assert match_model(name, catalog) == "llama-2-7b", name
    assert match_model("meta-llama/Llama-2-7b-chat-hf", catalog) is None


def test_runs_the_config_lacks_are_listed_not_dropped():
    runs = resolve(["tests/data/measurements/example_runs.csv", "tests/data/measurements/example_vllm_bench.json"])
    assert len(runs) == 6  # every row of both files
    assert [run.status for run in runs if run.status != PREDICTED] == [
        "model 'mistral-7b' is not in the config", "gpu 'b200' is not in the config"]
    # a name with an invisible character says so (a NUL had printed as "model 'llama-2-7b' is not in the config")
    from dataclasses import replace

    from roofline.pipeline.measurements import _matched

    hidden = _matched(replace(runs[0], model="llama-2-7b\x00"), {"llama-2-7b": LLAMA2}, {}, Scenario())
    assert hidden.status == "model 'llama-2-7b\\x00' is not in the config"
    assert unmatched_lines(runs) == [
        "measurements: tests/data/measurements/example_runs.csv line 5 is not predicted: model 'mistral-7b' is not "
        "in the config",
        "measurements: tests/data/measurements/example_runs.csv line 6 is not predicted: gpu 'b200' is not in the "
        "config"]
    assert resolve(None) == () and rc.resolve_config(CONFIG, ROOT).measurements == ()


def test_prediction_is_the_serving_model_at_the_runs_workload():
    run = MeasuredRun(source="x", model="llama-2-7b", gpu="rtx-a6000", tp=2, isl=512, osl=128, concurrency=4,
                      ttft_s=0.05, tpot_s=0.02, tokens_per_s=150.0, framework="sglang")
    guess = predict_run(LLAMA2, A6000, Scenario(weight_dtype="fp16"), run)
    plan = Parallel(tp=2)
    sc = Scenario(weight_dtype="fp16", parallel=plan)
    # the serving model at the run's deployment, framework and workload: 4 closed-loop users, 512/128 tokens
    served = serve_aggregated(prepare_served(LLAMA2, A6000, sc, "sglang"), Workload(512, 128, concurrency=4),
                              overflow="queue")
    assert {k: guess[k] for k in ("ttft_s", "ttft_expected_s", "tpot_s", "tpot_expected_s", "tokens_per_s")} == {
        k: served[k] for k in ("ttft_s", "ttft_expected_s", "tpot_s", "tpot_expected_s", "tokens_per_s")}
    assert guess["deployment"] == "2 x RTX A6000, TP 2" and guess["fits"]
    # independent checks: the TTFT bound is one prompt of 512 tokens alone at the roofline; the TPOT bound is at
    # most the decode step of all 4 users at the mean KV length 512 + 128 / 2 = 576 (some users are prefilling)
    prefill = totals(LLAMA2, A6000, "prefill", Scenario(batch=1, seq_len=512, weight_dtype="fp16", parallel=plan))
    decode = totals(LLAMA2, A6000, "decode", Scenario(batch=4, seq_len=576, weight_dtype="fp16", parallel=plan))
    assert guess["ttft_s"] == pytest.approx(prefill["ttft_s"], rel=0.02)
    assert guess["tpot_s"] <= decode["tpot_s"] * 1.001
    # under load the expected times include the host time and the prompts mixed into the decode steps
    assert guess["tpot_expected_s"] > guess["tpot_s"] and guess["ttft_expected_s"] > guess["ttft_s"]
    assert guess["tokens_per_s_expected"] <= 4 / guess["tpot_expected_s"] * 1.001


def test_a_run_the_model_cannot_serve_is_listed_not_raised():
    run = MeasuredRun(source="runs.csv line 2", model="llama-2-7b", gpu="rtx-a6000", tp=1, isl=8000, osl=1000,
                      concurrency=2, ttft_s=0.05, tpot_s=0.02, tokens_per_s=150.0)
    row, = measurement_rows(LLAMA2, {"rtx-a6000": A6000}, Scenario(weight_dtype="fp16"), [run])
    # 8000 + 1000 tokens exceed Llama-2-7B's 4096 positions
    assert row["status"].startswith("not predicted: isl + osl") and math.isnan(row["tpot_expected_s"])


def test_error_is_expected_over_measured_minus_one():
    assert error(0.011, 0.010) == pytest.approx(0.1)  # expected 11 ms, measured 10 ms: +10%
    assert math.isnan(error(0.011, math.nan)) and math.isnan(error(math.nan, 0.01))
    assert (error_text(0.1), error_text(-0.04), error_text(math.nan)) == ("+10.0%", "−4.0%", "—")


def test_measurement_rows_have_the_documented_columns():
    runs = resolve(["tests/data/measurements/example_runs.csv"])
    rows = measurement_rows(LLAMA2, {"h100-sxm": H100, "rtx-a6000": A6000}, Scenario(weight_dtype="fp16"),
                            [run for run in runs if run.model == "llama-2-7b"])
    assert all(tuple(row) == MEASUREMENT_COLUMNS for row in rows) and len(rows) == 4
    b200 = rows[-1]  # a gpu the config lacks: measured values kept, no prediction
    assert b200["status"] == "gpu 'b200' is not in the config" and math.isnan(b200["tpot_s"])
    assert b200["tpot_measured_s"] == 0.006
    first = rows[0]
    assert first["tpot_error"] == pytest.approx(first["tpot_expected_s"] / 0.00902 - 1)


def test_report_section_three_significant_digits_and_the_unpredicted_listed():
    runs = resolve(["tests/data/measurements/example_runs.csv"])
    frame = pd.DataFrame(measurement_rows(LLAMA2, {"h100-sxm": H100, "rtx-a6000": A6000},
                                          Scenario(weight_dtype="fp16"),
                                          [run for run in runs if run.model == "llama-2-7b"]))
    section = measured_section(frame)
    first = section["rows"][0]
    assert first["deployment"] == "1 x H100 SXM5 80GB"
    assert [cell["measured"] for cell in first["cells"]] == ["28.1 ms", "9.02 ms", "110 tokens/s"]
    assert section["not_predicted"] == ["tests/data/measurements/example_runs.csv line 6: gpu 'b200' is not in "
                                        "the config"]
    html = environment().get_template("measured.html.j2").render(measured=section)
    assert "Your measurements beside ours" in html and "28.1 ms" in html and "b200" in html
    assert environment().get_template("measured.html.j2").render().strip() == ""  # no measurements: no section


def test_a_run_beyond_its_bound_is_flagged_in_the_table_the_report_and_the_log(tmp_path, capsys):
    # seconds typed into the ms columns (0.0624, 0.0079): Llama-2-7B fp16 on one H100 cannot decode a token in
    # 7.9 us (13.5 GB of weights / 3.35 TB/s = 4.0 ms): the run had built without a word, its "!" the only sign
    from roofline.pipeline.io import write_measured_table

    (tmp_path / "runs.csv").write_text(HEADER + "\nllama-2-7b,h100-sxm,1,1024,256,8,0.0624,0.0079,986\n"
                                       "llama-2-7b,h100-sxm,1,1024,256,8,62.4,12.0,600\n"
                                       "llama-2-7b,h100-sxm,1,1024,256,8,62.4,12.0,9000\n")
    runs = resolve("runs.csv", tmp_path)
    rows = measurement_rows(LLAMA2, {"h100-sxm": H100}, Scenario(weight_dtype="fp16"), runs)
    assert [row["beyond_bound"] for row in rows] == ["ttft, tpot", "", "tokens_per_s"]
    section = measured_section(pd.DataFrame(rows))
    assert section["beyond"] == ["runs.csv line 2: TTFT, TPOT", "runs.csv line 4: tokens/s"]
    assert [[cell["measured"].endswith(" !") for cell in row["cells"]] for row in section["rows"]] == [
        [True, True, False], [False, False, False], [False, False, True]]
    html = environment().get_template("measured.html.j2").render(measured=section)
    assert "Beyond the bound" in html and "runs.csv line 2: TTFT, TPOT" in html and "runs.csv line 3" in html
    from dataclasses import asdict

    write_measured_table(asdict(LLAMA2), {"h100-sxm": asdict(H100)}, asdict(Scenario(weight_dtype="fp16")),
                         [asdict(run) for run in runs], str(tmp_path / "m.parquet"), log=str(tmp_path / "m.log"))
    warning = ("warning: measurements: runs.csv line 2: ttft, tpot measured beyond the roofline bound (faster than "
               "the hardware allows): check its units and deployment")
    assert capsys.readouterr().err.splitlines()[0] == warning and warning in (tmp_path / "m.log").read_text()
    assert pd.read_parquet(tmp_path / "m.parquet")["beyond_bound"].tolist() == ["ttft, tpot", "", "tokens_per_s"]


def test_the_pareto_figures_draw_the_runs_with_the_beyond_bound_one_edged_red(tmp_path):
    # the interactive figure the HTML report shows had left your runs out (only the hidden static SVG drew them),
    # and the static one drew a run beyond its bound as any other
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from roofline.figures.interactive import measured_traces
    from roofline.figures.measured_runs import BEYOND_COLOR, LEGEND, draw_measured_runs

    (tmp_path / "runs.csv").write_text(HEADER + "\nllama-2-7b,h100-sxm,1,1024,256,8,62.4,0.9,9000\n"
                                       "llama-2-7b,h100-sxm,1,1024,256,8,62.4,12.0,600\n")
    rows = pd.DataFrame(measurement_rows(LLAMA2, {"h100-sxm": H100}, Scenario(weight_dtype="fp16"),
                                         resolve("runs.csv", tmp_path)))
    measured, expected = measured_traces(rows, {})
    assert measured["name"] == "your runs, measured" and measured["x"] == pytest.approx([1 / 0.0009, 1 / 0.012])
    assert measured["marker"]["line"]["color"] == [BEYOND_COLOR, "black"] and expected["marker"]["symbol"] == \
        "diamond-open"
    assert "runs.csv line 2" in measured["text"][0] and "beyond the bound</b> (tpot, tokens_per_s)" in \
        measured["text"][0] and "beyond" not in measured["text"][1]
    fig, ax = plt.subplots()
    ax.set_xscale("log"), ax.set_yscale("log")
    draw_measured_runs(ax, rows, {})
    filled = [line for line in ax.lines if line.get_marker() == "D" and line.get_markerfacecolor() != "white"]
    assert [line.get_markeredgecolor() for line in filled] == [BEYOND_COLOR, "black"]
    assert ax.get_legend_handles_labels()[1] == [LEGEND]
    plt.close(fig)


@pytest.mark.parametrize("text, message", [
    (HEADER.replace("tpot_ms", "tpot") + "\nllama-2-7b,h100-sxm,1,1024,256,8,30,11,700\n",
     "measurements: bad.csv has no column 'tpot_ms' (did you mean 'tpot'?)"),
    (HEADER + "\nllama-2-7b,h100-sxm,one,1024,256,8,30,11,700\n",
     "measurements: bad.csv line 2, column 'tp': 'one' is not a number; expected a positive integer"),
    (HEADER + "\nllama-2-7b,h100-sxm,1,1024,256,8,30,fast,700\n",
     "measurements: bad.csv line 2, column 'tpot_ms': 'fast' is not a number"),
    (HEADER + "\nllama-2-7b,h100-sxm,1,1024,256,0,30,11,700\n",
     "measurements: bad.csv line 2, column 'concurrency': 0 is not allowed; expected an integer from 1"),
    (HEADER + "\nllama-2-7b,h100-sxm,1.5,1024,256,8,30,11,700\n",
     "measurements: bad.csv line 2, column 'tp': 1.5 is not allowed"),
    (HEADER + "\nllama-2-7b,h100-sxm,1,1024,256,8,-30,11,700\n",
     "measurements: bad.csv line 2, column 'ttft_ms': -30 is not allowed; expected a positive number"),
    (HEADER + "\nllama-2-7b,h100-sxm,1,1024,256,8,,,\n",
     "measurements: bad.csv line 2: no measured value; give ttft_ms, tpot_ms or tokens_per_s"),
    (HEADER + "\n,h100-sxm,1,1024,256,8,30,11,700\n", "measurements: bad.csv line 2, column 'model': missing"),
    (HEADER + "\nllama-2-7b,h100-sxm,3,1024,256,8,30,11,700\n",
     "measurements: bad.csv line 2, column 'tp': "),  # 3 does not divide Llama-2-7B's 32 heads
    (HEADER + "\nllama-2-7b,h100-sxm,1,4000,200,8,30,11,700\n",
     "measurements: bad.csv line 2, column 'isl': isl + osl: 4000 + 200 = 4200 tokens do not fit the context"),
    (HEADER + ",weight_dtype\nllama-2-7b,h100-sxm,1,1024,256,8,30,11,700,fp7\n",
     "measurements: bad.csv line 2, column 'weight_dtype': weight_dtype: unknown value 'fp7'"),
    (HEADER + ",weight_dtype\nllama-2-7b,v100-sxm2-32gb,1,1024,256,8,30,11,700,bf16\n",
     "measurements: bad.csv line 2, column 'weight_dtype': gpu 'v100-sxm2-32gb' has no bf16 peak"),
])
def test_bad_csv_is_one_line_naming_file_row_and_column(tmp_path, text, message):
    (tmp_path / "bad.csv").write_text(text)
    # a V100 beside the config's GPUs: it has no bf16 peak (every recipe computes on the H100 and the A6000, FP8
    # weight-only there since FP8 Marlin)
    config = {**CONFIG, "gpus": {**CONFIG["gpus"], "v100-sxm2-32gb": {}}, "measurements": "bad.csv"}
    with pytest.raises(RooflineInputError) as raised:
        rc.resolve_config(config, tmp_path)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value), str(raised.value)


@pytest.mark.parametrize("change, message", [
    ({"gpu": None}, "measurements: bench.json result 1: key 'gpu' missing; vLLM records no server side: add it "
                    "with --metadata gpu=KEY tp=N"),
    ({"max_concurrency": None}, "measurements: bench.json result 1: key 'max_concurrency' (or --metadata "
                                "concurrency=N) missing"),
    ({"mean_tpot_ms": None}, "measurements: bench.json result 1: key 'mean_tpot_ms' missing"),
    ({"framework": "tensorrt-llm"}, "measurements: bench.json result 1, column 'framework': 'tensorrt-llm' is not "
                                    "one we model (did you mean 'trtllm'?); expected vllm, sglang, trtllm"),
    ({"tp": "four"}, "measurements: bench.json result 1, column 'tp': 'four' is not a number"),
    ({"mean_tpot_ms": "n/a"}, "measurements: bench.json result 1, column 'tpot_ms': 'n/a' is not a number"),
])
def test_bad_vllm_result_is_one_line(tmp_path, change, message):
    result = {key: value for key, value in {**json.loads(VLLM.read_text()), **change}.items() if value is not None}
    (tmp_path / "bench.json").write_text(json.dumps(result))
    with pytest.raises(RooflineInputError) as raised:
        resolve("bench.json", tmp_path)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value), str(raised.value)


def test_sglang_results_excel_csv_and_a_framework_misspelt(tmp_path):
    # SGLang's bench_serving: .jsonl, `backend` sglang, its measured mean in-flight count as `concurrency` beside
    # the set max_concurrency (7.896 had been refused as a count); Excel's "CSV UTF-8" starts with a byte-order mark
    # ("has no column 'model' (did you mean '\ufeffmodel'?)")
    result = {**json.loads(VLLM.read_text()), "backend": "sglang", "max_concurrency": 8, "concurrency": 7.896}
    (tmp_path / "sglang.jsonl").write_text(json.dumps(result) + "\n" + json.dumps(result) + "\n")
    runs = read_runs(tmp_path / "sglang.jsonl", "sglang.jsonl")
    assert [(run.concurrency, run.framework) for run in runs] == [(8, "sglang")] * 2
    (tmp_path / "excel.csv").write_bytes(b"\xef\xbb\xbf" + CSV.read_bytes())
    assert read_runs(tmp_path / "excel.csv", "excel.csv") == [replace(run, source=run.source.replace("runs", "excel"))
                                                             for run in read_runs(CSV, "runs.csv")]
    (tmp_path / "fw.csv").write_text(HEADER + ",framework\nllama-2-7b,h100-sxm,1,1024,256,8,30,11,700,tensorrt-llm\n")
    with pytest.raises(RooflineInputError, match=r"^measurements: fw.csv line 2, column 'framework': 'tensorrt-llm' "
                                                 r"is not one we model \(did you mean 'trtllm'\?\)"):
        read_runs(tmp_path / "fw.csv", "fw.csv")


@pytest.mark.parametrize("name, content, message", [
    ("missing.csv", None, "measurements: file 'missing.csv' does not exist"),
    ("folder", "dir", "measurements: file 'folder' is a directory, not a measurements file (a CSV, or a vllm bench "
                      "serve JSON)"),
    ("genai.json", '{"experiments": [{"perf_metrics": {}}]}', "measurements: genai.json result 1 is not a vllm bench "
                                                              "serve result (none of mean_ttft_ms, mean_tpot_ms, "
                                                              "output_throughput)"),
    ("broken.json", "{not json", "measurements: broken.json is not JSON (line 1"),
    ("list.json", "[1, 2]", "measurements: list.json result 1 is not a JSON object"),
    ("latin1.csv", b"model,gpu\xe9\n", "measurements: file 'latin1.csv' cannot be read"),
])
def test_unreadable_file_is_one_line(tmp_path, name, content, message):
    if isinstance(content, bytes):
        (tmp_path / name).write_bytes(content)
    elif content == "dir":
        (tmp_path / name).mkdir()
    elif content is not None:
        (tmp_path / name).write_text(content)
    with pytest.raises(RooflineInputError) as raised:
        resolve_measurements(name, {"llama-2-7b": LLAMA2}, {"h100-sxm": H100}, Scenario(), tmp_path)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value), str(raised.value)


def test_schema_takes_a_path_or_a_list_of_paths():
    def errors(value):
        config = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}}, "measurements": value}
        return [describe_schema_error(e) for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(config)]

    assert errors("runs.csv") == [] and errors(["a.csv", "b.json"]) == []
    assert len(errors(3)) == 1 and "measurements" in errors(3)[0]


@pytest.mark.parametrize("name", MEASUREMENT_COLUMNS)
def test_readme_lists_measurement_column(name):
    assert f"`{name}`" in (ROOT / "README.md").read_text()
