"""The whole network with the real shapes of one step (the lesson's model map; C3-C6): embedding, each layer's norm,
Q/K/V, scores, KV cache, norm and MLP, the final norm and the head, for a step that feeds `new` tokens after
`cached` ones of one sequence. A prefill is new = the prompt, cached = 0; a decode step is new = 1.

Shapes are per sequence, in the article's order ([tokens, heads, head_dim] for Q, K, V and the cache; [heads,
queries, keys] for the scores). Pure arithmetic on a config dict (ModelConfig.to_dict()).
"""

from __future__ import annotations

from dataclasses import dataclass

PARTS = ("embed", "norm1", "q", "k", "v", "scores", "cache", "norm2", "mlp", "final_norm", "head")
LAYER_PARTS = ("norm1", "q", "k", "v", "scores", "cache", "norm2", "mlp")


@dataclass(frozen=True)
class Part:
    name: str  # one of PARTS
    shape: tuple[int, ...]


def step_parts(config: dict, new: int, cached: int = 0) -> list[Part]:
    """The parts of one step (every layer has the same shapes: one set stands for all of them)."""
    if new < 1 or cached < 0:
        raise ValueError(f"a step feeds at least one token after zero or more cached, got new={new}, cached={cached}")
    d, heads, kv, hd = config["hidden_size"], config["num_heads"], config["num_kv_heads"], config["head_dim"]
    keys = cached + new  # each new token attends to the cached ones and to the new ones up to itself
    return [Part("embed", (new, d)), Part("norm1", (new, d)), Part("q", (new, heads, hd)), Part("k", (new, kv, hd)),
            Part("v", (new, kv, hd)), Part("scores", (heads, new, keys)), Part("cache", (keys, kv, hd)),
            Part("norm2", (new, d)), Part("mlp", (new, config["intermediate_size"])), Part("final_norm", (new, d)),
            Part("head", (1, config["vocab_size"]))]  # only the last position predicts the next token


def shape_text(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"
