"""Comparison across runs (`roofline compare`, config `compare_with`): what moved, the threshold, the output formats,
the summary's section and one line per missing or incompatible folder."""
import csv
import io
import json
import math

import pandas as pd
import pytest

import roofline
from roofline.cli import app as cli
from roofline.engine.columns import COMPARE_COLUMNS
from roofline.engine.errors import RooflineInputError
from roofline.pipeline import config as rc
from roofline.pipeline.compare import compare_results, relative_change
from roofline.report.comparison import comparison_section
from roofline.report.render import environment

#: two (model, gpu, stage) rows of a totals table: times in s, tokens/s, a text and a flag
OLD = [{"model": "m", "gpu": "g", "stage": "decode", "tpot_s": 0.010, "tokens_per_s": 100.0, "footprint_bytes": 1e9,
        "deployment": "1 x G", "fits": True},
       {"model": "m", "gpu": "h", "stage": "decode", "tpot_s": 0.020, "tokens_per_s": 50.0, "footprint_bytes": 2e9,
        "deployment": "1 x H", "fits": True}]


def folder(path, rows, plans=None):
    """A results folder holding totals.parquet (and plans/{model}.parquet)."""
    path.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(path / "totals.parquet")
    for model, plan_rows in (plans or {}).items():
        (path / "plans").mkdir(exist_ok=True)
        pd.DataFrame(plan_rows).to_parquet(path / "plans" / f"{model}.parquet")
    return path


@pytest.fixture
def runs(tmp_path):
    new = [dict(OLD[0], tpot_s=0.011, tokens_per_s=101.0, deployment="2 x G, TP 2", fits=False),  # +10%, +1%
           {"model": "m", "gpu": "k", "stage": "decode", "tpot_s": 0.005, "tokens_per_s": 200.0,
            "footprint_bytes": 1e9, "deployment": "1 x K", "fits": True}]
    plan = {"model": "m", "gpu": "g", "recommended": True, "batch": 64, "tokens_per_s_per_device": 1000.0,
            "deployment": "1 x G"}
    old = folder(tmp_path / "old" / "results", OLD, {"m": [plan]})
    return old.parent, folder(tmp_path / "new", new, {"m": [dict(plan, batch=80)]})  # a project folder, a results one


def test_relative_change_cases():
    assert relative_change(0.010, 0.011) == pytest.approx(0.1)  # 10 ms -> 11 ms: +10%
    assert relative_change(2.0, 2.0) == 0.0 and relative_change(math.nan, math.nan) == 0.0
    assert relative_change(0.0, 1.0) == math.inf and relative_change(0.0, -1.0) == -math.inf
    assert relative_change(1.0, math.nan) is None  # a value vanished


def test_what_moved_beyond_the_threshold(runs):
    rows, notes = compare_results(*runs, threshold=0.05)
    assert all(tuple(row) == COMPARE_COLUMNS for row in rows)
    got = [(r["table"], r["gpu"], r["column"], r["what"]) for r in rows]
    assert got == [("totals", "g", "tpot_s", "moved"),  # 10 -> 11 ms: +10% > 5%; tokens/s +1% is not listed
                   ("totals", "g", "deployment", "changed"), ("totals", "g", "fits", "changed"),
                   ("totals", "k", "", "added"), ("totals", "h", "", "removed"),
                   ("plans", "g", "batch", "moved")]  # 64 -> 80: +25%
    assert rows[0]["old"] == 0.010 and rows[0]["new"] == 0.011 and rows[0]["change"] == pytest.approx(0.1)
    assert (rows[2]["old"], rows[2]["new"]) == ("True", "False")
    assert notes == {"compared": {"totals": 2, "plans": 1}, "threshold": 0.05}
    assert len(compare_results(*runs, threshold=0.20)[0]) == 5  # only the plan's +25% still moves among numbers


def test_cli_formats_and_threshold(runs, capsys):
    assert cli.main(["compare", *map(str, runs), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert tuple(rows[0]) == COMPARE_COLUMNS and len(rows) == 6
    assert cli.main(["compare", *map(str, runs), "--format", "json", "--threshold", "30%"]) == 0
    assert [r["column"] for r in json.loads(capsys.readouterr().out)] == ["deployment", "fits", "", ""]
    assert cli.main(["compare", *map(str, runs)]) == 0
    table = capsys.readouterr().out
    assert "tpot_s" in table and "10.0 ms" in table and "11.0 ms" in table and "+10.0%" in table
    assert "6 moved by more than 5.0% (2 totals rows, 1 plans rows compared)" in table
    assert cli.main(["compare", str(runs[0]), str(runs[0])]) == 0
    assert capsys.readouterr().out.startswith("nothing moved by more than 5.0%")


def test_python_api(runs):
    frame = roofline.compare(*runs, threshold="1%")
    assert list(frame.columns) == list(COMPARE_COLUMNS) and len(frame) == 7  # tokens/s +1.0% is not above 1%
    assert frame.attrs["compared"] == {"totals": 2, "plans": 1}


def damaged(path):
    """A folder whose totals.parquet is not parquet."""
    path.mkdir()
    (path / "totals.parquet").write_text("not parquet")
    return path


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "absent", "OLD_RESULTS: '{p}/absent' does not exist"),
    (lambda p: p, "OLD_RESULTS: '{p}' holds no totals.parquet (nor results/totals.parquet)"),
    (lambda p: folder(p / "other", [{"model": "m", "gpu": "g"}]),
     "OLD_RESULTS: '{p}/other/totals.parquet' is not a table this tool wrote (no column 'stage'); the folders are "
     "incompatible"),
    (lambda p: damaged(p / "damaged"),
     "OLD_RESULTS: '{p}/damaged/totals.parquet' cannot be read as parquet"),
])
def test_bad_folder_is_one_line(tmp_path, capsys, runs, make, message):
    old = make(tmp_path)
    assert cli.main(["compare", str(old), str(runs[1])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofline: error: " + message.format(p=tmp_path)) and err.count("\n") == 1, err


@pytest.mark.parametrize("value, message", [("five", "'five' is not a number"), ("1.5", "1.5 is not allowed"),
                                            ("-5%", "-5% is not allowed")])
def test_bad_threshold_is_one_line(runs, capsys, value, message):
    assert cli.main(["compare", *map(str, runs), f"--threshold={value}"]) == 2
    assert f"--threshold: {message}" in capsys.readouterr().err


def test_compare_with_in_config(tmp_path, runs):
    base = {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": {}}}
    assert rc.resolve_config({**base, "compare_with": str(runs[0])}, tmp_path).compare_with == str(
        (runs[0] / "results").resolve())  # the project folder's results/
    assert rc.resolve_config(base, tmp_path).compare_with == ""
    with pytest.raises(RooflineInputError) as raised:
        rc.resolve_config({**base, "compare_with": "previous"}, tmp_path)
    assert str(raised.value).startswith("compare_with: '") and "previous' does not exist" in str(raised.value)


def test_summary_section(runs):
    rows, _ = compare_results(*runs)
    frame = pd.read_csv(io.StringIO(pd.DataFrame(rows, columns=list(COMPARE_COLUMNS)).to_csv(index=False)))
    section = comparison_section(frame, "../previous/results")
    assert section["threshold"] == "5%" and not section["empty"]
    first = section["rows"][0]
    assert (first["column"], first["old"], first["new"], first["change"]) == ("tpot_s", "10.0 ms", "11.0 ms",
                                                                             "+10.0%")
    assert section["rows"][3]["what"] == "only in this run" and section["rows"][4]["what"] == "only in the previous run"
    html = environment().get_template("comparison.html.j2").render(comparison=section)
    assert "What moved since the previous run" in html and "../previous/results" in html
    assert environment().get_template("comparison.html.j2").render().strip() == ""  # not configured: nothing


@pytest.mark.parametrize("name", COMPARE_COLUMNS)
def test_readme_lists_comparison_column(name):
    from test_plan_workflow import README

    assert f"`{name}`" in README


def test_every_result_column_prints_in_the_unit_its_name_says():
    # one naming rule (cli.formats.unit_of) for the table format of totals, serve and compare, where each kept a map
    # of its own: compare had printed requests/s as seconds and the *_per_s rates of the hardware as seconds
    from roofline.cli.formats import unit_of
    from roofline.cli.serve import COLUMNS as SERVE
    from roofline.cli.totals import COLUMNS as TOTALS

    expected = {"flops": "FLOP", "bytes": "B", "weight_bytes_per_device": "B", "total_params": "", "t_s": "s",
                "ttft_expected_s": "s", "tokens_per_s_per_user_expected": "token/s", "requests_per_s": "request/s",
                "requests_per_s_expected": "request/s", "baseline_tokens_per_s": "token/s",
                "peak_flops_per_s": "FLOP/s", "bandwidth_bytes_per_s": "B/s", "energy_per_token_j": "J",
                "cost_per_million_tokens_expected": "USD", "tokens_per_s_error": None, "intensity": None,
                "devices": None, "memory_bound_share": None}
    assert {column: unit_of(column) for column in expected} == expected
    # every seconds, bytes and rate column of the two one-row commands has its unit
    for column in (*TOTALS, *SERVE):
        if column.endswith(("_s", "_bytes", "_params")) or "_per_s_" in column:
            assert unit_of(column) is not None, column
