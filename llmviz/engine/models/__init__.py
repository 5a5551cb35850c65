"""Model families: each maps a Hugging Face config and checkpoint onto one DecoderModel."""

from __future__ import annotations

from llmviz.engine.models import gpt2, llama

FAMILIES = {t: llama for t in llama.MODEL_TYPES} | {t: gpt2 for t in gpt2.MODEL_TYPES}
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)
