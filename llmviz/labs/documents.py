"""The documents file format of assets/corpus/heldout.txt: documents joined by a line holding only <|endoftext|>.

The trainer (llmviz/training/corpus.py) writes it, the perplexity measurement (evaluation.py) reads it: the format
lives here, below both. No torch here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

EOS = "<|endoftext|>"
SEPARATOR = f"\n{EOS}\n"  # how documents are joined in heldout.txt (and hashed for corpus_sha256)


def write_documents(path: Path, docs: list[str]) -> str:
    """Documents joined by SEPARATOR (a line holding only <|endoftext|>); returns the file's sha256."""
    text = SEPARATOR.join(docs) + "\n"
    path.write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_documents(path: Path) -> list[str]:
    """The inverse of write_documents."""
    return path.read_text(encoding="utf-8").removesuffix("\n").split(SEPARATOR)
