"""roofline.pipeline.io: the pipeline's writers are atomic, log what they did and keep the documented columns."""
import json
from dataclasses import asdict, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from roofline.engine.hardware import get_accelerator
from roofline.engine.models import get_model
from roofline.engine.scenario import Scenario
from roofline.pipeline import io as pipeline_io
from roofline.pipeline.tables import JOB_COLUMNS, job_tables

PACKAGE = Path(pipeline_io.__file__).resolve().parent.parent


def job_args(tmp_path, gpu=None, scenario=None):
    gpu = gpu or get_accelerator("h100-sxm")
    outputs = {name: str(tmp_path / name / "m" / "g" / "decode.parquet") for name in JOB_COLUMNS}
    return (asdict(get_model("llama-2-7b")), asdict(gpu), "decode", asdict(scenario or Scenario()), outputs)


def test_write_job_tables_equals_job_tables(tmp_path):
    *_, outputs = args = job_args(tmp_path)
    pipeline_io.write_job_tables(*args, log=str(tmp_path / "job.log"))
    expected = job_tables(get_model("llama-2-7b"), get_accelerator("h100-sxm"), "decode", Scenario())
    for name, frame in expected.items():
        written = pd.read_parquet(outputs[name])
        assert tuple(written.columns) == JOB_COLUMNS[name]
        pd.testing.assert_frame_equal(written, frame, check_dtype=False)
    assert "ops/m/g/decode.parquet: " in (tmp_path / "job.log").read_text()


def test_a_failed_job_leaves_no_output_and_logs_the_error(tmp_path):
    no_fp8 = replace(get_accelerator("h100-sxm"), peak_flops_per_s={"fp16": 1e15})
    *_, outputs = args = job_args(tmp_path, gpu=no_fp8, scenario=Scenario(weight_dtype="fp8", act_dtype="fp8"))
    with pytest.raises(Exception, match="no fp8 peak"):
        pipeline_io.write_job_tables(*args, log=str(tmp_path / "job.log"))
    assert not [p for p in tmp_path.rglob("*.parquet")] and not [p for p in tmp_path.rglob("*.tmp")]
    assert "Traceback" in (tmp_path / "job.log").read_text()


def test_outputs_appear_only_when_every_table_is_written(tmp_path, monkeypatch):
    *_, outputs = args = job_args(tmp_path)
    calls = []

    def failing_write(table, path):
        calls.append(path)
        if len(calls) == 3:
            raise OSError("disk full")
        Path(path).write_bytes(b"partial")

    monkeypatch.setattr(pq, "write_table", failing_write)
    with pytest.raises(OSError):
        pipeline_io.write_job_tables(*args)
    assert len(calls) == 3
    assert not any(Path(p).exists() for p in outputs.values())
    assert not list(tmp_path.rglob("*.tmp"))


def test_concat_promotes_a_column_that_is_null_in_one_job(tmp_path):
    first = pa.table({"gpu": ["a"], "note": pa.array([None], pa.null())})
    second = pa.table({"gpu": ["b"], "note": ["needs memory"]})
    pq.write_table(first, tmp_path / "1.parquet")
    pq.write_table(second, tmp_path / "2.parquet")
    pipeline_io.concat_tables([tmp_path / "1.parquet", tmp_path / "2.parquet"], str(tmp_path / "all.parquet"))
    table = pd.read_parquet(tmp_path / "all.parquet")
    assert list(table["gpu"]) == ["a", "b"] and table["note"].isna().tolist() == [True, False]
    pipeline_io.parquet_to_csv(str(tmp_path / "all.parquet"), str(tmp_path / "all.csv"))
    assert (tmp_path / "all.csv").read_text().splitlines()[0] == "gpu,note"


def test_engine_sources_are_what_the_compute_jobs_import(tmp_path):
    sources = [Path(p) for p in pipeline_io.engine_sources(tmp_path)]  # outside: absolute paths
    names = {str(p.relative_to(PACKAGE)) for p in sources}
    assert all(p.is_absolute() and p.is_relative_to(PACKAGE) for p in sources)
    assert {"engine/formulas.py", "engine/graph.py", "engine/analysis.py", "estimate/calibration.py",
            "pipeline/tables.py", "pipeline/jobs.py"} <= names
    # what no compute job imports: editing it reruns no compute job
    assert not any(n.startswith(("cli/", "serving/", "figures/", "report/")) for n in names), names
    assert "estimate/measure.py" not in names and sources == sorted(sources)
    inside = pipeline_io.engine_sources(PACKAGE.parent.parent)  # the checkout: relative paths
    assert all(not Path(p).is_absolute() and p.startswith("workflow/roofline/") for p in inside)


def test_engine_stamp_changes_with_the_content_only(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    pipeline_io.write_engine_stamp([str(tmp_path / "a.py")], str(tmp_path / "s1.json"))
    pipeline_io.write_engine_stamp([str(tmp_path / "a.py")], str(tmp_path / "s2.json"))
    (tmp_path / "a.py").write_text("x = 2\n")
    pipeline_io.write_engine_stamp([str(tmp_path / "a.py")], str(tmp_path / "s3.json"))
    s1, s2, s3 = (json.loads((tmp_path / f"s{i}.json").read_text())["sha256"] for i in (1, 2, 3))
    assert s1 == s2 != s3
