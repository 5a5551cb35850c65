"""The lesson's map of one step: only the tensors that step is about, with the live shapes of the
student's run, prefill's beside decode's where the step contrasts them (C5: [n, d] then [1, d]), the KV cache
growing across the first decode steps (C6), and the bytes a decode step reads (C7, C18). The whole network with
every part stays in analysis/model_map.py; this is the step's slice of it, different on every step.

A map is built from the step's recipe (its declaration's, analysis/lesson_plan.Step.map, or on a claim's step the
claim's): the parts it draws on each side, read from model_map.step_parts, so the two maps never disagree on a
shape. Pure arithmetic on a config dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from llmviz.analysis.model_map import PARTS, step_parts
from llmviz.analysis.predict import (
    Setup,
    Shape,
    block_matrices,
    format_of,
    kv_bytes_per_token,
    kv_read_bytes,
    weight_read_bytes,
)
from llmviz.errors import ConfigError

SIDES = ("prefill", "decode")


@dataclass(frozen=True)
class Block:
    name: str  # "ids", "embed", "q", "k", "v", "scores", "cache", "weights", "head": a catalogue key's last part
    shape: tuple[int, ...]
    side: str  # "prefill" (the prompt's step) or "decode" (a step after it)
    nbytes: int | None = None  # where the step is about bytes: the cache's (one layer) or the weights'
    dtype: str | None = None  # the bytes' number format, where the step compares formats

    def __post_init__(self):
        if self.side not in SIDES or not self.shape or min(self.shape) < 1:
            raise ValueError(f"a block on a side in {SIDES} with a positive shape, got {self.side!r} {self.shape}")

    @property
    def rows(self) -> int:
        """The token axis: what prefill and decode differ in (the cache's length; the scores' queries)."""
        return self.shape[1] if self.name == "scores" else self.shape[0]

    @property
    def columns(self) -> int:
        """Everything else one row holds."""
        n = 1
        for i, x in enumerate(self.shape):
            if i != (1 if self.name == "scores" else 0):
                n *= x
        return n


@dataclass(frozen=True)
class StepMap:
    blocks: tuple[Block, ...]
    layers: int  # the cache and the weights are per layer; the map says × layers
    read_at: int | None = None  # the decode step whose reads are given: its cache holds this many tokens
    read_bytes: int | None = None  # what that step reads: the weights and the cache of every layer
    cache_read_bytes: int | None = None  # of which the cache

    def side(self, side: str) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.side == side)


# What a map's recipe may name, per side (the step's declaration holds its recipe: analysis/lesson_plan.Step.map):
# a part of model_map.step_parts ("embed", "q", "k", "v", "scores", "cache", "head", ...), "ids" (the prompt's
# tokens), "cache+" (the cache after each of the first decode steps: it grows a row a step), "cache@1024" or
# "cache@max" (the cache at the article's long context or at the model's longest: a budget), "weights" (the block
# matrices a decode step reads); a "/dtype" suffix ("cache/fp16", "weights/int8") draws it in that format.
SPECIAL = ("ids", "cache+", "cache@1024", "cache@max", "weights")
FORMATS = ("fp32", "fp16", "bf16", "int8")
Recipe = Mapping[str, tuple[str, ...]]


def check_recipe(recipe: Recipe) -> None:
    """ConfigError naming what a recipe gets wrong: a side other than prefill and decode, no part, an unknown one."""
    if not recipe or set(recipe) - set(SIDES):
        raise ConfigError(f"a map draws parts on the sides {SIDES}, got {dict(recipe)!r}")
    for side, items in recipe.items():
        if not items:
            raise ConfigError(f"a map's {side} side names no part")
        for item in items:
            name, _, fmt = item.partition("/")
            if name not in (*PARTS, *SPECIAL) or (fmt and fmt not in FORMATS):
                raise ConfigError(f"a map cannot draw {item!r}: the parts are {', '.join((*PARTS, *SPECIAL))}, "
                                 f"with /{'/'.join(FORMATS)} for a format")


LONG = 1024  # the article's long context (C4's "6 MB at 1024 tokens")


def step_map(config: dict, prompt: int, recipe: Recipe, decoded: int = 4, kv_element_bytes: int = 4,
             dtype: str = "fp32") -> StepMap:
    """The map a recipe draws (a lesson step's: lesson_plan.Step.recipe) on a run whose prompt has `prompt` tokens
    and which decodes `decoded` tokens after it (the decode side is the first decode step, or each of them for a
    growing cache). kv_element_bytes: one cached number's bytes as the run stores it; dtype: the weights' format
    (the run's)."""
    check_recipe(recipe)
    if prompt < 1 or decoded < 1:
        raise ValueError(f"a prompt of at least one token and at least one decode step, got {prompt}, {decoded}")
    layers, kv_dtype = config["num_layers"], format_of(kv_element_bytes)
    parts = {"prefill": {p.name: p.shape for p in step_parts(config, prompt)},
             "decode": {p.name: p.shape for p in step_parts(config, 1, prompt)}}
    shape = Shape.from_config(config)
    blocks = []
    for side, names in recipe.items():
        for item in names:
            name, _, fmt = item.partition("/")
            blocks += _blocks(name, fmt or None, side, parts[side], config, prompt, decoded, shape, kv_dtype, dtype)
    decoding = [b.rows for b in blocks if b.side == "decode" and b.name == "cache"]
    if not any(b.side == "decode" for b in blocks):
        return StepMap(tuple(blocks), layers)
    at = max(decoding, default=prompt + 1)  # the longest cache drawn, else the first decode step's
    setup = Setup(shape, dtype=dtype, kv_dtype=kv_dtype)
    cache_read = kv_read_bytes(setup, at)
    return StepMap(tuple(blocks), layers, at, weight_read_bytes(setup) + cache_read, cache_read)


def _cache(side: str, tokens: int, shape: Shape, dtype: str) -> Block:
    """K and V of one layer at `tokens` tokens in `dtype` (a 1-byte cache's scales included: predict's rule)."""
    per_layer = kv_bytes_per_token(Setup(shape, kv_dtype=dtype)) // shape.num_layers
    return Block("cache", (tokens, shape.num_kv_heads, shape.head_dim), side, tokens * per_layer, dtype)


def _blocks(name, fmt, side, parts, config, prompt, decoded, shape, kv_dtype, dtype) -> list[Block]:
    if name == "ids":
        return [Block("ids", (prompt,), side)]
    if name == "cache+":  # the cache after each of the first decode steps: a row more each step
        return [_cache(side, prompt + i, shape, kv_dtype) for i in range(1, decoded + 1)]
    if name.startswith("cache@"):
        at = name.partition("@")[2]
        return [_cache(side, LONG if at == "1024" else config["max_position_embeddings"], shape, kv_dtype)]
    if name == "cache":
        return [_cache(side, parts["cache"][0], shape, fmt or kv_dtype)]
    if name == "weights":  # in the run's format, or as the step compares them: fp32 beside int8
        quant = "int8" if fmt == "int8" else "none"
        read = weight_read_bytes(Setup(shape, dtype=dtype if fmt in (None, "int8") else fmt, quant=quant))
        matrices = block_matrices(shape, shape.num_kv_heads)[0]
        return [Block("weights", (config["num_layers"], matrices), side, read, fmt or dtype)]
    return [Block(name, parts[name], side)]

