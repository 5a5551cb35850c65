"""Two sessions stepping on one shared model in two threads see only their own run."""

import threading

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.trace.config import EngineConfig, SamplingConfig

RUNS = {
    "a": ("The quick brown fox", EngineConfig(seed=1, capture="full", sampling=SamplingConfig(temperature=1.0))),
    "b": ("Return the list of values", EngineConfig(seed=2, capture="meta", attn_backend="eager",
                                                     sampling=SamplingConfig(temperature=0.8, top_k=20))),
}
STEPS = 12


def tokens_of(lm, key):
    prompt, cfg = RUNS[key]
    session = Session(lm, prompt, cfg.with_(stop_at_eos=False))
    for _ in range(STEPS):
        session.step()
    last = session.trace.steps[-1]
    return session.trace.output_ids, [(r.name, r.norm, None if r.array is None else r.array.tobytes())
                                      for r in last.hooks]


def test_two_threads_on_one_model_match_their_solo_runs(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]))
    alone = {key: tokens_of(lm, key) for key in RUNS}
    together, errors = {}, []
    barrier = threading.Barrier(2)

    def worker(key):
        try:
            barrier.wait()
            together[key] = tokens_of(lm, key)
        except Exception as exc:  # surfaced by the assertion below
            errors.append(exc)

    for _ in range(3):
        threads = [threading.Thread(target=worker, args=(key,)) for key in RUNS]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert together == alone
    assert alone["a"][0] != alone["b"][0]
