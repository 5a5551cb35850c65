"""A byte-level BPE tokenizer trained on the corpus, saved in the layout transformers loads.

Byte-level means the base vocabulary is the 256 bytes (shown as printable stand-ins, GPT-2 style),
so any text encodes: a character no merge covers, such as 济, becomes its 3 UTF-8 byte tokens.
Id 0 is the only special token, <|endoftext|>: it ends every document and doubles as bos/unk/pad.

tokenizer_config.json names `PreTrainedTokenizerFast` on purpose: transformers 5 would write
`TokenizersBackend`, which transformers 4.x cannot load.
"""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from llmviz.training.corpus import EOS

MODEL_MAX_LENGTH = 512


def train(documents: list[str], vocab_size: int = 4096) -> Tokenizer:
    """BPE merges learned from `documents` until the vocabulary holds `vocab_size` tokens."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)  # GPT-2 regex split, then bytes
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # all 256 bytes, seen or not
    tok.train_from_iterator(documents, trainer=trainer, length=len(documents))
    return tok


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
    assert len(cjk) == 3, f"济 should be 3 byte tokens, got {cjk}"  # no merge covers it in an English corpus
