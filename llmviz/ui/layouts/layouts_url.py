"""The KV layouts page's URL section (C6, C8, C9, K3; ui/url_fields.py): the live runs' block size (the paged
layout's, and any layout's that reads one), their max_seq_len, the prompts beside Home's (one per line), the step
shown; the sweep's model (a built-in shape or "home"), its lengths ("" = automatic) and timed rounds."""

from __future__ import annotations

from llmviz.errors import ConfigError
from llmviz.trace.config import RANDOM_MODELS
from llmviz.ui.url_fields import Field, Section, between, one_of, parses

KV_BLOCK_SIZES = (4, 8, 16)  # the page's choices
KV_MAX_SEQS = (64, 128, 256, 512)
KV_MAX_EXTRA = 3  # prompts beside the Home one


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


SECTION = Section("layouts", (
    Field("kv_bs", 4, one_of(KV_BLOCK_SIZES)),
    Field("kv_max", 128, one_of(KV_MAX_SEQS)),
    Field("kv_prompts", "Return the\nThis module provides", lambda text: len(extra_prompts(text)) <= KV_MAX_EXTRA),
    Field("kv_step", 0, between(0, max(KV_MAX_SEQS))),  # a step of the page's longest run
    Field("kv_model", RANDOM_MODELS[0], one_of((*RANDOM_MODELS, "home"))),
    Field("kv_lengths", "", parses(parse_lengths)),
    Field("kv_repeats", 3, between(1, 10)),
))
