"""The chapters' questions in the lesson, on the page: each asked on its chapter's last step, graded
against an answer worked out here from the config file and transformers' own tokenizer (not from the page's
arithmetic), a right answer and a wrong one, and the end's summary listing what was answered."""

import json

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz.analysis.chapter_check import draw
from llmviz.i18n.translator import translate
from llmviz.ui.lesson.lesson_check import ANSWERS_KEY, SEED_KEY

PAGE = page_file("lesson")

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")


@pytest.fixture(scope="module")
def hf() -> dict:
    return json.loads((EMBEDDED_WEIGHTS.parent / "config.json").read_text())


@pytest.fixture(scope="module")
def count():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(EMBEDDED_WEIGHTS.parent))
    return lambda text: len(tok(text)["input_ids"])


def per_token(hf) -> int:
    """K and V of one token in every layer, fp32."""
    return hf["num_key_value_heads"] * hf["head_dim"] * 2 * 4 * hf["num_hidden_layers"]


def answer(at, chapter: str, value: float):
    at.number_input(key=f"lesson_q_{chapter}").set_value(value).run()
    at.button(key=f"lesson_q_check_{chapter}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state[ANSWERS_KEY][chapter]


def test_the_cache_after_more_tokens_graded_by_hand(hf, count):
    at = open_app(PAGE, lang="zh", lesson="1.2.7")
    prompt = at.session_state["llmviz_settings"].prompt
    more = draw(at.session_state[SEED_KEY])["more"]
    expected = (count(prompt) + more) * per_token(hf)
    asked = translate("zh", "lesson.q.cache_after", n=count(prompt), more=more)
    assert any(asked in m.value for m in at.markdown), asked
    wrong = answer(at, "1.2", expected + 2048)
    assert not wrong["right"] and wrong["answer"] == expected
    assert any(f"{expected:,}" in w.value for w in at.warning)
    right = answer(at, "1.2", expected)
    assert right["right"] and any(translate("zh", "lesson.q.right", given=f"{expected:,} B") in s.value
                                  for s in at.success)


def test_the_padding_of_the_lessons_batch(count):
    at = open_app(PAGE, lang="zh", lesson="3.1.2")
    prompt = at.session_state["llmviz_settings"].prompt
    lengths = [count(p) for p in dict.fromkeys((prompt, "济南的冬天", "人工智能"))]
    assert answer(at, "3.1", sum(max(lengths) - x for x in lengths))["right"]


def test_the_end_lists_the_answers(hf, count):
    at = open_app(PAGE, lang="en", lesson="1.1.8")  # §1.1's end: its question, the tab shown first
    n = count(at.session_state["llmviz_settings"].prompt)
    shapes = f"[{n}, {hf['num_attention_heads']}, {hf['head_dim']}]"
    assert not any(shapes in m.value for m in at.markdown)  # the recap waits: its numbers hold the answer
    assert translate("en", "lesson.recap_after") in [c.value for c in at.caption]
    answer(at, "1.1", n * per_token(hf) / hf["num_hidden_layers"])
    assert any(shapes in m.value for m in at.markdown)  # answered: the recap, with the run's shapes
    at.button(key="lesson_next").click().run()
    at = open_app(PAGE, lang="en", lesson="end")
    at.session_state[ANSWERS_KEY] = {"1.1": {"chapter": "1.1", "question": "q", "given": 1.0, "answer": 2.0,
                                             "unit": "B", "right": False}}
    at.run()
    assert translate("en", "lesson.end_answers", n=1, right=0) in [m.value for m in at.markdown]
    table = at.table[0].value
    assert list(table[translate("en", "lesson.col_given")]) == ["1 B"] and list(
        table[translate("en", "lesson.col_answer")]) == ["2 B"]
