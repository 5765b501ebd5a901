"""Issue 13, item 2: user text containing "nan" (model, GPU and source names) must not trip the report's NaN guard,
which is there for numbers; a formatted NaN next to such a name is still caught."""
import pytest

from grids import grid
from roofline.report import check_context, index_context, model_context, render_html, summary_context
from roofline.report.guard import user_text


@pytest.fixture(scope="module")
def nan_named():
    return grid({"models": {"llama-2-7b": {"name": "NaNoLlama", "source": "nan nan NaN"}},
                 "gpus": {"h100-sxm": {"name": "H100 NaN edition", "source": "datasheet NaN/nan"}},
                 "stages": ["decode"]})


def test_names_containing_nan_build_every_page(nan_named):
    tables, specs = nan_named
    summary = summary_context(tables, specs)
    index = index_context(specs, {})
    model = model_context("llama-2-7b", tables, specs, [], "figures/llama-2-7b")
    html = render_html(summary) + render_html(index) + render_html(model)
    assert "NaNoLlama" in html and "H100 NaN edition" in html


def test_a_formatted_nan_is_still_refused_beside_user_text(nan_named):
    _, specs = nan_named
    user = user_text(specs)
    check_context({"title": "NaNoLlama on H100 NaN edition"}, user=user)
    with pytest.raises(ValueError, match="NaN"):
        check_context({"cell": "NaNoLlama: nan ms"}, user=user)
    with pytest.raises(ValueError, match="NaN"):
        check_context({"cell": "H100 NaN edition NaN%"}, user=user)
