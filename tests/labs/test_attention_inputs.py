"""The inputs claim K6 times the attention backends on (llmviz/labs/attention_inputs.py): what the forward pass
itself hands a layer, checked against that pass's own hook records."""

import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.labs.attention_inputs import attention_inputs
from llmviz.trace.config import EngineConfig, SamplingConfig

PROMPT = "This module provides functions for working with files and directories"


@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "gpt2", "mistral"])
def test_attention_inputs_are_what_the_forward_pass_hands_a_layer(model_dirs, kind):
    """labs.attention_inputs (claim K6 times the backends on them): a layer's q, k, v equal the forward
    pass's own hook records of that layer (rotary applied for the Llama family, the sliding window's mask for
    Mistral), and the backend on them, through the layer's o_proj, gives the layer's recorded attn_out."""
    import numpy as np
    import torch

    from llmviz.engine.capture import RunContext
    from llmviz.engine.models.attention import ATTENTION_BACKENDS
    from llmviz.errors import ConfigError

    lm = load_model(str(model_dirs[kind]))
    cfg = EngineConfig(capture="full", attn_backend="eager", sampling=SamplingConfig(temperature=0))
    session = Session(lm, PROMPT, cfg)
    step = session.step()
    ids = torch.tensor([session.sequences[0].ids[:step.hook("layers.0.q").shape[2]]])
    layer = lm.cfg.num_layers - 1
    with torch.inference_mode():
        q, k, v, mask = attention_inputs(lm.model, ids, layer, backend="eager")
        attn = lm.model.layers[layer].attn
        out = ATTENTION_BACKENDS.get("eager")(q, k, v, mask, attn.scale, attn.names, RunContext())
        attn_out = attn.o_proj(out.transpose(1, 2).reshape(1, ids.shape[1], -1))
    n, c = ids.shape[1], lm.cfg
    assert q.shape == (1, c.num_heads, n, c.head_dim) and k.shape == v.shape == (1, c.num_kv_heads, n, c.head_dim)
    for name, got in (("q", q), ("k", k), ("v", v), ("attn_out", attn_out)):
        want = step.hook(f"layers.{layer}.{name}").array
        np.testing.assert_allclose(got.float().numpy(), want, atol=1e-5, rtol=1e-4, err_msg=f"{kind} {name}")
    with pytest.raises(ConfigError, match="layer must be"):
        attention_inputs(lm.model, ids, c.num_layers)
