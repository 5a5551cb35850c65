"""A class in one room, on the projector: the join code and its QR code, the class's votes and a second
vote before a Reveal, the histogram of its predictions beside the Reveal's measurement, the share of right answers to
a chapter's question and its most common mistake, and the way out (the summary to download, then End). Everything
here is the teacher's: a student's device draws none of it. The class's roles and store are lesson_class's.
"""

from __future__ import annotations

import contextlib

import streamlit as st

from llmviz.classroom import classes, tally
from llmviz.classroom.classes import ClassError
from llmviz.ui import client_gate, state
from llmviz.ui.chrome import literal
from llmviz.ui.lesson.lesson_class import class_values, explain, leads, role, store
from llmviz.ui.lesson.lesson_steps import CHAPTERS

JOIN_KEY = "class_join"  # the projector's popover with the code and its QR code (J opens it)


def join_url(code: str) -> str:
    """The link a student's phone opens: this server's lesson with the code (and the projector's language)."""
    here = st.context.url or ""
    base = here.split("?", 1)[0].rsplit("/", 1)[0] if "://" in here else ""
    return f"{base}/lesson?room={code}&lang={state.settings().lang}"


def join_panel(t, code: str) -> None:
    """On the projector: the code, large, its QR code and the link (the teacher's key is in none of them)."""
    import segno

    url = join_url(code)
    with st.popover(t("class.join_button", code=code), key=JOIN_KEY, icon=":material/qr_code_2:"), \
            st.container(key="class-join"):
        st.markdown(t("class.join_how", code=code))
        st.image(segno.make(url, error="m").svg_inline(scale=8, dark="#111", light="#fff"), width=320)
        st.code(url, language=None)


SHOWN = "llmviz_class_shown_"  # + claim id: the teacher showed the class's votes before the Reveal


def _second_round() -> None:
    s = state.settings()
    with contextlib.suppress(ClassError):
        classes.second_round(store(), s.lesson.room, s.lesson.teach)


def votes(t, claim_id: str) -> None:
    """The teacher's peer instruction at a claim's step, before the Reveal: show the class's votes (to argue over),
    then open a second vote."""
    if role() != "teacher":
        return
    found = store().get(state.settings().lesson.room)
    with st.container(horizontal=True):
        st.toggle(t("class.show_votes"), key=f"{SHOWN}{claim_id}")
        st.button(t("class.second_round"), key=f"class_round_{claim_id}", on_click=_second_round,
                  disabled=found is None or found.round == 2 or not leads(), help=t("class.second_round_help"))
    if st.session_state.get(f"{SHOWN}{claim_id}"):
        histogram(t, claim_id)


MOST_BINS = 40


def histogram(t, claim_id: str, e: dict | None = None) -> None:
    """On the projector: the class's votes (the first, and the second where there is one) in the slider's units,
    beside the article's figure and, after the Reveal (`e`), this machine's measurement (the Reveal's own
    measurement object, never a second rule)."""
    from llmviz.analysis import reveal as rv
    from llmviz.ui.charts import chart
    from llmviz.viz.classroom import prediction_histogram

    if role() != "teacher":
        return
    sc = rv.scale(claim_id)
    votes_ = [(r, class_values(claim_id, r)) for r in classes.ROUNDS]
    with st.container(key="class-histogram"):
        if not votes_[0][1] and not votes_[1][1]:
            st.caption(t("class.no_predictions"))
            return
        counted = [(r, *tally.histogram(v, sc.low, sc.high, sc.step, MOST_BINS)) for r, v in votes_ if v or r == 1]
        width = counted[0][1]
        rounds = [(t("class.round", n=r, count=len(v)), counts) for (r, v), (_, _, counts) in zip(
            [x for x in votes_ if x[1] or x[0] == 1], counted, strict=True)]
        per = round(width / sc.step)  # slider positions a bin: a bin's centre is the middle of its positions
        centres = [sc.low + (i * per + (per - 1) / 2) * sc.step for i in range(len(counted[0][2]))]
        measured = None if e is None or e["measured"] is None else rv.shown_of(claim_id, e["measured"])
        article = rv.shown_of(claim_id, rv.article_effect(claim_id))
        fig = prediction_histogram(rounds, centres, width, (sc.low, sc.high), [
            (t("lesson.this_machine"), measured, "#c0392b"), (t("lesson.article_a100"), article, "#555555")],
                                   t("class.histogram_title", n=len(votes_[0][1]), claim=claim_id),
                                   t(f"lesson.predict_unit.{sc.unit}"), t("class.students"))
        chart(t, fig, key="class_histogram_chart")


def end_panel(t) -> None:
    """The teacher's way out: the class's summary to download (students by their generated names, their
    predictions), then End, which deletes every record of the class."""
    import json

    from llmviz.ui.chrome import table_csv

    if role() != "teacher":
        return
    s = state.settings()
    with st.popover(t("class.end"), key="class_end_menu", icon=":material/logout:"):
        try:
            out = classes.summary(store(), s.lesson.room, s.lesson.teach, chapters=CHAPTERS)
        except ClassError as exc:
            explain(t, exc)
            return
        st.caption(t("class.end_how", students=len(out["students"]), predictions=len(out["predictions"])))
        st.download_button(t("claims.download_json"), json.dumps(out, ensure_ascii=False, indent=1),
                           f"class-{out['class']}.json", "application/json", key="class_summary_json")
        st.download_button(t("claims.download_csv"), table_csv(out["predictions"]) if out["predictions"] else "",
                           f"class-{out['class']}-predictions.csv", "text/csv", key="class_summary_csv")
        st.download_button(t("class.answers_csv"), table_csv(out["answers"]) if out["answers"] else "",
                           f"class-{out['class']}-answers.csv", "text/csv", key="class_answers_csv")
        if st.button(t("class.end_now"), key="class_end", type="primary"):
            classes.end(store(), s.lesson.room, s.lesson.teach)
            state.update(lesson={"room": "", "teach": "", "me": ""})
            st.rerun()


def question_stats(t, chapter: str, unit_shown) -> None:
    """On the projector, under a chapter's question: how many answered right, and the most common wrong answer."""
    if role() != "teacher":
        return
    right, n, common = tally.answer_stats(store(), state.settings().lesson.room, chapter)
    said = t("class.answers", right=right, n=n)
    if common is not None:
        ratio, count, value = common
        if value is None and ratio is None:  # no ratio and no one value: nothing common to say
            pass
        elif value is None:  # each on their own numbers: the mistake as a multiple of their right answer
            said += " " + t("class.common_mistake", ratio=times(ratio), count=count)
        elif ratio is None:
            said += " " + t("class.common_wrong", value=unit_shown(value), count=count)
        else:
            said += " " + t("class.common_wrong_ratio", value=unit_shown(value), count=count, ratio=times(ratio))
    with st.container(key="class-answers"):
        st.markdown(said)


def times(ratio: float) -> str:
    """A mistake's ratio to the right answer as a teacher says it: x2, x1/2, x1/1024 (a whole number or its inverse,
    within what a rounded answer leaves: 2%, and at most 0.1), else to two figures (x1.3, x0.058)."""
    for whole, shown in ((1 / ratio, "×1/{}"), (ratio, "×{}")) if ratio > 0 else ():
        if whole >= 2 and abs(whole - round(whole)) <= min(0.02 * whole, 0.1):
            return shown.format(round(whole))
    return f"×{ratio:.2g}"


SEATS_POLL_S = 5.0  # how often the open list of students asks the store again (the projector's only)


def seats_panel(t) -> None:
    """The teacher's list of who joined, by name, each with a remove button: one device stuffing the class is seen
    and removed (its votes, answers and prompt go with it, and its browser cannot join this class again). The list
    is a fragment of its own, asked again every SEATS_POLL_S: students who joined since the page ran show in it."""
    if role() != "teacher":
        return
    with st.popover(t("class.seats_button"), key="class_seats_menu", icon=":material/group:"):
        st.caption(t("class.seats_how", seats=classes.SEATS_PER_MINUTE))
        _seats_list(t)


def _seats(t) -> None:
    s = state.settings()
    for student in store().students(s.lesson.room):
        with st.container(horizontal=True, vertical_alignment="center"):
            st.markdown(literal(student.name))
            st.button(t("class.remove"), key=f"class_remove_{student.id}", on_click=_remove,
                      args=(t, student.id, student.name))


def _remove(t, student_id: str, name: str) -> None:
    s = state.settings()
    with contextlib.suppress(ClassError):
        if classes.remove(store(), s.lesson.room, s.lesson.teach, student_id):
            st.toast(t("class.removed", name=literal(name)), icon=":material/person_remove:")


_seats_list = st.fragment(run_every=SEATS_POLL_S)(client_gate.gated(_seats, client_gate.POLL))
