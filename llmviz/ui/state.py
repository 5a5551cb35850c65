"""Per-browser-session state and the shared model cache.

Streamlit runs each browser session in its own thread. The model is cached once per process with
st.cache_resource and only ever read; everything a run mutates (engine session, KV cache, generator,
trace, the step shown) lives in st.session_state, which belongs to one browser session.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

import streamlit as st

from llmviz.errors import LlmvizError
from llmviz.i18n.translator import Translator
from llmviz.trace.budget import keep_bounded
from llmviz.trace.records import RunTrace
from llmviz.ui.markdown import escape
from llmviz.ui.model_cache import cached_model, shared_model  # noqa: F401 - cached_model: the tests' door
from llmviz.ui.public import Deadline, HeavyGate, Policy
from llmviz.ui.settings import Settings, encode_history

if TYPE_CHECKING:  # the engine (and torch) load only when a live run needs them, so replay works without
    from llmviz.service import LoadedModel, Session

RUN_KEY, SETTINGS_KEY = "llmviz_run", "llmviz_settings"


@st.cache_resource(show_spinner=False)
def imported() -> bool:
    """Import the heavy libraries once, under this cache entry's lock. Sessions that start together would
    otherwise import them at the same time, and a package with import cycles inside it (pandas) can then hand
    one session a half-initialized module ("partially initialized module 'pandas' has no attribute 'Series'",
    seen with 3 browser sessions opened at once). Before them, the C heap is kept to one arena (issue 9)."""
    import importlib

    from llmviz import service

    service.limit_heap_arenas()
    for name in ("pandas", "plotly.graph_objects", "llmviz.service"):
        with suppress(ImportError):  # a replay-only install has no torch: its pages never import the engine
            importlib.import_module(name)
    with suppress(ImportError):  # transformers' lazy names too (service.warm_imports), under this entry's lock
        importlib.import_module("llmviz.service").warm_imports()
    settle_long_lived()
    return True


def settle_long_lived() -> None:
    """Streamlit runs a full garbage collection after every script run (runner.postScriptGC). Over the ~385,000
    objects of torch, transformers and plotly it took ~200 ms of every Next click on 2 CPU cores, holding the GIL
    so that the server could not send the page meanwhile (issue 10). Modules live as long as the server: once,
    after the imports and before any session has a run, collect, then move every object alive to the permanent
    generation (gc.freeze), so that each later collection scans only what came after (a loaded model adds ~7 ms).
    Only then: a freeze later would also pin the sessions' runs of that moment, and any cycle among them."""
    gc.collect()
    gc.freeze()


def model(name: str, device: str, dtype: str, kv_heads: int | None = None, fused_qkv: str = "auto",
          quant: str = "none", quant_group: int = 32) -> LoadedModel:
    """The shared model for these load-time switches. Every page goes through here, and here through one cache
    that keys on what the load depends on (llmviz/ui/model_cache.py: equivalent settings are one copy; a public
    server bounds the weights it holds). In public mode only the allow-list's names pass (NotAllowedError): no
    path on the server can be named."""
    return shared_model(policy(), name, device, dtype, kv_heads, fused_qkv, quant, quant_group)


def policy() -> Policy:
    """Public mode or the local tool: from the environment, or from .streamlit/secrets.toml when it sets
    LLMVIZ_* keys (llmviz/ui/public.py)."""
    env = dict(os.environ)
    if st.secrets.load_if_toml_exists():  # False (and nothing shown) when there is no secrets file
        env.update({k: str(v) for k, v in st.secrets.items() if k.startswith("LLMVIZ_")})
    return Policy.from_env(env)


def apply_upload_limit() -> None:
    """Public mode: Streamlit's own upload limit (server.maxUploadSize, which its upload route reads on every
    request, and each file uploader hands the browser) made the app's, so that a file over it is refused before
    the server takes it in: Streamlit took 200 MB, kept it, and only then did the app refuse it (issue 19)."""
    p = policy()
    if not p.public:
        return  # the local tool: whatever .streamlit/config.toml or the command line set
    from streamlit import config

    if config.get_option("server.maxUploadSize") != p.upload_limit_mb:
        config.set_option("server.maxUploadSize", p.upload_limit_mb)


@st.cache_resource(show_spinner=False)
def heavy_gate(slots: int) -> HeavyGate:
    """The one queue of heavy measurements for the whole server process (guarded by its own lock)."""
    return HeavyGate(slots)


def session_id() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else "no-session"


@contextmanager
def heavy(t: Translator):
    """Around a comparison, a sweep or a serving simulation: in public mode it waits its turn (the place in
    the queue shown) or raises ServerBusyError; in the local tool it runs at once. It yields the measurement's
    Deadline: pass its progress callback through `deadline.watch(...)`, so that on a public server a measurement
    past LLMVIZ_HEAVY_LIMIT_S stops (TimeLimitError) at its next report and frees the slot."""
    p = policy()
    if not p.heavy_slots:
        yield Deadline.after(p.heavy_limit_s)
        return
    note = st.empty()
    try:
        with heavy_gate(p.heavy_slots).slot(session_id(), p.heavy_wait_s,
                                            lambda ahead: note.info(t("public.waiting", ahead=ahead))):
            note.empty()
            yield Deadline.after(p.heavy_limit_s)  # counted from the slot granted: waiting is not running
    finally:
        note.empty()


@dataclass
class Run:
    """One run in one browser session: a live engine session, or a trace loaded for replay."""

    key: tuple | None  # Settings.run_key() of a live run; None for a replayed trace
    trace: RunTrace
    session: Session | None = None
    cursor: int = 0  # the step shown
    shed: int = 0  # steps whose tensors were dropped to keep within the session's trace budget

    @property
    def step(self):
        return self.trace.steps[self.cursor]

    @property
    def can_compute(self) -> bool:
        return self.session is not None and not self.session.finished


def engine_available() -> bool:
    """False in a replay-only install (no torch): live runs, sweeps and reading a model folder need the engine."""
    try:
        from llmviz import service  # noqa: F401
    except ImportError:
        return False
    return True


def settings() -> Settings:
    """This browser session's settings; read from the URL the first time."""
    if SETTINGS_KEY not in st.session_state:
        current, problems = Settings.from_query(st.query_params.to_dict())
        st.session_state[SETTINGS_KEY] = current
        if problems:
            st.session_state["llmviz_url_problems"] = problems
    return st.session_state[SETTINGS_KEY]


def seed_widgets(widgets: dict[str, str]) -> set[str]:
    """Widgets ({settings field: widget key}) start from this session's settings (which may come from a link).
    A widget keeps its value across pages (navigation.KEEP): what was typed and not yet applied stays. It takes
    the setting again only when the setting itself changed since it was last seeded (a link, a reset).
    Returns the keys written in this run: a widget whose key was not written should also get the setting as its
    `value=`, so that a browser that lost the widget's state falls back to the setting, not to the widget's own
    default (the Decode seed box fell back to 0 under load and resampled the run, issue 19)."""
    current, written = settings(), set()
    for field, key in widgets.items():
        value, seeded = getattr(current, field), f"llmviz_seeded.{key}"
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


def explain(t: Translator, exc: BaseException) -> None:
    """Show an error the user can act on (never a traceback)."""
    if isinstance(exc, MemoryError) and not isinstance(exc, LlmvizError):
        st.error(t("error.oom", detail=escape(str(exc))))
        return
    kind = next((c.__name__ for c in type(exc).__mro__ if f"error.{c.__name__}" in t), "LlmvizError")
    code = getattr(exc, "code", None)
    if code and f"errdetail.{code}" in t:  # a common case, said in the session's language
        from llmviz.ui.chrome import literal  # a path or a name may hold markdown's characters

        detail = t(f"errdetail.{code}", **{k: literal(v) if isinstance(v, str) else v for k, v in exc.params.items()})
    else:
        detail = escape(str(exc))  # as the engine wrote it (a path or a name may begin it, so its case is kept),
        # shown as typed: a name from a link or an uploaded file may hold markdown
        if t.lang != "en":
            detail += f" ({t('error.detail_note')})"
    st.error(t("error.detail", headline=t(f"error.{kind}"), detail=detail))


def current_run(t: Translator) -> Run | None:
    """The run for the current settings: reused, or started (prefill, then up to the URL's step)."""
    s = settings()
    run = st.session_state.get(RUN_KEY)
    if run is not None and (run.key is None or run.key == s.run_key()):
        return run
    try:
        from llmviz import service

        with st.spinner(t("common.loading", model=escape(s.model))):
            lm = model(s.model, s.device, s.dtype, **s.load_options())
        st.session_state.pop(RUN_KEY, None)  # the old run's tensors go before the new run's are made
        session = service.start(lm, s.prompt, s.engine_config(lm.cfg.max_position_embeddings))
        service.step(session)  # the prefill
        run = Run(s.run_key(), session.trace, session)
        while run.cursor < link_steps(t, s.step) and advance(run):
            pass
        update(history="")  # the link's record is spent: from here on the sliders draw every new token
    except (LlmvizError, MemoryError) as exc:
        explain(t, exc)
        return None
    st.session_state[RUN_KEY] = run
    service.release_memory()  # the old run's, and those of sessions that have closed since (issue 9)
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
    keeps its whole trace (issue 9)."""
    return st.session_state.get(RUN_KEY)


def advance(run: Run) -> bool:
    """Next: show the recorded next step, or compute it. False when the run cannot go further."""
    if run.cursor + 1 < len(run.trace.steps):
        run.cursor += 1
        return True
    if not run.can_compute:
        return False
    from llmviz import service

    current, index = settings(), len(run.trace.steps)
    run.session.sampling = current.sampling_for(index)  # the sliders, or the link's record
    seed = current.reseed_at(index)
    if seed is not None:  # the run was resampled from this step: its draw starts from that seed
        run.session.reseed(seed)
    service.step(run.session)
    run.cursor += 1
    run.shed = keep_bounded(run.trace, policy().trace_budget_bytes, (run.cursor,), service.release_memory)
    return True


def back() -> None:
    """Previous (a callback): show the recorded earlier step; nothing is recomputed."""
    if (run := held_run()) is not None:
        run.cursor = max(0, run.cursor - 1)


def replay(trace: RunTrace) -> None:
    """Show a loaded trace: no model, no engine, only what was recorded."""
    st.session_state[RUN_KEY] = Run(None, trace, None, 0)
    st.session_state.pop("llmviz_demo_shown", None)  # llmviz.ui.demo marks its own recording after this


def forget_run() -> None:
    st.session_state.pop(RUN_KEY, None)
