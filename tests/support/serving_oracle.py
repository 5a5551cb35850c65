"""A small continuous-batching run recorded at capture full, and its oracle: each request run alone in a Session
with its seed (tests/engine/test_serving_steps.py, test_serving_rows.py). Three requests arrive while others decode,
so steps mix prefill chunks and decode rows; a step feeds at most BUDGET tokens, so request 2's 20-token prompt is
fed in two chunks."""

from llmviz.engine.loading.model import load_model
from llmviz.engine.serving.continuous import ContinuousScheduler, ServeConfig
from llmviz.engine.serving.requests import Request, RequestTrace
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig

SAMPLED = SamplingConfig(temperature=0.8, top_k=30)
BUDGET = 12  # tokens a step may feed
TRACE = RequestTrace("mixed", (
    Request(0, 0, tuple(range(5, 17)), 6, SAMPLED, seed=11),
    Request(1, 2, tuple(range(40, 47)), 5, SAMPLED, seed=12),
    Request(2, 3, tuple(range(90, 110)), 4, SamplingConfig(temperature=0), seed=13),
))


def served_run(folder: str):
    """(model, scheduler) after TRACE ran through continuous batching, every step recorded at capture full."""
    lm = load_model(folder, device="cpu")
    scheduler = ContinuousScheduler(lm, TRACE, ServeConfig(slots=3, block_size=4, token_budget=BUDGET,
                                                           capture="full", backend="eager"))
    scheduler.run()
    return lm, scheduler


def alone(lm, r: Request) -> Session:
    """The oracle: the request run by itself with its seed and sampling, every tensor recorded."""
    cfg = EngineConfig(device="cpu", capture="full", attn_backend="eager", logit_lens_top_k=0, stop_at_eos=False,
                       sampling=r.sampling, max_seq_len=len(r.prompt_ids) + r.output_len + 1)
    session = Session(lm, config=cfg, prompt_ids=[list(r.prompt_ids)], seeds=[r.seed])
    session.generate(r.output_len)
    return session
