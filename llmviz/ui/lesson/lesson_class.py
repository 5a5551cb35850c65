"""A class in one room, in the lesson: the teacher starts a class from any step; the projector (the
teacher's lesson) shows the join code and, a click or J away, its QR code, how many joined and how many predicted;
a student joins from the QR code's link (`lesson?room=CODE`), anonymous, and their lesson follows the teacher's step
(a step taken on their own leaves the class's pace, and one tap rejoins it). A student's prediction goes to the
class's store; on the teacher's Reveal the projector draws the class's predictions beside the measurement.

Roles come from the URL: `room` (the code) and `teach` (the teacher's key: the teacher's own URL only, never shown
on the page) or `me` (this device's student id, once joined). Of the teacher's devices one leads (the projector:
it moves the class); another with the key follows it, says so, and takes the lead on a click. The rules are
llmviz/classroom/classes.py; the shared state is the store named by LLMVIZ_CLASS_STORE (default: a SQLite file
beside the app's data), one per process.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from llmviz.analysis.lesson_plan import POSITIONS
from llmviz.classroom import classes
from llmviz.classroom.classes import ClassError
from llmviz.classroom.store import ClassRecord, Store
from llmviz.classroom.stores import open_store, store_url
from llmviz.ui import client_gate, state
from llmviz.ui.chrome import literal
from llmviz.ui.client import client

FOLLOW = "llmviz_class_follow"  # False once a student stepped on their own (the class's pace left)
DEVICE = "llmviz_class_device"  # this browser session's token: which of the teacher's devices leads
LEADS = "llmviz_class_leads"  # whether this teacher's device led the class at its last ask
ASKED = "llmviz_class_asked"  # when this device last asked whether it leads (time.monotonic)
LOST = "llmviz_class_lost"  # this device led, and another took the lead: said once
WAITING = "llmviz_class_waiting"  # (claim, when shown or None) on a student's page: its poll watches for a newer
RELOADED = "llmviz_class_reloaded"  # a tab of the leading browser that does not lead yet (a reload, for RELOAD_S)
OPENED = "llmviz_class_opened"  # the class this session has shown (its first run follows the class's step)
POLL_S = 2.0  # how often a student's device asks the store for the class's step
TEACHER_POLL_S = 1.0  # how often the projector asks for its counts (a new count on the wall within 2 s)


@st.cache_resource(show_spinner=False)
def _store(url: str) -> Store:
    return open_store(url)



def store() -> Store:
    """The class store of this server (one per process and URL; each store is safe to share between threads)."""
    return _store(store_url())


def role() -> str | None:
    """"teacher", "student", or None (no class)."""
    s = state.settings()
    if not s.lesson.room:
        return None
    return "teacher" if s.lesson.teach else "student"


def device() -> str:
    """This teacher's device, "browser.tab": its browser's token (a cookie, so that a reloaded projector is known as
    its own browser and leads on) and this tab's, so that a second tab of the same browser does not lead too."""
    held = st.session_state.get(DEVICE)
    if held is None:
        cookie = st.context.cookies.get(COOKIE) or ""
        browser = cookie if len(cookie) == 16 and all(c in "0123456789abcdef" for c in cookie) else secrets.token_hex(8)
        held = st.session_state[DEVICE] = f"{browser}.{secrets.token_hex(4)}"
    return held


def _browser() -> str:
    return device().partition(".")[0]


COOKIE = "llmviz_device"  # a teacher's browser's token: grants nothing without the key; a class lasts a day at most
_REMEMBER = """<script>
window.parent.document.cookie = "COOKIE=TOKEN; path=/; max-age=86400; SameSite=Strict";
</script>"""


def remember_device() -> None:
    """On a device in a class: its token as a cookie of this browser (our own fixed script and a hex token, in a
    frame of the page's origin), read when the page is opened again: a reloaded projector leads on, and a student's
    browser keeps its one seat however many tabs or sessions it opens."""
    if role() is not None and st.context.cookies.get(COOKIE) != _browser():
        st.iframe(_REMEMBER.replace("COOKIE", COOKIE).replace("TOKEN", _browser()), height=1)


def leads() -> bool:
    """Whether this is the teacher's leading device, the projector (as of this run's ask)."""
    return role() == "teacher" and bool(st.session_state.get(LEADS, False))


def explain(t, exc: ClassError) -> None:
    said = {"too_many_starts": {"n": classes.STARTS}, **{code: {"seconds": round(RETRY_S)} for code in WAITS}}
    st.warning(t(f"class.error.{exc.code}", **said.get(exc.code, {})))


def start(t) -> None:
    """The teacher's button (in the lesson's side row): a new class at this step."""
    if role() is not None:
        return
    if st.button(t("class.start"), key="class_start", icon=":material/groups:", help=t("class.start_help")):
        try:
            code, key = classes.start(store(), step=state.settings().lesson.at, client=client(), device=device(),
                                      steps=POSITIONS)
        except ClassError as exc:
            explain(t, exc)
            return
        except Exception:  # the store itself (a file it cannot write, a Redis out of reach): said, and logged
            logging.getLogger(__name__).exception("the class store refused a new class")
            st.error(t("class.error.store"))
            return
        state.update(lesson={"room": code, "teach": key, "me": ""})
        st.session_state[FOLLOW] = True
        st.session_state[OPENED] = code  # started at this step: the class's own
        st.rerun()


def record(t) -> ClassRecord | None:
    """The class of the URL's code, joining it first for a student's new device; None (after a message, the code
    dropped from the URL) when it is wrong or ended, or (the code kept, tried again every RETRY_S) when the
    network's tries or seats of this minute are spent: a class behind one NAT address joins in a few minutes."""
    s = state.settings()
    try:
        if s.lesson.teach:
            return classes.teacher(store(), s.lesson.room, s.lesson.teach, client=client())  # a failure counts as a try
        if not s.lesson.me or not any(x.id == s.lesson.me for x in store().students(s.lesson.room)):
            seat = classes.join(store(), s.lesson.room, client(), device=_browser())  # its seat, or its own
            state.update(lesson={"me": seat.id})
            st.session_state[FOLLOW] = True
        return classes.live(store(), s.lesson.room)
    except ClassError as exc:
        explain(t, exc)
        if exc.code in WAITS and not s.lesson.teach:  # the network's minute is full: this device tries again by itself
            st.fragment(_try_again, run_every=RETRY_S)()
            return None
        state.update(lesson={"room": "", "teach": "", "me": ""})
        return None


WAITS = ("too_many", "too_many_seats")  # refusals of a minute: the link is kept, and tried again
RETRY_S = 20.0


def _try_again() -> None:
    """Drawn with the refusal (nothing to show); its timer runs the page again, which joins again."""
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:
        st.rerun(scope="app")


def _ask_lead(s, opened: bool = False, within_s: float = 0.0) -> bool:
    """Ask the store whether this teacher's device leads (saying it is there: the lead's heartbeat; `opened`: the
    run that opens the class on this device), and keep the answer for the run; a review device (review=1: it reads
    and approves, it never moves the class) never leads. A device that led and no longer does says so once. An ask
    made within `within_s` stands (the status fragment drawn in the same run as keep_pace: one write, not two)."""
    if within_s and time.monotonic() - st.session_state.get(ASKED, -within_s) < within_s:
        return leads()
    st.session_state[ASKED] = time.monotonic()
    was = leads()
    try:
        now = not s.lesson.review and classes.lead(store(), s.lesson.room, s.lesson.teach, device(), opened=opened)
    except ClassError:  # the class ended meanwhile: the next draw says so
        now = False
    st.session_state[LEADS] = now
    if was and not now:
        st.session_state[LOST] = True
    return now


def keep_pace(found: ClassRecord) -> None:
    """Before the page draws: the leading device's step goes to the store; a following student, or a teacher's
    device that does not lead (a review device, a second tab), goes to the projector's."""
    s = state.settings()
    follows = role() == "student" and st.session_state.get(FOLLOW, True)
    if role() == "teacher":
        # the teacher's link opened (again): it shows the class's step, never moves it (a link kept from an earlier
        # step, a second tab)
        opened = st.session_state.get(OPENED) != s.lesson.room
        st.session_state[OPENED] = s.lesson.room
        _ask_lead(s, opened)
        st.session_state[RELOADED] = not leads() and found.leader.partition(".")[0] == _browser()
        if leads() and not opened and found.step != s.lesson.at:
            try:
                classes.move(store(), s.lesson.room, s.lesson.teach, device(), s.lesson.at)
            except ClassError:  # another device took the lead in between: follow it
                st.session_state[LEADS] = False
        follows = opened or not leads()
    if follows and found.step != s.lesson.at:
        state.update(lesson={"at": found.step})


def _take_lead() -> None:
    s = state.settings()
    with contextlib.suppress(ClassError):
        st.session_state[LEADS] = classes.lead(store(), s.lesson.room, s.lesson.teach, device(), take=True)


def class_reveal(claim_id: str) -> dict | None:
    """On a student's device: the teacher's Reveal of the claim ({"claim", "when"}), or None before it."""
    s = state.settings()
    return classes.reveal_of(store(), s.lesson.room, claim_id) if role() == "student" and s.lesson.room else None


def wait_for_reveal(claim_id: str, when: str | None) -> None:
    """A student's page drew the claim unrevealed (`when` None) or revealed as measured at `when`: its poll asks for
    the teacher's Reveal, or a newer one."""
    st.session_state[WAITING] = (claim_id, when)


def share_reveal(claim_id: str, entry: dict) -> None:
    """On the leading device: its Reveal goes to the class (once, and again when measured anew), so that each
    phone shows the projector's own measurement instead of taking thirty of its own."""
    s = state.settings()
    if not leads():
        return
    held = classes.reveal_of(store(), s.lesson.room, claim_id)
    if held is None or held.get("when") != entry["when"]:
        with contextlib.suppress(ClassError):
            classes.put_reveal(store(), s.lesson.room, s.lesson.teach, claim_id,
                               {"claim": entry["claim"], "when": entry["when"]})


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
    found = store().get(s.lesson.room) if s.lesson.room else None
    if found is None:
        if role() == "student":  # the class ended: the page says so (record) at once, not at the next tap
            st.rerun(scope="app")
        return
    students = store().students(s.lesson.room)
    if role() == "teacher":
        _teacher_status(t, s, found, students, claim)
        return
    if not s.lesson.me:  # no seat yet (its network's minute is full): the page's own retry joins it, not this poll
        return
    me = next((x.name for x in students if x.id == s.lesson.me), None)
    if me is None:  # the teacher removed this seat: the page says so (record) at once
        st.rerun(scope="app")
    if st.session_state.get(FOLLOW, True):
        if found.step != s.lesson.at:  # the teacher moved: this device goes too
            state.update(lesson={"at": found.step})
            st.rerun(scope="app")
        waiting = st.session_state.get(WAITING)
        if claim and waiting is not None and waiting[0] == claim and (
                shared := class_reveal(claim)) is not None and shared["when"] != waiting[1]:
            del st.session_state[WAITING]  # the teacher revealed (or measured anew): the page shows it now, once
            st.rerun(scope="app")
        st.caption(t("class.student", code=found.code, name=literal(me)))
    else:
        st.button(t("class.rejoin", step=found.step), key="class_rejoin", on_click=_rejoin, type="primary")


def _teacher_status(t, s, found: ClassRecord, students: list, claim: str | None) -> None:
    """The projector's counts (and its word that it is there: the lead's heartbeat); a teacher's device that does not
    lead follows the projector's step, says so, and offers the lead (a second tab never fights the projector)."""
    was = leads()
    now = _ask_lead(s, within_s=TEACHER_POLL_S / 2)
    if was != now or (not now and found.step != s.lesson.at):
        if not now:
            state.update(lesson={"at": found.step})
        st.rerun(scope="app")
    answered = len(class_values(claim, found.round)) if claim else None  # the vote open now
    with st.container(key="class-status"):
        st.caption(t("class.projector", code=found.code, joined=len(students)) + (
            "" if answered is None else " · " + t("class.answered", n=answered, joined=len(students))))
        if not now and not s.lesson.review:
            st.button(t("class.take_lead"), key="class_take_lead", on_click=_take_lead, help=t("class.take_lead_help"))


def say_follows(t) -> None:
    """On a teacher's device that does not lead: that it follows the projector (once, as it loses the lead)."""
    if role() != "teacher" or leads() or state.settings().lesson.review or st.session_state.get(RELOADED):
        return  # a reload of the projector: its tab leads again within RELOAD_S, nothing to say
    if st.session_state.pop(LOST, False):
        st.toast(t("class.lead_lost"), icon=":material/cast:")
    st.info(t("class.follows"), icon=":material/cast:")


REFUSED = "llmviz_class_refused"  # a refusal a callback met, said on the next draw


def predicted(claim_id: str, shown_value: float) -> None:
    """A student moved the prediction slider (its callback): the value, as shown, goes to the class's store in the
    vote open now. Only a move sends it: a rerun never copies a first vote into the second."""
    s = state.settings()
    found = store().get(s.lesson.room) if role() == "student" and s.lesson.me else None
    if found is None:
        return
    try:
        classes.predict(store(), s.lesson.room, s.lesson.me, claim_id, found.round, float(shown_value))
    except ClassError as exc:  # the class ended, or the limit: said, and the slider still works for this device
        st.session_state[REFUSED] = exc.code


def name_panel(t) -> None:
    """A student's name in the class: generated (an animal and a number), changeable here (typed; on a public server
    only drawn again, so that nothing typed reaches its projector); the projector and the teacher's summary use it,
    nothing else of the student is kept."""
    from llmviz.ui import server

    s = state.settings()
    if role() != "student" or not s.lesson.me:
        return
    me = next((x.name for x in store().students(s.lesson.room) if x.id == s.lesson.me), None)
    if me is None:
        return
    with st.popover(t("class.name_button", name=literal(me)), key="class_name_menu", icon=":material/badge:"):
        if server.policy().public:
            st.caption(t("class.name_public"))
            st.button(t("class.draw_name"), key="class_draw_name", on_click=_draw_name, icon=":material/casino:")
            return
        st.text_input(t("class.name"), value=me, max_chars=classes.NAME_CHARS, key="class_name")
        st.button(t("class.rename"), key="class_rename", on_click=_rename)


def _draw_name() -> None:
    s = state.settings()
    try:
        classes.draw_name(store(), s.lesson.room, s.lesson.me)
    except ClassError as exc:
        st.session_state[REFUSED] = exc.code


def _rename() -> None:
    s = state.settings()
    try:
        classes.rename(store(), s.lesson.room, s.lesson.me, st.session_state.get("class_name") or "")
    except ClassError as exc:  # an empty or over-long name, or the class ended: said on the next draw
        st.session_state[REFUSED] = exc.code


def say_refused(t) -> None:
    code = st.session_state.pop(REFUSED, None)
    if code is not None:
        st.toast(t(f"class.error.{code}"), icon=":material/block:")


def class_values(claim_id: str, round_: int = 1) -> list[float]:
    """The class's predictions of `claim_id` in that vote, in the slider's units."""
    s = state.settings()
    return list(store().predictions(s.lesson.room, claim_id, round_).values()) if s.lesson.room else []


def answered_question(chapter: str, given: float, right: bool, answer: float) -> None:
    """A student's answer to a chapter's question (and the right one of their draw) goes to the class's store too."""
    s = state.settings()
    if role() == "student" and s.lesson.me:
        with contextlib.suppress(ClassError):
            classes.answer(store(), s.lesson.room, s.lesson.me, chapter, float(given), right, float(answer))


_projector_status = st.fragment(run_every=TEACHER_POLL_S)(client_gate.gated(_status, client_gate.POLL))
_student_status = st.fragment(run_every=POLL_S)(client_gate.gated(_status, client_gate.POLL))
