"""Sampling: seeded, reproducible, and each filter does what it says (C5)."""

import pytest
import torch

from llmviz.engine.loading.model import load_model
from llmviz.engine.sampling import apply_repetition_penalty, check_finite, filter_logits, sample
from llmviz.engine.session import Session
from llmviz.errors import ConfigError, LogitsNotFiniteError
from llmviz.trace.config import EngineConfig, SamplingConfig

LOGITS = torch.tensor([[4.0, 3.0, 2.0, 1.0, 0.0]])


def test_top_k_keeps_k_tokens():
    out = filter_logits(LOGITS, SamplingConfig(temperature=1.0, top_k=2))
    assert torch.isfinite(out).tolist() == [[True, True, False, False, False]]


def test_top_p_keeps_the_smallest_set_reaching_p():
    probs = LOGITS.softmax(-1)[0]  # 0.636, 0.234, 0.086, ...
    out = filter_logits(LOGITS, SamplingConfig(temperature=1.0, top_k=0, top_p=0.8))
    assert probs[0] < 0.8 < probs[0] + probs[1]
    assert torch.isfinite(out).tolist() == [[True, True, False, False, False]]


def test_temperature_scales_logits():
    out = filter_logits(LOGITS, SamplingConfig(temperature=2.0, top_k=0))
    assert torch.allclose(out, LOGITS / 2)


def test_repetition_penalty_lowers_seen_tokens():
    out = apply_repetition_penalty(torch.tensor([[2.0, -2.0, 1.0]]), torch.tensor([[0, 1]]), 2.0)
    assert out.tolist() == [[1.0, -4.0, 1.0]]


def test_greedy_is_argmax_and_seeded_draws_repeat():
    assert sample(LOGITS, SamplingConfig(temperature=0), torch.Generator(), torch.empty(1, 0, dtype=torch.long)) == 0
    cfg = SamplingConfig(temperature=1.0, top_k=0)
    draws = [sample(LOGITS.repeat(64, 1), cfg, torch.Generator().manual_seed(s), torch.empty(64, 0, dtype=torch.long))
             for s in (5, 5, 6)]
    assert torch.equal(draws[0], draws[1]) and not torch.equal(draws[0], draws[2])


def test_same_settings_same_tokens(model_dirs):
    lm = load_model(str(model_dirs["gpt2"]))
    cfg = EngineConfig(sampling=SamplingConfig(temperature=1.0, top_p=0.9), stop_at_eos=False)
    runs = [Session(lm, "The quick", cfg).generate(10).output_ids for _ in range(2)]
    other = Session(lm, "The quick", cfg.with_(seed=7)).generate(10).output_ids
    assert runs[0] == runs[1] and len(runs[0]) == 10 and other != runs[0]


def test_bad_sampling_settings():
    for bad in (dict(temperature=-1), dict(top_k=-1), dict(top_p=0), dict(top_p=1.5), dict(repetition_penalty=0)):
        with pytest.raises(ConfigError):
            SamplingConfig(**bad)


@pytest.mark.parametrize("temperature", [1e-40, 1e-4, 1e6, float("nan")])
def test_temperatures_that_would_overflow_are_refused(temperature):
    with pytest.raises(ConfigError, match="temperature"):
        SamplingConfig(temperature=temperature)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_check_finite_refuses_any_nan_or_inf_of_the_rows_drawn(dtype, bad):
    """One pass over the logits (their min and max) finds a NaN or an inf anywhere in the rows drawn from, in every
    dtype; a finished row's (not drawn from) is left alone."""
    logits = torch.randn(2, 300).to(dtype)
    check_finite(logits)
    logits[1, 123] = bad
    with pytest.raises(LogitsNotFiniteError, match="NaN or inf"):
        check_finite(logits)
    check_finite(logits, rows=[0])
