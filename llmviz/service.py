"""The one lazy door from the UI (app.py, app_pages/, llmviz/ui/) and the CLI into the engine and the labs: load,
start, run, step, and each measurement.

Importing this module imports no torch: at module level it takes only the torch-free contract (llmviz.trace,
llmviz.errors); every function imports the engine or lab module it needs when it is called, and the engine's
classes (LoadedModel, Session, CompareConfig) are imported on first access (PEP 562 `__getattr__` below). So a
replay-only install (no torch) can import it, draw every page from a saved trace, and ask engine_available().
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from llmviz.errors import NotAllowedError
from llmviz.trace.config import EMBEDDED_MODEL, KV_LAYOUTS, EngineConfig
from llmviz.trace.progress import Progress
from llmviz.trace.records import RunTrace, StepTrace

if TYPE_CHECKING:  # annotations only: at run time these come through __getattr__
    from llmviz.engine.loading.model import LoadedModel
    from llmviz.engine.serving.continuous import ServeConfig
    from llmviz.engine.serving.requests import RequestTrace
    from llmviz.engine.session import Session
    from llmviz.labs.compare import CompareConfig
    from llmviz.labs.decode_pair import DecodePairConfig

__all__ = [
    "EMBEDDED_MODEL", "CompareConfig", "DecodePairConfig", "EngineConfig", "LoadedModel", "RunTrace", "Session",
    "StepTrace", "batch_sweep", "check_serving_work", "claim_ids", "claim_workload", "claims", "compare",
    "config_from_text", "decode_pair", "decode_slope", "device_limits", "engine_available", "generated_text",
    "k5_workload", "language_note", "layout_sweep", "limit_heap_arenas", "load", "locality_sweep", "model_config_dict",
    "prefill_sweep", "preset", "presets", "read_trace", "release_memory", "request_trace", "resolved_device", "run",
    "serve", "serve_alone", "serve_config", "speculate", "speculation_costs", "start", "start_layouts", "step",
    "step_layouts", "use_cpu_threads", "warm_imports", "warm_up_serving",
]

# The engine's classes that callers take from here, and the module each lives in (imported on first access)
ENGINE_CLASSES = {"LoadedModel": "llmviz.engine.loading.model", "Session": "llmviz.engine.session",
                  "CompareConfig": "llmviz.labs.compare", "DecodePairConfig": "llmviz.labs.decode_pair"}
ENGINE_PACKAGES = ("torch", "transformers")  # what the engine needs installed


def __getattr__(name: str):
    """`service.LoadedModel`, `from llmviz.service import Session`: the class, its module imported now (PEP 562).
    Without torch that import raises ImportError, as the pages expect of a replay-only install."""
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


def load(name: str | None, config: EngineConfig) -> LoadedModel:
    """The model named by `name` (default: the embedded one) on the config's device and dtype."""
    from llmviz.engine.loading.model import load_model

    return load_model(name or EMBEDDED_MODEL, device=config.device, dtype=config.dtype, kv_heads=config.kv_heads,
                      fused_qkv=config.fused_qkv, quant=config.quant, quant_group=config.quant_group)


def model_config_dict(name: str | None) -> dict:
    """The named model's config (ModelConfig.to_dict()) read without its weights, from a folder, the local hub
    cache or config.json alone from the hub: the memory calculator's (C17)."""
    from llmviz.engine.loading.model import config_dict

    return config_dict(name)


def use_cpu_threads(n: int) -> None:
    """Torch's CPU thread count for this whole process (the app sets it once, when it loads a model)."""
    from llmviz.engine.platform.devices import set_cpu_threads

    set_cpu_threads(n)


def start(lm: LoadedModel, prompt: str | list[str], config: EngineConfig, budget: int | None = None) -> Session:
    """A new session on a loaded (shared, read-only) model, one row per prompt; nothing runs until step().
    `budget`: the bytes its run may hold, KV cache and trace together (a browser session's, issue 35)."""
    from llmviz.engine.session import Session

    return Session(lm, prompt, config, budget=budget)


def step(session: Session) -> StepTrace:
    return session.step()


def generated_text(lm: LoadedModel, trace: RunTrace, row: int = 0) -> str:
    """One row's generated tokens as text (special tokens such as EOS left out)."""
    return lm.tokenizer.hf.decode(trace.row_output_ids(row), skip_special_tokens=True)


def language_note(lm: LoadedModel, prompt: str) -> str | None:
    """A note for a non-ASCII prompt: which of its characters have no token of their own in the model's
    vocabulary and are spelled in UTF-8 bytes (issue 21: 济南的冬天's 济 and 冬 on the embedded model)."""
    if prompt.isascii() or not prompt.strip():
        return None
    as_bytes = "".join(dict.fromkeys(c for c in prompt if not c.isascii() and len(lm.tokenizer.encode(c)) > 1))
    if not as_bytes:
        return None
    ids = lm.tokenizer.encode(prompt)
    return (f"This prompt has {len(prompt)} characters and becomes {len(ids)} tokens: {as_bytes} "
            f"{'has' if len(as_bytes) == 1 else 'have'} no token of their own in {lm.name}'s vocabulary and "
            "are spelled in their UTF-8 bytes, one token per byte.")


def run(lm: LoadedModel, prompt: str | list[str], config: EngineConfig, max_new_tokens: int) -> RunTrace:
    """Prefill plus decode steps until max_new_tokens tokens exist, EOS, or the cache is full."""
    return start(lm, prompt, config).generate(max_new_tokens)


def batch_sweep(lm: LoadedModel, prompt: list[int], **options) -> dict:
    """Throughput at batch 1, 2, 4, 8 copies of one prompt (llmviz/labs/batch_sweep.py)."""
    from llmviz.labs.batch_sweep import batch_sweep as sweep

    return sweep(lm, prompt, **options)


def k5_workload(lm: LoadedModel) -> dict:
    """K5's prompt, steps and rounds, and whether `lm` is the model it is judged on (llmviz/labs/claims.py)."""
    from llmviz.labs.claims import k5_workload as workload

    return workload(lm)


def claims(ids=None, quick: bool = True, device: str = "auto", load_fn=None, progress: Progress | None = None,
           patience: float = 1.0) -> dict:
    """The article's claims K1-K11 measured on this machine (llmviz/labs/claims.py): `ids` "K1,K4" or None for
    all; load_fn(name, engine_config) lets the app use its shared model cache; `patience` times each claim's time
    budget its batches may take before the rule decides with what it has."""
    from llmviz.labs.claims import ClaimsPlan, parse_ids, run_claims

    return run_claims(parse_ids(ids), ClaimsPlan(quick=quick, device=device, patience=patience), load_fn or load,
                      progress)


def claim_workload(claim_id: str, quick: bool = True, device: str = "auto", load_fn=None) -> dict | None:
    """What a claim's quick (or full) measurement will run, before it runs (llmviz/labs/claims.Measurer.workload):
    the sides, shapes, prompt and steps the arithmetic predicts from; None where a claim has no such prediction."""
    from llmviz.labs.claims import ClaimsPlan, Measurer

    return Measurer(ClaimsPlan(quick=quick, device=device), load_fn or load).workload(claim_id)


def claim_ids() -> tuple[str, ...]:
    """The ids of the article's claims, "K1" to "K11" (llmviz/labs/claims.py)."""
    from llmviz.labs.claims import CLAIM_IDS

    return CLAIM_IDS


def device_limits(device: str, layer_bytes: int) -> dict:
    """The roofline's ceilings measured now: peak matmul FLOP/s, bandwidth beyond and within the caches (C7)."""
    from llmviz.engine.platform.devices import resolve_device
    from llmviz.labs.probes import device_limits as probe

    return probe(resolve_device(device), layer_bytes)


def prefill_sweep(lm: LoadedModel, lengths, repeats: int = 3, backend: str = "sdpa",
                  progress: Progress | None = None) -> dict:
    """Prefill ms against prompt length, median of repeats (llmviz/labs/claims.py; C18, claim K1)."""
    from llmviz.labs.claims import prefill_sweep as sweep

    return sweep(lm, lengths, repeats, backend, str(lm.device), progress)


def compare(config: CompareConfig, load_fn=None, progress: Progress | None = None) -> dict:
    """An A/B comparison (llmviz/labs/compare.py); load_fn(name, engine_config) -> LoadedModel lets the app
    use its shared model cache."""
    from llmviz.labs.compare import compare as run_compare

    return run_compare(config, load_fn or load, progress)


def decode_pair(config: DecodePairConfig, load_fn=None, progress: Progress | None = None) -> dict:
    """A and B decoding after a long context (llmviz/labs/decode_pair.py: the decode claims' measurement), and
    under "claim" the decode claim their specs are (K4, K10, K11: labs/claims.claim_of_pair), whether this was its
    workload, and the figures it is judged on; None for another pair."""
    from llmviz.labs.claims import claim_of_pair
    from llmviz.labs.decode_pair import claim_figures
    from llmviz.labs.decode_pair import decode_pair as run

    result = run(config, load_fn or load, progress)
    claim = claim_of_pair(config, result["a"]["model_config"], result["device"].split(":")[0])
    return result | {"claim": claim and claim | {"figures": claim_figures(claim["id"], result)}}


def start_layouts(lm: LoadedModel, prompts: list[str], config: EngineConfig,
                  layouts: tuple | None = None, budget: int | None = None) -> dict[str, Session]:
    """One session per KV layout (default: every one a setting may choose) on the same prompts and settings, to be
    stepped in lockstep (C8, C9). `budget`: what they may hold together (a browser session's, issue 35), each an
    equal share; caches that alone pass it are refused (NotAllowedError) before any step runs."""
    from llmviz.engine.session import Session

    chosen = tuple(KV_LAYOUTS) if layouts is None else layouts
    share = None if budget is None else budget // max(1, len(chosen))
    sessions = {layout: Session(lm, list(prompts), config.with_(kv_layout=layout)) for layout in chosen}
    held = sum(s.kv_bytes() for s in sessions.values())
    if budget is not None and held > budget:
        size, limit = f"{held / 1e6:,.1f} MB", f"{budget / 1e6:,.1f} MB"
        sessions.clear()
        raise NotAllowedError(f"these runs' KV caches alone need {size}; a session here keeps at most {limit} "
                              "(LLMVIZ_TRACE_BUDGET_MB): use fewer or shorter prompts, a smaller model or a shorter "
                              "max_seq_len", code="session_budget", size=size, limit=limit)
    for session in sessions.values():
        session.budget = share
    return sessions


def step_layouts(sessions: dict[str, Session]) -> dict[str, StepTrace]:
    """The next step of every session of start_layouts (each computes the same tokens: the layouts are exact)."""
    return {layout: session.step() for layout, session in sessions.items()}


def locality_sweep(lm: LoadedModel, lengths=None, steps: int = 8, repeats: int = 3, progress: Progress | None = None,
                   **options) -> dict:
    """Decode ms/token from paged blocks in order against the same blocks scattered (llmviz/labs/locality.py, C12)."""
    from llmviz.labs.locality import locality_sweep as sweep

    return sweep(lm, lengths, steps, repeats, progress, **options)


def decode_slope(lm: LoadedModel, progress: Progress | None = None, **options) -> dict:
    """Decode ms/token against the tokens in the cache over the model's whole context, and the bandwidth probe
    (llmviz/labs/decode_slope.py, C18)."""
    from llmviz.labs.decode_slope import decode_slope as sweep

    return sweep(lm, progress=progress, **options)


def layout_sweep(lm: LoadedModel, lengths=None, layouts: tuple | None = None, steps: int = 8,
                 repeats: int = 2, progress: Progress | None = None, **options) -> dict:
    """Decode ms/token of each KV layout (default: every choice) over cached lengths (llmviz/labs/layout_sweep.py,
    claim K3)."""
    from llmviz.labs.layout_sweep import layout_sweep as sweep

    return sweep(lm, lengths, tuple(KV_LAYOUTS) if layouts is None else layouts, steps, repeats, progress, **options)


def request_trace(name_or_path: str) -> RequestTrace:
    """A request trace: a built-in one by name (mixed, mixed-poisson, shared-prompt) or a JSON file, read bounded
    (TraceFormatError otherwise; llmviz/engine/serving/requests.py)."""
    from llmviz.engine.serving.requests import load_trace

    return load_trace(name_or_path)


def serve_config(**options) -> ServeConfig:
    """Serving settings (ServeConfig fields: slots, token_budget, block_size, pool_blocks, device, prefix_sharing),
    checked now: a ConfigError before any model loads."""
    from llmviz.engine.serving.continuous import ServeConfig

    return ServeConfig(**options)


def serve(lm: LoadedModel, trace, scheduler: str, progress: Progress | None = None, config: ServeConfig | None = None,
          until: int | None = None, **options) -> dict:
    """A request trace (built-in name, JSON file or RequestTrace) through static or continuous batching
    (llmviz/engine/serving/); `config` from serve_config(), or `options` its fields; `until`: continuous batching
    stops after that step (with capture and capture_steps: a look inside it, result["steps"])."""
    from llmviz.engine.serving.static import serve as run_serving

    requests = request_trace(trace) if isinstance(trace, str) else trace
    return run_serving(lm, requests, scheduler, config or serve_config(**options), progress, until)


def serve_alone(lm: LoadedModel, trace: RequestTrace, device: str) -> dict:
    """{request id: output ids} of every request run by itself with its seed and sampling: what a scheduler must
    reproduce, whoever shares its batch (tokens only, no logits kept)."""
    from llmviz.engine.lean_steps import lean_generate
    from llmviz.engine.session import Session

    out = {}
    for r in trace.requests:
        cfg = EngineConfig(device=device, capture="off", logit_lens_top_k=0, stop_at_eos=False, sampling=r.sampling,
                           max_seq_len=len(r.prompt_ids) + r.output_len + 1)
        session = Session(lm, config=cfg, prompt_ids=[list(r.prompt_ids)], seeds=[r.seed])
        out[r.id] = lean_generate(session, r.output_len).output_ids
    return out


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
    from llmviz.engine.serving.static import warm_up

    warm_up(lm, serve_config(slots=slots, device=device))


def speculation_costs(target: LoadedModel, draft: LoadedModel, ids: list[int], n: int) -> dict:
    """Each model alone, greedy, timed the same way (llmviz/labs/speculative.py)."""
    from llmviz.labs.speculative import speculation_costs as costs

    return costs(target, draft, ids, n)


def speculate(target: LoadedModel, draft: LoadedModel, prompt: str, k: int, max_new: int = 32,
              sampling=None, seed: int = 0) -> dict:
    """Speculative decoding of `prompt` beside the target alone and the draft alone (C16; claim K8)
    (llmviz/labs/speculative.py)."""
    from llmviz.labs.speculative import speculate as run_speculative

    return run_speculative(target, draft, prompt, k, max_new, sampling, seed)


# The transformers submodules behind the names llmviz/engine/loading/model.py imports (config, tokenizer)
_TRANSFORMERS = ("transformers.models.auto.configuration_auto", "transformers.models.auto.tokenization_auto",
                 "transformers.tokenization_utils_fast")


def warm_imports() -> None:
    """Import what a first model load imports, now. transformers is a lazy module: each name is imported on first
    access, and two sessions loading their first models at once got "cannot import name 'AutoConfig' from
    'transformers'" (issue 19). The app calls this once, under a lock (llmviz/ui/server.imported)."""
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
    from llmviz.engine.serving.requests import PUBLIC_MAX_TRACE_TOKENS, check_work
    from llmviz.trace.config import default_max_seq

    requests = request_trace(trace) if isinstance(trace, str) else trace
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

