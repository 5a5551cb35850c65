"""A session's budget holds from the prefill on: each step copies only the hook points that
fit in what the budget leaves, chosen in one priority order, a point in every layer or in none; the points left out
keep their shapes and norms (K and V the norm of each row); a cache larger than the budget alone is refused.

The plan is checked against a hand count (small dims) and against the arrays a run without a budget really
copies (the sizes the plan predicts must be the sizes the capture makes)."""

from __future__ import annotations

import numpy as np
import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import NotAllowedError
from llmviz.trace.budget import CAPTURE_PRIORITY, held_bytes, plan_capture
from llmviz.trace.config import EngineConfig
from llmviz.trace.hooks import point_of

# b=1, n=n_k=10, d=8, h=2, kv=1, hd=4, f=16, pos_dim=8, V=50, L=2. Float32 bytes, by hand (every layer point x 2):
# sample 4, logits 200, final_norm 32, embed 320, pos 320, k 320, v 320, q 640, probs 1600, attn_out 640, resid 640,
# attn_in 640, mlp_in 640, mlp_out 640, scores 1600, mlp_act 1280, kv.write 640.
DIMS = {"b": 1, "n": 10, "n_k": 10, "d": 8, "h": 2, "kv": 1, "hd": 4, "f": 16, "pos_dim": 8, "V": 50, "L": 2}
SMALL = {"sample", "logits", "final_norm", "embed", "pos", "k", "v"}  # 1,516 bytes


@pytest.mark.parametrize(("budget", "expected"), [
    (0, set()),
    (3, set()),  # not even the sampled id (4 bytes)
    (4, {"sample"}),
    (2000, SMALL),  # q (640 more) would pass 2,000: skipped, and so is everything bigger after it
    (2156, SMALL | {"q"}),
    (2796, SMALL | {"q", "attn_out"}),  # probs (1,600) skipped, attn_out (640) after it still fits
    (10**9, set(CAPTURE_PRIORITY)),
])
def test_the_plan_by_hand(budget, expected):
    assert plan_capture(DIMS, budget) == expected


@pytest.fixture(scope="module")
def lm(model_dirs):
    return load_model(str(model_dirs["llama_gqa_rope3"]))


PROMPT = "The quick brown fox jumps over the lazy dog " * 6


def test_the_prefill_copies_what_fits_and_the_run_stays_within_its_budget(lm):
    whole = Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=256))
    whole.step()
    sizes = {}  # what each point really copies, in all layers, from the run without a budget
    for r in whole.trace.steps[0].hooks:
        sizes[point_of(r.name)] = sizes.get(point_of(r.name), 0) + r.array.nbytes
    kv = whole.kv_bytes()
    hooks = sum(sizes.values())
    kept = held_bytes(whole.trace) - hooks  # the logits, ids, top-k and lens the step keeps besides its hooks
    room = 60_000
    budget = kv + kept + room
    chosen, used = set(), 0  # the greedy rule applied to the real sizes
    for name in CAPTURE_PRIORITY:
        if used + sizes[name] <= room:
            chosen.add(name)
            used += sizes[name]
    assert 0 < len(chosen) < len(CAPTURE_PRIORITY)  # the budget bites: some points in, some out

    session = Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=256), budget=budget)
    step = session.step()
    copied = {point_of(r.name) for r in step.hooks if r.array is not None}
    assert copied == chosen
    assert held_bytes(session.trace) + session.kv_bytes() <= budget
    assert {r.name for r in step.hooks} == {r.name for r in whole.trace.steps[0].hooks}  # every record is there
    for r, full in zip(step.hooks, whole.trace.steps[0].hooks, strict=True):
        assert r.shape == full.shape and r.norm == pytest.approx(full.norm, rel=1e-5)
        if r.array is None and point_of(r.name) in ("k", "v"):  # the cache grid's norms, by hand from the copy
            by_hand = np.sqrt((full.array.astype(np.float64) ** 2).sum(-1))
            np.testing.assert_allclose(r.row_norms, by_hand, rtol=1e-5)
    assert step.sampled.tolist() == whole.trace.steps[0].sampled.tolist()  # the budget changes what is kept only


def test_every_step_stays_within_the_budget(lm):
    """A decode step's plan counts what earlier steps keep whatever is shed; with shedding after each step (what
    the app does) the run never holds more than its budget."""
    from llmviz.trace.budget import shed

    probe = Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=256))
    budget = probe.kv_bytes() + 120_000
    session = Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=256, stop_at_eos=False), budget=budget)
    for _ in range(8):
        session.step()
        shed(session.trace, budget, held_elsewhere=session.kv_bytes())
        assert held_bytes(session.trace) + session.kv_bytes() <= budget


def test_a_cache_larger_than_the_budget_is_refused(lm):
    probe = Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=256))
    with pytest.raises(NotAllowedError, match="KV cache alone needs") as caught:
        Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=256), budget=probe.kv_bytes() - 1)
    assert caught.value.code == "session_budget"
    Session(lm, PROMPT, EngineConfig(capture="full", max_seq_len=256), budget=probe.kv_bytes())  # exactly fits
