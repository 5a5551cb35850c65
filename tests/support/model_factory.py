"""Small random checkpoints of every supported family, written by transformers' save_pretrained.

Used by the parity and hook tests: the transformers model loaded from the same folder is the oracle.
"""

from __future__ import annotations

import copy
from pathlib import Path

TEXT = ("The quick brown fox jumps over the lazy dog. Return the list of values. "
        "This module provides functions for working with files and directories. ") * 20

VOCAB = 320  # >= the tokenizer's 256 bytes + merges + 1 special token


def write_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([TEXT], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>")
    fast.save_pretrained(str(folder))


def hf_config(kind: str):
    from transformers import GPT2Config, LlamaConfig, MistralConfig, Qwen2Config

    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=256, bos_token_id=0, eos_token_id=0)
    if kind == "llama_gqa_rope3":  # GQA + Llama 3.1 rope scaling, untied head
        return LlamaConfig(**{**common, "max_position_embeddings": 1024}, num_key_value_heads=2,
                           tie_word_embeddings=False,
                           rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                         "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
    if kind == "llama_tied":  # SmolLM-like: tied embeddings, plain MHA
        return LlamaConfig(**common, num_key_value_heads=4, tie_word_embeddings=True)
    if kind == "qwen2":  # QKV bias, GQA
        return Qwen2Config(**common, num_key_value_heads=2, tie_word_embeddings=False)
    if kind == "mistral":  # sliding window shorter than the run
        return MistralConfig(**common, num_key_value_heads=2, sliding_window=8, tie_word_embeddings=False)
    if kind == "gpt2":
        return GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=256,
                          bos_token_id=0, eos_token_id=0)
    raise KeyError(kind)


KINDS = ("llama_gqa_rope3", "llama_tied", "qwen2", "mistral", "gpt2")


def write_model(kind: str, folder: Path, seed: int = 0) -> Path:
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(copy.deepcopy(hf_config(kind)))
    with torch.no_grad():  # random init is small; widen it so logits differ clearly between tokens
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.2)
    model.save_pretrained(str(folder), safe_serialization=True)
    write_tokenizer(folder)
    return folder
