"""Figures built as plain specs without plotly's validation (style.lean) against plotly's own validator.

Each is passed once through the validating constructor, the independent source here: a misspelt property raises,
a value plotly would rewrite (a bare colour-scale name, which plotly.js reads as a different scale) comes back
changed. And each draws what it says: the outline over the columns a step wrote, the marker at the current
position, the drawn token in the highlight colour.
"""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly_data import array

from llmviz.viz import decode, kv_layouts, timing
from llmviz.viz.style import SCALES, lean

RNG = np.random.default_rng(0)
LABELS = [f"t{i}" for i in range(80)]
KEPT = np.array([1, 1, 0, 1, 0, 0, 1, 1, 1, 0], bool)

GROWTH_MS = {"median": [0.2, 0.5, 1.9], "min": [0.1, 0.4, 1.5], "max": [0.3, 0.7, 2.2]}

CASES = {
    "q": lambda: decode.vector_heatmap(RNG.standard_normal((4, 64)), "head", "head_dim", "Q", "value"),
    "attention, labelled": lambda: decode.attention_row(RNG.random((4, 30)), LABELS, 0, "head", "t", "weight"),
    "attention, numbered": lambda: decode.attention_row(RNG.random((4, 60)), LABELS, 5, "head", "t", "weight"),
    "kv grid": lambda: decode.kv_grid(RNG.random((2, 30)), 1, LABELS, "kv head", "t"),
    "next token, top drawn": lambda: decode.next_token_bars(LABELS[:10], RNG.random(10), RNG.random(10), KEPT, 0,
                                                            ("raw", "shaped", "drawn"), "t"),
    "next token, none drawn": lambda: decode.next_token_bars(LABELS[:10], RNG.random(10), RNG.random(10), KEPT,
                                                             None, ("raw", "shaped", "drawn"), "t"),
    "logit lens": lambda: decode.logit_lens([[f"p{i}{j}" for j in range(5)] for i in range(4)], RNG.random((4, 5)),
                                            "layer", "t"),
    "latency, fit and marker": lambda: decode.latency(np.arange(30), RNG.random(30), 29, (0.1, 1.0), 2,
                                                      ("ms", "warm-up", "fit"), ("pos", "ms"), "t"),
    "latency, bare": lambda: decode.latency(np.arange(3, 9), RNG.random(6), None, None, 0, ("ms", "warm-up", "fit"),
                                            ("pos", "ms"), "t"),
    "latency sweep": lambda: decode.latency_sweep([64, 128, 256], [1.0, 1.2, 1.5], [0.9, 1.1, 1.4],
                                                  [1.1, 1.3, 1.7], (0.002, 0.9), ("median", "fit"), ("n", "ms"), "t"),
    "growth": lambda: timing.growth_lines([32, 64, 128], {p: GROWTH_MS for p in ("attention", "projection")},
                                          {"attention": "a", "projection": "p"}, {"attention": "n²", "projection": "n"},
                                          "t", ("n", "ms")),
    "read order": lambda: kv_layouts.read_order({"in_order": [0, 1, 2], "scattered": [7, 2, 11]},
                                                {"in_order": "a", "scattered": "b"}, "t", ("x", "y")),
    "spans": lambda: timing.span_bars(["embed", "layer 0", "head"], [0.1, 2.0, 0.3], "t", "ms"),
}


def spec(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig.to_dict(), validate=False))


def validates_unchanged(fig: go.Figure) -> bool:
    try:
        return spec(go.Figure(**fig.to_dict())) == spec(fig)
    except ValueError:  # plotly's word for a property it does not know
        return False


@pytest.mark.parametrize("case", sorted(CASES))
def test_plotly_s_validator_changes_nothing(case):
    assert validates_unchanged(CASES[case]())


@pytest.mark.parametrize("bad", [{"type": "heatmap", "z": [[1]], "colorscale": "RdBu"},  # plotly.js reads it otherwise
                                 {"type": "heatmap", "z": [[1]], "colorbr": {}}])  # misspelt
def test_the_check_catches_what_lean_lets_through(bad):
    assert not validates_unchanged(lean([bad], "t", 200))  # lean itself takes anything


def test_named_scales_are_plotly_py_s_not_plotly_js_s():
    assert SCALES["RdBu"][0] == (0.0, "rgb(103,0,31)") and SCALES["RdBu"][-1] == (1.0, "rgb(5,48,97)")  # red to blue


def test_the_kv_grid_outlines_the_columns_this_step_wrote():
    fig = spec(decode.kv_grid(RNG.random((2, 9)), 4, LABELS, "kv head", "t"))
    rect = fig["layout"]["shapes"][0]
    assert (rect["x0"], rect["x1"], rect["y0"], rect["y1"]) == (4.5, 8.5, -0.5, 1.5)  # positions 5..8, both heads
    assert array(fig["data"][0]["z"]).shape == (2, 9)


def test_the_latency_marker_stands_at_the_current_position():
    fig = spec(CASES["latency, fit and marker"]())
    line = fig["layout"]["shapes"][0]
    assert (line["x0"], line["x1"], line["yref"]) == (29, 29, "y domain")
    warm, timed, fit = fig["data"]
    assert list(array(warm["x"])) == [0, 1] and list(array(timed["x"])) == list(range(2, 30))
    assert array(fit["y"]) == pytest.approx([0.1 * 2 + 1.0, 0.1 * 29 + 1.0])
    assert "shapes" not in spec(CASES["latency, bare"]())["layout"]


def test_the_drawn_token_is_highlighted_and_excluded_ones_greyed():
    fig = spec(CASES["next token, top drawn"]())
    colors = fig["data"][1]["marker"]["color"]
    assert colors[0] == decode.HIGHLIGHT
    assert [c == decode.EXCLUDED for c in colors[1:]] == [not k for k in KEPT[1:]]
