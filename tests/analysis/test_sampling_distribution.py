"""The numpy distribution matches the engine's sampler filters (C5)."""

import numpy as np
import torch

from llmviz.analysis.sampling import distribution
from llmviz.engine.sampling import filter_logits, sample
from llmviz.trace.config import SamplingConfig

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(0, 3, 200)


def engine_probs(temperature, top_k, top_p):
    out = filter_logits(torch.tensor(LOGITS)[None], SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p))
    return out.softmax(-1)[0].numpy()


def test_matches_the_engine_for_many_settings():
    ids = np.arange(LOGITS.shape[0])
    lse = float(np.logaddexp.reduce(LOGITS))
    for temperature, top_k, top_p in [(1.0, 0, 1.0), (0.7, 50, 1.0), (1.3, 0, 0.9), (0.5, 20, 0.8), (2.0, 5, 0.5)]:
        d = distribution(ids, LOGITS, lse, temperature, top_k, top_p, show=200)
        want = engine_probs(temperature, top_k, top_p)
        assert np.allclose(d.probs, want[d.ids], atol=1e-9)
        assert d.kept_count == int((want > 0).sum())


def test_greedy_and_raw_probabilities():
    ids = np.arange(LOGITS.shape[0])
    lse = float(np.logaddexp.reduce(LOGITS))
    d = distribution(ids, LOGITS, lse, 0.0, 0, 1.0, show=5)
    assert d.ids[0] == int(np.argmax(LOGITS)) and d.probs.tolist() == [1.0, 0, 0, 0, 0] and d.kept_count == 1
    assert np.isclose(d.raw_probs[0], np.exp(LOGITS.max() - lse))
    assert np.all(np.diff(d.raw_probs) <= 0)


def test_the_drawn_token_is_shown_even_when_it_ranks_low():
    ids = np.arange(LOGITS.shape[0])
    lse = float(np.logaddexp.reduce(LOGITS))
    low = int(np.argsort(-LOGITS)[150])  # the 151st most likely token
    d = distribution(ids, LOGITS, lse, 1.0, 0, 1.0, show=10, include=low)
    assert len(d.ids) == 11 and d.ids[-1] == low
    assert np.isclose(d.raw_probs[-1], np.exp(LOGITS[low] - lse))
    assert len(distribution(ids, LOGITS, lse, 1.0, 0, 1.0, show=10, include=int(d.ids[0])).ids) == 10


TIED = np.array([2.0, 5.0, 5.0, 1.0, 5.0, 0.0, 5.0, 2.0])  # four tokens share the top logit, two share 2.0


def test_ties_follow_one_rule_in_both_samplers():
    """Equal logits rank by lower id first; top-k keeps exactly k; top-p cuts in that order (one rule)."""
    ids = np.arange(TIED.shape[0])
    lse = float(np.logaddexp.reduce(TIED))
    cases = [(1.0, 2, 1.0), (1.0, 3, 1.0), (1.0, 5, 1.0), (1.0, 0, 0.5), (0.7, 0, 0.3), (1.0, 6, 0.99), (1.0, 0, 0.26)]
    for temperature, top_k, top_p in cases:
        cfg = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p)
        engine = torch.isfinite(filter_logits(torch.tensor(TIED)[None], cfg))[0].numpy()
        d = distribution(ids, TIED, lse, temperature, top_k, top_p, show=len(ids))
        ours = np.zeros_like(engine)
        ours[d.ids[d.kept]] = True
        assert (engine == ours).all(), (temperature, top_k, top_p, engine, ours)
        if top_k:
            assert engine.sum() == min(top_k, len(ids))  # exactly k, even inside a tie
    top2 = filter_logits(torch.tensor(TIED)[None], SamplingConfig(temperature=1.0, top_k=2))[0]
    assert top2.isfinite().nonzero().ravel().tolist() == [1, 2]  # the two lowest ids of the four-way tie
    greedy = distribution(ids, TIED, lse, 0.0, 0, 1.0, show=1)
    no_history = torch.empty(1, 0, dtype=torch.long)
    token = sample(torch.tensor(TIED)[None], SamplingConfig(temperature=0), torch.Generator(), no_history)
    assert int(token[0]) == int(greedy.ids[0]) == 1
