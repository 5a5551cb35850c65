"""The embedded model's corpus, as its files and its trainer define it (no torch here, below every layer that reads
it): the documents file format of assets/corpus/ (documents joined by a line holding only <|endoftext|>), how a raw
text is cleaned into a document, which documents are held out (a hash of the text), and the calibration text a
post-training quantization reads (GPTQ, C21): pydoc topics of the training split, never a held-out document.

The trainer (llmviz/training/corpus.py) writes the corpus; the perplexity measurement (labs/evaluation.py) reads the
held-out file; the GPTQ switch (engine/models/quant_methods.py, through labs/calibration.py) the calibration text.
"""

from __future__ import annotations

import hashlib
import inspect
import re
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


HELDOUT_PER_MILLE = 20  # ~2% of documents, chosen by a hash of their text
MIN_CHARS, MIN_WORDS = 80, 12  # shorter docstrings are mostly "Return self==value."
MAX_NON_ASCII = 0.01  # keep ASCII-ish English: drop a document with more than 1% other characters


def clean(doc: str) -> str | None:
    """One raw docstring or topic -> cleaned text, or None when it is too short or not English."""
    text = inspect.cleandoc(doc.replace("\t", "    ").replace("\r\n", "\n"))  # dedent
    lines = [line.rstrip() for line in text.split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    text = text.replace(EOS, "")  # the separator must never occur inside a document
    if len(text) < MIN_CHARS or len(text.split()) < MIN_WORDS:
        return None
    if sum(ord(c) > 126 for c in text) > MAX_NON_ASCII * len(text):
        return None
    return text


def topic_documents() -> list[str]:
    """Raw pydoc topics, by sorted key (pure data, safe to import in-process)."""
    from pydoc_data.topics import topics
    return [topics[key] for key in sorted(topics)]


def is_heldout(doc: str) -> bool:
    digest = hashlib.sha256(doc.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 1000 < HELDOUT_PER_MILLE


def calibration_documents(chars: int) -> list[str]:
    """The first cleaned pydoc topics of the training split, by sorted key, up to `chars` characters: text of the
    distribution the model was trained on that no perplexity here is measured on (GPTQ's calibration set)."""
    out, total = [], 0
    for raw in topic_documents():
        doc = clean(raw)
        if doc is None or is_heldout(doc):
            continue
        out.append(doc)
        total += len(doc)
        if total >= chars:
            break
    return out
