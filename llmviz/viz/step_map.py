"""The lesson's map of one step as an SVG (analysis/step_map.py): one band per side, prefill above decode,
each tensor a box whose height is its tokens (to scale within the map: the prompt's [9, 256] stands nine times as
tall as a decode step's [1, 256]) and whose width grows with what one token holds (a log scale: the head's 50,257
logits would not fit on a linear one), its shape under it and its bytes where the step is about bytes; the
weights a decode step reads are drawn hatched at full height (they do not grow with tokens). Under the bands, what
that decode step reads.

A fixed layout computed in Python like viz/model_map.py: nothing for the browser to lay out on a step.
"""

from __future__ import annotations

import html
import math

from llmviz.analysis.kv_memory import human
from llmviz.analysis.model_map import shape_text
from llmviz.analysis.step_map import SIDES, Block, StepMap

WIDTH, TALL, WIDE, THIN = 440, 84, 96, 10  # the drawing's width; a block's most height and width; its least
TITLE_H, TEXT_H, GAP = 22, 34, 10
FILL = {"prefill": "#eef3fb", "decode": "#ffd89b"}
CACHE_FILL, WEIGHT_FILL = "#fff1d6", "#e3e3e3"
FONT = "'Noto Sans CJK SC', 'Source Han Sans SC', sans-serif"


def _text(x: float, y: float, body: str, size: int = 13, anchor: str = "middle", bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{weight} '
            f'font-family="{FONT}">{html.escape(body)}</text>')


def _size(b: Block, most_rows: int, most_columns: int) -> tuple[float, float]:
    """(width, height) of a block: height linear in its tokens, width on a log scale of what a token holds."""
    if b.name == "weights":
        return WIDE, TALL
    height = max(THIN / 2, TALL * b.rows / most_rows)
    span = math.log2(most_columns) if most_columns > 1 else 1.0
    width = THIN + (WIDE - THIN) * (math.log2(b.columns) / span if b.columns > 1 else 0.0)
    return width, height


def _block(b: Block, x: float, top: float, width: float, height: float, label: str) -> str:
    """A block drawn with its label over it and its shape (and bytes) under it, bottoms aligned."""
    fill = WEIGHT_FILL if b.name == "weights" else CACHE_FILL if b.name == "cache" else FILL[b.side]
    pattern = ' style="fill:url(#hatch)"' if b.name == "weights" else ""
    y = top + TALL - height
    # the weights' bytes are what a decode step reads of them (the head's table too): their size says it, not a shape
    under = shape_text(b.shape) if b.name != "weights" else f"{human(b.nbytes or 0)} {b.dtype or ''}".strip()
    out = [f'<g data-block="{b.name}" data-side="{b.side}" data-shape="{shape_text(b.shape)}">',
           _text(x, y - 4, label, size=12),
           f'<rect x="{x - width / 2:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" fill="{fill}" '
           f'stroke="#333"{pattern}/>',
           _text(x, top + TALL + 14, under, size=12, bold=True)]
    if b.nbytes is not None and b.name != "weights":
        out.append(_text(x, top + TALL + 28, f"{human(b.nbytes)}" + (f" {b.dtype}" if b.dtype else ""), size=11))
    return "".join(out) + "</g>"


def step_map_svg(m: StepMap, names: dict[str, str], titles: dict[str, str]) -> str:
    """m: the step's map; names: each block name's label (the page's language); titles: each side's band title."""
    most_rows = max((b.rows for b in m.blocks if b.name != "weights"), default=1)
    most_columns = max((b.columns for b in m.blocks if b.name != "weights"), default=2)
    body, y = [], 4
    for side in SIDES:
        blocks = m.side(side)
        if not blocks:
            continue
        body.append(_text(8, y + 15, titles[side], size=13, anchor="start", bold=True))
        top = y + TITLE_H + 14  # room for the labels over the tallest block
        slot = (WIDTH - 16) / len(blocks)
        for i, b in enumerate(blocks):
            width, height = _size(b, most_rows, most_columns)
            body.append(_block(b, 8 + slot * (i + 0.5), top, min(width, slot - 8), height, names[b.name]))
        y = top + TALL + TEXT_H + GAP
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {y:.0f}" width="100%" '
            f'style="max-width:{WIDTH}px" role="img"><defs><pattern id="hatch" width="6" height="6" '
            f'patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" '
            f'fill="{WEIGHT_FILL}"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="2"/></pattern>'
            f'</defs>{"".join(body)}</svg>')
