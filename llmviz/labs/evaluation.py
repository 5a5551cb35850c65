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

from llmviz.engine.kv import make_kv_cache
from llmviz.engine.phases import feed
from llmviz.labs.documents import read_documents
from llmviz.paths import CORPUS

HELDOUT = CORPUS / "heldout.txt"
EVAL_WINDOW = 512  # non-overlapping windows of this many tokens (the embedded models' context)


def heldout_ids(tokenizer, path: Path = HELDOUT) -> list[int]:
    """Each held-out document encoded on its own and followed by the end-of-text id, concatenated."""
    docs = read_documents(path)
    eos = tokenizer.eos_ids[0]
    # verbose=False: a document longer than the model's context is fine here (it is read in windows)
    return [t for doc in docs for t in [*tokenizer.hf.encode(doc, add_special_tokens=False, verbose=False), eos]]


@torch.no_grad()
def perplexity(logits_fn, ids: list[int], window: int = EVAL_WINDOW) -> float:
    """exp(mean NLL) over every predicted token of non-overlapping `window`-token chunks of `ids`;
    logits_fn: ids [1, n] -> logits [1, n, V]."""
    data = torch.tensor(ids)
    nll, count = 0.0, 0
    for i in range(0, len(data) - 1, window):
        chunk = data[i:i + window][None]  # [1, n]
        if chunk.shape[1] < 2:
            break
        logits = logits_fn(chunk).float().cpu()  # [1, n, V]
        nll += F.cross_entropy(logits[0, :-1], chunk[0, 1:], reduction="sum").item()
        count += chunk.shape[1] - 1
    return math.exp(nll / count)


def engine_perplexity(lm, ids: list[int], kv_dtype: str = "auto", layout: str = "contiguous",
                      backend: str = "sdpa", window: int | None = None) -> float:
    """Perplexity of a loaded model (its load-time switches included) with a KV cache of this kind, every
    layer attending to its last `window` tokens when one is given."""
    def through_cache(chunk: torch.Tensor) -> torch.Tensor:
        cache = make_kv_cache(layout, lm.cfg, chunk.shape[1], kv_dtype=kv_dtype, model_dtype=lm.dtype,
                              device=lm.device)
        cache.add(0)
        with torch.inference_mode():
            return feed(lm.model, cache, [chunk[0].tolist()], [0], backend=backend, last_only=False, window=window)

    return perplexity(through_cache, ids)


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
