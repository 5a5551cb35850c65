"""The lesson's chapter questions, each answer worked by hand from the embedded model's config file
(8 heads of 32, 8 KV heads, 4 layers, d 256, MLP 768, 9,216 tied embeddings, 512 positions) and the student's
draw, and graded: a right answer within rounding, a wrong one, a non-number. Then a GQA model's (Llama 3.2 1B's
shape: 32 heads, 8 KV heads), a config that names no KV heads (the loader's fallback: as many as heads), paged
blocks that the cache fills exactly and ones whose last block is partly empty, each worked by hand
."""

import json
import math

import pytest
from ui_helpers import EMBEDDED_WEIGHTS

from llmviz.analysis.chapter_check import CHAPTERS, RunFacts, draw, question, recap_values
from llmviz.analysis.predict import Setup, Shape, kv_allocated_bytes
from llmviz.engine.models import model_config
from llmviz.i18n.translator import translate


@pytest.fixture(scope="module")
def config() -> dict:
    if not EMBEDDED_WEIGHTS.exists():  # only the tests of the embedded model's own config need it
        pytest.skip("the embedded model is not trained yet")
    hf = json.loads((EMBEDDED_WEIGHTS.parent / "config.json").read_text())
    return {"hidden_size": hf["hidden_size"], "num_heads": hf["num_attention_heads"],
            "num_kv_heads": hf["num_key_value_heads"], "head_dim": hf["head_dim"],
            "num_layers": hf["num_hidden_layers"], "intermediate_size": hf["intermediate_size"],
            "vocab_size": hf["vocab_size"], "max_position_embeddings": hf["max_position_embeddings"],
            "tie_embeddings": hf["tie_word_embeddings"]}


PICKED = {"more": 3, "block": 8, "later": 128, "outputs": (5, 12, 7, 12), "group": 4}
PER_TOKEN_LAYER = 8 * 32 * 2 * 4  # K and V of one token in one layer, fp32: 2,048 B


def test_each_chapters_answer_by_hand(config):
    facts = RunFacts(config, prompt=9, batch=(9, 3, 5))
    answers = {c: question(c, facts, PICKED).answer for c in CHAPTERS}
    weights = 4 * ((256 * 256 + 2 * 256 * 256 + 256 * 256 + 3 * 256 * 768) + 2 * 256) * 4 + 256 * 4 + 9216 * 256 * 4
    assert weights == 23_077_888  # what the map's caption shows as 22.0 MiB
    assert answers == pytest.approx({
        "1.1": 9 * PER_TOKEN_LAYER,  # 18,432 B
        "1.2": 12 * PER_TOKEN_LAYER * 4,  # three more tokens, four layers
        "2.1": math.ceil(12 / 8),  # 12 tokens in blocks of 8
        "2.2": 100 * 12 * PER_TOKEN_LAYER * 4 / (weights + 12 * PER_TOKEN_LAYER * 4),
        "3.1": (9 - 3) + (9 - 5),  # padded to the longest, 9
        "3.2": (12 - 5) + (12 - 7),  # the slots idle until the longest of 12 finishes
        "4.1": 3 * 512 * PER_TOKEN_LAYER * 4 / 2**20,  # 3 sequences of 2 MiB at the longest context
        "4.2": 128 * PER_TOKEN_LAYER * 4,
        "5": 2 * 32 * 2 * 4 * 4,  # 8 heads in groups of 4: 2 KV heads
    })
    # the worked sums written term by term, as arithmetic ("9 minus the sum of the lengths" read as 9 − 17)
    assert question("3.1", facts, PICKED).values["gaps"] == "(9 − 9) + (9 − 3) + (9 − 5)"
    assert question("3.2", facts, PICKED).values["gaps"] == "(12 − 5) + (12 − 12) + (12 − 7) + (12 − 12)"


def test_grading_forgives_rounding_only(config):
    q = question("2.2", RunFacts(config, prompt=9), PICKED)
    assert q.unit == "%" and q.right(round(q.answer, 1)) and not q.right(q.answer + 0.2)
    exact = question("2.1", RunFacts(config, prompt=9), PICKED)
    assert exact.right(2) and not exact.right(2.4) and not exact.right(None) and not exact.right(float("nan"))


def test_two_students_draw_two_questions():
    drawn = {tuple(sorted(draw(seed).items())) for seed in range(20)}
    assert len(drawn) > 10 and draw(7) == draw(7)
    assert all(2 <= d["more"] <= 9 and d["block"] in (8, 16, 32) for d in map(draw, range(50)))


def test_bad_facts_and_chapters_are_refused(config):
    with pytest.raises(ValueError):
        RunFacts(config, prompt=0)
    with pytest.raises(ValueError):
        RunFacts(config, prompt=3, batch=(3, 0))
    with pytest.raises(KeyError):
        question("9.9", RunFacts(config, prompt=3), PICKED)


# Llama 3.2 1B's config.json (the numbers that shape its cache and weights): 32 heads share 8 KV heads (GQA, 4 to
# one), head_dim 64, 16 layers, d 2,048, MLP 8,192, a tied 128,256-token table, 131,072 positions. Run in bf16.
LLAMA_1B = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 64, "num_hidden_layers": 16, "intermediate_size": 8192, "vocab_size": 128256,
            "max_position_embeddings": 131072, "tie_word_embeddings": True}
GQA_LAYER = 8 * 64 * 2 * 2  # one token's K and V in one layer: 8 KV heads x 64 x 2 (K and V) x 2 B = 2,048 B
GQA_TOKEN = GQA_LAYER * 16  # ... in all 16 layers: 32,768 B
SLIP_LAYER = 32 * 64 * 2 * 2  # the article's classic slip, all 32 heads instead of the 8 KV heads: 8,192 B
SLIP_TOKEN = SLIP_LAYER * 16  # 131,072 B


@pytest.fixture(scope="module")
def gqa() -> dict:
    return model_config(LLAMA_1B).to_dict()  # what a run's model card holds


def test_a_gqa_models_questions_count_kv_heads_not_heads(gqa):
    facts = RunFacts(gqa, prompt=10, element_bytes=2, dtype="bf16")
    by_hand = {  # chapter: (right, the slip with all 32 heads)
        "1.1": (10 * GQA_LAYER, 10 * SLIP_LAYER),  # 20,480 B, not 81,920 B
        "1.2": ((10 + 3) * GQA_TOKEN, (10 + 3) * SLIP_TOKEN),  # 425,984 B, not 1,703,936 B
        "4.1": (3 * 131_072 * GQA_TOKEN / 2**20, 3 * 131_072 * SLIP_TOKEN / 2**20),  # 3 x 2^17 x 2^15 / 2^20 MiB
        "4.2": (128 * GQA_TOKEN, 128 * SLIP_TOKEN),  # 4,194,304 B, not 16,777,216 B
    }
    assert by_hand["1.1"][0] == 20_480 and by_hand["1.2"][0] == 425_984 and by_hand["4.1"][0] == 3 * 4096
    assert by_hand["4.2"][0] == 4_194_304
    for chapter, (right, slip) in by_hand.items():
        q = question(chapter, facts, PICKED)
        assert q.answer == pytest.approx(right), chapter
        assert q.values["kv"] == 8, chapter  # what its worked answer multiplies by
        assert q.right(right) and not q.right(slip), chapter
    assert not question("1.1", facts, PICKED).right(10 * 8 * 64 * 2 * 4)  # the cache's bytes in fp32, not the run's 2


def test_gqa_chapter_groups_the_kv_heads_again(gqa):
    """Chapter 5 on a model that is GQA already: the draw's groups of 4 are taken of its 8 KV heads (2 KV heads,
    each shared by 32 / 2 = 16 query heads), not of its 32 heads (8 KV heads: what it has now)."""
    q = question("5", RunFacts(gqa, prompt=10, element_bytes=2, dtype="bf16"), PICKED)
    assert q.values == {"heads": 32, "per": 16, "kv": 2, "hd": 64, "eb": 2, "layers": 16}
    right = 2 * 64 * 2 * 2 * 16  # 2 KV heads x 64 x 2 (K and V) x 2 B x 16 layers = 8,192 B
    assert right == 8192 and q.answer == right and q.unit == "B"
    assert q.right(8192) and q.right(8192.4)  # within the half byte that rounding may leave
    assert not q.right(GQA_TOKEN)  # 32 heads / 4 = 8 KV heads: the cache it has now, 32,768 B
    assert not q.right(SLIP_TOKEN)  # every head its own K and V: 131,072 B
    assert not q.right(8192.6) and not q.right(None)


def test_a_gqa_models_cache_share_of_a_decode_step(gqa):
    """Chapter 2.2 at 4,093 + 3 = 4,096 cached tokens: the cache's share of the step's bytes.

    Weights read per step, by hand: per block q 2,048 x 2,048 = 4,194,304, k and v 2 x 2,048 x 512 = 2,097,152,
    o 4,194,304, gate/up/down 3 x 2,048 x 8,192 = 50,331,648, two RMS norms 4,096: 60,821,504; 16 blocks
    973,144,064, the final norm 2,048, the tied table 128,256 x 2,048 = 262,668,288 (read whole as the output head):
    1,235,814,400 weights (Llama 3.2 1B's 1.24 B) x 2 B = 2,471,628,800 B. The cache: 4,096 x 32,768 =
    134,217,728 B. Share: 134,217,728 / 2,605,846,528 = 5.1506 %; with all 32 heads (536,870,912 B) 17.845 %."""
    weights, cache, slip = 2_471_628_800, 134_217_728, 4096 * SLIP_TOKEN
    assert weights == 2 * (16 * (4_194_304 + 2_097_152 + 4_194_304 + 50_331_648 + 4096) + 2048 + 262_668_288)
    q = question("2.2", RunFacts(gqa, prompt=4093, element_bytes=2, dtype="bf16"), PICKED)
    assert q.values == {"at": 4096, "weights": weights, "cache": cache}
    assert q.answer == pytest.approx(100 * cache / (weights + cache)) == pytest.approx(5.1506, abs=1e-4)
    assert q.right(5.2) and q.right(5.15)  # rounded to one decimal, or two
    assert not q.right(round(100 * slip / (weights + slip), 1))  # 17.8 %
    assert not q.right(round(100 * cache / weights, 1))  # the cache over the weights alone: 5.4 %


@pytest.mark.parametrize(("prompt", "block", "blocks"), [
    (13, 8, 2),  # 13 + 3 = 16 tokens: two full blocks of 8, no slot empty
    (29, 32, 1),  # 32 tokens: one full block of 32
    (14, 8, 3),  # 17 tokens: 2 full blocks and 1 token in a third, 7 of its slots empty; ⌈17 / 8⌉ = 3
    (30, 16, 3),  # 33 tokens: 2 full blocks of 16 and 1 token in a third, 15 empty; ⌈33 / 16⌉ = 3
])
def test_paged_blocks_exact_and_partly_filled(gqa, prompt, block, blocks):
    held = prompt + PICKED["more"]
    q = question("2.1", RunFacts(gqa, prompt=prompt, element_bytes=2, dtype="bf16"), {**PICKED, "block": block})
    assert q.values == {"n": prompt, "more": 3, "block": block, "held": held}
    assert q.answer == blocks and q.unit == "blocks" and q.tolerance == 0
    assert q.right(blocks) and not q.right(blocks - 1) and not q.right(blocks + 1)
    exact = held % block == 0
    assert q.right(held / block) == exact  # 16 / 8 = 2 is the answer; 17 / 8 = 2.125 blocks is no block count
    if not exact:
        assert not q.right(held // block)  # rounding down drops the last, partly filled block
    # The bytes those blocks hold, every layer: whole blocks x their slots x 32,768 B a token. Filled exactly,
    # that is the tokens' own bytes (16 x 32,768 = 524,288 B; 32 x 32,768 = 1,048,576 B); partly, more
    # (17 tokens: 24 slots, 786,432 B for 557,056 B of tokens; 33 tokens: 48 slots, 1,572,864 B for 1,081,344 B).
    allocated = {16: 524_288, 32: 1_048_576, 17: 786_432, 33: 1_572_864}[held]
    assert blocks * block * GQA_TOKEN == allocated
    assert (allocated == held * GQA_TOKEN) == exact
    assert allocated - held * GQA_TOKEN == (blocks * block - held) * 32_768  # the empty slots' bytes
    paged = Setup(Shape.from_config(gqa), dtype="bf16", kv_layout="paged", kv_block_size=block)
    assert kv_allocated_bytes(paged, held) == allocated  # what the predictions say the engine's pool holds


@pytest.mark.parametrize(("prompt", "blocks16"), [(32, 2), (33, 3), (1, 1)])
def test_recap_blocks_of_sixteen_and_a_tokens_bytes(gqa, prompt, blocks16):
    v = recap_values(RunFacts(gqa, prompt=prompt, element_bytes=2, dtype="bf16"))
    assert v["blocks16"] == blocks16  # 32 tokens fill 2 blocks of 16; a 33rd takes a third; 1 token still 1
    assert v["kv"] == 8 and v["heads"] == 32
    assert v["token_bytes"] == 32_768 and v["layer_bytes"] == prompt * 2_048  # the KV heads' bytes, not 131,072
    assert v["longest_bytes"] == 131_072 * 32_768 == 4 * 2**30  # 4 GiB at the longest context


def test_an_exact_fills_worked_answer_has_no_partly_empty_block(gqa):
    """The worked answer said "the last block is partly empty" of 16 tokens in blocks of 8 too (the audit)."""
    q = question("2.1", RunFacts(gqa, prompt=13, element_bytes=2, dtype="bf16"), {**PICKED, "block": 8})
    assert q.values["held"] == 16 and q.answer == 2  # 16 tokens, 2 full blocks of 8
    english = translate("en", q.worked, **q.values, answer="2")
    chinese = translate("zh", q.worked, **q.values, answer="2")
    assert "the last block is partly empty" not in english and "最后一块没装满" not in chinese
    partly = question("2.1", RunFacts(gqa, prompt=14, element_bytes=2, dtype="bf16"), {**PICKED, "block": 8})
    assert partly.answer == 3 and "the last block is partly empty" in translate("en", partly.worked, **partly.values,
                                                                                 answer="3")


# A Llama config that names no KV heads (older Llama checkpoints): the loader gives it as many KV heads as heads
# (plain MHA, llama.config_from_hf), and so does a null or an explicit 32. 32 heads of 64, 16 layers, fp32.
MHA = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "num_hidden_layers": 16,
       "intermediate_size": 5632, "vocab_size": 32000, "max_position_embeddings": 2048}


@pytest.mark.parametrize("kv_heads", [{}, {"num_key_value_heads": None}, {"num_key_value_heads": 32}],
                         ids=["missing", "null", "equal"])
def test_a_config_without_kv_heads_counts_every_head(kv_heads):
    config = model_config({**MHA, **kv_heads}).to_dict()
    facts = RunFacts(config, prompt=10)
    layer = question("1.1", facts, PICKED)
    assert layer.values["kv"] == 32 and layer.values["hd"] == 2048 // 32 == 64
    assert layer.answer == 10 * 32 * 64 * 2 * 4 == 163_840  # 10 tokens x 32 KV heads x 64 x 2 x 4 B
    assert layer.right(163_840) and not layer.right(163_840 // 4)  # not a GQA model's 8 KV heads
    # Chapter 5 groups its 32 heads: in 4s, 8 KV heads each shared by 4; in 2s, 16 KV heads each shared by 2.
    for group, kv, by_hand in ((4, 8, 8 * 64 * 2 * 4 * 16), (2, 16, 16 * 64 * 2 * 4 * 16)):
        q = question("5", facts, {**PICKED, "group": group})
        assert q.values == {"heads": 32, "per": 32 // kv, "kv": kv, "hd": 64, "eb": 4, "layers": 16}
        assert by_hand in (65_536, 131_072) and q.answer == by_hand
        assert q.right(by_hand) and not q.right(32 * 64 * 2 * 4 * 16)  # 262,144 B: the cache it has now


def test_gqa_chapter_falls_back_to_pairs_when_the_draw_does_not_divide():
    """6 KV heads (of 12) in the draw's groups of 4 do not divide: pairs, 3 KV heads each shared by 12 / 3 = 4."""
    config = {"num_heads": 12, "num_kv_heads": 6, "head_dim": 64, "num_layers": 12}
    q = question("5", RunFacts(config, prompt=5), {**PICKED, "group": 4})
    assert q.values == {"heads": 12, "per": 4, "kv": 3, "hd": 64, "eb": 4, "layers": 12}
    assert q.answer == 3 * 64 * 2 * 4 * 12 == 18_432  # 3 KV heads x 64 x 2 x 4 B x 12 layers
    assert q.right(18_432) and not q.right(6 * 64 * 2 * 4 * 12)  # 36,864 B: its 6 KV heads, ungrouped


# SmolLM2-135M, the model the home page suggests: 9 heads share 3 KV heads, head_dim 64, 30 layers.
SMOLLM2 = {"num_heads": 9, "num_kv_heads": 3, "head_dim": 64, "num_layers": 30}


@pytest.mark.parametrize("group", [2, 4])
def test_gqa_chapter_has_fewer_kv_heads_for_an_odd_count(group):
    q = question("5", RunFacts(SMOLLM2, prompt=5), {**PICKED, "group": group})
    assert q.answer == q.values["kv"] * 64 * 2 * 4 * 30  # by hand, whatever it groups into
    assert q.values["kv"] < 3  # fewer than SmolLM2-135M's own 3 (3 x 64 x 2 x 4 x 30 = 46,080 B a token)
    assert q.values["kv"] == 1 and q.answer == 64 * 2 * 4 * 30 == 15_360  # groups of 3: one KV head for all 9
