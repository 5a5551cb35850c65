"""The model map's diagram (issue 23): every part once with its real shape, the layer count, the highlights."""

from llmviz import service
from llmviz.analysis.memory_calc import bundled_text
from llmviz.analysis.model_map import PARTS, step_parts
from llmviz.viz.model_map import model_map_dot


def test_the_diagram_holds_every_part_with_its_shape_and_the_layer_count():
    gpt2 = service.config_from_text(bundled_text("gpt2"))
    parts = step_parts(gpt2, 1, cached=4)
    dot = model_map_dot(parts, {name: name.upper() for name in PARTS}, 12, "{n} x layer", highlight=("q", "cache"))
    assert '"12 x layer"' in dot and "SCORES\\n[12, 1, 5]" in dot and "CACHE\\n[5, 12, 64]" in dot
    assert dot.count("#ffd89b") == 2  # the two highlighted parts
    assert all(f"  {name} [label=" in dot for name in PARTS)
