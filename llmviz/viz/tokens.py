"""The prompt as chips of tokens, with the characters their bytes spell underneath (C1).

One chip per token: its text (or its bytes in hex when it is a piece of a character) and, on its own line, its id.
Under the chips of each group of tokens that ends on a character boundary, one box spanning them, highlighted when a
byte-level tokenizer cut that character into bytes. The groups are laid out as HTML that wraps to the screen's width
(a phone's 390 px as a projector's 1280): a line breaks only between groups, so a character is never split across two
lines, and no chip overlaps another (a Plotly strip of fixed columns did, at phone width).
"""

from __future__ import annotations

from html import escape

from llmviz.analysis.tokens import REPLACEMENT, TokenGroup, visible

TOKEN_FILL, BYTE_FILL = "#dbe8ff", "#ffe3c2"
GROUP_FILL, SPLIT_FILL = "#f4f6fa", "#ffc98a"
CHIPS_CLASS = "llmviz-chips"  # the container's class (a test finds the chips by it)

STYLE = f"""<style>
.{CHIPS_CLASS} {{ display: flex; flex-wrap: wrap; gap: 8px 6px; align-items: flex-start; }}
.{CHIPS_CLASS} .grp {{ display: inline-flex; flex-direction: column; gap: 3px; max-width: 100%; }}
.{CHIPS_CLASS} .toks {{ display: flex; flex-wrap: wrap; gap: 2px; }}
.{CHIPS_CLASS} .tok {{ display: flex; flex-direction: column; align-items: center; min-width: 1.8em;
  padding: 1px 5px; border: 1px solid #9aa7bd; border-radius: 4px; background: {TOKEN_FILL};
  font-family: ui-monospace, monospace; font-size: 0.85rem; line-height: 1.25; white-space: pre; }}
.{CHIPS_CLASS} .tok.byte {{ background: {BYTE_FILL}; }}
.{CHIPS_CLASS} .id {{ display: block; font-size: 0.68rem; color: #555; }}
.{CHIPS_CLASS} .chr {{ text-align: center; border: 1px solid #9aa7bd; border-radius: 4px; background: {GROUP_FILL};
  font-size: 1rem; padding: 0 4px; white-space: pre; }}
.{CHIPS_CLASS} .grp.split .chr {{ background: {SPLIT_FILL}; }}
.llmviz-chips-title {{ font-weight: 600; font-size: 0.9rem; margin-bottom: 6px; }}
.{CHIPS_CLASS} .tok.legend {{ background: none; border-style: dashed; align-items: flex-start; color: #555; }}
.{CHIPS_CLASS} .pos {{ font-weight: 600; }}
</style>"""


def token_chips(texts: list[str], ids: list[int], hexes: list[str], groups: list[TokenGroup], title: str) -> str:
    """texts/ids/hexes: one entry per token (the token decoded alone, its id, its bytes in hex) -> the HTML (every
    text escaped): the title (which says what the two rows are), then one block per group."""
    blocks = []
    for g in groups:
        chips = []
        for i in range(g.start, g.stop):
            piece = REPLACEMENT in texts[i]
            label = hexes[i] if piece else visible(texts[i])
            chips.append(f'<span class="tok{" byte" if piece else ""}" title="#{i} · {ids[i]} · {escape(hexes[i])}">'
                         f'{escape(label)}<span class="id">{ids[i]}</span></span>')
        blocks.append(f'<div class="grp{" split" if g.split else ""}"><div class="toks">{"".join(chips)}</div>'
                      f'<div class="chr">{escape(visible(g.text))}</div></div>')
    return (f'{STYLE}<div class="llmviz-chips-title">{escape(title)}</div>'
            f'<div class="{CHIPS_CLASS}">{"".join(blocks)}</div>')


def field_chips(corner: str, positions: list, rows: dict[str, list]) -> str:
    """One chip per position, its fields one under another (a token, its id or segment, ...), after a legend chip
    naming them: a table with a column per position that wraps on a phone instead of running off the screen."""
    legend = "".join(f'<span class="id">{escape(str(name))}</span>' for name in rows)
    chips = [f'<span class="tok legend"><span class="pos">{escape(corner)}</span>{legend}</span>']
    for i, p in enumerate(positions):
        fields = "".join(f'<span class="id">{escape(str(values[i]))}</span>' for values in rows.values())
        chips.append(f'<span class="tok"><span class="pos">{escape(str(p))}</span>{fields}</span>')
    return f'{STYLE}<div class="{CHIPS_CLASS}">{"".join(chips)}</div>'
