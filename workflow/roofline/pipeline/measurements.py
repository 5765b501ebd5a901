"""The `measurements:` section of config.yaml: your own served runs, read and checked before any job runs.

`measurements: runs.csv` (or a list of paths, relative to the working directory) names files of two kinds:

* CSV: one run per row with the columns `model, gpu, tp, isl, osl, concurrency, ttft_ms, tpot_ms, tokens_per_s`
  (`model` and `gpu` keys of the config; tp, isl, osl, concurrency positive integers; times in milliseconds,
  tokens_per_s the output tokens per second of the whole deployment; an empty measured cell = not measured) and the
  optional `pp`, `ep` (default 1), `framework`, `weight_dtype`, `kv_dtype` (default: the config scenario's).
  Other columns are ignored.
* JSON (`.json`, `.jsonl`): the result file `vllm bench serve --save-result` writes (one object; a list of them; or
  one per line, as --append-result writes), or SGLang's bench_serving (the same keys; its `backend` names the
  framework, its measured `concurrency` gives way to `max_concurrency`). Read from it: `mean_ttft_ms`,
  `mean_tpot_ms`, `output_throughput` (tokens_per_s), `max_concurrency` (concurrency), isl and osl as
  `total_input_tokens` and `total_output_tokens` over `completed` (rounded), the model as `model_id` when it equals
  a config key or a model's name (the Hugging Face repo id). vLLM does not record the server's side, so add it with
  `--metadata`, which vLLM writes into the file as top-level keys: `--metadata gpu=h100-sxm tp=4` (required), and
  `model=<config key>` when `model_id` is not one; optional pp, ep, framework (default vllm), weight_dtype,
  kv_dtype, and concurrency when the run had no --max-concurrency.

Bad input (an unreadable file, a missing column, a cell that is not a number, a plan the model or the device
cannot run) stops with one line naming the file, the row and the column. A run whose model or gpu the config does
not have is kept with a status saying so: listed (results/measurements/rows.csv, the summary, a warning), never
predicted, never dropped silently.
"""
from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import replace
from pathlib import Path

from ..engine.analysis import check_device_dtypes
from ..engine.dtypes import check_storage_dtype
from ..engine.errors import RooflineInputError, clip, did_you_mean
from ..engine.hardware import FRAMEWORKS, Accelerator
from ..engine.hf_config import not_a_file
from ..engine.models import ModelSpec
from ..engine.parallel import check_plan
from ..engine.scenario import Scenario
from ..serving.measured import PREDICTED, MeasuredRun
from ..serving.planner import Workload, check_workload_context

REQUIRED = ("model", "gpu", "tp", "isl", "osl", "concurrency", "ttft_ms", "tpot_ms", "tokens_per_s")
OPTIONAL = ("pp", "ep", "framework", "weight_dtype", "kv_dtype")
COUNTS = ("tp", "pp", "ep", "isl", "osl", "concurrency")
#: measured columns -> (MeasuredRun field, divisor to SI: ms / 1000 = s)
MEASURED = {"ttft_ms": ("ttft_s", 1e3), "tpot_ms": ("tpot_s", 1e3), "tokens_per_s": ("tokens_per_s", 1.0)}
#: vllm bench serve result keys -> our columns (the rest come from --metadata keys of the same names)
VLLM_KEYS = {"mean_ttft_ms": "ttft_ms", "mean_tpot_ms": "tpot_ms", "output_throughput": "tokens_per_s",
             "max_concurrency": "concurrency"}
MAX_COUNT = 1 << 24
#: file name endings read as benchmark results (SGLang's bench_serving writes .jsonl, one result per line)
JSON_SUFFIXES = (".json", ".jsonl")
#: what a JSON result calls each of our columns, for messages (the rest are --metadata keys of our names)
JSON_NAMES = {"ttft_ms": "key 'mean_ttft_ms'", "tpot_ms": "key 'mean_tpot_ms'", "tokens_per_s": "key "
              "'output_throughput'", "concurrency": "key 'max_concurrency' (or --metadata concurrency=N)",
              "isl": "keys 'total_input_tokens' and 'completed'", "osl": "keys 'total_output_tokens' and 'completed'",
              "model": "key 'model_id' (or --metadata model=KEY)"}
#: a result's `backend` (the benchmark client's: vLLM's and SGLang's bench scripts) -> the framework it served
BACKENDS = {"vllm": "vllm", "sglang": "sglang", "sglang-oai": "sglang", "sglang-native": "sglang", "trt": "trtllm"}


def read_runs(path: Path, shown: str) -> list[MeasuredRun]:
    """The runs of one file (`shown`: its name as the config wrote it, for messages)."""
    problem = not_a_file(path, "a measurements file (a CSV, or a vllm bench serve JSON)")
    if problem:
        raise RooflineInputError(f"measurements: file '{clip(shown, 240)}' {problem}")
    try:  # utf-8-sig: Excel's "CSV UTF-8" starts with a byte-order mark, which would glue onto the first column
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise RooflineInputError(f"measurements: file '{clip(shown, 240)}' cannot be read: {error}") from None
    if path.suffix.lower() in JSON_SUFFIXES:
        runs = [_run(fields, f"{shown} result {i}", JSON_NAMES) for i, fields in
                enumerate(_vllm_results(text, shown), start=1)]
    else:
        runs = _csv_runs(text, shown)
    if not runs:  # a header alone (or an empty result list): the report would show nothing and not say why
        raise RooflineInputError(f"measurements: file '{clip(shown, 240)}' holds no run; add one row per run or "
                                 "leave the file out")
    return runs


def _csv_runs(text: str, shown: str) -> list[MeasuredRun]:
    reader = csv.DictReader(text.splitlines())
    header = [name.strip() for name in reader.fieldnames or []]
    for name in REQUIRED:
        if name not in header:
            raise RooflineInputError(f"measurements: {shown} has no column '{name}'{did_you_mean(name, header)}; "
                                     f"needed: {', '.join(REQUIRED)} (optional: {', '.join(OPTIONAL)})")
    runs = []
    for line, row in enumerate(reader, start=2):  # line 1 is the header
        cells = {name.strip(): (value or "").strip() for name, value in row.items() if name is not None}
        if any(cells.values()):  # a blank line is no run
            runs.append(_run(cells, f"{shown} line {line}"))
    return runs


def _vllm_results(text: str, shown: str) -> list[dict]:
    """The result objects of a vllm bench serve file, as our column names (the --metadata keys kept)."""
    try:
        try:
            data = json.loads(text)
            results = data if isinstance(data, list) else [data]
        except json.JSONDecodeError:  # --append-result: one object per line
            results = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise RooflineInputError(f"measurements: {shown} is not JSON (line {error.lineno}: {error.msg})") from None
    except RecursionError:  # '[' x 100,000: Python's decoder recurses once per level
        raise RooflineInputError(f"measurements: {shown} nests JSON too deeply to be a vllm bench serve result") \
            from None
    fields = []
    for i, result in enumerate(results, start=1):
        if not isinstance(result, dict):
            raise RooflineInputError(f"measurements: {shown} result {i} is not a JSON object")
        if not any(key in result for key in (*VLLM_KEYS, *MEASURED)):
            raise RooflineInputError(f"measurements: {shown} result {i} is not a vllm bench serve result (none of "
                                     f"{', '.join(list(VLLM_KEYS)[:3])}); other benchmarks' files: one CSV row per "
                                     f"run with the columns {', '.join(REQUIRED)}")
        mapped = {ours: result[theirs] for theirs, ours in VLLM_KEYS.items() if result.get(theirs) is not None}
        for ours, theirs in (("isl", "total_input_tokens"), ("osl", "total_output_tokens")):
            if ours not in result and theirs in result:
                mapped[ours] = _per_request(result[theirs], result.get("completed"))
        # SGLang writes its measured mean in-flight count as `concurrency` beside the set max_concurrency
        keep = {key: result[key] for key in (*REQUIRED, *OPTIONAL) if key in result and key not in mapped}
        framework = BACKENDS.get(str(result.get("backend", "")).lower(), "vllm")
        fields.append({"model": result.get("model_id", ""), "framework": framework, **mapped, **keep})
    return fields


def _per_request(total, completed):
    """A total over the completed requests, rounded to whole tokens (left as is when either is not a number)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (total, completed))
    return round(total / completed) if numbers and completed > 0 else total


def _run(cells: dict, where: str, names: dict | None = None) -> MeasuredRun:
    """One run from its cells (strings from a CSV, numbers or strings from JSON), checked; `where` names it,
    `names` what its file calls our columns (a JSON result's keys; default: CSV columns of our names)."""
    for name in REQUIRED:
        if name not in cells or (name in ("model", "gpu", *COUNTS) and str(cells[name]).strip() == ""):
            if names is None:
                raise RooflineInputError(f"measurements: {where}, column '{name}': missing; needed: "
                                         f"{', '.join(REQUIRED)}")
            hint = ("; vLLM records no server side: add it with --metadata gpu=KEY tp=N" if name in ("gpu", "tp")
                    else "")
            raise RooflineInputError(f"measurements: {where}: {names.get(name, f'key {name!r}')} missing{hint}")
    framework = str(cells.get("framework") or "").strip()
    if framework and framework not in FRAMEWORKS:  # its runs would be predicted under another framework's kernels
        raise RooflineInputError(f"measurements: {where}, column 'framework': '{clip(framework)}' is not one we "
                                 f"model{did_you_mean(framework, FRAMEWORKS)}; expected {', '.join(FRAMEWORKS)} "
                                 "(or an empty cell: the config's)")
    counts = {name: _count(cells.get(name, 1), where, name) for name in COUNTS}
    measured = {field: _measured(cells[name], where, name) / divisor for name, (field, divisor) in MEASURED.items()}
    if not any(math.isfinite(value) for value in measured.values()):
        raise RooflineInputError(f"measurements: {where}: no measured value; give ttft_ms, tpot_ms or tokens_per_s")
    text = {name: clip(str(cells.get(name) or "").strip(), 64) for name in ("model", "gpu", "framework")}
    dtypes = {}
    for name in ("weight_dtype", "kv_dtype"):
        value = str(cells.get(name) or "").strip()
        if value:
            dtypes[name] = _checked(lambda v=value, n=name: check_storage_dtype(n, v), where, name)
    return MeasuredRun(source=where, **text, **counts, **measured, **dtypes)


def _count(value, where: str, name: str) -> int:
    text = str(value).strip() if value is not None else ""
    try:
        number = float(text) if text else 1.0  # an empty optional count: 1
    except ValueError:
        raise RooflineInputError(f"measurements: {where}, column '{name}': '{clip(text)}' is not a number; "
                                 "expected a positive integer") from None
    if not (number.is_integer() and 1 <= number <= MAX_COUNT):
        raise RooflineInputError(f"measurements: {where}, column '{name}': {clip(text)} is not allowed; expected an "
                                 f"integer from 1 to {MAX_COUNT}")
    return int(number)


def _measured(value, where: str, name: str) -> float:
    text = str(value).strip() if value is not None else ""
    if not text:
        return math.nan  # not measured
    try:
        number = float(text)
    except ValueError:
        raise RooflineInputError(f"measurements: {where}, column '{name}': '{clip(text)}' is not a number; "
                                 "expected a positive number (or an empty cell: not measured)") from None
    if not (math.isfinite(number) and number > 0):
        raise RooflineInputError(f"measurements: {where}, column '{name}': {clip(text)} is not allowed; expected a "
                                 "positive number")
    return number


def _checked(check, where: str, name: str):
    try:
        return check()
    except RooflineInputError as error:
        raise RooflineInputError(f"measurements: {where}, column '{name}': {error}") from None


def match_model(name: str, models: dict[str, ModelSpec]) -> str | None:
    """The config key a run's model names: the key itself, or the key or name (Hugging Face repo id) of a model
    matched case-insensitively, also on the part after the last '/'; None when none matches."""
    if name in models:
        return name
    wanted = {name.lower(), name.lower().rsplit("/", 1)[-1]}
    for key, spec in models.items():
        if {key.lower(), spec.name.lower(), spec.name.lower().rsplit("/", 1)[-1]} & wanted:
            return key
    return None


def resolve_measurements(section, models: dict[str, ModelSpec], gpus: dict[str, Accelerator], scenario: Scenario,
                         base_dir: Path) -> tuple[MeasuredRun, ...]:
    """Every run of the files `section` names (a path or a list; None = none), in file order, each matched to the
    config (its status says when its model or gpu is not there) and checked against its model and gpu."""
    paths = [] if section is None else [section] if isinstance(section, str) else list(section)
    resolved = [os.path.normpath(os.path.join(base_dir, str(p))) for p in paths]  # absolute paths stay as they are
    twice = next((shown for i, shown in enumerate(paths) if resolved[i] in resolved[:i]), None)
    if twice is not None:  # its runs would count twice in the report's measured points
        raise RooflineInputError(f"measurements: '{twice}' is listed more than once; list each file once")
    runs = []
    for shown in paths:
        path = Path(str(shown))
        for run in read_runs(path if path.is_absolute() else base_dir / path, str(shown)):
            runs.append(_matched(run, models, gpus, scenario))
    return tuple(runs)


def _matched(run: MeasuredRun, models: dict[str, ModelSpec], gpus: dict[str, Accelerator],
             scenario: Scenario) -> MeasuredRun:
    key = match_model(run.model, models)
    if key is None:
        return replace(run, status=f"model {run.model!r} is not in the config")  # !r: a NUL or tab shows
    run = replace(run, model=key)
    if run.gpu not in gpus:
        return replace(run, status=f"gpu {run.gpu!r} is not in the config")
    model, gpu = models[key], gpus[run.gpu]
    _checked(lambda: check_plan(model, gpu, run.plan.validate()), run.source, "tp")
    _checked(lambda: check_workload_context(model, Workload(isl=run.isl, osl=run.osl)), run.source, "isl")
    _checked(lambda: check_device_dtypes(gpu, run.scenario(scenario.for_model(model), gpu)), run.source, "weight_dtype")
    return replace(run, status=PREDICTED)


def unmatched_lines(runs: tuple[MeasuredRun, ...]) -> list[str]:
    """One warning line per run that is not predicted, naming where it came from and why."""
    return [f"measurements: {run.source} is not predicted: {run.status}" for run in runs if run.status != PREDICTED]
