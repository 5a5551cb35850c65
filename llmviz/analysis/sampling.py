"""The next-token distribution a step's stored logits give under any sampling settings (C5).

Pure numpy mirror of the engine's sampler (llmviz/engine/sampling.py), so the Decode page can reshape
the shown distribution instantly when a slider moves, from the logits the trace recorded: no model.
The order is the engine's: temperature, then top-k, then top-p.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Distribution:
    ids: np.ndarray  # [k] token ids, most likely first (under the settings)
    probs: np.ndarray  # [k] probability after temperature/top-k/top-p (0 where excluded)
    raw_probs: np.ndarray  # [k] plain softmax(logits) probability, for comparison
    kept: np.ndarray  # [k] bool: may be sampled under the settings
    kept_count: int  # how many tokens of the whole vocabulary may be sampled
    ranks: np.ndarray  # [k] 1-based rank of each shown token among all (the `include`d one may be below `show`)


def stored_logits(step, row: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    """(ids, logits, log-sum-exp) of one batch row: the full vocabulary, or the stored top-k."""
    if step.logits is not None:
        logits = np.asarray(step.logits[row], dtype=np.float64)
        return np.arange(logits.shape[0]), logits, float(np.logaddexp.reduce(logits))
    return (np.asarray(step.topk_ids[row]), np.asarray(step.topk_logits[row], dtype=np.float64),
            float(step.logsumexp[row]))


def distribution(ids: np.ndarray, logits: np.ndarray, lse: float, temperature: float, top_k: int, top_p: float,
                 show: int = 10, include: int | None = None) -> Distribution:
    """The `show` most likely tokens under the settings (plus token `include` when it ranks lower, e.g. the
    token a step actually drew); temperature 0 is greedy (all mass on the argmax)."""
    order = np.argsort(-logits, kind="stable")
    ids, logits = ids[order], logits[order]  # most likely first
    raw = np.exp(logits - lse)
    if temperature == 0:
        probs = np.zeros_like(logits)
        probs[0] = 1.0
        kept = probs > 0
    else:
        scaled = logits / temperature
        kept = np.ones(logits.shape[0], dtype=bool)
        if 0 < top_k < logits.shape[0]:
            kept[top_k:] = False
        # only the stored ids are known when the vocabulary is large: normalize over them
        z = np.exp(scaled - scaled.max()) * kept
        probs = z / z.sum()
        if top_p < 1.0:
            before = np.cumsum(probs) - probs  # mass of the more likely tokens
            kept &= before < top_p
            z = z * kept
            probs = z / z.sum()
    rows = list(range(min(show, len(ids))))
    if include is not None:
        extra = np.flatnonzero(ids == include)
        if extra.size and extra[0] >= show:
            rows.append(int(extra[0]))
    return Distribution(ids[rows], probs[rows], raw[rows], kept[rows], int(kept.sum()), np.array(rows) + 1)
