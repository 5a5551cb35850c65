"""Every chart reaches the browser through ui/charts.chart: a figure past the limit is never sent, and
the page says so. The cheap bound it checks first must never be below what plotly really serialises, or a chart too
large would slip through: checked against plotly.io.to_json itself on figures shaped like the app's (strings with
quotes, Chinese, control characters; numpy arrays of numbers and of strings; lean dict specs)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from llmviz.ui.charts import figure_bound

ROOT = Path(__file__).resolve().parents[2]

FIGURES = {
    "heatmap of text": go.Figure(go.Heatmap(z=np.random.default_rng(0).random((40, 60)),
                                            text=[[f"济南 \"{i}\"\n\t" for i in range(60)]] * 40)),
    "bars with html": go.Figure(go.Bar(x=["a\"b", "<b>c</b>", "\u0001"], y=[1, 2, 3])).update_layout(title="标题"),
    "numpy strings": go.Figure(go.Scatter(x=np.arange(500), y=np.arange(500.0) / 7, text=np.array(["冬天"] * 500))),
    "lean spec": {"data": [{"type": "scatter", "x": list(range(2000)), "y": np.linspace(0, 1, 2000),
                            "hovertemplate": "%{x}<extra></extra>"}], "layout": {"title": {"text": "t ↵ ␣"}}},
    "empty": go.Figure(),
}


@pytest.mark.parametrize("name", FIGURES)
def test_the_bound_is_never_below_plotlys_own_json(name):
    fig = FIGURES[name]
    assert figure_bound(fig) >= len(pio.to_json(fig, validate=False))


def test_no_page_sends_a_chart_around_the_check():
    sources = [*ROOT.glob("app_pages/*.py"), *ROOT.glob("llmviz/ui/**/*.py")]
    direct = [f"{p.relative_to(ROOT)}:{i}" for p in sources if p.name != "charts.py"
              for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
              if re.search(r"\bst\.plotly_chart\(", line)]
    assert direct == []


def test_a_fitted_chart_is_never_taller_than_asked():
    """The lesson draws its panel's charts at most CHART_PX tall: a taller figure is lowered, a lower one
    and one outside `fitted` are left as built, and a plain spec is capped like a figure."""
    import plotly.graph_objects as go

    from llmviz.ui.charts import _MOST_HEIGHT, capped, fitted

    tall, low = go.Figure(layout={"height": 620}), go.Figure(layout={"height": 200})
    assert capped(tall, None).layout.height == 620
    with fitted(300):
        assert capped(tall, _MOST_HEIGHT.get()).layout.height == 300
        assert capped(low, _MOST_HEIGHT.get()).layout.height == 200
        assert capped({"data": []}, _MOST_HEIGHT.get())["layout"]["height"] == 300  # no height: plotly's 450
    assert _MOST_HEIGHT.get() is None  # reset on leaving
