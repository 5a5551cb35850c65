"""Step 1.1.5's O(n²) view (llmviz/labs/attention_growth.py, C3): the score matrix it counts against the scores the
engine itself records in a prefill of each length, its lengths against the model's context, and each doubling's
ratios against a hand-worked case. Times are this machine's and are not asserted (bench/, not unit tests, hold
targets): only that each part was timed in every round."""

import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.labs.attention_growth import SCORE_BYTES, attention_growth, doubling_ratios, growth_lengths
from llmviz.labs.prefill_timing import text_ids
from llmviz.trace.config import EngineConfig, SamplingConfig


def test_lengths_double_up_to_the_longest_prompt_the_model_takes():
    assert growth_lengths(512) == [32, 64, 128, 256, 511]  # the embedded model: context 512, a prompt of 511
    assert growth_lengths(1024) == [32, 64, 128, 256, 512]  # GPT-2: capped at 512 (a lesson's view, not a sweep)
    assert growth_lengths(100) == [32, 64, 99]


def test_doubling_ratios_pair_the_rounds_by_hand():
    times = {10: {"attention": [1.0, 2.0, 4.0], "projection": [1.0, 1.0, 2.0]},
             20: {"attention": [4.0, 6.0, 20.0], "projection": [2.0, 3.0, 2.0]}}
    (row,) = doubling_ratios([10, 20], times)
    assert (row["from"], row["to"], row["length"], row["scores"]) == (10, 20, 2.0, 4.0)
    assert row["attention"]["all"] == [4.0, 3.0, 5.0] and row["attention"]["median"] == 4.0  # round by round
    assert row["projection"]["all"] == [2.0, 3.0, 1.0] and row["projection"]["median"] == 2.0


@pytest.mark.parametrize("kind", ["llama_gqa_rope3", "gpt2"])
def test_the_counted_score_matrix_is_the_one_the_engine_records(model_dirs, kind):
    """h x n x n per length against the shape of layer 0's scores the engine records in an eager prefill of the
    same held-out text: every score, the masked half included (a GQA model: h query heads, not its KV heads)."""
    lm = load_model(str(model_dirs[kind]))
    lengths = [8, 16, 24]
    got = attention_growth(lm, lengths, repeats=2)
    assert got["lengths"] == lengths and got["heads"] == lm.cfg.num_heads
    for n, numbers, nbytes in zip(lengths, got["score_numbers"], got["score_bytes"], strict=True):
        cfg = EngineConfig(capture="full", attn_backend="eager", sampling=SamplingConfig(temperature=0))
        scores = Session(lm, None, cfg, prompt_ids=[text_ids(lm, n)]).step().hook("layers.0.scores").array
        assert scores.shape == (1, lm.cfg.num_heads, n, n)
        assert numbers == scores.size and nbytes == scores.size * SCORE_BYTES
    for part in ("attention_ms", "projection_ms"):
        assert all(len(s["all"]) == 2 and s["min"] > 0 for s in got[part])  # each length timed in both rounds
    assert [r["scores"] for r in got["ratios"]] == [4.0, 2.25]  # (16/8)², (24/16)²


def test_lengths_past_the_context_are_refused(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]))
    with pytest.raises(ConfigError, match="lengths must be"):
        attention_growth(lm, [8, lm.cfg.max_position_embeddings])
