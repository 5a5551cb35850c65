"""The model map's diagram (issue 23): every part once with its real shape, the layer count, the highlights."""

from llmviz import service
from llmviz.analysis.memory_calc import bundled_text
from llmviz.analysis.model_map import PARTS, step_parts
from llmviz.viz.model_map import model_map_dot


def test_the_diagram_holds_every_part_with_its_shapes_and_the_layer_count():
    gpt2 = service.config_from_text(bundled_text("gpt2"))
    prefill, decode = step_parts(gpt2, 4), step_parts(gpt2, 1, cached=4)
    names = {name: name.upper() for name in PARTS} | {"norm1": "A<B & C"}
    dot = model_map_dot(prefill, decode, names, 12, "{n} x layer", highlight=("q", "cache"), decoding=True)
    # GPT-2: 12 heads of 64; a prompt of 4 then one token attending to 5 keys; the decode step's shapes in bold
    assert '"12 x layer"' in dot and "<SCORES<BR/>[12, 4, 4] | <B>[12, 1, 5]</B>>" in dot
    assert "<CACHE<BR/>[4, 12, 64] | <B>[5, 12, 64]</B>>" in dot and "<EMBED<BR/>[4, 768] | <B>[1, 768]</B>>" in dot
    assert "<A&lt;B &amp; C<BR/>" in dot  # a name is escaped for DOT's HTML labels
    assert dot.count("#ffd89b") == 2  # the two highlighted parts
    assert all(f"  {name} [label=" in dot for name in PARTS)
    prefilling = model_map_dot(prefill, decode, names, 12, "{n} x layer")
    assert "<EMBED<BR/><B>[4, 768]</B> | [1, 768]>" in prefilling
