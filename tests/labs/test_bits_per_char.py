"""Bits per character: the figure that compares models with different tokenizers. Checked on a hand
case and against transformers' own model on the embedded weights."""

import math

import pytest
import torch

from llmviz.labs.evaluation import bits_per_char, characters, engine_bits_per_char, heldout_ids
from llmviz.paths import ASSETS


def test_characters_counts_each_utf8_character_once_across_byte_tokens():
    data = "a济 b".encode()  # 1 + 3 + 1 + 1 bytes, 4 characters
    assert characters(data) == 4
    assert [characters(data[i:i + 1]) for i in range(len(data))] == [1, 1, 0, 0, 1, 1]  # 济 counted at its lead


def test_a_uniform_model_costs_log2_v_bits_per_predicted_token():
    vocab, ids = 16, [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    uniform = lambda chunk: torch.zeros(1, chunk.shape[1], vocab)  # noqa: E731
    chars = {i: 1 + i % 3 for i in set(ids)}  # characters per token, by hand
    # windows of 4: [3,1,4,1] [5,9,2,6] [5,3] predict ids[1:4], ids[5:8], ids[9]
    predicted = ids[1:4] + ids[5:8] + ids[9:]
    want = len(predicted) * math.log2(vocab) / sum(chars[i] for i in predicted)
    assert bits_per_char(uniform, ids, chars.get, window=4) == pytest.approx(want, rel=1e-6)  # fp32 logits


def test_the_engine_figure_is_transformers_own():
    """transformers' model on the same weights and windows gives the NLL; the characters are counted on the text
    the predicted tokens decode to (a document's end as one character), not by the byte rule under test."""
    from transformers import AutoModelForCausalLM

    from llmviz.engine.loading.model import load_model

    lm = load_model("llmviz-tiny")
    ids = heldout_ids(lm.tokenizer)[:1200]  # three windows of 512, the last one short
    ours = engine_bits_per_char(lm, ids)
    hf = AutoModelForCausalLM.from_pretrained(ASSETS / "llmviz-tiny", dtype=torch.float32).eval()
    nll, chars = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(ids) - 1, 512):
            chunk = torch.tensor([ids[i:i + 512]])
            nll += torch.nn.functional.cross_entropy(hf(chunk).logits[0, :-1], chunk[0, 1:], reduction="sum").item()
            run = chunk[0, 1:].tolist()
            ends = [j for j, t in enumerate(run) if t == 0]
            chars += len(ends) + sum(len(lm.tokenizer.hf.decode(part)) for part in
                                     (run[a + 1:b] for a, b in zip([-1, *ends], [*ends, len(run)], strict=True)))
    assert ours == pytest.approx(nll / math.log(2) / chars, rel=1e-3)
