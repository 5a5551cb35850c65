"""A class in one room, in the lesson (issue 39): the teacher starts a class from any step; the projector (the
teacher's lesson) shows the join code and, a click or J away, its QR code, how many joined and how many predicted;
a student joins from the QR code's link (`lesson?room=CODE`), anonymous, and their lesson follows the teacher's step
(a step taken on their own leaves the class's pace, and one tap rejoins it). A student's prediction goes to the
class's store; on the teacher's Reveal the projector draws the class's predictions beside the measurement.

Roles come from the URL: `room` (the code) and `teach` (the teacher's key: the teacher's own URL only, never shown
on the page) or `me` (this device's student id, once joined). The rules are llmviz/classroom/classes.py; the shared
state is the store named by LLMVIZ_CLASS_STORE (default: a SQLite file beside the app's data), one per process.
"""

from __future__ import annotations

import contextlib

import streamlit as st

from llmviz.classroom import classes
from llmviz.classroom.classes import ClassError
from llmviz.classroom.store import ClassRecord, Store
from llmviz.classroom.stores import open_store, store_url
from llmviz.ui import state
from llmviz.ui.chrome import literal
from llmviz.ui.lesson.lesson_steps import CHAPTERS

FOLLOW = "llmviz_class_follow"  # False once a student stepped on their own (the class's pace left)
POLL_S = 2.0  # how often a student's device asks the store for the class's step
TEACHER_POLL_S = 1.0  # how often the projector asks for its counts (issue 39: a new count on the wall within 2 s)


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Store:
    return open_store(url)


def store() -> Store:
    """The class store of this server (one per process and URL; each store is safe to share between threads)."""
    return _store(store_url())


def client() -> str:
    """What the join rate limit counts: the peer's address; behind serve-class's balancer (a peer on this machine,
    which Streamlit does not name), the address the balancer saw, which it writes as the one X-Forwarded-For (it
    drops any a client sent). An IPv6 address counts by its /64, as the balancer counts it."""
    import ipaddress

    peer = st.context.ip_address
    if peer is None or peer in ("127.0.0.1", "::1"):
        peer = (st.context.headers.get("X-Forwarded-For") or "").split(",")[-1].strip() or "local"
    try:
        address = ipaddress.ip_address(peer)
    except ValueError:
        return peer[:64]
    return str(ipaddress.ip_network(f"{address}/64", strict=False)) if address.version == 6 else str(address)


def role() -> str | None:
    """"teacher", "student", or None (no class)."""
    s = state.settings()
    if not s.room:
        return None
    return "teacher" if s.teach else "student"


def explain(t, exc: ClassError) -> None:
    st.warning(t(f"class.error.{exc.code}"))


def start(t) -> None:
    """The teacher's button (in the lesson's side row): a new class at this step."""
    if role() is not None:
        return
    if st.button(t("class.start"), key="class_start", icon=":material/groups:", help=t("class.start_help")):
        try:
            code, key = classes.start(store(), step=state.settings().lesson, client=client())
        except ClassError as exc:
            explain(t, exc)
            return
        state.update(room=code, teach=key, me="")
        st.session_state[FOLLOW] = True
        st.rerun()


def record(t) -> ClassRecord | None:
    """The class of the URL's code, joining it first for a student's new device; None (after a message, the code
    dropped from the URL) when it is wrong or ended."""
    s = state.settings()
    try:
        if s.teach:
            found = classes.live(store(), s.room)
            if not classes.is_teacher(found, s.teach):
                raise ClassError("not this class's key", code="teacher_only")
            return found
        if not s.me or not any(x.id == s.me for x in store().students(s.room)):
            state.update(me=classes.join(store(), s.room, client()).id)
            st.session_state[FOLLOW] = True
        return classes.live(store(), s.room)
    except ClassError as exc:
        explain(t, exc)
        state.update(room="", teach="", me="")
        return None


def keep_pace(found: ClassRecord) -> None:
    """Before the page draws: the projector's step goes to the store; a following student, or the teacher's own
    review device (review=1: it reads and approves, it never moves the class), goes to the projector's."""
    s = state.settings()
    if role() == "teacher" and not s.review and found.step != s.lesson:
        classes.move(store(), s.room, s.teach, s.lesson)
    elif (s.review or (role() == "student" and st.session_state.get(FOLLOW, True))) and found.step != s.lesson:
        state.update(lesson=found.step)


def left_pace() -> None:
    """A student's own Back / Next / chapter: their lesson no longer follows the teacher's."""
    if role() == "student":
        st.session_state[FOLLOW] = False


def _rejoin() -> None:
    st.session_state[FOLLOW] = True


def status(t, claim: str | None) -> None:
    """The class's line, asked again by the device's fragment: every TEACHER_POLL_S on the projector, POLL_S on a
    phone."""
    (_projector_status if role() == "teacher" else _student_status)(t, claim)


def _status(t, claim: str | None) -> None:
    """The class's line in the navigation row, asked again every POLL_S: the code and the counts on the projector
    (joined, and on a claim's step how many predicted); on a student's device their name and the pace (a student
    following the teacher moves with them)."""
    s = state.settings()
    found = store().get(s.room) if s.room else None
    if found is None:
        if role() == "student":  # the class ended: the page says so (record) at once, not at the next tap
            st.rerun(scope="app")
        return
    students = store().students(s.room)
    if role() == "teacher":
        answered = len(class_values(claim, found.round)) if claim else None  # the vote open now
        with st.container(key="class-status"):
            st.caption(t("class.projector", code=found.code, joined=len(students)) + (
                "" if answered is None else " · " + t("class.answered", n=answered, joined=len(students))))
        return
    me = next((x.name for x in students if x.id == s.me), "?")
    if st.session_state.get(FOLLOW, True):
        if found.step != s.lesson:  # the teacher moved: this device goes too
            state.update(lesson=found.step)
            st.rerun(scope="app")
        st.caption(t("class.student", code=found.code, name=literal(me)))
    else:
        st.button(t("class.rejoin", step=found.step), key="class_rejoin", on_click=_rejoin, type="primary")


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


REFUSED = "llmviz_class_refused"  # a refusal a callback met, said on the next draw


def predicted(claim_id: str, shown_value: float) -> None:
    """A student moved the prediction slider (its callback): the value, as shown, goes to the class's store in the
    vote open now. Only a move sends it: a rerun never copies a first vote into the second."""
    s = state.settings()
    found = store().get(s.room) if role() == "student" and s.me else None
    if found is None:
        return
    try:
        classes.predict(store(), s.room, s.me, claim_id, found.round, float(shown_value))
    except ClassError as exc:  # the class ended, or the limit: said, and the slider still works for this device
        st.session_state[REFUSED] = exc.code


def say_refused(t) -> None:
    code = st.session_state.pop(REFUSED, None)
    if code is not None:
        st.toast(t(f"class.error.{code}"), icon=":material/block:")


def class_values(claim_id: str, round_: int = 1) -> list[float]:
    """The class's predictions of `claim_id` in that vote, in the slider's units."""
    s = state.settings()
    return list(store().predictions(s.room, claim_id, round_).values()) if s.room else []


SHOWN = "llmviz_class_shown_"  # + claim id: the teacher showed the class's votes before the Reveal


def _second_round() -> None:
    s = state.settings()
    with contextlib.suppress(ClassError):
        classes.second_round(store(), s.room, s.teach)


def votes(t, claim_id: str) -> None:
    """The teacher's peer instruction at a claim's step, before the Reveal: show the class's votes (to argue over),
    then open a second vote."""
    if role() != "teacher":
        return
    found = store().get(state.settings().room)
    with st.container(horizontal=True):
        st.toggle(t("class.show_votes"), key=f"{SHOWN}{claim_id}")
        st.button(t("class.second_round"), key=f"class_round_{claim_id}", on_click=_second_round,
                  disabled=found is None or found.round == 2, help=t("class.second_round_help"))
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
        counted = [(r, *classes.histogram(v, sc.low, sc.high, sc.step, MOST_BINS)) for r, v in votes_ if v or r == 1]
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
            out = classes.summary(store(), s.room, s.teach, chapters=CHAPTERS)
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
            classes.end(store(), s.room, s.teach)
            state.update(room="", teach="", me="")
            st.rerun()


def answered_question(chapter: str, given: float, right: bool) -> None:
    """A student's answer to a chapter's question goes to the class's store too."""
    s = state.settings()
    if role() == "student" and s.me:
        with contextlib.suppress(ClassError):
            classes.answer(store(), s.room, s.me, chapter, float(given), right)


def question_stats(t, chapter: str, unit_shown) -> None:
    """On the projector, under a chapter's question: how many answered right, and the most common wrong answer."""
    if role() != "teacher":
        return
    right, n, common = classes.answer_stats(store(), state.settings().room, chapter)
    with st.container(key="class-answers"):
        st.markdown(t("class.answers", right=right, n=n) + (
            "" if common is None else " " + t("class.common_wrong", value=unit_shown(common[0]), count=common[1])))


_projector_status = st.fragment(run_every=TEACHER_POLL_S)(_status)
_student_status = st.fragment(run_every=POLL_S)(_status)
