"""The one lazy door from the UI (app.py, app_pages/, llmviz/ui/) and the CLI into the engine and the labs, grouped
by what a caller does:

- `service.models`: load a model, read a config without its weights, what a loaded model's tokenizer says of a text,
  and the process's own settings (CPU threads, the heap, warm imports);
- `service.runs`: start a run and step it. `runs.start` returns a `RunHandle`, whose methods are the only way a page
  moves a run (step, resample from a step, keep it within a budget); the engine's Session stays inside it;
- `service.serving`: a request trace through static or continuous batching, and the checks before it runs;
- `service.measure`: each measurement (the claims, the sweeps, Compare, speculative decoding), in llmviz/labs/;
- `service.replay`: what was recorded, read back: request traces from a name, a file or uploaded bytes (a run's
  trace is read by llmviz.trace itself, torch-free).

Importing this package imports no torch: at module level its modules take only the torch-free contract
(llmviz.trace, llmviz.errors); every function imports the engine or lab module it needs when it is called, and the
engine's classes (LoadedModel, CompareConfig, DecodePairConfig) are imported on first access (PEP 562 `__getattr__`
below). So a replay-only install (no torch) can import it, draw every page from a saved trace, and ask
engine_available().
"""

from __future__ import annotations

import importlib
import importlib.util

from llmviz.service import measure, models, replay, runs, serving
from llmviz.trace.config import EMBEDDED_MODEL, EngineConfig
from llmviz.trace.records import RunTrace, StepTrace

__all__ = ["EMBEDDED_MODEL", "CompareConfig", "DecodePairConfig", "EngineConfig", "LoadedModel", "RunTrace",
           "StepTrace", "engine_available", "measure", "models", "replay", "runs", "serving"]

# The engine's classes that callers take from here, and the module each lives in (imported on first access)
ENGINE_CLASSES = {"LoadedModel": "llmviz.engine.loading.model", "CompareConfig": "llmviz.labs.compare",
                  "DecodePairConfig": "llmviz.labs.decode_pair"}
ENGINE_PACKAGES = ("torch", "transformers")  # what the engine needs installed


def __getattr__(name: str):
    """`service.LoadedModel`, `from llmviz.service import CompareConfig`: the class, its module imported now (PEP
    562). Without torch that import raises ImportError, as the pages expect of a replay-only install."""
    if name in ENGINE_CLASSES:
        return getattr(importlib.import_module(ENGINE_CLASSES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")  # the type hasattr and getattr expect


def engine_available() -> bool:
    """True when torch and transformers can be imported (found, not imported: this costs nothing): False in a
    replay-only install, where live runs, sweeps and reading a model folder are not offered."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in ENGINE_PACKAGES)
    except (ImportError, ValueError):  # a finder that refuses the name; a module whose __spec__ is None
        return False
