"""The hook-names helper (hooks.q(3)) and the fields that replaced string matching: a record says whether
its attention map was recomputed; old traces that said so only in the note still read that way."""

import json

import numpy as np
import pytest

from llmviz.errors import ConfigError
from llmviz.trace import hooks
from llmviz.trace.records import load_trace


def test_every_layer_point_has_a_helper_that_spells_the_declared_name():
    for point in hooks.LAYER_POINTS:
        helper = getattr(hooks, point.name)
        assert helper(3) == f"layers.3.{point.name}"  # the spelling the UI, the traces and the docs use
        assert hooks.declared_point(helper(3)) is point
    names = hooks.all_hook_names(2)
    assert hooks.every_layer("probs", 2) == [n for n in names if n.endswith(".probs")] == ["layers.0.probs",
                                                                                         "layers.1.probs"]
    assert hooks.layer_of("layers.12.probs") == 12 and hooks.layer_of("embed") is None
    assert hooks.layer_of("layers.x.q") is None and hooks.layer_of("kv.write") is None
    assert hooks.layer_input(0) == "embed" and hooks.layer_input(2) == "layers.1.resid"
    with pytest.raises(ConfigError, match="not a layer hook point"):
        hooks.every_layer("logits", 2)


def test_the_helpers_and_a_layers_names_are_built_from_the_one_table():
    """Issue 37: the layer points are written once (LAYER_POINTS); a layer's names and the helpers follow it, and a
    name that is not a layer point is no helper."""
    from dataclasses import fields

    assert [f.name for f in fields(hooks.LayerHookNames)] == [p.name for p in hooks.LAYER_POINTS]
    names = hooks.LayerHookNames.for_layer(5)
    assert names.q == "layers.5.q" and names.mlp_act == "layers.5.mlp_act" and names.resid == hooks.resid(5)
    from llmviz.trace.hooks import probs  # a from-import reads the same table

    assert probs(7) == "layers.7.probs"
    for missing in ("logits", "embed", "qq"):  # global points and unknown names have no layer helper
        with pytest.raises(AttributeError):
            getattr(hooks, missing)


@pytest.fixture(scope="module")
def maps():
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig, SamplingConfig

    lm = load_model("llmviz-tiny")
    out = {}
    for backend in ("eager", "sdpa"):
        cfg = EngineConfig(attn_backend=backend, capture="full", capture_filter=("layers.0.*",),
                           sampling=SamplingConfig(temperature=0), max_seq_len=32)
        out[backend] = Session(lm, "The list of", cfg).generate(2)
    return out


def test_a_map_the_backend_never_built_says_so_in_a_field(maps):
    for step in maps["eager"].steps:  # eager materializes softmax(QK^T/sqrt(d)) itself
        assert not step.hook(hooks.probs(0)).recomputed and not step.hook(hooks.scores(0)).recomputed
    for step in maps["sdpa"].steps:  # SDPA returns only the output: the map is rebuilt from q and k
        assert step.hook(hooks.probs(0)).recomputed and step.hook(hooks.scores(0)).recomputed
        assert not step.hook(hooks.q(0)).recomputed
    # the rebuilt map is the map eager computed (same weights, same tokens): recomputing changes no value
    a, b = (maps[x].steps[0].hook(hooks.probs(0)).array for x in ("eager", "sdpa"))
    assert np.allclose(a, b, atol=1e-5)


def test_the_field_survives_a_file_and_an_older_file_reads_it_from_the_note(maps, tmp_path):
    folder = maps["sdpa"].save(tmp_path / "new")
    back = load_trace(folder)
    assert back.steps[1].hook(hooks.probs(0)).recomputed and not back.steps[1].hook(hooks.q(0)).recomputed
    doc = json.loads((folder / "trace.json").read_text())
    for step in doc["steps"]:  # a schema 3 file written before the field: the note alone said it
        for meta in step["hooks"]:
            meta.pop("recomputed")
    (folder / "trace.json").write_text(json.dumps(doc))
    old = load_trace(folder)
    assert old.steps[1].hook(hooks.probs(0)).recomputed and not old.steps[1].hook(hooks.q(0)).recomputed
