"""End to end: the Snakemake workflow on the tiny grid of .test/config.yaml, in a temporary copy of the workflow.

One build (module fixture, ~15 s), then dry runs that count what Snakemake would rerun after an edit, and rejected
configs that must stop before any job with one message and leave the built results untouched.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from roofline.engine import columns
from roofline.engine.hardware import Accelerator
from roofline.engine.models import ModelSpec
from workflow_copy import copy_workflow

ROOT = Path(__file__).resolve().parents[1]
TEST_CONFIG = yaml.safe_load((ROOT / ".test" / "config.yaml").read_text())
MODELS, GPUS, STAGES = list(TEST_CONFIG["models"]), list(TEST_CONFIG["gpus"]), TEST_CONFIG["stages"]
JOB_TABLES = {
    "ops": columns.OP_COLUMNS + columns.OP_EXPECTED_COLUMNS + columns.OP_EXTRA_COLUMNS + columns.SCENARIO_COLUMNS,
    "totals": columns.TOTAL_COLUMNS + columns.TOTAL_EXPECTED_COLUMNS + columns.COST_COLUMNS + columns.SCENARIO_COLUMNS,
    "treatments": columns.TREATMENT_COLUMNS,
    "sweeps": columns.SWEEP_COLUMNS,
}


def snakemake(wf, *args: str, configfile: str = "config.yaml") -> subprocess.CompletedProcess:
    """Run Snakemake on the copied workflow `wf.repo` in `wf.work` (config replaced, not merged)."""
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(wf.repo / "Snakefile"), "--directory",
               str(wf.work), "--configfile", configfile, "--replace-workflow-config", *args]
    return subprocess.run(command, cwd=wf.work, capture_output=True, text=True, timeout=900)


def planned(wf, *args: str, configfile: str = "config.yaml") -> list[tuple[str, dict]]:
    """(rule, wildcards) of every job a dry run plans."""
    run = snakemake(wf, "--dry-run", *args, configfile=configfile)
    assert run.returncode == 0, run.stdout + run.stderr
    jobs: list[tuple[str, dict]] = []
    for line in run.stdout.splitlines():
        line = line.strip()
        if match := re.fullmatch(r"(?:local)?rule (\w+):", line):
            jobs.append((match.group(1), {}))
        elif line.startswith("wildcards: ") and jobs:
            jobs[-1][1].update(item.split("=", 1) for item in line.removeprefix("wildcards: ").split(", "))
    return jobs


def snapshot(work: Path) -> dict:
    """{path: (size, mtime_ns)} of everything under results/ and reports/."""
    return {str(p.relative_to(work)): (p.stat().st_size, p.stat().st_mtime_ns)
            for top in ("results", "reports") for p in sorted((work / top).rglob("*"))}


@pytest.fixture(scope="module")
def wf(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    repo, work = root / "workflow-copy", root / "work"
    copy_workflow(repo)
    work.mkdir()
    shutil.copy(ROOT / ".test" / "config.yaml", work / "config.yaml")
    wf = SimpleNamespace(repo=repo, work=work)
    run = snakemake(wf, "--cores", "2")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return wf


def expected_outputs() -> list[str]:
    per_job = [f"results/{table}/{m}/{g}/{s}.parquet" for table in JOB_TABLES for m in MODELS for g in GPUS
               for s in STAGES]
    aggregates = [f"results/{table}.parquet" for table in JOB_TABLES] + ["results/ops.csv", "results/totals.csv",
                                                                          "results/specs.json"]
    per_model = [f"results/models/{m}/{name}" for m in MODELS
                 for name in [f"{table}.parquet" for table in JOB_TABLES] + ["specs.json"]]
    reports = [f"reports/{m}.{ext}" for m in MODELS for ext in ("html", "pdf")] + [
        "reports/summary.html", "reports/summary.pdf", "reports/index.html"]
    return per_job + aggregates + per_model + reports


@pytest.mark.parametrize("path", expected_outputs())
def test_every_output_exists_and_is_not_empty(wf, path):
    assert (wf.work / path).is_file(), path
    assert (wf.work / path).stat().st_size > 0, path


def test_figures_are_written_per_model(wf):
    for model in MODELS:
        figures = wf.work / "reports" / "figures" / model
        assert sorted(p.suffix for p in figures.glob("*.svg"))  # at least one SVG
        # each figure is drawn once, as SVG, and also as PNG where the wiki shows it (the Figures section)
        printed = {Path(e["png"]).stem for e in json.loads((figures / "figures.json").read_text()) if e.get("png")}
        assert {p.stem for p in figures.glob("*.png")} == printed and printed < {p.stem for p in figures.glob("*.svg")}


def test_no_temporary_files_are_left(wf):
    assert not [p for p in (wf.work / "results").rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("table", JOB_TABLES)
def test_parquet_schemas_are_the_documented_columns(wf, table):
    for path in [wf.work / "results" / f"{table}.parquet",
                 *[(wf.work / "results" / table / m / g / f"{s}.parquet") for m in MODELS for g in GPUS
                   for s in STAGES]]:
        assert tuple(pd.read_parquet(path).columns) == JOB_TABLES[table], path


def test_aggregates_hold_every_job_once(wf):
    totals = pd.read_parquet(wf.work / "results" / "totals.parquet")
    keys = sorted(zip(totals["model"], totals["gpu"], totals["stage"]))
    assert keys == sorted((m, g, s) for m in MODELS for g in GPUS for s in STAGES)
    ops = pd.read_parquet(wf.work / "results" / "ops.parquet")
    per_job = sum(len(pd.read_parquet(wf.work / "results" / "ops" / m / g / f"{s}.parquet"))
                  for m in MODELS for g in GPUS for s in STAGES)
    assert len(ops) == per_job
    assert (ops["batch"] == TEST_CONFIG["scenario"]["batch"]).all()


@pytest.mark.parametrize("table", JOB_TABLES)
def test_per_model_tables_hold_that_model_and_make_up_the_grid_wide_table(wf, table):
    grid = pd.read_parquet(wf.work / "results" / f"{table}.parquet")
    parts = [pd.read_parquet(wf.work / "results" / "models" / m / f"{table}.parquet") for m in MODELS]
    for model, part in zip(MODELS, parts):
        assert tuple(part.columns) == JOB_TABLES[table] and set(part["model"]) == {model}
        assert sorted(set(zip(part["gpu"], part["stage"]))) == sorted((g, s) for g in GPUS for s in STAGES)
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), grid)


def test_per_model_specs_hold_that_model_and_every_gpu(wf):
    import json

    grid = json.loads((wf.work / "results" / "specs.json").read_text())
    for model in MODELS:
        specs = json.loads((wf.work / "results" / "models" / model / "specs.json").read_text())
        assert list(specs["models"]) == [model] and specs["models"][model] == grid["models"][model]
        assert {k: specs[k] for k in ("gpus", "scenario", "stages")} == {k: grid[k] for k in ("gpus", "scenario",
                                                                                                "stages")}
        assert len(specs["config_sha256"]) == 64 and specs["config_sha256"] != grid["config_sha256"]


def test_paper_model_is_the_one_the_report_compares():
    from roofline.report import paper

    common = (ROOT / "workflow" / "rules" / "common.smk").read_text()
    assert f'PAPER_MODEL = "{paper.MODEL}"' in common


def test_other_reports_link_to_the_paper_comparison(wf):
    # the model reports read per-model tables; the link needs the paper model's rows, handed over separately
    assert "llama-2-7b" in MODELS and "rtx-a6000" in GPUS
    for model in MODELS:
        html = (wf.work / "reports" / f"{model}.html").read_text()
        if model == "llama-2-7b":
            assert 'id="appendix"' in html
        else:
            assert 'href="llama-2-7b.html#appendix"' in html, model


@pytest.mark.parametrize("table", ["ops", "totals"])
def test_csv_copies_match_the_parquet(wf, table):
    csv = pd.read_csv(wf.work / "results" / f"{table}.csv")
    parquet = pd.read_parquet(wf.work / "results" / f"{table}.parquet")
    assert tuple(csv.columns) == tuple(parquet.columns) and len(csv) == len(parquet)
    pd.testing.assert_series_equal(csv["t_s"], parquet["t_s"], check_dtype=False)


def test_specs_json_is_the_resolved_config(wf):
    import json

    specs = json.loads((wf.work / "results" / "specs.json").read_text())
    assert set(specs) == {"models", "gpus", "scenario", "stages", "plans", "config_sha256"}
    # every (model, gpu) has its concrete plan, and the totals carry it
    assert set(specs["plans"]) == set(MODELS) and all(set(p) == set(GPUS) for p in specs["plans"].values())
    assert list(specs["models"]) == MODELS and list(specs["gpus"]) == GPUS and specs["stages"] == STAGES
    h100 = Accelerator(**specs["gpus"]["h100-sxm"])
    totals = pd.read_parquet(wf.work / "results" / "totals.parquet")
    assert ModelSpec(**specs["models"]["llama-2-7b"]).n_layers == 32
    assert h100.bandwidth_bytes_per_s == 3.35e12
    ops = pd.read_parquet(wf.work / "results" / "ops.parquet")
    assert set(ops.loc[ops["gpu"] == "h100-sxm", "bandwidth_bytes_per_s"]) == {h100.bandwidth_bytes_per_s}
    assert len(specs["config_sha256"]) == 64 and len(totals) == len(MODELS) * len(GPUS) * len(STAGES)


def test_second_run_has_nothing_to_do(wf):
    run = snakemake(wf, "--dry-run")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Nothing to be done" in run.stdout + run.stderr


def test_editing_one_gpu_reruns_its_jobs_the_aggregates_and_the_reports_only(wf):
    edited = dict(TEST_CONFIG, gpus={**TEST_CONFIG["gpus"], "h100-sxm": {"bandwidth_gbps": 3000}})
    (wf.work / "edited.yaml").write_text(yaml.safe_dump(edited))
    jobs = planned(wf, configfile="edited.yaml")
    assert sorted(tuple(sorted(w.items())) for rule, w in jobs if rule == "analyze") == sorted(
        (("gpu", "h100-sxm"), ("model", m), ("stage", s)) for m in MODELS for s in STAGES)
    assert Counter(rule for rule, _ in jobs) == Counter(
        analyze=len(MODELS) * len(STAGES), model_specs=len(MODELS), specs=1, model_aggregate=4 * len(MODELS),
        aggregate=4, csv=2, figures=len(MODELS), report=len(MODELS), summary=1, index=1, all=1)


@pytest.mark.parametrize("model", ["qwen2.5-7b", "llama-2-7b"])
def test_editing_one_model_reruns_its_jobs_figures_and_report_and_the_grid_wide_files_only(wf, model):
    # llama-2-7b too: the other reports read its ops table (for the link to the paper comparison) but need not
    # rerun when its entry changes
    assert set(MODELS) == {"qwen2.5-7b", "llama-2-7b"}
    edited = dict(TEST_CONFIG, models={**TEST_CONFIG["models"], model: {"name": "Renamed 7B"}})
    (wf.work / "edited.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))  # gpu order is content too
    jobs = planned(wf, configfile="edited.yaml")
    per_model = [(rule, w) for rule, w in jobs if "model" in w]
    assert {w["model"] for _, w in per_model} == {model}, per_model
    assert Counter(rule for rule, _ in jobs) == Counter(
        analyze=len(GPUS) * len(STAGES), model_specs=1, model_aggregate=4, figures=1, report=1,
        specs=1, aggregate=4, csv=2, summary=1, index=1, all=1)


def test_config_overrides_on_the_command_line_are_typed_and_rerun_everything(wf):
    jobs = planned(wf, "--config", "scenario={batch: 4, seq_len: 1024}")
    assert Counter(rule for rule, _ in jobs)["analyze"] == len(MODELS) * len(GPUS) * len(STAGES)


def _edit(path: Path):
    """Append a comment line to a source file; return a function that restores its content and mtime."""
    text, stat = path.read_bytes(), path.stat()
    path.write_bytes(text + b"\n# an edit\n")
    os.utime(path, ns=(stat.st_atime_ns, time.time_ns() + 60 * 10**9))  # newer than every output

    def restore():
        path.write_bytes(text)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return restore


def test_engine_code_edit_reruns_the_compute_jobs(wf):
    restore = _edit(wf.repo / "workflow" / "roofline" / "engine" / "formulas.py")
    try:
        rules = Counter(rule for rule, _ in planned(wf))
    finally:
        restore()
    assert rules["engine"] == 1 and rules["analyze"] == len(MODELS) * len(GPUS) * len(STAGES)
    assert rules["aggregate"] == 4 and rules["report"] == len(MODELS)


def test_touching_engine_code_without_a_change_reruns_no_compute_job(wf):
    # Snakemake compares checksums of small inputs, so a checkout that only bumps mtimes costs nothing here
    path = wf.repo / "workflow" / "roofline" / "engine" / "formulas.py"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, time.time_ns() + 60 * 10**9))
    try:
        rules = Counter(rule for rule, _ in planned(wf))
    finally:
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert rules["engine"] == rules["analyze"] == rules["aggregate"] == 0


def test_figure_code_edit_reruns_figures_and_reports_only(wf):
    restore = _edit(sorted((wf.repo / "workflow" / "roofline" / "figures").glob("*.py"))[0])
    try:
        rules = Counter(rule for rule, _ in planned(wf))
    finally:
        restore()
    assert rules["figures"] == len(MODELS) and rules["report"] == len(MODELS)
    assert rules["analyze"] == rules["aggregate"] == rules["engine"] == 0


def test_cli_edit_reruns_nothing(wf):
    restore = _edit(wf.repo / "workflow" / "roofline" / "cli" / "app.py")
    try:
        run = snakemake(wf, "--dry-run")
    finally:
        restore()
    assert "Nothing to be done" in run.stdout + run.stderr


@pytest.mark.parametrize("package", ["serving", "figures", "report"])
def test_editing_serving_figures_or_report_reruns_no_compute_job(wf, package):
    """Issue 16: an edit of a file of serving/, figures/ or report/ reruns no per-(model, gpu, stage) job."""
    restores = [_edit(path) for path in sorted((wf.repo / "workflow" / "roofline" / package).rglob("*.py"))]
    try:
        rules = Counter(rule for rule, _ in planned(wf))
    finally:
        for restore in restores:
            restore()
    assert rules["analyze"] == rules["engine"] == 0, f"editing every file of {package}/ reruns {dict(rules)}"


REJECTED = {
    "unknown gpu": ({"gpus": {"h100-sxn": {}}}, "did you mean 'h100-sxm'"),
    "negative bandwidth": ({"gpus": {"h100-sxm": {"bandwidth_gbps": -100}}}, "gpus.h100-sxm.bandwidth_gbps: -100"),
    "unknown dtype": ({"scenario": {"weight_dtype": "fp9"}}, "scenario.weight_dtype: unknown value 'fp9'"),
    "no peak for the dtype": ({"scenario": {"weight_dtype": "fp8", "act_dtype": "fp8"}},
                              "gpus.rtx-a6000: gpu 'rtx-a6000' has no fp8 peak"),
    "missing hf_config": ({"models": {"mine": {"hf_config": "missing/config.json"}}},
                          "models.mine.hf_config: file 'missing/config.json' does not exist"),
    "hostile key": ({"models": {"../evil": {}}}, "models: key '../evil' is not allowed"),
    "key too long for a file name": ({"models": {"m" * 250: {}}}, "(250 characters) is too long"),
}


@pytest.mark.parametrize("name", REJECTED)
def test_rejected_config_stops_before_any_job_with_one_message(wf, name):
    change, expected = REJECTED[name]
    bad = {**TEST_CONFIG, **{section: {**TEST_CONFIG[section], **entries} for section, entries in change.items()}}
    (wf.work / "bad.yaml").write_text(yaml.safe_dump(bad))
    before = snapshot(wf.work)
    run = snakemake(wf, "--cores", "1", configfile="bad.yaml")
    output = run.stdout + run.stderr
    assert run.returncode != 0
    messages = [line for line in output.splitlines() if line.startswith("Invalid configuration: ")]
    assert len(messages) == 1 and expected in messages[0], output
    assert "Traceback" not in output and "Error" not in output.replace(messages[0], "")
    assert snapshot(wf.work) == before
    assert not (wf.work / "evil").exists() and not (wf.work.parent / "evil").exists()


def test_lint_has_no_advice_beyond_conda_or_container(wf):
    run = snakemake(wf, "--lint")
    findings = [line.strip() for line in run.stdout.splitlines() if line.strip().startswith("* ")]
    assert all("conda environment or container" in finding for finding in findings), findings


def test_publish_pushes_the_wiki_once_and_a_failing_push_says_why(wf, tmp_path, monkeypatch):
    """`snakemake publish` with publish.git pointing at a local bare repository: the clone holds Home.md, a page per
    model, the PDFs and PNGs, and every relative link resolves; a second publish adds no commit; a push the remote
    refuses fails with one line and leaves reports/wiki/ as it was."""
    for variable in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):  # an identity, as the user's git setup gives
        monkeypatch.setenv(variable, "tester")
    for variable in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(variable, "tester@example.com")

    def git(*args, cwd=tmp_path):
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout

    def publish_to(bare):
        (wf.work / "publish.yaml").write_text(yaml.safe_dump({**TEST_CONFIG, "publish": {"git": str(bare)}}))
        return snakemake(wf, "--cores", "2", "publish", configfile="publish.yaml")

    bare = tmp_path / "wiki.git"
    git("init", "--quiet", "--bare", str(bare))
    run = publish_to(bare)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    clone = tmp_path / "clone"
    git("clone", "--quiet", str(bare), str(clone))
    names = {str(p.relative_to(clone)) for p in clone.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert {"Home.md", "_Sidebar.md", "files/summary.pdf"} <= names
    for model in MODELS:
        assert {f"{model}.md", f"files/{model}.pdf"} <= names
        assert any(name.startswith(f"files/{model}/") and name.endswith(".png") for name in names)
    for page in [name for name in names if name.endswith(".md")]:
        for link in re.findall(r"(?<!\\)\]\(([^)\s]+)\)", (clone / page).read_text()):
            assert (clone / link).resolve().is_relative_to(clone) and (clone / link).is_file(), (page, link)
    assert git("rev-list", "--count", "master", cwd=bare).strip() == "1"
    again = publish_to(bare)
    assert again.returncode == 0 and "nothing changed" in again.stdout + again.stderr
    assert git("rev-list", "--count", "master", cwd=bare).strip() == "1"

    refusing = tmp_path / "refusing.git"
    git("init", "--quiet", "--bare", str(refusing))
    (refusing / "hooks" / "pre-receive").write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    (refusing / "hooks" / "pre-receive").chmod(0o755)
    wiki = {p: p.read_bytes() for p in (wf.work / "reports" / "wiki").rglob("*") if p.is_file()}
    failed = publish_to(refusing)
    lines = [line for line in (failed.stdout + failed.stderr).splitlines() if line.startswith("publish: ")]
    # one line (Snakemake shows it twice: as the job's output and from the job's log)
    assert failed.returncode != 0 and len(set(lines)) == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
    assert lines[0].startswith(f"publish: pushing to {refusing} failed: ") and "no pushes today" in lines[0]
    assert "(the bundle in reports/wiki is intact)" in lines[0]
    assert {p: p.read_bytes() for p in (wf.work / "reports" / "wiki").rglob("*") if p.is_file()} == wiki


def pdf_links(pdf: Path) -> list[str]:
    """Every URL in a PDF's objects (its link annotations), as poppler's `pdfinfo -url` lists them."""
    listing = subprocess.run(["pdfinfo", "-url", str(pdf)], check=True, capture_output=True, text=True).stdout
    return [line.split(None, 2)[2] for line in listing.splitlines()[1:] if len(line.split(None, 2)) == 3]


def page_links(html: str) -> list[str]:
    """Every src, href and CSS url() of an HTML page."""
    return re.findall(r'(?:src|href)="([^"]*)"', html) + re.findall(r"url\(['\"]?([^'\")]+)", html)


def test_published_files_link_only_inside_the_bundle(wf, tmp_path):
    """The wiki bundle as `publish` pushes it: no file:/// or build path in any PDF's links (WeasyPrint resolves
    hrefs against the build folder), every Markdown link relative and inside the bundle, no Snakemake marker; the
    reports' HTML loads nothing from outside reports/ (no CDN) and links only inside it."""
    if shutil.which("pdfinfo") is None:
        pytest.skip("pdfinfo (poppler-utils) is not installed")
    bare, clone = tmp_path / "wiki.git", tmp_path / "clone"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    (wf.work / "links.yaml").write_text(yaml.safe_dump({**TEST_CONFIG, "publish": {"git": str(bare)}}))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(wf.repo / "Snakefile"), "--directory",
               str(wf.work), "--configfile", "links.yaml", "--replace-workflow-config", "--cores", "2", "publish"]
    run = subprocess.run(command, cwd=wf.work, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    subprocess.run(["git", "clone", "--quiet", str(bare), str(clone)], check=True)
    files = [p for p in clone.rglob("*") if p.is_file() and ".git" not in p.relative_to(clone).parts]
    assert not [p for p in files if p.name == ".snakemake_timestamp"]
    pdfs = [p for p in files if p.suffix == ".pdf"] + sorted((wf.work / "reports").glob("*.pdf"))
    assert len(pdfs) >= 2 * (len(MODELS) + 1)
    for pdf in pdfs:
        for link in pdf_links(pdf):
            assert "://" not in link and not link.startswith("/") and str(wf.work) not in link, (pdf, link)
            assert (pdf.parent / link.split("#")[0]).is_file(), (pdf, link)  # beside it: reports/ and files/
    for page in [p for p in files if p.suffix == ".md"]:
        for link in re.findall(r"(?<!\\)\]\(([^)\s]+)\)", page.read_text()):
            assert (clone / link).resolve().is_relative_to(clone) and (clone / link).is_file(), (page, link)
    reports = wf.work / "reports"
    for html in reports.glob("*.html"):
        for link in page_links(html.read_text()):
            if link.startswith("#"):
                continue
            assert ":" not in link.split("/")[0] and not link.startswith("/"), (html.name, link)
            assert (reports / link.split("#")[0]).resolve().is_relative_to(reports.resolve()), (html.name, link)
            assert (reports / link.split("#")[0]).exists(), (html.name, link)


#: a page that loads a report in a frame and reports, once its scripts ran, what it drew and what failed to load
OFFLINE_HARNESS = """<!DOCTYPE html><html><body><iframe id="f" src="%s" width="1400" height="900"></iframe>
<pre id="out">pending</pre><script>
document.getElementById("f").onload = function () { setTimeout(function () {
  var w = document.getElementById("f").contentWindow, d = w.document, images = Array.prototype.slice.call(d.images);
  document.getElementById("out").textContent = "RESULT" + JSON.stringify({
    plotly: !!w.Plotly, drawn: d.querySelectorAll("div.interactive .main-svg").length,
    specs: d.querySelectorAll("script.figure-spec").length, sortable: d.querySelectorAll("table.sortable").length,
    doubled: Array.prototype.filter.call(d.querySelectorAll("figure"), function (f) {
      var image = f.querySelector("img");
      return f.querySelector("script.figure-spec") && image && image.offsetParent !== null; }).length,
    broken: images.filter(function (i) { return !(i.complete && i.naturalWidth > 0); }).map(function (i) {
      return i.src; }),
    width: Math.round(d.body.getBoundingClientRect().width)}) + "END";
}, 4000); };
</script></body></html>"""
#: hosts Chromium itself calls (updates, accounts, spelling): not requests of the page
CHROMIUM_OWN = re.compile(r"^https?://[^/]*(google|googleapis|gvt1|gstatic)\.com/")


def test_html_report_works_offline_in_headless_chromium(wf, tmp_path):
    """A model report opened from disk in headless Chromium with the network cut (a dead proxy): plotly.js loads from
    beside the page, every interactive figure is drawn, every image loads, the page requests nothing from the
    network (Chromium's net log) and the page uses a 1400 px window."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    page = wf.work / "reports" / f"{MODELS[0]}.html"
    harness, net_log = tmp_path / "harness.html", tmp_path / "net.json"
    harness.write_text(OFFLINE_HARNESS % page.as_uri())
    run = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", "--no-first-run",
                          "--proxy-server=127.0.0.1:9", "--allow-file-access-from-files", f"--user-data-dir={tmp_path}",
                          f"--log-net-log={net_log}", "--virtual-time-budget=20000", "--dump-dom", harness.as_uri()],
                         capture_output=True, text=True, timeout=300)
    found = re.search(r"RESULT(.*)END", run.stdout)
    assert found, run.stdout[-2000:] + run.stderr[-2000:]
    result = json.loads(found.group(1).replace("&quot;", '"'))
    assert result["plotly"] and result["specs"] >= len(GPUS) + len(STAGES), result  # rooflines and cross-GPU
    assert result["drawn"] >= result["specs"] and not result["broken"], result
    assert result["doubled"] == 0, result  # the interactive figure replaces its static image
    assert result["sortable"] >= 3 and result["width"] > 1000, result  # no 700 px column in a 1400 px window
    requests = {event["params"]["url"] for event in json.loads(net_log.read_text())["events"]
                if "url" in event.get("params", {})}
    assert not [url for url in requests if not url.startswith("file:") and not CHROMIUM_OWN.match(url)]
