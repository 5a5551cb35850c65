"""Predict before measuring: what arithmetic says a setting costs, from the model's shape alone (C7, C11,
C19, C21; claims K2, K4, K10, K11).

For one side of a comparison (a model config plus the switches that change bytes), per decode step:

    weights read    every projection of every block, the final norm and the output head (an embedding
                    lookup reads one row)
    KV read         min(cached tokens, window) x kv_heads x head_dim x 2 (K and V) x bytes, per layer,
                    plus the per-token scales of fp8/int8
    FLOPs           2 per weight of each matmul, plus 4 x heads x head_dim x attended tokens per layer
    bound           (weights read + KV read) / measured bandwidth: the step's time if memory were the
                    only cost (a decode step at batch 1 is memory-bound, C7)

and the KV bytes a layout allocates. Pure arithmetic (no numpy needed): the Compare page shows it before
a comparison runs, then beside the measured figures; the claims page reuses it.
"""

from __future__ import annotations

from dataclasses import dataclass

from llmviz.trace.config import KV_LAYOUTS, stored_layout

ELEMENT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
SCALE_BYTES = 4  # fp8/int8 KV keep one fp32 scale per token and head, for K and for V
QUANT_BITS = {"none": None, "int8": 8, "int4": 4, "llm-int8": 8, "gptq-int4": 4}  # LLM.int8(): int8 with a scale a
# row (its outliers are activations, multiplied apart at run time); GPTQ: stored as int4 with its group grid


def format_of(element_bytes: int) -> str:
    """A number format of that many bytes (a trace records a cached number's bytes, not its format): fp32, fp16 or
    int8; the bytes are what the byte formulas read (a 1-byte cache's scales included)."""
    return {4: "fp32", 2: "fp16", 1: "int8"}.get(element_bytes, "fp32")


@dataclass(frozen=True)
class Shape:
    """A model's dimensions, as the model card's config dict has them (before any load-time switch)."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    mlp: str = "gated"
    norm: str = "rms"
    position: str = "rope"
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    tie_embeddings: bool = False
    sliding_windows: tuple = ()

    @classmethod
    def from_config(cls, config: dict) -> Shape:
        keys = cls.__dataclass_fields__
        values = {k: v for k, v in config.items() if k in keys}
        values["sliding_windows"] = tuple(values.get("sliding_windows", ()))
        return cls(**values)


@dataclass(frozen=True)
class Setup:
    """One side of a comparison: a shape and the switches that change what a step reads or stores."""

    shape: Shape
    dtype: str = "fp32"
    kv_dtype: str = "auto"
    kv_heads: int | None = None
    quant: str = "none"
    quant_group: int = 32
    kv_layout: str = "contiguous"
    kv_block_size: int = 16
    sliding_window: int | None = None
    kv_rollback: int = 0
    max_seq: int = 2048

    @classmethod
    def of(cls, shape: Shape, changes: dict, max_seq: int) -> Setup:
        """A side from a compare spec's EngineConfig changes (fields this arithmetic ignores are dropped)."""
        keys = set(cls.__dataclass_fields__) - {"shape", "max_seq"}
        return cls(shape, max_seq=max_seq, **{k: v for k, v in changes.items() if k in keys})

    @property
    def kv_head_count(self) -> int:
        return self.kv_heads or self.shape.num_kv_heads

    @property
    def kv_element(self) -> str:
        return self.dtype if self.kv_dtype == "auto" else self.kv_dtype

    def window(self, layer: int) -> int:
        """Tokens layer `layer` attends to at most (0 = all)."""
        if self.sliding_window:
            return self.sliding_window
        return self.shape.sliding_windows[layer] if self.shape.sliding_windows else 0


def block_matrices(s: Shape, kv_heads: int) -> tuple[int, int]:
    """(weights of the matmuls, bias and norm parameters) of one transformer block."""
    d, hd, h, f = s.hidden_size, s.head_dim, s.num_heads, s.intermediate_size
    q_out, kv_out = h * hd, kv_heads * hd
    matrices = d * q_out + 2 * d * kv_out + q_out * d + (3 if s.mlp == "gated" else 2) * d * f
    small = (q_out + 2 * kv_out) * s.qkv_bias + d * s.out_bias
    small += ((2 * f if s.mlp == "gated" else f) + d) * s.mlp_bias
    small += 2 * d * (2 if s.norm == "layer" else 1)  # two norms (LayerNorm has a bias)
    return matrices, small


def weight_bytes(setup: Setup) -> int:
    """Bytes of every weight as stored: quantized block matrices with their scales, the rest in dtype."""
    s, e = setup.shape, ELEMENT_BYTES[setup.dtype]
    matrices, small = block_matrices(s, setup.kv_head_count)
    bits = QUANT_BITS[setup.quant]
    if bits is None:
        blocks = (matrices + small) * e
    else:
        out_rows = _block_out_rows(s, setup.kv_head_count)
        scales = out_rows if bits == 8 else 2 * matrices // setup.quant_group  # int8: one per row; int4: scale+zero
        blocks = matrices * bits // 8 + (scales + small) * e
    return s.num_layers * blocks + unquantized_bytes(setup)


def unquantized_bytes(setup: Setup) -> int:
    """Bytes of the weights no quantization switch touches, in dtype: the embedding tables (and an untied output
    head), a learned position table, the final norm. Why int4 weights of a small-vocabulary-heavy model are not an
    eighth of fp32's."""
    s, e = setup.shape, ELEMENT_BYTES[setup.dtype]
    final_norm = s.hidden_size * (2 if s.norm == "layer" else 1)
    tables = s.vocab_size * s.hidden_size * (1 if s.tie_embeddings else 2)
    tables += s.max_position_embeddings * s.hidden_size * (s.position == "learned")
    return (final_norm + tables) * e


def _block_out_rows(s: Shape, kv_heads: int) -> int:
    """Output rows of a block's matrices (int8 keeps one scale per row)."""
    q_out, kv_out = s.num_heads * s.head_dim, kv_heads * s.head_dim
    return q_out + 2 * kv_out + s.hidden_size + (2 if s.mlp == "gated" else 1) * s.intermediate_size + s.hidden_size


def weight_read_bytes(setup: Setup) -> int:
    """Weight bytes one decode step reads: everything but the embedding tables, of which it reads one row
    each (a tied table is read whole as the output head)."""
    s, e = setup.shape, ELEMENT_BYTES[setup.dtype]
    unread_rows = (s.vocab_size - 1) * (0 if s.tie_embeddings else 1)
    unread_rows += (s.max_position_embeddings - 1) * (s.position == "learned")
    return weight_bytes(setup) - unread_rows * s.hidden_size * e


def kv_bytes_per_token(setup: Setup) -> int:
    """One token's K and V in every layer, scales included (C4)."""
    hd, kv = setup.shape.head_dim, setup.kv_head_count
    element = setup.kv_element
    per_head = hd * ELEMENT_BYTES[element] + (SCALE_BYTES if element in ("fp8", "int8") else 0)
    return 2 * kv * per_head * setup.shape.num_layers


def decode_read_bytes(setup: Setup, cached: int) -> int:
    """What one decode step reads after `cached` tokens: the weights, and the cache with the new token in it (C7)."""
    return weight_read_bytes(setup) + kv_read_bytes(setup, cached + 1)


def kv_read_bytes(setup: Setup, cached: int) -> int:
    """KV bytes one decode step reads with `cached` tokens in the cache (the new one included)."""
    per_layer = kv_bytes_per_token(setup) // setup.shape.num_layers
    return sum(per_layer * (min(cached, w) if (w := setup.window(i)) else cached)
               for i in range(setup.shape.num_layers))


def layer_slots(layout: str, held: int, max_seq: int, window: int = 0, block: int = 16) -> int:
    """Positions one layer's cache takes for one sequence holding `held` tokens, of which it keeps the last
    `window` (0: all), by the slot rule registered with the layout (llmviz.trace.config): contiguous and the ring
    preallocate max_seq slots (the window, if shorter); paged takes the whole blocks its kept positions touch (a
    window not aligned to blocks straddles one more); dynamic exactly the positions kept. The one rule the memory
    calculator and the predictions share (C8, C9, C20); UnknownNameError for a layout that has none."""
    return KV_LAYOUTS.slots(layout)(held, max_seq, window, block)


def stored_as(setup: Setup) -> str:
    """The layout this side's cache is built as (contiguous with the sliding-window switch: the ring)."""
    return stored_layout(setup.kv_layout, setup.max_seq, setup.sliding_window, setup.kv_rollback)


def kv_allocated_bytes(setup: Setup, tokens: int) -> int:
    """What this engine's layout holds for one sequence of `tokens` tokens: contiguous preallocates max_seq slots
    (a ring of window + rollback with the sliding-window switch), paged whole blocks, dynamic exactly the tokens
    (the engine drops no position of a model's own windowed layers, nor of a window a ring does not keep)."""
    layout = stored_as(setup)
    kept = setup.sliding_window + setup.kv_rollback if layout == "ring" else 0
    return layer_slots(layout, tokens, setup.max_seq, kept, setup.kv_block_size) * kv_bytes_per_token(setup)


def in_millions(flops: float) -> str:
    """FLOPs as the pages show them: 11,575,296 -> '11.6 M' (whole counts overflow a metric's column)."""
    return f"{flops / 1e6:,.1f} M"


def step_flops(setup: Setup, new: int, cached_before: int, rows: int = 1) -> int:
    """FLOPs of one step feeding `new` tokens per row after `cached_before` cached ones (C7): the matmuls, 2 per
    weight per token; attention, 4 x heads x head_dim per (token, attended position) with each token attending
    to every earlier position in its window and itself; the output head for each row's last token only."""
    s = setup.shape
    matrices, _ = block_matrices(s, setup.kv_head_count)
    attended = 0
    for i in range(s.num_layers):
        w = setup.window(i)
        attended += sum(min(p + 1, w) if w else p + 1 for p in range(cached_before, cached_before + new))
    per_row = 2 * new * s.num_layers * matrices + 2 * s.vocab_size * s.hidden_size
    return rows * (per_row + 4 * s.num_heads * s.head_dim * attended)


def decode_flops(setup: Setup, cached: int) -> int:
    """FLOPs of one decode step at batch 1 with `cached` tokens in the cache, the new one included."""
    return step_flops(setup, 1, cached - 1)


@dataclass(frozen=True)
class Prediction:
    weight_bytes: int
    weight_read_bytes: int  # per decode step
    kv_read_bytes: int  # per decode step, averaged over the run's decode steps
    kv_used_bytes: int  # at the end of the run
    kv_allocated_bytes: int
    decode_flops: int  # per decode step, averaged
    bound_ms: float | None  # memory-bound decode time per token from the measured bandwidth

    @property
    def read_bytes(self) -> int:
        return self.weight_read_bytes + self.kv_read_bytes

    @property
    def intensity(self) -> float:
        """FLOPs per byte read: far below a device's FLOP/s over its bandwidth means memory-bound (C7)."""
        return self.decode_flops / self.read_bytes


def predict(setup: Setup, prompt_tokens: int, decode_steps: int, bandwidth_gb_per_s: float | None) -> Prediction:
    """A run of one prompt and `decode_steps` decode steps (step k reads prompt + k cached tokens)."""
    steps = max(decode_steps, 1)
    cached = [prompt_tokens + k for k in range(1, steps + 1)]
    kv_read = round(sum(kv_read_bytes(setup, c) for c in cached) / steps)
    flops = round(sum(decode_flops(setup, c) for c in cached) / steps)
    tokens = prompt_tokens + decode_steps  # the last drawn token is never fed back, so not cached
    cached_now = min(tokens, setup.sliding_window + setup.kv_rollback) if stored_as(setup) == "ring" else tokens
    w_read = weight_read_bytes(setup)
    bound = (w_read + kv_read) / (bandwidth_gb_per_s * 1e9) * 1000 if bandwidth_gb_per_s else None
    return Prediction(weight_bytes(setup), w_read, kv_read, cached_now * kv_bytes_per_token(setup),
                      kv_allocated_bytes(setup, tokens), flops, bound)


def qkv_traffic_bytes(setup: Setup, tokens: int, fused: bool) -> int:
    """Bytes the q, k and v projections move for `tokens` tokens in every layer (C10; claim K11): the input
    [tokens, d] read once per matmul (three times unfused, once fused), the weights read once either way, the
    outputs written once either way. Fusion saves the two extra reads of the input, nothing else."""
    s, e = setup.shape, ELEMENT_BYTES[setup.dtype]
    out = (s.num_heads + 2 * setup.kv_head_count) * s.head_dim
    per_layer = (1 if fused else 3) * tokens * s.hidden_size + s.hidden_size * out + tokens * out
    return s.num_layers * per_layer * e


def ratio(b: float | None, a: float | None) -> float | None:
    """b / a, or None where it has no meaning."""
    return None if a in (None, 0) or b is None else b / a
