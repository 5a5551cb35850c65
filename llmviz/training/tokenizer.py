"""A byte-level BPE tokenizer trained on the corpus, saved in the layout transformers loads.

Byte-level means the base vocabulary is the 256 bytes (shown as printable stand-ins, GPT-2 style),
so any text encodes: a character no merge covers, such as 济, becomes its 3 UTF-8 byte tokens.
Id 0 is the only special token, <|endoftext|>: it ends every document and doubles as bos/unk/pad.

With `cjk_min`, each CJK character is split off before merging (like the article's BERT example, a
character is a token): a character seen at least `cjk_min` times in the corpus is one token, any other stays its
UTF-8 bytes. The merges are learned on the text with the CJK characters taken out, and a merge of two pieces made
only of UTF-8 continuation bytes (0x80-0xBF, the middle and end of a character: the 88 9E that ends ∞ ends 舞 too)
is dropped, so no merge joins the bytes of an ideograph; the frequent characters are vocabulary entries of their
own, used whole (BPE's `ignore_merges`).
No token is forced: which characters are tokens follows from the counts alone.

tokenizer_config.json names `PreTrainedTokenizerFast` on purpose: transformers 5 would write
`TokenizersBackend`, which transformers 4.x cannot load.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from llmviz.engine.loading.tokens import byte_decoder
from llmviz.training.corpus import EOS

MODEL_MAX_LENGTH = 512


CJK_CLASS = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"  # the ideographs corpus_zh.CJK counts
_CJK = re.compile(CJK_CLASS)


def train(documents: list[str], vocab_size: int = 4096, cjk_min: int | None = None) -> Tokenizer:
    """BPE merges learned from `documents` until the vocabulary holds `vocab_size` tokens; with `cjk_min`, the
    CJK characters seen at least that often are tokens of their own, within the same `vocab_size`."""
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2 regex split, then bytes
    common = [] if cjk_min is None else cjk_tokens(documents, cjk_min)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = byte_level if cjk_min is None else pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(CJK_CLASS), behavior="isolated"), byte_level])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(common), min_frequency=2, special_tokens=[EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # all 256 bytes, seen or not
    text = documents if cjk_min is None else [_CJK.sub("", d) for d in documents]
    tok.train_from_iterator(text, trainer=trainer, length=len(text))
    return tok if cjk_min is None else with_whole_characters(without_continuation_merges(tok), common)


def without_continuation_merges(tok: Tokenizer) -> Tokenizer:
    """`tok` without the merges whose result is only continuation bytes, nor the merges built on those (in rank
    order), nor their tokens; the ids renumbered in their order."""
    spec = json.loads(tok.to_str())
    byte = byte_decoder()  # the stand-in of each byte -> the byte (the engine's one table)
    vocab, merges = spec["model"]["vocab"], spec["model"]["merges"]
    kept_merges, dropped = [], set()
    for merge in merges:
        left, right = merge if isinstance(merge, list) else merge.split(" ")
        joined = left + right
        if left in dropped or right in dropped or all(0x80 <= byte.get(c, 0) <= 0xBF for c in joined):
            dropped.add(joined)
        else:
            kept_merges.append(merge)
    order = sorted((i, piece) for piece, i in vocab.items() if piece not in dropped)
    spec["model"]["vocab"] = {piece: new for new, (_, piece) in enumerate(order)}
    spec["model"]["merges"] = kept_merges
    return Tokenizer.from_str(json.dumps(spec))


def cjk_tokens(documents: list[str], cjk_min: int) -> list[str]:
    """The CJK characters seen at least `cjk_min` times, most frequent first (ties by code point)."""
    counts = Counter(ch for d in documents for ch in _CJK.findall(d))
    return sorted((ch for ch, n in counts.items() if n >= cjk_min), key=lambda ch: (-counts[ch], ch))


def with_whole_characters(tok: Tokenizer, chars: list[str]) -> Tokenizer:
    """`tok` with each of `chars` a vocabulary entry of its own (its byte-level spelling, as the pre-tokenizer
    writes it), looked up whole before any merge (ignore_merges)."""
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    for ch in chars:
        (piece, _), = tok.pre_tokenizer.pre_tokenize_str(ch)  # e.g. 南 -> the stand-ins of its 3 bytes
        vocab.setdefault(piece, len(vocab))
    spec["model"]["ignore_merges"] = True
    return Tokenizer.from_str(json.dumps(spec))


def tokenizer_config() -> dict:
    """What transformers reads next to tokenizer.json (4.x and 5.x alike)."""
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": MODEL_MAX_LENGTH,
        "bos_token": EOS, "eos_token": EOS, "unk_token": EOS, "pad_token": EOS,
        "add_bos_token": False, "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": {
            "0": {"content": EOS, "lstrip": False, "normalized": False, "rstrip": False,
                  "single_word": False, "special": True},
        },
    }


def save(tok: Tokenizer, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config(), indent=2) + "\n")
    special = {"bos_token": EOS, "eos_token": EOS, "unk_token": EOS, "pad_token": EOS}
    (folder / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n")


def encode_documents(tok: Tokenizer, documents: list[str]) -> list[int]:
    """One token stream: each document's ids followed by the <|endoftext|> id."""
    eos = tok.token_to_id(EOS)
    ids: list[int] = []
    for enc in tok.encode_batch(documents, add_special_tokens=False):
        ids += enc.ids
        ids.append(eos)
    return ids


def verify(folder: Path, sample: str) -> None:
    """AutoTokenizer loads the folder as a fast tokenizer and round-trips `sample` and Chinese text."""
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    assert hf.eos_token == EOS and hf.eos_token_id == 0, (hf.eos_token, hf.eos_token_id)
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
    for text in (sample, "济南的冬天", f"a{EOS}b"):
        ids = hf.encode(text, add_special_tokens=False)
        assert ids == raw.encode(text, add_special_tokens=False).ids, text
        assert hf.decode(ids) == text, (text, hf.decode(ids))
    cjk = hf.encode("济", add_special_tokens=False)
    assert len(cjk) == 3, f"济 should be 3 byte tokens, got {cjk}"  # too rare in either corpus to be a token
