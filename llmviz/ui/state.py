"""One browser session's state: its settings (read from the URL, written back to it) and its run.

Streamlit runs each browser session in its own thread. What the whole process shares (the model cache, the
policy, the queue) is llmviz/ui/server.py's, and a cached model is only ever read; everything a run mutates
(engine session, KV cache, generator, trace, the step shown) lives in st.session_state, which belongs to one
browser session.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING

import streamlit as st

from llmviz.analysis.work import run_seconds
from llmviz.errors import LlmvizError
from llmviz.i18n.translator import Translator
from llmviz.trace.records import RunTrace
from llmviz.ui import measure
from llmviz.ui.errors import explain
from llmviz.ui.markdown import escape
from llmviz.ui.model_cache import cached_model  # noqa: F401 - the tests' door to the cache itself
from llmviz.ui.server import engine_available, imported, model, policy  # noqa: F401 - pages' and tests' names
from llmviz.ui.settings import Settings, encode_history, language_of

if TYPE_CHECKING:  # the engine (and torch) load only when a live run needs them, so replay works without
    from llmviz.service.runs import RunHandle

RUN_KEY, SETTINGS_KEY = "llmviz_run", "llmviz_settings"


@dataclass
class Run:
    """One run in one browser session: a live run (its handle, service/runs.py), or a trace loaded for replay."""

    key: tuple | None  # Settings.run_key() of a live run; None for a replayed trace
    trace: RunTrace
    handle: RunHandle | None = None
    cursor: int = 0  # the step shown
    shed: int = 0  # steps whose tensors were dropped to keep within the session's trace budget

    @property
    def step(self):
        return self.trace.steps[self.cursor]

    @property
    def can_compute(self) -> bool:
        return self.handle is not None and not self.handle.finished


def settings() -> Settings:
    """This browser session's settings; read from the URL the first time. A link that names no language opens in
    the browser's own when the app speaks it (a Chinese browser sees the Chinese interface and 济南的冬天)."""
    if SETTINGS_KEY not in st.session_state:
        query = st.query_params.to_dict()
        if "lang" not in query and (lang := language_of(st.context.locale)) is not None:
            query["lang"] = lang
        current, problems = Settings.from_query(query)
        st.session_state[SETTINGS_KEY] = current
        if problems:
            st.session_state["llmviz_url_problems"] = problems
    return st.session_state[SETTINGS_KEY]


def seed_widgets(widgets: dict[str, str]) -> set[str]:
    """Widgets ({settings field, "compare.a" for a section's: widget key}) start from this session's settings
    (which may come from a link).
    A widget keeps its value across pages (navigation.KEEP): what was typed and not yet applied stays. It takes
    the setting again only when the setting itself changed since it was last seeded (a link, a reset).
    Returns the keys written in this run: a widget whose key was not written should also get the setting as its
    `value=`, so that a browser that lost the widget's state falls back to the setting, not to the widget's own
    default (the Decode seed box fell back to 0 under load and resampled the run)."""
    current, written = settings(), set()
    for field, key in widgets.items():
        value, seeded = attrgetter(field)(current), f"llmviz_seeded.{key}"
        if key not in st.session_state or st.session_state.get(seeded, value) != value:
            st.session_state[key] = value
            written.add(key)
        st.session_state[seeded] = value
    return written


def widget_values(widgets: dict[str, str]) -> dict:
    """{settings field: what its widget holds now}."""
    return {field: st.session_state[key] for field, key in widgets.items()}


def update(**changes) -> Settings:
    st.session_state[SETTINGS_KEY] = settings().with_(**changes)
    return st.session_state[SETTINGS_KEY]


def sync_url() -> None:
    """Write the settings and the step shown into the URL (so the link reopens this view)."""
    current = settings()
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        if run.key is None:  # a replayed trace: the link recomputes the recorded run, not the earlier live one
            current = current.for_trace(run.trace)
        drawn = [(s.sampling["temperature"], s.sampling["top_k"], s.sampling["top_p"]) for s in run.trace.steps]
        now = (current.temperature, current.top_k, current.top_p)
        current = current.with_(step=run.cursor, history=encode_history(drawn, now))
    wanted = current.to_query()
    if st.query_params.to_dict() != wanted:
        st.query_params.from_dict(wanted)


def current_run(t: Translator) -> Run | None:
    """The run for the current settings: reused, or started (prefill, then up to the URL's step)."""
    s = settings()
    run = st.session_state.get(RUN_KEY)
    if run is not None and (run.key is None or run.key == s.run_key()):
        return run
    try:
        from llmviz import service

        steps = link_steps(t, s.step)  # once: its notice is shown once
        with st.spinner(t("common.loading", model=escape(s.model))):
            lm = model(s.model, s.device, s.dtype, **s.load_options())
            st.session_state.pop(RUN_KEY, None)  # the old run's tensors go before the new run's are made
            budget, config = policy().trace_budget_bytes, s.engine_config(lm.cfg.max_position_embeddings)
            n = len(service.models.tokens(lm, s.prompt))
            cost = run_seconds(lm.cfg.to_dict(), [n], min(steps, config.max_seq_len - n), s.dtype)
            with measure.heavy(t, cost) as deadline:  # a long prompt or many steps: in a public server's queue
                handle = service.runs.start(lm, s.prompt, config, budget)
                handle.step()  # the prefill, its capture planned within the budget
                run = Run(s.run_key(), handle.trace, handle)
                bound(run)
                while run.cursor < steps and advance(run):
                    deadline.check()
        update(history="")  # the link's record is spent: from here on the sliders draw every new token
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)
        return None
    st.session_state[RUN_KEY] = run
    service.models.release_memory()  # the old run's, and those of sessions that have closed since
    return run


def link_steps(t: Translator, asked: int) -> int:
    """How far a link's step is replayed when its run opens: all of it in the local tool; on a public server at
    most LLMVIZ_LINK_STEPS steps (a link to step 511 of gpt2-124m-random cost ~59 s of CPU on every open, outside
    the heavy queue), with a notice. The steps beyond are a Next away, one at a time."""
    cap = policy().link_steps
    if asked > cap:
        st.info(t("public.link_capped", asked=asked, n=cap))
    return min(asked, cap)


def held_run() -> Run | None:
    """The run this session shows. Widget callbacks read it here and are never given it in `args`: Streamlit
    keeps a widget's callback args after the page is left, so a run passed there outlives its replacement and
    keeps its whole trace."""
    return st.session_state.get(RUN_KEY)


def advance(run: Run) -> bool:
    """Next: show the recorded next step, or compute it. False when the run cannot go further."""
    if run.cursor + 1 < len(run.trace.steps):
        run.cursor += 1
        return True
    if not run.can_compute:
        return False
    current, index = settings(), len(run.trace.steps)
    # the sliders (or the link's record); a seed when the run was resampled from this step: its draw starts there
    run.handle.step(current.sampling_for(index), current.reseed_at(index))
    run.cursor += 1
    bound(run)
    return True


def bound_runs(handles) -> None:
    """After a step of the runs a page holds beside the stepper's (the KV layouts page's, one per layout; the Batch
    page's): each within its share of the session's budget (its handle's budget, set when it started), its older
    steps' full logits shed (capture off keeps them: 1.6 MB a step for 8 rows of GPT-2's vocabulary)."""
    for handle in handles:
        if handle.budget is not None:
            handle.bound(handle.budget)


def bound(run: Run) -> None:
    """After a step: everything the run holds (its KV cache and its trace's arrays) within the session's budget,
    the prefill shed like any step."""
    run.shed = run.handle.bound(policy().trace_budget_bytes, (run.cursor,))


def back() -> None:
    """Previous (a callback): show the recorded earlier step; nothing is recomputed."""
    if (run := held_run()) is not None:
        run.cursor = max(0, run.cursor - 1)


def replay(trace: RunTrace, cursor: int = 0) -> None:
    """Show a loaded trace from step `cursor`: no model, no engine, only what was recorded."""
    st.session_state[RUN_KEY] = Run(None, trace, None, min(max(0, cursor), len(trace.steps) - 1))
    st.session_state.pop("llmviz_demo_shown", None)  # llmviz.ui.demo marks its own recording after this


def forget_run() -> None:
    st.session_state.pop(RUN_KEY, None)
