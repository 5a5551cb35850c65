"""What the whole server process shares, for every browser session: the heavy imports (once), the policy (public
mode or the local tool), the model cache and the queue of heavy measurements. Each shared object is created once
per process by st.cache_resource and guarded by its own lock: never a module global.

Everything a session changes lives in st.session_state instead (llmviz/ui/state.py).
"""

from __future__ import annotations

import gc
import importlib
import os
import threading
import time
from contextlib import suppress
from typing import TYPE_CHECKING

import streamlit as st

from llmviz.trace.extensions import load_plugins
from llmviz.ui.closed_sessions import expire_closed
from llmviz.ui.model_cache import shared_model
from llmviz.ui.public import HeavyGate, LatestClaims, Policy

if TYPE_CHECKING:  # the engine (and torch) load only when a live run needs them, so replay works without
    from llmviz.service import LoadedModel


@st.cache_resource(show_spinner=False)
def imported() -> tuple[str, ...]:
    """Import the heavy libraries once, under this cache entry's lock. Sessions that start together would
    otherwise import them at the same time, and a package with import cycles inside it (pandas) can then hand
    one session a half-initialized module ("partially initialized module 'pandas' has no attribute 'Series'",
    seen with 3 browser sessions opened at once). Before them, the C heap is kept to one arena. First
    of all the out-of-tree extensions (LLMVIZ_EXTENSIONS, entry points), so that their names are choices before
    any link is read; what failed to load, one line each, for whoever runs the server."""
    from llmviz import service  # torch-free to import: it loads the engine only when a function runs

    problems = tuple(load_plugins())

    service.models.limit_heap_arenas()
    for name in ("pandas", "plotly.graph_objects", "llmviz.service"):
        with suppress(ImportError):  # a replay-only install has no torch: its pages never import the engine
            importlib.import_module(name)
    with suppress(ImportError):  # transformers' lazy names too (service.models.warm_imports), under this entry's lock
        service.models.warm_imports()
    settle_long_lived()
    collector()
    return problems


def settle_long_lived() -> None:
    """Streamlit runs a full garbage collection after every script run (runner.postScriptGC). Over the ~385,000
    objects of torch, transformers and plotly it took ~200 ms of every Next click on 2 CPU cores, holding the GIL
    so that the server could not send the page meanwhile. Modules live as long as the server: once,
    after the imports and before any session has a run, collect, then move every object alive to the permanent
    generation (gc.freeze), so that each later collection scans only what came after (a loaded model adds ~7 ms).
    Only then: a freeze later would also pin the sessions' runs of that moment, and any cycle among them. That
    per-run collection is now off as well (runner.postScriptGC = false in .streamlit/config.toml and `llmviz app`);
    collector() collects every GC_EVERY_S seconds instead."""
    gc.collect()
    gc.freeze()


GC_EVERY_S = 10.0


@st.cache_resource(show_spinner=False)
def collector() -> threading.Thread:
    """A full collection every GC_EVERY_S seconds, in a thread of its own, once per process. Streamlit's own after
    every script run is off (runner.postScriptGC = false: ~50 ms of every Next click); without either, a
    full collection would wait until the objects that survive reach a quarter of the frozen ones (hundreds of
    thousands), and cycles among the sessions' runs (their arrays) would stay until then."""
    thread = threading.Thread(target=collect_forever, args=(GC_EVERY_S,), name="llmviz-gc", daemon=True)
    thread.start()
    return thread


def collect_forever(every_s: float, rounds: int | None = None) -> None:
    """Sleep, then collect every generation; `rounds` times (None: for as long as the process lives)."""
    done = 0
    while rounds is None or done < rounds:
        time.sleep(every_s)
        expire_closed()  # closed sessions past their TTL go now, not at the next connection
        gc.collect()
        done += 1


def engine_available() -> bool:
    """False in a replay-only install (no torch): live runs, sweeps and reading a model folder need the engine."""
    from llmviz import service  # torch-free to import: it asks whether the engine's packages are there

    return service.engine_available()


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
    the server takes it in: Streamlit took 200 MB, kept it, and only then did the app refuse it."""
    p = policy()
    if not p.public:
        return  # the local tool: whatever .streamlit/config.toml or the command line set
    from streamlit import config

    if config.get_option("server.maxUploadSize") != p.upload_limit_mb:
        config.set_option("server.maxUploadSize", p.upload_limit_mb)


def model(name: str, device: str, dtype: str, kv_heads: int | None = None, fused_qkv: str = "auto",
          quant: str = "none", quant_group: int = 32) -> LoadedModel:
    """The shared model for these load-time switches. Every page goes through here, and here through one cache
    that keys on what the load depends on (llmviz/ui/model_cache.py: equivalent settings are one copy; a public
    server bounds the weights it holds). In public mode only the allow-list's names pass (NotAllowedError): no
    path on the server can be named."""
    return shared_model(policy(), name, device, dtype, kv_heads, fused_qkv, quant, quant_group)


def load(name: str, engine) -> LoadedModel:
    """The loader a measurement takes (service.measure's `load_fn`): a side's model from the shared cache, by the
    load-time switches of its EngineConfig."""
    return model(name, engine.device, engine.dtype, engine.kv_heads, engine.fused_qkv, engine.quant,
                 engine.quant_group)


@st.cache_resource(show_spinner=False)
def heavy_gate(slots: int) -> HeavyGate:
    """The one queue of heavy measurements for the whole server process (guarded by its own lock)."""
    return HeavyGate(slots)


@st.cache_resource(show_spinner=False)
def latest_claims() -> LatestClaims:
    """The server's latest measurement of each claim, shared by every session (public mode's Reveal)."""
    return LatestClaims()


@st.cache_resource(show_spinner=False)
def _class_sweeper(url: str):
    from llmviz.classroom.stores import open_store, sweep_every, sweeper_name

    return sweep_every(lambda: open_store(url), name=sweeper_name(url))  # the event that would stop it


def class_sweeping() -> None:
    """The class store's sweep every minute in this process, from its first page on (the frame asks every run; one
    thread a process and store): a class past its time ends though no one opens a class page again."""
    from llmviz.classroom.stores import store_url

    _class_sweeper(store_url())
