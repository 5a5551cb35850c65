"""C2: position schemes read from the `pos` hook (llmviz.analysis.positions), checked on engine runs."""

import numpy as np
import pytest

from llmviz.analysis.positions import rope_rates, wrap_angles


def test_rates_and_wavelengths_from_synthetic_angles():
    theta = 10000.0 ** (-np.arange(4) / 4)  # [pairs]
    positions = np.arange(3, 9)
    r = rope_rates(positions[:, None] * theta, positions)
    assert np.allclose(r.rates, theta) and np.allclose(r.wavelengths, 2 * np.pi / theta)
    assert rope_rates(np.zeros((1, 4)), np.array([0])) is None  # position 0 alone: every angle is 0


def test_wrap_angles_points_the_same_way():
    a = np.array([0.0, 3.0, 4.0, -4.0, 100.0])
    w = wrap_angles(a)
    assert np.all(w >= -np.pi) and np.all(w < np.pi)
    assert np.allclose(np.cos(w), np.cos(a)) and np.allclose(np.sin(w), np.sin(a))


@pytest.mark.parametrize("kind", ["llama_tied", "gpt2"])
def test_the_engine_pos_hook(model_dirs, kind):
    """RoPE (theta 10000, no scaling): rate of pair i is 10000^(-2i/hd); GPT-2: the learned table rows."""
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig

    lm = load_model(str(model_dirs[kind]))
    step = Session(lm, "The quick brown fox", EngineConfig(capture="full")).step()
    pos = step.hook("pos").array[0]  # [n, pos_dim]
    c = lm.cfg
    if kind == "gpt2":
        assert pos.shape == (step.input_ids.shape[1], c.hidden_size)
        return
    assert pos.shape == (step.input_ids.shape[1], c.head_dim // 2)
    r = rope_rates(pos, step.positions[0])
    expected = c.rope_theta ** (-2 * np.arange(c.head_dim // 2) / c.head_dim)
    assert np.allclose(r.rates, expected, rtol=1e-5)
