"""The sliding-window switch (C20): the window mask on any model, and a ring buffer of window + rollback
slots that keeps memory flat, against transformers' Mistral (which keeps only the last W keys)."""

import pytest
import torch
from test_parity import TOL, run_parity

from llmviz.engine.config import KV_LAYOUTS, EngineConfig, SamplingConfig
from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading import load_model
from llmviz.engine.phases import feed
from llmviz.engine.session import Session
from llmviz.errors import ConfigError

GREEDY = SamplingConfig(temperature=0)


@pytest.mark.parametrize("backend", ["eager", "sdpa", "flash"])
def test_ring_buffer_matches_mistrals_own_window(model_dirs, backend):
    """The Mistral checkpoint's window is 8, shorter than the prompt: our ring of 8 slots gives its logits."""
    lm = load_model(str(model_dirs["mistral"]))
    cache = make_kv_cache("contiguous", lm.cfg, 64, window=8)
    assert type(cache).__name__ == "RingKVCache" and cache.slots == 8
    diffs = run_parity(model_dirs["mistral"], backend, lm=lm, window=8)
    assert max(diffs) <= TOL, diffs


@pytest.fixture(scope="module")
def tiny():
    return load_model("llmviz-tiny")


def test_every_layout_applies_the_window_and_only_the_ring_stays_flat(tiny):
    prompts = ["The list of values in the module is", "Return"]
    runs = {}
    for layout in KV_LAYOUTS:
        cfg = EngineConfig(sampling=GREEDY, stop_at_eos=False, sliding_window=4, kv_layout=layout, max_seq_len=64,
                           kv_block_size=4)
        runs[layout] = Session(tiny, prompts, cfg).generate(16)
    alone = [Session(tiny, p, EngineConfig(sampling=GREEDY, stop_at_eos=False, sliding_window=4)).generate(16)
             for p in prompts]
    no_window = Session(tiny, prompts[0], EngineConfig(sampling=GREEDY, stop_at_eos=False)).generate(16)
    assert alone[0].output_ids != no_window.output_ids  # the window changes what the model says
    for trace in runs.values():
        assert [trace.row_output_ids(i) for i in range(2)] == [a.output_ids for a in alone]
    per_token = 8192  # the embedded model, fp32
    ring = [s.kv for s in runs["contiguous"].steps]
    assert {kv["bytes_allocated"] for kv in ring} == {2 * 4 * per_token}  # flat: 2 rows x 4 slots
    assert ring[-1]["bytes_used"] == 2 * 4 * per_token and ring[-1]["seq_lens"][0] > 20
    dynamic = runs["dynamic"].steps[-1].kv
    assert dynamic["bytes_used"] == sum(dynamic["seq_lens"]) * per_token > 4 * ring[-1]["bytes_used"]  # keeps all


def test_ring_rollback_within_its_slots_replays_exactly(tiny):
    ids = tiny.tokenizer.encode("Return the value of the function")
    cache = make_kv_cache("contiguous", tiny.cfg, 64, window=4, rollback=2)
    cache.add(0)
    with torch.inference_mode():
        feed(tiny.model, cache, [ids], [0], window=4)
        first = [feed(tiny.model, cache, [[t]], [0], window=4) for t in (5, 9, 11, 13)]
        cache.truncate(0, cache.length(0) - 3)  # rollback 2, plus the one token a decode step may always take back
        again = [feed(tiny.model, cache, [[t]], [0], window=4) for t in (9, 11, 13)]
        assert all(torch.equal(a, b) for a, b in zip(first[1:], again, strict=True))
        with pytest.raises(ConfigError, match="cannot go back"):
            cache.truncate(0, cache.length(0) - 4)
        cache.truncate(0, 0)  # back to nothing is always possible


@pytest.mark.parametrize("value", [0, -3])
def test_a_window_must_be_positive(value):
    with pytest.raises(ConfigError, match="sliding_window"):
        EngineConfig(sliding_window=value)
