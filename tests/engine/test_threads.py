"""Two sessions stepping on one shared model in two threads see only their own run."""

import threading

import numpy as np
import pytest

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
    return session.trace.output_ids, [(r.name, r.norm, r.array) for r in last.hooks]


def assert_same_run(got, want):
    """Same tokens and hook names exactly; floats within rounding: when two threads share torch's intra-op pool,
    a call may run on fewer threads and sum in another order (the last bits differ, not the run)."""
    (got_ids, got_hooks), (want_ids, want_hooks) = got, want
    assert got_ids == want_ids
    assert [h[0] for h in got_hooks] == [h[0] for h in want_hooks]
    for (name, norm, array), (_, want_norm, want_array) in zip(got_hooks, want_hooks, strict=True):
        assert norm == pytest.approx(want_norm, rel=1e-4, abs=1e-5), name
        assert (array is None) == (want_array is None), name
        if array is not None:
            np.testing.assert_allclose(array, want_array, rtol=1e-4, atol=1e-4, err_msg=name)


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
        for key in RUNS:
            assert_same_run(together[key], alone[key])
    assert alone["a"][0] != alone["b"][0]
