"""The model map's drawing: every part once with its prefill and decode shapes, the current step's in
bold, the layer count, the highlights; labels escaped; a valid SVG document."""

import xml.etree.ElementTree as ET

import pytest

from llmviz import service
from llmviz.analysis.memory_calc import bundled_text
from llmviz.analysis.model_map import PARTS, step_parts
from llmviz.viz.model_map import HIGHLIGHT, model_map_svg

SVG = "{http://www.w3.org/2000/svg}"


def parts_of(svg: str) -> dict[str, list[str]]:
    """{part: its text lines} read back from the SVG as XML."""
    root = ET.fromstring(svg)
    return {g.get("data-part"): ["".join(t.itertext()) for t in g.iter(f"{SVG}text")] for g in root.iter(f"{SVG}g")}


def bold(svg: str) -> set[str]:
    """The texts drawn in bold: the current step's shapes."""
    return {"".join(t.itertext()) for t in ET.fromstring(svg).iter(f"{SVG}text") if t.get("font-weight") == "bold"}


def test_the_drawing_holds_every_part_with_its_shapes_and_the_layer_count():
    gpt2 = service.models.config_from_text(bundled_text("gpt2"))
    prefill, decode = step_parts(gpt2, 4), step_parts(gpt2, 1, cached=4)
    names = {name: name.upper() for name in PARTS} | {"norm1": "A<B & C"}
    svg = model_map_svg(prefill, decode, names, 12, "{n} x layer", highlight=("q", "cache"), decoding=True)
    shown = parts_of(svg)
    assert sorted(shown) == sorted(PARTS)
    # GPT-2: 12 heads of 64; a prompt of 4, then one token attending to 5 keys
    assert shown["scores"] == ["SCORES", "[12, 4, 4]", "[12, 1, 5]"]  # prefill over decode
    assert shown["cache"] == ["CACHE", "[4, 12, 64]", "[5, 12, 64]"]
    assert shown["embed"] == ["EMBED", "[4, 768]", "[1, 768]"] and shown["head"] == ["HEAD", "[1, 50257]", "[1, 50257]"]
    assert shown["norm1"][0] == "A<B & C"  # escaped in the file, itself when read back
    lit = {g.get("data-part") for g in ET.fromstring(svg).iter(f"{SVG}g") if any(e.get("fill") == HIGHLIGHT for e in g)}
    assert "12 x layer" in svg and lit == {"q", "cache"}  # the two highlighted parts
    assert bold(svg) == {"[1, 768]", "[1, 12, 64]", "[12, 1, 5]", "[5, 12, 64]", "[1, 3072]", "[1, 50257]"}
    prefilling = model_map_svg(prefill, decode, names, 12, "{n} x layer")
    assert bold(prefilling) == {"[4, 768]", "[4, 12, 64]", "[12, 4, 4]", "[4, 3072]", "[1, 50257]"}


def test_both_phases_must_hold_every_part():
    gpt2 = service.models.config_from_text(bundled_text("gpt2"))
    with pytest.raises(ValueError, match="must each hold"):
        model_map_svg(step_parts(gpt2, 4)[:-1], step_parts(gpt2, 1, 4), {n: n for n in PARTS}, 12, "{n}")
