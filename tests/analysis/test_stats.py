"""The one statistics rule (llmviz/analysis/stats.py) against hand-computed cases and enumeration:
the exact interval of a median from the binomial law of order statistics, pairing that cancels a drift both sides
share, the looks' spent error, and the rounds that would decide."""

import itertools
import math

import numpy as np
import pytest

from llmviz.analysis import stats


def test_pairing_cancels_what_both_sides_share():
    """Each round both sides slow down together (another process, the clock): the per-round ratio is 2 every
    round, so the paired interval is that one value; the same samples taken apart (each side's [min, max] at 7
    rounds, the corners) spread from x0.4 to x11."""
    slow, fast = [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0], [5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0]
    p = stats.paired_exact(slow, fast, stats.faster)
    assert (p.value, p.low, p.high, p.rounds, p.paired) == (1.0, 1.0, 1.0, 7, True)
    u = stats.unpaired_exact(slow, fast, stats.faster)
    assert u.value == pytest.approx(1.0) and u.low == pytest.approx(10 / 35 - 1) and u.high == pytest.approx(13.0)


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


# The exact rule: order statistics and the sign law, checked against hand counts and enumeration.


def signs(n: int) -> np.ndarray:
    """Every pattern of n rounds above (0) or below (1) their median: 2^n equally likely rows."""
    return np.array(list(itertools.product((0, 1), repeat=n)), dtype=int).reshape(-1, n)


def enumerated_level(n: int, k: int) -> float:
    """The coverage of [x_(k), x_(n+1-k)] counted over the 2^n sign patterns: it misses when fewer than k rounds
    lie below the median (x_(k) above it) or fewer than k above (x_(n+1-k) below it)."""
    below = signs(n).sum(axis=1)
    return 1 - float(np.mean((below <= k - 1) | (n - below <= k - 1)))


def test_five_rounds_have_no_exact_interval():
    """[min, max] of 5 rounds covers 1 - 2/32 = 93.75% < 95%: nothing decided, never a "95%" that is not."""
    assert stats.rank(5) == 0 and stats.MIN_ROUNDS == 6
    assert stats.median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (-math.inf, math.inf, 1.0)
    assert stats.median_interval([7.0]) == (-math.inf, math.inf, 1.0)


def test_six_rounds_give_their_range_at_its_exact_level():
    """k = 1: 1 - 2 P(Bin(6, 1/2) = 0) = 1 - 2/64 = 0.96875; k = 2 would be 1 - 2 x 7/64 = 78%."""
    assert stats.median_interval([4.0, 6.0, 1.0, 3.0, 5.0, 2.0]) == (1.0, 6.0, 0.96875)


def test_ten_rounds_by_hand():
    """P(Bin(10, 1/2) <= 1) = (1 + 10)/1024: 2 x 11/1024 = 2.1% <= 5%, so k = 2; P(<= 2) = 56/1024 would be 10.9%."""
    values = [10.0, 3.0, 8.0, 1.0, 6.0, 9.0, 2.0, 7.0, 4.0, 5.0]
    assert stats.median_interval(values, 0.05) == (2.0, 9.0, 1 - 2 * 11 / 1024)
    assert 1 - 2 * 11 / 1024 == 0.978515625


def test_twenty_rounds_by_hand():
    """P(Bin(20, 1/2) <= 5) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20 = 21700 / 1048576 = 2.07%, two-sided
    4.14% <= 5%; adding C(20, 6) = 38760 gives 60460 / 2^20 = 5.77%, two-sided 11.5%: k = 6, [x_(6), x_(15)]."""
    low, high, level = stats.median_interval([float(v) for v in range(20, 0, -1)])
    assert (low, high) == (6.0, 15.0)
    assert level == 1 - 2 * 21700 / 2**20


@pytest.mark.parametrize("n", range(1, 13))
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.2])
def test_the_rank_and_level_agree_with_every_sign_pattern(n, alpha):
    """The chosen rank reaches 1 - alpha and the next one does not, both counted over the 2^n patterns; the level
    is that count."""
    k = stats.rank(n, alpha)
    if k == 0:
        assert enumerated_level(n, 1) < 1 - alpha and stats.coverage(n, 0) == 1.0
        return
    assert stats.coverage(n, k) == pytest.approx(enumerated_level(n, k), abs=1e-12)
    assert stats.coverage(n, k) >= 1 - alpha
    assert k + 1 > n // 2 or enumerated_level(n, k + 1) < 1 - alpha


def test_the_exact_interval_draws_nothing(monkeypatch):
    """No resampling: the same rounds in any order give the same interval, with every random source shut."""
    monkeypatch.setattr(np.random, "default_rng", lambda *a, **k: pytest.fail("the exact rule drew a random number"))
    values = [5.2, 1.1, 9.7, 3.3, 4.4, 8.8, 2.2, 7.1, 6.6]
    assert stats.median_interval(values) == stats.median_interval(values[::-1]) == stats.median_interval(values)
    assert stats.paired_exact(values, values[::-1], stats.faster) == stats.paired_exact(values, values[::-1],
                                                                                           stats.faster)


def test_ties_stay_inside_and_nan_is_refused():
    assert stats.median_interval([2.0] * 7) == (2.0, 2.0, 1 - 2 / 2**7)
    with pytest.raises(ValueError, match="no NaN"):
        stats.median_interval([1.0, math.nan, 2.0, 3.0, 4.0, 5.0])


def test_paired_exact_by_hand():
    """Six rounds, each fast side twice as fast but for one drifting pair: the per-round effects, their median,
    and [min, max] at 96.875%; five decide nothing (the old rule called the range of three 95%)."""
    slow, fast = [10.0, 20.0, 30.0, 12.0, 22.0, 40.0], [5.0, 10.0, 15.0, 4.0, 11.0, 25.0]
    e = stats.paired_exact(slow, fast, stats.faster)
    assert e.per_round == pytest.approx((1.0, 1.0, 1.0, 2.0, 1.0, 0.6))
    assert (e.value, e.low, e.high) == (1.0, pytest.approx(0.6), 2.0)
    assert (e.rounds, e.paired, e.level, e.looks) == (6, True, 0.96875, 1)
    few = stats.paired_exact(slow[:5], fast[:5], stats.faster)
    assert (few.low, few.high, few.level, few.value) == (-math.inf, math.inf, 1.0, 1.0)
    with pytest.raises(ValueError, match="as many samples"):
        stats.paired_exact([1.0, 2.0], [1.0], stats.faster)


def test_unpaired_exact_from_the_corners():
    """Seven rounds a side: each side's [min, max] covers 1 - 2/128 >= 97.5%, together >= 96.875%; slow / fast - 1
    rises with slow and falls with fast, so the interval runs from min(slow) / max(fast) to max(slow) / min(fast)."""
    slow, fast = [13.0, 10.0, 16.0, 11.0, 15.0, 12.0, 14.0], [8.0, 5.0, 11.0, 6.0, 10.0, 7.0, 9.0]
    e = stats.unpaired_exact(slow, fast, stats.faster)
    assert e.value == pytest.approx(13 / 8 - 1) and not e.paired and e.rounds == 7
    assert (e.low, e.high) == (pytest.approx(10 / 11 - 1), pytest.approx(16 / 5 - 1))
    assert e.level == pytest.approx(1 - 2 * (2 / 128))
    s = stats.unpaired_exact(slow, fast, stats.saved)  # 1 - after / before: the same corners, the other way round
    assert (s.low, s.high) == (pytest.approx(1 - 11 / 10), pytest.approx(1 - 5 / 16))
    six = stats.unpaired_exact(slow[:6], fast, stats.faster)  # 1 - 2/64 < 97.5% on the slow side: no interval
    assert (six.low, six.high) == (-math.inf, math.inf)


def test_a_slope_by_rounds():
    """Each round its own line, offset by what that round shared (a slow round lifts every length): the offsets
    cancel in each round's slope; six rounds give [min, max] of the six slopes at 96.875%."""
    x = [100, 500, 900, 1300]
    slopes, offsets = [0.004, 0.006, 0.005, 0.0045, 0.0055, 0.0052], [0.0, 3.0, -1.0, 8.0, 0.5, 2.0]
    ys = [[10 + off + s * n for n in x] for s, off in zip(slopes, offsets, strict=True)]
    e = stats.slope_by_rounds(x, ys)
    assert e.per_round == pytest.approx(tuple(slopes))
    assert e.value == pytest.approx(0.0051) and (e.low, e.high) == (pytest.approx(0.004), pytest.approx(0.006))
    assert (e.rounds, e.level) == (6, 0.96875)
    assert stats.slope_by_rounds(x, ys[:5]).low == -math.inf  # five rounds: no interval, however many points
    with pytest.raises(ValueError, match="two different x"):
        stats.slope_by_rounds([3, 3], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="rounds x len"):
        stats.slope_by_rounds(x, [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize("batch, batches", [(2, 6), (3, 4), (4, 3), (6, 2)])
def test_the_looks_spend_their_error_exactly(batch, batches):
    """Twelve rounds, all 4096 sign patterns: the chance that some look's interval lies wholly above the median
    (x_(k) above it: fewer than k rounds below) is the plan's false_holds, within alpha / 2; each look's rank is
    the largest whose error so far stays within (alpha / 2) sqrt(n / 12), and a look left out could not decide."""
    patterns = signs(12)
    below = patterns.cumsum(axis=1)
    looks = stats.Looks(batch, batches)
    plan = dict(looks.plan)

    def spent(ranks: dict) -> float:
        crossed = np.zeros(len(patterns), dtype=bool)
        for n, k in ranks.items():
            crossed |= below[:, n - 1] <= k - 1
        return float(crossed.mean())

    assert spent(plan) == looks.false_holds <= 0.025
    for n in range(batch, 13, batch):
        earlier = {m: k for m, k in plan.items() if m < n}
        allowed = 0.025 * math.sqrt(n / 12)
        assert spent({**earlier, n: plan.get(n, 0)}) <= allowed < spent({**earlier, n: plan.get(n, 0) + 1})


def test_the_looks_for_the_labs_batches():
    """The plans the labs will run (MAX_BATCHES = 8): no decision before 9 rounds of 3 or 10 of 5, each look's
    interval at least 95% alone, and "holds" at the edge at most 2.5% over all the looks."""
    three, five = stats.Looks(3, 8), stats.Looks(5, 8)
    assert three.plan == ((9, 1), (12, 2), (15, 4), (18, 4), (21, 5), (24, 7))
    assert five.plan == ((10, 2), (15, 3), (20, 5), (25, 7), (30, 8), (35, 11), (40, 12))
    for looks in (three, five, stats.Looks(9, 8)):
        assert looks.false_holds <= 0.025 and looks.halved().false_holds <= 0.0125
        assert all(looks.level(n) >= 0.95 for n in looks.rounds)
    assert (three.rank(6), three.level(6), three.next(6), three.next(24), three.count) == (0, 1.0, 9, None, 6)
    rounds = [1.9, 2.1, 1.8, 2.2, 2.0, 1.7, 2.3, 1.95, 2.05]
    nine = stats.paired_exact(rounds, [1.0] * 9, stats.faster, looks=three)
    assert (nine.low, nine.high, nine.level, nine.looks) == (pytest.approx(0.7), pytest.approx(1.3), 1 - 2 / 512, 6)
    six = stats.paired_exact(rounds[:6], [1.0] * 6, stats.faster, looks=three)
    assert (six.low, six.high, six.looks) == (-math.inf, math.inf, 6)  # 6 rounds: a look this plan spends nothing on
    with pytest.raises(ValueError, match="looks need"):
        stats.Looks(0, 8)
