"""The KV layouts page's URL section (C6, C8, C9, K3; ui/url_fields.py): the live runs' block size (the paged
layout's, and any layout's that reads one), their max_seq_len, the prompts beside Home's (one per line), the step
shown; the sweep's model (a built-in shape or "home"), its lengths ("" = automatic) and timed rounds."""

from __future__ import annotations

from dataclasses import dataclass, field

from llmviz.errors import ConfigError
from llmviz.trace.config import RANDOM_MODELS
from llmviz.ui.url_fields import Section, between, one_of, parses, url

KV_BLOCK_SIZES = (4, 8, 16)  # the page's choices
KV_MAX_SEQS = (64, 128, 256, 512)
KV_MAX_EXTRA = 3  # prompts beside the Home one
KV_LONGEST = max(KV_MAX_SEQS)


def extra_prompts(text: str) -> list[str]:
    """The non-empty lines of a prompts box."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def parse_lengths(text: str) -> list[int] | None:
    """ "64, 512 1024" -> [64, 512, 1024]; "" -> None (automatic); ConfigError when not whole numbers."""
    parts = text.replace(",", " ").split()
    if not parts:
        return None
    try:
        return [int(p) for p in parts]
    except ValueError as exc:
        raise ConfigError(f"lengths must be whole numbers separated by commas, got {text!r}",
                          code="sweep_lengths_text", text=text) from exc


@dataclass(frozen=True)
class LayoutsSettings:
    bs: int = field(default=4, metadata=url("kv_bs", one_of(KV_BLOCK_SIZES)))
    max: int = field(default=128, metadata=url("kv_max", one_of(KV_MAX_SEQS)))
    prompts: str = field(default="人工智能\n该模块提供了",  # the readers' language (the model reads both)
                         metadata=url("kv_prompts", lambda text: len(extra_prompts(text)) <= KV_MAX_EXTRA))
    step: int = field(default=0, metadata=url("kv_step", between(0, KV_LONGEST)))  # of the longest run
    model: str = field(default=RANDOM_MODELS[0], metadata=url("kv_model", one_of((*RANDOM_MODELS, "home"))))
    lengths: str = field(default="", metadata=url("kv_lengths", parses(parse_lengths)))
    repeats: int = field(default=3, metadata=url("kv_repeats", between(1, 10)))


SECTION = Section.of("layouts", LayoutsSettings)
