"""The memory and OOM calculator (C17, with C4, C9, C19, C20): for any model config, what the weights
and the KV cache take for a batch of sequences, and what fits in a given GPU's memory.

    weights            predict.weight_bytes (every matrix in its dtype, or quantized with its scales)
    KV per token       predict.kv_bytes_per_token: layers x 2 (K, V) x kv_heads x head_dim x bytes (+ fp8/int8 scales)
    KV per sequence    per layer, the positions it holds x that layer's share of a token:
                       a layer with a sliding window (Mistral's 4096) needs only its last `window` positions;
                       contiguous preallocates max_seq slots (the window, if shorter), paged whole blocks of
                       the tokens held, dynamic exactly the tokens held
    total              weights + batch x KV per sequence

Activations, the framework's own memory and the allocator's slack come on top: a "fits" here is necessary, not
sufficient. The engine's own contiguous cache keeps a model's windowed layers whole (it drops old positions only
with the sliding-window switch, predict.kv_allocated_bytes); this calculator counts what a window-aware cache
needs, as serving engines keep it.

Pure arithmetic on a config dict (ModelConfig.to_dict()); the configs and GPUs it offers are JSON data in
assets/configs/.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from llmviz.analysis.predict import ELEMENT_BYTES, Setup, Shape, kv_bytes_per_token, layer_slots, weight_bytes
from llmviz.errors import ConfigError, ModelConfigError
from llmviz.paths import CONFIGS
from llmviz.trace.config import KV_LAYOUTS
from llmviz.trace.model_config import MAX_SIZES

GIB = 2**30
LAYOUTS = KV_LAYOUTS  # every layout a setting may choose (trace/config.py), each priced by its own slot rule


def priced_layouts() -> tuple[str, ...]:
    """The layouts the calculator can answer for: those declared with a slot rule (an extension's may have none)."""
    return tuple(x for x in LAYOUTS if LAYOUTS.describe(x).slots is not None)


def reserves(layout: str) -> bool:
    """Whether a layout takes all of max_seq's slots up front (its declaration's growth), not as it fills."""
    return LAYOUTS.describe(layout).growth == "reserves"


WEIGHT_DTYPES = ("fp32", "fp16", "bf16")
KV_DTYPES = ("auto", *ELEMENT_BYTES)


@dataclass(frozen=True)
class MemoryQuestion:
    """What is asked of the calculator; validated on construction (ConfigError)."""

    batch: int = 1
    max_seq: int = 4096  # slots a contiguous cache preallocates per sequence
    tokens: int | None = None  # tokens each sequence holds now (None: max_seq)
    dtype: str = "fp16"  # the weights'
    quant: str = "none"  # int8 / int4 weights
    kv_dtype: str = "auto"  # "auto": the weights' dtype
    kv_heads: int | None = None  # None: the model's own (fewer is GQA, C19)
    layout: str = "contiguous"
    block_size: int = 16

    def __post_init__(self):
        for name, low, high in (("batch", 1, 1_000_000), ("max_seq", 1, 100_000_000), ("block_size", 1, 65_536)):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(f"{name} must be a whole number from {low} to {high:,}, got {value!r}")
        if self.tokens is not None and (not isinstance(self.tokens, int) or isinstance(self.tokens, bool)
                                        or not 0 <= self.tokens <= self.max_seq):
            raise ConfigError(f"tokens must be from 0 to max_seq ({self.max_seq:,}), got {self.tokens!r}")
        for name, allowed in (("dtype", WEIGHT_DTYPES), ("kv_dtype", KV_DTYPES), ("layout", LAYOUTS),
                              ("quant", ("none", "int8", "int4"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name}={getattr(self, name)!r} is not one of {', '.join(allowed)}")
        if self.kv_heads is not None and (not isinstance(self.kv_heads, int) or self.kv_heads < 1):
            raise ConfigError(f"kv_heads must be a positive whole number, got {self.kv_heads!r}")

    @property
    def held(self) -> int:
        return self.max_seq if self.tokens is None else self.tokens

    def with_(self, **changes) -> MemoryQuestion:
        return replace(self, **changes)


@dataclass(frozen=True)
class Fit:
    gpu: str
    memory_bytes: int
    fits: bool
    max_batch: int | None  # sequences of this length that fit beside the weights (0: not one; None: no KV)
    share: float  # total / memory


@dataclass(frozen=True)
class MemoryAnswer:
    question: MemoryQuestion
    weights: int
    kv_per_token: int  # every layer, as if none had a window
    kv_per_sequence: int  # what one sequence's cache takes in this layout
    kv_total: int
    windowed_layers: int  # layers whose window is shorter than what they would hold (they keep only the window)

    @property
    def total(self) -> int:
        return self.weights + self.kv_total


def check_shape(config: dict) -> Shape:
    """The config's dimensions as predict's Shape; an absurd size is a ModelConfigError."""
    for name, high in MAX_SIZES.items():
        value = config.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
            raise ModelConfigError(f"{name}={value!r} is not a size a model has (1 to {high:,})")
    return Shape.from_config(config)


def setup_of(shape: Shape, q: MemoryQuestion) -> Setup:
    if q.kv_heads is not None and shape.num_heads % q.kv_heads:
        raise ConfigError(f"kv_heads={q.kv_heads} must divide num_heads={shape.num_heads}: each KV head serves a "
                          "whole group of query heads")
    return Setup(shape, dtype=q.dtype, kv_dtype=q.kv_dtype, kv_heads=q.kv_heads, quant=q.quant,
                 kv_layout=q.layout, kv_block_size=q.block_size, max_seq=q.max_seq)


def answer(config: dict, q: MemoryQuestion) -> MemoryAnswer:
    shape = check_shape(config)
    setup = setup_of(shape, q)
    per_token = kv_bytes_per_token(setup)
    per_layer_token = per_token // shape.num_layers
    windows = [setup.window(i) for i in range(shape.num_layers)]
    slots = sum(layer_slots(q.layout, q.held, q.max_seq, w, q.block_size) for w in windows)
    per_sequence = slots * per_layer_token
    reach = q.max_seq if reserves(q.layout) else q.held  # what a layer would hold without its window
    return MemoryAnswer(q, weight_bytes(setup), per_token, per_sequence, q.batch * per_sequence,
                        sum(1 for w in windows if w and w < reach))


def fits(a: MemoryAnswer, gpus: list[dict]) -> list[Fit]:
    """Each GPU: does the total fit, and how many sequences of this length fit beside the weights."""
    out = []
    for gpu in gpus:
        memory = int(gpu["memory_gib"] * GIB)
        room = memory - a.weights
        most = 0 if room <= 0 else (room // a.kv_per_sequence if a.kv_per_sequence else None)  # None: no bound
        out.append(Fit(gpu["name"], memory, a.total <= memory, None if most is None else int(most), a.total / memory))
    return out


@dataclass(frozen=True)
class Saving:
    key: str  # what changed: paged, half_max_seq, gqa, mha, kv_fp16, kv_int8
    changes: dict
    total: int
    saved: int  # bytes less than the question's total (negative: it costs more)


def savings(config: dict, q: MemoryQuestion) -> list[Saving]:
    """What each common move saves against the question as asked (C9, C17, C19; K4, K9)."""
    base = answer(config, q).total
    shape = check_shape(config)
    heads, kv = shape.num_heads, q.kv_heads or shape.num_kv_heads
    moves = []
    blocks = [x for x in LAYOUTS.having(growth="blocks") if x in priced_layouts()]
    if reserves(q.layout) and blocks:  # a cache that reserves max_seq: what blocks taken as it grows save
        moves.append(("paged", {"layout": blocks[0]}))
    if q.max_seq > 1:
        half = q.max_seq // 2
        moves.append(("half_max_seq", {"max_seq": half, "tokens": None if q.tokens is None else min(q.tokens, half)}))
    if kv == heads and heads % 4 == 0:
        moves.append(("gqa", {"kv_heads": heads // 4}))  # groups of 4: Llama-3-8B and Mistral-7B keep 8 KV heads for 32
    elif kv < heads:
        moves.append(("mha", {"kv_heads": heads}))  # what the model's GQA saves, seen from the other side
    element = q.dtype if q.kv_dtype == "auto" else q.kv_dtype
    if ELEMENT_BYTES[element] > 2:
        moves.append(("kv_fp16", {"kv_dtype": "fp16"}))
    if ELEMENT_BYTES[element] > 1:
        moves.append(("kv_int8", {"kv_dtype": "int8"}))
    out = []
    for key, changes in moves:
        total = answer(config, q.with_(**changes)).total
        out.append(Saving(key, changes, total, base - total))
    return out


def bundled_names() -> list[str]:
    """The popular models whose published configs ship in assets/configs/."""
    return sorted(p.stem for p in CONFIGS.glob("*.json") if p.stem != "gpus")


def bundled_text(name: str) -> str:
    if name not in bundled_names():
        raise ConfigError(f"no bundled config named {name!r}; there are {', '.join(bundled_names())}")
    return (CONFIGS / f"{name}.json").read_text(encoding="utf-8")


def gpus() -> list[dict]:
    """[{name, memory_gib}] of common GPUs, from assets/configs/gpus.json."""
    return json.loads((CONFIGS / "gpus.json").read_text(encoding="utf-8"))["gpus"]
