"""The calibration text a calibrated quantization reads at load (GPTQ, C21): the first pydoc topics of the embedded
model's training split (llmviz/corpus.calibration_documents), about CALIBRATION_CHARS characters, each document
encoded on its own and followed by the end-of-text id, as the held-out text is for perplexity. No held-out document
is among them, so a perplexity measured here never reads the text the quantization was fitted on."""

from __future__ import annotations

from llmviz.corpus import calibration_documents

CALIBRATION_CHARS = 12_000  # ~3,000 of the embedded tokenizer's tokens: six 512-token windows


def calibration_ids(tokenizer) -> list[int]:
    eos = tokenizer.eos_ids[0]
    return [t for doc in calibration_documents(CALIBRATION_CHARS)
            for t in [*tokenizer.hf.encode(doc, add_special_tokens=False, verbose=False), eos]]
