"""The model-family protocol: what a family module (llama.py, gpt2.py) gives the loader. Torch-free.

A family maps a Hugging Face config.json onto our ModelConfig and a checkpoint's tensor names onto our parameter
names; every family builds the same DecoderModel (transformer.py) from the config alone. A new family is one
module with these four names, listed in FAMILIES (models/__init__.py) and in SUPPORTED_MODEL_TYPES
(trace/model_config.py); tests/engine/test_families.py checks each against this protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from llmviz.trace.model_config import ModelConfig


@runtime_checkable
class Family(Protocol):
    MODEL_TYPES: tuple[str, ...]  # the config.json `model_type` values it reads

    def config_from_hf(self, d: dict) -> ModelConfig:
        """Our ModelConfig from a config.json dict (a ModelConfigError for a field it cannot take)."""

    def hf_to_ours(self, name: str) -> str | None:
        """A checkpoint tensor's name under our parameter names; None for a tensor the model does not use."""

    def transform(self, ours: str, tensor: Any) -> Any:
        """The tensor as our parameter `ours` stores it (GPT-2's Conv1D weights transposed; others unchanged)."""
