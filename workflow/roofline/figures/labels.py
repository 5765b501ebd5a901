"""Collision-free text placement: greedy, highest priority first, bounding boxes measured by the renderer.

Each label is tried at offsets around its anchor (near first, then farther with a leader line); a candidate is
kept when its box stays inside the axes and overlaps no placed text, no marker and (in the strict pass) no line.
Layout must be final (fixed margins, limits set) before calling, since boxes are measured in display pixels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from matplotlib.transforms import Bbox, ScaledTranslation

#: candidate directions (dx, dy), in order of preference: below-right first (under the roof is where the
#: attainable region is empty of other labels), then the other diagonals and sides
DIRECTIONS = ((1, -1), (1, 0), (-1, -1), (0, -1), (-1, 0), (1, 1), (0, 1), (-1, 1))
#: distances from the anchor [points]; beyond the first a thin leader line joins label and point
DISTANCES = (6, 13, 22, 34, 48, 64)
PAD_PX = 2.0


@dataclass(frozen=True)
class LabelRequest:
    x: float  # data coordinates of the anchor
    y: float
    text: str
    priority: float = 0.0  # higher is placed first
    color: str = "#222222"


@dataclass(frozen=True)
class PointLabel:
    """A candidate label for one point: operators close on screen are merged into one label per group."""

    x: float
    y: float
    name: str
    weight: float  # share of the group's time; heavier clusters are labelled first
    group: str  # e.g. the stage; clusters never mix groups
    color: str = "#222222"


def compact_names(names) -> str:
    """'q_proj', 'k_proj', 'lm_head' -> 'q/k_proj, lm_head' (common suffix after the last underscore merged)."""
    by_suffix: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        prefix, _, suffix = name.rpartition("_")
        key = suffix if prefix else name
        by_suffix.setdefault(key, []).append(prefix)
    parts = [("/".join(p for p in prefixes) + "_" + suffix) if any(prefixes) else suffix
             for suffix, prefixes in by_suffix.items()]
    return ", ".join(parts)


def wrap(text: str, width: int = 22) -> str:
    """Break a ', '-separated list (and over-long 'a/b/c_x' parts, after a '/') into lines of about `width`."""
    pieces = []
    for part in text.split(", "):
        while len(part) > width and "/" in part[:width]:
            cut = part[:width].rindex("/") + 1
            pieces.append((part[:cut], ""))
            part = part[cut:]
        pieces.append((part, ", "))
    lines, line = [], ""
    for piece, sep in pieces:
        if line and len(line) + len(piece) > width:
            lines.append(line.rstrip())
            line = ""
        line += piece + sep
    lines.append(line.rstrip(", ").rstrip())
    return "\n".join(lines)


def cluster_requests(ax, points, *, radius_px: float = 9.0, per_group: int = 5, min_weight: float = 0.02,
                     fmt=None, min_member: float = 0.005):
    """Merge points of one group closer than `radius_px` on screen; one LabelRequest per heavy cluster.

    The label names the cluster's members whose weight is at least `min_member` ("+n" for the rest) and, by
    default, the cluster's total weight as a percentage."""
    fmt = fmt or (lambda names, weight: f"{wrap(names)} {weight:.0%}")
    clusters: list[dict] = []
    for point in sorted(points, key=lambda p: -p.weight):
        px, py = ax.transData.transform((point.x, point.y))
        for cluster in clusters:
            if cluster["group"] == point.group and math.hypot(px - cluster["px"], py - cluster["py"]) <= radius_px:
                cluster["names"].append(point.name)
                cluster["weights"].append(point.weight)
                cluster["weight"] += point.weight
                break
        else:
            clusters.append({"group": point.group, "px": px, "py": py, "x": point.x, "y": point.y,
                             "names": [point.name], "weights": [point.weight], "weight": point.weight,
                             "color": point.color})
    requests = []
    for group in dict.fromkeys(c["group"] for c in clusters):
        heavy = sorted((c for c in clusters if c["group"] == group and c["weight"] >= min_weight),
                       key=lambda c: -c["weight"])[:per_group]
        requests += [LabelRequest(c["x"], c["y"], fmt(_members(c, min_member), c["weight"]), c["weight"],
                                  c["color"]) for c in heavy]
    return requests


def marker_boxes(ax, xs, ys, size_pt2, renderer) -> list[Bbox]:
    """Display boxes of scatter markers of area `size_pt2` (points^2, scalar or per point)."""
    scale = ax.figure.dpi / 72.0
    sizes = size_pt2 if hasattr(size_pt2, "__len__") else [size_pt2] * len(xs)
    boxes = []
    for (px, py), s in zip(ax.transData.transform(list(zip(xs, ys))), sizes):
        r = math.sqrt(s) / 2.0 * scale
        boxes.append(Bbox.from_extents(px - r, py - r, px + r, py + r))
    return boxes


def line_paths(ax, lines) -> list:
    """Display-coordinate vertex arrays of Line2D artists (obstacles for the strict pass)."""
    return [ax.transData.transform(line.get_xydata()) for line in lines]


def text_box(artist, renderer) -> Bbox:
    return artist.get_window_extent(renderer)


def overlaps_any(box: Bbox, boxes, pad: float = PAD_PX) -> bool:
    b = box.padded(pad)
    return any(b.overlaps(other) for other in boxes)


def _segment_hits(p0, p1, box: Bbox) -> bool:
    """Liang-Barsky: does the segment p0-p1 cross the box?"""
    x0, y0 = p0
    dx, dy = p1[0] - x0, p1[1] - y0
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, x0 - box.x0), (dx, box.x1 - x0), (-dy, y0 - box.y0), (dy, box.y1 - y0)):
        if p == 0:
            if q < 0:
                return False
        else:
            t = q / p
            if p < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
            if t0 > t1:
                return False
    return True


def hits_paths(box: Bbox, paths, pad: float = 1.0) -> bool:
    b = box.padded(pad)
    for path in paths:
        for p0, p1 in zip(path[:-1], path[1:]):
            if _segment_hits(p0, p1, b):
                return True
    return False


def _members(cluster: dict, min_member: float, max_chars: int = 30) -> str:
    """The heaviest members' names (each at least `min_member`), as many as fit `max_chars` once compacted, and
    '+n' for the rest."""
    names = [cluster["names"][0]]
    for name, weight in zip(cluster["names"][1:], cluster["weights"][1:]):
        if weight >= min_member and len(compact_names([*names, name])) <= max_chars:
            names.append(name)
    rest = len(set(cluster["names"]) - set(names))
    return compact_names(names) + (f", +{rest}" if rest else "")


def place_labels(ax, requests, renderer, *, obstacles=(), lines=(), weak_lines=(), fontsize=6.5):
    """Place each request's text near its anchor without collisions; returns (placed artists, skipped requests).

    Three passes per label: clear of every line, then clear of `lines` only (may cross `weak_lines`, e.g.
    dashed secondary ceilings), then anywhere free of text and markers."""
    axes_box = ax.get_window_extent(renderer).padded(-3)
    taken = list(obstacles)
    tiers = (list(lines) + list(weak_lines), list(lines), [])
    placed, skipped = [], []
    fig = ax.figure
    for request in sorted(requests, key=lambda r: -r.priority):
        chosen = None
        for paths in tiers:
            for distance in DISTANCES:
                for dx, dy in DIRECTIONS:
                    norm = math.hypot(dx, dy)
                    ox, oy = dx / norm * distance, dy / norm * distance
                    ha = "left" if dx > 0 else "right" if dx < 0 else "center"
                    va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
                    offset = ScaledTranslation(ox / 72.0, oy / 72.0, fig.dpi_scale_trans)
                    text = ax.text(request.x, request.y, request.text, fontsize=fontsize, color=request.color,
                                   ha=ha, va=va, transform=ax.transData + offset, zorder=6)
                    box = text.get_window_extent(renderer)
                    ok = (axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1 and axes_box.y0 <= box.y0
                          and box.y1 <= axes_box.y1 and not overlaps_any(box, taken)
                          and not hits_paths(box, paths))
                    if ok:
                        chosen = (text, box, ox, oy, distance)
                        break
                    text.remove()
                if chosen:
                    break
            if chosen:
                break
        if not chosen:
            skipped.append(request)
            continue
        text, box, ox, oy, distance = chosen
        text.set_bbox({"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
        taken.append(box)
        if distance > DISTANCES[0]:
            ax.annotate("", xy=(request.x, request.y), xytext=(ox, oy), textcoords="offset points",
                        arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "#777777", "shrinkA": 0, "shrinkB": 2},
                        zorder=5)
        placed.append(text)
    return placed, skipped
