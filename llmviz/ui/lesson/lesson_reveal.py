"""Predict, then reveal: on a claim's step the student may set a prediction, then press Reveal, which
measures that claim on this machine with the Claims page's quick machinery (its batches of rounds, its judging
rule) and shows the prediction, the measurement and the article's A100 figure side by side, with a sentence drawn
from the numbers on why they differ. A prediction never blocks Next.

Where the measurement comes from, and the run that starts when the step opens: ui/lesson/lesson_measure.py.
"""

from __future__ import annotations

import streamlit as st

from llmviz.analysis import claim_spec
from llmviz.analysis import reveal as rv
from llmviz.analysis.claim_effects import interval_values, rounds_judged
from llmviz.analysis.claim_parts import bytes_read, predicted_effect
from llmviz.analysis.claims import CANNOT_TELL, shown
from llmviz.analysis.kv_memory import human
from llmviz.errors import LlmvizError
from llmviz.ui import presenter, server, state
from llmviz.ui.chrome import literal
from llmviz.ui.claims import claim_rounds, claims_run, shared_runs
from llmviz.ui.lesson import class_wall, lesson_again, lesson_class
from llmviz.ui.lesson.lesson_measure import (
    ahead_note,
    do_reveal,
    entry_of,
    flights,
    follow_ahead,
    measure_ahead,
    measured_now,
    revealed,
    rounds_so_far,
)
from llmviz.ui.server import load

MOVED = "llmviz_lesson_moved_"  # + claim id: True once the student moved that claim's prediction slider
PASSED = "llmviz_lesson_passed"  # the claim whose unanswered prediction Next just passed (to say so)
SAID = "llmviz_lesson_passed_said"  # True once that was said: once a session, not at every claim
PREDICTIONS = "llmviz_lesson_predictions"  # {claim id: the effect predicted}: kept when the slider is not drawn


def predictions() -> dict[str, float]:
    """Every prediction this session made, {claim id: its effect}, in the order made: it outlives the slider, whose
    state Streamlit drops on a run that does not draw it (another step, the full page and back)."""
    return st.session_state.setdefault(PREDICTIONS, {})


PATIENCE = 4.0  # "measure until it decides": four times the claim's budget (a Reveal's 10 s become 40 s)


def offer_rounds(t, e: dict) -> None:
    """Cannot tell: the rounds that would decide are offered, in the local tool: measured again with four
    times the claim's budget, its batches pooled until the rule decides. A public server's queue is not held that
    long; its students read the sentence."""
    if (e["verdict"] != CANNOT_TELL or e["source"] == "so_far" or server.policy().public
            or not server.engine_available()):  # not while the step's run still measures it
        return
    if st.button(t("lesson.more_rounds", claim=e["id"], times=PATIENCE), key=f"lesson_more_{e['id']}"):
        found = measured_now(t, e["id"], patience=PATIENCE)
        if found is not None:  # a finer run: the server keeps it for the full pages and the other sessions
            run = shared_runs.entry(found["claim"], found["when"], "lesson", found["at"])
            if not found["claim"].get("error"):
                server.latest_claims().keep(e["id"], run)
            revealed()[e["id"]] = entry_of(found["claim"], found["when"], found["source"], e["predicted"], run)
            st.rerun()


def why(t, e: dict) -> str:
    """The sentence on why this machine's figure and the article's differ, drawn from the numbers: how they stand
    (opposite, smaller, about, larger), and for a claim that does not carry over, its cause here."""
    where = e["claim"].get("where") or {}
    values = {"measured": shown(e["effect"], e["measured"], t), "article": shown(e["effect"], e["article"], t),
              **interval_values(t, rv.judged_effect(e)),
              "device": literal(str(where.get("device", "?"))), "model": literal(str(where.get("model", "?"))),
              "threads": where.get("threads", "?"), **measured_facts(e["claim"].get("figures") or {})}
    if e.get("rounds", 0) == 0 and e["outcome"] in COUNTED_OUTCOMES:  # counted on a request trace, not timed (K7, K9)
        return t("lesson.why.counted", **values) + " " + depends(t, e)
    text = t(f"lesson.why.{e['outcome']}", **values)
    if e["outcome"] in ("smaller", "opposite", "none"):
        key = f"lesson.cause.{e['id']}"
        if any(values[k] == "?" for k in claim_spec.claim(e["id"]).facts):  # a recording without those figures
            key += "_unmeasured"
        text += " " + t(key, **values)
    return text


def measured_facts(f: dict) -> dict:
    """The run's own figures a cause names: KV's share of the bytes a step reads, a step's time and
    the time its bytes take at the bandwidth measured beside it, the bytes a decode step reads, the switches B
    really ran with (a CPU runs the half cache as bf16), each layout's step at the longest length; "?" where this
    run has none. A cause sentence names only these (a claim's declaration lists which: its `facts`)."""
    def ms(x):
        return f"{x:.2f} ms" if isinstance(x, int | float) else "?"

    share, gbps, read = f.get("kv_share_of_read_a"), f.get("bandwidth_gb_per_s"), f.get("read_bytes_a")
    longest = max((int(k.rsplit("_", 1)[1]) for k in f if k.startswith("paged_ms_at_")), default=None)
    return {"kv_share": f"{share:.1%}" if isinstance(share, int | float) else "?",
            "decode_ms": ms(f.get("decode_ms_per_token")), "bound_ms": ms(f.get("bound_ms")),
            "bandwidth": f"{gbps:.1f} GB/s" if isinstance(gbps, int | float) else "?",
            "step_bytes": human(read) if isinstance(read, int | float) else "?",
            "spec_b": literal(str(f["spec_b"])) if f.get("spec_b") else "?", "longest": longest or "?",
            "paged_ms": ms(f.get(f"paged_ms_at_{longest}")), "contiguous_ms": ms(f.get(f"contiguous_ms_at_{longest}"))}


COUNTED_OUTCOMES = ("about", "larger", "holds_smaller", "smaller", "none", "opposite")


def depends(t, e: dict) -> str:
    """What a counted figure depends on, from the run's own trace, as the claim's declaration reads it:
    the requests' lengths (K7), the prefix the prompts share (K9)."""
    read = claim_spec.claim(e["id"]).depends
    said = read(e["claim"].get("figures") or {}) if read is not None else None
    return "" if said is None else t(said[0], **said[1])


def finer_run(claim_id: str, e: dict) -> dict:
    """The revealed claim, or the server's run of its workload when that is finer (ui/public.finer: a full page or
    another run measured it since on more rounds), kept in its place with the time of the one it replaces."""
    if e["source"] in ("so_far", "class"):  # a run still going, or the teacher's: the class reads that one
        return e
    held = shared_runs.finer_on_server(claim_id, {"claim": e["claim"], "at": e.get("at", 0.0)})
    if held is None:
        return e
    more = rounds_judged(held["claim"]) > rounds_judged(e["claim"])  # more precise, or only newer
    revealed()[claim_id] = entry_of(held["claim"], held["when"], "server", e["predicted"], held) | \
        {"replaced": e["when"], "replaced_by": "finer" if more else "newer"}
    return revealed()[claim_id]


def show(t, e: dict) -> None:
    """The prediction, this machine's measurement and the article's figure side by side; the verdict and why."""
    if e["source"] == "so_far" and e["measured"] is None:  # the run ahead has no batch yet: it is said so
        st.info(rounds_so_far(t, e["id"], "lesson.ahead_after") or t("lesson.reveal_waiting", claim=e["id"]),
                icon=":material/hourglass_top:")
        return
    name, here = e["effect"], e.get("predicted_here")
    cols = st.columns(3 if here is None else 4)
    cols[0].metric(t("lesson.your_prediction"), shown(name, e["predicted"], t) if e["predicted"] is not None else "—")
    if e["measured"] is None:
        cols[1].metric(t("lesson.this_machine"), "—")
    else:
        cols[1].metric(t("lesson.this_machine"), shown(name, e["measured"], t),
                       help=t("lesson.spread", **interval_values(t, rv.judged_effect(e))))
    cols[2].metric(t("lesson.article_a100"), shown(name, e["article"], t))
    if here is not None:
        cols[3].metric(t("lesson.predicted_here"), shown(name, here, t), help=t("lesson.predicted_here_help"))
    c = e["claim"]
    if e.get("replaced"):  # a finer run of the workload came after the one first shown
        st.caption(t(f"runs.replaced_{e.get('replaced_by', 'finer')}", run=shared_runs.which_run(t, run_of(e)),
                     old=literal(str(e["replaced"]))))
    with st.container(key="lesson-verdict"):  # the browser walk finds it (inside the first screen)
        claims_run.verdict_box(t, c)
    if e["outcome"] is not None:
        st.markdown(why(t, e))
    class_wall.histogram(t, e["id"], e)  # a class's votes, on the projector
    offer_rounds(t, e)
    if e.get("arithmetic"):
        text = t(f"lesson.arithmetic.{e['arithmetic']}", predicted=shown(name, here, t),
                 why=bytes_because(t, e["id"], c.get("figures") or {}))
        band = rv.judged_effect(e).get("band") or [None, None]
        if e["arithmetic"] == "as_predicted" and band[0] is not None and here < band[0]:  # the article's effect
            text += " " + t("lesson.arithmetic.article_needs", article=shown(name, e["article"], t))  # is out of reach
        st.markdown(text)
    if e["prediction"] is not None:
        st.caption(t(f"lesson.prediction.{e['prediction']}"))
    lesson_again.surprise(t, e)
    lesson_again.again(t, e)
    method(t, e)


def method(t, e: dict) -> None:
    """How it was measured (method paragraphs a beginner need not read first), one click away: where and
    when, the rounds, the sides' switches, the run's A-vs-A noise floor."""
    c = e["claim"]
    figures, where = c.get("figures") or {}, c.get("where") or {}
    rounds = rounds_judged(c)  # the rounds the rule judged
    key = f"lesson.source.{e['source']}" + ("_counted" if e["source"] == "measured" and not rounds else "")
    with st.expander(t("lesson.method"), icon=":material/science:"):
        st.caption(t(key, when=e["when"], model=literal(str(where.get("model", "?"))), rounds=rounds,
                     device=literal(str(where.get("device", "?"))), threads=where.get("threads", "?"),
                     seconds=c.get("seconds") or 0))
        if "run_source" in e:  # a shared run: where, when and on how many rounds
            st.caption(shared_runs.which_run(t, run_of(e)))
        if "spec_b" in figures:  # the switches each side really ran with (a CPU runs K4's half cache as bf16)
            st.caption(t("lesson.sides", a=literal(figures["spec_a"] or "defaults"), b=literal(figures["spec_b"])))
        claims_run.floors(t, c)  # the run's A-vs-A noise floor, where it had a control
        claim_rounds.rounds_view(t, c, "lesson_rounds", only=e["effect"])  # the rounds behind the box


def run_of(e: dict) -> dict:
    """A revealed claim's shared run as shared_runs reads it."""
    return {"claim": e["claim"], "when": e["when"], "source": e.get("run_source", "lesson")}


def bytes_because(t, claim_id: str, read: dict) -> str:
    """Why the bytes predict what they do, as the claim's declaration says: KV's share of a decode step's bytes
    (K4, K10), or the input reads fusing q, k and v saves (K11). `read`: claim_parts.bytes_read of the run or of
    the workload."""
    step = read.get("read_bytes_a")
    return t(f"lesson.arithmetic.{claim_spec.claim(claim_id).bytes_why}", share=read.get("kv_share_of_read_a", 0.0),
             step_bytes=human(step) if isinstance(step, int | float) else "?")


def before_measuring(t, claim_id: str) -> None:
    """What the arithmetic predicts for the very run the Reveal will measure, said before it runs (where
    the article's effect cannot appear here, the app says so first): K4, K10 and K11, from their workload's bytes."""
    claim = claim_spec.claim(claim_id)
    if not claim.from_bytes or not server.engine_available():
        return
    from llmviz import service

    try:
        work = service.measure.claim_workload(claim_id, device=state.settings().device, load_fn=load)
    except (LlmvizError, MemoryError):
        return  # the Reveal itself will say what went wrong
    effect = claim.from_bytes[0]
    st.caption(t("lesson.before", predicted=shown(effect.name, predicted_effect(claim, work)[effect.name], t),
                 why=bytes_because(t, claim_id, bytes_read(work)), article=shown(effect.name, effect.article, t)))
    # one measurement per claim: the Compare page's long-context section runs this very workload
    if st.button(t("lesson.open_workload", claim=claim_id), key=f"lesson_workload_{claim_id}",
                 icon=":material/open_in_new:", help=t("lesson.open_workload_help", n=work["context"])):
        s = state.settings()
        state.update(compare={"model": "" if s.model == work["model"] else work["model"], "a": work["specs"][0],
                              "b": work["specs"][1], "ctx": work["context"], "steps": work["steps"], "run": False})
        st.switch_page("app_pages/compare.py")


def passed(claim_id: str) -> None:
    """Next leaves a claim's step (a callback): if its prediction was neither made nor revealed, the next page says
    so, the first time in this session only (a prediction never blocks Next)."""
    answered = claim_id in revealed() or st.session_state.get(f"{MOVED}{claim_id}")
    if not answered and not st.session_state.get(SAID):
        st.session_state[PASSED], st.session_state[SAID] = claim_id, True


def say_passed(t) -> None:
    """The note of `passed`, once, as a toast (it takes no room on the step it lands on); not on a projector, where
    the teacher leads and the room reads it."""
    claim_id = st.session_state.pop(PASSED, None)
    if claim_id is not None and not presenter.active() and lesson_class.role() != "teacher":
        st.toast(t("lesson.passed", claim=claim_id), icon=":material/lightbulb:", duration="long")


def _moved(claim_id: str, moved: str, slider: str) -> None:
    """The prediction slider moved (its callback): a prediction was made; a student in a class sends it."""
    st.session_state[moved] = True
    predictions()[claim_id] = rv.effect_of(claim_id, st.session_state[slider])
    lesson_class.predicted(claim_id, st.session_state[slider])


def panel(t, claim_id: str) -> None:
    """A claim's step: the prediction slider, Reveal, and what was revealed."""
    sc = rv.scale(claim_id)
    st.markdown(t("lesson.predict", claim=claim_id, article=t(f"claims.article.{claim_id}"),
                  effect=t(f"claims.effect.{rv.effect_name(claim_id)}")))
    left, right = st.columns([3, 1])
    moved, slider = f"{MOVED}{claim_id}", f"lesson_predict_{claim_id}"  # what the student set; untouched: none
    if slider not in st.session_state:  # a first visit, or back from another step or page: the prediction made
        made = predictions().get(claim_id)  # stands again, or the slider starts at no effect
        st.session_state[moved] = made is not None
        start = rv.shown_of(claim_id, 0.0 if made is None else made)
        st.session_state[slider] = float(min(sc.high, max(sc.low, start)))
    label = f"lesson.predict_unit.{claim_id}"  # K1's ratio is of times (bigger: slower), not a speed-up
    value = left.slider(t(label if label in t else f"lesson.predict_unit.{sc.unit}"), sc.low, sc.high,
                        step=sc.step, key=slider, on_change=_moved, args=(claim_id, moved, slider))
    right.write("")
    predicted = rv.effect_of(claim_id, value) if st.session_state.get(moved) else None
    if lesson_class.role() == "student":  # in a class the teacher reveals, and each phone shows that measurement
        shared, held = lesson_class.class_reveal(claim_id), revealed().get(claim_id)
        if shared is not None and (held is None or (held["source"] == "class" and held["when"] != shared["when"])):
            revealed()[claim_id] = entry_of(shared["claim"], shared["when"], "class", predicted)  # or measured anew
        if claim_id not in revealed():
            right.caption(t("class.reveal_on_projector"))
        lesson_class.wait_for_reveal(claim_id, revealed().get(claim_id, {}).get("when"))
    else:
        pressed = right.button(t("lesson.reveal"), key=f"lesson_reveal_{claim_id}", type="primary", width="stretch",
                               disabled=not server.engine_available() and claim_id not in revealed())
        if not server.engine_available():
            st.caption(t("lesson.reveal_off"))
        if pressed:
            do_reveal(t, claim_id, predicted)
    e = revealed().get(claim_id)
    if e is None:
        measure_ahead(t, claim_id)  # while the class thinks
        if lesson_class.role() != "student" and flights().so_far(claim_id) is not None:
            ahead_note(t, claim_id)  # its rounds so far, drawn again as they grow
        class_wall.votes(t, claim_id)  # a class: its votes shown to argue over, and a second vote
        before_measuring(t, claim_id)
    else:
        e = finer_run(claim_id, e)
        if e["source"] != "so_far":  # on the projector: the class's phones show this measurement, once whole
            lesson_class.share_reveal(claim_id, e)
        show(t, e)
        follow_ahead(t, claim_id)  # shown on the rounds so far: replaced when the run ends
