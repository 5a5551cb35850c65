"""Speculative decoding measured (C16; claim K8): the rounds of llmviz/engine/serving/speculative.py after a
warm-up, each model alone timed the same way (greedy, capture off, the wall clock over its decode steps), and the
speed-up the acceptance rate and the cost ratio predict (analysis/serving.predicted_speedup) beside the measured
one. A measurement, so it lives in the labs, not in the engine."""

from __future__ import annotations

import time

from llmviz.analysis.serving import predicted_speedup
from llmviz.engine.lean_steps import lean_step
from llmviz.engine.loading.model import LoadedModel
from llmviz.engine.serving.speculative import Speculator
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig


def alone_decode(lm: LoadedModel, ids: list[int], n: int, backend: str = "sdpa",
                 layout: str = "contiguous") -> tuple[list[int], float]:
    """A model alone, greedy: its n tokens and its decode ms per token, on the wall clock over the decode
    steps (capture off), as the speculative rounds are timed, on the same attention backend and KV layout: the
    baseline a speculative run is measured against."""
    cfg = EngineConfig(device=str(lm.device), capture="off", logit_lens_top_k=0, stop_at_eos=False,
                       sampling=SamplingConfig(temperature=0), max_seq_len=len(ids) + n + 1, attn_backend=backend,
                       kv_layout=layout)
    session = Session(lm, config=cfg, prompt_ids=[ids])
    lean_step(session)  # the prefill (no step keeps its whole logits: only the tokens and the clock are read)
    began = time.perf_counter()
    while len(session.trace.steps) < n:
        lean_step(session)  # synchronizes the device (its timed region ends with the sampled ids on the host)
    return session.trace.output_ids, (time.perf_counter() - began) * 1000 / max(1, n - 1)


def speculation_costs(target: LoadedModel, draft: LoadedModel, ids: list[int], n: int, backend: str = "sdpa",
                      layout: str = "contiguous") -> dict:
    """Each model alone, greedy, timed the same way: decode ms per token, the cost ratio, the target's tokens."""
    alone, target_ms = alone_decode(target, ids, n, backend, layout)
    _, draft_ms = alone_decode(draft, ids, n, backend, layout)
    return {"target_alone_ids": alone, "target_alone_ms_per_token": target_ms, "draft_alone_ms_per_token": draft_ms,
            "cost_ratio": draft_ms / target_ms}


def speculate(target: LoadedModel, draft: LoadedModel, prompt: str, k: int, max_new: int = 32,
              sampling=None, seed: int = 0, backend: str = "sdpa", layout: str = "contiguous") -> dict:
    """Speculative decoding of `prompt`, greedy unless `sampling` says
    otherwise, with the target alone and the draft alone timed the same way (the same backend and KV layout).
    identical_outputs: greedy output equals the target's alone (None when sampled: the output then has the target's
    distribution, not its tokens)."""
    ids = target.tokenizer.encode(prompt)
    options = {"backend": backend, "layout": layout}
    Speculator(target, draft, ids, k, sampling, seed, max_new, **options).run()  # warm-up
    result = Speculator(target, draft, ids, k, sampling, seed, max_new, **options).run()
    costs = speculation_costs(target, draft, ids, max_new, **options)
    greedy = sampling is None or sampling.greedy
    return {**result, **costs, "identical_outputs": result["output_ids"] == costs["target_alone_ids"] if greedy
            else None, "greedy": greedy,
            "measured_speedup": costs["target_alone_ms_per_token"] / result["ms_per_token"],
            "predicted_speedup": predicted_speedup(result["acceptance_rate"], k, costs["cost_ratio"]),
            "prompt_ids": ids, "tokens": target.tokenizer.describe(
                [*ids, *result["output_ids"], *(t for r in result["rounds"] for t in (*r.proposed, r.token))])}
