"""A KV budget (EngineConfig.kv_budget_bytes, C17) and step 4.1.4's three runs under one (labs/kv_budget.py): the
refusals are the engine's typed errors at the places counted by hand (a row of the whole context is 512 x 8,192 B
= 4 MiB; a pool of 1 MiB is 8 blocks of 16 tokens, so the 129th token is the one refused); what fits holds the
blocks its tokens need."""

import math

import pytest

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import ConfigError, KVCacheFullError, KVCacheTooLargeError
from llmviz.labs.kv_budget import budget_runs
from llmviz.trace.config import EngineConfig, SamplingConfig

PER_TOKEN = 4 * 2 * 8 * 32 * 4  # the embedded model: 4 layers x K,V x 8 KV heads x 32 x fp32 = 8,192 B
MIB = 2**20


@pytest.fixture(scope="module")
def tiny():
    lm = load_model(None, "cpu")
    assert (lm.cfg.num_layers, lm.cfg.num_kv_heads, lm.cfg.head_dim, lm.cfg.max_position_embeddings) == (4, 8, 32, 512)
    return lm


@pytest.fixture(scope="module")
def prompt(tiny) -> list[int]:
    return tiny.tokenizer.encode("济南的冬天")


def test_a_request_longer_than_the_budget(tiny, prompt):
    got = budget_runs(tiny, prompt, MIB, 300, PER_TOKEN)["runs"]
    reserved, shorter, paged = got["reserved"], got["shorter"], got["paged"]
    assert reserved["outcome"] == "refused" and reserved["error"] == "KVCacheTooLargeError"
    assert reserved["held"] == 0 and f"{512 * PER_TOKEN:,} B" in reserved["message"]  # 4,194,304 B: before allocating
    assert shorter["max_seq"] == MIB // PER_TOKEN == 128
    assert (shorter["outcome"], shorter["held"], shorter["bytes"]) == ("ended", 128, 128 * PER_TOKEN)
    assert paged["outcome"] == "refused" and paged["error"] == "KVCacheFullError"
    assert (paged["held"], paged["blocks"], paged["bytes"]) == (128, 8, MIB)  # 8 blocks x 16 tokens, all taken
    assert "kv_budget_bytes" in paged["message"]  # the fix it names: the budget sized the pool


def test_a_request_within_the_budget(tiny, prompt):
    got = budget_runs(tiny, prompt, MIB, 100, PER_TOKEN)["runs"]
    assert got["reserved"]["outcome"] == "refused"  # the whole context is reserved, however short the request
    assert (got["shorter"]["outcome"], got["shorter"]["held"]) == ("done", 100)
    assert (got["paged"]["outcome"], got["paged"]["held"], got["paged"]["blocks"]) == ("done", 100, math.ceil(100 / 16))


def test_a_budget_holds_every_layout(tiny, prompt):
    """The dynamic layout reserves nothing: it is stopped at the step that grows it past the budget."""
    config = EngineConfig(device="cpu", kv_layout="dynamic", kv_budget_bytes=20 * PER_TOKEN, stop_at_eos=False,
                          sampling=SamplingConfig(temperature=0))
    session = Session(tiny, None, config, prompt_ids=[prompt])
    with pytest.raises(KVCacheFullError, match="budget"):
        for _ in range(30):
            session.step()
    assert session.cache.length(0) == 21  # the step that wrote the 21st token was the one past 20 tokens' bytes
    with pytest.raises(KVCacheTooLargeError):  # contiguous: before allocating
        Session(tiny, None, EngineConfig(device="cpu", kv_budget_bytes=PER_TOKEN), prompt_ids=[prompt])


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "1"])
def test_the_budget_is_a_positive_whole_number(bad):
    with pytest.raises(ConfigError, match="kv_budget_bytes"):
        EngineConfig(kv_budget_bytes=bad)
