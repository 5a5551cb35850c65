"""The model map as Graphviz DOT (issue 23): the network top to bottom with each part's shapes in prefill and in
decode side by side (the current step's in bold), the parts a step is about highlighted, and `N ×` on the block
that repeats per layer."""

from __future__ import annotations

import html

from llmviz.analysis.model_map import LAYER_PARTS, Part, shape_text

HIGHLIGHT, PLAIN, CACHE = "#ffd89b", "#eef3fb", "#fff1d6"


def _q(s: str) -> str:
    """A DOT string (the layer block's caption)."""
    return '"' + s.replace('"', "'") + '"'


def _label(name: str, prefill: Part, decode: Part, decoding: bool) -> str:
    """A DOT HTML label: the part's name over its prefill and decode shapes, the current step's in bold."""
    shapes = [html.escape(shape_text(prefill.shape)), html.escape(shape_text(decode.shape))]
    now = 1 if decoding else 0
    shapes[now] = f"<B>{shapes[now]}</B>"
    return f"<{html.escape(name)}<BR/>{shapes[0]} | {shapes[1]}>"


def model_map_dot(prefill: list[Part], decode: list[Part], names: dict[str, str], layers: int, layer_label: str,
                  highlight: tuple[str, ...] = (), decoding: bool = False) -> str:
    """prefill, decode: analysis.model_map.step_parts of the prompt and of one decode step after it; names: each
    part's label in the page's language; layer_label: the repeated block's caption with {n} (e.g. "{n} × layer");
    decoding: whether the current step is a decode step (its shapes in bold)."""
    after = {p.name: p for p in decode}
    if set(after) != {p.name for p in prefill}:
        raise ValueError("prefill and decode must hold the same parts")

    def node(p: Part) -> str:
        color = HIGHLIGHT if p.name in highlight else (CACHE if p.name == "cache" else PLAIN)
        shape = "cylinder" if p.name == "cache" else "box"
        return f'  {p.name} [label={_label(names[p.name], p, after[p.name], decoding)}, shape={shape}, ' \
               f'fillcolor="{color}"];'

    inside = [p for p in prefill if p.name in LAYER_PARTS]
    outside = {p.name: p for p in prefill if p.name not in LAYER_PARTS}
    lines = ['digraph {', '  rankdir=TB; bgcolor="transparent"; nodesep=0.25; ranksep=0.3;',
             '  node [style="rounded,filled", fontname="Noto Sans CJK SC,sans-serif", fontsize=11];',
             node(outside["embed"]), "  subgraph cluster_layer {",
             f'    label={_q(layer_label.format(n=layers))}; style="rounded,dashed"; color="#8899aa";',
             *("  " + node(p) for p in inside), "    {rank=same; q; k; v;}", "  }",
             node(outside["final_norm"]), node(outside["head"]),
             "  embed -> norm1; norm1 -> q; norm1 -> k; norm1 -> v; q -> scores; k -> cache; v -> cache;",
             "  cache -> scores; scores -> norm2; norm2 -> mlp; mlp -> final_norm; final_norm -> head;", "}"]
    return "\n".join(lines)
