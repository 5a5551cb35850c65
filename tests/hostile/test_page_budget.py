"""Issue 35, finding 1, beyond the stepper: the runs a page holds of its own (the Batch page's batch, the KV layouts
page's one run per layout) count against the session's budget too. Their caches are counted before any step runs
(refused with a message past the budget), and their older steps' full logits are shed after each step: capture off
keeps a [rows, vocabulary] float32 array a step, 1.6 MB for 8 rows of GPT-2's 50,257 tokens, so 16 steps of the
Batch page held 25.7 MB besides the cache, unbounded by its length."""

from __future__ import annotations

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file, shown

from llmviz.i18n.translator import translate
from llmviz.trace.budget import held_bytes

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="runs the embedded model")
ROWS = "\n".join([" ".join(["the cat sat"] * 12)] * 8)  # 8 rows of 60 tokens of the embedded tokenizer


def press(at, key: str):
    return next(b for b in at.button if b.label == translate("en", key)).click().run(timeout=180)


def kv_by_hand(rows: int, slots: int, layers: int = 12, d: int = 768) -> int:
    """A contiguous fp32 cache: rows x slots x layers x (K and V) x d_model x 4 bytes (GPT-2-124M: d 768, 12 layers)."""
    return rows * slots * layers * 2 * d * 4


def test_the_batch_pages_run_stays_within_the_public_budget(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    at = open_app(page_file("batch"), model="gpt2-124m-random", batch=ROWS, lang="en")
    press(at, "batch.run")
    run = at.session_state["llmviz_batch"]
    press(at, "batch.to_end")
    assert not at.exception and not at.error, [e.value for e in at.error]
    steps = run.trace.steps
    width = steps[0].input_ids.shape[1]
    assert run.handle.kv_bytes() == kv_by_hand(8, steps[-1].kv["max_seq"])  # the cache, counted from its tensors
    budget = 64e6  # the public default
    logits_each = 8 * 50_257 * 4
    unshed = kv_by_hand(8, steps[-1].kv["max_seq"]) + len(steps) * logits_each
    assert unshed > budget  # unshed, it would pass the budget
    assert held_bytes(run.trace) + run.handle.kv_bytes() <= budget
    assert steps[-1].logits is not None and sum(s.logits is None for s in steps) >= 1  # the oldest logits went
    assert all(s.topk_ids.shape == (8, 20) for s in steps) and width == 60  # what the grid and the tokens read stays


def test_a_layouts_run_whose_caches_pass_the_budget_is_refused(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_TRACE_BUDGET_MB", "8")  # the embedded model's own cache at 512 slots is 4.2 MB
    long = " ".join(["the cat sat on a mat"] * 20)
    at = open_app(None, model="llmviz-tiny", prompt=long, kv_prompts="\n".join([long] * 3), kv_max=512, lang="en")
    at.switch_page(page_file("kv_layouts")).run(timeout=180)
    assert not at.exception
    said = [shown(e.value) for e in at.error]
    assert any("KV cache alone needs" in e and "at most 8.0 MB" in e for e in said), said
    assert at.session_state["llmviz_kv_live"] is None if "llmviz_kv_live" in at.session_state else True
