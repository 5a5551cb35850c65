"""The Layer page: one layer at one step from the recorded hooks, checked against the model's
own weights and config, in both languages."""

import json
import re

import numpy as np
from ui_helpers import open_app, page_file

from llmviz.i18n.translator import translate
from llmviz.ui.state import RUN_KEY


def chart(at, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}")).proto.spec)


def values(trace: dict) -> np.ndarray:
    from plotly_data import array

    return np.asarray(array(trace["y"]), dtype=np.float64)


def test_layer_page_against_the_weights(model_dirs):
    """Layer 1 of the Qwen2 test model at the prefill: the stream's input line is ‖layer 0's output‖; the
    'after the attention norm' line is ‖w ⊙ x / rms(x)‖ computed here from the norm's weight; the MLP's shapes
    are those of the config; resid = x + attn_out + mlp_out is stated to within 1e-4."""
    from llmviz.engine.loading.model import load_model

    folder = model_dirs["qwen2"]
    at = open_app(page_file("layer"), model=folder, prompt="The quick brown fox jumps", device="cpu")
    at.select_slider(key="layer_layer").set_value(1).run()
    assert not at.exception
    run = at.session_state[RUN_KEY]
    step, c = run.step, run.trace.model_card["config"]
    x = step.hook("layers.0.resid").array[0].astype(np.float64)  # [n, d]
    stream = chart(at, "layer_stream")["data"]
    assert np.allclose(values(stream[0]), np.linalg.norm(x, axis=-1), rtol=1e-5)
    lm = load_model(str(folder), device="cpu")
    block = lm.model.layers[1]
    w = block.attn_norm.weight.detach().double().numpy()
    eps = c["norm_eps"]
    want = np.linalg.norm(w * x / np.sqrt((x**2).mean(-1, keepdims=True) + eps), axis=-1)
    norms = chart(at, "layer_norms")["data"]
    assert np.allclose(values(norms[1]), want, rtol=1e-4)
    n = len(run.trace.prompt_ids)
    text = " ".join(m.value for m in at.markdown)
    assert f"`[{n}, {c['hidden_size']}] → [{n}, {c['intermediate_size']}] → [{n}, {c['hidden_size']}]`" in text
    stated = re.search(r"the layer's output to ([0-9.e+-]+)\.", text)
    assert stated and float(stated.group(1)) <= 1e-4, text
    from plotly_data import array

    assert np.asarray(array(chart(at, "layer_act")["data"][0]["x"])).size == n * c["intermediate_size"]


def test_layer_page_in_chinese_and_at_a_decode_step():
    at = open_app(page_file("layer"), lang="zh", step=2, device="cpu")
    assert not at.exception and not at.warning
    assert at.session_state[RUN_KEY].cursor == 2
    texts = " ".join(m.value for m in at.markdown)
    assert "形状：`[1, " in texts  # a decode step feeds one token
    assert translate("zh", "layer.stream_header") in [h.value for h in at.header]
