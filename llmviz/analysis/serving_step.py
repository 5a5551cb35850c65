"""One step of continuous batching, read from its StepTrace (issue 37: every scheduler records what the pages
read). Row i of the step is the request its StepRecord names in row i; from the trace alone: the positions it fed,
what the cache holds for it after the step and in which blocks, the token it drew (or none: a prefill chunk that
has more to feed), and the attention of its last fed token over the keys the step read (a layer, the mean over
heads), with the keys it may not see (later positions, another row's length) marked. Pure numpy."""

from __future__ import annotations

import numpy as np

from llmviz.trace import hooks


def step_rows(step, record) -> list[dict]:
    """Per row: request, slot, kind ("prefill" | "decode"), tokens fed, first and last position fed, tokens its
    cache holds after the step, its block table, the id it drew (None: it drew none)."""
    kv = step.kv
    out = []
    for i, (rid, slot, fed, kind) in enumerate(record.rows):
        real = step.positions[i][step.positions[i] >= 0]  # [fed]
        at = kv["seq_ids"].index(rid) if rid in kv.get("seq_ids", ()) else None  # a request finished now: freed
        out.append({"request": rid, "slot": slot, "kind": kind, "fed": fed, "first": int(real[0]),
                    "last": int(real[-1]), "cached": None if at is None else kv["seq_lens"][at],
                    "blocks": None if at is None else list(kv["block_tables"][at]),
                    "drew": int(step.sampled[i]) if step.sampled[i] >= 0 else None})
    return out


def last_query_attention(step, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """([b, n_k] each row's last fed token's attention over the step's key slots, the mean over heads; [b, n_k]
    True where that token may not look: slots past its own position)."""
    probs = step.hook(hooks.probs(layer)).array  # [b, h, n, n_k]
    b, _, _, n_k = probs.shape
    last = np.array([np.flatnonzero(step.input_ids[i] >= 0)[-1] for i in range(b)])  # [b] its last real column
    rows = probs[np.arange(b), :, last, :].mean(axis=1)  # [b, n_k]
    position = step.positions[np.arange(b), last]  # [b]: a key slot s holds position s
    hidden = np.arange(n_k)[None, :] > position[:, None]  # [b, n_k]
    return rows, hidden
