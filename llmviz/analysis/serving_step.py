"""One step of continuous or static batching, read from its StepTrace (every scheduler records what the
pages read). Row i of the step is the request its StepRecord names in row i; from the trace alone: the positions it
fed, what the cache holds for it after the step and in which blocks (a paged pool; a contiguous cache has none), the
token it drew (or none: a prefill chunk that has more to feed, or static batching's finished row, still computed
in the pass and its token thrown away), and the attention of its last fed token over the keys the step read (a
layer, the mean over heads), with the keys it may not see (later positions, another row's length) marked. Pure
numpy."""

from __future__ import annotations

import numpy as np

from llmviz.trace import hooks


def step_rows(step, record) -> list[dict]:
    """Per row: request, slot, kind ("prefill" | "decode" | "idle"), tokens fed, first and last position fed (None:
    it fed none), tokens its cache holds after the step, its block table (None: freed, or no blocks), the id it drew
    (None: it drew none)."""
    kv = step.kv
    out = []
    for i, (rid, slot, fed, kind) in enumerate(record.rows):
        real = step.positions[i][step.positions[i] >= 0]  # [fed]
        at = kv["seq_ids"].index(rid) if rid in kv.get("seq_ids", ()) else None  # a request finished now: freed
        tables = kv.get("block_tables")
        out.append({"request": rid, "slot": slot, "kind": kind, "fed": fed if len(real) else 0,
                    "first": int(real[0]) if len(real) else None, "last": int(real[-1]) if len(real) else None,
                    "cached": None if at is None else kv["seq_lens"][at],
                    "blocks": None if at is None or tables is None else list(tables[at]),
                    "drew": int(step.sampled[i]) if step.sampled[i] >= 0 and rid in record.drawn else None})
    return out


def last_query_attention(step, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """([b, n_k] each row's last fed token's attention over the step's key slots, the mean over heads; [b, n_k]
    True where that token may not look: slots past its own position, every slot of a row that fed nothing)."""
    probs = step.hook(hooks.probs(layer)).array  # [b, h, n, n_k]
    b, _, _, n_k = probs.shape
    fed = [np.flatnonzero(step.input_ids[i] >= 0) for i in range(b)]
    last = np.array([f[-1] if len(f) else 0 for f in fed])  # [b] its last real column
    rows = probs[np.arange(b), :, last, :].mean(axis=1)  # [b, n_k]
    position = np.array([step.positions[i, last[i]] if len(fed[i]) else -1 for i in range(b)])  # slot s: position s
    hidden = np.arange(n_k)[None, :] > position[:, None]  # [b, n_k]
    return rows, hidden


def verification_attention(step, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """A one-row step feeding several tokens (speculative decoding's verification of x, d1..dk): ([n, n_k] each fed
    token's attention over the keys, the mean over heads; [n, n_k] True where it may not look: later positions)."""
    probs = step.hook(hooks.probs(layer)).array[0]  # [1, h, n, n_k] -> [h, n, n_k]
    rows = probs.mean(axis=0)  # [n, n_k]
    hidden = np.arange(rows.shape[1])[None, :] > step.positions[0][:, None]  # [n, n_k]: a key slot s is position s
    return rows, hidden
