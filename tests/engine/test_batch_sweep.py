"""Throughput against batch size (C13, K5): what each size ran, its padding, and typed errors."""

import pytest

from llmviz.engine.batch_sweep import batch_sweep
from llmviz.engine.loading import load_model
from llmviz.errors import ConfigError


def test_sweep_runs_each_size_on_its_rows(model_dirs):
    lm = load_model(str(model_dirs["llama_gqa_rope3"]), device="cpu")
    rows = [[5, 6, 7], [8, 9, 10, 11, 12]]
    result = batch_sweep(lm, rows, sizes=(1, 2, 4), steps=3, repeats=1, device="cpu")
    by = {r["batch"]: r for r in result["sizes"]}
    assert by[1]["prefill_padded_slots"] == 2 * 0  # one row of 3: nothing to pad
    assert by[2]["prefill_padded_slots"] == 5 - 3  # rows of 3 and 5 padded to 5
    assert by[4]["prefill_padded_slots"] == 2 * (5 - 3)  # the rows cycled: 3, 5, 3, 5
    for b, r in by.items():
        assert r["decode_tokens_per_s"] == pytest.approx(b * 1000 / r["decode_ms_per_step"]["median"])
        assert r["decode_ms_per_step"]["min"] <= r["decode_ms_per_step"]["median"] <= r["decode_ms_per_step"]["max"]
    assert by[4]["prefill_tokens_per_s"] == pytest.approx(16 * 1000 / by[4]["prefill_ms"]["median"])


@pytest.mark.parametrize("kw", [{"sizes": (0,)}, {"sizes": (9,)}, {"steps": 0}, {"repeats": 11}])
def test_bad_sweeps_are_config_errors(model_dirs, kw):
    lm = load_model(str(model_dirs["gpt2"]), device="cpu")
    with pytest.raises(ConfigError):
        batch_sweep(lm, [[1, 2]], **kw)
    with pytest.raises(ConfigError):
        batch_sweep(lm, [])
