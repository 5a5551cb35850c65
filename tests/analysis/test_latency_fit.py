"""The Decode page's latency trend (C18): a fit shown only when it says something."""

import numpy as np

from llmviz.analysis.decode_series import MIN_FIT_POINTS, WARMUP_STEPS, fit_latency


def test_recovers_a_known_slope_and_its_standard_error():
    rng = np.random.default_rng(0)
    x = np.arange(10, 410, 10)
    slope_se = []
    for _ in range(200):  # the spread of the estimate over many noisy samples matches the reported error
        y = 2.0 + 0.004 * x + rng.normal(0, 0.05, x.size)
        fit = fit_latency(x, y, warmup=0)
        slope_se.append((fit.slope, fit.slope_se))
    slopes, ses = np.array(slope_se).T
    assert abs(slopes.mean() - 0.004) < 3 * slopes.std() / np.sqrt(len(slopes))
    # hand formula: sigma / sqrt(sum((x - mean)^2)) for sigma = 0.05
    assert np.isclose(ses.mean(), 0.05 / np.sqrt(np.sum((x - x.mean()) ** 2)), rtol=0.1)
    assert np.isclose(slopes.std(), ses.mean(), rtol=0.2)
    assert fit.meaningful and fit.points == x.size and fit.left_out == 0


def test_the_warm_up_steps_are_left_out():
    """A slow first step (one-off costs) before flat timings made the old fit's slope negative."""
    x = np.arange(5, 5 + 14)
    y = np.full(x.size, 3.0) + 0.01 * (x - 5)
    y[0] = 40.0  # the first decode step
    naive = np.polyfit(x, y, 1)[0]
    fit = fit_latency(x, y)
    assert naive < 0 < fit.slope and np.isclose(fit.slope, 0.01) and fit.left_out == WARMUP_STEPS
    assert fit.points == x.size - WARMUP_STEPS and fit.meaningful


def test_too_few_points_or_only_noise_give_no_line_and_say_why():
    x = np.arange(MIN_FIT_POINTS + WARMUP_STEPS - 1)
    assert fit_latency(x, np.ones(x.size)).reason == "few_points"
    rng = np.random.default_rng(1)
    x = np.arange(40)
    noise = fit_latency(x, 5 + rng.normal(0, 1.0, x.size))  # no trend at all
    assert noise.reason == "noise" and not noise.meaningful
    assert abs(noise.slope) <= 2 * noise.slope_se
    assert fit_latency(np.full(12, 7), np.arange(12.0)).reason == "few_points"  # one position: no slope
