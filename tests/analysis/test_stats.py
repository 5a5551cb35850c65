"""The one statistics rule (issue 36, llmviz/analysis/stats.py) against hand-computed cases: the bootstrap's
interval of a median from the binomial law of order statistics, pairing that cancels a drift both sides share,
and the rounds that would decide."""

import math

import numpy as np
import pytest

from llmviz.analysis import stats


def binomial_median_below(k: int, n: int) -> float:
    """P(the median of n draws with replacement from n distinct values is at most the k-th smallest), n odd: at
    least (n + 1) / 2 of the draws fall among the k smallest, each with probability k / n."""
    p = k / n
    return sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range((n + 1) // 2, n + 1))


def test_the_bootstrap_interval_of_a_median_by_hand():
    """Nine distinct rounds: the median of a resample is at most the 1st smallest with probability 0.0013 and at
    most the 2nd with 0.030, so the 2.5% quantile is the 2nd smallest; by symmetry the 97.5% one the 8th."""
    assert binomial_median_below(1, 9) < 0.025 < binomial_median_below(2, 9)
    values = [50, 10, 90, 30, 70, 20, 80, 40, 60]
    assert stats.bootstrap_median(values) == (20.0, 80.0)
    assert stats.bootstrap_median(values) == stats.bootstrap_median(values[::-1])  # seeded, order-blind


def test_three_rounds_give_their_whole_range():
    """n = 3: P(median = the smallest) = 7/27 > 2.5%: the interval is [min, max]; one round has none."""
    assert binomial_median_below(1, 3) == pytest.approx(7 / 27)
    assert stats.bootstrap_median([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert stats.bootstrap_median([5.0]) == (-math.inf, math.inf)


def test_pairing_cancels_what_both_sides_share():
    """Each round both sides slow down together (another process, the clock): the per-round ratio is 2 every
    round, so the paired interval is exact; the same samples taken apart spread from x1 to x6."""
    slow, fast = [10.0, 20.0, 30.0], [5.0, 10.0, 15.0]
    p = stats.paired(slow, fast, stats.faster)
    assert (p.value, p.low, p.high, p.rounds, p.paired) == (1.0, 1.0, 1.0, 3, True)
    u = stats.unpaired(slow, fast, stats.faster)
    assert u.value == pytest.approx(1.0) and u.low == pytest.approx(10 / 15 - 1) and u.high == pytest.approx(5.0)


def test_paired_rounds_need_as_many_samples_each_side():
    with pytest.raises(ValueError, match="as many samples"):
        stats.paired([1.0, 2.0], [1.0], stats.faster)


def test_the_effects_by_hand():
    assert stats.faster(np.array([18.0]), np.array([10.0]))[0] == pytest.approx(0.8)  # x1.8
    assert stats.saved(100.0, 60.0) == pytest.approx(0.4)


def test_an_estimate_lies_in_its_interval():
    with pytest.raises(ValueError, match="within its interval"):
        stats.Estimate(2.0, 0.0, 1.0, 3)
    assert stats.Estimate.exact(0.5).is_exact and stats.Estimate.exact(0.5).half_width == 0


@pytest.mark.parametrize("value, low, high, line, more", [
    (0.5, 0.3, 0.9, 0.4, 15),  # reaches 0.2 below toward a line 0.1 away: 5 x 2^2 = 20 rounds, 15 more
    (0.5, 0.45, 0.9, 0.4, 0),  # already clear of the line on its side
    (0.5, 0.2, 0.6, 0.6, 1),  # the line above, touched: 5 x 1^2 = 5 rounds would just reach it; one more at least
    (0.5, 0.2, 0.8, 0.6, 40),  # reaches 0.3 toward a line 0.1 above: 5 x 3^2 = 45 rounds, 40 more
])
def test_more_rounds_by_hand(value, low, high, line, more):
    assert stats.more_rounds(stats.Estimate(value, low, high, 5), line) == more


def test_a_slope_and_its_interval():
    """An exact line has its slope and no spread; a flat cloud's interval includes zero; a rising one's does not."""
    exact = stats.slope([1, 2, 3, 4], [2.0, 4.0, 6.0, 8.0])
    assert (exact.value, exact.low, exact.high, exact.rounds) == (pytest.approx(2.0), pytest.approx(2.0),
                                                                  pytest.approx(2.0), 4)
    x = [100, 100, 500, 500, 900, 900, 1300, 1300]
    flat = stats.slope(x, [10.0, 10.4, 10.3, 9.9, 10.1, 10.5, 10.2, 9.8])
    assert flat.low < 0 < flat.high
    rising = stats.slope(x, [10 + 0.005 * n + e for n, e in zip(x, [0.1, -0.1] * 4, strict=True)])
    assert rising.value == pytest.approx(0.005) and 0 < rising.low < 0.005 < rising.high
    with pytest.raises(ValueError, match="two different x"):
        stats.slope([3, 3, 3], [1.0, 2.0, 3.0])
