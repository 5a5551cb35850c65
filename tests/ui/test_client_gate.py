"""The budget per client in the app (llmviz/ui/client_gate.py), with AppTest: a session that runs
the page past its budget first waits for its tokens (up to QUEUE_S), then sees the wait in its language, with no
exception and none of the page (the check comes before anything is drawn), its session held HOLD_S; it gets the page
back once the budget refills; another session is unaffected until the address's own budget is spent; a fragment's
own rerun (client_gate.gated) is charged and runs in a turn of the process's fair share, past its budget draws the wait
in its place, and in a full run (whose turn the frame holds) neither spends nor takes a second turn.

AppTest's runtime is a stand-in that names every session "test session id", so the gate is off there unless a test
turns it on (as `served`); here each AppTest instance is given a session id of its own, the budget a fake clock that
stands still (as for runs arriving together) and the session's waits are recorded, not slept. On a real server the
same code runs with Streamlit's own ids and clock (bench/rerun_flood.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest
from ui_helpers import APP, LANGUAGE_SWITCH, open_app, rendered_text

from llmviz.classroom.client_budget import CLIENT, SESSION, Allowance, Budget, Limits
from llmviz.classroom.fair_share import FairShare
from llmviz.i18n.translator import translate
from llmviz.ui import client_gate

HOLD = int(client_gate.HOLD_S)  # as the page says it, in whole seconds


class Clock:
    now = 5000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def gate(monkeypatch):
    """The gate on, over a small budget with a fake clock; `gate.session` names the session of the next run."""
    clock, current = Clock(), SimpleNamespace(session="a")
    budget = Budget(Limits(session_pages=Allowance(3, 1.0), client_pages=Allowance(5, 1.0),
                           session_polls=Allowance(2, 1.0)), clock=clock)
    verdicts, kinds, spend = [], [], budget.spend

    def recorded(client, session, kind, **kwargs):
        kinds.append(kind)
        verdicts.append(spend(client, session, kind, **kwargs))
        return verdicts[-1]

    monkeypatch.setattr(budget, "spend", recorded)
    current.slept = []
    monkeypatch.setattr(client_gate, "sleep", current.slept.append)
    monkeypatch.setattr(client_gate, "served", lambda: True)
    monkeypatch.setattr(client_gate, "registry", lambda: budget)
    monkeypatch.setattr(client_gate, "session", lambda: current.session)
    current.clock, current.verdicts, current.kinds = clock, verdicts, kinds
    return current


def waiting(at, lang: str, seconds: float) -> bool:
    return any(w.value == translate(lang, "rate.wait", seconds=seconds) for w in at.warning)


def page_drawn(at) -> bool:
    """The frame's sidebar (the language switch) and the Home page's title: what every full run draws."""
    return any(r.label == LANGUAGE_SWITCH for r in at.radio) and len(at.title) > 0


def test_a_session_over_its_budget_queues_then_sees_the_wait_and_none_of_the_page(gate):
    at = open_app(lang="zh")  # run 1 of the session's 3 (1 a second after them)
    assert page_drawn(at) and not at.warning
    at.run().run()  # runs 2 and 3, at once (the clock stands still)
    at.run().run()  # runs 4 and 5: their tokens come in 1 and 2 s, within QUEUE_S: they wait, then run
    assert page_drawn(at) and gate.slept == [1.0, 2.0]
    at.run()  # run 6: its token 3 s away
    assert not at.exception
    assert waiting(at, "zh", HOLD) and not page_drawn(at)
    assert gate.slept == [1.0, 2.0, client_gate.HOLD_S]  # the session held, then the run stopped
    assert at.button(key=client_gate.RETRY_KEY).label == translate("zh", "rate.retry")
    assert LANGUAGE_SWITCH not in rendered_text(at) and not at.title and not at.markdown
    assert [v.reason for v in gate.verdicts] == ["", "", "", "", "", SESSION]  # this session's own pace
    gate.clock.now += 3.0  # its queue served: a token back
    at.run()
    assert page_drawn(at) and not at.warning and not at.exception
    assert at.session_state["llmviz_settings"].lang == "zh"  # the refusal lost nothing of the session


def test_another_session_is_unaffected_until_the_address_is_spent(gate):
    at = open_app(lang="en")
    at.run().run().run().run().run()
    assert waiting(at, "en", HOLD)  # "a" spent its 3, queued 2 and was refused: 5 of the address's tokens
    gate.session = "b"
    other = open_app(lang="en")  # the address's 6th: its token 1 s away, queued
    assert page_drawn(other)
    other.run()  # the 7th: 2 s away, queued
    assert page_drawn(other)
    other.run()  # the 8th: 3 s away
    assert waiting(other, "en", HOLD) and not page_drawn(other) and not other.exception
    assert gate.verdicts[-1].reason == CLIENT  # the address's budget, spent
    gate.clock.now += 2.0
    other.run()
    assert page_drawn(other)


def test_the_gate_is_off_in_plain_apptest():
    """Every AppTest instance is the one session "test session id": without the switch the UI tests of a process
    would share one budget. 40 runs at AppTest's pace (past any session's burst) are all drawn."""
    assert not client_gate.served()  # AppTest's MagicMock runtime
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    for _ in range(40):
        at.run()
    assert page_drawn(at) and not at.warning


class Turns(FairShare):
    """The process's turns (one, as in the app), with a log of what was taken and given back."""

    def __init__(self):
        super().__init__(slots=1, long_s=60.0, most_wait_s=60.0)  # a second turn taken by one run would hang here
        self.log: list[str] = []

    def acquire(self, client: str):
        turn = super().acquire(client)
        self.log.append("acquire")
        return turn

    def release(self, turn) -> None:
        self.log.append("release")
        super().release(turn)


@pytest.fixture
def turns(monkeypatch):
    share = Turns()
    monkeypatch.setattr(client_gate, "_fair", lambda: share)
    return share


def fragment_rerun(monkeypatch) -> None:
    """AppTest reruns a fragment as part of the whole script, so its own rerun is played by the run's context
    (fragment_ids_this_run set, as Streamlit sets it for a fragment's rerun)."""
    monkeypatch.setattr(client_gate, "get_script_run_ctx", lambda: SimpleNamespace(fragment_ids_this_run=["f"]))


FRAGMENT_SCRIPT = """
import streamlit as st
from llmviz.ui import client_gate

def line():
    client_gate._fair().log.append("line")
    st.write("the class's line")

st.fragment(client_gate.gated(line, client_gate.POLL))()
"""


def test_a_fragment_s_rerun_is_charged_runs_in_a_turn_and_over_its_budget_draws_the_wait(gate, turns, monkeypatch):
    at = AppTest.from_string(FRAGMENT_SCRIPT).run()
    assert [m.value for m in at.markdown] == ["the class's line"]  # a full run: allowed, nothing spent, no turn
    assert gate.verdicts == [] and turns.log == ["line"]
    fragment_rerun(monkeypatch)
    at.run().run().run().run()  # the session's 2 polls, and 2 queued (their tokens 1 and 2 s away)
    assert [m.value for m in at.markdown] == ["the class's line"] and gate.slept == [1.0, 2.0]
    assert turns.log == ["line"] + ["acquire", "line", "release"] * 4  # each rerun inside a turn of its own
    at.run()
    wait = translate("en", "rate.wait_part", seconds=HOLD)
    assert not at.markdown and [c.value for c in at.caption] == [wait]
    assert [v.reason for v in gate.verdicts] == ["", "", "", "", SESSION]  # the full run spent nothing
    assert gate.kinds == ["poll"] * 5 and gate.slept == [1.0, 2.0, client_gate.HOLD_S]
    assert turns.log[-1] == "release"  # refused: no turn taken, nothing of the fragment run
    gate.clock.now += 2.0  # the queue served: the next poll's token 1 s away, queued again
    at.run()
    assert [m.value for m in at.markdown] == ["the class's line"] and gate.slept[-1] == 1.0
    assert turns.log[-3:] == ["acquire", "line", "release"]


FRAMED_SCRIPT = """
import streamlit as st
from llmviz.ui import client_gate

@st.fragment
@client_gate.gated(kind=client_gate.PAGE)
def step():
    client_gate._fair().log.append("step")
    st.write("a step")

with client_gate.turn():  # the frame's turn, as llmviz/ui/frame.py holds it around the page
    step()
"""


def test_a_run_that_holds_its_turn_never_takes_a_second(gate, turns, monkeypatch):
    """In a full run the frame holds the run's turn: the fragment runs at once, spending nothing (with one turn a
    process, a second would wait for the first to age out). Inside a turn already held, not even a fragment's rerun
    takes another."""
    at = AppTest.from_string(FRAMED_SCRIPT).run(timeout=10)
    assert [m.value for m in at.markdown] == ["a step"] and not at.exception
    assert turns.log == ["acquire", "step", "release"] and gate.verdicts == []
    fragment_rerun(monkeypatch)
    at.run(timeout=10)
    assert [m.value for m in at.markdown] == ["a step"] and not at.exception
    assert turns.log == ["acquire", "step", "release"] * 2 and gate.kinds == ["page"]


def test_a_gated_fragment_keeps_its_function_s_name():
    """st.fragment names a fragment by its function's module and qualified name: the gate keeps both, so a gated
    fragment's id is the one it had (and two gated functions are still two fragments)."""

    def poll(t, claim=None) -> None:
        """The class's line."""

    for gated in (client_gate.gated(poll, client_gate.POLL), client_gate.gated(kind=client_gate.PAGE)(poll)):
        assert (gated.__module__, gated.__qualname__, gated.__doc__) == (poll.__module__, poll.__qualname__,
                                                                          poll.__doc__)
        assert gated.__wrapped__ is poll


def test_the_address_s_refusal_reads_the_same(gate):
    """A session refused because its address is spent sees the same wait as one over its own pace."""
    gate.session = "c"
    at = open_app(lang="en")
    at.run().run()
    gate.session = "d"
    other = open_app(lang="en")
    other.run()  # the address's 5
    gate.session = "e"
    third = open_app(lang="en")
    third.run()  # queued for the 6th and 7th tokens, 1 and 2 s away
    gate.session = "f"
    fourth = AppTest.from_file(APP, default_timeout=60)
    fourth.query_params["lang"] = "en"
    fourth.run()  # a new session: the 8th, 3 s away
    assert waiting(fourth, "en", HOLD) and not page_drawn(fourth) and not fourth.exception
    assert gate.verdicts[-1].reason == CLIENT
