"""Figures: files exist, axes contain every point, labels do not collide, ceilings come from the spec."""
import dataclasses
import json
import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from roofline.figures import (batch_sweep_figure, cross_gpu_figure, render_model_figures, roof_for,  # noqa: E402
                              roofline_figure, seq_sweep_figure, time_breakdown_figure)
from roofline.figures.charts import drawable  # noqa: E402
from roofline.figures.labels import compact_names, wrap  # noqa: E402
from roofline.figures.render import specs_objects  # noqa: E402
from roofline.figures.roofline import Series, draw_roofline, peak_label  # noqa: E402
from roofline.hardware import get_accelerator  # noqa: E402
from grids import grid  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402

HOSTILE = "Llama <script>alert(1)</script> & $x$ Co"


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
        for kind in ("svg", "png"):
            assert (out / entry[kind]).stat().st_size > 5000, entry[kind]
        svg = (out / entry["svg"]).read_text()
        assert "<text" in svg  # svg.fonttype none: text stays selectable text in the PDF
        assert "<script>" not in svg  # names are XML-escaped


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
    # llama-2-7b, 2048 tokens: 32 sequences fit in 48 GB
    note = next(t for t in bottom.texts if t.get_text().startswith("from batch 64"))
    assert note.get_text().endswith("exceed 48 GB")
    # the note sits inside the panel and clear of the dashed critical-batch line (batch 219 lies in the shading)
    renderer = fig.canvas.get_renderer()
    box, frame = note.get_window_extent(renderer), bottom.get_window_extent(renderer)
    crit_x = bottom.transData.transform((decode["critical_batch"].iloc[0], 1.0))[0]
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1
    assert not box.x0 - 2 <= crit_x <= box.x1 + 2, (box, crit_x)
    assert box.x0 >= bottom.transData.transform((math.sqrt(32 * 64), 1.0))[0] - 1  # inside the shaded region
    plt.close(fig)
    fig = seq_sweep_figure(sweeps, gpus, scenario, HOSTILE)
    for ax in fig.axes:
        assert_inside(ax, np.concatenate([np.column_stack([l.get_xdata(), l.get_ydata()]) for l in ax.get_lines()
                                          if len(l.get_xdata()) > 2]))
    plt.close(fig)
    fig = time_breakdown_figure(tables["ops"], gpus, HOSTILE, ["prefill", "decode"])
    for ax in fig.axes:
        tops = [p.get_y() + p.get_height() for p in ax.patches]
        assert max(tops) <= ax.get_ylim()[1]
    plt.close(fig)


def test_label_text_helpers():
    assert compact_names(["q_proj", "k_proj", "lm_head", "softmax"]) == "q/k_proj, lm_head, softmax"
    assert wrap("gate/up/down/q/k/v/o_proj", 14) == "gate/up/down/\nq/k/v/o_proj"


def test_integer_peaks_are_labelled_in_top_per_second():
    assert peak_label("fp8/int8", 1979e12) == "fp8 1979 TFLOP/s, int8 1979 TOP/s"
    assert peak_label("int8", 310e12) == "int8 310 TOP/s"
    assert peak_label("fp16/bf16", 989.4e12) == "fp16/bf16 989 TFLOP/s"
    fig, ax = plt.subplots(figsize=(7, 4.3))
    draw_roofline(ax, [roof_for(get_accelerator("h100-sxm"), "fp16")], [Series(np.array([1.0]), np.array([1e12]),
                                                                               "k", "o")])
    texts = [t.get_text() for t in ax.texts]
    assert "fp8 1979 TFLOP/s, int8 1979 TOP/s" in texts
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


def test_long_gpu_names_are_wrapped_inside_the_figure(data):
    tables, specs = data
    gpus, scenario = specs_objects(specs)
    gpus = {k: dataclasses.replace(g, name=f"{g.name} Extra Long Marketing Name Edition 2026") for k, g in gpus.items()}
    figures = [cross_gpu_figure(tables["ops"], gpus, scenario, "m", "decode")[0],
               seq_sweep_figure(tables["sweeps"], gpus, scenario, "m")]
    for fig in figures:
        boxes = text_boxes(fig)
        for gpu in gpus.values():
            entry = next(t for t, _ in boxes if t.startswith(gpu.name.split()[0]) and "Edition" in t)
            assert "\n" in entry
        for text, box in boxes:
            assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 - 1, text
        plt.close(fig)
