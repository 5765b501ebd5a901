"""Figures: files exist, axes contain every point, labels do not collide, ceilings come from the spec."""
import dataclasses
import json
import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

from grids import grid  # noqa: E402
from roofline.engine.hardware import get_accelerator  # noqa: E402
from roofline.figures import (  # noqa: E402  # noqa: E402
    FIGURES,
    MANIFEST,
    PLACES,
    batch_sweep_figure,
    cross_gpu_figure,
    render_model_figures,
    roof_for,
    roofline_figure,
    seq_sweep_figure,
    time_breakdown_figure,
)
from roofline.figures import breakdown as breakdown_module  # noqa: E402
from roofline.figures import render as render_module  # noqa: E402
from roofline.figures.labels import compact_names, wrap  # noqa: E402
from roofline.figures.layout import legend_name, plain, shorten  # noqa: E402
from roofline.figures.points import drawable  # noqa: E402
from roofline.figures.render import specs_objects  # noqa: E402
from roofline.figures.roofline import Series, draw_roofline, fmt_value, peak_label  # noqa: E402
from roofline.figures.style import gpu_styles  # noqa: E402
from roofline.report import (  # noqa: E402
    figure_list,
    units,  # noqa: E402
)
from roofline.report import io as report_io

HOSTILE = r"Llama <script>alert(1)</script> & $\alpha$ Co"


@pytest.fixture(scope="module")
def data():
    return grid({"models": {"llama-2-7b": {"name": HOSTILE}}, "gpus": {"rtx-a6000": {}, "h100-sxm": {}}})


@pytest.fixture(scope="module")
def rendered(data, tmp_path_factory):
    tables, specs = data
    out = tmp_path_factory.mktemp("figures")
    return out, render_model_figures("llama-2-7b", tables["ops"], tables["sweeps"], specs, out)


def all_points(ax):
    """Every plotted data point: scatter offsets and line vertices."""
    points = [np.asarray(c.get_offsets()) for c in ax.collections if len(c.get_offsets())]
    points += [np.column_stack([line.get_xdata(), line.get_ydata()]) for line in ax.get_lines()
               if len(line.get_xdata()) and line.get_marker() not in (None, "None", "")]
    return np.concatenate(points) if points else np.empty((0, 2))


def assert_inside(ax, points):
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    assert len(points)
    assert (points[:, 0] >= x0).all() and (points[:, 0] <= x1).all(), (ax.get_xlim(), points[:, 0].min())
    assert (points[:, 1] >= y0).all() and (points[:, 1] <= y1).all(), (ax.get_ylim(), points[:, 1].min())


def text_boxes(fig):
    """(text, display box) of every text that is drawn: figure and axes texts, titles, axis labels, legends and
    the tick labels of ticks inside the view."""
    fig.canvas.draw()  # lay out legends and titles as saving would
    renderer = fig.canvas.get_renderer()
    texts = list(fig.texts)
    for legend in fig.legends:
        texts += [*legend.get_texts(), legend.get_title()]
    for ax in fig.axes:
        texts += [*ax.texts, ax.title, ax._left_title, ax.xaxis.label, ax.yaxis.label]
        for axis, (low, high) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            texts += [tick.label1 for tick in axis.get_major_ticks() if low <= tick.get_loc() <= high]
    texts = [t for t in texts if t.get_visible() and t.get_text().strip()]
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts]


def test_every_figure_file_exists(rendered):
    out, manifest = rendered
    kinds = [entry["kind"] for entry in manifest]
    # 2 GPUs: a roofline and a batch sweep each; 2 stages: a cross-GPU roofline each; one breakdown, one seq sweep
    assert sorted(kinds) == sorted(["roofline"] * 2 + ["batch_sweep"] * 2 + ["cross_gpu"] * 2
                                   + ["time_breakdown", "seq_sweep"])
    assert json.loads((out / "figures.json").read_text()) == manifest
    for entry in manifest:
        # drawn once, saved as SVG, and as PNG only where a wiki shows it (the Figures section)
        assert ("png" in entry) == (entry["place"] == "figures")
        for kind in ("svg", "png"):
            if kind in entry:
                assert (out / entry[kind]).stat().st_size > 5000, entry[kind]
        svg = (out / entry["svg"]).read_text()
        assert "<text" in svg  # svg.fonttype none: text stays selectable text in the PDF
        assert "<script>" not in svg  # names are XML-escaped


def test_the_manifest_lists_the_registrys_figures(rendered):
    """Every kind the renderer writes is a kind of the FIGURES registry and every registered kind is drawn (this
    grid has every figure); each entry says where the report shows it, with the registry's rank and a caption, in
    the places and under the file name the report reads."""
    out, manifest = rendered
    assert {entry["kind"] for entry in manifest} == set(FIGURES) - {"pareto"}  # no deployment search configured
    for entry in manifest:
        figure = FIGURES[entry["kind"]]
        assert entry["place"] == figure.place and entry["rank"] == list(FIGURES).index(entry["kind"])
        assert entry["caption"] and entry["label"].startswith(figure.title)
    assert PLACES == figure_list.PLACES and {f.place for f in FIGURES.values()} <= set(PLACES)
    assert MANIFEST == report_io.MANIFEST
    # the caption of a per-GPU figure names its GPU; a per-stage figure's names its stage
    roofline = next(e for e in manifest if e["kind"] == "roofline" and e["gpu"] == "h100-sxm")
    assert f"on {get_accelerator('h100-sxm').name}:" in roofline["caption"]
    assert next(e for e in manifest if e["stage"] == "decode" and e["gpu"] is None)["caption"].startswith("Decode")
    # the index's link text names the GPU as the reports do (its key had been shown: "batch sweep · h100-sxm ·
    # decode"), and the stage only where the figure's title does not fix it
    sweep = next(e for e in manifest if e["kind"] == "batch_sweep" and e["gpu"] == "h100-sxm")
    assert sweep["label"] == f"Decode batch sweep · {get_accelerator('h100-sxm').name}"
    assert next(e for e in manifest if e["kind"] == "cross_gpu" and e["stage"] == "prefill")["label"] == (
        "Roofline on every GPU · prefill")


def test_roofline_axes_contain_every_point_and_ceiling(data):
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    ops = tables["ops"][tables["ops"]["gpu"] == "rtx-a6000"]
    fig, result = roofline_figure(ops, gpus["rtx-a6000"], scenario, HOSTILE)
    ax = fig.axes[0]
    points = all_points(ax)
    assert len(points) == len(drawable(ops)) == len(ops) - 4  # embedding, kv_cache_write x 2 stages have no FLOPs
    assert_inside(ax, points)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    a6000 = get_accelerator("rtx-a6000")
    for value in a6000.peak_flops_per_s.values():
        assert y0 < value < y1 and x0 < value / a6000.bandwidth_bytes_per_s < x1
    assert (x0, x1) == result.xlim and (y0, y1) == result.ylim
    plt.close(fig)


def test_roofline_labels_never_overlap_and_stay_in_the_figure(data):
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    for key in gpus:
        fig, result = roofline_figure(tables["ops"][tables["ops"]["gpu"] == key], gpus[key], scenario, HOSTILE)
        boxes = text_boxes(fig)
        frame = fig.bbox
        for text, box in boxes:
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, text
        for i, (a, box_a) in enumerate(boxes):
            for b, box_b in boxes[i + 1:]:
                assert not box_a.overlaps(box_b), (a, b)
        labels = [t.get_text() for t in result.labels]
        assert any("gate" in text for text in labels)  # the heaviest operators are labelled
        assert not result.skipped
        plt.close(fig)


def test_cross_gpu_figure_has_every_gpu_roof_and_point(data):
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    for stage in ("prefill", "decode"):
        fig, result = cross_gpu_figure(tables["ops"], gpus, scenario, HOSTILE, stage)
        ax = fig.axes[0]
        stage_ops = drawable(tables["ops"][tables["ops"]["stage"] == stage])
        assert len(all_points(ax)) == len(stage_ops)
        assert_inside(ax, all_points(ax))
        boxes = text_boxes(fig)
        for gpu in gpus.values():  # legend: colour = GPU, with its peak and bandwidth
            assert any(t.startswith(gpu.name + "\n") for t, _ in boxes), gpu.name
        for text, box in boxes:
            assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0, text
        for i, (a, box_a) in enumerate(boxes):
            for b, box_b in boxes[i + 1:]:
                assert not box_a.overlaps(box_b), (a, b)
        plt.close(fig)


def test_bandwidth_label_follows_the_on_screen_slope(data):
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    fig, _ = roofline_figure(tables["ops"][tables["ops"]["gpu"] == "h100-sxm"], gpus["h100-sxm"], scenario, "m")
    ax = fig.axes[0]
    label = next(t for t in ax.texts if t.get_text() == "3.35 TB/s")
    bw = gpus["h100-sxm"].bandwidth_bytes_per_s
    (ax0, ay0), (ax1, ay1) = ax.transData.transform([(1.0, bw), (10.0, 10 * bw)])
    assert label.get_rotation() == pytest.approx(math.degrees(math.atan2(ay1 - ay0, ax1 - ax0)), abs=0.5)
    assert not (40 < label.get_rotation() < 50) or ax.bbox.width / ax.bbox.height > 0  # not a hard-coded 45
    plt.close(fig)


def test_ceilings_come_from_the_spec():
    h100 = get_accelerator("h100-sxm")
    roof = roof_for(h100, "fp16")
    assert roof.peaks[0] == ("fp16/bf16", h100.peak("fp16"))  # the compute dtype first, equal peaks merged
    assert {value for _, value in roof.peaks} == set(h100.peak_flops_per_s.values())
    assert roof.ridge == pytest.approx(h100.ridge("fp16"))
    assert roof_for(h100, "fp8", other_dtypes=False).peaks == (("fp8/int8", h100.peak("fp8")),)


def test_limits_follow_the_data():
    a6000 = roof_for(get_accelerator("rtx-a6000"), "fp16")
    far = Series(np.array([1e-4, 1e5]), np.array([1e6, 1e14]), "k", "o")
    fig, ax = plt.subplots()
    result = draw_roofline(ax, [a6000], [far])
    assert result.xlim[0] < 1e-4 and result.xlim[1] > 1e5 and result.ylim[0] < 1e6
    plt.close(fig)


def test_sweep_and_breakdown_axes_contain_their_data(data):
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    sweeps = tables["sweeps"]
    fig = batch_sweep_figure(sweeps[sweeps["gpu"] == "rtx-a6000"], gpus["rtx-a6000"], HOSTILE)
    decode = sweeps[(sweeps["gpu"] == "rtx-a6000") & (sweeps["sweep"] == "batch") & (sweeps["stage"] == "decode")]
    top, bottom = fig.axes
    assert_inside(top, all_points(top))
    assert_inside(bottom, all_points(bottom))
    assert len(all_points(top)) == len(decode) == 10  # batch 1..512
    texts = " ".join(t for t, _ in text_boxes(fig))
    assert f"critical batch {decode['critical_batch'].iloc[0]:g}" in texts
    # llama-2-7b, 2048 tokens: 13.5 GB of weights + 1.07 GB of KV cache per sequence; 90% of 48 GiB (46.4 GB) holds
    # 30 sequences, so batch 16 fits and batch 32 does not
    note = next(t for t in bottom.texts if t.get_text().startswith("from batch 32"))
    assert note.get_text().endswith("48 GiB")
    # the note sits inside the panel and clear of the dashed critical-batch line (batch 219 lies in the shading)
    renderer = fig.canvas.get_renderer()
    box, frame = note.get_window_extent(renderer), bottom.get_window_extent(renderer)
    crit_x = bottom.transData.transform((decode["critical_batch"].iloc[0], 1.0))[0]
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1
    assert not box.x0 - 2 <= crit_x <= box.x1 + 2, (box, crit_x)
    assert box.x0 >= bottom.transData.transform((math.sqrt(16 * 32), 1.0))[0] - 1  # inside the shaded region
    plt.close(fig)
    fig = seq_sweep_figure(sweeps, gpus, scenario, HOSTILE)
    for ax in fig.axes:
        assert_inside(ax, np.concatenate([np.column_stack([ln.get_xdata(), ln.get_ydata()]) for ln in ax.get_lines()
                                          if len(ln.get_xdata()) > 2]))
    plt.close(fig)
    fig = time_breakdown_figure(tables["ops"], gpus, HOSTILE, ["prefill", "decode"])
    for ax in fig.axes:
        tops = [p.get_y() + p.get_height() for p in ax.patches]
        assert max(tops) <= ax.get_ylim()[1]
    plt.close(fig)


def test_attention_ridge_reads_the_dtype_the_engine_computes_attention_at(data):
    # fp8 activations and KV cache on an RTX A6000 (no fp8 peak): the engine computes attention at 16 bits (8-bit
    # activations are GEMM inputs only), so the figure's ridge is the 16-bit one; it asked for an fp8 peak and the
    # figures job failed after the tables were written
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    a6000 = {"rtx-a6000": gpus["rtx-a6000"]}
    assert "fp8" not in a6000["rtx-a6000"].peak_flops_per_s
    fig = seq_sweep_figure(tables["sweeps"], a6000, {**scenario, "act_dtype": "fp8", "kv_dtype": "fp8"}, HOSTILE)
    texts = " ".join(text.get_text() for text in fig.findobj(matplotlib.text.Text))  # the legend's included
    assert f"ridge {fmt_value(a6000['rtx-a6000'].ridge('fp16'))} FLOP/byte" in texts
    plt.close(fig)


def test_label_text_helpers():
    assert compact_names(["q_proj", "k_proj", "lm_head", "softmax"]) == "q/k_proj, lm_head, softmax"
    # an ending of several words is shared whole ('mlp_all/attn_all_reduce' read as two broken names)
    assert compact_names(["mlp_all_reduce", "attn_all_reduce", "mlp_add"]) == "mlp/attn_all_reduce, mlp_add"
    assert compact_names(["expert_gate_proj", "expert_up_proj"]) == "expert_gate/up_proj"
    assert compact_names(["softmax", "x_softmax", "logits_all_gather"]) == "softmax, x_softmax, logits_all_gather"
    assert wrap("gate/up/down/q/k/v/o_proj", 14) == "gate/up/down/\nq/k/v/o_proj"


def test_integer_peaks_are_labelled_in_top_per_second():
    assert peak_label("fp8/int8", 1979e12) == "fp8 1,980 TFLOP/s, int8 1,980 TOP/s"  # as the hardware table
    assert peak_label("int8", 310e12) == "int8 310 TOP/s"
    assert peak_label("fp16/bf16", 989.4e12) == "fp16/bf16 989 TFLOP/s"
    fig, ax = plt.subplots(figsize=(7, 4.3))
    draw_roofline(ax, [roof_for(get_accelerator("h100-sxm"), "fp16")], [Series(np.array([1.0]), np.array([1e12]),
                                                                               "k", "o")])
    texts = [t.get_text() for t in ax.texts]
    assert "fp8 1,980 TFLOP/s, int8 1,980 TOP/s" in texts
    assert not any("int8" in t and t.endswith("TFLOP/s") for t in texts)
    plt.close(fig)


@pytest.fixture(scope="module")
def crowded():
    """llama-3.1-8b with int4 weights at batch 4 x 32k tokens on the A6000: five ceilings (int4, int8, fp16, tf32,
    fp32) close together above the prefill GEMMs, whose labels must find room between them."""
    return grid({"models": {"llama-3.1-8b": {}}, "gpus": {"rtx-a6000": {}, "mi325x": {}},
                 "scenario": {"batch": 4, "seq_len": 32768, "weight_dtype": "int4"}})


def test_operator_labels_keep_off_every_ceiling(crowded):
    tables, specs = crowded
    gpus, scenario = specs_objects(specs)
    for key in gpus:
        fig, result = roofline_figure(tables["ops"][tables["ops"]["gpu"] == key], gpus[key], scenario, "m")
        ax = fig.axes[0]
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ceilings = [line for line in ax.get_lines() if len(set(line.get_ydata())) == 1]  # horizontal compute roofs
        assert len(ceilings) == len(set(gpus[key].peak_flops_per_s.values()))
        placed = [t for t in result.labels if t.get_bbox_patch() is not None and t.get_bbox_patch().get_boxstyle()
                  .__class__.__name__ == "Round"]  # operator labels (ceiling labels have square grounds)
        assert len(placed) >= 4
        for text in placed:
            box = text.get_bbox_patch().get_window_extent(renderer)
            for line in ceilings:
                (x0, y), (x1, _) = ax.transData.transform(line.get_xydata()[[0, -1]])
                assert not (box.y0 - 1 <= y <= box.y1 + 1 and box.x1 >= x0 and box.x0 <= x1), (
                    key, text.get_text(), line.get_ydata()[0] / 1e12)
        plt.close(fig)


LONG_NAME = ("NVIDIA H100 SXM5 80GB HBM3 Hopper Tensor Core GPU with NVLink 4.0, PCIe Gen5, Confidential Computing, "
             "Multi-Instance GPU and the Transformer Engine (fp8) - Engineering Sample Rev B")


def assert_all_text_inside(fig):
    """Every drawn text ends inside the figure, at every edge (nothing clipped, no legend entry hidden)."""
    frame = fig.bbox
    for text, box in text_boxes(fig):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 - 1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, text


def test_a_batch_sweep_with_wide_tick_labels_keeps_its_y_labels_inside(data):
    # 5- and 6-digit tokens/s ('20000', '200000') pushed the rotated 'throughput, bound [tokens/s]' past the left
    # edge of a figure with a fixed left margin; the margin now widens to fit, and the two labels stay aligned
    tables, specs = data
    gpus, _ = specs_objects(specs)
    sweeps = tables["sweeps"][tables["sweeps"]["gpu"] == "h100-sxm"].copy()
    sweeps["tokens_per_s"] = sweeps["tokens_per_s"] * 1000
    fig = batch_sweep_figure(sweeps, gpus["h100-sxm"], "llama-2-7b")
    assert_all_text_inside(fig)
    top, bottom = fig.axes
    assert top.get_position().x0 == bottom.get_position().x0 > 0.1  # widened from 0.1, both panels alike
    renderer = fig.canvas.get_renderer()
    assert top.yaxis.label.get_window_extent(renderer).x0 == pytest.approx(
        bottom.yaxis.label.get_window_extent(renderer).x0, abs=0.5)
    plt.close(fig)


def test_long_names_are_cut_with_an_ellipsis_in_titles_and_legends(data):
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    assert len(LONG_NAME) > 170
    gpus = {**gpus, "h100-sxm": dataclasses.replace(gpus["h100-sxm"], name=LONG_NAME)}
    model = "A Very Long Model Display Name For An Internal Fine-Tune Of Llama-2-7b With Extra Words"
    figures = [cross_gpu_figure(tables["ops"], gpus, scenario, model, "decode")[0],
               seq_sweep_figure(tables["sweeps"], gpus, scenario, model),
               roofline_figure(tables["ops"][tables["ops"]["gpu"] == "h100-sxm"], gpus["h100-sxm"], scenario,
                               model)[0],
               batch_sweep_figure(tables["sweeps"][tables["sweeps"]["gpu"] == "h100-sxm"], gpus["h100-sxm"], model),
               time_breakdown_figure(tables["ops"], gpus, model, ["prefill", "decode"])]
    for fig in figures[:-1]:  # (the breakdown names GPUs by key)
        assert_all_text_inside(fig)
        texts = [t for t, _ in text_boxes(fig)]
        named = [t for t in texts if "NVIDIA H100 SXM5" in t]
        assert named and all("…" in t and len(t) < 140 for t in named), named  # cut, not 180 characters
        title = next(t for t in texts if t.startswith("A Very Long"))
        assert "…" in title  # every title holding the long model name is cut to fit the width
    assert_all_text_inside(figures[-1])
    legend = [t for t, _ in text_boxes(figures[0]) if t.startswith("NVIDIA")][0].split("\n")
    assert len(legend) == 3 and legend[1].endswith("…") and legend[2] == "989 TFLOP/s, 3.35 TB/s"  # 2 lines + spec
    for fig in figures:
        plt.close(fig)


def test_legend_helpers_cut_and_wrap():
    assert shorten("RTX A6000", 20) == "RTX A6000"
    assert shorten("NVIDIA H100 SXM5 80GB HBM3 Hopper", 20) == "NVIDIA H100 SXM5…"
    assert shorten("x" * 50, 10) == "x" * 9 + "…"
    assert legend_name("Tesla V100 SXM2 32GB", 20) == "Tesla V100 SXM2 32GB"
    lines = legend_name(LONG_NAME, 20).split("\n")
    assert len(lines) == 2 and lines[0] == "NVIDIA H100 SXM5" and lines[1].endswith("…") and len(lines[1]) <= 20
    assert legend_name("A" * 45, 20).split("\n") == ["A" * 20, "A" * 19 + "…"]  # no space: split, then cut


@pytest.fixture(scope="module")
def many_gpus():
    """22 synthetic GPUs (more than the 12 colours of the palette) with gpt2 at 512 tokens: small and fast."""
    gpus = {f"g{i:02d}": {"name": f"Accelerator no. {i:02d}", "memory_gb": 80, "bandwidth_gbps": 500 + 150 * i,
                          "peak_tflops": {"fp16": 100 + 40 * i}} for i in range(22)}
    return grid({"models": {"gpt2": {}}, "gpus": gpus, "scenario": {"seq_len": 512}})


def test_a_gpu_the_stage_does_not_fit_is_marked_in_the_cross_gpu_legend(data):
    # the tables and the breakdown mark a misfit with a cross; the cross-GPU roofline's legend had not
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    fig, _ = cross_gpu_figure(tables["ops"], gpus, scenario, "llama-2-7b", "decode", misfits=frozenset({"rtx-a6000"}))
    assert_all_text_inside(fig)
    entries = [t for t, _ in text_boxes(fig) if t.startswith(tuple(g.name for g in gpus.values()))]
    marked = [t for t in entries if t.endswith("✗ does not fit")]
    assert len(marked) == 1 and marked[0].startswith(gpus["rtx-a6000"].name), entries
    plt.close(fig)


def test_the_interactive_cross_gpu_legend_marks_a_misfit_too(data):
    from roofline.figures.inputs import ModelFigures
    from roofline.figures.interactive import cross_gpu_spec

    tables, specs = data
    figures = ModelFigures.read("llama-2-7b", tables["ops"], tables["sweeps"], specs,
                                misfits=frozenset({("rtx-a6000", "decode")}))
    names = [t["name"] for t in cross_gpu_spec(figures, "decode")["data"] if t.get("showlegend")]
    marked = [n for n in names if n.endswith("(✗ does not fit)")]
    assert len(marked) == 1 and "A6000" in marked[0], names
    prefill = [t["name"] for t in cross_gpu_spec(figures, "prefill")["data"] if t.get("showlegend")]
    assert not any("does not fit" in n for n in prefill)  # the mark is the stage's


def test_the_interactive_roofline_legend_names_the_stages_and_keys_the_classes(data):
    # its entries had read "prefill · norm" and "decode · norm" (the stage's first class) though each toggles every
    # class of its stage, and the other classes' markers had no key
    from roofline.figures.inputs import ModelFigures
    from roofline.figures.interactive import SYMBOLS, roofline_spec

    tables, specs = data
    figures = ModelFigures.read("llama-2-7b", tables["ops"], tables["sweeps"], specs)
    traces = roofline_spec(figures, "h100-sxm")["data"]
    shown = [t["name"] for t in traces if t.get("showlegend", True) and t.get("legendgroup") in ("prefill", "decode")]
    assert shown == ["prefill", "decode"]
    key = {t["name"]: t["marker"]["symbol"] for t in traces if t.get("legendgroup") == "classes"}
    assert key and all(SYMBOLS[name] == symbol for name, symbol in key.items()) and "gemm" in key


def test_many_gpus_every_legend_entry_is_shown_and_told_apart(many_gpus):
    tables, specs = many_gpus
    gpus, scenario = specs_objects(specs)
    fig, _ = cross_gpu_figure(tables["ops"], gpus, scenario, "gpt2", "decode")
    assert_all_text_inside(fig)  # right and bottom edges: the reviewer saw 13 of 22 GPUs and no class legend
    texts = [t for t, _ in text_boxes(fig)]
    for gpu in gpus.values():
        assert any(t.startswith(gpu.name) for t in texts), gpu.name
    assert "Operator class" in texts and "gemm" in texts
    legend_boxes = [legend.get_window_extent(fig.canvas.get_renderer()) for legend in fig.legends]
    assert all(b.y0 >= fig.bbox.y0 and b.x1 <= fig.bbox.x1 for b in legend_boxes)
    ax = fig.axes[0]
    assert ax.get_position().y0 * fig.get_size_inches()[1] > 1.0  # the GPU legend sits below the axes
    # GPU 1 and GPU 13 share a colour: their roofs differ in line style, their points in fill
    roofs = [line for line in ax.get_lines() if len(set(line.get_ydata())) == 1]  # horizontal compute roofs
    by_colour = {}
    for line in roofs:
        by_colour.setdefault(line.get_color(), set()).add(str(line.get_linestyle()))
    assert any(len(styles) > 1 for styles in by_colour.values())
    faces = {tuple(np.round(c.get_facecolor()[0], 3)) for c in ax.collections if len(c.get_offsets())}
    assert (1.0, 1.0, 1.0, 1.0) in faces  # hollow points of the second round
    plt.close(fig)
    fig = seq_sweep_figure(tables["sweeps"], gpus, scenario, "gpt2")
    assert_all_text_inside(fig)
    texts = [t for t, _ in text_boxes(fig)]
    for gpu in gpus.values():
        assert gpu.name in texts
    assert "prefill" in texts and "decode" in texts
    markers = {line.get_marker() for line in fig.axes[1].get_lines()}
    assert {"None", "o"} <= {str(m) for m in markers}  # the second round of colours carries a marker
    plt.close(fig)
    fig = time_breakdown_figure(tables["ops"], gpus, "gpt2", ["prefill", "decode"])
    assert_all_text_inside(fig)
    boxes = text_boxes(fig)
    for i, (a, box_a) in enumerate(boxes):  # 22 bars a panel: names and totals stand vertical, none overlaps
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), (a, b)
    plt.close(fig)


def test_gpu_styles_repeat_colours_only_with_another_line_style():
    styles = gpu_styles([f"g{i}" for i in range(30)])
    seen = {}
    for style in styles.values():
        key = (style.color, str(style.linestyle), style.marker, style.filled)
        assert key not in seen
        seen[key] = style
    assert styles["g0"].color == styles["g12"].color and styles["g0"].linestyle != styles["g12"].linestyle


def test_extreme_specs_draw_without_crashing():
    """Two valid but extreme GPUs (0.001 GB/s, 0.05 TFLOP/s: ridge 5e4 FLOP/byte, the widest a config may give, at
    the right edge; 1e15 had crashed the figures job on an empty list of ridge-label boxes) draw; their ridge values
    are written short."""
    extreme = {"name": "X", "memory_gb": 80, "bandwidth_gbps": 0.001, "peak_tflops": {"fp16": 0.05}}
    tables, specs = grid({"models": {"gpt2": {}}, "gpus": {"x1": extreme, "x2": {**extreme, "name": "Y"}},
                          "scenario": {"seq_len": 512}})
    gpus, scenario = specs_objects(specs)
    fig, result = cross_gpu_figure(tables["ops"], gpus, scenario, "gpt2", "decode")
    assert_all_text_inside(fig)
    texts = [t for t, _ in text_boxes(fig)]
    assert "50,000" in texts  # the ridge
    assert_inside(fig.axes[0], all_points(fig.axes[0]))
    plt.close(fig)


def test_extreme_specs_whole_model_job(tmp_path):
    extreme = {"name": "X", "memory_gb": 80, "bandwidth_gbps": 0.001, "peak_tflops": {"fp16": 0.05}}
    tables, specs = grid({"models": {"gpt2": {}}, "gpus": {"x1": extreme, "x2": {**extreme, "name": "Y"}},
                          "scenario": {"seq_len": 512}})
    manifest = render_model_figures("gpt2", tables["ops"], tables["sweeps"], specs, tmp_path / "gpt2")
    assert len(manifest) == 2 * 2 + 2 + 2  # roofline and batch sweep per GPU, 2 cross-GPU, breakdown, seq sweep


def test_ridge_caption_moves_off_the_left_edge():
    """A ridge at the left edge of the axes (a device with tiny peak and huge bandwidth): the caption would be
    cut at the figure's left edge if it stayed left of the ridge values; it goes where it fits."""
    slow = roof_for(dataclasses.replace(get_accelerator("h100-sxm"), peak_flops_per_s={"fp16": 2e12},
                                        bandwidth_bytes_per_s=200e12), "fp16")
    h100 = roof_for(get_accelerator("h100-sxm"), "fp16", color="#D55E00")
    points = Series(np.array([50.0, 200.0, 1000.0]), np.array([2e12, 2e12, 2e12]), "k", "o")
    fig, ax = plt.subplots(figsize=(7, 4.3))
    fig.subplots_adjust(left=0.085, right=0.775, bottom=0.105, top=0.9)
    draw_roofline(ax, [slow, h100], [points])
    captions = [t for t in ax.texts if "ridges [FLOP/byte]" in t.get_text()]
    assert len(captions) == 1
    renderer = fig.canvas.get_renderer()
    box, frame = captions[0].get_window_extent(renderer), ax.get_window_extent(renderer)
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
    plt.close(fig)


def test_names_with_dollars_and_backslashes_are_drawn_literally(rendered):
    out, manifest = rendered
    svg = (out / "roofline_rtx-a6000.svg").read_text()
    assert r"&amp; $\alpha$ Co" in svg  # one backslash, dollars shown, no mathtext
    assert plain(r"$\alpha$") == r"\$\alpha\$"


def test_legends_print_numbers_as_the_report_tables():
    tables, specs = grid({"models": {"llama-2-7b": {}}, "gpus": {"mi300x": {}, "rtx-a6000": {}}, "stages": ["decode"]})
    gpus, scenario = specs_objects(specs)
    fig, _ = cross_gpu_figure(tables["ops"], gpus, scenario, "m", "decode")
    texts = [t for t, _ in text_boxes(fig)]
    for gpu in gpus.values():
        spec = f"{units.peak(gpu.peak('fp16'), 'fp16')}, {units.bandwidth(gpu.bandwidth_bytes_per_s)}"
        assert any(t.endswith(spec) for t in texts), spec
    assert any(t.endswith("1,310 TFLOP/s, 5.30 TB/s") for t in texts)  # 1307.4 TFLOP/s, as the hardware table
    plt.close(fig)


def test_interrupted_figure_job_leaves_the_previous_folder(tmp_path, monkeypatch):
    tables, specs = grid({"models": {"gpt2": {}}, "gpus": {"t4": {}}, "stages": ["decode"],
                          "scenario": {"seq_len": 512}})
    target = tmp_path / "figures" / "gpt2"
    target.mkdir(parents=True)
    (target / "figures.json").write_text("[]\n")
    (target / "old.svg").write_text("<svg/>")
    partial = []

    def interrupted(*args, **kwargs):  # Ctrl-C after the roofline, sweep and cross-GPU figures were written
        partial.extend(p.name for p in tmp_path.glob("figures/.gpt2.*/*"))
        raise KeyboardInterrupt

    monkeypatch.setattr(breakdown_module, "time_breakdown_figure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        render_model_figures("gpt2", tables["ops"], tables["sweeps"], specs, target)
    assert "roofline_t4.svg" in partial and "figures.json" not in partial  # half-written, next to the target
    assert sorted(p.name for p in target.iterdir()) == ["figures.json", "old.svg"]  # untouched
    assert sorted(p.name for p in target.parent.iterdir()) == ["gpt2"]  # no temporary folder left
    monkeypatch.undo()
    (target.parent / ".gpt2.k1ll3d_9.part").mkdir()  # what a SIGKILL (no clean-up) leaves behind
    (target.parent / ".gpt2.x.k1ll3d_9.part").mkdir()  # the live temporary folder of model 'gpt2.x': not ours
    manifest = render_model_figures("gpt2", tables["ops"], tables["sweeps"], specs, target)
    names = {p.name for p in target.iterdir()}
    assert "old.svg" not in names and "figures.json" in names  # replaced as a whole
    assert names == {"figures.json"} | {e[k] for e in manifest for k in ("svg", "png", "interactive") if k in e}
    assert sorted(p.name for p in target.parent.iterdir()) == [".gpt2.x.k1ll3d_9.part", "gpt2"]


def test_time_breakdown_marks_the_setups_that_do_not_fit():
    """llama-3.1-70b at fp16 (~141 GB of weights) does not fit the A6000 (48 GB) but fits the MI300X (192 GB): its
    A6000 bars are faded and cross-hatched, their totals start with ✗, the legend says what that means; the MI300X
    bars stay plain."""
    tables, specs = grid({"models": {"llama-3.1-70b": {}}, "gpus": {"rtx-a6000": {}, "mi300x": {}}})
    gpus, _ = specs_objects(specs)
    misfits = render_module.misfit_pairs(tables["totals"], "llama-3.1-70b")
    assert misfits == {("rtx-a6000", "prefill"), ("rtx-a6000", "decode")}
    fig = time_breakdown_figure(tables["ops"], gpus, "llama-3.1-70b", ["prefill", "decode"], misfits)
    ops = tables["ops"].assign(time=tables["ops"]["t_s"] * tables["ops"]["count"])
    for ax, stage in zip(fig.axes, ["prefill", "decode"]):
        labels = [t.get_text() for t in ax.texts]
        a6000, mi300x = labels  # config order
        assert a6000.startswith("✗\n") and not mi300x.startswith("✗")
        scale = 1e3 if ops[(ops["stage"] == stage)].groupby("gpu")["time"].sum().max() < 1 else 1.0
        assert a6000 == "✗\n" + fmt_value(ops[(ops["stage"] == stage) & (ops["gpu"] == "rtx-a6000")]["time"].sum()
                                          * scale)
        assert any(p.get_hatch() == "xxxx" for p in ax.patches)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "✗ does not fit" in legend
    plt.close(fig)
    plain_fig = time_breakdown_figure(tables["ops"], gpus, "llama-3.1-70b", ["prefill", "decode"])
    assert "✗ does not fit" not in [t.get_text() for t in plain_fig.legends[0].get_texts()]
    plt.close(plain_fig)


def test_the_overlay_reads_the_same_kernels_as_the_checked_reader():
    """figures.measured.overlay_rows (pandas' C parser, for speed) draws exactly the rows the checked reader keeps."""
    from roofline.engine.hardware import get_accelerator
    from roofline.estimate.calibration import measured_ceilings, read_table, table_path
    from roofline.figures.measured import overlay_rows

    path = str(table_path(get_accelerator("h100-sxm")))
    fast, checked = overlay_rows(path), read_table(path)

    def key(row):
        return row["op_class"], row["op"], row["dtype"], row["flops"], row["bytes"], row["measured_s"]

    assert len(fast) == len(checked) > 1000 and sorted(map(key, fast)) == sorted(map(key, checked))
    assert measured_ceilings(fast) == measured_ceilings(checked)


def test_the_pareto_axes_write_every_tick_in_full():
    # plotly's "D2" ticks wrote 20 and 50 as "2" and "5": an axis that read "2, 5, 10^2"
    from roofline.figures.interactive import _log_ticks

    ticks = _log_ticks([15.0, 310.0, float("nan")])
    assert ticks["tickvals"] == [10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
    assert ticks["ticktext"] == ["10", "20", "50", "100", "200", "500"]
    # an axis reaching 10^5 or beyond writes every tick as a power of ten: it read "1000, 10000, 10⁵"
    assert _log_ticks([1500.0, 4.2e6])["ticktext"][:4] == ["10³", "2×10³", "5×10³", "10⁴"] and _log_ticks([]) == {}


def test_a_static_log_axis_keeps_one_tick_style():
    import matplotlib.pyplot as plt

    from roofline.figures.roofs import LogTicks

    fig, ax = plt.subplots()
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(LogTicks(1e12))
    # 10^5 TFLOP/s in view: every tick a power of ten; all below it: written out
    for limits, expected in (((1e14, 1e17), ["10²", "10³", "10⁴", "10⁵"]),
                             ((1e12, 1e16), ["1", "10", "100", "1000", "10000"])):
        ax.set_ylim(*limits)
        fig.canvas.draw()
        shown = [(loc, label) for loc, label in zip(ax.yaxis.get_majorticklocs(), ax.get_yticklabels())
                 if limits[0] <= loc <= limits[1]]
        assert [label.get_text() for _, label in shown] == expected
    plt.close(fig)


def test_links_a_hair_apart_share_one_named_dash_dot_roof():
    # NVLink 4 (450 GB/s, H100 and H200) and the MI300X's xGMI (448 GB/s) drew two lines a hair apart: room for one
    # label, the other went unnamed
    from types import SimpleNamespace

    import matplotlib.pyplot as plt

    from roofline.figures.ceilings import draw_links

    fig, ax = plt.subplots()
    plot = SimpleNamespace(ax=ax, xlim=(0.1, 1e4), link_lines=[], weak=[])
    roofs = [SimpleNamespace(links=[("NVLink 4", 450e9)], main_peak=989e12),
             SimpleNamespace(links=[("NVLink 4", 450e9), ("scale-out", 25e9)], main_peak=989e12),
             SimpleNamespace(links=[("Infinity Fabric (xGMI)", 448e9)], main_peak=1307e12)]
    draw_links(plot, roofs)
    names = [entry[1] for entry in plot.link_lines]
    assert names == ["NVLink 4 / xGMI 448-450 GB/s", "scale-out 25.0 GB/s"]
    assert len(ax.lines) == 2 and ax.lines[0].get_xdata()[-1] == pytest.approx(1307e12 / 450e9)
    plt.close(fig)


def test_a_link_roof_keeps_its_name_where_every_place_touches_a_label():
    # DeepSeek-V3's cross-GPU decode roofline drew the "scale-out 50.0 GB/s" roof unnamed: each place along it
    # touched a label placed before, and such places were refused outright; now the least crowded one is taken
    from matplotlib.transforms import Bbox

    from roofline.figures import ceilings
    from roofline.figures.roofs import Roof

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(0.1, 1e4)
    ax.set_ylim(1e9, 1e16)
    plot = ceilings.Ceilings(ax, (0.1, 1e4), (1e9, 1e16), multi=True)
    roof = Roof(name="H100", bandwidth=3.35e12, peaks=(("fp16", 989e12),), links=(("scale-out", 50e9),))
    ceilings.draw_roofs(plot, [roof], shade=False, show_ridges=False)
    ceilings.draw_links(plot, [roof])
    plot.measure([], lambda *args: [])
    plot.taken.append(Bbox(ax.get_window_extent(plot.renderer).get_points()))  # a label over the whole frame
    ceilings.label_links(plot)
    assert [text.get_text() for text in plot.texts] == ["scale-out 50.0 GB/s"]
    plt.close(fig)


def test_coinciding_attention_shares_stay_visible(data):
    # Llama-3.1-8B on an H100 and an MI300X: both devices' attention shares of the stage time are the same curve
    # (their bounds share the compute-to-memory balance), and at equal widths the MI300X's line hid the H100's
    # entirely; the first GPU's is now the widest, underneath, each later one narrower
    from roofline.figures.style import under_width

    def _under_width(order, count):
        return under_width(order, count, 1.0, 1.8)

    assert [_under_width(i, 3) for i in range(3)] == [2.8, 1.9, 1.0] and _under_width(0, 1) == 1.0
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    fig = seq_sweep_figure(tables["sweeps"], gpus, scenario, "model")
    right = fig.axes[1]
    widths = [line.get_linewidth() for line in right.get_lines() if len(line.get_xdata()) > 2]
    stages = len(widths) // len(gpus)
    assert len(gpus) > 1 and widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
    assert widths[::stages] == [_under_width(i, len(gpus)) for i in range(len(gpus))]
    plt.close(fig)


def test_the_interactive_roofline_names_its_link_roofs():
    # DeepSeek-V3 on 16 H100s: the static roofline labels "NVLink 4 450 GB/s" and "scale-out 50.0 GB/s" on the
    # plot; the interactive one drew both dash-dot roofs with no name (hover only)
    from roofline.engine.hardware import get_accelerator
    from roofline.figures.interactive import _roof

    links = (("NVLink 4", 450e9), ("scale-out", 50e9))
    gpu = get_accelerator("h100-sxm")
    one = _roof(gpu, "fp16", (0.1, 1e4), "#000", "H100 roofs", "roofs", True, links, label_links=True)
    named = [t["name"] for t in one if t.get("showlegend")]
    assert named == ["H100 roofs", "NVLink 4 450 GB/s", "scale-out 50.0 GB/s"]
    # beside other GPUs' roofs (the cross-GPU figure) the links stay out of the legend, which names GPUs
    many = _roof(gpu, "fp16", (0.1, 1e4), "#000", "H100", "h100", False, links)
    assert [t["name"] for t in many if t.get("showlegend")] == ["H100"]


def test_a_leader_does_not_strike_through_a_label():
    # Mixtral prefill on two deployments: the all-reduce's leader ran through the "NVLink 4 450 GB/s" roof label
    from matplotlib.transforms import Bbox

    from roofline.figures.labels import DISTANCES, LabelRequest, _segment_hits, place_labels

    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    renderer = fig.canvas.get_renderer()
    x, y = ax.transData.transform((5, 5))
    near = DISTANCES[0] * fig.dpi / 72 + 12  # the nearest ring, label and all, is taken
    blocked = Bbox.from_extents(x - near, y - near, x + near, y + near)
    # labels already on the plot east and west of the point, across where a leader would run
    east = Bbox.from_extents(x + near + 4, y - 30, x + near + 60, y + 30)
    west = Bbox.from_extents(x - near - 60, y - 30, x - near - 4, y + 30)
    placed, skipped = place_labels(ax, [LabelRequest(5, 5, "attn/mlp_all_reduce")], renderer,
                                   obstacles=[blocked, east, west], texts=[east, west])
    assert placed and not skipped
    box = placed[0].get_window_extent(renderer)
    corner = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
    assert not any(_segment_hits((x, y), corner, other) for other in (east, west))
    plt.close(fig)



def test_the_interactive_cross_gpu_roofline_names_each_link_once():
    # Llama-3.1-70B on four deployments: the dash-dot link roofs had no name (hover only); two deployments on one
    # link draw one line, named once
    from roofline.figures.interactive import _name_links_once

    traces = [{"name": "H100", "line": {"dash": None}, "showlegend": True},
              {"name": "NVLink 4 450 GB/s", "line": {"dash": "dashdot"}, "showlegend": False},
              {"name": "NVLink 4 450 GB/s", "line": {"dash": "dashdot"}, "showlegend": False},
              {"name": "PCIe 4.0 x16 32.0 GB/s", "line": {"dash": "dashdot"}, "showlegend": False}]
    _name_links_once(traces)
    assert [t["showlegend"] for t in traces] == [True, True, False, True]
    assert traces[1]["legendgroup"] == traces[2]["legendgroup"] == "link NVLink 4 450 GB/s"


def test_a_compute_roof_two_devices_share_shows_both(data):
    # H100 and H200 share the 989 TFLOP/s roof: the H200's, drawn last at the same width, hid the H100's; the first
    # device's roof is now the widest, under the others
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    fig = cross_gpu_figure(tables["ops"], gpus, scenario, "model", "decode")[0]
    styles = gpu_styles(gpus)
    widths = []
    for key in gpus:
        mine = [line.get_linewidth() for line in fig.axes[0].get_lines()
                if line.get_color() == styles[key].color and line.get_linestyle() == "-"]
        widths.append(max(mine))
    assert len(gpus) > 1 and widths == sorted(widths, reverse=True) and widths[0] > widths[-1] == 1.1
    plt.close(fig)


def test_a_label_is_not_placed_across_another_labels_leader():
    # Mixtral prefill: "expert_act, +2" was placed over the leader of "attn/mlp_all_reduce, +1", placed before it
    from roofline.figures.labels import BoxArray, LabelRequest, _best_place, _Lines, _segment_hits

    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    renderer = fig.canvas.get_renderer()
    request, lines = LabelRequest(5, 5, "expert_act, +2"), _Lines([], [], [])
    free = _best_place(ax, request, renderer, BoxArray(), lines, 6.5)
    box = free[2]
    free[1].remove()
    leader = ((box.x0 - 20, (box.y0 + box.y1) / 2), (box.x1 + 20, (box.y0 + box.y1) / 2))  # across its best place
    assert _segment_hits(*leader, box)
    moved = _best_place(ax, request, renderer, BoxArray(), lines, 6.5, leaders=[leader])
    assert not _segment_hits(*leader, moved[2])
    plt.close(fig)


def test_the_interactive_legends_cut_long_device_names():
    # 66-character custom names had widened the cross-GPU legend until the plot kept a third of a 1280 px window
    from roofline.figures.inputs import ModelFigures
    from roofline.figures.interactive import LEGEND_NAME, cross_gpu_spec

    name = "Globex Neural Processing Unit NPU-9000 Extreme Edition 96 GB LPDDR5X"
    tables, specs = grid({"models": {"gpt2": {}}, "gpus": {"x1": {"name": name, "memory_gb": 96,
                                                                  "bandwidth_gbps": 900, "peak_tflops": {"fp16": 300}},
                                                           "h100-sxm": {}}, "scenario": {"seq_len": 512}})
    figures = ModelFigures.read("gpt2", tables["ops"], tables["sweeps"], specs)
    traces = cross_gpu_spec(figures, "decode")["data"]
    shown = [t["name"] for t in traces if t.get("showlegend")]
    assert all(len(entry) <= LEGEND_NAME for entry in shown), shown
    assert any(entry.startswith("1 x Globex") and entry.endswith("…") for entry in shown), shown
    assert any(name in text for t in traces for text in t.get("text", []) or []), "the hover keeps the name whole"
