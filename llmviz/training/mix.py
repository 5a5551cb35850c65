"""The bilingual training stream: English keeps the exposure the English-only model had.

The trainer draws random windows from one token stream, so each language is seen in proportion to its share of
the stream. English (pydoc topics and docstrings, ~0.4M tokens) is much shorter than the Chinese documentation
(~2M tokens): left as it is, a run of the same length would see far less English than the English-only model did,
and its English would get worse. So the English token stream is repeated `copies` times, with `copies` chosen so
that the English tokens a planned run sees are at least the English-only model's. No torch here.
"""

from __future__ import annotations

import math

from llmviz.errors import ConfigError


def english_copies(wanted: int, planned: int, english: int, chinese: int) -> int:
    """The fewest copies k of the English stream (`english` tokens) beside `chinese` tokens such that a run of
    `planned` tokens, drawn uniformly from the stream, sees at least `wanted` English tokens:
    planned * kE / (kE + Z) >= wanted, so k >= wanted * Z / (E * (planned - wanted))."""
    if min(wanted, planned, english, chinese) <= 0:
        raise ConfigError("token counts must be positive")
    if planned <= wanted:
        raise ConfigError(f"a run of {planned:,} tokens cannot see {wanted:,} English tokens beside any Chinese")
    return max(1, math.ceil(wanted * chinese / (english * (planned - wanted))))


def english_share(copies: int, english: int, chinese: int) -> float:
    """The share of the stream (and of a run drawn from it) that is English."""
    return copies * english / (copies * english + chinese)


def mixed_stream(english_ids: list[int], chinese_ids: list[int], copies: int) -> list[int]:
    """The English token stream `copies` times, then the Chinese one (each already ends its documents with EOS)."""
    return english_ids * copies + chinese_ids
