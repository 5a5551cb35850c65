"""The bilingual stream's English copies, on numbers worked by hand."""

import pytest

from llmviz.errors import ConfigError
from llmviz.training.mix import english_copies, english_share, mixed_stream


def test_english_keeps_its_exposure():
    # the English-only model saw 2.8M English tokens (7 epochs of 0.4M); a bilingual run of 14M tokens beside 2M
    # Chinese tokens: k >= 2.8 * 2 / (0.4 * (14 - 2.8)) = 1.25, so 2 copies (1 would give 14 * 0.4 / 2.4 = 2.33M)
    k = english_copies(2_800_000, 14_000_000, 400_000, 2_000_000)
    assert k == 2
    assert 14_000_000 * english_share(2, 400_000, 2_000_000) >= 2_800_000 > 14_000_000 * english_share(1, 400_000,
                                                                                                       2_000_000)
    assert english_share(2, 400_000, 2_000_000) == pytest.approx(0.8 / 2.8)
    assert english_copies(100, 10_000, 1_000, 1) == 1  # plenty of room: English as it is


def test_a_run_too_short_for_the_english_it_must_see_is_refused():
    with pytest.raises(ConfigError, match="cannot see"):
        english_copies(2_800_000, 2_000_000, 400_000, 2_000_000)


def test_the_stream_is_the_copies_then_the_chinese():
    assert mixed_stream([1, 0], [7, 8, 0], 3) == [1, 0, 1, 0, 1, 0, 7, 8, 0]
