"""Collision-free text placement: greedy, highest priority first, bounding boxes measured by the renderer.

Each label is tried at offsets around its anchor (near first, then farther with a leader line); a candidate is
kept when its box stays inside the axes and overlaps no placed text, no marker and (in the strict pass) no line.
Layout must be final (fixed margins, limits set) before calling, since boxes are measured in display pixels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from matplotlib.transforms import Bbox, ScaledTranslation

#: candidate directions (dx, dy), in order of preference: below-right first (under the roof is where the
#: attainable region is empty of other labels), then the other diagonals and sides
DIRECTIONS = ((1, -1), (1, 0), (-1, -1), (0, -1), (-1, 0), (1, 1), (0, 1), (-1, 1))
#: then straight below or above the point with the label hanging to its left or right (room near the frame)
SIDE_HUNG = ((0, -1, "right"), (0, -1, "left"), (0, 1, "right"), (0, 1, "left"))
#: distances from the anchor [points]; beyond the first a thin leader line joins label and point
DISTANCES = (6, 13, 22, 34, 48, 64, 84)
PAD_PX = 2.0
#: display pixels a label's box keeps from any line (its white ground reaches ~1.4 px beyond the text)
LINE_CLEARANCE = 3.5


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


def _shared_suffix(a: str, b: str) -> str:
    """The longest '_...' ending both names share with a head left on each ('' if none): 'mlp_all_reduce' and
    'attn_all_reduce' share '_all_reduce'."""
    cuts = [i for i, char in enumerate(a) if char == "_" and i > 0]
    return next((a[i:] for i in cuts if b.endswith(a[i:]) and len(b) > len(a) - i), "")


def _merged(heads: list[str], suffix: str) -> str:
    """'expert_gate', 'expert_up' + '_proj' -> 'expert_gate/up_proj' (a leading '..._' they share written once)."""
    shared = heads[0][:heads[0].rfind("_") + 1]
    while shared and not all(head.startswith(shared) and len(head) > len(shared) for head in heads):
        shared = shared[:shared[:-1].rfind("_") + 1]
    return shared + "/".join(head[len(shared):] for head in heads) + suffix


def compact_names(names) -> str:
    """'q_proj', 'k_proj', 'lm_head' -> 'q/k_proj, lm_head'; 'mlp_all_reduce', 'attn_all_reduce' ->
    'mlp/attn_all_reduce' (names that share an ending after an underscore written once, in first-seen order)."""
    names = list(dict.fromkeys(names))
    groups: dict[str, list[str]] = {}  # shared ending ('' for a name alone) -> the heads before it
    for i, name in enumerate(names):
        suffix = next((s for s in groups if s.startswith("_") and name.endswith(s) and len(name) > len(s)), None)
        if suffix is None:
            suffix = max((_shared_suffix(name, other) for other in names[i + 1:]), key=len, default="")
        head = name[:len(name) - len(suffix)] if suffix else name
        groups.setdefault(suffix or name, []).append(head)
    return ", ".join(_merged(heads, suffix) if heads[0] != suffix else suffix for suffix, heads in groups.items())


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


class BoxArray:
    """Display boxes as one array: the overlap tests of label placement (hundreds of marker and label boxes,
    tried for every candidate place) run in NumPy instead of one Bbox.overlaps call per pair."""

    def __init__(self, boxes=()):
        self.extents = np.array([_normalized(b) for b in boxes], dtype=float).reshape(-1, 4)

    def append(self, box: Bbox) -> None:
        self.extents = np.vstack([self.extents, _normalized(box)])

    def __len__(self) -> int:
        return len(self.extents)

    def __iter__(self):
        return (Bbox.from_extents(*row) for row in self.extents)

    def hits(self, box: Bbox, pad: float = 0.0) -> np.ndarray:
        """Which boxes `box` padded by `pad` overlaps (edges touching count, as Bbox.overlaps)."""
        x0, y0, x1, y1 = _normalized(box)
        e = self.extents
        return ~((e[:, 2] < x0 - pad) | (e[:, 0] > x1 + pad) | (e[:, 3] < y0 - pad) | (e[:, 1] > y1 + pad))


def _normalized(box: Bbox) -> tuple[float, float, float, float]:
    (x0, y0), (x1, y1) = box.get_points()
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def overlaps_any(box: Bbox, boxes, pad: float = PAD_PX) -> bool:
    boxes = boxes if isinstance(boxes, BoxArray) else BoxArray(boxes)
    return bool(boxes.hits(box, pad).any()) if len(boxes) else False


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


def _segments_cross(p0, p1, q0, q1) -> bool:
    """Do the segments p0-p1 and q0-q1 intersect (proper crossing or touching)?"""
    def orient(a, b, c):
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    d1, d2 = orient(q0, q1, p0), orient(q0, q1, p1)
    d3, d4 = orient(p0, p1, q0), orient(p0, p1, q1)
    if abs(d1) < 1e-9 and abs(d2) < 1e-9:  # collinear: they meet if their extents overlap (a leader along a line)
        return all(max(min(p0[i], p1[i]), min(q0[i], q1[i])) <= min(max(p0[i], p1[i]), max(q0[i], q1[i]))
                   for i in (0, 1))
    return (d1 * d2 <= 0) and (d3 * d4 <= 0)


def crosses_paths(p0, p1, paths) -> bool:
    """Does the segment p0-p1 cross any of the display-coordinate polylines `paths`?"""
    return any(_segments_cross(p0, p1, a, b) for path in paths for a, b in zip(path[:-1], path[1:]))


def _offsets():
    """(ox, oy, ha, va, distance) of every candidate place of a label, in order of preference: each distance in
    turn, the directions around the point, then hung beside it below and above."""
    for distance in DISTANCES:
        for dx, dy, ha in [(dx, dy, None) for dx, dy in DIRECTIONS] + list(SIDE_HUNG):
            norm = math.hypot(dx, dy)
            ha = ha or ("left" if dx > 0 else "right" if dx < 0 else "center")
            va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
            yield dx / norm * distance, dy / norm * distance, ha, va, distance


@dataclass(frozen=True)
class _Lines:
    """The lines of a roofline in display coordinates, by how bad it is for a label to cross them."""

    solid: list  # solid ceilings
    roofs: list  # solid and dashed ceilings
    every: list  # ceilings and guides (dotted ridges)


def _level(box, start, end, leader: bool, lines: _Lines) -> int:
    """How bad a candidate is (see `place_labels`): 0 clear of everything ... 5 crossing a solid line."""
    solid_leader = leader and crosses_paths(start, end, lines.solid)
    if not hits_paths(box, lines.every, LINE_CLEARANCE):
        return 3 if solid_leader else 1 if leader and crosses_paths(start, end, lines.every) else 0
    if not hits_paths(box, lines.roofs, LINE_CLEARANCE):
        return 3 if solid_leader else 2
    if not hits_paths(box, lines.solid, LINE_CLEARANCE):
        return 4
    return 5


def _best_place(ax, request, renderer, taken, lines: _Lines, fontsize, texts=(), leaders=()):
    """(level, text, box, ox, oy, distance) of the best place for `request`'s label, or None when every place
    leaves the axes or overlaps what is taken; a leader through one of `texts` (the labels placed), or a label
    across one of `leaders` (theirs, (start, end) in display coordinates), reads as badly as a leader along a
    solid line."""
    fig = ax.figure
    axes_box = ax.get_window_extent(renderer).padded(-3)
    best = None
    for ox, oy, ha, va, distance in _offsets():
        offset = ScaledTranslation(ox / 72.0, oy / 72.0, fig.dpi_scale_trans)
        text = ax.text(request.x, request.y, request.text, fontsize=fontsize, color=request.color,
                       ha=ha, va=va, transform=ax.transData + offset, zorder=6)
        box = text.get_window_extent(renderer)
        if not (axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1 and axes_box.y0 <= box.y0
                and box.y1 <= axes_box.y1) or overlaps_any(box, taken):
            text.remove()
            continue
        start, end = _leader(ax, request, ox, oy, distance)
        level = _level(box, start, end, distance > DISTANCES[0], lines)
        struck = distance > DISTANCES[0] and any(_segment_hits(start, end, other) for other in texts)
        if level < 3 and (struck or any(_segment_hits(a, b, box) for a, b in leaders)):
            level = 3  # a leader struck through a label ("NVLink 4 450 GB/s") reads as part of it
        if best is None or level < best[0]:
            if best is not None:
                best[1].remove()
            best = (level, text, box, ox, oy, distance)
        else:
            text.remove()
        if best[0] == 0:
            break
    return best


def _leader(ax, request, ox: float, oy: float, distance: float) -> tuple:
    """(start, end) of a label's leader in display coordinates (drawn beyond the nearest distance): from just off
    the point to the label's corner."""
    px_per_pt = ax.figure.dpi / 72.0
    anchor = ax.transData.transform((request.x, request.y))
    return ((anchor[0] + ox / distance * 4 * px_per_pt, anchor[1] + oy / distance * 4 * px_per_pt),
            (anchor[0] + ox * px_per_pt, anchor[1] + oy * px_per_pt))


def place_labels(ax, requests, renderer, *, obstacles=(), lines=(), weak_lines=(), guides=(), fontsize=6.5,
                 texts=()):
    """Place each request's text near its anchor without collisions; returns (placed artists, skipped requests).

    Every candidate must stay inside the axes and clear of placed text and markers; among those the first of the
    best level wins: 0 = the box keeps LINE_CLEARANCE from every line and its leader crosses none, 1 = the box
    keeps clear of every line and its leader crosses only dashed or dotted ones, 2 = the box crosses only `guides`
    (the dotted ridge) and its leader no solid line, 3 = the leader crosses (or runs along) a solid line, 4 = the
    box crosses `weak_lines` too (dashed secondary ceilings), 5 = it crosses a solid line (`lines`). A leader
    through a label (`texts`: the boxes of the labels already on the plot, and those placed here) is level 3."""
    taken = BoxArray(obstacles)
    texts, leaders = list(texts), []
    paths = _Lines(solid=list(lines), roofs=list(lines) + list(weak_lines),
                   every=list(lines) + list(weak_lines) + list(guides))
    placed, skipped = [], []
    for request in sorted(requests, key=lambda r: -r.priority):
        best = _best_place(ax, request, renderer, taken, paths, fontsize, texts, leaders)
        if best is None:
            skipped.append(request)
            continue
        _level, text, box, ox, oy, distance = best
        text.set_bbox({"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
        taken.append(box)
        texts.append(box)
        if distance > DISTANCES[0]:
            leaders.append(_leader(ax, request, ox, oy, distance))
            ax.annotate("", xy=(request.x, request.y), xytext=(ox, oy), textcoords="offset points",
                        arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "#777777", "shrinkA": 0, "shrinkB": 2},
                        zorder=5)
        placed.append(text)
    return placed, skipped
