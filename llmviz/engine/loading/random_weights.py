"""Built-in models with random weights: a model's shape from a config.json in assets/, its weights drawn
at load (seeded), its tokenizer borrowed from the embedded model. Nothing to download (C7, C10, C14).

The optimization lab measures speed and memory on them where the embedded model is too small for an
effect to rise above Python's per-step overhead: `gpt2-124m-random` is GPT-2-124M's shape with a
2,048-token context. Their text is noise; their timings, bytes and drift are real.
"""

from __future__ import annotations

import math

import torch

from llmviz.trace.config import RANDOM_MODELS  # folders in assets/ holding a config.json and no weights
from llmviz.trace.model_config import ModelConfig

__all__ = ["RANDOM_MODELS", "TOKENIZER_OF_RANDOM", "random_state"]
from llmviz.engine.models.transformer import DecoderModel

TOKENIZER_OF_RANDOM = "llmviz-tiny"  # its ids (< 4,096) fit every random model's vocabulary
INIT_STD = 0.02  # GPT-2's and Llama's initializer_range
SEED = 0


def random_state(cfg: ModelConfig, seed: int = SEED) -> dict[str, torch.Tensor]:
    """Weights under our parameter names, initialized as GPT-2 is: N(0, 0.02) for matrices, with the
    projections that write into the residual stream scaled by 1/sqrt(2 layers); norms 1, biases 0."""
    gen = torch.Generator().manual_seed(seed)
    with torch.device("meta"):
        shapes = {name: t.shape for name, t in DecoderModel(cfg).state_dict().items()}
    if cfg.tie_embeddings:
        shapes.pop("lm_head.weight", None)
    residual_std = INIT_STD / math.sqrt(2 * cfg.num_layers)
    state = {}
    for name, shape in shapes.items():
        if "norm" in name:
            state[name] = torch.ones(shape) if name.endswith("weight") else torch.zeros(shape)
        elif name.endswith("bias"):
            state[name] = torch.zeros(shape)
        else:
            std = residual_std if name.endswith(("o_proj.weight", "down_proj.weight", "mlp.proj.weight")) else INIT_STD
            state[name] = torch.randn(shape, generator=gen) * std
    return state
