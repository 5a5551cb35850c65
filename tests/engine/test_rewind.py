"""Session.rewind and reseed ("resample from this step"): going back leaves the engine exactly where
it was after the earlier step (the recomputed step's logits are the original's), and a reseeded draw is the
one a run reseeded at that step without going back gets."""

import numpy as np
import pytest

from llmviz import service
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.trace.config import EngineConfig, SamplingConfig

CONFIG = dict(device="cpu", seed=0, sampling=SamplingConfig(temperature=1.0, top_k=0), stop_at_eos=False,
              capture="full")


@pytest.fixture(scope="module")
def lm():
    return service.models.load("llmviz-tiny", EngineConfig(device="cpu"))


@pytest.mark.parametrize("layout", ["contiguous", "paged", "dynamic"])
def test_rewind_then_reseed_equals_a_run_reseeded_there(lm, layout):
    config = EngineConfig(**CONFIG, kv_layout=layout, kv_block_size=4)
    first = Session(lm, "The list of", config)
    for _ in range(7):
        first.step()
    original = [s.logits.copy() for s in first.trace.steps]
    drawn = list(first.sequences[0].ids)
    first.rewind(3)
    assert len(first.trace.steps) == 3 and first.sequences[0].ids == drawn[: first.sequences[0].prompt_len + 3]
    assert first.cache.length(0) == first.sequences[0].prompt_len + 2
    first.reseed(9)
    for _ in range(4):
        first.step()
    # step 3 reads the same tokens as before: the same logits, to the bit
    assert np.array_equal(first.trace.steps[3].logits, original[3])
    assert first.trace.steps[3].sampling["seed"] == 9 and first.trace.steps[2].sampling["seed"] == 0
    other = Session(lm, "The list of", config)  # reseeded at step 3 without going back
    for i in range(7):
        if i == 3:
            other.reseed(9)
        other.step()
    assert other.sequences[0].ids == first.sequences[0].ids
    assert first.sequences[0].ids[:-4] == drawn[:-4] and first.sequences[0].ids != drawn  # another sample
    k = first.trace.steps[-1].hook("layers.0.k").array
    assert np.array_equal(k, other.trace.steps[-1].hook("layers.0.k").array)


def test_rewind_refuses_what_it_cannot_do(lm):
    session = Session(lm, ["The list of", "Return"], EngineConfig(**CONFIG))
    session.step()
    session.step()
    with pytest.raises(ConfigError, match="one-row"):
        session.rewind(1)
    single = Session(lm, "The list of", EngineConfig(**CONFIG))
    single.step()
    for bad in (0, 1, -1, "1"):
        with pytest.raises(ConfigError):
            single.rewind(bad)
    with pytest.raises(ConfigError):
        single.reseed(-1)
