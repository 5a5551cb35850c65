"""The Memory page's URL section (C17, with C4, C9, C19, C20; ui/url_fields.py): whose config (Home's model, a
bundled popular one; a pasted config is not carried, a link opens its box empty), the batch, max_seq_len (0: the
model's context, at most 4,096), the tokens held (-1: each sequence fills max_seq_len), the weights' and the cache's
dtypes, the KV heads (0: the model's own), the layout and its block size. A link reopens the same answer."""

from __future__ import annotations

from dataclasses import dataclass, field

from llmviz.analysis import memory_calc as mc
from llmviz.ui.url_fields import Section, between, one_of, url

HOME, PASTE = "home", "paste"
WEIGHT_DTYPES = ("fp16", "bf16", "fp32", "int8", "int4")  # the page's choices (int8/int4: quantized weights)
MAX_BATCH, MAX_TOKENS = 4096, 10_000_000


def _source(name: str) -> bool:
    return name in (HOME, PASTE) or name in mc.bundled_names()


@dataclass(frozen=True)
class MemorySettings:
    source: str = field(default=HOME, metadata=url("mem_source", _source))
    batch: int = field(default=1, metadata=url("mem_batch", between(1, MAX_BATCH)))
    max_seq: int = field(default=0, metadata=url("mem_max_seq", between(0, MAX_TOKENS)))  # 0: the model's context
    tokens: int = field(default=-1, metadata=url("mem_tokens", between(-1, MAX_TOKENS)))  # -1: each fills max_seq
    dtype: str = field(default="fp16", metadata=url("mem_dtype", one_of(WEIGHT_DTYPES)))
    kv_dtype: str = field(default=mc.KV_DTYPES[0], metadata=url("mem_kv_dtype", one_of(mc.KV_DTYPES)))
    kv_heads: int = field(default=0, metadata=url("mem_kv_heads", between(0, 1024)))  # 0: the model's own
    layout: str = field(default="contiguous", metadata=url("mem_layout", lambda v: v in mc.priced_layouts()))
    block: int = field(default=16, metadata=url("mem_block", between(1, 4096)))


SECTION = Section.of("memory", MemorySettings)
