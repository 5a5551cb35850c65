"""Where a Reveal's measurement comes from, in order: this session's Reveal of the claim; the
Claims page's latest run in this session, when it measured the claim (labelled with its time); the server's
measurement of it, taken since the claim's step opened (measure_ahead: one thread in the heavy queue, shared by
every visitor and every session, so the Reveal after a student's prediction waits seconds; its rounds so far shown
while it runs; the claims its workload serves and the lesson's next claim measured with it) or by another session
or a full page; else a new measurement. One session (or the step's run ahead) at a time measures a claim
(ui/claims/claim_flight.py): the others pressing Reveal on it wait for that measurement and read it, and the lookup
is made again once the heavy slot is granted. A revealed claim gives way to a finer run of its workload measured
since (ui/claims/shared_runs.py: the lesson and the full pages show the newest, most precise one, and say which).
"""

from __future__ import annotations

import os
import time

import streamlit as st

from llmviz.analysis import claim_spec
from llmviz.analysis import reveal as rv
from llmviz.analysis.claim_effects import judged, report
from llmviz.errors import ServerBusyError
from llmviz.ui import client_gate, measure, server, state
from llmviz.ui.claims import claims_run, shared_runs
from llmviz.ui.claims.claim_flight import ClaimFlights
from llmviz.ui.errors import explain
from llmviz.ui.lesson import lesson_class
from llmviz.ui.lesson.lesson_steps import STEPS
from llmviz.ui.public import FRESH_S, LatestClaims
from llmviz.ui.server import load

REVEALED_KEY = "llmviz_lesson_revealed"  # {claim id: entry}, in the order revealed
STORE = "llmviz_lesson_measure"  # measure.run's store of the claim being measured now


def revealed() -> dict[str, dict]:
    return st.session_state.setdefault(REVEALED_KEY, {})


def entry_of(claim: dict, when: str, source: str, predicted: float | None, run: dict | None = None) -> dict:
    """What the lesson keeps of a revealed claim: the judged claim, its comparison, how the lesson got it (source)
    and, for a shared run (`run`: the server's entry, ui/claims/shared_runs.py), when and where it was measured."""
    shared = {"at": run.get("at", 0.0), "run_source": run.get("source", "lesson")} if run else {}
    return {"claim": claim, "when": when, "source": source, **shared, **rv.revealed(claim, predicted)}


@st.cache_resource(show_spinner=False)
def flights() -> ClaimFlights:
    """Which claim each session is measuring now, beside the server's latest measurements (one per process)."""
    return ClaimFlights()


def measured_now(t, claim_id: str, latest: LatestClaims | None = None, patience: float = 1.0) -> dict | None:
    """{"claim", "when", "source"}: the judged claim measured now (quick: 3 repeats), or, when `latest` holds one by
    the time the heavy slot is granted, the server's entry instead ("server"); None after a message."""
    from llmviz import service

    def work(queued):
        with queued() as progress:
            kept = latest.get(claim_id) if latest is not None else None  # looked up again, in the slot
            if kept is not None:
                return {**kept, "source": "server", "run": kept}
            raw = service.measure.claims(
                claim_id, quick=True, device=state.settings().device, load_fn=load,
                progress=lambda f, claim, values: progress(f, t("claims.progress", claim=claim)), patience=patience)
        return {"claim": report(raw)["claims"][0], "when": claims_run.now(), "source": "measured", "at": time.time()}

    return measure.run(t, STORE, None, work, text=t("claims.progress", claim=claim_id),
                       what=("claim", claim_id, patience))  # its expected time: this claim's last Reveal


def shared_reveal(t, claim_id: str) -> dict | None:
    """Public mode: the server's entry for the claim, waiting while another session measures it (a note says so),
    or this session's new measurement, kept for the others; None after a message."""
    shared, latest, p, note = flights(), server.latest_claims(), server.policy(), st.empty()
    try:
        with shared.turn(latest, claim_id, measure.session_id(), p.heavy_wait_s + p.heavy_limit_s,
                         lambda: note.info(rounds_so_far(t, claim_id) or t("lesson.reveal_waiting", claim=claim_id))
                         ) as kept:
            note.empty()
            if kept is not None:
                return {**kept, "source": "server", "run": kept}
            found = measured_now(t, claim_id, latest)
            if found is not None and found["source"] == "measured" and not found["claim"].get("error"):
                run = shared_runs.entry(found["claim"], found["when"], "lesson", found["at"])
                shared.put(latest, claim_id, run)
                found["run"] = run
            return found
    except ServerBusyError as exc:
        explain(t, exc)
        return None
    finally:
        note.empty()


def from_claims_page(claim_id: str) -> dict | None:
    """The Claims page's run in this session of the claim, as a shared run (its entry), or None."""
    rep = claims_run.kept()
    if rep and rep.get("quick") is not None:
        for c in rep["claims"]:
            if c["id"] == claim_id and not c.get("error"):
                return shared_runs.entry(c, rep.get("when", "?"), "claims_page", rep.get("at", 0.0))
    return None


def do_reveal(t, claim_id: str, predicted: float | None) -> None:
    """Reveal pressed: find or take the measurement, keep the entry. The server's, measured since the step
    opened (ahead) or by another session, is shared in the local tool too (one measurement per server,
    the Reveal a wait of seconds)."""
    reused = from_claims_page(claim_id)
    if reused is not None:
        revealed()[claim_id] = entry_of(reused["claim"], reused["when"], "claims_page", predicted, reused)
        return
    found = so_far_or_done(claim_id) or shared_reveal(t, claim_id)
    if found is not None:
        revealed()[claim_id] = entry_of(found["claim"], found["when"], found["source"], predicted, found.get("run"))


REVEAL_WAIT_S = 4.0  # a Reveal waits this long for the step's run ahead, then shows its rounds so far


def so_far_or_done(claim_id: str) -> dict | None:
    """Reveal pressed while the step's run ahead still measures: wait up to REVEAL_WAIT_S for it to end (then None:
    the server's entry is read as usual); still going, its claim judged on the rounds so far, or none yet before its
    first batch ends (source "so_far", followed until the run ends: follow_ahead). None where no run ahead goes on.
    A Reveal never waits on a run ahead longer than that (a few seconds after the prediction)."""
    flights().promote(claim_id)  # someone waits on it: it goes first
    state_ = flights().wait_ahead(claim_id, REVEAL_WAIT_S)
    if state_ is None:
        return None
    claim = state_["claim"] or judged(claim_id, None, "measuring") | {"where": {}, "seconds": None}
    return {"claim": claim, "when": claims_run.now(), "source": "so_far"}


FOLLOW_S = 2.0  # how often a Reveal shown on the rounds so far looks for the run's end


@st.fragment(run_every=FOLLOW_S)
@client_gate.gated
def ahead_note(t, claim_id: str) -> None:
    """Before the Reveal: the step's run ahead and its rounds so far, drawn again as they grow."""
    if claim_id not in revealed() and (line := rounds_so_far(t, claim_id)) is not None:
        st.caption(line)


@st.fragment(run_every=FOLLOW_S)
@client_gate.gated
def follow_ahead(t, claim_id: str) -> None:
    """Under a Reveal shown on the rounds so far: each new batch's figures replace the shown ones, and once the run
    has ended its final measurement does (the whole page drawn again); between them, the rounds so far."""
    e = revealed().get(claim_id)
    if e is None or e["source"] != "so_far":
        return
    state_ = flights().so_far(claim_id)
    if state_ is not None:
        if state_["claim"] is None or state_["rounds"] <= (e.get("rounds") or 0):
            st.caption(rounds_so_far(t, claim_id, "lesson.ahead_after"))  # no new batch yet
            return
        revealed()[claim_id] = entry_of(state_["claim"], claims_run.now(), "so_far", e["predicted"])  # a new batch
    elif (entry := server.latest_claims().get(claim_id)) is not None:  # the run ended: its final figures
        revealed()[claim_id] = entry_of(entry["claim"], entry["when"], "server", e["predicted"], entry)
    else:  # the run failed: the Reveal measures it anew when pressed again
        revealed().pop(claim_id, None)
    st.rerun(scope="app")


AHEAD_FRESH_S = FRESH_S  # an entry of the claim newer than this: opening its step measures nothing again
AHEAD_ENV = "LLMVIZ_MEASURE_AHEAD"  # "0", "off": a step's opening measures nothing (the test suite's setting);
# "step": its own claim, not the lesson's next one too


def ahead_on() -> bool:
    return ahead_mode() not in ("0", "off", "no", "false")


def ahead_mode() -> str:
    return os.environ.get(AHEAD_ENV, "1").strip().lower()


def measure_ahead(t, claim_id: str) -> None:
    """The claim's step opened: its quick measurement starts now on the server (ClaimFlights.ahead: one thread, in
    the heavy queue, shared by every visitor; none when the server holds a recent one or measures it already), so
    that the Reveal after the student's prediction waits seconds; with it the claims its workload serves (K4 with
    K2: one decode pair) and, once the queue is free, the lesson's next claim. A student's phone in a class starts
    none: the projector measures."""
    if not ahead_on() or not server.engine_available() or lesson_class.role() == "student" or claim_id in revealed():
        return
    group = claim_spec.sharing(claim_id)
    flights().ahead(server.latest_claims(), group, ahead_run(group), AHEAD_FRESH_S, slot=heavy_slot(group[0]))
    for nxt in next_claims(claim_id) if ahead_mode() != "step" else ():  # the first not measured lately
        group = claim_spec.sharing(nxt)
        if flights().measuring(nxt) or flights().ahead(server.latest_claims(), group, ahead_run(group),
                                                        AHEAD_FRESH_S, opened=False, slot=heavy_slot(group[0])):
            break


def next_claims(claim_id: str) -> list[str]:
    """The claims of the lesson's claim steps after `claim_id`'s, in order, each workload once and not its own."""
    order = [s.claim for s in STEPS if s.claim]
    after = order[order.index(claim_id) + 1:] if claim_id in order else []
    out: list[str] = []
    for c in after:
        if claim_id not in claim_spec.sharing(c) and not any(o in claim_spec.sharing(c) for o in out):
            out.append(c)
    return out


def heavy_slot(lead: str):
    """The heavy gate's slot a run ahead holds while it measures (public mode), as a factory; None without one."""
    p = server.policy()
    if not p.heavy_slots:
        return None
    gate = server.heavy_gate(p.heavy_slots)
    return lambda: gate.slot(f"ahead:{lead}", p.heavy_wait_s)


def ahead_run(group: tuple[str, ...]):
    """A run ahead of the claims one workload serves: measured once (labs/claims.run_claims), each judged."""
    device = state.settings().device

    def run(note) -> dict[str, dict]:
        from llmviz import service

        raw = service.measure.claims(",".join(group), quick=True, device=device, load_fn=load,
                                     on_batch=lambda cid, figures: note(cid, so_far_claim(cid, figures)))
        return {c["id"]: shared_runs.entry(c, claims_run.now(), "lesson") for c in report(raw)["claims"]
                if not c.get("error")}

    return run


def so_far_claim(claim_id: str, figures: dict) -> dict:
    """A claim judged on the rounds a run ahead has so far, with where it runs."""
    return judged(claim_id, figures) | {"where": {k: figures.get(k) for k in ("model", "device", "threads")},
                                        "seconds": None}


def rounds_so_far(t, claim_id: str, key: str = "lesson.ahead") -> str | None:
    """"Measuring since the step opened: N rounds so far" while the step's run ahead goes on (`key`: before the
    Reveal, or after it, lesson.ahead_after); None otherwise."""
    state_ = flights().so_far(claim_id)
    if state_ is None:
        return None
    return t(key, claim=claim_id, seconds=time.time() - state_["since"], rounds=state_["rounds"])
