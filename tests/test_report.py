"""Report: the context is complete and NaN-free, names are escaped, the PDF has page numbers and the numbers of
the context, and the renderer reads nothing outside the report folder. The PDF is built once per session."""
import math
import re
import shutil
import subprocess
from dataclasses import replace

import pandas as pd
import pytest
from weasyprint.urls import FatalURLFetchingError

from grids import grid
from roofline.figures import render_model_figures
from roofline.figures.batch_sweep import sweep_caption as batch_sweep_caption
from roofline.report import (
    check_context,
    index_context,
    load_manifest,
    model_context,
    render_html,
    report_fetcher,
    summary_context,
    text,
    units,
    write_pdf,
    write_report,
)
from roofline.report.page import accelerators
from roofline.report.paper import appendix
from roofline.report.text import treatment_sentence

HOSTILE_MODEL = "Llama <script>alert(1)</script> & Co"
HOSTILE_GPU = "H100 <b>bold</b> & more"
MODEL = "llama-2-7b"


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
    assert 3 <= len(context["summary"]) <= 5
    # page 1: one decision table per stage, one row per GPU, fastest expected time first (both fit), as page 1's
    # sentences and the search rank
    assert [d["stage"] for d in context["decision"]] == ["prefill", "decode"]
    totals = tables["totals"].set_index(["gpu", "stage"])
    for table in context["decision"]:
        column = "ttft_s" if table["stage"] == "prefill" else "tpot_s"
        expected = sorted(["rtx-a6000", "h100-sxm"],
                          key=lambda g: totals.loc[(g, table["stage"]), column.replace("_s", "_expected_s")])
        assert [r["gpu_key"] for r in table["rows"]] == expected
        for row in table["rows"]:
            total = totals.loc[(row["gpu_key"], table["stage"])]
            assert row["time"] == {"text": units.seconds(total[column]), "misfit": "", "css": ""}
            assert row["devices"] == "1" and row["deployment"].startswith("1 x ") and row["fit_text"] == "yes"
            assert row["tokens_per_s_per_device"]["text"] == units.sig(total["tokens_per_s"])
    # operators x GPUs: the GPU-independent columns once, then one time column per GPU
    for stage in context["matrices"]:
        mine = tables["ops"][(tables["ops"]["gpu"] == "h100-sxm") & (tables["ops"]["stage"] == stage["stage"])]
        operators = stage["operators"]
        assert operators["same_everywhere"] and [c["key"] for c in operators["columns"]] == ["rtx-a6000", "h100-sxm"]
        assert [r["op"] for r in operators["rows"]] == list(mine["op"])
        q = next(r for r in operators["rows"] if r["op"] == "q_proj")
        row = mine[mine["op"] == "q_proj"].iloc[0]
        assert q["flops"] == units.flops(row["flops"])
        assert q["times"][1]["text"] == units.seconds(row["t_s"] * row["count"])
        assert [r["treatment"] for r in stage["treatments"]["rows"]][:2] == ["fusion", "flash_attention"]
    assert [row["key"] for row in context["hardware"]["rows"]] == ["rtx-a6000", "h100-sxm"]
    assert {f["src"].rsplit("/", 1)[1] for f in context["figures"]} == {
        "time_breakdown.svg", "cross_gpu_prefill.svg", "cross_gpu_decode.svg", "seq_sweep.svg"}
    assert [g["key"] for g in context["gpus"]] == ["rtx-a6000", "h100-sxm"]
    for gpu in context["gpus"]:
        # the figures a GPU's details show after its footprint and at their end, as the figure manifest places them
        assert [f["src"] for f in gpu["figures_head"]] == [f"figures/{MODEL}/roofline_{gpu['key']}.svg"]
        assert [f["src"] for f in gpu["figures_foot"]] == [f"figures/{MODEL}/batch_sweep_{gpu['key']}.svg"]
        assert [s["stage"] for s in gpu["stages"]] == ["prefill", "decode"]
        for stage in gpu["stages"]:
            mine = tables["ops"][(tables["ops"]["gpu"] == gpu["key"]) & (tables["ops"]["stage"] == stage["stage"])]
            treatments = tables["treatments"][(tables["treatments"]["gpu"] == gpu["key"])
                                              & (tables["treatments"]["stage"] == stage["stage"])]
            assert [r["op"] for r in stage["operators"]] == list(mine["op"])
            assert [r["treatment"] for r in stage["treatments"]] == list(treatments["treatment"])
            assert len(stage["diagnosis"]) >= 3 and stage["treatment_summary"]
            assert len(stage["other_gpus"]) == 1
    # the batch sweep of llama-2-7b, 2048 tokens: critical batch 219 in the sweep
    a6000 = context["gpus"][0]["figures_foot"][0]["caption"]
    assert "the dashed line marks the critical batch (219)" in a6000 and "shaded region" in a6000
    assert context["appendix"]["available"] and len(context["appendix"]["sections"]) == 2
    assert context["caveats"]


def test_no_nan_reaches_the_page(built):
    # prefill rows have NaN tpot, decode rows NaN ttft: they must show as a dash
    summary = built["summary"]
    check_context(summary)
    assert all(row["cells"]["ttft"]["text"] != units.DASH and row["cells"]["tpot"]["text"] != units.DASH
               for group in summary["groups"] for row in group["rows"])
    assert "nan" not in built["html"].lower().replace("nanosecond", "")
    with pytest.raises(ValueError, match="NaN"):
        check_context({"gpus": [{"time": float("nan")}]})
    with pytest.raises(ValueError, match="unformatted"):
        check_context({"time": 0.25})


def test_prefill_only_config_shows_dashes_not_nan():
    tables, specs = grid({"models": {MODEL: {}}, "gpus": {"rtx-a6000": {}}, "stages": ["prefill"]})
    summary = summary_context(tables, specs)
    row = summary["groups"][0]["rows"][0]["cells"]
    assert row["tpot"]["text"] == units.DASH and row["tokens_per_s"]["text"] == units.DASH
    assert row["ttft"]["text"] != units.DASH
    assert "tpot" not in [c["key"] for c in summary["columns"]]  # a column of dashes only is not shown
    html = render_html(summary)
    assert "nan" not in html.lower()
    # the notes explain the stage the tables hold, not the other one (a decode-only summary had explained TTFT)
    html = " ".join(html.split())
    assert "Time to first token: the prefill pass" in html and "Time per output token: one decode" not in html
    decode = " ".join(render_html(summary_context(*grid({"models": {MODEL: {}}, "gpus": {"rtx-a6000": {}},
                                                          "stages": ["decode"]}))).split())
    assert "Time per output token: one decode" in decode and "Time to first token: the prefill" not in decode
    assert "the appendix names that stage" not in decode


def test_html_escapes_hostile_names(built):
    for html in (built["html"], built["summary_html"], built["index_html"]):
        # the pages carry their own scripts (sortable tables, interactive figures): no name may open or close one
        assert "<script>alert(1)" not in html and "alert(1)</script>" not in html
    for html in (built["html"], built["index_html"]):
        assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co" in html
    # the summary cuts model names after each '/' into no-wrap parts (line breaks only there): escaped part by part
    assert ('<span class="name-part">Llama &lt;script&gt;alert(1)&lt;/</span>&#8203;'
            '<span class="name-part">script&gt; &amp; Co</span>') in built["summary_html"]
    assert "<b>bold</b>" not in built["html"]
    assert "H100 &lt;b&gt;bold&lt;/b&gt; &amp; more" in built["html"]


def test_pdf_has_page_numbers_and_the_context_numbers(built):
    text = pdftotext(built["dir"] / f"{MODEL}.pdf")
    pages = re.findall(r"Page (\d+) of (\d+)", text)
    assert pages and pages[0] == ("1", pages[0][1]) and int(pages[-1][0]) == int(pages[-1][1]) <= 8
    flat = " ".join(text.split())
    context = built["context"]
    expected = [context["header"]["config_hash"], "<script>alert(1)</script> & Co"]
    for row in context["hardware"]["rows"]:
        expected += [row["memory"], row["bandwidth"]]
    for stage in context["matrices"]:
        expected += [stage["operators"]["rows"][2]["flops"], stage["operators"]["rows"][2]["times"][0]["text"]]
        expected += [c["text"] for c in stage["operators"]["total"]]
        expected += [c["text"] for row in stage["treatments"]["rows"] for c in row["cells"]]
    for section in context["appendix"]["sections"]:
        expected += [section["rows"][0]["paper_flops"], section["rows"][0]["ours_bytes"]]
    missing = [value for value in expected if value not in flat]
    assert not missing
    # page 1 holds the decision: every stage's table with every GPU's time and the best lever
    first = " ".join(subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(built["dir"] / f"{MODEL}.pdf"), "-"],
                                    check=True, capture_output=True, text=True).stdout.split())
    assert "Decision: where to run it" in first
    for table in context["decision"]:
        assert table["title"] in first
        for row in table["rows"]:
            assert row["time"]["text"] in first and row["lever"] in first
            assert " ".join(row["deployment"].split()[:3]) in first  # the name may wrap in its cell
    summary = pdftotext(built["dir"] / "summary.pdf")
    assert "Page 1 of 1" in summary
    for group in built["summary"]["groups"]:
        for row in group["rows"]:
            assert row["cells"]["ttft"]["text"] in summary and row["cells"]["tpot"]["text"] in summary


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
    qk = rows["decode", "qk_matmul"]["why"]
    assert "2,049" in qk and qk.startswith("FLOPs and bytes 1.0005×: ")  # one ratio for both: said once
    assert rows["decode", "mlp_act"]["why"].startswith("FLOPs 6.72×; bytes 2.69×: ")  # two ratios: both said
    assert "scale vector" in rows["prefill", "attn_norm"]["why"]
    assert "a row we add" in rows["decode", "rope"]["why"] and "a row we add" in rows["decode", "kv_cache_write"]["why"]
    assert all(r["explained"] for s in sections for r in s["rows"])
    _tables, specs = data
    # another model's report links to the llama-2-7b report when that model is configured
    other = appendix("other-model", specs)
    assert not other["available"] and other["link"]["href"] == "llama-2-7b.html#appendix"
    without = {**specs, "models": {"other-model": {}}}
    other = appendix("other-model", without)
    assert not other["available"] and other["link"] is None and "add `llama-2-7b: {}`" in other["message"]


def test_appendix_reproduces_the_papers_case_whatever_the_scenario():
    """The paper's case (batch 1, 2048 tokens, fp16, eager attention on the A6000) is computed by the engine even
    when the configuration runs another scenario on other GPUs: the same rows as in the default scenario."""
    tables, specs = grid({"models": {MODEL: {}}, "gpus": {"h100-sxm": {}}, "stages": ["decode"],
                          "scenario": {"batch": 16, "seq_len": 512, "weight_dtype": "int4", "attention": "flash"}})
    sections = appendix(MODEL, specs)["sections"]
    rows = {(s["stage"], r["op"].split()[0]): r for s in sections for r in s["rows"]}
    assert [s["stage"] for s in sections] == ["prefill", "decode"]
    # q_proj prefill: 2 x 2048 x 4096 x 4096 = 68.7 GFLOP; 33.6 MB weight + 16.8 MB in + 16.8 MB out = 67.1 MB
    assert rows["prefill", "q_proj"]["ours_flops"] == "68.7 GFLOP" and rows["prefill", "q_proj"]["matches"]
    assert rows["prefill", "q_proj"]["ours_bytes"] == "67.1 MB"
    assert "2,049" in rows["decode", "qk_matmul"]["why"]  # seq_len 2048 of the paper, not the configured 512
    assert all(r["explained"] for s in sections for r in s["rows"])


def test_summary_and_index_link_everything(built):
    assert f'href="{MODEL}.html"' in built["summary_html"]
    index = built["index_html"]
    for target in (f"{MODEL}.html", f"{MODEL}.pdf", "summary.html", "summary.pdf",
                   f"figures/{MODEL}/roofline_rtx-a6000.svg"):  # HTML-only figures are drawn as SVG only
        assert f'href="{target}"' in index
    for link in re.findall(r'href="([^"#]+)"', index):  # every link stays inside reports/: it can be copied alone
        assert (built["dir"] / link).resolve().is_relative_to(built["dir"].resolve()), link
        assert (built["dir"] / link).exists(), link
    assert "../results" not in index and "<code>results/ops.csv</code>" in index


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
    (0.0996, units.percent, "10%"), (0.0994, units.percent, "9.9%"), (1307.4e12, units.rate, "1,310 TFLOP/s"),
    (1e21, units.rate, "1.00×10⁹ TFLOP/s"), (1e6, units.bandwidth, "1.00 MB/s"),
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
    # levers rank by their median over every GPU, 1x where they do not apply: fp8 compute (the H100 alone: the
    # A6000 has no fp8 peak) yields to twice the tensor parallelism, which both gain from
    assert "lever for prefill (by its median speed-up over the GPUs) is twice the tensor parallelism" in summary
    totals = tables["totals"].set_index(["gpu", "stage"])
    prefill = totals.loc[("h100-sxm", "prefill")]
    # one device each, the same bytes on both GPUs: said of every GPU, not of the one the sort put last
    assert (f"Memory: every configured GPU holds both stages; the largest footprint is prefill's "
            f"{units.nbytes(prefill['footprint_bytes'])} on every configured GPU (weights "
            f"{units.nbytes(prefill['weight_bytes'])}, KV cache {units.nbytes(prefill['kv_cache_bytes'])}, activations "
            f"{units.nbytes(prefill['activation_bytes'])}).") in summary


@pytest.fixture(scope="module")
def long_context():
    """Two models on two GPUs at batch 4 x 32k tokens with int4 weights: llama-3.1-8b's prefill (eager scores) does
    not fit the A6000 while its decode does; fp8 compute is slower than int4 weights in decode (fp8 weights are
    wider); DeepSeek-V3 brings MLA and MoE. HTML only (no PDF): fast."""
    tables, specs = grid({"models": {"llama-3.1-8b": {}, "deepseek-v3": {}}, "gpus": {"rtx-a6000": {}, "h100-sxm": {}},
                          "scenario": {"batch": 4, "seq_len": 32768, "weight_dtype": "int4", "attention": "eager",
                                       "parallel": {"tp": 1}}})  # one device each: the misfits stay misfits
    contexts = {model: model_context(model, tables, specs, [], "figures") for model in specs["models"]}
    return tables, specs, contexts


def _rows(**speedups):
    """Treatment rows of one (gpu, stage) with the given latency speed-ups (helps as in the engine's table)."""
    helps = {"fp8_compute": "both"}
    return pd.DataFrame([{"treatment": t, "label": t, "helps": helps.get(t, "memory"), "applicable": True,
                          "speedup": v, "batch": 1, "t_s": 1.0, "tokens_per_s": 1.0} for t, v in speedups.items()])


def test_treatment_sentence_names_each_treatment_once_and_slowdowns_apart():
    # the reviewer's case: decode with int4 weights; int8 KV 1.04x used to appear among both gains and non-gains,
    # and fp8 compute at 0.586x was offered as a gain
    rows = _rows(weight_int4=3.25, weight_int8=1.86, kv_int8=1.04, kv_fp8=1.04, flash_attention=1.001,
                 fusion=1.001, fp8_compute=0.586)
    sentence = treatment_sentence("decode", pd.Series({"memory_bound_share": 1.0}), rows, {"weight_dtype": "int4"})
    assert sentence == (
        "Decode is memory-bound (100% of its time in memory-bound operators): what shortens it is fewer bytes. "
        "Latency gains of 5% or more: int4 weights 3.25× and int8 weights 1.86× (for memory-bound operators). "
        "Little or no gain (< 1.05×): int8 KV cache, fp8 KV cache, FlashAttention, fusion. "
        "Slower: fp8 compute (0.586×, 1.71× the time: its fp8 weights are wider than the configured int4 weights).")
    # a mostly compute-bound prefill whose gains cut bytes: the words say which operators each gain helps
    rows = _rows(flash_attention=1.2, fusion=1.19, fp8_compute=1.9, kv_int8=1.01)
    sentence = treatment_sentence("prefill", pd.Series({"memory_bound_share": 0.28}), rows)
    assert sentence.startswith("Prefill is mostly compute-bound: 28% of its time is in memory-bound operators, which "
                               "fewer bytes shorten, and 72% in compute-bound ones, which more FLOP/s or fewer FLOPs "
                               "shorten. Latency gains of 5% or more: fp8 compute 1.90× (for both); FlashAttention "
                               "1.20× and fusion 1.19× (for memory-bound operators).")
    assert "what helps is more FLOP/s" not in sentence
    assert treatment_sentence("prefill", pd.Series({"memory_bound_share": 0.5}), _rows(fusion=1.01)).endswith(
        "No latency treatment gains 5% or more. Little or no gain (< 1.05×): fusion.")


def test_treatment_sentences_of_a_real_grid_agree_with_their_tables(long_context):
    tables, _specs, contexts = long_context
    slowdowns = 0
    for model, context in contexts.items():
        for gpu in context["gpus"]:
            for stage in gpu["stages"]:
                sentence = stage["treatment_summary"]
                rows = tables["treatments"]
                rows = rows[(rows["model"] == model) & (rows["gpu"] == gpu["key"]) & (rows["stage"] == stage["stage"])
                            & rows["applicable"].astype(bool) & ~rows["treatment"].map(text.is_throughput)]
                gains = sentence.split("Latency gains of 5% or more: ")[-1].split(". ")[0] \
                    if "Latency gains" in sentence else ""
                flat = sentence.split("Little or no gain")[-1].split(". ")[0] if "Little or no gain" in sentence else ""
                slower = sentence.split("Slower: ")[-1] if "Slower: " in sentence else ""
                for r in rows.itertuples():
                    name = text.short(r.treatment)
                    where = [part for part in (gains, flat, slower) if re.search(rf"(^|[ (:]){name}\b", part)]
                    assert len(where) == 1, (model, gpu["key"], stage["stage"], name, sentence)
                    gain = round(r.speedup, 2) >= 1.05  # as printed: 1.0493 reads 1.05x, a gain
                    expected = gains if gain else slower if r.speedup < 0.995 else flat
                    assert where[0] is expected, (name, r.speedup, sentence)
                    if gain:  # grouped under the bottleneck the table's Helps column names
                        group = next(g for g in gains.split("; ") if re.search(rf"(^| ){name} ", g))
                        assert group.rstrip(".").endswith(f"({text.GAIN_GROUP[r.helps]})"), (name, group)
                slowdowns += "Slower: fp8 compute (0." in sentence and "wider than the configured int4" in sentence
    assert slowdowns  # fp8 compute slows the int4 decode down on the H100, and the report says so


def test_footprint_names_each_stage_in_model_report_and_summary(long_context):
    tables, specs, contexts = long_context
    totals = tables["totals"].set_index(["model", "gpu", "stage"])
    prefill, decode = totals.loc[("llama-3.1-8b", "rtx-a6000", "prefill")], totals.loc[("llama-3.1-8b", "rtx-a6000",
                                                                                        "decode")]
    assert not prefill["fits"] and decode["fits"]  # the stages disagree: the report must not pick one silently
    a6000 = next(g for g in contexts["llama-3.1-8b"]["gpus"] if g["key"] == "rtx-a6000")
    assert [(r["stage"], r["footprint"], r["fits"]) for r in a6000["footprint"]["rows"]] == [
        ("prefill", units.nbytes(prefill["footprint_bytes"]), False),
        ("decode", units.nbytes(decode["footprint_bytes"]), True)]
    assert not a6000["fits"]
    assert a6000["footprint_note"].startswith("Prefill does not fit in 46.4 GB usable of 48 GiB (51.5 GB); its times "
                                              "assume it did")
    assert "Prefill's activations (" in a6000["footprint_note"]
    assert "are the inputs and outputs of its largest operator, softmax" in a6000["footprint_note"]
    assert "With FlashAttention (no score matrix in DRAM) prefill needs" in a6000["footprint_note"]
    deepseek = next(g for g in contexts["deepseek-v3"]["gpus"] if g["key"] == "rtx-a6000")
    assert deepseek["footprint_note"].startswith("Prefill and decode do not fit in 46.4 GB usable of 48 GiB (51.5 GB); "
                                                 "their times assume they did")
    summary_text = " ".join(contexts["llama-3.1-8b"]["summary"])
    usable = units.nbytes(totals.loc[("llama-3.1-8b", "h100-sxm", "prefill")]["usable_memory_bytes"])  # the one named
    # the share beside it in decimal GB: 77.3 GB is 90% of the 80 GiB = 85.9 GB the hardware table prints as 80 GiB
    assert (f"prefill needs {units.nbytes(prefill['footprint_bytes'])} of {usable} usable (90% of 85.9 GB) on 1 x "
            f"H100 SXM5 80GB (weights {units.nbytes(prefill['weight_bytes'])}") in summary_text
    assert f"decode needs {units.nbytes(decode['footprint_bytes'])}" in summary_text
    html = render_html(contexts["llama-3.1-8b"])
    assert "<th>Fits in 48 GiB</th>" in html
    summary = summary_context(tables, specs)
    row = next(r for g in summary["groups"] if g["model"] == "llama-3.1-8b" for r in g["rows"]
               if r["gpu_key"] == "rtx-a6000")["cells"]
    # 90% of 48 GiB holds decode, not prefill: at least ceil(prefill footprint / 46.4 GB) devices, for prefill
    needed = math.ceil(prefill["footprint_bytes"] / prefill["usable_memory_bytes"])
    assert (row["footprint"]["text"], row["devices"]["text"]) == (
        f"{units.nbytes(prefill['footprint_bytes'])} (prefill)", f"≥ {needed} (prefill)")
    # the prefill time is marked, the decode time (it fits) is not
    assert row["ttft"]["misfit"] == (f"does not fit: needs {units.nbytes(prefill['footprint_bytes'])}, has "
                                     "46.4 GB usable of 48 GiB (51.5 GB)") and row["tpot"]["misfit"] == ""
    html = render_html(summary)
    assert f"≥ {needed} (prefill)" in re.sub(r"<[^>]+>", "", html)  # the parts may wrap apart (macros.td)
    assert f'title="{row["ttft"]["misfit"]}"><span class="cross">✗</span> {row["ttft"]["text"]}</td>' in html


def test_mla_and_moe_model_facts(long_context):
    tables, specs, contexts = long_context
    sweeps = tables["sweeps"][tables["sweeps"]["model"] == "deepseek-v3"]
    for key, gpu in accelerators(specs).items():  # sweeps stop at batch 512: no dashed line to point at
        caption = batch_sweep_caption(sweeps[sweeps["gpu"] == key], gpu)
        assert "the critical batch (" in caption and "lies beyond the sweep" in caption and "dashed" not in caption
    facts = dict(contexts["deepseek-v3"]["facts"])
    assert "head dim 0" not in " ".join(facts.values())
    assert facts["attention"] == ("multi-head latent attention (MLA), 128 heads; q/k head dim 192 (128 without RoPE "
                                  "+ 64 RoPE), v head dim 128; query latent 1,536")
    # absorbed MLA caches the 512-wide latent and the 64-wide RoPE key: 576 elements x 61 layers x 2 bytes
    assert facts["KV cache"] == ("latent 512 + RoPE key 64 = 576 elements per token per layer (MLA absorbed); "
                                 "70.3 kB per token over 61 layers at fp16")
    assert facts["layers"] == "61 (3 dense, 58 MoE)"
    assert facts["experts"].startswith("256 routed (top-8 per token) + 1 shared, expert width 2,048")
    assert facts["parameters"].endswith("active per token")
    llama = dict(contexts["llama-3.1-8b"]["facts"])
    assert llama["attention"] == "32 query heads, 8 KV heads (GQA), head dim 128"
    assert llama["KV cache"].startswith("2 × 8 KV heads × 128 = 2,048 elements per token per layer; 131 kB per token")
    assert "experts" not in llama and "active" not in llama["parameters"]


def test_other_gpus_say_faster_or_slower_and_no_empty_appendix(long_context):
    tables, _specs, contexts = long_context
    decode = tables["totals"][(tables["totals"]["model"] == "llama-3.1-8b") & (tables["totals"]["stage"] == "decode")]
    t = decode.set_index("gpu")["t_s"]
    h100 = next(g for g in contexts["llama-3.1-8b"]["gpus"] if g["key"] == "h100-sxm")
    other = next(s for s in h100["stages"] if s["stage"] == "decode")["other_gpus"][0]
    assert other["versus"] == f"{units.times(t['rtx-a6000'] / t['h100-sxm'])} slower"
    a6000 = next(g for g in contexts["llama-3.1-8b"]["gpus"] if g["key"] == "rtx-a6000")
    other = next(s for s in a6000["stages"] if s["stage"] == "decode")["other_gpus"][0]
    assert other["versus"] == f"{units.times(t['rtx-a6000'] / t['h100-sxm'])} faster"
    # llama-2-7b is not configured: one sentence, no appendix section or table of contents entry, no link
    html = render_html(contexts["deepseek-v3"])
    assert 'id="appendix"' not in html and 'href="#appendix"' not in html and 'class="paper"' not in html
    assert "add `llama-2-7b: {}` under models" in html and "llama-2-7b.html" not in html


def test_other_models_link_to_the_table1_comparison_when_it_exists():
    tables, specs = grid({"models": {MODEL: {}, "qwen2.5-7b": {}}, "gpus": {"rtx-a6000": {}}})
    html = render_html(model_context("qwen2.5-7b", tables, specs, [], "figures"))
    # named as the reports name them (their config keys had been written out in the prose)
    assert ("Table 1 (meta-llama/Llama-2-7b-hf on an RTX A6000) is in the appendix of "
            'the <a href="llama-2-7b.html#appendix">meta-llama/Llama-2-7b-hf report</a> '
            '(<a href="llama-2-7b.pdf">PDF</a>).') in html
    assert 'id="appendix"' not in html
    assert 'id="appendix"' in render_html(model_context(MODEL, tables, specs, [], "figures"))


LONG_GPU = ("NVIDIA H100 SXM5 80GB HBM3 Hopper Tensor Core GPU with NVLink 4.0, PCIe Gen5, Confidential Computing, "
            "Multi-Instance GPU and the Transformer Engine (fp8) - Engineering Sample Rev B")


def words_past_the_margin(pdf):
    """(page, word, right edge) of every word of the PDF that runs past the right page margin (14 mm)."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    xml = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    outside = []
    for n, (width, body) in enumerate(re.findall(r'<page width="([\d.]+)"[^>]*>(.*?)</page>', xml, re.S), 1):
        limit = float(width) - 14 / 25.4 * 72 + 1
        for x_max, word in re.findall(r'<word xMin="[\d.]+" yMin="[\d.]+" xMax="([\d.]+)" yMax="[\d.]+">([^<]*)</word>',
                                      body):
            if float(x_max) > limit:
                outside.append((n, word, float(x_max)))
    return outside


def test_long_names_wrap_and_keep_every_number_on_the_page(tmp_path):
    """A 180-character GPU name and a 77-character model name without spaces: before, the summary's GPU column
    (no wrap) and the sources table pushed the numbers past the page edge, where the PDF clipped them."""
    tables, specs = grid({"models": {"gpt2": {"name": "openai-community/" + "X" * 60}},
                          "gpus": {"t4": {}, "h100-sxm": {"name": LONG_GPU}}, "stages": ["decode"],
                          "scenario": {"seq_len": 512}})
    context = model_context("gpt2", tables, specs, [], "figures")
    write_report(context, tmp_path / "gpt2.html", tmp_path / "gpt2.pdf")
    summary = summary_context(tables, specs)
    write_report(summary, tmp_path / "summary.html", tmp_path / "summary.pdf")
    assert not words_past_the_margin(tmp_path / "summary.pdf")
    assert not words_past_the_margin(tmp_path / "gpt2.pdf")
    flat = " ".join(pdftotext(tmp_path / "summary.pdf").split())
    for row in summary["groups"][0]["rows"]:
        assert row["cells"]["tpot"]["text"] in flat and row["cells"]["tokens_per_s"]["text"] in flat
    text = " ".join(pdftotext(tmp_path / "gpt2.pdf").split())
    for row in context["hardware"]["rows"]:  # the sources table (with the L2) is in the HTML only
        assert row["bandwidth"] in text and f'<td class="num">{row["l2"]}</td>' in render_html(context)
    # the summary breaks a long model-name part anywhere, short parts only after '/'
    assert [p["nowrap"] for p in summary["groups"][0]["name_parts"]] == [True, False]
    assert [r["gpu_nowrap"] for r in summary["groups"][0]["rows"]] == [True, False]  # 'T4' stays on one line
    assert "Compared with this GPU" in render_html(context)  # no 180-character column header
    # the hardware table's caption names the integer columns it has, and none it has not (it said "TOP/s for int8
    # and int4" above a table that ended at int8)
    integers = [d for d in context["hardware"]["dtypes"] if d.startswith("int")]
    assert integers and f"Dense peaks in TFLOP/s (TOP/s for {' and '.join(integers)})," in render_html(context)
    floats = {**context["hardware"], "dtypes": [d for d in context["hardware"]["dtypes"] if d not in integers]}
    assert "Dense peaks in TFLOP/s, with the ridge" in render_html({**context, "hardware": floats})


def test_a_misfit_reads_on_a_few_lines_and_a_models_rows_stay_together(tmp_path):
    """Mixtral on a 48 GiB device of its own does not fit: its 'does not fit: needs 94.0 GB, has 46.4 GB usable of
    48 GiB' had stood a word a line beside the no-wrap columns; given room, the decision tables must still end
    inside the margin. In the summary each model's rows are one row group, kept on one page (its name is a cell
    spanning them, which a page break had left behind)."""
    solo = {"name": "ACME Solo", "memory_gb": 48, "bandwidth_gbps": 1000, "peak_tflops": {"bf16": 300, "fp16": 300}}
    tables, specs = grid({"models": {"mixtral-8x7b": {}, "llama-2-7b": {}}, "gpus": {"l40s": {}, "acme-solo": solo},
                          "stages": ["prefill", "decode"], "scenario": {"seq_len": 2048}})
    context = model_context("mixtral-8x7b", tables, specs, [], "figures")
    write_report(context, tmp_path / "mixtral.html", tmp_path / "mixtral.pdf")
    assert not words_past_the_margin(tmp_path / "mixtral.pdf")
    html = render_html(context)
    assert '<td class="misfit">does not fit: needs' in html
    # only a table with a misfit lets its bound and lever break (elsewhere they stay on a line: compact tables)
    assert html.count('class="decision-table sortable with-misfit"') == 2  # prefill and decode, both misfits
    fitting = model_context("llama-2-7b", tables, specs, [], "figures")
    assert "sortable with-misfit" not in render_html({**fitting, "decision": [
        {**table, "rows": [row for row in table["rows"] if row["fits"]]} for table in fitting["decision"]]})
    summary = summary_context(tables, specs)
    summary_html = write_report(summary, tmp_path / "summary.html", tmp_path / "summary.pdf")
    assert summary_html.count('<tbody class="model-group">') == len(summary["groups"]) == 2
    assert not words_past_the_margin(tmp_path / "summary.pdf")
    # printed, every row of a group names its model (the first plainly, the rest faintly), so a page break inside a
    # group leaves no nameless rows; on screen the name heads its group once
    printed = pdftotext(tmp_path / "summary.pdf")
    for group in summary["groups"]:
        name = group["name_parts"][-1]["text"]  # 'Mixtral-8x7B-v0.1' (a cell breaks after 'mistralai/')
        assert printed.count(name) >= len(group["rows"]) + 1, name  # and once a group in the decision table
    assert 'class="model continued"' not in summary_html


def test_interrupted_report_keeps_the_previous_files(built, tmp_path, monkeypatch):
    import weasyprint

    html, pdf = tmp_path / "m.html", tmp_path / "m.pdf"
    html.write_text("old html")
    pdf.write_bytes(b"old pdf")

    def killed(self, target=None, *args, **kwargs):
        with open(target, "wb") as handle:  # half a PDF on disk, then Ctrl-C
            handle.write(b"%PDF-1.7 half")
        raise KeyboardInterrupt

    monkeypatch.setattr(weasyprint.Document, "write_pdf", killed)
    with pytest.raises(KeyboardInterrupt):
        write_report(built["summary"], html, pdf)
    assert html.read_text() == "old html" and pdf.read_bytes() == b"old pdf"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.html", "m.pdf"]  # no temporary file left
    monkeypatch.undo()
    (tmp_path / ".m.pdf.k1ll3d_9.part").write_bytes(b"%PDF-1.7 half")  # left by a SIGKILL: removed on the next run
    write_report(built["summary"], html, pdf)
    assert "Roofline summary" in html.read_text() and pdf.read_bytes().startswith(b"%PDF")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.html", "m.pdf"]
    assert oct(pdf.stat().st_mode & 0o777) == oct(0o644)  # readable like any report, not 0600


def test_integer_gemms_show_top_per_second():
    tables, specs = grid({"models": {MODEL: {}}, "gpus": {"h100-sxm": {}}, "stages": ["decode"],
                          "scenario": {"weight_dtype": "int8", "act_dtype": "int8"}})
    context = model_context(MODEL, tables, specs, [], "figures")
    rows = context["gpus"][0]["stages"][0]["operators"]
    ops = tables["ops"]
    for row, op in zip(rows, ops.itertuples()):
        assert row["attainable"].endswith(" TOP/s" if op.compute_dtype == "int8" else " TFLOP/s"), (row, op)
    q_proj = next(r for r in rows if r["op"] == "q_proj")
    assert q_proj["attainable"] == units.rate(float(ops.loc[ops["op"] == "q_proj", "attainable_flops_per_s"].iloc[0]),
                                              "int8")
    assert units.rate(619e12, "int8") == "619 TOP/s" and units.rate(619e12, "fp16") == "619 TFLOP/s"


def test_bound_words_follow_the_printed_share():
    # the reviewer's pair: 10% (0.1003) read "mostly compute-bound" and 8.6% "compute-bound"
    assert units.percent(0.1003) == units.percent(0.0996) == "10%"
    assert text.bound_phrase(0.1003) == text.bound_phrase(0.0996) == text.bound_phrase(0.086) == "compute-bound"
    assert text.bound_phrase(0.106) == "mostly compute-bound"  # prints 11%
    assert text.bound_phrase(0.8996) == "memory-bound" and units.percent(0.8996) == "90%"
    # three roofs: the largest share may be no majority (43% memory, 37% compute, 20% collectives): 'partly'
    assert text.bound_phrase(0.43, 0.20) == "partly memory-bound"
    assert text.bound_phrase(0.20, 0.47) == "partly network-bound"
    assert text.bound_phrase(0.2, 0.5) == "mostly network-bound"
    assert text.balance_sentence("prefill", 0.1003).startswith("Prefill is compute-bound (90% of its time")


def test_executive_summary_groups_near_identical_shares(data):
    tables, specs = data
    totals = tables["totals"].copy()
    prefill = totals["stage"] == "prefill"
    totals.loc[prefill & (totals["gpu"] == "rtx-a6000"), "memory_bound_share"] = 0.1003
    totals.loc[prefill & (totals["gpu"] == "h100-sxm"), "memory_bound_share"] = 0.086
    sentences = text.executive_summary("m", totals, tables["treatments"], accelerators(specs), specs["scenario"])
    prefill_sentence = next(s for s in sentences if s.startswith("Prefill is"))
    assert prefill_sentence.startswith("Prefill is compute-bound on every configured GPU (8.6%–10% of its time in "
                                       "memory-bound operators)"), prefill_sentence
    assert "mostly" not in prefill_sentence


def test_decode_already_past_the_critical_batch():
    """Gemma-2-9b on the L4 at batch 512 (critical batch 480): the GEMMs are compute-bound already."""
    tables, specs = grid({"models": {"gemma-2-9b": {}}, "gpus": {"l4": {}}, "stages": ["decode"],
                          "scenario": {"batch": 512, "parallel": {"tp": 1}}})
    total = tables["totals"].iloc[0]
    assert total["critical_batch"] <= 512
    sentences = " ".join(model_context("gemma-2-9b", tables, specs, [], "figures")["gpus"][0]["stages"][0]
                         ["diagnosis"])
    assert (f"batch 512 is already past the critical batch ({units.integer(total['critical_batch'])}), so the GEMMs "
            "are compute-bound") in sentences
    assert "would turn compute-bound" not in sentences
    assert (f"this batch needs {units.nbytes(total['footprint_bytes'])} per device and does not fit in 23.2 GB usable "
            "of 24 GiB") in sentences


def test_kv_cache_traffic_is_told_apart_from_the_cache_size(long_context):
    """Absorbed MLA with eager attention reads the latent twice: the decode sentence names the traffic and the
    size, and the size is the memory table's."""
    tables, _specs, contexts = long_context
    ops = tables["ops"]
    for gpu in contexts["deepseek-v3"]["gpus"]:
        mine = ops[(ops["model"] == "deepseek-v3") & (ops["gpu"] == gpu["key"]) & (ops["stage"] == "decode")]
        moved = float(((mine["bytes_kv_read"] + mine["bytes_kv_write"]) * mine["count"]).sum())
        decode = next(s for s in gpu["stages"] if s["stage"] == "decode")
        cache = next(r for r in gpu["footprint"]["rows"] if r["stage"] == "decode")["kv_cache"]
        sentence = " ".join(decode["diagnosis"])
        assert f"KV-cache traffic adds {units.nbytes(moved)}" in sentence
        assert f"the cache itself holds {cache}: qk_matmul and sv_matmul together read" in sentence
        assert "the KV cache adds" not in sentence
    llama = contexts["llama-3.1-8b"]["gpus"][0]
    decode = " ".join(next(s for s in llama["stages"] if s["stage"] == "decode")["diagnosis"])
    assert "KV-cache traffic adds" in decode and "the cache itself holds" not in decode  # traffic = size: no note


def test_decision_reads_deployment_and_expected_columns_of_the_totals(data):
    """The decision table reads the deployment, the expected times and the usable memory of the totals in one place
    each (decision.deployment, decision.expected_time, decision.capacity_bytes)."""
    from roofline.report import decision

    tables, specs = data
    totals = tables["totals"].copy()
    totals["devices"] = 4
    totals["deployment"] = "4 × H100, TP 4"
    totals["tokens_per_s_per_device"] = totals["tokens_per_s"] / 4
    totals["ttft_expected_s"] = totals["ttft_s"] * 1.5
    totals["tpot_expected_s"] = totals["tpot_s"] * 1.25
    totals["usable_memory_bytes"] = 1e9  # 1 GB usable: nothing fits
    gpus = accelerators(specs)
    tables_ = decision.decision_tables(totals.assign(fits=False), tables["treatments"], gpus, ["prefill", "decode"])
    decode = next(t for t in tables_ if t["stage"] == "decode")
    assert decode["has_expected"]
    row = next(r for r in decode["rows"] if r["gpu_key"] == "h100-sxm")
    total = totals[(totals["gpu"] == "h100-sxm") & (totals["stage"] == "decode")].iloc[0]
    assert (row["deployment"], row["devices"]) == ("4 × H100, TP 4", "4")
    assert row["tokens_per_s_per_device"]["text"] == units.sig(total["tokens_per_s"] / 4)
    assert row["expected"]["text"] == units.seconds(total["tpot_s"] * 1.25)
    # the usable share beside the capacity as the hardware table prints it (a reader checks 1 GB against 80 GiB)
    assert row["fit_text"] == (f"does not fit: needs {units.nbytes(total['footprint_bytes'])}, has 1.00 GB usable "
                               "of 80 GiB (85.9 GB)")
    # the pipeline's own totals: the engine's deployment and expected times, as they are
    plain = decision.decision_tables(tables["totals"], tables["treatments"], gpus, ["decode"])[0]
    for r in plain["rows"]:
        real = tables["totals"].set_index(["gpu", "stage"]).loc[(r["gpu_key"], "decode")]
        assert (r["devices"], r["deployment"]) == (str(real["devices"]), real["deployment"])
        assert r["expected"]["text"] == units.seconds(real["tpot_expected_s"]) + decision.estimate_mark(real)
    assert {r["deployment"] for r in plain["rows"]} == {f"1 x {g.name}" for g in gpus.values()}
    # each mark is explained under the table; the column names the framework whose kernels the times use
    marks = {decision.estimate_mark(real) for _, real in tables["totals"].iterrows()} - {""}
    assert all(mark in plain["marks"] for mark in marks)
    frameworks = set(tables["totals"]["framework"]) - {"none", ""}
    assert plain["expected_label"] == (f"Expected ({frameworks.pop()})" if len(frameworks) == 1 else "Expected")


def test_model_report_states_the_recommended_deployment_per_gpu(data, tmp_path):
    """With a `plan` section the decision page lists each GPU's recommended plan (planner.plan_table), best first,
    read back from the parquet file the pipeline writes; an impossible target gives the planner's reason."""
    from roofline.engine.hardware import get_accelerator
    from roofline.engine.models import get_model
    from roofline.pipeline.io import write_plan_table
    from roofline.report import load_plan
    from roofline.serving import planner

    tables, specs = data
    settings = planner.PlanSettings(workload=planner.Workload(isl=512, osl=256, tpot_s=0.05).validate(),
                                    gpus=(get_accelerator("rtx-a6000"), get_accelerator("h100-sxm")), max_devices=2)
    rows, reason = planner.plan_table(get_model(MODEL), settings)
    write_plan_table(rows, reason, str(tmp_path / "plan.parquet"))
    plans = model_context(MODEL, {**tables, "plans": load_plan(tmp_path / "plan.parquet")}, specs, [],
                          "figures")["plans"]
    recommended = [r for r in rows if r["recommended"]]
    assert len(plans["rows"]) == len(recommended) == 2 and plans["reason"] == ""
    best = max(recommended, key=lambda r: r["tokens_per_s_per_device"])
    assert plans["rows"][0]["deployment"] == best["deployment"] and plans["rows"][0]["chosen"]
    assert plans["rows"][0]["tpot"] == units.seconds(best["tpot_s"]) and best["tpot_s"] <= 0.05
    assert "512 prompt and 256 output tokens" in plans["workload"]
    html = render_html(model_context(MODEL, {**tables, "plans": load_plan(tmp_path / "plan.parquet")}, specs, [],
                                     "figures"))
    assert "Recommended deployments (deployment search)" in html
    impossible = replace(settings, workload=planner.Workload(isl=512, osl=256, tpot_s=1e-6).validate())
    rows, reason = planner.plan_table(get_model(MODEL), impossible)
    write_plan_table(rows, reason, str(tmp_path / "none.parquet"))
    none = model_context(MODEL, {**tables, "plans": load_plan(tmp_path / "none.parquet")}, specs, [], "figures")
    assert none["plans"]["rows"] == [] and none["plans"]["reason"] == reason != ""


def test_operator_matrix_matches_operators_by_name_across_deployments():
    """Two keys of one device with other plans: the TP 4 deployment has collectives the single device lacks; every
    operator keeps its own time in each column (matched by name, not by position), a missing one shows a dash, and
    the columns and sentences name the deployments."""
    tables, specs = grid({"models": {"llama-3.1-8b": {}},
                          "gpus": {"h100-tp1": {"base": "h100-sxm", "parallel": {"tp": 1}},
                                   "h100-tp4": {"base": "h100-sxm", "parallel": {"tp": 4}}},
                          "stages": ["decode"]})
    context = model_context("llama-3.1-8b", tables, specs, [], "figures")
    matrix = context["matrices"][0]["operators"]
    assert [c["name"] for c in matrix["columns"]] == ["1 x H100 SXM5 80GB", "4 x H100 SXM5 80GB, TP 4"]
    rows = {r["op"]: r["times"] for r in matrix["rows"]}
    ops = tables["ops"].set_index(["gpu", "op"])
    for op in ("q_proj", "down_proj", "lm_head"):
        for i, gpu in enumerate(("h100-tp1", "h100-tp4")):
            assert rows[op][i]["text"] == units.seconds(ops.loc[(gpu, op), "t_s"] * ops.loc[(gpu, op), "count"])
    assert rows["attn_all_reduce"][0]["text"] == units.DASH and rows["attn_all_reduce"][1]["text"] != units.DASH
    assert not matrix["same_everywhere"]
    assert "4 x H100 SXM5 80GB, TP 4" in " ".join(context["summary"])


def test_report_code_names_no_figure_kind():
    """The report learns figure kinds, files and captions from the manifest only: no string of the report package
    is a kind of the figures registry (or holds one of the longer kinds), and no template reads a figure by kind."""
    import ast
    import re
    from pathlib import Path

    import roofline.report
    from roofline.figures import FIGURES

    found = []
    for path in Path(roofline.report.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text())
        # the package's own name in resources.files("roofline") is not a figure kind
        package_names = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                         and getattr(node.func, "attr", "") == "files" for arg in node.args}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in package_names:
                found += [(path.name, kind) for kind in FIGURES
                          if node.value == kind or ("_" in kind and re.search(rf"\b{kind}\b", node.value))]
    templates = Path(roofline.report.render.TEMPLATES)
    for path in templates.glob("*.j2"):
        found += [(path.name, kind) for kind in FIGURES if re.search(rf"\.{kind}\b", path.read_text())]
    assert not found, f"figure kinds named in the report: {found}"



def test_the_lever_sentence_keeps_the_part_of_a_label_every_gpu_shares():
    # "more devices" names each GPU's doubled deployment; the sentence spoke of every GPU under the first one's
    # ("32 devices (TP 16, PP 2) ... on every configured GPU") although the H200's doubled plan is 16 devices
    from roofline.report.text import lever_sentence

    latency = pd.DataFrame({
        "treatment": ["more_devices"] * 2 + ["overlap"] * 2, "gpu": ["a", "b", "a", "b"],
        "label": ["twice the tensor parallelism: 32 devices (TP 16, PP 2)",
                  "twice the tensor parallelism: 16 devices (TP 16)", "comm. overlap", "comm. overlap"],
        "speedup": [1.48, 1.28, 1.10, 1.31]})
    text = lever_sentence("prefill", latency, {"a": "GPU A", "b": "GPU B"})
    assert text.startswith("The largest single latency lever for prefill (by its median speed-up over the GPUs) is "
                           "twice the tensor parallelism: ")
    assert "devices" not in text and "on every configured GPU." in text
    one = lever_sentence("prefill", latency[latency["gpu"] == "a"], {"a": "GPU A"})
    assert "32 devices (TP 16, PP 2)" in one and "median" not in one


def test_the_served_table_says_which_configured_gpus_it_leaves_out_and_why():
    # the plan section searched 4 of 6 configured GPUs and the served table showed 4 rows without a word on the rest
    from roofline.report.served import coverage_note

    table = pd.DataFrame({"gpu": ["h100-sxm"]})
    table.attrs["search"] = {"names": [["h100-sxm", "H100"], ["h200-sxm", "H200"]]}
    configured = {"h100-sxm": "H100", "h200-sxm": "H200", "l40s": "L40S"}
    assert coverage_note([table], configured) == ("Not searched (the plan section's gpus): L40S. "
                                                  "Searched, no deployment that fits: H200.")
    assert coverage_note([table], {"h100-sxm": "H100"}) == ""
    table.attrs["search"] = {}
    assert coverage_note([table], configured) == ""  # a table without its search: nothing is claimed


def test_a_lever_across_scale_up_domains_wraps_inside_the_margin(tmp_path):
    """DeepSeek-V3 prefill on 8 H200s at TP 8: its best lever, 'double TP (16 devices, across domains) 1.26×', ran
    off the page on one line (the lever column does not wrap); a lever of two clauses may wrap, the others stay on
    a line."""
    tables, specs = grid({"models": {"deepseek-v3": {}}, "gpus": {"h200-sxm": {}}, "stages": ["prefill"],
                          "scenario": {"seq_len": 2048, "parallel": {"tp": 8, "ep": 8}}})
    context = model_context("deepseek-v3", tables, specs, [], "figures")
    html = render_html(context)
    assert '<td class="lever wraps">double TP (16 devices, across domains)' in html
    write_report(context, tmp_path / "deepseek.html", tmp_path / "deepseek.pdf")
    assert not words_past_the_margin(tmp_path / "deepseek.pdf")
