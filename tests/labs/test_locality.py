"""The locality sweep (C12): the same tokens in paged blocks taken in order or scattered through a
larger pool; both runs read the same bytes through the same decode steps, only the block table differs."""

import math

import pytest

from llmviz.engine.kv.block_pool import BlockPool
from llmviz.engine.loading.model import load_model
from llmviz.errors import ConfigError
from llmviz.labs.locality import POOL_FACTOR, locality_sweep


def test_a_scattered_pool_hands_out_every_block_once_in_another_order():
    pool = BlockPool(64)
    pool.scatter(seed=3)
    got = [pool.allocate() for _ in range(64)]
    assert sorted(got) == list(range(64)) and got != list(range(64))
    again = BlockPool(64)
    again.scatter(seed=3)
    assert [again.allocate() for _ in range(64)] == got  # seeded: a run is reproducible


@pytest.fixture(scope="module")
def sweep():
    lm = load_model("llmviz-tiny")
    return locality_sweep(lm, lengths=[40, 200], steps=2, repeats=1, block_size=8)


def test_the_same_number_of_blocks_in_order_and_scattered(sweep):
    for n, in_order, scattered in zip(sweep["lengths"], sweep["tables"]["in_order"], sweep["tables"]["scattered"],
                                      strict=True):
        blocks = math.ceil(n / 8)  # n cached tokens in blocks of 8 (the fed token adds its own later)
        assert in_order["blocks"] == list(range(blocks))
        got = scattered["blocks"]
        assert len(got) == blocks == len(set(got)) and got != sorted(got)
        pool = POOL_FACTOR * math.ceil(sweep["max_seq"] / 8)
        assert all(0 <= b < pool for b in got)


def test_each_length_has_a_timed_spread_and_a_ratio(sweep):
    for order in ("in_order", "scattered"):
        cells = sweep["ms_per_token"][order]
        assert len(cells["median"]) == 2 and all(m > 0 for m in cells["median"])
        assert all(lo <= m <= hi for lo, m, hi in zip(cells["min"], cells["median"], cells["max"], strict=True))
    ratio = sweep["scattered_over_in_order"]
    assert ratio == pytest.approx([s / o for s, o in zip(sweep["ms_per_token"]["scattered"]["median"],
                                                        sweep["ms_per_token"]["in_order"]["median"], strict=True)])
    assert sweep["timed"]["key"] == "timed.locality"


def test_bad_settings_are_typed_errors():
    lm = load_model("llmviz-tiny")
    with pytest.raises(ConfigError):
        locality_sweep(lm, lengths=[600])
    with pytest.raises(ConfigError):
        locality_sweep(lm, steps=0)
