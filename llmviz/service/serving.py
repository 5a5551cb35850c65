"""Serving: a request trace (llmviz/service/replay.py) through static or continuous batching
(llmviz/engine/serving/), the checks before it runs, each request alone (the tokens a scheduler must reproduce), and
one round of speculative decoding recorded.
Part of the service's door (llmviz/service/__init__.py); nothing here imports torch until it is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmviz.service.replay import requests_of
from llmviz.trace.config import EngineConfig
from llmviz.trace.progress import Progress

if TYPE_CHECKING:  # annotations only
    from llmviz.engine.loading.model import LoadedModel
    from llmviz.engine.serving.continuous import ServeConfig
    from llmviz.engine.serving.requests import RequestTrace


def serve_config(**options) -> ServeConfig:
    """Serving settings (ServeConfig fields: slots, token_budget, block_size, pool_blocks, device, backend, layout,
    prefix_sharing, capture, capture_steps), checked now: a ConfigError before any model loads."""
    from llmviz.engine.serving.continuous import ServeConfig

    return ServeConfig(**options)


def serve(lm: LoadedModel, trace, scheduler: str, progress: Progress | None = None, config: ServeConfig | None = None,
          until: int | None = None, **options) -> dict:
    """A request trace (built-in name, JSON file or RequestTrace) through static or continuous batching; `config`
    from serve_config(), or `options` its fields; `until`: either scheduler stops after that step (with capture
    and capture_steps: a look inside it, result["steps"], each step the StepTrace every page reads)."""
    from llmviz.engine.serving.schedulers import serve as run_serving

    return run_serving(lm, requests_of(trace), scheduler, config or serve_config(**options), progress, until)


def class_trace(lm: LoadedModel, prompts: list[str], every: int = 2, outputs: tuple = (16, 24, 32, 40)):
    """A class's own requests as a request trace (§3.2): request i is prompts[i] tokenized by `lm`,
    arriving at step every x i (so that requests join a batch already running) and generating outputs[i % 4] tokens
    (so that they leave it at different steps), greedy."""
    from llmviz.engine.serving.requests import Request, RequestTrace

    requests = tuple(Request(i, every * i, tuple(lm.tokenizer.encode(p)), outputs[i % len(outputs)])
                     for i, p in enumerate(prompts))
    return RequestTrace("class", requests, note=f"{len(prompts)} requests of a class, one every {every} steps")


def serve_alone(lm: LoadedModel, trace: RequestTrace, device: str, backend: str = "sdpa") -> dict:
    """{request id: output ids} of every request run by itself with its seed and sampling, on `backend`: what a
    scheduler must reproduce, whoever shares its batch (tokens only, no logits kept)."""
    from llmviz.engine.lean_steps import lean_generate
    from llmviz.engine.session import Session

    out = {}
    for r in trace.requests:
        cfg = EngineConfig(device=device, capture="off", logit_lens_top_k=0, stop_at_eos=False, sampling=r.sampling,
                           max_seq_len=len(r.prompt_ids) + r.output_len + 1, attn_backend=backend)
        session = Session(lm, config=cfg, prompt_ids=[list(r.prompt_ids)], seeds=[r.seed])
        out[r.id] = lean_generate(session, r.output_len).output_ids
    return out


def warm_up_serving(lm: LoadedModel, slots: int, device: str, backend: str = "sdpa",
                    layout: str = "contiguous") -> None:
    """Two short requests through both schedulers on the run's backend and layout, untimed, so the first timed run
    pays no one-time costs."""
    from llmviz.engine.serving.schedulers import warm_up

    warm_up(lm, serve_config(slots=slots, device=device, backend=backend, layout=layout))


def check_serving_work(lm: LoadedModel, trace, public: bool, slots: int | None = None) -> int:
    """A request trace (built-in name, JSON file or RequestTrace) checked before it runs on `lm` in `slots`; its work
    in tokens (prompt + output, and static batching's padding in `slots`): its longest request must fit a sequence
    (ConfigError), and on a public server the work be at most PUBLIC_MAX_TRACE_TOKENS (NotAllowedError;
    llmviz/engine/serving/requests.py check_work)."""
    from llmviz.engine.serving.requests import PUBLIC_MAX_TRACE_TOKENS, check_work
    from llmviz.trace.config import default_max_seq

    return check_work(requests_of(trace), default_max_seq(lm.cfg.max_position_embeddings),
                      PUBLIC_MAX_TRACE_TOKENS if public else None, slots)


def speculative_round(target: LoadedModel, draft: LoadedModel, prompt: str, k: int, index: int, max_new: int = 32,
                      sampling=None, seed: int = 0, backend: str = "sdpa", layout: str = "contiguous") -> dict:
    """Speculative decoding of `prompt` (as service.measure.speculate runs it: its rounds are the same for a seed),
    round `index`'s verification recorded at capture full (engine/serving/speculative.py): {"step": its StepTrace,
    None past the last round; "rounds"; "tokens": the recorded ids' table}. Untimed: a look, not a measurement."""
    from llmviz.engine.serving.speculative import Speculator

    spec = Speculator(target, draft, target.tokenizer.encode(prompt), k, sampling, seed, max_new, capture="full",
                      capture_rounds=(index,), backend=backend, layout=layout)
    result = spec.run()
    return {"step": spec.steps.get(index), "rounds": result["rounds"], "tokens": spec.tokens}
