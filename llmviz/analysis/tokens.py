"""Tokens as bytes, and byte tokens grouped back into the characters they spell (C1).

A byte-level BPE vocabulary holds all 256 bytes, so any text encodes; a CJK character the vocabulary
has no merge for becomes its 3 UTF-8 bytes, one token each. Each of those tokens decodes alone to
U+FFFD (the replacement character); only the run of tokens that ends on a character boundary spells
the character again. This module finds those runs from the bytes the trace recorded for every token.
Pure Python/numpy: no torch, no streamlit, no plotly.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

REPLACEMENT = "\ufffd"  # what a lone piece of a multi-byte character decodes to
_VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


@dataclass(frozen=True)
class TokenGroup:
    """Tokens start..stop-1 whose bytes together end on a UTF-8 character boundary."""

    start: int
    stop: int
    data: bytes
    text: str

    @property
    def size(self) -> int:
        return self.stop - self.start

    @property
    def split(self) -> bool:
        """Whether the characters of this group were cut into several tokens."""
        return self.size > 1


def trace_token_bytes(tokens: Mapping, ids: Iterable[int]) -> list[bytes]:
    """The raw bytes of each id, from a trace's `tokens` table ({id: {"bytes": hex, ...}})."""
    return [bytes.fromhex(tokens[int(i)]["bytes"]) for i in ids]


def alone(data: bytes) -> str:
    """What one token's bytes decode to on their own (U+FFFD for a piece of a character)."""
    return data.decode("utf-8", errors="replace")


def group_by_character(pieces: list[bytes]) -> list[TokenGroup]:
    """Cut the token sequence after every token whose bytes end on a character boundary.

    A token holding a whole character (or ASCII) is a group of one. Tokens that each hold a piece of
    a character are grouped until the character is complete: e6 | b5 | 8e -> one group "济".
    Invalid bytes (a broken sequence) are replaced by U+FFFD and close the group, never raise.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    groups: list[TokenGroup] = []
    start, buffer, text = 0, b"", ""
    for index, data in enumerate(pieces):
        buffer += data
        text += decoder.decode(data)
        pending, _ = decoder.getstate()
        if pending == b"":  # the bytes so far end on a character boundary
            groups.append(TokenGroup(start, index + 1, buffer, text))
            start, buffer, text = index + 1, b"", ""
    if buffer:  # the text ends inside a character (e.g. a truncated prompt)
        groups.append(TokenGroup(start, len(pieces), buffer, text + decoder.decode(b"", final=True)))
    return groups


def split_groups(groups: list[TokenGroup]) -> list[TokenGroup]:
    """Only the groups whose characters were cut into byte tokens."""
    return [g for g in groups if g.split]


@dataclass(frozen=True)
class CharacterTokens:
    """One non-ASCII character of a text and how the vocabulary holds it (which of 济南的冬天's
    characters are tokens and which stay bytes)."""

    char: str
    first: int  # the position of the (first) token it is in
    tokens: int  # how many tokens spell it: 1 when the vocabulary has it whole (alone or inside a longer token)

    @property
    def whole(self) -> bool:
        return self.tokens == 1


def non_ascii_characters(groups: list[TokenGroup]) -> list[CharacterTokens]:
    """Each non-ASCII character of the grouped tokens, in order, with the tokens that spell it."""
    return [CharacterTokens(c, g.start, g.size) for g in groups for c in g.text if not c.isascii()]


def hex_spaced(data: bytes) -> str:
    """b'\\xe6\\xb5\\x8e' -> 'e6 b5 8e'."""
    return data.hex(" ")


def visible(text: str) -> str:
    """A token's text with spaces and line breaks made visible (␣, ↵), for labels and tables."""
    return "".join(_VISIBLE.get(c, c) for c in text) if text else "∅"


def label(data: bytes) -> str:
    """A short label for one token: its text, or its bytes as <e6> when they are a piece of a character."""
    text = alone(data)
    return f"<{data.hex()}>" if REPLACEMENT in text else visible(text)


def character_labels(pieces: list[bytes]) -> list[str]:
    """A label per token that reads as the text: a token's own text, and a token holding a piece of a
    character that character and which piece of it (e6 | b5 | 8e -> 济·1/3, 济·2/3, 济·3/3), so that a heat map's
    rows spell 济南的冬天 rather than <e6> <b5> <8e>. Broken bytes keep their hex (<ff>)."""
    out: list[str] = []
    for g in group_by_character(pieces):
        if g.split and REPLACEMENT not in g.text:
            out += [f"{visible(g.text)}·{j + 1}/{g.size}" for j in range(g.size)]
        else:
            out += [label(p) for p in pieces[g.start:g.stop]]
    return out


def byte_notes(pieces: list[bytes]) -> list[str]:
    """Each token's character label and its bytes, for a figure's hover: '济·1/3 (e6)'."""
    return [f"{x} ({hex_spaced(p)})" for x, p in zip(character_labels(pieces), pieces, strict=True)]


def position_labels(pieces: list[bytes]) -> list[str]:
    """Axis labels `index:label` (unique even when a token repeats), byte tokens named by their character."""
    return [f"{i}:{x}" for i, x in enumerate(character_labels(pieces))]


def token_label(tokens: Mapping, token_id: int) -> str:
    """`label` of a token from the trace's token table (id -> {"bytes": hex, ...})."""
    info = tokens.get(int(token_id))
    return label(bytes.fromhex(info["bytes"])) if info is not None else f"#{token_id}"


def cache_labels(trace, cursor: int) -> list[str]:
    """The label of every position the KV cache holds after step `cursor`.

    Positions 0..n-1 are the prompt; position n+t-1 is the token sampled at step t-1 (fed in at step t). Byte tokens
    are named by the character they spell (character_labels).
    """
    ids = list(trace.prompt_ids) + [int(s.sampled[0]) for s in trace.steps[:cursor]]
    return character_labels(trace_token_bytes(trace.tokens, ids))
