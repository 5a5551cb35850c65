"""The one way a page runs a measurement and keeps its result: a comparison, a sweep, a serving
simulation, the claims, the device's ceilings.

    def work(queued):
        lm = server.model(...)                      # before the queue: loading is not measuring
        with queued() as progress:                  # the queue slot; progress(fraction, text) moves the bar
            return service.measure.layout_sweep(..., lambda f, stage, values: progress(f, t("...", **values)))

    result = measure.run(t, SWEEP_KEY, key_of(s), work, text=t("decode.sweep_progress", what="…"))
    ...
    result = measure.kept(SWEEP_KEY, key_of(s))     # on the next draw: the result these inputs produced

`run` shows a progress bar (or a spinner), catches a typed error, running out of memory and a public server's
refusals (ServerBusyError, TimeLimitError) into a message in the session's language (errors.explain), and keeps
the result in the session under `store` beside the inputs that produced it. A measurement that fails keeps
nothing and leaves the result kept before it. The queue slot is always freed, whatever the measurement raised.

Every measurement reports progress in one shape, `progress(fraction, stage, values)` (llmviz/trace/progress.py);
the bar takes `(fraction, text)`: each caller turns a report into the bar's text in the session's language.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TypeVar

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from llmviz.analysis.work import is_light
from llmviz.errors import LlmvizError
from llmviz.i18n.translator import Translator
from llmviz.ui import server
from llmviz.ui.errors import explain
from llmviz.ui.public import Deadline

T = TypeVar("T")
Progress = Callable[[float, str | None], None]  # (fraction done, 0..1; the bar's text now, or None to keep it)
Queued = Callable[[], AbstractContextManager[Progress]]
GATE_LOG = "LLMVIZ_GATE_LOG"  # a file for one line per slot held (a benchmark's; unset: nothing is written)


def session_id() -> str:
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "no-session"


@contextmanager
def slot(t: Translator) -> Iterator[Deadline]:
    """A heavy measurement's turn: in public mode it waits in the server's queue (the place shown) or raises
    ServerBusyError; in the local tool it runs at once. It yields the measurement's Deadline: pass its progress
    callback through `deadline.watch(...)`, so that on a public server a measurement past LLMVIZ_HEAVY_LIMIT_S
    stops (TimeLimitError) at its next report and frees the slot."""
    p = server.policy()
    if not p.heavy_slots:
        yield Deadline.after(p.heavy_limit_s)
        return
    note = st.empty()
    try:
        with server.heavy_gate(p.heavy_slots).slot(session_id(), p.heavy_wait_s,
                                                   lambda ahead: note.info(t("public.waiting", ahead=ahead))):
            note.empty()
            with _logged(session_id()):
                yield Deadline.after(p.heavy_limit_s)  # counted from the slot granted: waiting is not running
    finally:
        note.empty()


@contextmanager
def _logged(session: str) -> Iterator[None]:
    """With LLMVIZ_GATE_LOG naming a file, one JSON line per slot held: its seconds, and the process's CPU seconds
    meanwhile (torch's threads included: exact while one session runs at a time), so that bench/hostile_load.py
    tells the server's CPU inside the gate from the CPU outside it."""
    path, wall, cpu = os.environ.get(GATE_LOG), time.monotonic(), time.process_time()
    try:
        yield
    finally:
        if path:
            line = {"session": session, "wall_s": round(time.monotonic() - wall, 4),
                    "cpu_s": round(time.process_time() - cpu, 4)}
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")


def heavy(t: Translator, seconds: float) -> AbstractContextManager[Deadline]:
    """Engine work a page does outside a measurement (a run opened at a link's step, the KV layouts page's runs,
    the Batch page's prefill), estimated at `seconds` before it runs (llmviz/analysis/work.py): past work.LIGHT_S
    it takes a slot of the server's queue like a measurement (slot: the waiting note, ServerBusyError, the time
    limit); lighter work, and everything in the local tool, runs at once. The caller checks the Deadline yielded
    after each step, so that a request past LLMVIZ_HEAVY_LIMIT_S stops there (TimeLimitError)."""
    return nullcontext(Deadline()) if is_light(seconds) else slot(t)


class _Bar:
    """The progress bar of one measurement (or nothing, behind a spinner): fractions clamped to 0..1."""

    def __init__(self, text: str | None, shown: bool, expect: str = ""):
        self.expect = expect  # what every text ends with while the run goes on: the last run's time
        self.text = None if text is None else text + expect
        self.element = st.progress(0.0, text=self.text) if shown else None

    def report(self, fraction: float, text: str | None = None) -> None:
        self.text = self.text if text is None else text + self.expect
        if self.element is not None:
            self.element.progress(min(1.0, max(0.0, float(fraction))), text=self.text)

    def close(self) -> None:
        if self.element is not None:
            self.element.empty()


class Durations:
    """How long the last run of each measurement took on this server, from its queue slot granted to its end
    (seconds by the measurement's kind: its store, or what the caller names, e.g. a claim; never a session's
    inputs): what a page says to expect before the next run. At most MOST kinds, the oldest forgotten;
    guarded by its own lock."""

    MOST = 256

    def __init__(self):
        self._lock, self._seconds = threading.Lock(), {}

    def get(self, key: Hashable) -> float | None:
        with self._lock:
            return self._seconds.get(key)

    def put(self, key: Hashable, seconds: float) -> None:
        with self._lock:
            self._seconds.pop(key, None)
            self._seconds[key] = seconds  # the newest last
            while len(self._seconds) > self.MOST:
                self._seconds.pop(next(iter(self._seconds)))


@st.cache_resource(show_spinner=False)
def durations() -> Durations:
    return Durations()


EXPECT_FROM_S = 3.0  # a measurement whose last run took longer says how long to expect


def expected(t: Translator, what: Hashable) -> str:
    """" (the last run took about N s)" where the last run of `what` took over EXPECT_FROM_S, else ""."""
    last = durations().get(what)
    return "" if last is None or last <= EXPECT_FROM_S else f" {t('measure.expected', seconds=last)}"


def run(t: Translator, store: str, inputs: Hashable | None, work: Callable[[Queued], T], *, text: str | None = None,
        spinner: str | None = None, what: Hashable | None = None) -> T | None:
    """Run `work` (see the module's docstring) with a progress bar starting at `text`, or with `spinner`'s text,
    the seconds passing, and no bar (a measurement that reports no progress); either says how long the last run of
    the same measurement took (`what`; by default its store: the kind, not the inputs). The result, kept under
    `store` for `inputs`; None after a message."""
    what = store if what is None else what
    expect, began = expected(t, what), []  # began: when the queue's slot was granted (waiting is not running)
    bar = _Bar(text, shown=spinner is None, expect=expect)

    @contextmanager
    def queued() -> Iterator[Progress]:
        with slot(t) as deadline:
            began.append(time.monotonic())
            yield deadline.watch(bar.report)

    try:
        with st.spinner(spinner + expect, show_time=True) if spinner is not None else nullcontext():
            result = work(queued)
        bar.report(1.0)  # done: the bar full, whatever the last report said
        if began:
            durations().put(what, time.monotonic() - began[0])
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)
        return None
    finally:
        bar.close()
    keep(store, inputs, result)
    return result


def keep(store: str, inputs: Hashable | None, result: Any) -> None:
    """Keep `result` under `store` as (inputs, result). Inputs None: a result shown whatever the settings are
    now (the claims report, the device's ceilings: each says itself what it measured), kept alone."""
    st.session_state[store] = result if inputs is None else (inputs, result)


def kept(store: str, inputs: Hashable | None = None) -> Any | None:
    """The result kept under `store` when these inputs produced it (inputs None: whatever is kept there); None
    when none is, or when other inputs produced it."""
    value = st.session_state.get(store)
    if inputs is None:
        return value
    return value[1] if isinstance(value, tuple) and len(value) == 2 and value[0] == inputs else None
