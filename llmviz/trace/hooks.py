"""Every hook point of the forward pass, declared once for every model family.

A hook point is a name, a shape with named dimensions and a meaning. The forward pass calls them
through the per-run context (`RunContext.hook`), never through `register_forward_hook` on a shared
module. No torch here: the UI reads these declarations to label what it draws.

Dimension names: b batch, n new tokens this step (queries), n_k keys attended (the cache length after the
write; in a decode step of a sliding-window layer, only the last `window` keys are read, so n_k is at most
the window, while a prefill keeps all n keys and masks those outside the window), d d_model, h query heads, kv KV heads,
hd head_dim, f the MLP's hidden width (intermediate_size), pos_dim position-scheme width (d for learned
tables, hd/2 RoPE angles), V vocab,
L layers.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, make_dataclass
from functools import partial

from llmviz.errors import ConfigError


@dataclass(frozen=True)
class HookPoint:
    name: str  # "embed", or "layers.{i}.q" as a template
    dims: tuple  # named dimensions, e.g. ("b", "h", "n", "hd")
    meaning: str
    concept: str  # the concept id of ../shared/concepts.md it shows


GLOBAL_POINTS = (
    HookPoint("embed", ("b", "n", "d"), "token embeddings looked up for the step's input ids", "C2"),
    HookPoint("pos", ("b", "n", "pos_dim"),
              "position scheme: learned position vectors added to the embeddings, or the RoPE rotation "
              "angle (radians) of each position and dimension pair", "C2"),
    HookPoint("kv.write", ("L", "2", "b", "kv", "n", "hd"),
              "the K and V rows written into the cache this step, for every layer", "C6"),
    HookPoint("final_norm", ("b", "1", "d"),
              "the residual stream after the final norm, at the last position (the one that predicts)", "C3"),
    HookPoint("logits", ("b", "V"), "next-token logits at the last position", "C5"),
    HookPoint("sample", ("b",), "the token id the sampler picked", "C5"),
)

LAYER_POINTS = (
    HookPoint("attn_in", ("b", "n", "d"), "the layer's input after the attention norm", "C3"),
    HookPoint("q", ("b", "h", "n", "hd"), "queries, after RoPE where the model uses it", "C3"),
    HookPoint("k", ("b", "kv", "n", "hd"), "keys of the new tokens (after RoPE, not repeated for GQA)", "C3"),
    HookPoint("v", ("b", "kv", "n", "hd"), "values of the new tokens (not repeated for GQA)", "C3"),
    HookPoint("scores", ("b", "h", "n", "n_k"),
              "QK^T / sqrt(hd) before softmax; masked positions (future tokens, outside the window) are -inf",
              "C3"),
    HookPoint("probs", ("b", "h", "n", "n_k"), "softmax of the scores: the attention map", "C3"),
    HookPoint("attn_out", ("b", "n", "d"), "attention output after the output projection", "C3"),
    HookPoint("mlp_in", ("b", "n", "d"), "the MLP's input: the residual stream after attention, after the MLP norm",
              "C3"),
    HookPoint("mlp_act", ("b", "n", "f"),
              "the MLP's hidden activation, the input of its down projection: act(gate(x)) * up(x) (SwiGLU) or "
              "act(fc(x)) (GPT-2)", "C3"),
    HookPoint("mlp_out", ("b", "n", "d"), "MLP output", "C3"),
    HookPoint("resid", ("b", "n", "d"), "the residual stream leaving the layer", "C3"),
)


def layer_hook_name(layer: int, point: str) -> str:
    """The concrete name of a layer point: layer_hook_name(3, "q") == "layers.3.q". The one place it is spelled."""
    return f"layers.{layer}.{point}"


LAYER_POINT_NAMES = tuple(p.name for p in LAYER_POINTS)  # the one table the names below are built from


def _for_layer(cls, layer: int):
    return cls(**{name: layer_hook_name(layer, name) for name in LAYER_POINT_NAMES})


# The concrete names of one layer's hook points, built once per layer (not per call): a field per LAYER_POINTS entry.
LayerHookNames = make_dataclass("LayerHookNames", [(name, str) for name in LAYER_POINT_NAMES], frozen=True,
                                namespace={"for_layer": classmethod(_for_layer)})


def __getattr__(name: str):
    """The names helper every layer uses, one per LAYER_POINTS entry: hooks.q(3) == "layers.3.q", never a hand-built
    f-string (PEP 562: built from the table, not written out once more)."""
    if name in LAYER_POINT_NAMES:
        return partial(_point_name, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _point_name(point: str, layer: int) -> str:
    return layer_hook_name(layer, point)


def layer_input(layer: int) -> str:
    """The name of what enters layer `layer`: the embeddings for layer 0, else the residual leaving the one before."""
    return "embed" if layer == 0 else layer_hook_name(layer - 1, "resid")


def layer_of(name: str) -> int | None:
    """The layer a concrete hook name belongs to (`layers.3.q` -> 3); None for a global point (`embed`)."""
    parts = name.split(".")
    return int(parts[1]) if len(parts) == 3 and parts[0] == "layers" and parts[1].isdigit() else None


def point_of(name: str) -> str:
    """The declared point a concrete hook name is an instance of: `layers.3.q` -> "q", `kv.write` -> "kv.write"."""
    return name.rsplit(".", 1)[1] if layer_of(name) is not None else name


def every_layer(point: str, num_layers: int) -> list[str]:
    """One layer point's names in every layer: every_layer("probs", 2) == ["layers.0.probs", "layers.1.probs"]."""
    if point not in LAYER_POINT_NAMES:
        raise ConfigError(f"{point!r} is not a layer hook point (see llmviz/trace/hooks.py)")
    return [layer_hook_name(i, point) for i in range(num_layers)]


def all_hook_names(num_layers: int) -> list[str]:
    """Every hook name a forward pass of a model with `num_layers` layers emits, in call order."""
    names = ["embed", "pos"]
    for layer in range(num_layers):
        names += [layer_hook_name(layer, p.name) for p in LAYER_POINTS]
    return [*names, "kv.write", "final_norm", "logits", "sample"]


CACHE_ROW_POINTS = ("k", "v")  # the layer points whose rows the KV cache stores (the cache grid draws them)


def writes_cache_rows(name: str) -> bool:
    """Whether a concrete hook name holds rows the KV cache stores (`layers.3.k`, `layers.3.v`)."""
    parts = name.split(".")
    return len(parts) == 3 and parts[0] == "layers" and parts[1].isdigit() and parts[2] in CACHE_ROW_POINTS


def declared_point(name: str) -> HookPoint:
    """The declaration behind a concrete name (`layers.3.q` -> the `q` layer point)."""
    for point in GLOBAL_POINTS:
        if point.name == name:
            return point
    parts = name.split(".")
    if len(parts) == 3 and parts[0] == "layers" and parts[1].isdigit():
        for point in LAYER_POINTS:
            if point.name == parts[2]:
                return point
    raise ConfigError(f"{name!r} is not a declared hook point (see llmviz/trace/hooks.py)")


def matches(name: str, patterns: tuple) -> bool:
    """Whether a hook name passes a capture filter of glob patterns (empty filter = everything)."""
    return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)
