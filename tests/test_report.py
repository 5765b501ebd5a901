"""Report: the context is complete and NaN-free, names are escaped, the PDF has page numbers and the numbers of
the context, and the renderer reads nothing outside the report folder. The PDF is built once per session."""
import re
import shutil
import subprocess

import pandas as pd
import pytest
from weasyprint.urls import FatalURLFetchingError

from roofline.config import resolve_config
from roofline.figures import render_model_figures
from roofline.report import (check_context, index_context, load_manifest, model_context, render_html,
                             report_fetcher, summary_context, write_pdf, write_report)
from roofline.report import units
from roofline.report.context import appendix
from roofline.tables import job_tables

HOSTILE_MODEL = "Llama <script>alert(1)</script> & Co"
HOSTILE_GPU = "H100 <b>bold</b> & more"
MODEL = "llama-2-7b"


def grid(config):
    resolved = resolve_config(config)
    parts = {}
    for model in resolved.models.values():
        for gpu in resolved.gpus.values():
            for stage in resolved.stages:
                for name, frame in job_tables(model, gpu, stage, resolved.scenario).items():
                    parts.setdefault(name, []).append(frame)
    return {name: pd.concat(frames, ignore_index=True) for name, frames in parts.items()}, resolved.specs()


@pytest.fixture(scope="session")
def data():
    """The tiny test config: one model, two GPUs (the paper's A6000 and an H100), both stages; hostile names."""
    return grid({"models": {MODEL: {"name": HOSTILE_MODEL}},
                 "gpus": {"rtx-a6000": {}, "h100-sxm": {"name": HOSTILE_GPU}}})


@pytest.fixture(scope="session")
def built(data, tmp_path_factory, monkeypatch_session):
    """reports/ with figures, the model report (HTML + PDF), the summary (HTML + PDF) and the index."""
    monkeypatch_session.setenv("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01
    tables, specs = data
    reports = tmp_path_factory.mktemp("reports")
    figures = reports / "figures" / MODEL
    render_model_figures(MODEL, tables["ops"], tables["sweeps"], specs, figures)
    context = model_context(MODEL, tables, specs, load_manifest(figures), f"figures/{MODEL}")
    html = write_report(context, reports / f"{MODEL}.html", reports / f"{MODEL}.pdf")
    summary = summary_context(tables, specs)
    summary_html = write_report(summary, reports / "summary.html", reports / "summary.pdf")
    index = index_context(specs, {MODEL: load_manifest(figures)})
    index_html = write_report(index, reports / "index.html")
    return {"dir": reports, "context": context, "html": html, "summary": summary, "summary_html": summary_html,
            "index": index, "index_html": index_html}


@pytest.fixture(scope="session")
def monkeypatch_session():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def pdftotext(path):
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True,
                          text=True).stdout


def test_model_context_has_every_section_filled(built, data):
    context = built["context"]
    tables, _ = data
    check_context(context)  # no NaN, no unformatted float anywhere
    assert len(context["summary"]) >= 5
    assert [row["key"] for row in context["hardware"]["rows"]] == ["rtx-a6000", "h100-sxm"]
    assert {f["src"].rsplit("/", 1)[1] for f in context["figures"]} == {
        "time_breakdown.svg", "cross_gpu_prefill.svg", "cross_gpu_decode.svg", "seq_sweep.svg"}
    assert [g["key"] for g in context["gpus"]] == ["rtx-a6000", "h100-sxm"]
    for gpu in context["gpus"]:
        assert gpu["roofline"]["src"] == f"figures/{MODEL}/roofline_{gpu['key']}.svg"
        assert gpu["batch_sweep"]["src"] == f"figures/{MODEL}/batch_sweep_{gpu['key']}.svg"
        assert [s["stage"] for s in gpu["stages"]] == ["prefill", "decode"]
        for stage in gpu["stages"]:
            mine = tables["ops"][(tables["ops"]["gpu"] == gpu["key"]) & (tables["ops"]["stage"] == stage["stage"])]
            treatments = tables["treatments"][(tables["treatments"]["gpu"] == gpu["key"])
                                              & (tables["treatments"]["stage"] == stage["stage"])]
            assert [r["op"] for r in stage["operators"]] == list(mine["op"])
            assert [r["treatment"] for r in stage["treatments"]] == list(treatments["treatment"])
            assert len(stage["diagnosis"]) >= 3 and stage["treatment_summary"]
            assert len(stage["other_gpus"]) == 1
    assert context["appendix"]["available"] and len(context["appendix"]["sections"]) == 2
    assert context["caveats"]


def test_no_nan_reaches_the_page(built):
    # prefill rows have NaN tpot, decode rows NaN ttft: they must show as a dash
    summary = built["summary"]
    check_context(summary)
    assert all(row["ttft"] != units.DASH and row["tpot"] != units.DASH
               for group in summary["groups"] for row in group["rows"])
    assert "nan" not in built["html"].lower().replace("nanosecond", "")
    with pytest.raises(ValueError, match="NaN"):
        check_context({"gpus": [{"time": float("nan")}]})
    with pytest.raises(ValueError, match="unformatted"):
        check_context({"time": 0.25})


def test_prefill_only_config_shows_dashes_not_nan():
    tables, specs = grid({"models": {MODEL: {}}, "gpus": {"rtx-a6000": {}}, "stages": ["prefill"]})
    summary = summary_context(tables, specs)
    row = summary["groups"][0]["rows"][0]
    assert row["tpot"] == units.DASH and row["tokens_per_s"] == units.DASH and row["ttft"] != units.DASH
    html = render_html(summary)
    assert "nan" not in html.lower()


def test_html_escapes_hostile_names(built):
    for html in (built["html"], built["summary_html"], built["index_html"]):
        assert "<script>alert(1)</script>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in html
    assert "<b>bold</b>" not in built["html"]
    assert "H100 &lt;b&gt;bold&lt;/b&gt; &amp; more" in built["html"]


def test_pdf_has_page_numbers_and_the_context_numbers(built):
    text = pdftotext(built["dir"] / f"{MODEL}.pdf")
    pages = re.findall(r"Page (\d+) of (\d+)", text)
    assert pages and pages[0] == ("1", pages[0][1]) and int(pages[-1][0]) == int(pages[-1][1]) > 5
    flat = " ".join(text.split())
    context = built["context"]
    expected = [context["header"]["config_hash"], "<script>alert(1)</script> & Co"]
    for row in context["hardware"]["rows"]:
        expected += [row["memory"], row["bandwidth"]]
    for gpu in context["gpus"]:
        for stage in gpu["stages"]:
            expected += [value for _name, value in stage["headline"]]
            expected += [stage["operators"][2]["flops"], stage["operators"][2]["time_total"]]
            expected += [t["speedup"] for t in stage["treatments"] if t["applicable"]]
    for section in context["appendix"]["sections"]:
        expected += [section["rows"][0]["paper_flops"], section["rows"][0]["ours_bytes"]]
    missing = [value for value in expected if value not in flat]
    assert not missing
    summary = pdftotext(built["dir"] / "summary.pdf")
    assert "Page 1 of 1" in summary
    for group in built["summary"]["groups"]:
        for row in group["rows"]:
            assert row["ttft"] in summary and row["tpot"] in summary


def test_pdf_embeds_its_fonts_and_vector_figures(built):
    if shutil.which("pdffonts") is None:
        pytest.skip("pdffonts (poppler-utils) is not installed")
    fonts = subprocess.run(["pdffonts", str(built["dir"] / f"{MODEL}.pdf")], check=True, capture_output=True,
                           text=True).stdout.splitlines()[2:]
    assert fonts and all(line.split()[-5] == "yes" for line in fonts)  # the "emb" column
    # the figures' text (svg.fonttype none) is real text in the PDF, so a vector figure's labels extract
    assert "Arithmetic intensity [FLOP/byte]" in pdftotext(built["dir"] / f"{MODEL}.pdf")


def test_diagnosis_is_written_from_the_numbers(built, data):
    tables, specs = data
    ops = tables["ops"]
    decode = ops[(ops["gpu"] == "h100-sxm") & (ops["stage"] == "decode")]
    weights = float((decode["bytes_weight"] * decode["count"]).sum())
    bw = specs["gpus"]["h100-sxm"]["bandwidth_bytes_per_s"]
    sentences = " ".join(built["context"]["gpus"][1]["stages"][1]["diagnosis"])
    assert f"streams {units.nbytes(weights)} of weights at {units.bandwidth(bw)}" in sentences
    assert f"a floor of {units.seconds(weights / bw)} per token" in sentences
    assert "13.2 GB" in sentences and "3.35 TB/s" in sentences and "3.94 ms" in sentences
    totals = tables["totals"].set_index(["gpu", "stage"])
    assert f"compute-bound at batch {int(totals.loc[('h100-sxm', 'decode'), 'critical_batch'])}" in sentences


def test_appendix_explains_every_difference_or_says_why_it_is_absent(built, data):
    sections = built["context"]["appendix"]["sections"]
    rows = {(s["stage"], r["op"].split()[0]): r for s in sections for r in s["rows"]}
    assert rows["prefill", "q_proj"]["matches"]
    add = rows["prefill", "attn_add"]["why"]
    assert "both operands" in add and "bytes 1.50×" in add
    assert "11,008" in rows["prefill", "mlp_act"]["why"]
    assert "2 FLOPs per multiply-add" in rows["decode", "lm_head"]["why"]
    assert "2,049" in rows["decode", "qk_matmul"]["why"] and "1.0005×" in rows["decode", "qk_matmul"]["why"]
    assert "scale vector" in rows["prefill", "attn_norm"]["why"]
    assert "a row we add" in rows["decode", "rope"]["why"] and "a row we add" in rows["decode", "kv_cache_write"]["why"]
    assert all(r["explained"] for s in sections for r in s["rows"])
    tables, specs = data
    without = {name: frame[frame["gpu"] != "rtx-a6000"] for name, frame in tables.items()}
    absent = appendix(MODEL, without, specs)
    assert not absent["available"] and "rtx-a6000 is not in this configuration" in absent["message"]
    assert "applies to llama-2-7b" in appendix("other-model", tables, specs)["message"]


def test_summary_and_index_link_everything(built):
    assert f'href="{MODEL}.html"' in built["summary_html"]
    index = built["index_html"]
    for target in (f"{MODEL}.html", f"{MODEL}.pdf", "summary.html", "summary.pdf",
                   f"figures/{MODEL}/roofline_rtx-a6000.png"):
        assert f'href="{target}"' in index
    for link in re.findall(r'href="([^"#]+)"', index):
        if not link.startswith("../results/"):  # the pipeline's tables live next to reports/, not in this test
            assert (built["dir"] / link).exists(), link
    assert 'href="../results/ops.csv"' in index and 'href="../results/specs.json"' in index


def test_fetcher_serves_only_the_report_folder(built, tmp_path):
    reports = built["dir"]
    fetcher = report_fetcher(reports)
    inside = fetcher.fetch((reports / "figures" / MODEL / "figures.json").as_uri())
    assert inside.read()
    for url in ("file:///etc/passwd", (reports / ".." / "x").resolve().as_uri(), "http://example.com/x.png",
                "https://example.com/", "ftp://example.com/x"):
        with pytest.raises(ValueError, match="refused"):
            fetcher.fetch(url)
    # an attachment pointing outside the folder stops the rendering instead of being embedded
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-MARKER")
    html = f'<html><head><link rel="attachment" href="{secret.as_uri()}"></head><body><p>x</p></body></html>'
    out = tmp_path / "attack.pdf"
    with pytest.raises(FatalURLFetchingError):
        write_pdf(html, out, reports)
    assert not out.exists() or b"TOP-SECRET-MARKER" not in out.read_bytes()


@pytest.mark.parametrize("value, fmt, expected", [
    (6.871948e10, units.flops, "68.7 GFLOP"), (28672, units.flops, "28.7 kFLOP"), (0, units.flops, "0 FLOP"),
    (13476831232, units.nbytes, "13.5 GB"), (999.9e6, units.nbytes, "1.00 GB"),
    (7.676e11, units.rate, "0.768 TFLOP/s"), (154.8e12, units.rate, "155 TFLOP/s"),
    (4.37e-5, units.seconds, "43.7 µs"), (0.2376, units.seconds, "238 ms"), (2.1e-8, units.seconds, "21.0 ns"),
    (float("nan"), units.seconds, "—"), (None, units.flops, "—"),
    (1214.67, units.intensity, "1,215"), (0.9995, units.intensity, "1.00"), (113.78, units.intensity, "114"),
    (0.005, units.percent, "0.5%"), (0.72, units.percent, "72%"), (0.0004, units.percent, "<0.1%"),
    (3.6234, units.times, "3.62×"), (768e9, units.bandwidth, "768 GB/s"), (3.35e12, units.bandwidth, "3.35 TB/s"),
    (32.0, units.integer, "32"), (6.738e9, units.count, "6.74 B"),
])
def test_units(value, fmt, expected):
    assert fmt(value) == expected


def test_executive_summary_is_written_from_the_numbers(built, data):
    tables, _ = data
    summary = " ".join(built["context"]["summary"])
    decode = tables["totals"][tables["totals"]["stage"] == "decode"].set_index("gpu")["t_s"]
    ratio = units.times(decode["rtx-a6000"] / decode["h100-sxm"])
    assert f"{HOSTILE_GPU} (3.35 TB/s) is {ratio} faster than RTX A6000 (768 GB/s)" in summary
    assert "Decode is memory-bound on every configured GPU" in summary
    # the A6000 has no fp8 peak: a lever that exists on the H100 only must say so
    assert f"faster on {HOSTILE_GPU} (the only GPU where it applies)" in summary
    assert "fits every configured GPU" in summary
