"""The budget per client on the page's side: the process's one registry of budgets, the check
at the start of a run, and the wait that a run over it shows instead of the page. The rule and its numbers are
llmviz/classroom/client_budget.py; the client is llmviz/ui/client.py's.

- The frame (llmviz/ui/frame.py) calls `over()` first thing in every run of the page, before anything is drawn or
  computed. A run a little over the budget waits for its token (up to QUEUE_S, asleep in its session's thread: no
  CPU) and then runs; one further over draws only the wait (`refuse`), holds its session HOLD_S and stops.
- Why hold: a refused run still costs Streamlit's own work for a run (~6 ms of CPU here), and a client that sends its
  next rerun the moment the last one ends got 150 refused runs a second from 32 sessions, as much CPU as before
  (bench/rerun_flood.py). A session's thread asleep runs nothing, and what the browser sends meanwhile merges into one
  rerun: each session gets at most one refused run per HOLD_S.
- Around the page's run, its turn by fair share (`turn()`, llmviz/classroom/fair_share.py): when the process is busy,
  the client that has used it least goes next.
- A fragment's rerun runs the fragment alone, not the frame: a fragment that reads the store or does a page's work is
  declared over `gated(fn, kind)`, which charges its own reruns to the budget and runs them in a turn (in a full run,
  which the frame has charged and whose turn it holds, it only calls fn).
- The page's wait comes back by itself: a small fragment reruns the page when the wait is over (that run is charged
  like any other), and a button does it sooner.

Only a served app is limited: AppTest's stand-in runtime names every session "test session id", so all the UI tests
of one process would be one session; a test that checks the gate turns it on (tests/ui/test_client_gate.py).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, NoReturn, TypeVar, cast

import streamlit as st
from streamlit import runtime
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from llmviz.classroom import client_budget
from llmviz.classroom.client_budget import PAGE, POLL, Budget, Verdict
from llmviz.classroom.fair_share import FairShare
from llmviz.i18n.translator import Translator
from llmviz.ui import state
from llmviz.ui.client import client

RETRY_KEY = "rate_retry"  # the Try again button on the wait
QUEUE_S = 2.0  # a run this close to its token waits for it: a class's step followed past the burst is only late
HOLD_S = 5.0  # a refused run holds its session this long: at most one refused run per session per HOLD_S
sleep = time.sleep  # the session's thread waits here (a test's fake clock advances instead)

# Whether this script run holds a turn now: set in the run's own thread and context, never shared between sessions. A
# run never takes a second turn (with one turn a process it would wait for its own to age out).
_HOLDS_TURN: ContextVar[bool] = ContextVar("llmviz_holds_turn", default=False)
F = TypeVar("F", bound=Callable[..., Any])


@st.cache_resource(show_spinner=False)
def _shared(setting: str) -> Budget | None:
    limits = client_budget.from_env(setting)
    return None if limits is None else Budget(limits)


def registry() -> Budget | None:
    """This process's budgets (one per LLMVIZ_CLIENT_BUDGET setting; None when it is `off`), shared by every
    session: the Budget holds its own lock."""
    return _shared(os.environ.get(client_budget.ENV, ""))


def served() -> bool:
    """A real server's run (not AppTest's MagicMock runtime, where every session has the same id)."""
    return runtime.exists() and type(runtime.get_instance()) is Runtime


def session() -> str:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else ""


def over(kind: str = PAGE) -> Verdict | None:
    """Spend one run of `kind` of this session, waiting for a token up to QUEUE_S: None when the run may go on,
    else the refusal (nothing spent)."""
    budget = registry()
    if budget is None or not served():
        return None
    verdict = budget.spend(client(), session(), kind, queue_s=QUEUE_S)
    if not verdict.allowed:
        return verdict
    if verdict.wait_s > 0:
        sleep(verdict.wait_s)
    return None


@st.cache_resource(show_spinner=False)
def _fair() -> FairShare:
    return FairShare()


@contextlib.contextmanager
def turn() -> Iterator[None]:
    """Around a run of the page: its turn by fair share (llmviz/classroom/fair_share.py: when the process is busy, the
    client that has used it least goes next), released however the run ends (st.stop and st.rerun raise). Inside a
    turn already held by this run: nothing more."""
    if registry() is None or not served() or _HOLDS_TURN.get():  # off (LLMVIZ_CLIENT_BUDGET=off), or held already
        yield
        return
    held = _fair().acquire(client())
    holds = _HOLDS_TURN.set(True)
    try:
        yield
    finally:
        _HOLDS_TURN.reset(holds)
        _fair().release(held)


def seconds(verdict: Verdict) -> int:
    """The wait as the page says it: whole seconds, at least the hold (the page cannot come back sooner)."""
    return max(math.ceil(HOLD_S), math.ceil(verdict.wait_s))


def refuse(t, verdict: Verdict) -> NoReturn:
    """Instead of the page: the wait and a button to try again; the page comes back by itself after the wait. The
    session is held HOLD_S, then the run stops."""
    wait = seconds(verdict)
    st.warning(t("rate.wait", seconds=wait), icon=":material/hourglass_top:")
    st.button(t("rate.retry"), key=RETRY_KEY)
    st.fragment(_come_back, run_every=wait)()
    sleep(HOLD_S)
    st.stop()


def _come_back() -> None:
    """Drawn once with the wait (nothing to show); when its timer fires, the page runs again."""
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:
        st.rerun(scope="app")


def gated(fn: F | None = None, kind: str = POLL) -> F | Callable[[F], F]:
    """`fn` as a fragment's body, for `st.fragment(...)(gated(fn, kind))`, or as a decorator under `@st.fragment`:
    `@client_gate.gated(kind=POLL)`. A fragment's own rerun (its timer, a button in it, or anyone asking for it) runs
    alone, without the frame: it spends one run of `kind` (PAGE for a fragment that does a page's work, POLL for one
    that reads the class's state) and runs fn in a turn, as a page's run does; over the budget it draws the wait in
    fn's place, holds the session HOLD_S and runs nothing. In a full run the frame has charged the run and holds its
    turn: fn runs at once. The wrapper keeps fn's name (functools.wraps): st.fragment names a fragment by its
    function's module and qualified name, so the fragment's id is fn's."""
    if fn is None:
        return functools.partial(gated, kind=kind)

    @functools.wraps(fn)
    def gate(*args, **kwargs):
        ctx = get_script_run_ctx()
        if ctx is None or not ctx.fragment_ids_this_run:
            return fn(*args, **kwargs)
        verdict = over(kind)
        if verdict is not None:
            st.caption(Translator(state.settings().lang)("rate.wait_part", seconds=seconds(verdict)))
            sleep(HOLD_S)
            return None
        with turn():
            return fn(*args, **kwargs)

    return cast(F, gate)
