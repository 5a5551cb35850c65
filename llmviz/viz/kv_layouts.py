"""Figures of the KV layouts page (C6, C8, C9; claim K3), drawn from KV snapshots and a sweep result.

contiguous_rows  each sequence's preallocated row: the slots its tokens use and the unused tail
copy_bars        the dynamic layout: bytes torch.cat copied at each step, beside the cache's bytes
paged_pool       the block pool slot by slot: blocks coloured by owning sequence, the unused tail of each
                 sequence's last block, free blocks
sweep_lines      decode ms/token against the cached length, one line per layout, min-max whiskers
Labels arrive translated; nothing here knows about Streamlit or torch.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from llmviz.viz.style import finish, lean, legend_below

SEQ_COLORS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d", "#72b7b2")
LAYOUT_COLORS = {"contiguous": "#4c78a8", "dynamic": "#f58518", "paged": "#54a24b"}
FREE, WASTE, UNUSED = "#e9ecf2", "#f2a7a7", "#d9d9d9"
POOL_COLUMNS = 64  # slots per row of the pool picture (whole blocks)
POOL_ROWS = 16  # at most; more blocks make wider rows


def seq_color(i: int) -> str:
    return SEQ_COLORS[i % len(SEQ_COLORS)]


def binary_unit(largest: float) -> tuple[str, int]:
    """The binary unit the largest value reads best in (the app counts bytes as the article does: KiB, MiB)."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if largest >= size:
            return unit, size
    return "B", 1


def contiguous_rows(seq_lens: list[int], max_seq: int, row_labels: list[str], names: tuple[str, str],
                    title: str, x_title: str) -> go.Figure:
    """One bar per sequence over its row's max_seq slots: used (its colour) then the unused tail (grey)."""
    used = list(seq_lens)
    unused = [max_seq - n for n in used]
    fig = go.Figure()
    fig.add_bar(y=row_labels, x=used, orientation="h", name=names[0],
                marker_color=[seq_color(i) for i in range(len(used))],
                text=[str(n) for n in used], textposition="inside", insidetextanchor="start",
                hovertemplate="%{y}: %{x} " + names[0] + "<extra></extra>")
    fig.add_bar(y=row_labels, x=unused, orientation="h", name=names[1], marker_color=UNUSED,
                marker_pattern={"shape": "/", "fgcolor": "#bbbbbb"}, text=[str(n) for n in unused],
                textposition="inside", insidetextanchor="end",
                hovertemplate="%{y}: %{x} " + names[1] + "<extra></extra>")
    return finish(fig, title, height=110 + 34 * len(used), barmode="stack", showlegend=True,
                  xaxis={"title": {"text": x_title}, "range": [0, max_seq]},
                  yaxis={"autorange": "reversed"}, legend=legend_below(), plot_bgcolor="rgba(0,0,0,0)")


def copy_bars(steps: list[int], copied: list[int], cache_bytes: list[int], current: int, names: tuple[str, str],
              title: str, x_title: str, y_title: str) -> go.Figure:
    """Bytes torch.cat copied at each step (bars; the step shown outlined) and the cache's bytes after it
    (line): each step copies what the cache held before it. The axis is in KiB or MiB (named after y_title)."""
    unit, size = binary_unit(max([*copied, *cache_bytes, 1]))
    fig = go.Figure()
    widths = [3 if s == current else 0 for s in steps]
    fig.add_bar(x=steps, y=[c / size for c in copied], name=names[0], customdata=copied,
                marker={"color": LAYOUT_COLORS["dynamic"], "line": {"color": "#333333", "width": widths}},
                hovertemplate="%{x}: %{customdata:,} B<extra>" + names[0] + "</extra>")
    fig.add_scatter(x=steps, y=[c / size for c in cache_bytes], name=names[1], mode="lines+markers",
                    customdata=cache_bytes, line={"color": "#555555", "dash": "dot"},
                    hovertemplate="%{x}: %{customdata:,} B<extra>" + names[1] + "</extra>")
    return finish(fig, title, height=300, xaxis={"title": {"text": x_title}, "dtick": 1 if len(steps) <= 24 else None},
                  yaxis={"title": {"text": f"{y_title} ({unit})"}, "rangemode": "tozero"},
                  legend=legend_below())


def pool_grid(block_tables: list[list[int]], seq_lens: list[int], block_size: int, num_blocks: int) -> dict:
    """The pool slot by slot, blocks `per_row` to a row: category per slot (0 free, 1 the unused tail of a
    sequence's last block, 2 + i sequence i's tokens), the owner and position of each slot."""
    per_row = max(1, POOL_COLUMNS // block_size, math.ceil(num_blocks / POOL_ROWS))
    rows = math.ceil(num_blocks / per_row)
    cats = np.full((rows, per_row * block_size), np.nan)
    owner = np.full(cats.shape, -1)
    position = np.full(cats.shape, -1)
    for b in range(num_blocks):
        r, c = divmod(b, per_row)
        cats[r, c * block_size:(c + 1) * block_size] = 0
    for i, (table, n) in enumerate(zip(block_tables, seq_lens, strict=True)):
        for j, block in enumerate(table):
            r, c = divmod(block, per_row)
            for slot in range(block_size):
                pos = j * block_size + slot
                col = c * block_size + slot
                cats[r, col] = 2 + i if pos < n else 1
                owner[r, col], position[r, col] = i, pos
    return {"cats": cats, "owner": owner, "position": position, "per_row": per_row, "rows": rows}


def paged_pool(block_tables: list[list[int]], seq_lens: list[int], block_size: int, num_blocks: int,
               seq_labels: list[str], names: dict, title: str) -> go.Figure:
    """The block pool: one cell per token slot, one box per block (its id printed in its first slot);
    `names`: free, waste, block, slot, position, row (a format with {first} and {last})."""
    g = pool_grid(block_tables, seq_lens, block_size, num_blocks)
    cats, per_row = g["cats"], g["per_row"]
    k = 2 + len(block_tables)
    colors = [FREE, WASTE] + [seq_color(i) for i in range(len(block_tables))]
    scale = []
    for i, color in enumerate(colors):  # a stepped scale: category i (zmin -0.5, zmax k - 0.5) -> colors[i]
        scale += [[i / k, color], [(i + 1) / k, color]]
    text = np.full(cats.shape, "", dtype=object)
    hover = np.full(cats.shape, "", dtype=object)
    for r in range(g["rows"]):
        for col in range(cats.shape[1]):
            block = r * per_row + col // block_size
            if block >= num_blocks:
                continue
            slot = col % block_size
            if slot == 0:
                text[r, col] = str(block)
            who = g["owner"][r, col]
            if who < 0:
                hover[r, col] = f"{names['block']} {block} · {names['free']}"
            else:
                state = seq_labels[who] if cats[r, col] >= 2 else names["waste"]
                hover[r, col] = (f"{names['block']} {block} · {names['slot']} {slot} · {seq_labels[who]} · "
                                 f"{names['position']} {g['position'][r, col]} · {state}")
    y = [names["row"].format(first=r * per_row, last=min(num_blocks, (r + 1) * per_row) - 1) for r in range(g["rows"])]
    fig = go.Figure(go.Heatmap(z=cats, y=y, colorscale=scale, zmin=-0.5, zmax=k - 0.5, showscale=False, xgap=1,
                               ygap=4, text=text, texttemplate="%{text}", textfont={"size": 9, "color": "#333333"},
                               customdata=hover, hovertemplate="%{customdata}<extra></extra>"))
    width = cats.shape[1]
    for c in range(1, per_row):  # a white gap between blocks
        fig.add_shape(type="line", x0=c * block_size - 0.5, x1=c * block_size - 0.5, y0=-0.5, y1=g["rows"] - 0.5,
                      line={"color": "white", "width": 4})
    legend = [(names["free"], FREE), (names["waste"], WASTE)] + [(s, seq_color(i)) for i, s in enumerate(seq_labels)]
    for name, color in legend:  # legend entries only (the heatmap has none)
        fig.add_scatter(x=[None], y=[None], mode="markers", name=name, marker={"symbol": "square", "size": 12,
                                                                               "color": color})
    fig.update_xaxes(range=[-0.5, width - 0.5], visible=False)
    fig.update_yaxes(autorange="reversed", showgrid=False, zeroline=False)
    return finish(fig, title, height=130 + 26 * g["rows"], plot_bgcolor="rgba(0,0,0,0)",
                  legend=legend_below())


def sweep_lines(result: dict, names: dict, title: str, x_title: str, y_title: str, marks: dict) -> go.Figure:
    """Median decode ms/token against the cached length, one line per layout, min-max whiskers; the article's
    two ranges shaded (`marks`: {512: label of lengths up to it, 1024: label of lengths past it})."""
    fig = go.Figure()
    x = result["lengths"]
    for layout in result["layouts"]:
        v = result["ms_per_token"][layout]
        med = v["median"]
        fig.add_scatter(x=x, y=med, name=names[layout], mode="lines+markers",
                        line={"color": LAYOUT_COLORS.get(layout)},
                        error_y={"type": "data", "symmetric": False,
                                 "array": [hi - m for hi, m in zip(v["max"], med, strict=True)],
                                 "arrayminus": [m - lo for lo, m in zip(v["min"], med, strict=True)]},
                        hovertemplate="%{x}: %{y:.2f} ms<extra>" + names[layout] + "</extra>")
    short, long = sorted(marks)
    if x and min(x) <= short:
        fig.add_vrect(x0=0, x1=short, fillcolor=LAYOUT_COLORS["contiguous"], opacity=0.08, line_width=0,
                      annotation_text=marks[short], annotation_position="top left", annotation_font_size=11)
    if x and max(x) > long:
        fig.add_vrect(x0=long, x1=max(x), fillcolor=LAYOUT_COLORS["paged"], opacity=0.08, line_width=0,
                      annotation_text=marks[long], annotation_position="top right", annotation_font_size=11)
    return finish(fig, title, height=420, xaxis={"title": {"text": x_title}},
                  yaxis={"title": {"text": y_title}, "rangemode": "tozero"},
                  legend=legend_below())


def read_order(tables: dict[str, list[int]], names: dict[str, str], title: str, axes: tuple[str, str]) -> go.Figure:
    """The pool block each of a sequence's logical blocks lies in, in the order a decode step reads them, one line
    per block order ({order: its block table}): blocks in order climb at a fixed stride (the address a prefetcher
    predicts), scattered ones jump."""
    colors = {"in_order": seq_color(0), "scattered": seq_color(1)}
    traces = [{"type": "scatter", "x": list(range(len(table))), "y": list(table), "name": names[order],
               "mode": "lines+markers", "line": {"color": colors.get(order, "#888888")},
               "hovertemplate": f"{axes[0]} %{{x}} → {axes[1]} %{{y}}<extra></extra>"}
              for order, table in tables.items()]
    return lean(traces, title, 300, legend=legend_below(), plot_bgcolor="#fafbfd",
                xaxis={"title": {"text": axes[0]}}, yaxis={"title": {"text": axes[1]}})
