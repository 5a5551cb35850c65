"""Load: a model on a device, a model's config without its weights, what its tokenizer makes of a text, and the
process's own settings (torch's CPU threads, the C heap, the imports a first load makes). Part of the service's door
(llmviz/service/__init__.py); nothing here imports torch until it is called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from llmviz.trace.config import EMBEDDED_MODEL, EngineConfig
from llmviz.trace.records import RunTrace

if TYPE_CHECKING:  # annotations only
    from llmviz.engine.loading.model import LoadedModel


def load(name: str | None, config: EngineConfig) -> LoadedModel:
    """The model named by `name` (default: the embedded one) on the config's device and dtype (a calibrated
    quantization, GPTQ, reads labs/calibration.py's text)."""
    from llmviz.engine.loading.model import load_model
    from llmviz.labs.calibration import calibration_ids

    return load_model(name or EMBEDDED_MODEL, device=config.device, dtype=config.dtype, kv_heads=config.kv_heads,
                      fused_qkv=config.fused_qkv, quant=config.quant, quant_group=config.quant_group,
                      calibration=calibration_ids)


def model_config_dict(name: str | None) -> dict:
    """The named model's config (ModelConfig.to_dict()) read without its weights, from a folder, the local hub
    cache or config.json alone from the hub: the memory calculator's (C17)."""
    from llmviz.engine.loading.model import config_dict

    return config_dict(name)


def config_from_text(text: str, where: str = "the pasted config") -> dict:
    """A config.json's text (pasted, or a bundled file) as ModelConfig.to_dict(); a typed error otherwise (C17)."""
    from llmviz.engine.models import config_from_text as read

    return read(text, where).to_dict()


# --- what a loaded model's tokenizer makes of a text (a page never reaches into the model for it) -----------------
def tokens(lm: LoadedModel, text: str) -> list[int]:
    """The token ids of `text` (no special tokens added): what a run of this prompt prefills (C1)."""
    return lm.tokenizer.encode(text)


def token_texts(lm: LoadedModel, text: str) -> list[str]:
    """Each token of `text` as the text it stands for (a byte token as its byte), in order."""
    ids = lm.tokenizer.encode(text)
    table = lm.tokenizer.describe(ids)
    return [table[i]["text"] for i in ids]


def text_of(lm: LoadedModel, ids: list[int]) -> str:
    """Token ids as text (special tokens such as EOS left out): a served request's output."""
    return lm.tokenizer.hf.decode(list(ids), skip_special_tokens=True)


def generated_text(lm: LoadedModel, trace: RunTrace, row: int = 0) -> str:
    """One row's generated tokens as text (special tokens such as EOS left out)."""
    return text_of(lm, trace.row_output_ids(row))


def language_note(lm: LoadedModel, prompt: str) -> str | None:
    """A note for a non-ASCII prompt: which of its characters have no token of their own in the model's
    vocabulary and are spelled in UTF-8 bytes (济南的冬天's 济 and 冬 on the embedded model)."""
    if prompt.isascii() or not prompt.strip():
        return None
    as_bytes = "".join(dict.fromkeys(c for c in prompt if not c.isascii() and len(lm.tokenizer.encode(c)) > 1))
    if not as_bytes:
        return None
    ids = lm.tokenizer.encode(prompt)
    return (f"This prompt has {len(prompt)} characters and becomes {len(ids)} tokens: {as_bytes} "
            f"{'has' if len(as_bytes) == 1 else 'have'} no token of their own in {lm.name}'s vocabulary and "
            "are spelled in their UTF-8 bytes, one token per byte.")


# --- the process -------------------------------------------------------------------------------------------------
def use_cpu_threads(n: int) -> None:
    """Torch's CPU thread count for this whole process (the app sets it once, when it loads a model)."""
    from llmviz.engine.platform.devices import set_cpu_threads

    set_cpu_threads(n)


def resolved_device(name: str) -> str:
    """The device `name` means here ("auto" -> "cuda:0", "mps" or "cpu"), in one spelling: the app's model cache
    keys on it, so that auto and the device it picks are one copy. ConfigError for no such device."""
    from llmviz.engine.platform.devices import resolve_device

    device = resolve_device(name)
    return f"{device.type}:{0 if device.index is None else device.index}" if device.type == "cuda" else device.type


def release_memory() -> bool:
    """Give freed heap memory back to the OS (engine/platform/heap.py): a long-running app calls it now and then."""
    from llmviz.engine.platform.heap import release_freed_memory

    return release_freed_memory()


def limit_heap_arenas() -> bool:
    """Keep the C heap to one arena for every thread (engine/platform/heap.py), before threads start.
    Torch-free: a replay-only install calls it too."""
    from llmviz.engine.platform.heap import limit_arenas

    return limit_arenas()


# The transformers submodules behind the names llmviz/engine/loading/model.py imports (config, tokenizer)
_TRANSFORMERS = ("transformers.models.auto.configuration_auto", "transformers.models.auto.tokenization_auto",
                 "transformers.tokenization_utils_fast")


def warm_imports() -> None:
    """Import what a first model load imports, now. transformers is a lazy module: each name is imported on first
    access, and two sessions loading their first models at once got "cannot import name 'AutoConfig' from
    'transformers'". The app calls this once, under a lock (llmviz/ui/server.imported)."""
    import transformers

    for name in _TRANSFORMERS:
        importlib.import_module(name)
    for name in ("AutoConfig", "AutoTokenizer", "PreTrainedTokenizerFast"):
        getattr(transformers, name)


def library_facts() -> dict:
    """What the installed libraries say of the article's slips, read here rather than asserted: the
    versions of transformers and torch, BERT's default `is_decoder`, and in how many of transformers' source files
    the name `kv_cache_dtype` appears (none: no such setting). A second or two, once per process (the page caches
    it); "?" where a library is absent (a replay-only install)."""
    import contextlib
    from importlib import metadata
    from pathlib import Path

    facts = {"transformers": "?", "torch": "?", "is_decoder": "?", "mentions": "?", "files": 0}
    for name in ("transformers", "torch"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            facts[name] = metadata.version(name)
    try:
        import transformers
        from transformers import BertConfig
    except ImportError:
        return facts
    sources = list(Path(transformers.__file__).parent.rglob("*.py"))
    facts.update(is_decoder=BertConfig().is_decoder, files=len(sources),
                 mentions=sum("kv_cache_dtype" in f.read_text(encoding="utf-8", errors="replace") for f in sources))
    return facts
