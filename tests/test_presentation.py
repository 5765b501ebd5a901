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
