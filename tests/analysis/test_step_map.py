"""The lesson's map of one step (C4-C7): its shapes and bytes against the article's own figures, worked by
hand from the article's GPT-2 shape (4 tokens, 12 heads of 64, 12 layers, fp32), and against a small config's
arithmetic written out here. The page's map against the engine's recorded tensors is tests/ui/test_lesson_side.py."""

import re

import pytest

from llmviz.analysis.claim_spec import declared
from llmviz.analysis.lesson_plan import STEPS, Step, check_built
from llmviz.analysis.step_map import Block, step_map
from llmviz.errors import ConfigError

GPT2 = {"hidden_size": 768, "num_heads": 12, "num_kv_heads": 12, "head_dim": 64, "num_layers": 12,
        "intermediate_size": 3072, "vocab_size": 50257, "max_position_embeddings": 1024, "mlp": "plain",
        "norm": "layer", "position": "learned", "qkv_bias": True, "out_bias": True, "mlp_bias": True,
        "tie_embeddings": True}


def recipe(panel: str) -> dict:
    """The map of the lesson's first step drawn by `panel` (its declaration's)."""
    return next(s.recipe for s in STEPS if s.panel == panel)


def blocks(m, side=None):
    return [(b.name, b.shape) for b in m.blocks if side is None or b.side == side]


def test_the_articles_24_kb_and_6_mb():
    # §1.1: 4 tokens x 12 heads x 64 x (K and V) x 4 bytes = 24,576 B a layer; §1.2: at 1024 tokens 6 MiB a layer
    [cache] = step_map(GPT2, 4, recipe("kv_bytes")).blocks
    assert (cache.shape, cache.nbytes) == ((4, 12, 64), 24_576)
    [long] = step_map(GPT2, 4, recipe("kv_bytes_1024")).blocks
    assert (long.shape, long.nbytes) == ((1024, 12, 64), 6 * 2**20)


def test_prefill_beside_decode_is_4_768_then_1_768():
    m = step_map(GPT2, 4, recipe("decode_input"))
    assert blocks(m) == [("embed", (4, 768)), ("embed", (1, 768))]
    assert [b.side for b in m.blocks] == ["prefill", "decode"]
    m = step_map(GPT2, 4, recipe("decode_qkv"))
    assert blocks(m, "prefill") == [("q", (4, 12, 64)), ("k", (4, 12, 64)), ("v", (4, 12, 64))]
    assert blocks(m, "decode") == [("q", (1, 12, 64)), ("k", (1, 12, 64)), ("v", (1, 12, 64)), ("cache", (5, 12, 64))]


def test_the_cache_grows_4_to_8_as_the_article_says():
    # §1.2: [4, 12, 64] -> [5, 12, 64] -> ... -> [8, 12, 64], 6,144 B more a step (K and V of one token)
    m = step_map(GPT2, 4, recipe("cache_growth"), decoded=4)
    assert blocks(m) == [("cache", (n, 12, 64)) for n in range(4, 9)]
    assert [b.nbytes for b in m.blocks] == [6_144 * n for n in range(4, 9)]
    assert m.read_at == 8


def test_what_a_decode_step_reads_by_hand():
    # a small untied llama-shaped config: block matrices d*(h*hd) + 2*d*(kv*hd) + (h*hd)*d + 3*d*f, two rms norms
    config = {"hidden_size": 64, "num_heads": 4, "num_kv_heads": 2, "head_dim": 16, "num_layers": 3,
              "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 256}
    matrices = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 3 * 64 * 128
    per_layer = (matrices + 2 * 64) * 4
    weights = 3 * per_layer + 64 * 4 + (100 * 64 + 64) * 4  # the final norm, the whole head, one embedding row
    m = step_map(config, 5, recipe("roofline"))
    [w, cache] = m.blocks
    assert (w.name, w.shape, w.nbytes) == ("weights", (3, matrices), weights)
    assert cache.shape == (6, 2, 16) and cache.nbytes == 2 * 6 * 2 * 16 * 4
    assert (m.read_at, m.cache_read_bytes) == (6, 3 * 2 * 6 * 2 * 16 * 4)
    assert m.read_bytes == weights + m.cache_read_bytes


def test_a_half_cache_is_half_the_bytes():
    a, b = step_map(GPT2, 4, recipe("kv_dtype")).blocks
    assert (a.dtype, b.dtype, a.shape) == ("fp32", "fp16", b.shape) and a.nbytes == 2 * b.nbytes


def test_every_step_of_the_lesson_has_a_map():
    for step in STEPS:
        m = step_map(GPT2, 9, step.recipe)
        assert m.blocks, step.id
    assert all(s.recipe is declared()[s.claim].step_map for s in STEPS if s.claim)  # a claim's map: its declaration's


@pytest.mark.parametrize(("fields", "says"), [
    ({"panel": "toy"}, "step 9.9 draws no map"),
    ({"panel": "toy", "map": {"decode": ("cache", "nonsense")}}, "step 9.9: a map cannot draw 'nonsense'"),
    ({"panel": "toy", "map": {"sideways": ("cache",)}}, "step 9.9: a map draws parts on the sides"),
    ({"panel": "toy", "map": {"decode": ("cache/fp64",)}}, "step 9.9: a map cannot draw 'cache/fp64'"),
    ({"panel": "claim"}, "step 9.9: a claim's step has the panel 'claim' and a claim"),
    ({"panel": "claim", "claim": "K99"}, "step 9.9: no claim 'K99'"),
    ({"panel": "toy", "claim": "K1", "map": {"decode": ("cache",)}}, "step 9.9: a claim's step has the panel"),
])
def test_a_step_that_is_not_whole_is_refused_with_its_id(fields, says):
    """A lesson step is one declaration, checked as it is made: a step with no map, a part the map cannot draw, a
    claim's step without its claim fails here, naming the step, never later on the lesson page."""
    with pytest.raises(ValueError, match=re.escape(says)):
        Step("9.9", page="decode", **fields)


def test_the_lesson_as_built_names_each_step_without_its_panel_or_words():
    toy = Step("9.9", "toy_panel", "decode", ("C5",), map={"decode": ("cache+",)})
    panels = {s.panel for s in STEPS} - {"claim"}
    check_built(STEPS, panels, lambda key: True)  # the lesson's own steps are whole
    with pytest.raises(ConfigError, match=re.escape("9.9 (no panel 'toy_panel')")):
        check_built((*STEPS, toy), panels, lambda key: True)
    with pytest.raises(ConfigError, match=re.escape("9.9 (no text lesson.9.9.title); 9.9 (no text lesson.9.9.says)")):
        check_built((*STEPS, toy), panels | {"toy_panel"}, lambda key: not key.startswith("lesson.9.9."))
    check_built((*STEPS, toy), panels | {"toy_panel"}, lambda key: True)  # with its panel and its words: whole
    with pytest.raises(ConfigError, match=re.escape("1.1.1 (twice)")):
        check_built((*STEPS, STEPS[0]), panels, lambda key: True)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError):
        Block("q", (0, 12, 64), "prefill")
    with pytest.raises(ValueError):
        Block("q", (4, 12, 64), "sideways")
    with pytest.raises(ValueError):
        step_map(GPT2, 0, recipe("qkv"))


def test_the_weights_are_read_in_the_runs_format_and_a_byte_cache_carries_its_scales():
    """Review finding: the map counted fp32 weights on a bf16 run; every number at 2 bytes halves them exactly. An
    int8 cache holds one byte a number plus a 4-byte scale per token and head, for K and for V."""
    m32, m16 = step_map(GPT2, 4, recipe("roofline")), step_map(GPT2, 4, recipe("roofline"), dtype="bf16")
    assert m16.blocks[0].nbytes * 2 == m32.blocks[0].nbytes and m16.blocks[0].dtype == "bf16"
    assert m16.read_bytes - m16.cache_read_bytes == (m32.read_bytes - m32.cache_read_bytes) // 2
    [cache] = step_map(GPT2, 4, recipe("kv_bytes"), kv_element_bytes=1).blocks
    assert cache.nbytes == 4 * 12 * 2 * (64 * 1 + 4)
