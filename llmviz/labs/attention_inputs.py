"""What one layer's attention backend is handed, for claim K6 (the article's "replace the original attention
computation: flash_attention(q, k, v)", §3.1): the labs time the backends alone on these inputs. A measurement's
helper, so it lives here rather than in the engine's model; it runs the model's own pieces (its
embedding, its blocks, the layer's projections), so the inputs are the forward pass's, which a test checks."""

from __future__ import annotations

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.models.transformer import DecoderModel
from llmviz.engine.step_batch import layer_windows, whole_sequence
from llmviz.errors import ConfigError


@torch.inference_mode()
def layer_input(model: DecoderModel, ids: torch.Tensor, layer: int = 0, backend: str = "sdpa"):
    """What layer `layer`'s attention starts from for the whole sequence ids [b, n] (positions 0..n-1, no cache):
    the normed hidden state [b, n, d], the rope tables and the StepMask, and the layer's block. Only the layers
    before it run."""
    if not 0 <= layer < model.cfg.num_layers:
        raise ConfigError(f"layer must be 0..{model.cfg.num_layers - 1}, got {layer}")
    step = whole_sequence(ids, backend, layer_windows(model.cfg))
    ctx = RunContext()
    x, rope = model.embed_step(step.ids, step.positions, ctx)
    for i, block in enumerate(model.layers[:layer]):
        x = block(x, rope, None, step, step.masks[step.layer_windows[i]], ctx)
    block = model.layers[layer]
    return block, block.attn_norm(x), rope, step.masks[step.layer_windows[layer]]


@torch.inference_mode()
def attention_inputs(model: DecoderModel, ids: torch.Tensor, layer: int = 0, backend: str = "sdpa"):
    """Layer `layer`'s attention inputs for the whole sequence ids [b, n]: q [b, h, n, hd], keys and values
    [b, kv, n, hd] and the StepMask (layer_input, then the layer's projections)."""
    block, x, rope, mask = layer_input(model, ids, layer, backend)
    q, k, v = block.attn.qkv(x, rope)
    return q, k, v, mask
