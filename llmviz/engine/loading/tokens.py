"""Tokenizer wrapper: text <-> ids, and the raw bytes of every token (C1).

Byte-level BPE tokenizers (GPT-2, Llama 3, Qwen2, our embedded model) store each byte as a printable
stand-in character; SentencePiece tokenizers (Llama 2, Mistral) use `▁` for a space and `<0xNN>` for
raw bytes. A CJK character the vocab has no merge for becomes 3 byte tokens, each of which decodes
alone to U+FFFD; their bytes, grouped again, spell the character. So the trace keeps bytes, not
only decoded strings.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

from llmviz.errors import ModelConfigError, PromptError

_BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
_SURROGATE = re.compile("[\ud800-\udfff]")  # half of a UTF-16 pair alone: no UTF-8 encoding exists


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in character -> byte value."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def _is_byte_level(tokenizer) -> bool:
    backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
    if backend is None:
        return False
    try:
        spec = json.loads(backend.to_str())
    except (AttributeError, ValueError):
        return False
    decoder = spec.get("decoder") or {}
    kinds = [decoder.get("type")] + [d.get("type") for d in decoder.get("decoders", [])]
    return "ByteLevel" in kinds


class Tokenizer:
    """The one object the engine uses to turn text into ids and ids into pieces and bytes."""

    def __init__(self, hf_tokenizer, vocab_size: int, eos_ids: tuple):
        self.hf = hf_tokenizer
        self.vocab_size = vocab_size  # rows of the embedding matrix (may exceed the tokenizer's)
        self.eos_ids = tuple(eos_ids) or tuple(i for i in [hf_tokenizer.eos_token_id] if i is not None)
        self.byte_level = _is_byte_level(hf_tokenizer)
        self.special_ids = frozenset(getattr(hf_tokenizer, "all_special_ids", []) or [])

    def encode(self, text: str) -> list[int]:
        if text is not None and not isinstance(text, str):
            raise PromptError(f"the prompt must be text, got {type(text).__name__}", code="prompt_not_text")
        if not text or not text.strip():
            raise PromptError("the prompt is empty: type some text to run the model on", code="prompt_empty")
        bad = _SURROGATE.search(text)
        if bad:  # a lone surrogate (e.g. undecodable bytes in a command line) is not text: no UTF-8
            raise PromptError(f"the prompt is not valid Unicode: a lone surrogate at character {bad.start()} "
                              "(undecodable bytes?); paste it again as UTF-8 text", code="prompt_not_text")
        ids = self.hf.encode(text, add_special_tokens=True)
        if not ids:
            raise PromptError("the prompt encodes to no tokens")
        beyond = next((i for i in ids if not 0 <= i < self.vocab_size), None)
        if beyond is not None:
            raise ModelConfigError(f"the tokenizer gave token id {beyond} but the model has {self.vocab_size} "
                                   "embedding rows: the folder's tokenizer does not belong to these weights")
        return list(ids)

    def decode(self, ids) -> str:
        return self.hf.decode(list(ids), skip_special_tokens=False)

    def piece(self, token_id: int) -> str:
        """The vocabulary entry as stored (e.g. 'Ġthe', '▁the', '<0xE6>')."""
        return self.hf.convert_ids_to_tokens(int(token_id)) or ""

    def token_bytes(self, token_id: int) -> bytes:
        """The raw bytes this token stands for in the text."""
        piece = self.piece(token_id)
        if int(token_id) in self.special_ids:
            return piece.encode("utf-8")
        if self.byte_level:
            table = byte_decoder()
            if all(c in table for c in piece):
                return bytes(table[c] for c in piece)
            return piece.encode("utf-8")
        match = _BYTE_PIECE.match(piece)
        if match:
            return bytes([int(match.group(1), 16)])
        return piece.replace("▁", " ").encode("utf-8")

    def describe(self, ids) -> dict[int, dict]:
        """{id: {"piece", "bytes" (hex), "text", "special"}} for the UI: text is the bytes decoded leniently."""
        out = {}
        for token_id in {int(i) for i in ids}:
            raw = self.token_bytes(token_id)
            out[token_id] = {"piece": self.piece(token_id), "bytes": raw.hex(),
                             "text": raw.decode("utf-8", errors="replace"), "special": token_id in self.special_ids}
        return out
