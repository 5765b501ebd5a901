"""Render a context to HTML (Jinja2, autoescaped, strict) and the same HTML to PDF (WeasyPrint).

The PDF renderer resolves relative URLs against the report folder and fetches through `ReportFetcher`, which
serves only files inside that folder (and data: URLs): no network, no file elsewhere on disk, no redirects.
"""
from __future__ import annotations

import logging
import os
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

import jinja2

from . import units

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
PAGES = {"model": "model.html.j2", "summary": "summary.html.j2", "index": "index.html.j2"}


def environment(templates: str | Path = TEMPLATES) -> jinja2.Environment:
    """Autoescape everything (names from config.yaml are untrusted), fail on any undefined name."""
    if not Path(templates).is_dir():
        raise FileNotFoundError(f"report templates not found at {templates}: the report reads the templates/ folder "
                                "of a source checkout (pip install -e .), or pass templates=<folder>")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["plan"] = units.unbroken_plan  # a deployment's "TP 4" stays whole where a column is narrow
    return env


def render_html(context: dict, templates: str | Path = TEMPLATES, for_print: bool = False) -> str:
    """The page of `context`; `for_print` leaves out what the PDF does not show (the HTML's collapsed details),
    so that WeasyPrint does not style and lay out a hidden half of the page."""
    return environment(templates).get_template(PAGES[context["page"]]).render(**context, for_print=for_print)


def _fetcher_class():
    from weasyprint.urls import URLFetcher

    class ReportFetcher(URLFetcher):
        """Serves file: URLs inside `root` and data: URLs; refuses everything else."""

        def __init__(self, root: str | Path, **kwargs):
            super().__init__(allowed_protocols=("file", "data"), allow_redirects=False, fail_on_errors=True,
                             **kwargs)
            self.root = Path(root).resolve()

        def fetch(self, url, headers=None):
            parts = urlsplit(url)
            scheme = parts.scheme.lower()
            if scheme == "file":
                if parts.netloc not in ("", "localhost"):
                    raise ValueError(f"refused {url}: remote file URL")
                path = Path(url2pathname(parts.path)).resolve()
                if not path.is_relative_to(self.root):
                    raise ValueError(f"refused {url}: outside the report folder {self.root}")
            elif scheme != "data":
                raise ValueError(f"refused {url}: only files inside the report folder are fetched")
            return super().fetch(url, headers)

    return ReportFetcher


def report_fetcher(root: str | Path):
    """A WeasyPrint URL fetcher confined to `root` (the report folder)."""
    return _fetcher_class()(root)


@contextmanager
def atomic_path(target: str | Path):
    """A temporary path in `target`'s folder to write to; on success it replaces `target` in one step
    (os.replace), on any failure or interruption it is deleted: a killed job never leaves a half-written file."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[a-z0-9_]{{8}}\.part")
    for stale in target.parent.iterdir():  # left by a job killed before it could clean up (SIGKILL)
        if pattern.fullmatch(stale.name):
            stale.unlink(missing_ok=True)
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    os.close(handle)
    try:
        yield Path(temp)
        os.chmod(temp, 0o644)  # mkstemp creates 0600; a report is as readable as any file written normally
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_pdf(html: str, target: str | Path, root: str | Path) -> None:
    """Render `html` to `target` (atomically); relative URLs resolve against `root`, the only folder the renderer
    may read."""
    import weasyprint

    logging.getLogger("fontTools").setLevel(logging.WARNING)
    root = Path(root).resolve()
    document = weasyprint.HTML(string=html, base_url=root.as_uri() + "/", url_fetcher=report_fetcher(root)).render()
    relative_links(document, root)
    with atomic_path(target) as temp:
        document.write_pdf(str(temp))


def relative_links(document, root: Path) -> None:
    """Links of a rendered document as its readers need them: WeasyPrint resolves every href against the base URL
    (file:///<build path>/reports/...), which is dead wherever the PDF is read and leaks the build path; a link into
    `root` becomes relative to it again (PDF readers resolve it against the PDF's own folder), a link to any other
    local file is dropped. Web links and links inside the document stay."""
    base = root.as_uri() + "/"
    for page in document.pages:
        kept = []
        for link_type, target, rectangle, box in page.links:
            if link_type != "internal" and urlsplit(target).scheme.lower() == "file":
                if not target.startswith(base):
                    continue
                target = target[len(base):]
            kept.append((link_type, target, rectangle, box))
        page.links[:] = kept


def write_report(context: dict, html_path: str | Path, pdf_path: str | Path | None = None,
                 templates: str | Path = TEMPLATES) -> str:
    """HTML (and PDF, when a path is given) of one context; both resolve links against the HTML's folder. Each
    file is written to a temporary file next to it and renamed into place, the PDF first: an interrupted run
    leaves the previous files (or none), never a truncated one."""
    html = render_html(context, templates)
    html_path = Path(html_path)
    with atomic_path(html_path) as temp:
        temp.write_text(html, encoding="utf-8")
        if pdf_path is not None:
            write_pdf(render_html(context, templates, for_print=True), pdf_path, html_path.parent)
    return html
