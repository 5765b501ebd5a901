"""What a security review of 2026-12-05 found: config text that reached plotly's pseudo-HTML, matplotlib's
mathtext or the wiki's Markdown structure as markup, JSON nested past Python's recursion, and publish settings that
passed the up-front check only to fail after the build."""
import pandas as pd
import pytest

from roofline.engine.errors import RooflineInputError
from roofline.engine.hardware import get_accelerator
from roofline.pipeline.config import check_publish
from roofline.report.wiki import escape


def test_a_line_break_in_a_name_stays_inside_its_line_of_markdown():
    # "L2\n\n# INJECTED" had put a heading of its own into Home.md, _Sidebar.md and the model page
    assert escape("L2\n\n# INJECTED\t[c]") == "L2 # INJECTED \\[c\\]"


def test_a_link_name_reaches_the_interactive_legend_as_text():
    # a gpus: entry's scaleup_link drew a live <a href> and fetched a url() from the legend of the HTML report
    from dataclasses import replace

    from roofline.figures.interactive import _roof

    link = '<a href="http://127.0.0.1:8765/c">N</a><span style="fill:url(http://127.0.0.1:8765/css)">S</span>'
    gpu = replace(get_accelerator("h100-sxm"), scaleup_link=link)
    traces = _roof(gpu, "fp16", (0.1, 1e4), "#333", "roofs", "roofs", False, [(link, 450e9)], label_links=True)
    named = [trace for trace in traces if "450" in trace["name"]]
    assert named and all("<a" not in trace["name"] and "<span" not in trace["hovertemplate"] for trace in named)
    assert "&lt;a href=" in named[0]["name"]


def test_dollar_signs_in_names_are_drawn_as_text_on_the_pareto_figure():
    # '$\frac{$' in a model or GPU name had stopped the figures job with matplotlib's mathtext parser
    from roofline.figures.plan import plan_figure

    rows = [{"gpu": "h200-sxm", "mode": "aggregated", "tokens_per_s_per_user_expected": user,
             "tokens_per_s_per_device_expected": device, "tokens_per_s_per_user": user * 2,
             "tokens_per_s_per_device": device * 2, "recommended": n == 0, "chosen": n == 0, "isl": 1024,
             "osl": 1024, "deployment": "1 x H200", "batch": 64, "weight_dtype": "fp8", "kv_dtype": "fp8",
             "tpot_expected_s": 0.02, "tpot_s": 0.01, "ttft_expected_s": 0.2, "ttft_s": 0.1, "bound": "memory"}
            for n, (user, device) in enumerate([(20.0, 3000.0), (60.0, 1500.0)])]
    fig = plan_figure(pd.DataFrame(rows), "L2 $\\frac{$", gpu_names={"h200-sxm": "H $\\frac{$"})
    fig.canvas.draw()  # mathtext is parsed when drawn


def test_json_nested_past_the_recursion_limit_is_refused_in_one_line(tmp_path):
    from roofline.pipeline.measurements import read_runs

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(RooflineInputError, match="nests JSON too deeply"):
        read_runs(deep, "deep.json")


@pytest.mark.parametrize("section, words", [
    ({"branch": "HEAD"}, "publish.branch: 'HEAD' is not allowed"),
    ({"branch": "refs/tags/x"}, "publish.branch: 'refs/tags/x' is not allowed"),
    ({"git": "/tmp/wiki.git\n--upload-pack=x"}, "publish.git: "),
])
def test_publish_settings_git_would_refuse_after_the_build_are_refused_before_it(section, words):
    with pytest.raises(RooflineInputError) as error:
        check_publish(section)
    assert str(error.value).startswith(words) and "\n" not in str(error.value).split("is not allowed")[1]
