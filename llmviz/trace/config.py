"""EngineConfig: every setting a run depends on, validated on construction (C5).

No torch here, so the UI can build and show one; every trace stores it, so two runs can be compared.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import asdict, dataclass, field, replace

from llmviz.errors import ConfigError

# The names every switch accepts, declared once (no torch here); each engine registry
# (llmviz/engine/registry.py users) implements exactly these and a test checks that they agree.
DTYPES = ("fp32", "fp16", "bf16")
KV_DTYPES = ("auto", "fp32", "fp16", "bf16", "fp8", "int8")  # auto: the model's dtype; fp8/int8 keep scales
ATTN_BACKENDS = ("eager", "sdpa", "flash")
KV_LAYOUTS = ("contiguous", "dynamic", "paged")
FUSED_CHOICES = ("auto", "on", "off")  # fused projections: as the checkpoint stores them, or forced (C10)
QUANT_MODES = ("none", "int8", "int4")  # weight-only quantization of the blocks' projections (C21)
PADDINGS = ("right", "left")  # where a padded batch puts its pad tokens (C13)
CAPTURE_LEVELS = ("off", "meta", "full")
EMBEDDED_MODEL = "llmviz-tiny"  # the model in assets/ that makes everything work offline
EMBEDDED_DRAFT = "llmviz-tiny-draft"  # its 2-layer draft for speculative decoding (C16), also in assets/
# Built-in models whose weights are drawn at load (engine/random_weights.py): shapes to measure on, no download
RANDOM_MODELS = ("gpt2-124m-random",)
DEFAULT_MAX_SEQ = 2048  # cap on the model's context, so a 128k-context model does not preallocate 128k
SEED_RANGE = (-(2**63), 2**64)  # the seeds torch.Generator.manual_seed takes (beyond: OverflowError)
MAX_SLIDING_WINDOW = 2**63 - 1  # a window is compared with int64 positions (beyond: OverflowError); a window at
# least max_seq long is allowed and is the same as none (every cached key is inside it), so 10**12 runs


def check_seed(seed, what: str = "seed") -> None:
    """A seed torch can take, or a ConfigError naming the range (the CLI, the pages and the library share it)."""
    low, end = SEED_RANGE
    if not isinstance(seed, int) or isinstance(seed, bool) or not low <= seed < end:
        raise ConfigError(f"{what} must be an integer in [-2**63, 2**64), got {seed!r}")


def default_max_seq(context: int) -> int:
    """Tokens per sequence when none is asked for: the model's context, capped at DEFAULT_MAX_SEQ."""
    return min(context, DEFAULT_MAX_SEQ)


_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def _real(value) -> bool:
    """A real number (int or float, numpy's too), not a bool or a string."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclass(frozen=True)
class SamplingConfig:
    temperature: float = 0.7  # 0 = greedy
    top_k: int = 50  # 0 = off
    top_p: float = 1.0  # 1 = off
    repetition_penalty: float = 1.0  # 1 = off; > 1 discourages tokens already in the sequence

    def __post_init__(self):
        for name in ("temperature", "top_p", "repetition_penalty"):
            if not _real(getattr(self, name)):
                raise ConfigError(f"{name} must be a number, got {getattr(self, name)!r}")
        if not (self.temperature == 0 or 1e-3 <= self.temperature <= 1e3):
            raise ConfigError(f"temperature must be 0 (greedy) or in [0.001, 1000], got {self.temperature}")
        if not isinstance(self.top_k, int) or self.top_k < 0:
            raise ConfigError(f"top_k must be an integer >= 0 (0 turns it off), got {self.top_k!r}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if not 0 < self.repetition_penalty < math.inf:
            raise ConfigError(f"repetition_penalty must be a finite number > 0, got {self.repetition_penalty}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


# Fields of trace schema 1 that no longer exist: batch_size (the batch is the list of prompts now) and
# threads (a process-wide setting, not a run's).
_RETIRED = ("batch_size", "threads")


@dataclass(frozen=True)
class EngineConfig:
    device: str = "auto"  # auto picks cuda, then mps, then cpu
    dtype: str = "fp32"  # weights and activations
    attn_backend: str = "sdpa"
    kv_layout: str = "contiguous"
    kv_dtype: str = "auto"
    kv_heads: int | None = None  # GQA made at load by mean-pooling K/V heads (C19); None: the checkpoint's
    fused_qkv: str = "auto"  # q/k/v (and gate/up) as one matmul: on | off | auto (as stored) (C10)
    max_seq_len: int | None = None  # None: the model's context, capped at DEFAULT_MAX_SEQ (per sequence)
    kv_block_size: int = 16  # tokens per block of the paged layout (C9)
    kv_pool_blocks: int | None = None  # blocks in the paged pool; None: enough for every sequence to reach max_seq
    sliding_window: int | None = None  # every layer attends to the last W tokens only; the cache evicts (C20)
    quant: str = "none"  # weight-only: int8 per output channel, int4 per group of quant_group columns (C21)
    quant_group: int = 32
    compile: bool = False  # torch.compile the decode step (static shapes: contiguous cache, capture off) (C10)
    kv_rollback: int = 0  # the most tokens a later step may take back (speculative depth): a windowed cache keeps them
    padding: str = "right"  # a batch of prompts of different lengths is padded on this side (C13)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    seed: int = 0
    stop_at_eos: bool = True
    capture: str = "off"
    capture_filter: tuple = ()  # glob patterns over hook names; empty = every hook
    logit_lens_top_k: int = 5  # 0 = no logit lens; computed after the timed region
    # Torch's CPU threads are a process-wide setting: the CLI, the app and the benchmarks set them at start.

    def __post_init__(self):
        if not isinstance(self.device, str) or not _DEVICE.match(self.device):
            raise ConfigError(f"device={self.device!r} is not one of auto, cpu, cuda, cuda:N, mps")
        checks = (("dtype", DTYPES), ("kv_dtype", KV_DTYPES), ("attn_backend", ATTN_BACKENDS),
                  ("kv_layout", KV_LAYOUTS), ("capture", CAPTURE_LEVELS), ("padding", PADDINGS),
                  ("fused_qkv", FUSED_CHOICES), ("quant", QUANT_MODES))
        for name, allowed in checks:
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name}={getattr(self, name)!r} is not one of {', '.join(allowed)}")
        if self.max_seq_len is not None and (not isinstance(self.max_seq_len, int) or self.max_seq_len < 2):
            raise ConfigError(f"max_seq_len must be an integer >= 2, got {self.max_seq_len!r}")
        if self.kv_heads is not None and (not isinstance(self.kv_heads, int) or self.kv_heads < 1):
            raise ConfigError(f"kv_heads must be a positive integer, got {self.kv_heads!r}")
        window = self.sliding_window
        if window is not None and (not isinstance(window, int) or isinstance(window, bool)
                                   or not 1 <= window <= MAX_SLIDING_WINDOW):
            raise ConfigError(f"sliding_window must be a whole number of tokens in 1..2**63-1 (one at least max_seq "
                              f"long is the same as none), got {window!r}")
        if self.kv_pool_blocks is not None and (not isinstance(self.kv_pool_blocks, int) or self.kv_pool_blocks < 1):
            raise ConfigError(f"kv_pool_blocks must be a positive integer, got {self.kv_pool_blocks!r}")
        if not isinstance(self.quant_group, int) or self.quant_group < 1:
            raise ConfigError(f"quant_group must be a positive integer, got {self.quant_group!r}")
        if not isinstance(self.kv_rollback, int) or self.kv_rollback < 0:
            raise ConfigError(f"kv_rollback must be an integer >= 0, got {self.kv_rollback!r}")
        if not isinstance(self.kv_block_size, int) or not 1 <= self.kv_block_size <= 4096:
            raise ConfigError(f"kv_block_size must be an integer in 1..4096, got {self.kv_block_size!r}")
        check_seed(self.seed)
        if not isinstance(self.logit_lens_top_k, int) or isinstance(self.logit_lens_top_k, bool) \
                or self.logit_lens_top_k < 0:
            raise ConfigError(f"logit_lens_top_k must be a whole number >= 0, got {self.logit_lens_top_k!r}")
        object.__setattr__(self, "capture_filter", tuple(self.capture_filter))

    def with_(self, **changes) -> EngineConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["capture_filter"] = list(self.capture_filter)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> EngineConfig:
        data = {k: v for k, v in data.items() if k not in _RETIRED}
        data["sampling"] = SamplingConfig(**data.get("sampling", {}))
        data["capture_filter"] = tuple(data.get("capture_filter", ()))
        return cls(**data)
