"""Decode A against B at a long context (K2, K4, K10, K11): the cache filled without a prefill holds the
seeded random values it says, step 0 decodes at the context's position, the pair's rounds, control and bytes
against counts by hand, and its bad settings refused with the context that would fit."""

import pytest
import torch

from llmviz import service
from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.errors import ConfigError
from llmviz.labs.decode_pair import DecodePairConfig, decode_pair
from llmviz.trace.config import EngineConfig, SamplingConfig

GREEDY = EngineConfig(device="cpu", sampling=SamplingConfig(temperature=0), capture="off", stop_at_eos=False)


@pytest.fixture(scope="module")
def gqa(model_dirs):
    """2 layers, 2 KV heads of head_dim 16 (GQA), a 1,024-token context."""
    return load_model(str(model_dirs["llama_gqa_rope3"]), device="cpu")


def test_fill_random_writes_the_seeded_values_and_step_0_decodes_after_them(gqa):
    c = gqa.cfg
    ids = list(range(1, 42))  # 40 cached, the 41st decoded
    session = Session(gqa, prompt_ids=[ids], config=GREEDY)
    session.fill_random(seed=7)
    assert session.cache.length(0) == 40
    gen = torch.Generator().manual_seed(7)  # what the fill promises: randn K, then randn V, [1, kv, n, hd]
    k, v = (torch.randn((1, c.num_kv_heads, 40, c.head_dim), generator=gen) for _ in range(2))
    plane = session.cache.storage[0]  # [layers, 2, rows, kv, slots, hd]
    for layer in range(c.num_layers):
        torch.testing.assert_close(plane[layer, 0, 0, :, :40], k[0], rtol=0, atol=0)
        torch.testing.assert_close(plane[layer, 1, 0, :, :40], v[0], rtol=0, atol=0)
    step = session.step()
    assert session.cache.length(0) == 41 and step.kv["bytes_used"] == 41 * 2 * 2 * 2 * 16 * 4
    with pytest.raises(ConfigError, match="before the run's first step"):
        session.fill_random()


def test_a_filled_session_decodes_as_a_prefilled_one_whose_cache_holds_the_same_values(gqa):
    """Oracle: a real prefill's K and V copied over by the random ones make the same step 0 as the fill."""
    ids = list(range(3, 30))
    filled = Session(gqa, prompt_ids=[ids], config=GREEDY)
    filled.fill_random(seed=2)
    got = filled.step().logits
    other = Session(gqa, prompt_ids=[ids[:-1]], config=GREEDY)
    other.step()  # a real prefill of the 26 tokens: its cache rows then overwritten with the fill's values
    for a, b in zip(other.cache.storage, filled.cache.storage, strict=True):
        a[:, :, 0, :, :26] = b[:, :, 0, :, :26]
    other.force_last([ids[-1]])  # feed the same last token at position 26
    want = other.step().logits
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_fill_random_refuses_a_one_token_prompt(gqa):
    with pytest.raises(ConfigError, match="at least 2 tokens"):
        Session(gqa, prompt_ids=[[5]], config=GREEDY).fill_random()


def load_cpu(model_dirs):
    return lambda name, engine: service.models.load(str(model_dirs["llama_gqa_rope3"]), engine.with_(device="cpu"))


def test_a_pair_times_a_b_and_the_control_in_every_round_and_counts_the_bytes(model_dirs):
    config = DecodePairConfig(a="kv-dtype=fp32", b="kv-dtype=bf16", context=100, steps=4, repeats=3, warmup=1,
                              device="cpu", bandwidth_bytes=8 * 2**20)
    seen = []
    r = decode_pair(config, load_cpu(model_dirs), lambda f, stage, values: seen.append((f, stage)))
    per_token = 2 * 2 * 2 * 16  # layers x (K, V) x KV heads x head_dim
    for side, element in (("a", 4), ("b", 2)):
        kv = r[side]["kv"]
        assert kv["bytes_used"] == (100 + 1 + 4) * per_token * element  # context, the untimed step, the timed
        assert len(r[side]["decode_ms_per_token"]["all"]) == 3
    assert r["a"]["kv_bytes_allocated"] == 2 * r["b"]["kv_bytes_allocated"]
    assert (r["prompt_tokens"], r["context"], r["steps"]) == (101, 100, 4)
    assert len(r["control"]["decode_ms_per_token"]["all"]) == 3 and len(r["bandwidth"]["rounds_gb_per_s"]) == 3
    floor = r["control"]["noise_floor"]
    assert floor["low"] is None and floor["high"] is None and floor["rounds"] == 3  # three rounds: no interval
    assert len(floor["per_round"]) == 3 and min(floor["per_round"]) <= floor["value"] <= max(floor["per_round"])
    assert r["b"]["lossy"] == ["kv-dtype"] and r["a"]["spec"] == "kv-dtype=fp32"
    assert seen[-1] == (1.0, "done") and all(0 <= f <= 1 for f, _ in seen)


def test_a_context_that_does_not_fit_names_the_longest_that_does(model_dirs):
    config = DecodePairConfig(context=1020, steps=8, repeats=1, device="cpu")
    with pytest.raises(ConfigError, match="a context of at most 1015 tokens") as caught:
        decode_pair(config, load_cpu(model_dirs))
    assert caught.value.params["longest"] == 1015  # a session of the 1,024-token model: 1024 - 1 - 8


@pytest.mark.parametrize("bad", [dict(context=0), dict(steps=0), dict(repeats=31), dict(warmup=-1),
                                 dict(context=True), dict(b="kv-dtype=fp9")])
def test_bad_pair_settings_are_refused(bad):
    with pytest.raises(ConfigError):
        DecodePairConfig(**bad)


def test_the_rounds_rotate_and_the_floor_is_read_from_them_by_hand(model_dirs, monkeypatch):
    """Issue 48 (8): each round runs A, B and A again (the control, A') in an order rotated by one a round (A B A',
    B A' A, A' A B, ...), the warm-up round untimed; each run's ms scripted here (A 10, B 5, A' 11 in every round)
    so the floor by hand is A over A' minus 1 in every round: 10/11 - 1, six rounds, [min, max] at 96.9%."""
    from llmviz.labs import decode_pair as lab
    from llmviz.labs.rounds import CONTROL

    keys, rounds, real_order, real_run = [], [], lab.interleaved, lab._one_run
    scripted = {"a": 10.0, "b": 5.0, CONTROL: 11.0}

    def order(items, r, control=False):
        pairs = real_order(items, r, control)
        rounds.append([key for key, _ in pairs])
        keys.extend(key for key, _ in pairs)
        return pairs

    def run(lm, engine, ids, steps, seed):
        return scripted[keys.pop(0)], real_run(lm, engine, ids, steps, seed)[1]

    monkeypatch.setattr(lab, "interleaved", order)
    monkeypatch.setattr(lab, "_one_run", run)
    config = DecodePairConfig(a="kv-dtype=fp32", b="kv-dtype=bf16", context=20, steps=2, repeats=6, warmup=1,
                              device="cpu", bandwidth_bytes=2**20)
    r = decode_pair(config, load_cpu(model_dirs))
    c = CONTROL
    assert rounds == [["a", "b", c], ["b", c, "a"], [c, "a", "b"], ["a", "b", c], ["b", c, "a"], [c, "a", "b"],
                      ["a", "b", c]]  # the warm-up round, then six timed ones, each rotated by one
    assert r["a"]["decode_ms_per_token"]["all"] == [10.0] * 6 and r["b"]["decode_ms_per_token"]["all"] == [5.0] * 6
    floor = r["control"]["noise_floor"]
    assert floor["per_round"] == pytest.approx([10 / 11 - 1] * 6) and floor["rounds"] == 6
    assert (floor["low"], floor["high"]) == (pytest.approx(10 / 11 - 1), pytest.approx(10 / 11 - 1))
    assert floor["level"] == pytest.approx(1 - 2 / 64)
