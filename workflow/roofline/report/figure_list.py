"""The figures of a model report, as the figure manifest lists them (reports/figures/{model}/figures.json, written
by the figures package from its registry): the report learns each figure's kind, files, caption and place from the
manifest only. It does not import the figures package, and names no kind of figure."""
from __future__ import annotations

#: the places of a model report that show figures: the Figures section (printed, and the wiki), and a GPU's details
#: (HTML only) after its memory footprint and at its end (the figures package writes them: registry.PLACES)
PLACES = ("figures", "gpu_head", "gpu_foot")


def figure(entry: dict, href: str) -> dict:
    """A figure of the page: its SVG (the page), PNG (the wiki; '' where none was written), caption (the manifest's
    note appended) and, where the figures package wrote one, its interactive spec as JSON safe inside a <script>
    element ('' = none)."""
    note = entry.get("note") or ""
    return {"src": f"{href}/{entry['svg']}", "png": f"{href}/{entry['png']}" if entry.get("png") else "",
            "caption": entry["caption"] + (f" {note}" if note else ""),
            "spec": script_json(entry.get("interactive_spec", ""))}


def script_json(text: str) -> str:
    """JSON text that can stand inside <script type="application/json"> as is: '<', '>' and '&' as JSON escapes,
    so no name (config text) can close the element; JSON.parse reads them back."""
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def figures_at(manifest: list[dict], href: str, place: str, gpu: str | None = None) -> list[dict]:
    """The figures the manifest puts at `place` (of GPU `gpu`'s details, for those places), in the registry's order;
    `href` is the figure folder relative to the page."""
    if place not in PLACES:
        raise ValueError(f"unknown figure place {place!r}; the report has {PLACES}")
    entries = [e for e in manifest if e["place"] == place and e.get("gpu") == gpu]
    return [figure(e, href) for e in sorted(entries, key=lambda e: e["rank"])]
