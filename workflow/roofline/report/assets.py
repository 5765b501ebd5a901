"""Files the HTML reports load from beside them: the plotly.js bundle of the interactive figures, copied from the
plotly package (which ships it), so that the reports work offline and fetch nothing from another site."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

#: where the bundle lies inside the plotly package
BUNDLE = ("package_data", "plotly.min.js")


def plotly_bundle() -> Path:
    """The plotly.min.js of the installed plotly package (found without importing plotly, which is slow)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the plotly package is not installed (pip install -e . installs it): the HTML "
                                "report's interactive figures need its plotly.js bundle")
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*BUNDLE)


def write_plotly_js(target: str | Path) -> Path:
    """Copy the bundle to `target` (reports/assets/plotly.min.js) through a temporary file: never half-written."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.part")
    shutil.copyfile(plotly_bundle(), temp)
    temp.replace(target)
    return target
