"""The prompt as a strip of tokens, with the characters their bytes spell underneath (C1).

Top row of each line: one box per token (its text, or its bytes in hex when it is a piece of a
character), with its id. Bottom row: one box per group of tokens that ends on a character boundary,
spanning those tokens; the groups a byte-level tokenizer cut into bytes are highlighted. Lines break
only between groups, so a character is never drawn across two lines.
"""

from __future__ import annotations

import plotly.graph_objects as go

from llmviz.analysis.tokens import REPLACEMENT, TokenGroup, visible
from llmviz.viz.style import finish

TOKEN_FILL, BYTE_FILL = "#dbe8ff", "#ffe3c2"
GROUP_FILL, SPLIT_FILL = "#f4f6fa", "#ffc98a"
LINE_PITCH = 2.6  # vertical distance between two lines of the strip, in row units


def lines_of(groups: list[TokenGroup], per_row: int) -> list[list[TokenGroup]]:
    """Groups packed greedily into lines of at most per_row tokens (a longer group gets a line alone)."""
    lines: list[list[TokenGroup]] = [[]]
    used = 0
    for g in groups:
        if lines[-1] and used + g.size > per_row:
            lines.append([])
            used = 0
        lines[-1].append(g)
        used += g.size
    return [line for line in lines if line]


def token_strip(texts: list[str], ids: list[int], hexes: list[str], groups: list[TokenGroup], title: str,
                tokens_label: str, chars_label: str, per_row: int = 16) -> go.Figure:
    """texts/ids/hexes: one entry per token (the token decoded alone, its id, its bytes in hex)."""
    shapes, tx, ty, tt, th, gx, gy, gt = [], [], [], [], [], [], [], []
    lines = lines_of(groups, per_row)
    for li, line in enumerate(lines):
        y_tok, y_chr = -li * LINE_PITCH, -li * LINE_PITCH - 1.05
        col = 0
        for g in line:
            left = col
            for i in range(g.start, g.stop):
                piece = REPLACEMENT in texts[i]
                shapes.append(_box(col - 0.46, col + 0.46, y_tok, BYTE_FILL if piece else TOKEN_FILL))
                tx.append(col)
                ty.append(y_tok)
                label = hexes[i] if piece else visible(texts[i])
                tt.append(f"{label}<br><span style='font-size:10px;color:#666'>{ids[i]}</span>")
                th.append(f"#{i} · {ids[i]} · {hexes[i]}")
                col += 1
            shapes.append(_box(left - 0.46, col - 1 + 0.46, y_chr, SPLIT_FILL if g.split else GROUP_FILL))
            gx.append((left + col - 1) / 2)
            gy.append(y_chr)
            gt.append(visible(g.text))
    fig = go.Figure([
        go.Scatter(x=tx, y=ty, text=tt, hovertext=th, mode="text", hoverinfo="text", showlegend=False,
                   textfont={"size": 13}),
        go.Scatter(x=gx, y=gy, text=gt, mode="text", hoverinfo="skip", showlegend=False, textfont={"size": 16}),
    ])
    width = max(per_row, max((sum(g.size for g in line) for line in lines), default=1))
    first = [0.0, -1.05]
    return finish(fig, title, height=70 + 95 * len(lines), shapes=shapes, plot_bgcolor="rgba(0,0,0,0)",
                  xaxis={"visible": False, "range": [-0.6, width - 0.4]},
                  yaxis={"range": [-(len(lines) - 1) * LINE_PITCH - 1.6, 0.55], "tickmode": "array",
                         "tickvals": first, "ticktext": [tokens_label, chars_label], "showgrid": False,
                         "zeroline": False, "fixedrange": True})


def _box(x0: float, x1: float, y: float, fill: str) -> dict:
    return {"type": "rect", "x0": x0, "x1": x1, "y0": y - 0.45, "y1": y + 0.45, "fillcolor": fill,
            "line": {"color": "#9aa7bd", "width": 1}, "layer": "below"}
