"""The models this server process holds: one copy per load that differs, bounded on a public server.

st.cache_resource keys on the arguments as passed, so settings that change nothing (quant_group with no int4, a
name padded with spaces, fused_qkv or kv_heads equal to what the checkpoint stores) each made another copy of
the weights: ten sessions of gpt2-124m-random held 5.7 GB. Here:

- `load_key` says what a load depends on, in one form: equivalent settings are one key, one copy;
- `HeldModels` remembers every model still alive (weakly: a model lives as long as the cache or a session's run
  holds it), so a model that the four-entry cache has dropped while a session still runs on it is handed out
  again, not loaded a second time;
- on a public server a new load waits for any other new load (one at a time), and is refused with
  ServerBusyError when the weights alive already fill LLMVIZ_MODEL_BUDGET_MB: first the cache lets go of the
  models no session uses, and only if that does not make room is the visitor told to try again later.

A session's engine settings keep what the user asked for (Session checks them against the model's options), so
a load asked in an equivalent form gets a view: the same weights, tokenizer and lock, its options as asked.
"""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import streamlit as st

from llmviz.errors import LlmvizError, ServerBusyError
from llmviz.trace.config import EngineConfig
from llmviz.ui.public import Policy
from llmviz.ui.settings import UI_THREADS

if TYPE_CHECKING:
    from llmviz.service import LoadedModel

DEFAULT_GROUP = EngineConfig.quant_group  # what quant_group is when no int4 quantization reads it
STORED_FUSED = {"gpt2": "on"}  # how each family's Hugging Face checkpoint stores q/k/v; any other: "off" (split)


def load_key(name: str, device: str, dtype: str, kv_heads: int | None = None, fused_qkv: str = "auto",
             quant: str = "none", quant_group: int = DEFAULT_GROUP, *, family: str | None = None,
             stored_kv_heads: int | None = None) -> tuple:
    """What a load depends on, in one form: (name, device, dtype, kv_heads, fused_qkv, quant, quant_group).
    `device` is already resolved (auto -> cpu); `family` and `stored_kv_heads` are the checkpoint's, when known
    (without them kv_heads and fused_qkv are kept as asked). Pure: no streamlit, no torch."""
    # A blank name stays as typed: the load refuses it (service.models.load would read "" as the embedded model)
    name = name.strip() or name
    dtype, fused_qkv, quant = dtype.strip().lower(), fused_qkv.strip().lower(), quant.strip()
    if kv_heads is not None and stored_kv_heads is not None and int(kv_heads) == stored_kv_heads:
        kv_heads = None  # convert.py rewrites nothing when the count is the checkpoint's own
    if family is not None and fused_qkv == STORED_FUSED.get(family, "off"):
        fused_qkv = "auto"  # "auto" keeps what the checkpoint stores (with kv_heads too: convert.py)
    if quant in ("none", "int8", "llm-int8"):
        quant_group = DEFAULT_GROUP  # int8 scales per output channel; only int4 (and GPTQ's int4) groups columns
    return (name, device, dtype, None if kv_heads is None else int(kv_heads), fused_qkv, quant, int(quant_group))


@dataclass
class HeldModels:
    """Every loaded model still alive in this process, by load_key (weak references), and what its weights weigh.
    Created once per process (st.cache_resource) and guarded by its own locks: never a module global."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    loading_lock: threading.Lock = field(default_factory=threading.Lock)  # public mode: one new load at a time
    held: dict = field(default_factory=dict)  # key -> (weight bytes, [weakref to the model or a view of it])

    def _prune(self) -> None:
        for key in [k for k, (_, refs) in self.held.items() if not any(r() is not None for r in refs)]:
            del self.held[key]

    def get(self, key: tuple) -> LoadedModel | None:
        with self.lock:
            self._prune()
            refs = self.held.get(key, (0, []))[1]
            return next((m for m in (r() for r in refs) if m is not None), None)

    def add(self, key: tuple, lm: LoadedModel) -> None:
        with self.lock:
            nbytes, refs = self.held.get(key, (None, []))
            refs = [r for r in refs if r() is not None]  # views that are gone
            if not any(r() is lm for r in refs):
                refs.append(weakref.ref(lm))
            self.held[key] = (lm.weight_bytes if nbytes is None else nbytes, refs)

    def bytes_held(self) -> int:
        with self.lock:
            self._prune()
            return sum(nbytes for nbytes, _ in self.held.values())

    @contextmanager
    def loading(self, key: tuple, budget_bytes: int, let_go: Callable[[], None]):
        """Around a new load: in public mode (budget_bytes > 0) one at a time, and only while the weights alive
        leave room (after `let_go` dropped the cache's own references); ServerBusyError otherwise."""
        if budget_bytes <= 0:
            yield
            return
        with self.loading_lock:
            if self.get(key) is None and self.bytes_held() >= budget_bytes:
                let_go()  # the cache's entries: those no session runs on are then freed
                gc.collect()  # a model inside a reference cycle goes only at a collection
                held = self.bytes_held()
                if held >= budget_bytes:
                    raise ServerBusyError(f"this server holds {held / 1e6:,.0f} MB of model weights already "
                                          f"(at most {budget_bytes / 1e6:,.0f} MB): try again in a minute",
                                          code="models_full", held=f"{held / 1e6:,.0f} MB",
                                          limit=f"{budget_bytes / 1e6:,.0f} MB")
            yield


@st.cache_resource(show_spinner=False)
def held_models() -> HeldModels:
    return HeldModels()


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_model(name: str, device: str, dtype: str, kv_heads: int | None = None, fused_qkv: str = "auto",
                 quant: str = "none", quant_group: int = 32) -> LoadedModel:
    """One shared model per load_key (each load-time switch rewrites the weights, so each is its own entry)."""
    from llmviz import service

    service.models.use_cpu_threads(UI_THREADS)  # once per model load, for the whole server process
    return service.models.load(name, EngineConfig(device=device, dtype=dtype, kv_heads=kv_heads, fused_qkv=fused_qkv,
                                                  quant=quant, quant_group=quant_group))


@st.cache_resource(show_spinner=False, max_entries=16)
def stored_shape(name: str) -> tuple[str | None, int | None]:
    """(family, KV heads) of the named checkpoint, read without its weights; (None, None) when it cannot be read
    (then the load itself says why)."""
    from llmviz import service

    try:
        config = service.models.model_config_dict(name)
    except (LlmvizError, OSError, ValueError):  # the load's to report, in its own words
        return None, None
    return config.get("family"), config.get("num_kv_heads")


def key_of(name: str, device: str, dtype: str, kv_heads: int | None, fused_qkv: str, quant: str,
           quant_group: int) -> tuple:
    """load_key with the device resolved and, when a switch needs it, the checkpoint's own shape."""
    from llmviz import service

    family = stored = None
    if kv_heads is not None or fused_qkv != "auto":
        family, stored = stored_shape(name.strip())
    return load_key(name, service.models.resolved_device(device), dtype, kv_heads, fused_qkv, quant, quant_group,
                    family=family, stored_kv_heads=stored)


def as_asked(lm: LoadedModel, asked: dict) -> LoadedModel:
    """The model itself when its options are the ones asked for; else a view on the same weights whose options
    say what was asked (a Session compares them with its engine settings)."""
    if all(lm.options.get(k) == v for k, v in asked.items()):
        return lm
    return replace(lm, options={**lm.options, **asked})


def shared_model(policy: Policy, name: str, device: str, dtype: str, kv_heads: int | None = None,
                 fused_qkv: str = "auto", quant: str = "none", quant_group: int = 32) -> LoadedModel:
    """The one copy of the model these switches load (see the module's docstring)."""
    policy.check_model(name)
    key = key_of(name, device, dtype, kv_heads, fused_qkv, quant, quant_group)
    held = held_models()
    lm = held.get(key)
    if lm is None:
        guard = held.loading(key, policy.model_budget_bytes, cached_model.clear) if policy.public else nullcontext()
        with guard:
            lm = cached_model(*key)
    held.add(key, lm)
    view = as_asked(lm, {"kv_heads": kv_heads, "fused_qkv": fused_qkv, "quant": quant, "quant_group": quant_group})
    held.add(key, view)  # a session that keeps only the view keeps the weights: still one copy, still counted
    return view
