"""llmviz/ui/measure.py, the one "run a measurement and keep its result" helper every page uses: a
measurement that fails shows its message and keeps nothing, the kept result is found for the inputs that produced
it only, the public queue's slot is freed whatever the measurement raised, and the bar ends full."""

from __future__ import annotations

import pytest
import streamlit
from streamlit.testing.v1 import AppTest

STORE = "test_measure_result"


def page():
    """A page with one measurement. session_state: mode (ok, raise, oom, slow, short, spinner), inputs, go."""
    import time

    import streamlit as st

    from llmviz.errors import PromptError
    from llmviz.i18n.translator import Translator
    from llmviz.ui import measure

    mode, inputs = st.session_state["mode"], st.session_state["inputs"]

    def work(queued):
        if mode == "raise_before_queue":
            raise PromptError("no prompt given before the queue")
        with queued() as progress:
            if mode == "raise":
                raise PromptError("the prompt is empty")
            if mode == "oom":
                raise MemoryError("20 GiB asked")
            if mode == "slow":  # past the public limit by the first report
                time.sleep(0.05)
            for fraction in ((0.25, 0.5) if mode == "short" else (0.25, 0.5, 1.5)):
                progress(fraction, f"at {fraction}")
        return {"made_from": inputs}

    if st.session_state.pop("go", False):
        measure.run(Translator("en"), "test_measure_result", inputs, work, text="starting",
                    spinner="busy" if mode == "spinner" else None)
    st.session_state["shown"] = measure.kept("test_measure_result", inputs)


class Seen(list):
    """The values a bar was set to, and its texts beside them (`texts`)."""

    texts: list


@pytest.fixture
def bars(monkeypatch):
    """Every value the measurement's progress bar was set to, in order ("empty" when it was removed); `.texts`:
    the text it showed with each value."""
    seen = Seen()
    seen.texts = []
    real = streamlit.progress

    class Recorded:
        def __init__(self, value, text=None):
            seen.append(value)
            seen.texts.append(text)
            self.bar = real(value, text=text)

        def progress(self, value, text=None):
            seen.append(value)
            seen.texts.append(text)
            self.bar.progress(value, text=text)

        def empty(self):
            seen.append("empty")
            self.bar.empty()

    monkeypatch.setattr(streamlit, "progress", Recorded)
    return seen


def measure_once(at: AppTest, mode: str, inputs) -> AppTest:
    at.session_state["mode"], at.session_state["inputs"], at.session_state["go"] = mode, inputs, True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def new_page() -> AppTest:
    return AppTest.from_function(page, default_timeout=30)


def test_the_result_is_kept_for_its_inputs_only(bars):
    at = measure_once(new_page(), "ok", ("model-a", 3))
    assert at.session_state["shown"] == {"made_from": ("model-a", 3)}
    assert at.session_state[STORE] == (("model-a", 3), {"made_from": ("model-a", 3)})  # beside its inputs
    at.session_state["inputs"] = ("model-a", 4)  # another setting: not this result
    at.run()
    assert at.session_state["shown"] is None
    at.session_state["inputs"] = ("model-a", 3)  # back: found again, nothing rerun
    at.run()
    assert at.session_state["shown"] == {"made_from": ("model-a", 3)}
    assert bars.count(0.0) == 1  # one bar only: the lookups ran nothing


def test_the_bar_ends_full_and_goes(bars):
    measure_once(new_page(), "ok", "x")
    assert bars == [0.0, 0.25, 0.5, 1.0, 1.0, "empty"]  # 1.5 reported: at most full
    bars.clear()
    measure_once(new_page(), "short", "x")  # the last report said half; done is full
    assert bars == [0.0, 0.25, 0.5, 1.0, "empty"]


@pytest.mark.parametrize("mode,message", [
    ("raise", "**Prompt problem:** the prompt is empty"),
    ("raise_before_queue", "**Prompt problem:** no prompt given before the queue"),
    ("oom", "Out of memory: 20 GiB asked. Try a shorter prompt"),
])
def test_a_failed_measurement_says_why_and_keeps_nothing(bars, mode, message):
    at = measure_once(new_page(), "ok", "before")
    at = measure_once(at, mode, "after")
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state["shown"] is None
    assert at.session_state[STORE] == ("before", {"made_from": "before"})  # the earlier result is left as it was
    assert bars[-1] == "empty"  # the failed one's bar is gone


def test_a_spinner_measurement_draws_no_bar(bars):
    at = measure_once(new_page(), "spinner", "s")
    assert at.session_state["shown"] == {"made_from": "s"} and bars == []


@pytest.fixture
def public_gate(monkeypatch):
    """Public mode with one slot for the whole server; the queue the measurements go through."""
    from llmviz.ui import server

    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_HEAVY_SLOTS", "1")
    gate = server.heavy_gate(1)  # the process's one queue (st.cache_resource): the page's too
    assert not gate.running and not gate.queue
    return gate


def test_the_slot_is_freed_after_a_failure(bars, public_gate):
    at = measure_once(new_page(), "raise", "a")
    assert any("Prompt problem" in e.value for e in at.error)
    assert not public_gate.running and not public_gate.queue
    at = measure_once(at, "ok", "a")  # the same session again: a slot still held would refuse it (busy_session)
    assert not at.error and at.session_state["shown"] == {"made_from": "a"}
    assert not public_gate.running


def test_a_measurement_past_the_public_limit_stops_and_frees_its_slot(bars, public_gate, monkeypatch):
    monkeypatch.setenv("LLMVIZ_HEAVY_LIMIT_S", "0.001")
    at = measure_once(new_page(), "slow", "a")
    assert any("**The measurement took too long:** It ran past this server's limit of 0.001 s" in e.value
               for e in at.error), [e.value for e in at.error]
    assert at.session_state["shown"] is None and STORE not in at.session_state
    assert not public_gate.running and not public_gate.queue


def test_a_result_kept_for_any_inputs():
    """Inputs None: the latest result, whatever is chosen now (the claims report, the device's ceilings)."""

    def latest():
        import streamlit as st

        from llmviz.i18n.translator import Translator
        from llmviz.ui import measure

        if "first" not in st.session_state:
            st.session_state["first"] = measure.run(Translator("en"), "latest_store", None,
                                                    lambda queued: {"n": 1}, text="")
        st.session_state["shown"] = measure.kept("latest_store")
        st.session_state["other"] = measure.kept("latest_store", ("some", "inputs"))

    at = AppTest.from_function(latest, default_timeout=30).run()
    assert not at.exception
    assert at.session_state["latest_store"] == {"n": 1} and at.session_state["shown"] == {"n": 1}
    assert at.session_state["other"] is None  # kept alone, it matches no inputs


def test_a_long_measurement_says_how_long_its_last_run_took(bars):
    """Issue 38: a measurement whose last run on this server took over 3 s says so in its bar's every text; its own
    run then becomes the last (here a quick one: the next says nothing)."""
    from llmviz.ui import measure

    measure.durations().put(STORE, 12.4)
    measure_once(new_page(), "ok", "timed")
    said = " (the last run took about 12 s)"
    assert bars.texts == ["starting" + said, "at 0.25" + said, "at 0.5" + said, "at 1.5" + said, "at 1.5" + said]
    assert measure.durations().get(STORE) < 3.0
    bars.texts.clear()
    measure_once(new_page(), "ok", "timed")
    assert bars.texts[0] == "starting"


def test_the_expected_times_are_bounded():
    from llmviz.ui.measure import Durations

    d = Durations()
    for i in range(Durations.MOST + 10):
        d.put(("kind", i), float(i))
    assert d.get(("kind", 0)) is None and d.get(("kind", Durations.MOST + 9)) == Durations.MOST + 9
    d.put(("kind", 10), 1.0)  # a kind run again is the newest: the next forgotten is the one after it
    d.put(("kind", "new"), 2.0)
    assert d.get(("kind", 10)) == 1.0 and d.get(("kind", 11)) is None
