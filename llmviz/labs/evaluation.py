"""How much a lossy switch costs: held-out perplexity through the KV cache, and the drift of logits and
greedy tokens against a reference run, teacher-forced (C11, C19, C20, C21).

Perplexity runs each 512-token window of assets/corpus/heldout.txt as one prefill through a KV cache of
the chosen layout and storage dtype, so a quantized cache's keys and values are the ones attended to.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from llmviz.corpus import read_documents
from llmviz.engine.kv import make_kv_cache
from llmviz.engine.phases import feed
from llmviz.paths import CORPUS
from llmviz.trace.sparsity import BlockSparse

HELDOUT = CORPUS / "heldout.txt"
EVAL_WINDOW = 512  # non-overlapping windows of this many tokens (the embedded models' context)


def heldout_ids(tokenizer, path: Path = HELDOUT) -> list[int]:
    """Each held-out document encoded on its own and followed by the end-of-text id, concatenated."""
    docs = read_documents(path)
    eos = tokenizer.eos_ids[0]
    # verbose=False: a document longer than the model's context is fine here (it is read in windows)
    return [t for doc in docs for t in [*tokenizer.hf.encode(doc, add_special_tokens=False, verbose=False), eos]]


@torch.no_grad()
def predicted_nll(logits_fn, ids: list[int], window: int = EVAL_WINDOW) -> tuple[float, list[int]]:
    """The summed NLL (nats) of every predicted token of non-overlapping `window`-token chunks of `ids`, and the
    positions of those tokens (each chunk's first token has no context and is not predicted);
    logits_fn: ids [1, n] -> logits [1, n, V]."""
    data = torch.tensor(ids)
    nll, predicted = 0.0, []
    for i in range(0, len(data) - 1, window):
        chunk = data[i:i + window][None]  # [1, n]
        if chunk.shape[1] < 2:
            break
        logits = logits_fn(chunk).float().cpu()  # [1, n, V]
        nll += F.cross_entropy(logits[0, :-1], chunk[0, 1:], reduction="sum").item()
        predicted += range(i + 1, i + chunk.shape[1])
    return nll, predicted


def perplexity(logits_fn, ids: list[int], window: int = EVAL_WINDOW) -> float:
    """exp(mean NLL) over the predicted tokens (predicted_nll): comparable within one tokenizer only."""
    nll, predicted = predicted_nll(logits_fn, ids, window)
    return math.exp(nll / len(predicted))


def characters(token_bytes: bytes) -> int:
    """The characters a token's bytes spell: UTF-8 gives each character exactly one byte outside 0x80-0xBF, so a
    character split over several byte tokens is counted once, in the token that holds its first byte."""
    return sum(1 for b in token_bytes if not 0x80 <= b <= 0xBF)


def bits_per_char(logits_fn, ids: list[int], chars_of, window: int = EVAL_WINDOW) -> float:
    """Bits per character over the predicted tokens: their summed NLL in bits over the characters they spell
    (chars_of(id)); comparable across tokenizers, unlike perplexity."""
    nll, predicted = predicted_nll(logits_fn, ids, window)
    return nll / math.log(2) / sum(chars_of(ids[i]) for i in predicted)


def chars_counter(tokenizer):
    """chars_of for a loaded model's tokenizer: a special token (the end of a document) counts as one character."""
    special = set(tokenizer.special_ids)
    return lambda token_id: 1 if token_id in special else characters(tokenizer.token_bytes(token_id))


def through_cache(lm, kv_dtype: str, layout: str, backend: str, window: int | BlockSparse | None):
    """logits_fn of a loaded model: each window of ids one prefill through a fresh cache of this kind, every layer
    masked by `window` (a sliding window, a block-sparse pattern, or None)."""
    def logits_of(chunk: torch.Tensor) -> torch.Tensor:
        cache = make_kv_cache(layout, lm.cfg, chunk.shape[1], kv_dtype=kv_dtype, model_dtype=lm.dtype,
                              device=lm.device)
        cache.add(0)
        with torch.inference_mode():
            return feed(lm.model, cache, [chunk[0].tolist()], [0], backend=backend, last_only=False, window=window)

    return logits_of


def engine_perplexity(lm, ids: list[int], kv_dtype: str = "auto", layout: str = "contiguous",
                      backend: str = "sdpa", window: int | None = None) -> float:
    """Perplexity of a loaded model (its load-time switches included) with a KV cache of this kind, every
    layer attending to its last `window` tokens when one is given."""
    return perplexity(through_cache(lm, kv_dtype, layout, backend, window), ids)


def engine_bits_per_char(lm, ids: list[int], kv_dtype: str = "auto", layout: str = "contiguous",
                         backend: str = "sdpa") -> float:
    """Bits per character of a loaded model through the KV cache (the figure that compares two tokenizers)."""
    return bits_per_char(through_cache(lm, kv_dtype, layout, backend, None), ids, chars_counter(lm.tokenizer))


def teacher_forced_drift(reference, session) -> dict:
    """`session` (a fresh Session of one row) fed the tokens the `reference` trace drew, step by step: per step
    max |logit_ref - logit| and whether the greedy pick agrees, so every step compares the same context
    (after a divergence, free-running logits would compare different ones). Needs whole logits per step."""
    gaps, agree = [], []
    for ref in reference.steps:
        step = session.step()
        if ref.logits is None or step.logits is None:
            return {"max_abs_dlogit": None, "why": "the vocabulary is too large to keep whole logits per step"}
        gaps.append(float(np.abs(ref.logits[0] - step.logits[0]).max()))
        agree.append(bool(ref.logits[0].argmax() == step.logits[0].argmax()))
        if ref.index + 1 < len(reference.steps):
            session.force_last([int(ref.sampled[0])])
    return {"max_abs_dlogit": gaps, "greedy_agree": agree, "max": max(gaps),
            "greedy_agreement": sum(agree) / len(agree), "steps": len(gaps)}
