"""The lesson's chapter questions (issue 38), each answer worked by hand from the embedded model's config file
(8 heads of 32, 8 KV heads, 4 layers, d 256, MLP 768, 9,216 tied embeddings, 512 positions) and the student's
draw, and graded: a right answer within rounding, a wrong one, a non-number."""

import json
import math

import pytest
from ui_helpers import EMBEDDED_WEIGHTS

from llmviz.analysis.chapter_check import CHAPTERS, RunFacts, draw, question

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")


@pytest.fixture(scope="module")
def config() -> dict:
    hf = json.loads((EMBEDDED_WEIGHTS.parent / "config.json").read_text())
    return {"hidden_size": hf["hidden_size"], "num_heads": hf["num_attention_heads"],
            "num_kv_heads": hf["num_key_value_heads"], "head_dim": hf["head_dim"],
            "num_layers": hf["num_hidden_layers"], "intermediate_size": hf["intermediate_size"],
            "vocab_size": hf["vocab_size"], "max_position_embeddings": hf["max_position_embeddings"],
            "tie_embeddings": hf["tie_word_embeddings"]}


PICKED = {"more": 3, "block": 8, "later": 128, "outputs": (5, 12, 7, 12), "group": 4}
PER_TOKEN_LAYER = 8 * 32 * 2 * 4  # K and V of one token in one layer, fp32: 2,048 B


def test_each_chapters_answer_by_hand(config):
    facts = RunFacts(config, prompt=9, batch=(9, 3, 5))
    answers = {c: question(c, facts, PICKED).answer for c in CHAPTERS}
    weights = 4 * ((256 * 256 + 2 * 256 * 256 + 256 * 256 + 3 * 256 * 768) + 2 * 256) * 4 + 256 * 4 + 9216 * 256 * 4
    assert weights == 23_077_888  # what the map's caption shows as 22.0 MiB
    assert answers == pytest.approx({
        "1.1": 9 * PER_TOKEN_LAYER,  # 18,432 B
        "1.2": 12 * PER_TOKEN_LAYER * 4,  # three more tokens, four layers
        "2.1": math.ceil(12 / 8),  # 12 tokens in blocks of 8
        "2.2": 100 * 12 * PER_TOKEN_LAYER * 4 / (weights + 12 * PER_TOKEN_LAYER * 4),
        "3.1": (9 - 3) + (9 - 5),  # padded to the longest, 9
        "3.2": (12 - 5) + (12 - 7),  # the slots idle until the longest of 12 finishes
        "4.1": 512 * PER_TOKEN_LAYER * 4 / 2**20,  # 2 MiB at the longest context
        "4.2": 128 * PER_TOKEN_LAYER * 4,
        "5": 2 * 32 * 2 * 4 * 4,  # 8 heads in groups of 4: 2 KV heads
    })


def test_grading_forgives_rounding_only(config):
    q = question("2.2", RunFacts(config, prompt=9), PICKED)
    assert q.unit == "%" and q.right(round(q.answer, 1)) and not q.right(q.answer + 0.2)
    exact = question("2.1", RunFacts(config, prompt=9), PICKED)
    assert exact.right(2) and not exact.right(2.4) and not exact.right(None) and not exact.right(float("nan"))


def test_two_students_draw_two_questions():
    drawn = {tuple(sorted(draw(seed).items())) for seed in range(20)}
    assert len(drawn) > 10 and draw(7) == draw(7)
    assert all(2 <= d["more"] <= 9 and d["block"] in (8, 16, 32) for d in map(draw, range(50)))


def test_bad_facts_and_chapters_are_refused(config):
    with pytest.raises(ValueError):
        RunFacts(config, prompt=0)
    with pytest.raises(ValueError):
        RunFacts(config, prompt=3, batch=(3, 0))
    with pytest.raises(KeyError):
        question("9.9", RunFacts(config, prompt=3), PICKED)
