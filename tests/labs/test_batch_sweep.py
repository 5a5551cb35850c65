"""Throughput against batch size (C13, K5): b copies of one prompt, and typed errors."""

import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.labs.batch_sweep import batch_sweep


def test_sweep_runs_b_copies_of_the_prompt(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]), device="cpu")
    stages = []
    result = batch_sweep(lm, [5, 6, 7], sizes=(1, 2, 4), steps=3, repeats=1, device="cpu",
                         progress=lambda f, stage, values: stages.append((stage, values.get("batch"))))
    by = {r["batch"]: r for r in result["sizes"]}
    assert [r["prefill_padded_slots"] for r in result["sizes"]] == [0, 0, 0]  # copies: nothing to pad
    assert result["prompt_tokens"] == 3
    # 2 rounds (a warm-up and one timed) of each size and the control (batch 1 once more), the order rotating by
    # one each round (1 2 4 1', then 2 4 1' 1), then "done"
    assert stages == [("round", 1), ("round", 2), ("round", 4), ("round", 1), ("round", 2), ("round", 4),
                      ("round", 1), ("round", 1), ("done", None)]
    assert result["control"]["batch"] == 1 and len(result["control"]["prefill_ms"]["all"]) == 1
    for r in by.values():
        assert r["decode_ms_per_step"]["min"] <= r["decode_ms_per_step"]["median"] <= r["decode_ms_per_step"]["max"]
    # at batch 4 the prefill read 4 x 3 prompt tokens in the time it took
    assert by[4]["prefill_tokens_per_s"] * by[4]["prefill_ms"]["median"] == pytest.approx(12 * 1000)


@pytest.mark.parametrize("kw", [{"sizes": (0,)}, {"sizes": (9,)}, {"steps": 0}, {"repeats": 11}])
def test_bad_sweeps_are_config_errors(model_dirs, kw):
    lm = load_model(str(model_dirs["gpt2"]), device="cpu")
    with pytest.raises(ConfigError):
        batch_sweep(lm, [1, 2], **kw)
    with pytest.raises(ConfigError):
        batch_sweep(lm, [])


def test_sweep_runs_keep_no_whole_logits(model_dirs, monkeypatch):
    """A sweep reads timings only: its steps kept [b, V] logits each (8 rows x 129 steps of GPT-2's vocab were
    200 MB a run). Every step it records now holds none."""
    lm = load_model(str(model_dirs["gpt2"]), device="cpu")
    steps, real_step = [], Session.step

    def spy(self):
        steps.append(real_step(self))
        return steps[-1]

    monkeypatch.setattr(Session, "step", spy)
    result = batch_sweep(lm, [5, 6, 7], sizes=(1, 4), steps=3, repeats=1, device="cpu")
    assert len(steps) == 2 * 3 * 4  # 2 rounds x (2 sizes and the control) x (prefill + 3 decode steps)
    assert all(s.logits is None for s in steps) and all(s.topk_ids.shape[1] == 20 for s in steps)
    assert [r["batch"] for r in result["sizes"]] == [1, 4]
