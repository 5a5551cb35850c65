"""LLM.int8() and GPTQ (engine/models/quant_methods.py; C21, the article's slip that names "8-bit" and "4-bit" for two
specific methods): each checked against a case worked out independently (numpy, or round-to-nearest itself where the
method must reduce to it), and against the property it exists for."""

import numpy as np
import pytest
import torch
from torch import nn

from llmviz.engine.models.quant import QuantLinear
from llmviz.engine.models.quant_methods import (
    LLM_INT8_THRESHOLD,
    Int8Outliers,
    count_outliers,
    gptq,
    hessian,
    layer_error,
)
from llmviz.errors import ConfigError

OUT, IN, GROUP = 48, 128, 32


def linear(weight: torch.Tensor) -> nn.Linear:
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    layer.weight.data = weight.clone()
    return layer


def rebuilt(q, scale, low) -> torch.Tensor:
    out, cols = q.shape
    return (q.double().reshape(out, -1, GROUP) * scale[..., None] + low[..., None]).reshape(out, cols)


@pytest.fixture(scope="module")
def layer():
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(OUT, IN, generator=gen)
    mix = torch.randn(IN, IN, generator=gen) * 0.3 + torch.eye(IN)  # correlated input features, as real ones are
    inputs = torch.randn(4000, IN, generator=gen) @ mix
    return weight, inputs[:2000], inputs[2000:]  # calibration, and fresh inputs of the same kind


def test_gptq_on_uncorrelated_inputs_is_round_to_nearest(layer):
    """With H = I (no correlation to exploit, no damping) every error update is zero: GPTQ rounds exactly as
    round-to-nearest int4 does, grid and all."""
    weight, _, _ = layer
    q, scale, low = gptq(weight, torch.eye(IN), GROUP, damp=0.0)
    rtn = QuantLinear(linear(weight), "int4", GROUP, kernel="reference").dequantized()
    assert torch.equal(rebuilt(q, scale, low).float(), rtn) or torch.allclose(rebuilt(q, scale, low).float(), rtn,
                                                                              atol=1e-6)
    assert int(q.min()) >= 0 and int(q.max()) <= 15


def test_gptq_lowers_the_layers_error_where_inputs_correlate(layer):
    """The objective GPTQ minimizes, ||XW^T - XQ^T||^2: well below round-to-nearest's on the calibration inputs, and
    on fresh inputs of the same distribution too (not a fit to the calibration rows alone)."""
    weight, calibration, fresh = layer
    q, scale, low = gptq(weight, hessian(calibration), GROUP)
    rtn = QuantLinear(linear(weight), "int4", GROUP, kernel="reference").dequantized()
    for x in (calibration, fresh):
        assert layer_error(weight, rebuilt(q, scale, low), x) < 0.75 * layer_error(weight, rtn, x)


def test_a_gptq_grid_is_stored_and_run_as_int4(layer):
    weight, calibration, fresh = layer
    grid = gptq(weight, hessian(calibration), GROUP)
    stored = QuantLinear(linear(weight), "int4", GROUP, kernel="reference", grid=grid)
    rtn = QuantLinear(linear(weight), "int4", GROUP, kernel="reference")
    assert torch.allclose(stored.dequantized(), rebuilt(*grid).float(), atol=1e-5)
    assert stored.q.shape == rtn.q.shape == (OUT, IN // 2) and stored.scale.shape == rtn.scale.shape  # its bytes
    x = fresh[:5]
    assert torch.allclose(stored(x), x @ rebuilt(*grid).float().T, atol=1e-4)
    with pytest.raises(ConfigError, match="do not divide"):
        gptq(weight[:, :100], torch.eye(100), GROUP)


def by_hand(w: np.ndarray, x: np.ndarray, threshold: float) -> np.ndarray:
    """LLM.int8()'s product worked out in numpy: absmax int8 per weight row and per activation row over the columns
    under the threshold, those columns' float product for the rest."""
    sw = np.abs(w).max(1) / 127
    qw = np.clip(np.round(w / sw[:, None]), -127, 127)
    outlier = (np.abs(x) >= threshold).any(0)
    xn = np.where(outlier[None, :], 0.0, x)
    sx = np.abs(xn).max(1) / 127
    qx = np.clip(np.round(xn / sx[:, None]), -127, 127)
    return (qx @ qw.T) * sx[:, None] * sw[None, :] + x[:, outlier] @ (qw * sw[:, None])[:, outlier].T


def test_llm_int8_keeps_an_outlier_feature_apart():
    gen = torch.Generator().manual_seed(1)
    w = torch.randn(8, 6, generator=gen)
    x = torch.randn(3, 6, generator=gen)
    x[1, 2] = 20.0  # one feature of one token far beyond the rest: the paper's emergent outlier
    layer = Int8Outliers(linear(w), "toy")
    with count_outliers() as seen:
        y = layer(x)
    assert seen == [("toy", 1, 6)]  # one of six columns crossed 6.0
    assert np.allclose(y.numpy(), by_hand(w.double().numpy(), x.double().numpy(), LLM_INT8_THRESHOLD), atol=1e-4)
    # without the decomposition the outlier sets its token's scale (20/127) and flattens the rest of its row: the
    # activations' rounding error, measured against the int8 weights' own product, grows many times
    plain = Int8Outliers(linear(w), "plain", threshold=float("inf"))
    exact = x @ layer.dequantized().T
    assert (y - exact)[1].abs().max() < 0.1 * (plain(x) - exact)[1].abs().max()
    assert np.allclose(plain(x).numpy(), by_hand(w.double().numpy(), x.double().numpy(), float("inf")), atol=1e-4)


def test_llm_int8_counts_nothing_outside_count_outliers():
    layer = Int8Outliers(linear(torch.randn(4, 4)), "quiet")
    layer(torch.full((2, 4), 9.0))  # no context open: nothing is kept anywhere (the shared model is never written)
    with count_outliers() as seen:
        pass
    assert seen == []


@pytest.mark.slow
def test_the_embedded_model_under_each_method():
    """On the embedded model, loaded as a user loads it (service.models.load: GPTQ calibrated on training-split text):
    GPTQ without calibration text is a typed error; its bytes are int4's and LLM.int8()'s int8's; with groups of
    128 columns, where round-to-nearest int4 costs perplexity, GPTQ recovers part of it on the held-out text; and
    the columns LLM.int8() keeps apart in layer 0 are the ones the fp32 run's own recorded input crosses 6.0 in."""
    from llmviz import service
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.labs.evaluation import engine_perplexity, heldout_ids
    from llmviz.trace.config import EngineConfig

    with pytest.raises(ConfigError, match="calibration"):
        load_model("llmviz-tiny", device="cpu", quant="gptq-int4")
    lms = {mode: service.models.load("llmviz-tiny", EngineConfig(device="cpu", quant=mode,
                                                                  quant_group=128 if "int4" in mode else 32))
           for mode in ("none", "int8", "int4", "llm-int8", "gptq-int4")}
    assert lms["gptq-int4"].weight_bytes == lms["int4"].weight_bytes < lms["llm-int8"].weight_bytes
    assert lms["llm-int8"].weight_bytes == lms["int8"].weight_bytes < lms["none"].weight_bytes
    assert lms["gptq-int4"].options["calibration_tokens"] >= 1024
    ids = heldout_ids(lms["none"].tokenizer)[:2048]  # four 512-token windows (the whole text: 76.7, 79.1, 80.5)
    ppl = {mode: engine_perplexity(lm, ids) for mode, lm in lms.items() if mode in ("none", "int4", "gptq-int4")}
    assert ppl["none"] < ppl["gptq-int4"] < ppl["int4"]  # measured here: 107.8, 110.0, 113.3
    prompt = "Return the value of the attribute named by the string"
    config = EngineConfig(device="cpu", capture="full", logit_lens_top_k=0)
    recorded = Session(lms["none"], prompt, config).step().hook("layers.0.attn_in").array[0]  # [n, d]
    crossing = int((np.abs(recorded) >= LLM_INT8_THRESHOLD).any(0).sum())
    with count_outliers() as seen:
        Session(lms["llm-int8"], prompt, EngineConfig(device="cpu", quant="llm-int8", logit_lens_top_k=0)).step()
    first = [n for name, n, _ in seen if name.startswith("layers.0.attn.") and name.endswith(("q_proj", "qkv_proj"))]
    assert first == [crossing]


def obs_by_hand(w: np.ndarray, h: np.ndarray, scale: np.ndarray, low: np.ndarray) -> np.ndarray:
    """The paper's update in its first (OBS) form, column by column: round column j on the row's grid, then spread
    its error over the columns not yet rounded by the inverse of H restricted to them, recomputed each time (no
    Cholesky factor, no blocks: another road to the same numbers)."""
    w, q = w.copy(), np.zeros(w.shape, dtype=int)
    cols = w.shape[1]
    for j in range(cols):
        hinv = np.linalg.inv(h[j:, j:])  # the remaining columns' inverse Hessian, j first
        q[:, j] = np.clip(np.round((w[:, j] - low) / scale), 0, 15)
        err = (w[:, j] - (q[:, j] * scale + low)) / hinv[0, 0]
        w[:, j + 1:] -= np.outer(err, hinv[0, 1:])
    return q


def test_gptq_on_a_4x4_layer_is_the_obs_update_by_hand():
    """A 4 x 4 layer, one group of 4 per row (its grid from the row as it stands), no damping: the engine's
    Cholesky form of GPTQ rounds every weight as the OBS update written out in numpy does, and leaves a smaller
    layer error than round-to-nearest on the same grid."""
    w = np.array([[0.9, -0.35, 0.12, 0.5], [-0.7, 0.25, 0.61, -0.1], [0.05, 0.8, -0.45, 0.3],
                  [0.33, -0.2, 0.74, -0.66]])
    x = np.array([[1.0, 0.8, 0.1, -0.2], [0.5, 0.45, -0.3, 0.1], [-0.2, -0.1, 0.9, 0.85], [0.3, 0.2, 0.4, 0.5],
                  [1.2, 1.1, -0.4, -0.3], [-0.6, -0.5, 0.2, 0.1]])  # correlated columns: 0 with 1, 2 with 3
    h = 2 * x.T @ x / len(x)
    q, scale, low = gptq(torch.tensor(w), torch.tensor(h), group=4, block=4, damp=0.0)
    grid_scale, grid_low = (w.max(axis=1) - w.min(axis=1)) / 15, w.min(axis=1)  # min-max int4, by hand
    assert np.allclose(scale[:, 0].numpy(), grid_scale) and np.allclose(low[:, 0].numpy(), grid_low)
    assert q.numpy().tolist() == obs_by_hand(w, h, grid_scale, grid_low).tolist()
    rtn = np.clip(np.round((w - grid_low[:, None]) / grid_scale[:, None]), 0, 15)
    assert q.numpy().tolist() != rtn.astype(int).tolist()  # the updates changed some rounding
    approx = lambda qq: qq * grid_scale[:, None] + grid_low[:, None]  # noqa: E731
    err = lambda a: float(np.sum((x @ (w - a).T) ** 2))  # noqa: E731
    assert err(approx(q.numpy())) < err(approx(rtn))
