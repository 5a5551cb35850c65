"""The model map as an SVG drawn here: the network top to bottom with each part's shapes in prefill and
in decode side by side (the current step's in bold), the parts a step is about highlighted, and `N ×` on the block
that repeats per layer.

A fixed layout computed in Python, not a Graphviz chart: the browser lays a Graphviz chart out again on every
rerun (about half a second on a 2-core laptop, on each lesson step); this SVG costs it nothing to draw.
"""

from __future__ import annotations

import html

from llmviz.analysis.model_map import PARTS, Part, shape_text

HIGHLIGHT, PLAIN, CACHE = "#ffd89b", "#eef3fb", "#fff1d6"
WIDTH, BOX_W, BOX_H = 420, 132, 56
FONT = "'Noto Sans CJK SC', 'Source Han Sans SC', sans-serif"
# Each part's centre (x, y) in the drawing.
CENTRES = {"embed": (210, 32), "norm1": (210, 126), "q": (76, 200), "k": (210, 200), "v": (344, 200),
           "cache": (280, 276), "scores": (140, 352), "norm2": (210, 428), "mlp": (210, 500),
           "final_norm": (210, 592), "head": (210, 666)}
LAYER_BOX = (6, 74, WIDTH - 12, 472)  # x, y, width, height of the dashed block that repeats per layer
HEIGHT = 700
EDGES = (("embed", "norm1"), ("norm1", "q"), ("norm1", "k"), ("norm1", "v"), ("k", "cache"), ("v", "cache"),
         ("q", "scores"), ("cache", "scores"), ("scores", "norm2"), ("norm2", "mlp"), ("mlp", "final_norm"),
         ("final_norm", "head"))


def _text(x: float, y: float, body: str, size: int = 14, anchor: str = "middle", bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text x="{x}" y="{y}" text-anchor="{anchor}" font-size="{size}"{weight} font-family="{FONT}">'
            f'{body}</text>')


def _node(name: str, label: str, prefill: Part, decode: Part, decoding: bool, lit: bool) -> str:
    """A part: its name, then its prefill shape over its decode shape (one line each: a long prompt's
    [12, 2047, 2047] fits), the current step's in bold."""
    x, y = CENTRES[name]
    left, top = x - BOX_W / 2, y - BOX_H / 2
    fill = HIGHLIGHT if lit else (CACHE if name == "cache" else PLAIN)
    if name == "cache":  # a cylinder: a box with an ellipse on top
        shape = (f'<rect x="{left}" y="{top}" width="{BOX_W}" height="{BOX_H}" fill="{fill}" stroke="#333"/>'
                 f'<ellipse cx="{x}" cy="{top}" rx="{BOX_W / 2}" ry="6" fill="{fill}" stroke="#333"/>')
    else:
        shape = (f'<rect x="{left}" y="{top}" width="{BOX_W}" height="{BOX_H}" rx="12" fill="{fill}" '
                 f'stroke="#333"/>')
    return (f'<g data-part="{name}">{shape}{_text(x, y - 10, html.escape(label))}'
            f'{_text(x, y + 6, html.escape(shape_text(prefill.shape)), size=12, bold=not decoding)}'
            f'{_text(x, y + 21, html.escape(shape_text(decode.shape)), size=12, bold=decoding)}</g>')


def _edge(a: str, b: str) -> str:
    (x1, y1), (x2, y2) = CENTRES[a], CENTRES[b]
    return (f'<line x1="{x1}" y1="{y1 + BOX_H / 2}" x2="{x2}" y2="{y2 - BOX_H / 2 - (6 if b == "cache" else 0)}" '
            f'stroke="#333" stroke-width="1.2" marker-end="url(#arrow)"/>')


def model_map_svg(prefill: list[Part], decode: list[Part], names: dict[str, str], layers: int, layer_label: str,
                  highlight: tuple[str, ...] = (), decoding: bool = False) -> str:
    """prefill, decode: analysis.model_map.step_parts of the prompt and of one decode step after it; names: each
    part's label in the page's language; layer_label: the repeated block's caption with {n} (e.g. "{n} × layer");
    decoding: whether the current step is a decode step (its shapes in bold)."""
    before, after = {p.name: p for p in prefill}, {p.name: p for p in decode}
    if set(before) != set(PARTS) or set(after) != set(PARTS):
        raise ValueError(f"prefill and decode must each hold the parts {PARTS}")
    x, y, w, h = LAYER_BOX
    caption = html.escape(layer_label.format(n=layers))
    body = [f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="14" fill="none" stroke="#8899aa" '
            f'stroke-dasharray="6 4"/>', _text(x + 12, y + 20, caption, anchor="start"),
            *(_edge(a, b) for a, b in EDGES),
            *(_node(n, names[n], before[n], after[n], decoding, n in highlight) for n in PARTS)]
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
            f'style="max-width:{WIDTH}px" role="img"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" '
            f'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="#333"/></marker></defs>{"".join(body)}</svg>')
