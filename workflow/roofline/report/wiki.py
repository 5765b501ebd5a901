"""reports/wiki/: a self-contained Markdown bundle for git-backed wikis (GitHub, GitLab, Gitea).

`Home.md` (the summary table and links), one page per configured model (its decision sentences and tables, the key
figures as PNG, a link to its PDF), `_Sidebar.md`, and under `files/` the PDFs and PNGs the pages link to. Every
link is relative and points inside the bundle. The pages are written from the same contexts as the HTML and PDF
(`summary_context`, `model_context`), so a number reads the same in all three. Names come from config.yaml and
are untrusted: every text passes through `escape`.
"""
from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

from ..engine.errors import CONTROL_CHARACTERS

#: the folder of the bundle's attachments (PDFs, PNGs), beside the pages
FILES = "files"
#: files in the bundle's folder that are not part of it: Snakemake's marker of a directory() output
NOT_PUBLISHED = frozenset({".snakemake_timestamp"})
#: characters with a meaning inside a line of (GitHub-flavoured) Markdown, escaped with a backslash (every text
#: the bundle writes follows a fixed prefix such as '- ' or '| ', so line-start markers like '#' cannot occur)
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")
#: line breaks, tabs and other control characters, which a name may not carry into a line of Markdown (the
#: non-breaking spaces that keep a cell's "2 x H100, TP 2" together stay)
_CONTROL = re.compile(f"[{CONTROL_CHARACTERS}]+")


def escape(text: str) -> str:
    """Plain text for Markdown: HTML-escaped (no tag of a name reaches the page), Markdown-escaped (a name cannot
    start a link, emphasis or a table column), on one line (a line break in a name had started a heading of its
    own) and no bare URL that a wiki would turn into a link."""
    text = _MARKDOWN.sub(r"\\\1", html.escape(_CONTROL.sub(" ", str(text)), quote=False))
    return text.replace("://", ":&#47;&#47;").replace("www.", "www&#46;")


def cell(c: dict, said: set | None = None) -> str:
    """A table cell of decision.cell: a marked one (the setup does not fit) is struck through, with ✗ and why;
    the reason once per row (`said` collects the reasons a row has given already)."""
    if not c["misfit"]:
        return escape(c["text"])
    if said is not None and c["misfit"] in said:
        return f"✗ ~~{escape(c['text'])}~~"
    if said is not None:
        said.add(c["misfit"])
    return f"✗ ~~{escape(c['text'])}~~ ({escape(c['misfit'])})"


def table(header: list[str], rows: list[list[str]], numeric: list[bool] | None = None) -> list[str]:
    """A Markdown table (cells already escaped); numeric columns right-aligned."""
    numeric = numeric or [False] * len(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def header_lines(header: dict) -> list[str]:
    scenario = ", ".join(f"{name} {value}" for name, value in header["scenario"])
    return [f"# {escape(header['title'])}", "", f"{escape(header['subtitle'])}. Scenario: {escape(scenario)}.",
            f"{escape(header['hash_name'].capitalize())} `{header['config_hash']}`.", ""]


def home_page(summary: dict, models: dict[str, str]) -> str:
    """Home.md: the summary table (every model × GPU), the summary PDF and a link per model page."""
    columns = summary["columns"]
    rows = []
    for group in summary["groups"]:
        for i, row in enumerate(group["rows"]):
            name = f"[{escape(group['name'])}]({group['model']}.md)" if i == 0 else ""
            said: set = set()
            rows.append([name, escape(row["gpu"])] + [cell(row["cells"][c["key"]], said) for c in columns])
    lines = header_lines(summary["header"])
    lines += [f"Summary as PDF: [summary.pdf]({FILES}/summary.pdf).", ""]
    if summary.get("served"):
        lines += ["## Served under load: the recommended deployment per model and GPU", ""]
        lines += served_lines(summary["served"], by_model=True) + ["", "## Each model on each configured GPU", ""]
    lines += table(["Model", "GPU"] + [escape(c["header"]) for c in columns], rows,
                   [False, False] + [c["numeric"] for c in columns])
    if summary["constant"]:
        lines += ["", escape(summary["constant"])]
    lines += ["", "✗ (struck through): the setup does not fit; its time assumes it did.", "", "## Models", ""]
    lines += [f"- [{escape(name)}]({model}.md) ([PDF]({FILES}/{model}.pdf))" for model, name in models.items()]
    return "\n".join(lines) + "\n"


def served_lines(served: dict, by_model: bool = False) -> list[str]:
    """The served table (roofline.report.served: the summary's with a model column when `by_model`, its rows
    {"cells", "first", "name", "model"}; a model page's rows are the cells) and the line under it."""
    columns = served["columns"]
    rows = [(row["cells"], [f"[{escape(row['name'])}]({row['model']}.md)" if row["first"] else ""])
            if by_model else (row, []) for row in served["rows"]]
    lines = table((["Model"] if by_model else []) + [escape(c["header"]) for c in columns],
                  [first + [cell(cells[c["key"]], set()) for c in columns] for cells, first in rows],
                  ([False] if by_model else []) + [c["numeric"] for c in columns])
    return lines + ["", escape(f"{served['constant']} Serving model, {served['workload']}; expected times, the "
                               f"roofline bound in parentheses. {served.get('coverage', '')}".strip())]


def model_page(context: dict, figures: list[dict]) -> str:
    """<model>.md: the decision sentences and tables, the key figures (PNG) and a link to the PDF."""
    model = context["model"]
    lines = header_lines(context["header"])
    lines += [f"Full report: [{model}.pdf]({FILES}/{model}.pdf) (operators and treatments × GPUs, hardware, "
              "figures" + (", the paper's Table 1" if context["appendix"]["available"] else "") + ", caveats).",
              "", "## Decision", ""]
    lines += [f"- {escape(sentence)}" for sentence in context["summary"]]
    if context.get("served") and context["served"]["rows"]:
        lines += ["", "### Served under load: the recommended deployment per GPU", ""]
        lines += served_lines(context["served"])
    for decision in context["decision"]:
        decode, expected = decision["stage"] == "decode", decision["has_expected"]
        header = ["Deployment", "Fits", decision["time_label"], *([decision["expected_label"]] if expected else []),
                  "Tokens/s", "Tokens/s per device", "Memory-bound share", "Bound", "Best lever",
                  *(["Max tokens/s (batch)"] if decode else [])]
        numeric = [False, False, True, *([True] if expected else []), True, True, True, False, False,
                   *([True] if decode else [])]
        rows = []
        for row in decision["rows"]:
            said = {row["fit_text"]}  # the Fits column says why already
            rows.append([escape(row["deployment"]), escape(row["fit_text"]), cell(row["time"], said),
                         *([cell(row["expected"], said) if row["expected"] else "—"] if expected else []),
                         cell(row["tokens_per_s"], said), cell(row["tokens_per_s_per_device"], said),
                         escape(row["memory_bound_share"]), escape(row["bound"]), escape(row["lever"]),
                         *([cell(row["max_throughput"], said)] if decode else [])])
        lines += ["", f"### {decision['title']}", ""]
        lines += table(header, rows, numeric)
        if decision["marks"]:
            lines += ["", escape(decision["marks"])]
    lines += ["", "## Figures", ""]
    for figure in figures:
        lines += [f"![{escape(figure['caption'])}]({figure['png']})", "", f"*{escape(figure['caption'])}*", ""]
    return "\n".join(lines) + "\n"


def sidebar(models: dict[str, str]) -> str:
    lines = ["**Roofline reports**", "", "- [Home](Home.md)", "- [Summary (PDF)](files/summary.pdf)"]
    lines += [f"- [{escape(name)}]({model}.md)" for model, name in models.items()]
    return "\n".join(lines) + "\n"


def write_bundle(target: str | Path, summary: dict, contexts: dict[str, dict], pdfs: dict[str, Path],
                 figure_dirs: dict[str, Path], summary_pdf: str | Path) -> list[str]:
    """Write the bundle into `target` (created; must not exist or be empty) from the summary context, one model
    context per configured model (only those: a stale report of a removed model is never published), their PDFs
    and figure folders; returns the bundle's files, relative to `target`, sorted."""
    target = Path(target)
    files = target / FILES
    files.mkdir(parents=True, exist_ok=True)
    shutil.copy2(summary_pdf, files / "summary.pdf")
    names = {model: context["model_name"] for model, context in contexts.items()}
    for model, context in contexts.items():
        shutil.copy2(pdfs[model], files / f"{model}.pdf")
        (files / model).mkdir(exist_ok=True)
        figures = []
        for figure in context["figures"]:
            png = Path(figure["png"]).name
            shutil.copy2(Path(figure_dirs[model]) / png, files / model / png)
            figures.append({"caption": figure["caption"], "png": f"{FILES}/{model}/{png}"})
        (target / f"{model}.md").write_text(model_page(context, figures), encoding="utf-8")
    (target / "Home.md").write_text(home_page(summary, names), encoding="utf-8")
    (target / "_Sidebar.md").write_text(sidebar(names), encoding="utf-8")
    return bundle_files(target)


def bundle_files(target: str | Path) -> list[str]:
    """The bundle's files, relative to its folder, sorted: what is published (not Snakemake's marker files)."""
    target = Path(target)
    return sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file() and p.name not in NOT_PUBLISHED)


def relative_links(page: str) -> list[str]:
    """The link targets of a Markdown page (links and images), for checking that each resolves in the bundle."""
    return re.findall(r"(?<!\\)\]\(([^)\s]+)\)", page)
