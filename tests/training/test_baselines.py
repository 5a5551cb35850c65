"""The character baselines on a case computed by hand."""

import math

import pytest

from llmviz.training.baselines import CharModels


def test_unigram_and_bigram_by_hand():
    m = CharModels(["abab", "aab"])  # a 4, b 3: 7 characters, 2 seen kinds
    assert m.p1("a") == pytest.approx(5 / 10) and m.p1("z") == pytest.approx(1 / 10)
    # pairs: ab ba ab, aa ab -> n(a) = 4 (ab x3, aa), t(a) = 2; n(b) = 1 (ba), t(b) = 1
    assert m.p2("a", "b") == pytest.approx((3 + 2 * 4 / 10) / (4 + 2))
    assert m.p2("b", "a") == pytest.approx((1 + 1 * 5 / 10) / (1 + 1))
    assert m.p2("z", "a") == m.p1("a")  # nothing seen after z: the unigram
    held = ["ba"]
    assert m.bits_per_char(held, 1) == pytest.approx(-(math.log2(4 / 10) + math.log2(5 / 10)) / 2)
    assert m.bits_per_char(held, 2) == pytest.approx(-(math.log2(4 / 10) + math.log2(0.75)) / 2)
    # each conditional sums to one: the seen characters, and the unseen slot's share of the unigram's weight
    assert m.p2("a", "a") + m.p2("a", "b") + 2 / 6 * m.p1("z") == pytest.approx(1)
    assert m.p2("b", "a") + m.p2("b", "b") + 1 / 2 * m.p1("z") == pytest.approx(1)
