"""The O(n²) term on the student's own model (C3; the article's "O(n²)", §1.1, and claim K1's slip "prefill_linear"):
for each prompt length n, layer 0's score matrix (heads x n x n numbers, all of them computed, the masked half
included) and the time of the layer's attention call that builds it (eager: QKᵀ, softmax, x V), beside the time of
the same layer's Q/K/V projection, a linear term, on the same input. Held-out text as the prompt; one untimed warm-up
of each length; then rounds over the lengths whose order rotates (labs/rounds.interleaved), so lengths pair by
round and each round's doubling ratio is a paired figure.
"""

from __future__ import annotations

import itertools

import torch

from llmviz.engine.capture import RunContext
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.models.attention import ATTENTION_BACKENDS
from llmviz.engine.timing import StepTimer, spread
from llmviz.errors import ConfigError
from llmviz.i18n.translator import timed
from llmviz.labs.attention_inputs import layer_input
from llmviz.labs.prefill_timing import text_ids
from llmviz.labs.rounds import interleaved
from llmviz.trace.progress import Progress

BACKEND = "eager"  # the backend that builds the score matrix as the article writes it (sdpa may never hold it)
SCORE_BYTES = 4  # one fp32 score


def growth_lengths(context: int, top: int = 512) -> list[int]:
    """Doubling lengths from 32 up to the model's context (the longest prompt it takes: context - 1) or `top`."""
    last = min(context - 1, top)
    lengths = [n for n in (32, 64, 128, 256, 512, 1024) if n < last]
    return [*lengths, last]


def attention_growth(lm: LoadedModel, lengths=None, repeats: int = 5, progress: Progress | None = None) -> dict:
    """{lengths, heads, score_numbers: h*n*n, score_bytes, attention_ms and projection_ms: a spread per length,
    ratios: per doubling, each round's paired ratio of the two times}: layer 0 only, capture off."""
    lengths = sorted({int(n) for n in (lengths or growth_lengths(lm.cfg.max_position_embeddings))})
    if not lengths or lengths[0] < 1 or lengths[-1] >= lm.cfg.max_position_embeddings:
        raise ConfigError(f"lengths must be 1..{lm.cfg.max_position_embeddings - 1} tokens, got {lengths}")
    attend, timer, ctx = ATTENTION_BACKENDS.get(BACKEND), StepTimer(lm.device), RunContext()
    inputs = {}
    for i, n in enumerate(lengths):
        if progress:
            progress(i / (len(lengths) * (repeats + 1)), "length", {"tokens": n})
        block, x, rope, mask = layer_input(lm.model, torch.tensor([text_ids(lm, n)], device=lm.device), 0, BACKEND)
        inputs[n] = (block.attn, x, rope, mask)
    times = {n: {"attention": [], "projection": []} for n in lengths}

    def once(n: int, keep: bool) -> None:
        attn, x, rope, mask = inputs[n]
        timer.start()
        q, k, v = attn.qkv(x, rope)  # [1, h, n, hd], [1, kv, n, hd] x 2: the linear term
        timer.mark("projection")
        attend(q, k, v, mask, attn.scale, attn.names, ctx)  # [1, h, n, n] scores, then [1, h, n, hd]
        timer.mark("attention")
        if keep:
            for part, ms in timer.spans_ms().items():
                times[n][part].append(ms)

    with torch.inference_mode():
        for n in lengths:
            once(n, keep=False)  # the warm-up
        for r in range(repeats):
            for j, (_, n) in enumerate(interleaved(lengths, r)):
                if progress:
                    progress((len(lengths) * (r + 1) + j) / (len(lengths) * (repeats + 1)), "length", {"tokens": n})
                once(n, keep=True)
    heads = lm.cfg.num_heads
    return {"model": lm.name, "layer": 0, "backend": BACKEND, "heads": heads, "lengths": lengths,
            "score_numbers": [heads * n * n for n in lengths],
            "score_bytes": [heads * n * n * SCORE_BYTES for n in lengths],
            "attention_ms": [spread(times[n]["attention"]) for n in lengths],
            "projection_ms": [spread(times[n]["projection"]) for n in lengths],
            "ratios": doubling_ratios(lengths, times), "device": str(lm.device), "threads": torch.get_num_threads(),
            "paired": True, **timed("timed.attention_growth", repeats=repeats)}


def doubling_ratios(lengths: list[int], times: dict) -> list[dict]:
    """From each length to the next: the lengths' ratio, the score matrix's (its square), and each part's time
    ratio round by round (a spread of paired ratios: the same round ran both lengths)."""
    out = []
    for a, b in itertools.pairwise(lengths):
        row = {"from": a, "to": b, "length": b / a, "scores": (b / a) ** 2}
        for part in ("attention", "projection"):
            row[part] = spread([y / x for x, y in zip(times[a][part], times[b][part], strict=True)])
        out.append(row)
    return out
