"""Issue 13, items 3, 5, 6, 7 and 8: extreme numbers, unbounded text, duplicate YAML keys, string-to-number
coercion and the messages of the config and the CLI: each bad input is one line naming the key, before any job."""
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from roofline.engine import hardware
from roofline.engine.errors import RooflineInputError
from roofline.pipeline import config as rc
from roofline.pipeline.schema import load_schema, typed_config
from roofline.pipeline.schema_messages import describe_schema_error
from roofline.pipeline.yaml_loader import load_config_file
from test_cli import run as _cli  # the command line's (code, stdout, stderr)
from workflow_copy import copy_workflow

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = load_schema(ROOT / "workflow" / "schemas" / "config.schema.yaml")


def _config(gpu: dict) -> dict:
    return {"models": {"llama-2-7b": {}}, "gpus": {"h100-sxm": gpu}}


def _one_line(config: dict) -> str:
    with pytest.raises(RooflineInputError) as error:
        rc.resolve_config(config)
    assert "\n" not in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("gpu, expected", [
    ({"bandwidth_gbps": 1.0e+308}, "gpus.h100-sxm.bandwidth_gbps: 1e+308 is not plausible (inf byte/s once converted); "
                                   "expected 1e+06 to 1e+16 byte/s"),
    ({"bandwidth_gbps": 1.0e-300}, "gpus.h100-sxm.bandwidth_gbps: 1e-300 is not plausible"),
    ({"bandwidth_gbps": 5.0e-324}, "gpus.h100-sxm.bandwidth_gbps: 5e-324 is not plausible"),
    ({"peak_tflops": {"fp16": 1.0e+308}}, "gpus.h100-sxm.peak_tflops.fp16: 1e+308 is not plausible"),
    ({"peak_tflops": {"fp16": 5.0e-324}}, "gpus.h100-sxm.peak_tflops.fp16: 5e-324 is not plausible"),
    ({"memory_gb": 1.0e+300}, "gpus.h100-sxm.memory_gb: 1e+300 is not plausible"),
    ({"l2_mb": 1e-9}, "gpus.h100-sxm.l2_mb: 1e-09 is not plausible"),
])
def test_extreme_finite_numbers_are_refused_after_unit_conversion(gpu, expected):
    assert _one_line(_config(gpu)).startswith(expected)


def test_the_plausible_range_holds_every_catalog_device():
    # the bounds are SI: 1 MB/s .. 10 PB/s, 1 MFLOP/s .. 1 ZFLOP/s; 3.35 TB/s and 989 TFLOP/s pass
    assert rc.resolve_config(_config({"bandwidth_gbps": 3350, "peak_tflops": {"fp16": 989}})).gpus
    for key, gpu in hardware.catalog().items():  # every catalog device passes
        assert rc.check_plausible(key, {}, gpu) is gpu


def _schema_messages(config: dict) -> list[str]:
    return [describe_schema_error(e) for e in jsonschema.Draft202012Validator(SCHEMA).iter_errors(config)]


def _strings(schema, path="config"):
    """(path, subschema) of every string property of the schema."""
    for name, sub in schema.get("properties", {}).items():
        if sub.get("type") == "string" or "$ref" in sub and sub["$ref"].endswith(("/name", "/source", "/key")):
            yield f"{path}.{name}", sub
        yield from _strings(sub, f"{path}.{name}")
    for name, sub in schema.get("$defs", {}).items():
        yield from _strings(sub, f"$defs.{name}")


def test_every_free_text_field_has_a_max_length():
    defs = SCHEMA["$defs"]
    for path, sub in _strings(SCHEMA):
        bounded = sub if "$ref" not in sub else defs[sub["$ref"].rsplit("/", 1)[1]]
        assert "maxLength" in bounded or "enum" in bounded, path


@pytest.mark.parametrize("field", ["source", "vendor", "name"])
def test_long_gpu_text_is_refused_by_the_schema(field):
    messages = _schema_messages(_config({field: "x" * 12_000}))
    assert any(m.startswith(f"gpus.h100-sxm.{field}: 'xxxx") and "(12000 characters) is too long" in m
               for m in messages), messages


def test_duplicate_yaml_keys_name_the_key_and_both_lines(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("models:\n  llama-2-7b: {}\ngpus:\n  h100-sxm: {bandwidth_gbps: 1}\n  h100-sxm: {}\n")
    with pytest.raises(RooflineInputError, match=r"^gpus\.h100-sxm: written twice in .*config\.yaml \(lines 4 and 5\)"):
        load_config_file(path)
    path.write_text("scenario:\n  batch: 1\n  seq_len: 8\n  batch: 2\n")
    with pytest.raises(RooflineInputError, match=r"^scenario\.batch: written twice .*\(lines 2 and 4\)"):
        load_config_file(path)


def test_yaml_numbers_in_any_notation_and_no_coercion_of_file_strings(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text('gpus: {h100-sxm: {bandwidth_gbps: 3e3, peak_tflops: {fp16: 1E+3, fp8: 2.0e3}}}\n'
                    'scenario: {batch: "8", seq_len: 2.048e3}\n'
                    'models: {llama-2-7b: {tie_embeddings: "yes", max_position: 4.096e+3, n_layers: 1.55e1}}\n')
    typed = typed_config([path], {}, SCHEMA)
    assert typed["gpus"]["h100-sxm"] == {"bandwidth_gbps": 3000.0, "peak_tflops": {"fp16": 1000.0, "fp8": 2000.0}}
    assert typed["scenario"]["seq_len"] == 2048 and type(typed["scenario"]["seq_len"]) is int
    assert type(typed["models"]["llama-2-7b"]["max_position"]) is int  # 4096
    assert typed["models"]["llama-2-7b"]["n_layers"] == 15.5  # not whole: left for the schema to refuse
    messages = _schema_messages(typed)
    assert "scenario.batch: '8' is not allowed; expected integer" in messages
    assert "models.llama-2-7b.tie_embeddings: 'yes' is not allowed; expected boolean" in messages
    assert not any(m.startswith("scenario.seq_len") or "max_position" in m for m in messages), messages


def test_config_overrides_are_coerced_and_win_over_the_files(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {bandwidth_gbps: 3e3}}\nscenario: {batch: 2}\n")
    # what `--config 'scenario={batch: 8}' 'gpus={h100-sxm: {peak_tflops: {fp16: 1e3}}}'` hands over
    typed = typed_config([path], {"scenario": {"batch": "8"}, "gpus": {"h100-sxm": {"peak_tflops": {"fp16": "1e3"}}}},
                            SCHEMA)
    assert typed["scenario"] == {"batch": 8}
    assert typed["gpus"]["h100-sxm"] == {"bandwidth_gbps": 3000.0, "peak_tflops": {"fp16": 1000.0}}
    assert _schema_messages(typed) == []


def test_a_yes_entry_says_what_an_entry_is():
    messages = _schema_messages({"models": {"llama-2-7b": True}, "gpus": {"h100-sxm": {}}})
    assert messages == ["models.llama-2-7b: True is not an entry (YAML reads yes/no/on/off as true/false); write "
                        "'llama-2-7b: {}' for the catalog entry, or a mapping of fields such as {name: ...}"]


@pytest.mark.parametrize("argv, expected", [
    (["opss"], "roofline: error: command: unknown value 'opss' (did you mean 'ops'?); allowed: calibrate, compare, "
               "list, measure, ops, plan, ridge, serve, totals"),
    (["ridge", "--gpu", "h100-sxm", "--batch", "4"], "option '--batch' is not accepted here; it belongs to: ops, "
                                                      "totals"),
    ([], "missing command; allowed: ops, totals, ridge, plan, serve, compare, measure, calibrate, list (or --version)"),
    (["totals", "--model", "gpt2", "--gpu", "h100-sxm", "--stage", "prefill", "--seq-len", "5000"],
     "use --seq-len <= 1024 or give --model a config.json whose max_position_embeddings covers it"),
])
def test_cli_messages_name_what_is_allowed(capsys, argv, expected):
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and expected in err, err
    assert "override max_position" not in err and "did you mean '--format'" not in err


def test_cli_version():
    run = subprocess.run([sys.executable, "-m", "roofline.cli.app", "--version"], capture_output=True, text=True,
                         cwd=ROOT / "workflow")
    assert run.returncode == 0 and run.stdout.startswith("roofline ")


# ------------------------------------------------------------------ through Snakemake (dry runs, before any job)
@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("strict") / "work")


def _dry_run(work, text: str, *extra: str) -> subprocess.CompletedProcess:
    (work / "config.yaml").write_text(text)
    return subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(work / "Snakefile"), "--dry-run",
                           "--configfile", "config.yaml", "--replace-workflow-config", *extra], cwd=work,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("text, expected", [
    ("models:\n  llama-2-7b: {}\ngpus:\n  h100-sxm: {bandwidth_gbps: 1}\n  h100-sxm: {}\n",
     "Invalid configuration: gpus.h100-sxm: written twice in"),
    ("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {}}\nscenario: {batch: \"8\"}\n",
     "Invalid configuration: scenario.batch: '8' is not allowed; expected integer"),
    ("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {bandwidth_gbps: 1.0e+308}}\n",
     "Invalid configuration: gpus.h100-sxm.bandwidth_gbps: 1e+308 is not plausible"),
    # keys that act on nothing, as written (the schema's defaults fill every workload's spec_tokens and workers)
    ("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {}}\nserving: {workloads: [{isl: 64, osl: 8, concurrency: [1], "
     "spec_tokens: 4}]}\n", "Invalid configuration: serving.workloads[0].spec_tokens: sets speculative decoding"),
    ("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {}}\nserving: {workloads: [{isl: 64, osl: 8, concurrency: [1], "
     "prefill_workers: 3}]}\n", "Invalid configuration: serving.workloads[0].prefill_workers: sizes the pools of "
                                "mode: disaggregated, and this workload is aggregated"),
])
def test_snakemake_refuses_in_one_line(workflow_copy, text, expected):
    run = _dry_run(workflow_copy, text)
    lines = [line for line in (run.stdout + run.stderr).splitlines() if line.startswith("Invalid configuration: ")]
    assert run.returncode != 0 and len(lines) == 1 and lines[0].startswith(expected), run.stdout + run.stderr
    if "written twice" in expected:
        assert "(lines 4 and 5)" in lines[0]


def _dry_run_with_config_yaml(workflow_copy, text: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """(the run, its 'Invalid configuration' lines) of a dry run with config.yaml holding `text` (then restored)."""
    (workflow_copy / "config.yaml").write_text(text)
    try:
        run = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(workflow_copy / "Snakefile"),
                              "--dry-run"], cwd=workflow_copy, capture_output=True, text=True, timeout=600)
    finally:
        (workflow_copy / "config.yaml").write_text("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {}}\n")
    return run, [line for line in run.stderr.splitlines() if line.startswith("Invalid configuration: ")]


def test_a_yaml_syntax_error_in_config_yaml_names_its_line(workflow_copy):
    # Snakemake's own reading said only "Config file is not valid JSON or YAML"
    run, lines = _dry_run_with_config_yaml(workflow_copy, "models:\n  llama-2-7b: {\ngpus: {h100-sxm: {}}\n")
    assert run.returncode == 2 and len(lines) == 1, run.stderr[-2000:]
    assert lines[0].startswith("Invalid configuration: config.yaml: not valid YAML") and "line 2, column 15" in lines[0]
    assert "unicode string" not in lines[0] and 'in "config.yaml", line' in lines[0]


EMPTY = "empty (or only comments)"


@pytest.mark.parametrize("text, what", [("", EMPTY), ("# nothing yet\n", EMPTY),
                                        ("- models\n", "a list at the top, not a mapping")])
def test_a_config_yaml_without_sections_says_what_it_needs(tmp_path, text, what):
    # Snakemake's own reading said "Config file must be given as JSON or YAML with keys at top level" on two lines
    from roofline.pipeline.yaml_loader import check_config_file

    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(RooflineInputError, match=rf"^{path}: {re.escape(what)}; it needs at least the sections "
                                                 "models: and gpus:"):
        check_config_file(path)
    path.write_text("models: {llama-2-7b: {}}\ngpus: {h100-sxm: {}}\n")
    assert set(check_config_file(path)) == {"models", "gpus"}


def test_an_empty_config_yaml_stops_snakemake_in_one_line(workflow_copy):
    run, lines = _dry_run_with_config_yaml(workflow_copy, "# only comments\n")
    assert run.returncode == 2 and lines == [f"Invalid configuration: config.yaml: {EMPTY}; it needs at least the "
                                             "sections models: and gpus:, e.g. models: {llama-3.1-8b: {}} and gpus: "
                                             "{h100-sxm: {}} (see the commented config.yaml)"], run.stderr


def test_snakemake_reads_yaml_numbers_in_any_notation_and_types_config_values(workflow_copy):
    run = _dry_run(workflow_copy, "models: {llama-2-7b: {}}\ngpus: {h100-sxm: {bandwidth_gbps: 3e3}}\n",
                   "--config", "scenario={batch: 8}", "gpus={h100-sxm: {peak_tflops: {fp16: 1e3}}}")
    assert run.returncode == 0 and "Invalid configuration" not in run.stdout + run.stderr, run.stderr[-2000:]


def test_the_extreme_devices_the_figure_tests_draw_are_plausible():
    # 0.001 GB/s = 1e6 byte/s at the edge of its range, 0.05 TFLOP/s over it the widest plausible ridge (5e4
    # FLOP/byte), drawn by tests/test_figures.py; 1e9 TFLOP/s = 1e21 FLOP/s alone is at its edge too, but over
    # 0.001 GB/s a ridge of 1e15 no device has
    def config(entry):
        return {"models": {"llama-2-7b": {}}, "gpus": {"x1": entry}}

    entry = {"name": "X", "memory_gb": 80, "bandwidth_gbps": 0.001, "peak_tflops": {"fp16": 0.05}}
    assert rc.resolve_config(config(entry)).gpus["x1"].peak_flops_per_s["fp16"] == 5e10
    assert "bandwidth_gbps: 0.0009 is not plausible" in _one_line(config({**entry, "bandwidth_gbps": 0.0009}))
    assert "is a ridge of 1e+15 FLOP/byte" in _one_line(config({**entry, "peak_tflops": {"fp16": 1e9}}))
    wide = {**entry, "bandwidth_gbps": 1e7, "peak_tflops": {"fp16": 1e9}}  # 1e16 byte/s, 1e21 FLOP/s: ridge 1e5
    assert "ridge of 1e+05" in _one_line(config(wide))
    assert rc.resolve_config(config({**wide, "peak_tflops": {"fp16": 1e8}})).gpus["x1"].bandwidth_bytes_per_s == 1e16


def test_yaml_aliases_are_checked_once_and_deep_nesting_is_one_line(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]  # 9^9 leaves if expanded
    bomb.write_text("\n".join(lines) + "\n")
    assert list(load_config_file(bomb)) == [f"a{i}" for i in range(9)]
    deep = tmp_path / "deep.yaml"
    deep.write_text("models: " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(RooflineInputError, match="nested too deeply"):
        load_config_file(deep)
