"""The one small door between the UI (app.py, app_pages/, the CLI) and the engine: load, start, run, step.

Pages import this module and the torch-free engine modules (trace, config, hook_points); they never
import torch themselves.
"""

from __future__ import annotations

from llmviz.engine.loading.model import EMBEDDED_MODEL, LoadedModel, load_model
from llmviz.engine.platform.devices import set_cpu_threads
from llmviz.engine.session import Session
from llmviz.labs.compare import CompareConfig
from llmviz.trace.config import EngineConfig
from llmviz.trace.records import RunTrace, StepTrace

__all__ = [
    "EMBEDDED_MODEL",
    "CompareConfig",
    "EngineConfig",
    "LoadedModel",
    "RunTrace",
    "Session",
    "StepTrace",
    "batch_sweep",
    "check_serving_work",
    "claims",
    "compare",
    "device_limits",
    "generated_text",
    "language_note",
    "layout_sweep",
    "load",
    "model_config_dict",
    "prefill_sweep",
    "run",
    "serve",
    "speculate",
    "speculation_costs",
    "start",
    "start_layouts",
    "step",
    "step_layouts",
    "use_cpu_threads",
    "warm_imports",
    "warm_up_serving",
]


def load(name: str | None, config: EngineConfig) -> LoadedModel:
    """The model named by `name` (default: the embedded one) on the config's device and dtype."""
    return load_model(name or EMBEDDED_MODEL, device=config.device, dtype=config.dtype, kv_heads=config.kv_heads,
                      fused_qkv=config.fused_qkv, quant=config.quant, quant_group=config.quant_group)


def model_config_dict(name: str | None) -> dict:
    """The named model's config (ModelConfig.to_dict()) read without its weights, from a folder, the local hub
    cache or config.json alone from the hub: the memory calculator's (C17)."""
    from llmviz.engine.loading.hub import CONFIG_ONLY
    from llmviz.engine.loading.model import read_config, resolve_path
    from llmviz.engine.models import model_config

    return model_config(read_config(resolve_path(name, CONFIG_ONLY))).to_dict()


def use_cpu_threads(n: int) -> None:
    """Torch's CPU thread count for this whole process (the app sets it once, when it loads a model)."""
    set_cpu_threads(n)


def start(lm: LoadedModel, prompt: str | list[str], config: EngineConfig) -> Session:
    """A new session on a loaded (shared, read-only) model, one row per prompt; nothing runs until step()."""
    return Session(lm, prompt, config)


def step(session: Session) -> StepTrace:
    return session.step()


def generated_text(lm: LoadedModel, trace: RunTrace, row: int = 0) -> str:
    """One row's generated tokens as text (special tokens such as EOS left out)."""
    return lm.tokenizer.hf.decode(trace.row_output_ids(row), skip_special_tokens=True)


def language_note(lm: LoadedModel, prompt: str) -> str | None:
    """A note for prompts the embedded (English-only) model was not trained on, e.g. Chinese."""
    if lm.name != EMBEDDED_MODEL or prompt.isascii():
        return None
    ids = lm.tokenizer.encode(prompt) if prompt.strip() else []
    return (f"The embedded model was trained on English text only. This prompt has {len(prompt)} characters "
            f"and becomes {len(ids)} tokens: characters with no learned merge are split into their UTF-8 "
            "bytes (3 per Chinese character), and its output will not be meaningful Chinese.")


def run(lm: LoadedModel, prompt: str | list[str], config: EngineConfig, max_new_tokens: int) -> RunTrace:
    """Prefill plus decode steps until max_new_tokens tokens exist, EOS, or the cache is full."""
    return start(lm, prompt, config).generate(max_new_tokens)


def batch_sweep(lm: LoadedModel, prompt: list[int], **options) -> dict:
    """Throughput at batch 1, 2, 4, 8 copies of one prompt (llmviz/labs/batch_sweep.py)."""
    from llmviz.labs.batch_sweep import batch_sweep as sweep

    return sweep(lm, prompt, **options)


def claims(ids=None, quick: bool = True, device: str = "auto", load_fn=None, progress=None) -> dict:
    """The article's claims K1-K11 measured on this machine (llmviz/labs/claims.py): `ids` "K1,K4" or None for
    all; load_fn(name, engine_config) lets the app use its shared model cache."""
    from llmviz.labs.claims import ClaimsPlan, parse_ids, run_claims

    return run_claims(parse_ids(ids), ClaimsPlan(quick=quick, device=device), load_fn or load, progress)


def device_limits(device: str, layer_bytes: int) -> dict:
    """The roofline's ceilings measured now: peak matmul FLOP/s, bandwidth beyond and within the caches (C7)."""
    from llmviz.engine.platform.devices import resolve_device
    from llmviz.labs.probes import device_limits as probe

    return probe(resolve_device(device), layer_bytes)


def prefill_sweep(lm: LoadedModel, lengths, repeats: int = 3, backend: str = "sdpa", progress=None) -> dict:
    """Prefill ms against prompt length, median of repeats (llmviz/labs/claims.py; C18, claim K1)."""
    from llmviz.labs.claims import prefill_sweep as sweep

    return sweep(lm, lengths, repeats, backend, str(lm.device), progress)


def compare(config: CompareConfig, load_fn=None, progress=None) -> dict:
    """An A/B comparison (llmviz/labs/compare.py); load_fn(name, engine_config) -> LoadedModel lets the app
    use its shared model cache."""
    from llmviz.labs.compare import compare as run_compare

    return run_compare(config, load_fn or load, progress)


def start_layouts(lm: LoadedModel, prompts: list[str], config: EngineConfig,
                  layouts: tuple = ("contiguous", "dynamic", "paged")) -> dict[str, Session]:
    """One session per KV layout on the same prompts and settings, to be stepped in lockstep (C8, C9)."""
    return {layout: Session(lm, list(prompts), config.with_(kv_layout=layout)) for layout in layouts}


def step_layouts(sessions: dict[str, Session]) -> dict[str, StepTrace]:
    """The next step of every session of start_layouts (each computes the same tokens: the layouts are exact)."""
    return {layout: session.step() for layout, session in sessions.items()}


def layout_sweep(lm: LoadedModel, lengths=None, layouts=("contiguous", "dynamic", "paged"), steps: int = 8,
                 repeats: int = 2, progress=None, **options) -> dict:
    """Decode ms/token of each KV layout over cached lengths (llmviz/labs/layout_sweep.py, claim K3)."""
    from llmviz.labs.layout_sweep import layout_sweep as sweep

    return sweep(lm, lengths, layouts, steps, repeats, progress, **options)



def serve(lm: LoadedModel, trace, scheduler: str, progress=None, **options) -> dict:
    """A request trace (built-in name, JSON file or RequestTrace) through static or continuous batching
    (llmviz/engine/serving/); options are ServeConfig fields."""
    from llmviz.engine.serving.continuous import ServeConfig
    from llmviz.engine.serving.requests import load_trace
    from llmviz.engine.serving.static import serve as run_serving

    requests = load_trace(trace) if isinstance(trace, str) else trace
    return run_serving(lm, requests, scheduler, ServeConfig(**options), progress)


def release_memory() -> bool:
    """Give freed heap memory back to the OS (engine/platform/heap.py): a long-running app calls it now and then."""
    from llmviz.engine.platform.heap import release_freed_memory

    return release_freed_memory()


def read_trace(data: bytes, name: str):
    """A request trace from a file's bytes, read or uploaded (bounded UTF-8 JSON; TraceFormatError otherwise)."""
    from llmviz.engine.serving.requests import parse_trace_bytes

    return parse_trace_bytes(data, name)


def warm_up_serving(lm: LoadedModel, slots: int, device: str) -> None:
    """Two short requests through both schedulers, untimed, so the first timed run pays no one-time costs."""
    from llmviz.engine.serving.continuous import ServeConfig
    from llmviz.engine.serving.static import warm_up

    warm_up(lm, ServeConfig(slots=slots, device=device))


def speculation_costs(target: LoadedModel, draft: LoadedModel, ids: list[int], n: int) -> dict:
    """Each model alone, greedy, timed the same way (llmviz/engine/serving/speculative.py)."""
    from llmviz.engine.serving.speculative import speculation_costs as costs

    return costs(target, draft, ids, n)


def speculate(target: LoadedModel, draft: LoadedModel, prompt: str, k: int, max_new: int = 32,
              sampling=None, seed: int = 0) -> dict:
    """Speculative decoding of `prompt` beside the target alone and the draft alone (C16; claim K8)
    (llmviz/engine/serving/speculative.py)."""
    from llmviz.engine.serving.speculative import speculate as run_speculative

    return run_speculative(target, draft, prompt, k, max_new, sampling, seed)


# The transformers submodules behind the names llmviz/engine/loading/model.py imports (config, tokenizer)
_TRANSFORMERS = ("transformers.models.auto.configuration_auto", "transformers.models.auto.tokenization_auto",
                 "transformers.tokenization_utils_fast")


def warm_imports() -> None:
    """Import what a first model load imports, now. transformers is a lazy module: each name is imported on first
    access, and two sessions loading their first models at once got "cannot import name 'AutoConfig' from
    'transformers'" (issue 19). The app calls this once, under a lock (llmviz/ui/state.imported)."""
    import importlib

    import transformers

    for name in _TRANSFORMERS:
        importlib.import_module(name)
    for name in ("AutoConfig", "AutoTokenizer", "PreTrainedTokenizerFast"):
        getattr(transformers, name)


def resolved_device(name: str) -> str:
    """The device `name` means here ("auto" -> "cuda:0", "mps" or "cpu"), in one spelling: the app's model cache
    keys on it, so that auto and the device it picks are one copy (issue 19). ConfigError for no such device."""
    from llmviz.engine.platform.devices import resolve_device

    device = resolve_device(name)
    return f"{device.type}:{0 if device.index is None else device.index}" if device.type == "cuda" else device.type


def check_serving_work(lm: LoadedModel, trace, public: bool, slots: int | None = None) -> int:
    """A request trace (built-in name, JSON file or RequestTrace) checked before it runs on `lm` in `slots`; its work
    in tokens (prompt + output, and static batching's padding in `slots`): its longest request must fit a sequence
    (ConfigError), and on a public server the work be at most PUBLIC_MAX_TRACE_TOKENS (NotAllowedError;
    llmviz/engine/serving/requests.py check_work)."""
    from llmviz.engine.serving.requests import PUBLIC_MAX_TRACE_TOKENS, check_work, load_trace
    from llmviz.trace.config import default_max_seq

    requests = load_trace(trace) if isinstance(trace, str) else trace
    return check_work(requests, default_max_seq(lm.cfg.max_position_embeddings),
                      PUBLIC_MAX_TRACE_TOKENS if public else None, slots)


# Torch-free doors: what a page or the CLI reads of the engine and the labs without running anything. Each imports
# only torch-free modules, so a replay-only install (no torch) can call them too.
def limit_heap_arenas() -> bool:
    """Keep the C heap to one arena for every thread (engine/platform/heap.py, issue 9), before threads start."""
    from llmviz.engine.platform.heap import limit_arenas

    return limit_arenas()


def config_from_text(text: str, where: str = "the pasted config") -> dict:
    """A config.json's text (pasted, or a bundled file) as ModelConfig.to_dict(); a typed error otherwise (C17)."""
    from llmviz.engine.models import config_from_text as read

    return read(text, where).to_dict()


def presets(config: dict, device: str = "cpu") -> dict:
    """The Compare presets {name: Preset} for a model's card config on a device type (llmviz/labs/presets.py)."""
    from llmviz.labs.presets import presets as table

    return table(config, device)


def preset(name: str, config: dict, device: str = "cpu"):
    """One Compare preset by name; ConfigError listing the names otherwise."""
    from llmviz.labs.presets import preset as one

    return one(name, config, device)

