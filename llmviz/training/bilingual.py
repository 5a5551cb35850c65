"""What a bilingual run adds to the trainer: the Chinese corpus beside the English one, the mixed token
stream, and the card's figures (bits per character in both languages beside the character baselines, Chinese
samples, which characters of 济南的冬天 are tokens).

`python -m llmviz.training --preset bilingual --zh-po FOLDER` (FOLDER: `git archive 3.11` of python-docs-zh-cn).
The held-out Chinese text must be the committed `assets/corpus/heldout_zh.txt`: a run never rewrites it (nor the
English `heldout.txt`), it checks that the folder gives the same split.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from llmviz.corpus import read_documents
from llmviz.engine.loading.tokens import byte_decoder
from llmviz.errors import ConfigError
from llmviz.labs.evaluation import bits_per_char, characters
from llmviz.paths import CORPUS
from llmviz.training import corpus_zh
from llmviz.training.baselines import CharModels
from llmviz.training.mix import english_copies, english_share, mixed_stream

EXAMPLE = "济南的冬天"  # the article's running example
HELD_PROMPTS = 5  # the first sentence of each of the first five held-out Chinese documents


@dataclass
class Mix:
    zh: corpus_zh.ZhCorpus
    stream: list[int]  # English ids `copies` times, then the Chinese ids
    copies: int
    share: float  # of the stream that is English
    heldout_zh_ids: list[int]


def chinese_corpus(folder: Path | None, limit: int | None) -> corpus_zh.ZhCorpus:
    if folder is None:
        raise ConfigError("a bilingual run needs --zh-po FOLDER: the folder `git archive 3.11` of "
                          "python/python-docs-zh-cn was extracted into")
    zh = corpus_zh.build(folder)
    if limit:  # the smoke run: a few documents, the split not checked (a folder too small to hold one out: the
        # last training document stands in, as the English smoke run does)
        return corpus_zh.ZhCorpus(zh.train[:limit], zh.heldout[:1] or zh.train[-1:], zh.heldout_files[:1],
                                  zh.sha256, zh.files)
    committed = read_documents(CORPUS / "heldout_zh.txt")
    if zh.heldout != committed:
        raise ConfigError(f"{folder} does not give the committed assets/corpus/heldout_zh.txt (another branch or "
                          "version of the translation?): a run does not rewrite it")
    return zh


def mix(tok, encode, english_ids: list[int], zh: corpus_zh.ZhCorpus, wanted_english: int, planned: int,
        copies: int | None = None) -> Mix:
    """The stream a planned run of `planned` tokens draws from, seeing at least `wanted_english` English tokens
    (or with English repeated `copies` times, as a derived model repeats it like the model it derives from)."""
    chinese_ids = encode(tok, zh.train)
    if copies is None:
        copies = english_copies(wanted_english, planned, len(english_ids), len(chinese_ids))
    return Mix(zh, mixed_stream(english_ids, chinese_ids, copies), copies,
               english_share(copies, len(english_ids), len(chinese_ids)), encode(tok, zh.heldout))


def chars_of(tok):
    """The characters a token id spells, for a trained byte-level tokenizer (the end of a document: one)."""
    table, eos = byte_decoder(), tok.token_to_id("<|endoftext|>")
    return lambda i: 1 if i == eos else characters(bytes(table[c] for c in tok.id_to_token(i)))


def first_sentence(doc: str) -> str:
    line = next(x for x in doc.split("\n") if x.strip())
    return re.split(r"(?<=[。！？])", line.strip())[0]


def prompts(zh: corpus_zh.ZhCorpus) -> list[str]:
    return [EXAMPLE, *(first_sentence(d) for d in zh.heldout[:HELD_PROMPTS])]


def figures(logits_fn, tok, english_heldout_ids: list[int], m: Mix) -> dict:
    """The card's bilingual figures: bits per character on both held-out files, the character baselines counted
    on the Chinese training text, and how 济南的冬天 tokenizes."""
    count = chars_of(tok)
    baseline = CharModels(m.zh.train)
    pieces = [tok.id_to_token(i) for i in tok.encode(EXAMPLE, add_special_tokens=False).ids]
    whole = [ch for ch in EXAMPLE if len(tok.encode(ch, add_special_tokens=False).ids) == 1]
    return {
        "bits_per_char": {"en": round(bits_per_char(logits_fn, english_heldout_ids, count), 4),
                          "zh": round(bits_per_char(logits_fn, m.heldout_zh_ids, count), 4)},
        "zh_baselines_bits_per_char": {"unigram": round(baseline.bits_per_char(m.zh.heldout, 1), 4),
                                       "bigram": round(baseline.bits_per_char(m.zh.heldout, 2), 4)},
        "example": {"text": EXAMPLE, "tokens": len(pieces),
                    "whole_characters": whole, "as_bytes": [ch for ch in EXAMPLE if ch not in whole],
                    "training_counts": {ch: sum(d.count(ch) for d in m.zh.train) for ch in EXAMPLE}},
        "zh_corpus": {"source": "python/python-docs-zh-cn, branch 3.11 (git archive 3.11)", "files": m.zh.files,
                      "train_documents": len(m.zh.train), "heldout_files": m.zh.heldout_files,
                      "chars": m.zh.chars, "sha256": m.zh.sha256},
        "english_copies": m.copies, "english_share": round(m.share, 4),
    }
