"""The end of a chapter in the lesson: one question answered from the student's run (analysis/chapter_check.py),
graded exactly, then a three-line recap in the article's terms with the numbers of that run (after the answer: the
recap's numbers hold it); the answers
given are kept for the end's summary and its downloads. The numbers a question adds are the student's own draw
(a seed kept for the session), so that neighbours get different questions.
"""

from __future__ import annotations

import secrets

import streamlit as st

from llmviz.analysis.chapter_check import RunFacts, draw, question, recap_values
from llmviz.analysis.kv_memory import human
from llmviz.analysis.predict import ELEMENT_BYTES
from llmviz.errors import LlmvizError
from llmviz.ui import lesson_link, presenter, server, state
from llmviz.ui.lesson import class_wall, lesson_class

ANSWERS_KEY = "llmviz_lesson_answers"  # {chapter: entry}, in the order answered
SEED_KEY = "llmviz_lesson_seed"  # the student's draw
LENGTHS_KEY = "llmviz_lesson_batch_lengths"  # (model, prompts) -> their token counts, tokenized once
UNITS = {"B": "{:,.0f} B", "MiB": "{:,.2f} MiB", "%": "{:.1f}%", "blocks": "{:,.0f}", "slots": "{:,.0f}"}


def answers() -> dict[str, dict]:
    return st.session_state.setdefault(ANSWERS_KEY, {})


def picked() -> dict:
    return draw(st.session_state.setdefault(SEED_KEY, secrets.randbits(32)))


def batch_lengths(run) -> tuple[int, ...]:
    """The token counts of the lesson's batch (what the Batch page opens on from the lesson), by the run's own
    tokenizer; none for a replayed recording (its model may not be here)."""
    if run.key is None:
        return ()
    s, prompts = state.settings(), lesson_link.batch_prompts()
    cache = st.session_state.setdefault(LENGTHS_KEY, {})
    if (s.model, prompts) not in cache:
        from llmviz import service

        try:
            lm = server.model(s.model, s.device, s.dtype, **s.load_options())  # the run's own copy
            cache[(s.model, prompts)] = tuple(len(service.models.tokens(lm, p)) for p in prompts)
        except (LlmvizError, MemoryError):
            return ()
    return cache[(s.model, prompts)]


def weights_format(run) -> str:
    """The run's weights' format as the byte formulas name it (fp32, fp16, bf16)."""
    dtype = str(run.trace.engine_config.get("dtype", "fp32"))
    return dtype if dtype in ELEMENT_BYTES else "fp32"


def facts(run, chapter: str | None = None) -> RunFacts:
    """What the questions and recaps read of the run; the lesson's batch is tokenized only for §3.1's question."""
    kv = run.trace.steps[0].kv
    return RunFacts(run.trace.model_card["config"], len(run.trace.prompt_ids), int(kv["element_bytes"]),
                    weights_format(run), batch_lengths(run) if chapter == "3.1" else ())


def shown_answer(value: float, unit: str) -> str:
    return UNITS[unit].format(value)


def words(values: dict) -> dict:
    """A question's numbers as its text shows them: a list as "9, 3, 5", a byte count in bytes and binary units."""
    out = {}
    for k, v in values.items():
        out[k] = ", ".join(map(str, v)) if isinstance(v, tuple) else v
    return out


def recap(t, run, chapter: str) -> None:
    v = recap_values(facts(run))
    st.markdown(t(f"lesson.recap.{chapter}", **v, **{f"{k}_h": human(v[k]) for k in (
        "layer_bytes", "model_bytes", "token_bytes", "hundred_bytes", "weights", "longest_bytes")}))


def ask(t, run, chapter: str) -> bool:
    """The chapter's question, its answer box and its grade (with the worked answer once graded). Whether it is
    settled: answered, or not askable here."""
    f = facts(run, chapter)
    if chapter == "3.1" and not f.batch:  # a recording: the lesson's batch needs the model's tokenizer
        st.caption(t("lesson.q.needs_tokenizer"))
        return True
    q = question(chapter, f, picked())
    text = t(f"lesson.q.{q.key}", **words(q.values))
    st.markdown(f"**{t('lesson.q.title')}** {text}")
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    given = left.number_input(t("lesson.q.answer", unit=t(f"lesson.q.unit.{q.unit}")), value=None,
                              step=1.0 if q.tolerance < 1 and q.unit in ("blocks", "slots") else None,
                              format="%.2f" if q.unit in ("MiB", "%") else "%.0f", key=f"lesson_q_{chapter}")
    # never disabled: a number typed and not yet sent is sent by the click that leaves its box
    if right.button(t("lesson.q.check"), key=f"lesson_q_check_{chapter}") and given is not None:
        answers()[chapter] = {"chapter": chapter, "question": text, "given": given, "answer": q.answer,
                              "unit": q.unit, "right": q.right(given)}
        lesson_class.answered_question(chapter, given, q.right(given), q.answer)  # a class's student: the class's
    class_wall.question_stats(t, chapter, lambda v: shown_answer(v, q.unit))  # on the projector
    entry = answers().get(chapter)
    if entry is not None and entry["question"] == text:
        worked = t(q.worked, **words(q.values), answer=shown_answer(q.answer, q.unit))
        box = st.success if entry["right"] else st.warning
        box(t("lesson.q.right" if entry["right"] else "lesson.q.wrong", given=shown_answer(entry["given"], q.unit),
              answer=shown_answer(q.answer, q.unit)) + " " + worked)
        return True
    return False


def chapter_end(t, run, chapter: str) -> None:
    """The question first; the recap once it is answered (its numbers would give the answer away: §1.1's names a
    layer's bytes, §4.1's the cache's). On a projector, whose room answers on its phones, the recap waits folded for
    the teacher to open."""
    if ask(t, run, chapter):
        recap(t, run, chapter)
    elif presenter.active() or lesson_class.role() == "teacher":  # the room answers on its phones: the teacher opens it
        with st.expander(t("lesson.recap_open")):
            recap(t, run, chapter)
    else:
        st.caption(t("lesson.recap_after"))
