"""The three KV layouts side by side (C6, C8, C9; claim K3): the bytes torch.cat copies per step, the
lockstep sessions of the KV layouts page, and the length sweep's fill, bytes and validation, all against
numbers computed by hand from the model's shape."""

import math

import pytest
import torch

from llmviz import service
from llmviz.engine.capture import RunContext
from llmviz.engine.kv import make_kv_cache
from llmviz.engine.loading.model import load_model
from llmviz.engine.phases import decode, plan_step
from llmviz.engine.random_fill import fill_random
from llmviz.engine.session import Session
from llmviz.engine.step_batch import layer_windows
from llmviz.errors import ConfigError
from llmviz.labs.layout_sweep import check_lengths, default_lengths, layout_sweep
from llmviz.trace.config import KV_LAYOUTS, EngineConfig, SamplingConfig

GREEDY = SamplingConfig(temperature=0)
PROMPTS = ["The quick brown fox jumps", "Return the"]


@pytest.fixture(scope="module")
def gqa(model_dirs):
    """2 layers, 2 KV heads of head_dim 16 (GQA), a 1,024-token context."""
    return load_model(str(model_dirs["llama_gqa_rope3"]))


def hand_bytes_per_token(layers: int, kv_heads: int, head_dim: int, element: int = 4) -> int:
    return layers * 2 * kv_heads * head_dim * element  # layers x (K, V) x heads x head_dim x bytes


def test_the_test_model_is_what_the_numbers_assume(gqa):
    c = gqa.cfg
    assert (c.num_layers, c.num_kv_heads, c.head_dim, c.max_position_embeddings) == (2, 2, 16, 1024)
    assert hand_bytes_per_token(2, 2, 16) == 512


def test_dynamic_copies_the_previous_cache_every_step(gqa):
    """torch.cat copies the old tensor whole: step k copies the bytes the cache held after step k - 1."""
    session = Session(gqa, PROMPTS, EngineConfig(kv_layout="dynamic", sampling=GREEDY, stop_at_eos=False,
                                                         max_seq_len=64))
    trace = session.generate(6)
    prompt_lens = [len(trace.row_prompt_ids(i)) for i in range(2)]
    one = hand_bytes_per_token(2, 2, 16)
    total = 0
    for k, step in enumerate(trace.steps):
        kv = step.kv
        held_before = sum(prompt_lens) + 2 * (k - 1) if k else 0  # tokens cached before step k
        assert kv["bytes_copied_step"] == held_before * one, k
        total += held_before * one
        assert kv["bytes_copied_total"] == total
        if k:
            assert kv["bytes_copied_step"] == trace.steps[k - 1].kv["bytes_used"]
    assert trace.steps[3].kv["bytes_copied_step"] == (sum(prompt_lens) + 4) * 512


def test_lockstep_sessions_draw_the_same_tokens_and_hold_what_their_layout_holds(gqa):
    config = EngineConfig(sampling=GREEDY, stop_at_eos=False, max_seq_len=40, kv_block_size=4)
    sessions = service.runs.start_layouts(gqa, PROMPTS, config)
    assert [s.trace.engine_config["kv_layout"] for s in sessions.values()] == list(KV_LAYOUTS)
    for _ in range(5):
        steps = service.runs.step_layouts(sessions)
    ids = {layout: s.trace.row_output_ids(0) + s.trace.row_output_ids(1) for layout, s in sessions.items()}
    assert ids["contiguous"] == ids["dynamic"] == ids["paged"]
    lens = [len(sessions["paged"].trace.row_prompt_ids(i)) + 4 for i in range(2)]  # prefill + 4 decode steps
    one = 512
    c, d, p = steps["contiguous"].kv, steps["dynamic"].kv, steps["paged"].kv
    assert c["seq_lens"] == d["seq_lens"] == p["seq_lens"] == lens
    assert c["bytes_allocated"] == 2 * 40 * one and c["wasted_slots"] == 2 * 40 - sum(lens)
    assert d["bytes_allocated"] == d["bytes_used"] == sum(lens) * one and d["wasted_slots"] == 0
    blocks = [math.ceil(n / 4) for n in lens]
    assert [len(t) for t in p["block_tables"]] == blocks
    assert p["blocks_free"] == p["num_blocks"] - sum(blocks) and p["num_blocks"] == 2 * 10
    assert p["wasted_slots"] == sum(b * 4 - n for b, n in zip(blocks, lens, strict=True))
    assert p["bytes_held"] == sum(blocks) * 4 * one
    assert sorted(b for t in p["block_tables"] for b in t) == list(range(sum(blocks)))  # taken in order, shared pool


def test_a_filled_cache_reads_the_same_in_every_layout(gqa):
    """The sweep's fill writes through each layout's own path: the same random K/V give the same logits."""
    c = gqa.cfg
    logits = {}
    for layout in KV_LAYOUTS:
        cache = make_kv_cache(layout, c, 64, block_size=4)
        cache.add(0)
        with torch.inference_mode():
            fill_random(cache, c, 0, list(range(1, 22)), torch.Generator().manual_seed(3), gqa.dtype, gqa.device)
            assert cache.length(0) == 21 and cache.snapshot()["bytes_used"] == 21 * 512
            step = plan_step(cache, [[5]], [0], backend="sdpa", windows=layer_windows(c), device=gqa.device)
            logits[layout] = decode(gqa.model, cache, step, RunContext())
    torch.testing.assert_close(logits["paged"], logits["contiguous"], rtol=0, atol=1e-5)
    torch.testing.assert_close(logits["dynamic"], logits["contiguous"], rtol=0, atol=1e-5)


def test_a_small_sweep(gqa):
    seen = []
    r = layout_sweep(gqa, [5, 40], steps=2, repeats=2, warmup_steps=1,
                     progress=lambda f, stage, values: seen.append((f, stage, values)))
    assert r["lengths"] == [5, 40] and r["layouts"] == list(KV_LAYOUTS)
    assert r["max_seq"] == 1024 and r["context"] == 1024 and r["steps"] == 2 and r["repeats"] == 2
    fractions = [f for f, _, _ in seen]  # the one report shape (trace/progress.py): fraction, stage, values
    assert fractions[-1] == 1.0 and fractions == sorted(fractions) and seen[-1][1] == "done"
    rounds = [(v["tokens"], v["layout"]) for _, stage, v in seen if stage == "round"]
    # 2 lengths x 2 rounds x (3 layouts and the control: contiguous once more)
    assert len(rounds) == 2 * 2 * 4 and set(rounds) == {(n, x) for n in (5, 40) for x in r["layouts"]}
    assert rounds.count((5, "contiguous")) == 2 * 2 and r["control"]["layout"] == "contiguous"
    assert [len(a) for a in r["control"]["ms_per_token"]["all"]] == [2, 2]
    for layout in r["layouts"]:
        v = r["ms_per_token"][layout]
        assert all(len(a) == 2 for a in v["all"])
        assert all(lo <= m <= hi and lo > 0 for lo, m, hi in zip(v["min"], v["median"], v["max"], strict=True))
    one = 512
    for layout in r["layouts"]:
        assert [k["bytes_used"] for k in r["kv"][layout]] == [5 * one, 40 * one]  # what each fill stored
    assert [k["bytes_allocated"] for k in r["kv"]["contiguous"]] == [1024 * one] * 2  # one row of max_seq
    assert [k["bytes_allocated"] for k in r["kv"]["dynamic"]] == [5 * one, 40 * one]
    assert [k["bytes_allocated"] for k in r["kv"]["paged"]] == [64 * 16 * one] * 2  # ceil(1024 / 16) blocks
    assert [k["slots_allocated"] for k in r["kv"]["paged"]] == [16, 48]  # ceil(n / 16) blocks held
    short = r["k3"]["short"]
    assert short["lengths"] == [5, 40] and r["k3"]["long"] is None  # no length past 1024 fits this model
    ratio = math.sqrt(math.prod(p / c for p, c in zip(r["ms_per_token"]["paged"]["median"],
                                                     r["ms_per_token"]["contiguous"]["median"], strict=True)))
    assert short["paged_over_contiguous"] == pytest.approx(ratio)
    assert "no prefill" in r["what_was_timed"] and r["threads"] == torch.get_num_threads()


def test_default_lengths_stay_below_the_context():
    assert default_lengths(2048, 8) == [64, 256, 512, 1024, 1536, 2040]
    assert default_lengths(512, 8) == [64, 256, 504]
    assert default_lengths(256, 8) == [64, 248]


@pytest.mark.parametrize("lengths", [[], [0], [1017], [4, 2000], ["x"], [1.5], list(range(1, 40))])
def test_a_bad_length_list_is_a_config_error(gqa, lengths):
    with pytest.raises(ConfigError):
        layout_sweep(gqa, lengths, steps=8, repeats=1)


def test_the_longest_length_that_fits():
    assert check_lengths([1016, "8", 8], 1024, 8) == [8, 1016]
    with pytest.raises(ConfigError, match=r"1\.\.1016 tokens"):
        check_lengths([1017], 1024, 8)
