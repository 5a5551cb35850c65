"""Step 4.1.4's refusal (C17; the article's OOM, §4.1, and its remedies): one request, the student's prompt then
greedy tokens until its cache holds `tokens` positions, run on the engine under one KV budget
(EngineConfig.kv_budget_bytes) three ways:

- reserved: contiguous at max_seq_len = the model's context, as a server reserves for any request: refused before
  anything is allocated when that row does not fit the budget (KVCacheTooLargeError, the error a user gets);
- shorter: contiguous at the max_seq_len the budget holds: it fits, and the request ends there when it is longer
  (the session's max_seq_len end);
- paged: blocks taken from a pool the budget sizes as the sequence grows: it fits whatever the context, and a
  request longer than the pool is refused at the token that needs one more block (KVCacheFullError).

What the engine did is read from it: the exception it raised (its type and message), how many positions the
cache held, and the bytes its tensors hold (its snapshot).
"""

from __future__ import annotations

from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.session import Session
from llmviz.errors import ConfigError, KVCacheFullError, KVCacheTooLargeError, PromptError
from llmviz.trace.config import EngineConfig, SamplingConfig

SETUPS = ("reserved", "shorter", "paged")
BLOCK = 16  # the paged layout's default block


def setup_config(setup: str, context: int, budget: int, per_token: int, device: str) -> EngineConfig:
    layout, max_seq = ("paged", context) if setup == "paged" else (
        "contiguous", context if setup == "reserved" else max(2, min(context, budget // per_token)))
    return EngineConfig(device=device, kv_layout=layout, max_seq_len=max_seq, kv_block_size=BLOCK,
                        kv_budget_bytes=budget, capture="off", logit_lens_top_k=0, stop_at_eos=False,
                        sampling=SamplingConfig(temperature=0))


def one_setup(lm: LoadedModel, ids: list[int], config: EngineConfig, tokens: int) -> dict:
    """{outcome: done | ended | refused, held: positions in the cache at the end, max_seq, bytes: the cache's
    tensors, and for a refusal the error's type and message}."""
    out, session = {"max_seq": config.max_seq_len, "held": 0, "bytes": 0}, None
    try:
        session = Session(lm, None, config, prompt_ids=[ids])
        out["bytes"] = session.cache.bytes_allocated()
        while session.cache.length(0) < tokens and not session.finished:
            session.step()
        out["outcome"] = "done" if session.cache.length(0) >= tokens else "ended"
    except (KVCacheTooLargeError, KVCacheFullError, PromptError) as exc:
        out.update(outcome="refused", error=type(exc).__name__, message=str(exc))
    if session is not None:  # the cache as the run left it (refused at its start: none was made)
        out["held"] = session.cache.length(0)
        out["blocks"] = len(session.cache.snapshot().get("block_tables", [[]])[0])
    return out


def budget_runs(lm: LoadedModel, ids: list[int], budget: int, tokens: int, per_token: int) -> dict:
    """The request (`ids`, grown to `tokens` positions) under `budget` bytes of KV, each setup; `per_token`: one
    token's K and V in every layer (analysis/predict.kv_bytes_per_token), which sets the shorter max_seq_len."""
    context = lm.cfg.max_position_embeddings
    if not len(ids) < tokens <= context:
        raise ConfigError(f"the request must grow past its prompt ({len(ids)} tokens) and stay within the context "
                          f"({context}), got {tokens}")
    runs = {s: one_setup(lm, ids, setup_config(s, context, budget, per_token, str(lm.device)), tokens)
            for s in SETUPS}
    return {"model": lm.name, "budget": budget, "tokens": tokens, "prompt": len(ids), "per_token": per_token,
            "context": context, "block": BLOCK, "runs": runs, "device": str(lm.device)}
