"""The `roofline` command line: formats, columns and one-line errors."""
import csv
import io
import json

import pytest

from roofline.cli import app as cli
from roofline.engine.columns import (
    COST_COLUMNS,
    OP_COLUMNS,
    OP_EXPECTED_COLUMNS,
    TOTAL_COLUMNS,
    TOTAL_EXPECTED_COLUMNS,
)


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ops_csv_has_exactly_the_documented_columns(capsys):
    code, out, _ = run(capsys, "ops", "--model", "llama-2-7b", "--gpu", "rtx-a6000", "--stage", "prefill",
                       "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert tuple(rows[0]) == OP_COLUMNS + OP_EXPECTED_COLUMNS  # every documented column, then the estimates
    q = next(r for r in rows if r["op"] == "q_proj")
    assert float(q["flops"]) == 68719476736 and q["bound"] == "compute" and q["count"] == "32"


def test_totals_csv_one_row(capsys):
    code, out, _ = run(capsys, "totals", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "decode",
                       "--format", "csv", "--batch", "8")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 1 and tuple(rows[0]) == TOTAL_COLUMNS + TOTAL_EXPECTED_COLUMNS + COST_COLUMNS
    row = rows[0]
    assert float(row["tokens_per_s"]) == pytest.approx(8 / float(row["tpot_s"]))
    assert row["fits"] == "True" and row["ttft_s"] == "nan"


def test_json_and_table(capsys):
    code, out, _ = run(capsys, "ops", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--stage", "decode",
                       "--format", "json")
    names = {r["op"] for r in json.loads(out)}
    assert code == 0 and {"router", "expert_gate_proj", "expert_down_proj", "moe_combine"} <= names
    code, out, _ = run(capsys, "totals", "--model", "deepseek-v3", "--gpu", "h200-sxm", "--stage", "decode",
                       "--format", "json")
    total = json.loads(out)
    assert total["total_params"] == pytest.approx(671.026e9, rel=1e-5)
    assert total["active_params"] == pytest.approx(37.55e9, rel=1e-3)
    code, out, _ = run(capsys, "ops", "--model", "llama-2-7b", "--gpu", "rtx-a6000", "--stage", "prefill")
    assert "68.7 GFLOP" in out and "67.1 MB" in out


def test_ridge_and_list(capsys):
    code, out, _ = run(capsys, "ridge", "--gpu", "h100-sxm", "--dtype", "fp16")
    assert code == 0 and "295.3" in out
    code, out, _ = run(capsys, "list", "gpus")
    assert code == 0 and "rtx-a6000" in out and "mi300x" in out
    code, out, _ = run(capsys, "list", "models")
    assert "deepseek-v3" in out
    # --format csv|json: every figure in SI base units (the table rounds them), the peaks one column per dtype
    import csv
    import io
    import json

    code, out, _ = run(capsys, "list", "gpus", "--format", "csv")
    h100 = next(row for row in csv.DictReader(io.StringIO(out)) if row["key"] == "h100-sxm")
    assert float(h100["bandwidth_bytes_per_s"]) == 3.35e12 and float(h100["peak_fp16_flops_per_s"]) == 989.4e12
    assert float(h100["scaleout_bandwidth_bytes_per_s"]) == 50e9 and h100["peak_fp4_flops_per_s"] == ""
    # peaks derived rather than printed are marked, as the README says (hardware.ESTIMATED gives why)
    b200 = next(row for row in csv.DictReader(io.StringIO(out)) if row["key"] == "b200")
    assert h100["peaks_estimated"] == "False" and h100["peaks_note"] == ""
    assert b200["peaks_estimated"] == "True" and "half of sparse" in b200["peaks_note"]
    code, out, _ = run(capsys, "list", "gpus")
    assert next(line for line in out.splitlines() if line.startswith("b200 ")).rstrip().endswith("estimate")
    assert next(line for line in out.splitlines() if line.startswith("h100-sxm ")).rstrip().endswith("printed")
    code, out, _ = run(capsys, "list", "models", "--format", "json")
    v3 = next(row for row in json.loads(out) if row["key"] == "deepseek-v3")
    assert v3["params"] == 671_026_419_200 and v3["active_params"] == 37_552_297_472


@pytest.mark.parametrize("argv, expected", [
    (["ops", "--model", "llama-2-7b", "--gpu", "h100-sxn", "--stage", "decode"],
     "--gpu: unknown value 'h100-sxn' (did you mean 'h100-sxm'?)"),
    (["ops", "--model", "lama-2-7b", "--gpu", "h100-sxm", "--stage", "decode"], "did you mean 'llama-2-7b'"),
    (["ops", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "decode", "--batch", "-3"],
     "--batch: -3 is not allowed; expected an integer >= 1"),
    (["ops", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "decode", "--kv-dtype", "fp9"],
     "--kv-dtype: unknown value 'fp9' (did you mean 'fp8'?)"),
    (["ops", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "prefil"], "did you mean 'prefill'"),
    (["ops", "--model", "llama-2-7b", "--gpu", "v100-sxm2-32gb", "--stage", "decode", "--act-dtype", "bf16"],
     "has no bf16 peak"),
    (["ridge", "--gpu", "h100-sxm", "--dtype", "int4"], "has no int4 peak"),
])
def test_bad_input_is_one_clear_line(capsys, argv, expected):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert expected in err
    assert len(err.strip().splitlines()) == 1


def test_hf_config_path_as_model(capsys, tmp_path):
    import shutil
    from pathlib import Path
    src = Path(__file__).parent / "data" / "hf_configs" / "llama-3.1-8b.json"
    if not src.exists():
        pytest.skip("hf config fixture missing")
    path = tmp_path / "config.json"
    shutil.copy(src, path)
    code, out, _ = run(capsys, "totals", "--model", str(path), "--gpu", "h100-sxm", "--stage", "decode",
                       "--format", "json")
    assert code == 0 and json.loads(out)["total_params"] == pytest.approx(8.03e9, rel=1e-3)


@pytest.mark.parametrize("argv, expected", [
    (["ops", "--model", "llama-2-7b", "--gpu", "gaudi2", "--stage", "decode", "--act-dtype", "fp16"],
     "gpu 'gaudi2' has no fp16 peak, which the weight GEMMs (--weight-dtype x --act-dtype) need"),
    (["totals", "--model", "gpt2", "--gpu", "t4", "--stage", "decode", "--seq-len", "1024"],
     "--seq-len: 1024 is not allowed for gpt2 decode: it needs 1025 positions and the model has 1024"),
    (["ops", "--model", "gpt2", "--gpu", "t4", "--stage", "prefill", "--bach", "3"],
     "unrecognized option '--bach' (did you mean '--batch'?)"),
    (["ridge", "--gpu", "m3-max"], "--gpu: 'm3-max' publishes no peak FLOP/s"),
    (["totals", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--stage", "decode", "--batch", "9" * 20],
     "expected an integer from 1 to 1048576"),
])
def test_more_bad_input(capsys, argv, expected):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and expected in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content, expected", [
    ("[1, 2]", "expected a JSON object"),
    ('{"hidden_size": 8}', "has no 'model_type' field"),
    ('{"model_type": "llama", "hidden_size": "4096"}', "field 'hidden_size' is '4096'; expected an integer"),
    ('{"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
     '"intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64, "hidden_act": "silu", '
     '"num_local_experts": 4, "num_experts_per_tok": 2}', "needs field 'num_key_value_heads'"),
    ('{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
     '"intermediate_size": -5, "vocab_size": 100, "max_position_embeddings": 64, "hidden_act": "silu"}',
     "intermediate: -5 is not allowed"),
])
def test_bad_hf_config(capsys, tmp_path, content, expected):
    path = tmp_path / "config.json"
    path.write_text(content)
    code, out, err = run(capsys, "totals", "--model", str(path), "--gpu", "h100-sxm", "--stage", "prefill",
                         "--seq-len", "8")
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1


def test_catalog_key_wins_over_a_same_named_folder(capsys, tmp_path, monkeypatch):
    (tmp_path / "gpt2").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "totals", "--model", "gpt2", "--gpu", "t4", "--stage", "prefill", "--seq-len", "64",
                       "--format", "json")
    assert code == 0 and json.loads(out)["model"] == "gpt2"


@pytest.mark.parametrize("fields, expected", [
    ({"decoder_sparse_step": 0}, "'decoder_sparse_step' is 0; it must be >= 1"),
    ({"mlp_only_layers": 3}, "'mlp_only_layers' is 3; expected a list"),
    ({"num_attention_heads": 0}, "the head count is 0"),
    ({"tie_word_embeddings": "false"}, "'tie_word_embeddings' is 'false'; expected true or false"),
    ({"num_hidden_layers": 2**63}, "the layer count is 9223372036854775808; expected an integer from 1 to"),
])
def test_bad_qwen3_moe_fields(capsys, tmp_path, fields, expected):
    cfg = {"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 128, "moe_intermediate_size": 32, "num_experts": 4,
           "num_experts_per_tok": 2, "vocab_size": 100, "max_position_embeddings": 64, "hidden_act": "silu"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, **fields}))
    code, out, err = run(capsys, "totals", "--model", str(path), "--gpu", "h100-sxm", "--stage", "prefill",
                         "--seq-len", "8")
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1
