"""EngineConfig: every setting a run depends on, validated on construction (C5); and the names each switch accepts,
declared once.

No torch here, so the UI can build and show one; every trace stores it, so two runs can be compared.

The KV layouts and the attention backends are tables of declarations (`Names` of `Extension`s,
llmviz/trace/extensions.py) rather than tuples, because an extension adds one: its registration call
(llmviz.engine.kv.register_kv_layout, llmviz.engine.models.attention.register_attention_backend) adds its declaration
there, so EngineConfig, switch specs, the CLI, the trace checker and the pages' choices and words all take it. A KV
layout's declaration carries its slot rule, so the arithmetic of llmviz/analysis prices it.

The ring buffer is a layout of its own ("ring": its class, its slot rule, what a snapshot records), but not a
choice: it is what contiguous becomes with a sliding window (plus rollback) shorter than max_seq, by the one rule
`stored_layout`. kv_layout="ring" is a ConfigError that says so: a second spelling of the same cache, and one
that would mean nothing without a window.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import asdict, dataclass, field, replace

from llmviz.errors import ConfigError
from llmviz.trace.extensions import Extension, Names, block_slots, kept_slots, row_slots
from llmviz.trace.sparsity import BlockSparse

# The names every switch accepts, declared once (no torch here); each engine registry
# (llmviz/engine/registry.py users) implements exactly these and a test checks that they agree.
DTYPES = ("fp32", "fp16", "bf16")
KV_DTYPES = ("auto", "fp32", "fp16", "bf16", "fp8", "int8")  # auto: the model's dtype; fp8/int8 keep scales
ATTN_BACKENDS = Names("attn_backend", (
    Extension("eager", scores=True,
              about={"en": "materializes softmax(QKᵀ/√d): the article's formula, readable, O(n²) memory",
                     "zh": "显式计算 softmax(QKᵀ/√d)：文章里的公式，易读，内存 O(n²)"}),
    Extension("sdpa", scores=False,
              about={"en": "PyTorch picks a fused kernel per device (flash, memory-efficient or math)",
                     "zh": "由 PyTorch 按设备选择融合内核（flash、memory-efficient 或 math）"}),
    Extension("flash", scores=False,
              about={"en": "pins PyTorch's flash-attention kernel (CPU: any dtype; CUDA: fp16 or bf16)",
                     "zh": "固定使用 PyTorch 的 flash-attention 内核（CPU 上任意精度，CUDA 上需 fp16/bf16）"}),
))
KV_LAYOUTS = Names("kv_layout", (
    Extension("contiguous", {"en": "Contiguous", "zh": "连续"}, slots=row_slots, growth="reserves",
              about={"en": "The contiguous layout reserves max_seq_len slots per sequence up front.",
                     "zh": "连续布局为每个序列预先保留 max_seq_len 个槽位。"}),
    Extension("dynamic", {"en": "Growing (torch.cat)", "zh": "增长（torch.cat）"}, slots=kept_slots, growth="copies",
              about={"en": "The dynamic layout grows each tensor by one row with torch.cat at every step (a copy of "
                           "the whole cache): nothing is reserved.",
                     "zh": "动态布局每一步用 torch.cat 把每个张量加长一行（复制整个缓存）：不预留任何槽位。"}),
    Extension("paged", {"en": "Paged", "zh": "分页"}, slots=block_slots, growth="blocks",
              options=("kv_block_size", "kv_pool_blocks"),
              about={"en": "The paged layout takes fixed-size blocks from a pool as the sequence grows: only the last "
                           "block has unused slots.",
                     "zh": "分页布局随着序列增长从池中取固定大小的块：只有最后一块有空槽位。"}),
    Extension("ring", {"en": "Ring", "zh": "环形"}, slots=row_slots, growth="window",
              about={"en": "The ring keeps only the sliding window's slots and overwrites the oldest.",
                     "zh": "环形布局只保留滑动窗口那么多的槽位，覆盖最旧的位置。"},
              derived="what contiguous becomes with a sliding_window shorter than max_seq_len: choose kv_layout "
                      "contiguous and a window"),
))
# Serving schedulers, each a policy over the one driver (llmviz/engine/serving/driver.py); `growth` names the KV
# growth it needs ("blocks": continuous batching admits and retires requests step by step in a paged pool).
SCHEDULERS = Names("scheduler", (
    Extension("static", {"en": "Static batching", "zh": "静态批处理"},
              about={"en": "a batch of requests runs until its longest is done; finished rows keep computing",
                     "zh": "一批请求一直跑到最长的那个结束；已完成的行继续被计算"}),
    Extension("continuous", {"en": "Continuous batching", "zh": "持续批处理"}, growth="blocks",
              about={"en": "requests join and leave the batch at every step, their KV in a paged pool",
                     "zh": "请求在每一步加入或离开批次，它们的 KV 放在分页池里"}),
))
FUSED_CHOICES = ("auto", "on", "off")  # fused projections: as the checkpoint stores them, or forced (C10)
# Weight quantization of the blocks' projections (C21): round-to-nearest int8 (per row) and int4 (per group); LLM.int8()
# (vector-wise int8 with the outlier features in float); GPTQ int4 (error-compensated rounding, calibrated)
QUANT_MODES = ("none", "int8", "int4", "llm-int8", "gptq-int4")
CALIBRATED_QUANT = ("gptq-int4",)  # the modes that read calibration text at load
PADDINGS = ("right", "left")  # where a padded batch puts its pad tokens (C13)
CAPTURE_LEVELS = ("off", "meta", "full")
EMBEDDED_MODEL = "llmviz-tiny"  # the model in assets/ that makes everything work offline
EMBEDDED_DRAFT = "llmviz-tiny-draft"  # its 2-layer draft for speculative decoding (C16), also in assets/
# Built-in models whose weights are drawn at load (engine/loading/random_weights.py): shapes to measure on, no download
RANDOM_MODELS = ("gpt2-124m-random",)
LAYOUT_SWEEP_STEPS = 8  # decode steps timed per run by the KV layouts page's sweep and by claim K3
LAYOUT_SWEEP_BLOCK = 16  # the paged layout's block size there
LAYOUT_SWEEP_BACKEND = "sdpa"  # K3's attention (the page runs Home's; K3's workload when it is this one)
DEFAULT_MAX_SEQ = 2048  # cap on the model's context, so a 128k-context model does not preallocate 128k
SEED_RANGE = (-(2**63), 2**64)  # the seeds torch.Generator.manual_seed takes (beyond: OverflowError)
MAX_SLIDING_WINDOW = 2**63 - 1  # a window is compared with int64 positions (beyond: OverflowError); a window at
# least max_seq long is allowed and is the same as none (every cached key is inside it), so 10**12 runs


def stored_layout(kv_layout: str, max_seq: int, window: int | None, rollback: int = 0) -> str:
    """The layout a cache of this setting is built and recorded as: contiguous with a sliding window (plus the
    rollback a speculative step may take back) shorter than max_seq keeps window + rollback slots per row, the
    ring, so its memory stays flat (C20); any other choice is itself (its mask alone applies a window). The one
    rule make_kv_cache and the predictions share; UnknownNameError for a layout no run may choose."""
    KV_LAYOUTS.check(kv_layout, "kv_layout")
    return "ring" if kv_layout == "contiguous" and window and window + rollback < max_seq else kv_layout


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
    kv_budget_bytes: int | None = None  # the KV cache's bytes at most (C17): past it a run is refused; None: no cap
    sliding_window: int | None = None  # every layer attends to the last W tokens only; the cache evicts (C20)
    # Block-sparse attention (C20, trace/sparsity.py): blocks of sparse_block positions, each query seeing its
    # sparse_local nearest blocks and the first sparse_global; None: off. A mask only: the cache keeps every token.
    sparse_block: int | None = None
    sparse_local: int = 2
    sparse_global: int = 1
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
        KV_LAYOUTS.check(self.kv_layout, "kv_layout")
        ATTN_BACKENDS.check(self.attn_backend, "attn_backend")
        checks = (("dtype", DTYPES), ("kv_dtype", KV_DTYPES), ("capture", CAPTURE_LEVELS), ("padding", PADDINGS),
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
        BlockSparse(1 if self.sparse_block is None else self.sparse_block, self.sparse_local, self.sparse_global)
        if self.sparse_block is not None and window is not None:
            raise ConfigError("choose one of sliding_window and block-sparse attention: both are masks over "
                              "the keys, and the engine applies one")
        if self.kv_pool_blocks is not None and (not isinstance(self.kv_pool_blocks, int) or self.kv_pool_blocks < 1):
            raise ConfigError(f"kv_pool_blocks must be a positive integer, got {self.kv_pool_blocks!r}")
        budget = self.kv_budget_bytes
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
            raise ConfigError(f"kv_budget_bytes must be a positive whole number of bytes, got {budget!r}")
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

    @property
    def block_sparse(self) -> BlockSparse | None:
        if self.sparse_block is None:
            return None
        return BlockSparse(self.sparse_block, self.sparse_local, self.sparse_global)

    @property
    def attention_mask(self) -> int | BlockSparse | None:
        """What every layer's mask is asked to be beyond causal: a window, a block-sparse pattern, or None."""
        return self.block_sparse or self.sliding_window

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
