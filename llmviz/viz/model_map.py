"""The model map as Graphviz DOT (issue 23): the network top to bottom with each part's shape for the current
step, the parts a step is about highlighted, and `N ×` on the block that repeats per layer."""

from __future__ import annotations

from llmviz.analysis.model_map import LAYER_PARTS, Part, shape_text

HIGHLIGHT, PLAIN, CACHE = "#ffd89b", "#eef3fb", "#fff1d6"


def _q(s: str) -> str:
    """A DOT string (labels are the catalogue's and the shapes; `\\n` in them is DOT's line break)."""
    return '"' + s.replace('"', "'") + '"'


def model_map_dot(parts: list[Part], names: dict[str, str], layers: int, layer_label: str,
                  highlight: tuple[str, ...] = ()) -> str:
    """parts: analysis.model_map.step_parts; names: each part's label in the page's language; layer_label: the
    repeated block's caption with {n} (e.g. "{n} × layer")."""
    def node(p: Part) -> str:
        color = HIGHLIGHT if p.name in highlight else (CACHE if p.name == "cache" else PLAIN)
        shape = "cylinder" if p.name == "cache" else "box"
        label = f"{names[p.name]}\\n{shape_text(p.shape)}"
        return f'  {p.name} [label={_q(label)}, shape={shape}, fillcolor="{color}"];'

    inside = [p for p in parts if p.name in LAYER_PARTS]
    outside = {p.name: p for p in parts if p.name not in LAYER_PARTS}
    lines = ['digraph {', '  rankdir=TB; bgcolor="transparent"; nodesep=0.25; ranksep=0.3;',
             '  node [style="rounded,filled", fontname="Noto Sans CJK SC,sans-serif", fontsize=11];',
             node(outside["embed"]), "  subgraph cluster_layer {",
             f'    label={_q(layer_label.format(n=layers))}; style="rounded,dashed"; color="#8899aa";',
             *("  " + node(p) for p in inside), "    {rank=same; q; k; v;}", "  }",
             node(outside["final_norm"]), node(outside["head"]),
             "  embed -> norm1; norm1 -> q; norm1 -> k; norm1 -> v; q -> scores; k -> cache; v -> cache;",
             "  cache -> scores; scores -> norm2; norm2 -> mlp; mlp -> final_norm; final_norm -> head;", "}"]
    return "\n".join(lines)
