"""The class is the workload (§3.2): at K7's step each student sends a short prompt (on a public server,
picks one from a list); the teacher approves them (the projector shows a text only once approved, its length
before) and runs the class's requests on the real engine through continuous batching, and static batching for
contrast; the projector draws the Gantt of the class's own requests by their names, and each phone shows its own
request's text as drawn, its time to first token and its inter-token latency (analysis/serving.latencies: the
Serving page's rule).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import statistics
import time

import streamlit as st

from llmviz.analysis.serving import latencies
from llmviz.classroom import classes
from llmviz.classroom.classes import ClassError
from llmviz.ui import client_gate, measure, server, state
from llmviz.ui.chrome import literal
from llmviz.ui.lesson import lesson_class
from llmviz.ui.settings import EXAMPLE_PROMPTS

STEP = "3.2.1"  # K7's: continuous batching
RUN_KEY = "llmviz_class_workload"  # measure.run's store of the teacher's run: (code, (results, texts, names))
SLOTS = 4
STREAM_S = 0.5  # how often the run writes each request's text so far, for the phones
MINE_POLL_S = 1.0  # how often a phone asks for its request's text at this step
ROW_PX = 22  # the class's Gantt: a row a student, readable on a projector
PROMPT_KEY = "class_prompt"  # the student's prompt box: typed, or on a public server picked from EXAMPLE_PROMPTS
ERROR_KEY = "class_prompt_error"  # a refusal's catalogue code (class.error.<code>), said under the Send button

log = logging.getLogger(__name__)


def panel(t, step) -> None:
    """Under K7's prediction, in a class: the student's prompt and result, or the teacher's workload."""
    if step.id != STEP or lesson_class.role() is None:
        return
    with st.container(key="class-workload", border=True):
        if lesson_class.role() == "teacher":
            teacher(t)
        else:
            student(t)


def offered() -> bool:
    """Whether the public list's choice is one of its prompts (or not made yet), checked where it enters, before
    anything reads it: a client may send any value for the box over Streamlit's protocol (a number, an index past
    the list, a text of its own), which was submitted as a prompt and then, a number, failed the box with a
    traceback on every rerun. One not on the list is dropped (the box shows its first prompt again), its refusal
    kept for the page, and said in one log line."""
    value = st.session_state.get(PROMPT_KEY)
    if value is None or (isinstance(value, str) and value in EXAMPLE_PROMPTS):
        return True
    del st.session_state[PROMPT_KEY]
    st.session_state[ERROR_KEY] = "not_offered"
    log.warning("refused a class prompt choice not on the public list: a %s (a client's own value)",
                type(value).__name__)
    return False


def send(t) -> None:
    s = state.settings()
    if server.policy().public and not offered():  # nothing but the list's prompts from a public server's phones
        return
    text = st.session_state.get(PROMPT_KEY) or ""
    try:
        classes.submit_prompt(lesson_class.store(), s.lesson.room, s.lesson.me, text)
    except ClassError as exc:
        st.session_state[ERROR_KEY] = exc.code


def student(t) -> None:
    """The student's prompt (typed, or picked on a public server), then what the class's run draws for it, as it
    comes."""
    s = state.settings()
    st.markdown(t("class.workload_student"))
    if server.policy().public:  # nothing typed reaches a public server's projector
        offered()  # before the box reads what the client sent: a value it cannot take never reaches it
        st.selectbox(t("class.prompt"), EXAMPLE_PROMPTS, key=PROMPT_KEY)
    else:
        found = lesson_class.store().get(s.lesson.room)
        st.text_input(t("class.prompt"), key=PROMPT_KEY, max_chars=found.limits.prompt_chars if found else 200)
    st.button(t("class.send"), key="class_send", on_click=send, args=(t,))
    if (code := st.session_state.pop(ERROR_KEY, None)) is not None:
        st.warning(t(f"class.error.{code}"))
    mine(t)


@st.fragment(run_every=MINE_POLL_S)
@client_gate.gated(kind=client_gate.POLL)  # its own reruns: a poll's budget, and a turn
def mine(t) -> None:
    """What this student sent, and their request's text as the class's run draws it (then its TTFT and ITL); asked
    again every MINE_POLL_S, apart from the prompt's box (a poll never redraws what the student is typing)."""
    s = state.settings()
    sent = next((text for sid, text, _, _ in lesson_class.store().prompts(s.lesson.room) if sid == s.lesson.me), None)
    if sent is not None:
        st.caption(t("class.sent", text=literal(sent)))
    result = lesson_class.store().result(s.lesson.room, s.lesson.me)
    if result is None:
        return
    with st.container(key="class-mine"):
        if result.get("partial"):  # the run is drawing it now
            st.markdown(t("class.drawing", text=literal(result["text"]), n=result["tokens"]))
            return
        st.markdown(t("class.yours", text=literal(result["text"])))
        a, b = st.columns(2)
        a.metric(t("class.ttft"), f"{result['ttft_ms']:.0f} ms")
        b.metric(t("class.itl"), "—" if result["itl_ms"] is None else f"{result['itl_ms']:.1f} ms")


class Streamed:
    """The class's requests' tokens as the continuous run draws them (its progress's values), each student's text
    so far written for their phone every STREAM_S (and once more at the end, before the final results)."""

    def __init__(self, text_of, students: list[str], write):
        self.text_of, self.students, self.write = text_of, students, write
        self.tokens: dict[int, list[int]] = {}
        self.changed: set[int] = set()
        self.last = time.monotonic()

    def __call__(self, values: dict) -> None:
        for rid, token in values.get("tokens", {}).items():
            self.tokens.setdefault(rid, []).append(token)
            self.changed.add(rid)
        if time.monotonic() - self.last >= STREAM_S:
            self.flush()

    def flush(self) -> None:
        if self.changed:
            self.write({self.students[rid]: {"text": self.text_of(self.tokens[rid]), "partial": True,
                                             "tokens": len(self.tokens[rid])} for rid in sorted(self.changed)})
        self.changed, self.last = set(), time.monotonic()


def teacher(t) -> None:
    """The projector: the class's requests by name, a text only once approved (its length before); the teacher
    reads and approves them on a second device (review=1, or any that does not lead) or, a click away, here; Run
    serves the approved ones;
    then the Gantt by names and the two schedulers."""
    s = state.settings()
    try:
        rows = classes.workload(lesson_class.store(), s.lesson.room, s.lesson.teach)
    except ClassError as exc:
        lesson_class.explain(t, exc)
        return
    approved = [r for r in rows if r["approved"]]
    st.markdown(t("class.workload_teacher", n=len(rows), approved=len(approved)))
    if not lesson_class.leads():  # a review device (or a second tab): it reads and approves; the projector runs
        review(t, rows)
    elif rows:
        st.table([{t("class.col_name"): literal(r["name"]), t("class.col_prompt"): literal(r["text"]) if
                   r["approved"] else t("class.unapproved", chars=len(r["text"]))} for r in rows], hide_index=True)
        with st.popover(t("class.review_here"), key="class_review_here", help=t("class.review_help")):
            review(t, rows)
    if lesson_class.leads() and st.button(t("class.run", n=len(approved)), key="class_run", type="primary",
                                  disabled=not approved or not server.engine_available()):
        run(t, approved)
    kept = measure.kept(RUN_KEY, s.lesson.room)  # this class's run: (results, texts, names)
    if kept is not None:
        draw(t, kept[0], kept[2])


def review(t, rows: list[dict]) -> None:
    """The texts waiting for approval, each with a box; Approve approves those ticked, as they were read here (a
    text its student changed since stays waiting)."""
    s = state.settings()
    waiting = [r for r in rows if not r["approved"]]
    if not waiting:
        st.caption(t("class.none_waiting"))
        return
    ticked = [r for r in waiting  # a box a student's text: a tick stays with what it was given to
              if st.checkbox(f"{literal(r['name'])}: {literal(r['text'])}", value=True, key=tick_key(r))]
    if st.button(t("class.approve", n=len(ticked)), key="class_approve", disabled=not ticked):
        classes.approve(lesson_class.store(), s.lesson.room, s.lesson.teach,
                        [(r["student"], r["text"]) for r in ticked])
        st.rerun()


def tick_key(row: dict) -> str:
    """A review box's key: the student and their text (a box cleared stays cleared for that text, wherever the list
    puts it; a text changed since is a new box)."""
    return f"class_tick_{row['student']}_{hashlib.sha256(row['text'].encode('utf-8')).hexdigest()[:12]}"


def run(t, rows: list[dict]) -> None:
    """The class's approved requests through both schedulers (the heavy slot on a public server); each student's
    own result to the store, for their phone."""
    from llmviz import service

    s, store = state.settings(), lesson_class.store()

    def write(partial: dict) -> None:
        with contextlib.suppress(ClassError):  # the class ended mid-run: the run's end says so
            classes.put_results(store, s.lesson.room, s.lesson.teach, partial)

    def work(queued):
        lm = server.model(s.model, s.device, s.dtype, **s.load_options())
        trace = service.serving.class_trace(lm, [r["text"] for r in rows])
        streamed = Streamed(lambda ids: service.models.text_of(lm, ids), [r["student"] for r in rows], write)
        with queued() as progress:
            out = {"continuous": service.serving.serve(
                lm, trace, "continuous", slots=SLOTS, device=s.device,
                progress=lambda f, stage, values: (progress(f / 2, None), streamed(values)))}
            streamed.flush()
            out["static"] = service.serving.serve(lm, trace, "static", slots=SLOTS, device=s.device,
                                                  progress=lambda f, stage, values: progress(0.5 + f / 2, None))
        texts = [service.models.text_of(lm, out["continuous"]["outputs"][i]) for i in range(len(rows))]
        return out, texts, [r["name"] for r in rows]  # the texts, not the model: a session keeps no model

    found = measure.run(t, RUN_KEY, s.lesson.room, work, text=t("class.running", n=len(rows)))  # kept for this class
    if found is None:
        return
    results, texts, _ = found
    each = latencies(results["continuous"])
    mine = {r["student"]: {"text": texts[i], "ttft_ms": each[i]["ttft_ms"],
                           "itl_ms": statistics.fmean(each[i]["itl_ms"]) if each[i]["itl_ms"] else None}
            for i, r in enumerate(rows)}
    classes.put_results(lesson_class.store(), s.lesson.room, s.lesson.teach, mine)


def draw(t, results: dict, names: list[str]) -> None:
    """The projector: the class's requests over the continuous run's steps, each row a student's name; under it the
    slots in use under each scheduler and the paged pool's blocks in use (the Serving page's series, from the same
    derivation); the two schedulers' figures."""
    from llmviz.analysis.serving import STATES
    from llmviz.ui.charts import chart, fitted
    from llmviz.ui.serving.serving_view import averaged, batching_view, metrics_table
    from llmviz.viz.serving import gantt, series

    view = batching_view(results)  # derived once per result (the Serving page's cache): a rerun only draws
    cells = view["timeline"]["continuous"]
    fig = gantt(cells, {x: t(f"serving.state.{x}") for x in STATES}, t("class.gantt_title", n=len(names)),
                t("serving.step"), t("class.col_name"), row_labels=dict(enumerate(names)), row_px=ROW_PX)
    with st.container(key="class-gantt"), fitted(None):  # the step's point on the wall: not the panel's cap
        chart(t, fig, key="class_gantt_chart")
    util, blocks = view["utilization"], view["blocks"]
    with st.container(key="class-pool", horizontal=True):
        chart(t, series({t(f"serving.sched.{n}"): line[:2] for n, line in util.items()}, t("serving.util_title"),
                        t("serving.x_step"), t("serving.util_y"), percent=True,
                        note=averaged(t, max(line[2] for line in util.values()))), key="class_util_chart")
        pool = t("serving.blocks_title", total=results["continuous"]["blocks_total"])
        chart(t, series({t("serving.blocks"): blocks[:2]}, pool, t("serving.x_step"), t("serving.blocks"),
                        note=averaged(t, blocks[2])), key="class_blocks_chart")
    metrics_table(t, view["metrics"])
