"""No figure draws a link: plotly.js turns `<a href=...>` in any text into a live link, and a model name,
a token or a request's name from a file or a link reaches titles, ticks, labels and hovers. The shared layout
(style.finish, style.lean) writes every link tag as text; plotly's other tags stay."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from llmviz.viz.style import finish, lean, unlinked

EVIL = "<a href='https://evil.example'>x</a>"
SHOWN = "&lt;a href='https://evil.example'>x&lt;/a>"  # by hand: each tag's `<` as an entity, plotly shows it typed


def test_unlinked_by_hand():
    assert unlinked(EVIL) == SHOWN
    assert unlinked("<A HREF=x>") == "&lt;A HREF=x>"
    assert unlinked(["<br>", "<b>b</b>", "<span style='c'>s</span>", "<abbr>", "%{x}<extra></extra>"]) == [
        "<br>", "<b>b</b>", "<span style='c'>s</span>", "<abbr>", "%{x}<extra></extra>"]
    assert unlinked({"t": (1, EVIL)}) == {"t": [1, SHOWN]}
    grid = unlinked(np.array([[EVIL, "ok"]]))
    assert grid.tolist() == [[SHOWN, "ok"]]  # a text array widens: nothing cut off
    numbers = np.arange(4.0)
    assert unlinked(numbers) is numbers


def test_finish_and_lean_draw_no_link():
    fig = finish(go.Figure(go.Scatter(x=[0, 1], y=[0, 1], text=[EVIL, "ok"], hovertext=[EVIL, "ok"])), EVIL, 300,
                 xaxis={"tickmode": "array", "tickvals": [0], "ticktext": [EVIL]})
    assert fig.layout.title.text == SHOWN and fig.data[0].text == (SHOWN, "ok")
    assert fig.data[0].hovertext == (SHOWN, "ok") and fig.layout.xaxis.ticktext == (SHOWN,)
    fig = lean([{"type": "heatmap", "z": [[1]], "customdata": np.array([[EVIL]]), "hovertemplate": "%{customdata}"}],
               f"model {EVIL}", 300)
    assert fig.layout.title.text == f"model {SHOWN}" and fig.data[0].customdata.tolist() == [[SHOWN]]
    assert "href='https" not in fig.to_json().replace("&lt;a href='https", "")
