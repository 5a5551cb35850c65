"""Model families: each maps a Hugging Face config and checkpoint onto one DecoderModel.

Torch-free: reading a config (here) needs no tensors, so the memory calculator (C17) and the pages use it too.
"""

from __future__ import annotations

import json

from llmviz.engine.models import gpt2, llama
from llmviz.engine.models.family import Family
from llmviz.errors import LlmvizError, ModelConfigError, UnsupportedArchitectureError
from llmviz.trace.model_config import MAX_SIZES, SUPPORTED_MODEL_TYPES, ModelConfig

FAMILIES: dict[str, Family] = {t: llama for t in llama.MODEL_TYPES} | {t: gpt2 for t in gpt2.MODEL_TYPES}
# The model types are declared in the torch-free contract (trace/model_config.py); tests/engine/test_families.py
# checks that these families implement exactly those.
MAX_CONFIG_CHARS = 200_000  # a config.json is a few kB; a pasted text beyond this is not one
# config.json's whole numbers, by the ModelConfig field whose bound (MAX_SIZES) a pasted config must keep
WHOLE_NUMBERS = {"hidden_size": "hidden_size", "num_attention_heads": "num_heads", "num_hidden_layers": "num_layers",
                 "num_key_value_heads": "num_kv_heads", "head_dim": "head_dim",
                 "intermediate_size": "intermediate_size", "vocab_size": "vocab_size",
                 "max_position_embeddings": "max_position_embeddings", "sliding_window": "max_position_embeddings",
                 "n_embd": "hidden_size", "n_head": "num_heads", "n_layer": "num_layers",
                 "n_inner": "intermediate_size", "n_positions": "max_position_embeddings"}


def check_model_type(hf_config: dict, where: str = "config.json") -> None:
    if not isinstance(hf_config, dict):
        raise ModelConfigError(f"{where} must hold a JSON object, not a {type(hf_config).__name__}")
    model_type = hf_config.get("model_type")
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise UnsupportedArchitectureError(
            f"model type {model_type!r} is not supported; supported: {', '.join(SUPPORTED_MODEL_TYPES)} "
            "(SmolLM checkpoints are 'llama')")


def model_config(hf_config: dict) -> ModelConfig:
    """Our ModelConfig from a Hugging Face config dict; a missing or wrong field is a ModelConfigError."""
    check_model_type(hf_config)
    for key in WHOLE_NUMBERS:
        value = hf_config.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ModelConfigError(f"{key} must be a whole number, got {value!r}")
    try:
        return FAMILIES[hf_config["model_type"]].config_from_hf(hf_config)
    except LlmvizError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a missing field, a string for a number
        raise ModelConfigError(f"config.json lacks or mistypes {exc} for a {hf_config['model_type']} model") from exc


def config_from_text(text: str, where: str = "the pasted config") -> ModelConfig:
    """A config.json's text (pasted, or a bundled file) as our ModelConfig; anything else is a typed error."""
    if len(text) > MAX_CONFIG_CHARS:
        raise ModelConfigError(f"{where} is {len(text):,} characters: a config.json is a few thousand")
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ModelConfigError(f"{where} is not JSON: {exc}") from exc
    check_model_type(raw, where)
    for key, field in WHOLE_NUMBERS.items():  # before anything is built from them
        value = raw.get(key)
        if isinstance(value, int) and not 0 <= value <= MAX_SIZES[field]:
            raise ModelConfigError(f"{key}={value:,} is not a size a model has (0 to {MAX_SIZES[field]:,})")
    return model_config(raw)
