"""vLLM's block table as its paper draws it (the block_tables slip, §2.1; C9): two requests in one paged cache,
their logical blocks (a request's tokens 0-3, 4-7, ...) mapped to physical blocks of the pool in the order the
engine handed them out. The article's two prompts, 济南的冬天 and 人工智能, prefilled together, then decoded a step
at a time: their new blocks interleave in the pool while each request's table stays in order. Read from the engine's
own cache (its snapshot's block tables), not drawn by hand.
"""

from __future__ import annotations

from llmviz.analysis import tokens as tk
from llmviz.analysis.article import ARTICLE_BATCH
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig

PROMPTS = ARTICLE_BATCH  # the article's batch (§3.1)
BLOCK = 4  # tokens per block: the paper's figure uses 4
STEPS = 9  # the prefill, then decode steps until both requests have taken a block after the other's


def block_text(pieces: list[bytes], start: int, stop: int) -> str:
    """The text of tokens start..stop-1 by whole characters: a character shown in the block where its last byte
    token is, "…" where a character begun here ends in the next block (a byte token is a piece of a character)."""
    out = []
    for g in tk.group_by_character(pieces):
        if start <= g.stop - 1 < stop:
            out.append(tk.visible(g.text))
        elif start <= g.start < stop:
            out.append("…")
    return "".join(out)


def two_requests(lm: LoadedModel, prompts: tuple[str, str] = PROMPTS, block: int = BLOCK, steps: int = STEPS) -> dict:
    """{block, prompts, tables: each request's block table, lengths: tokens cached, texts: each logical block's
    text, pool: blocks the pool holds}: greedy, capture off, EOS not stopping."""
    config = EngineConfig(device=str(lm.device), kv_layout="paged", kv_block_size=block, capture="off",
                          logit_lens_top_k=0, stop_at_eos=False, sampling=SamplingConfig(temperature=0))
    session = Session(lm, None, config, prompt_ids=[lm.tokenizer.encode(p) for p in prompts])
    for _ in range(steps):
        session.step()
    snap = session.cache.snapshot()
    tables, lengths = [list(t) for t in snap["block_tables"]], list(snap["seq_lens"])
    texts = []
    for seq, n, table in zip(session.sequences, lengths, tables, strict=True):
        pieces = [lm.tokenizer.token_bytes(i) for i in seq.ids[:n]]
        texts.append([block_text(pieces, j * block, min(n, (j + 1) * block)) for j in range(len(table))])
    return {"model": lm.name, "prompts": list(prompts), "block": block, "tables": tables, "lengths": lengths,
            "texts": texts, "pool": session.cache.num_blocks}
