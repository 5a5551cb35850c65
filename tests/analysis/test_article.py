"""The article's numbers redone and its slips' evidence, against hand arithmetic from the configs."""

import pytest

from llmviz import service
from llmviz.analysis import article
from llmviz.analysis.memory_calc import bundled_text
from llmviz.i18n.translator import LANGUAGES, translate

MIB = 2**20


def config(name: str) -> dict:
    return service.models.config_from_text(bundled_text(name))


@pytest.fixture(scope="module")
def values():
    card = {"perplexity_before": 60.0, "perplexity_mean_pooled": 130.0, "heldout_perplexity": 61.0,
            "architecture": {"num_heads": 8, "num_kv_heads": 4}}
    return article.slip_values(config("gpt2"), config("llama-2-7b"), config("llama-3-8b"), card)


def test_the_article_cache_examples_are_per_layer(values):
    v = values["per_layer"]
    assert v["small"] == 4 * 12 * 64 * 2 * 4 == 24_576  # "24 KB": one layer of BERT-base, fp32
    assert v["small_total"] == 12 * 24_576
    assert v["big_mib"] == 1024 * 12 * 64 * 2 * 4 / MIB == 6.0 and v["big_total_mib"] == 72.0


def test_the_oom_budget_and_the_right_formula(values):
    v = values["oom_budget"]
    assert v["article_mib"] == 2048 * 4096 * 2 * 4 / MIB == 64.0
    assert v["llama2_mib"] == 2048 * 32 * 128 * 2 * 4 / MIB == 64.0  # MHA: hidden_size = kv_heads x head_dim
    assert v["llama3_mib"] == 2048 * 8 * 128 * 2 * 4 / MIB == 16.0  # GQA: 8 of 32 heads
    assert v["llama3_total_mib"] == 32 * 16.0
    budgets = [article.Budget.of(n, config(n)) for n in ("llama-2-7b", "llama-3-8b")]
    assert [b.article_right for b in budgets] == [True, False]
    assert budgets[1].total(batch=4) == 4 * 32 * 16 * MIB


def test_bert_reads_seven_positions_for_five_characters():
    view = article.bert_view("济南的冬天")
    assert view["tokens"] == ["[CLS]", "济", "南", "的", "冬", "天", "[SEP]"]
    assert view["positions"] == list(range(7)) and view["segments"] == [0] * 7 and view["vocab"] == 21128


def test_the_quadratic_share_of_a_prefill_by_hand():
    """GPT-2 shapes: per layer and token, 2 x 12·768² FLOPs through the weights; the n² term 2·768·n per
    token and layer (QKᵀ and PV, 4·d per attended pair, half the pairs); the head adds 2·50257·768 once."""
    for n in (256, 1024):
        weights = 12 * (2 * n * 12 * 768**2)
        quad = 12 * 2 * 768 * n * n
        linear_attention = 12 * 2 * 768 * n  # the +1 of each token attending to itself
        head = 2 * 50257 * 768
        expected = quad / (weights + quad + linear_attention + head)
        assert article.quadratic_share(config("gpt2"), n) == pytest.approx(expected, rel=1e-9)
    assert article.quadratic_share(config("gpt2"), 256) < 0.03


def test_half_precision_kv_is_bounded_by_the_caches_share_of_the_bytes(values):
    """Issue 36 (4, §2.2): the bound by hand. GPT-2-124M in fp32 reads 124,439,808 x 4 B of weights less the 1,023
    position rows a step skips (494,616,576 B) and 1,025 cached tokens of 12 layers x K, V x 768 x 4 B; Llama-2-7B in
    fp16 reads its 6,738,415,616 parameters x 2 B less 31,999 embedding rows of 4,096 (untied), and 2,048 tokens of
    32 x 2 x 4,096 x 4 B of fp32 cache."""
    v = values["half_kv_bound"]
    assert v["needed"] == pytest.approx(2 * (1 - 1 / 1.8)) and v["speedup"] == 1.8  # 88.9% of the bytes: cache
    kv, w = 1025 * 12 * 2 * 768 * 4, 124_439_808 * 4 - 1023 * 768 * 4
    assert w == 494_616_576 and v["gpt2_share"] == pytest.approx(kv / (kv + w))
    assert v["gpt2_bound"] == pytest.approx((w + kv) / (w + kv / 2))  # time W + K over W + K/2
    kv, w = 2048 * 32 * 2 * 4096 * 4, 6_738_415_616 * 2 - 31_999 * 4096 * 2
    assert v["llama2_share"] == pytest.approx(kv / (kv + w)) and v["llama2_bound"] == pytest.approx(
        (w + kv) / (w + kv / 2))
    assert v["gpt2_bound"] < 1.08 and v["llama2_bound"] < 1.09  # far from the article's 1.8


@pytest.fixture(scope="module")
def library():
    return service.models.library_facts()


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_slip_and_term_has_its_sentences(values, library, lang):
    for slip in article.SLIPS:
        assert translate(lang, f"slip.{slip.id}.says")
        text = translate(lang, f"slip.{slip.id}.evidence", **values[slip.id], **library)
        assert "{" not in text
    assert "16 MiB" in translate(lang, "slip.oom_budget.evidence", **values["oom_budget"])
    assert "61.00" in translate(lang, "slip.gqa_config.evidence", **values["gqa_config"])
    assert all(translate(lang, f"term.{term}") for term, _, _ in article.TERMS)
    assert {zh for _, zh, _ in article.TERMS} >= {"持续批处理", "推测解码", "算子融合", "稀疏注意力", "局部注意力",
                                                  "内存压缩", "PagedAttention"}


def test_the_slips_stand_in_the_articles_order():
    """The pages list the slips as article.SLIPS holds them: §1.1 … §5, never a later section before an earlier."""
    sections = [tuple(int(p) for p in s.section.split(".")) for s in article.SLIPS]
    assert sections == sorted(sections) and sections[0] == (1, 1) and sections[-1] == (5,)


def test_the_libraries_bear_the_slips_out(library):
    """Issue 38: the evidence a reader can check, read from the installed libraries: BERT is built as an encoder,
    and transformers has no kv_cache_dtype (the article's `model.config.kv_cache_dtype`)."""
    from importlib import metadata

    assert library["transformers"] == metadata.version("transformers") and library["torch"] == metadata.version("torch")
    assert library["is_decoder"] is False and library["mentions"] == 0 and library["files"] > 1000


def test_bert_sees_everything_and_a_decoder_the_past():
    both, causal = article.bert_masks(7)
    assert both.sum() == 49 and causal.sum() == 7 * 8 // 2  # 28: the lower triangle with the diagonal
    assert all(causal[q, k] == (k <= q) for q in range(7) for k in range(7))


def test_25_ms_is_not_memory_time_for_the_articles_model(values):
    """§1.2's 25 ms a token: the article's BERT-base-sized model in fp32 is ~110M numbers (~440 MB) plus 72 MiB of
    cache at 1,024 tokens; read at 1,555-2,039 GB/s that is about a quarter of a millisecond."""
    v = values["decode_25ms"]
    assert 0.40e3 < v["read_mb"] < 0.52e3
    assert v["fast_ms"] == pytest.approx(v["read_mb"] * 1e6 / 2039e9 * 1e3)
    assert 0.2 < v["fast_ms"] < v["slow_ms"] < 0.35
    assert v["moved_gb"] == pytest.approx(0.025 * 0.6 * 1555)  # 23.3 GB
    assert 40 < v["times"] < 60


def test_one_head_and_the_cache_shape(values):
    assert values["one_head"] == {"d": 768, "heads": 12, "hd": 64}
    v = values["cache_shape"]  # GPT-2's bundled config: 12 layers of 12 heads x 64, 1,024 positions
    assert (v["layers"], v["heads"], v["hd"], v["max_seq"]) == (12, 12, 64, 1024)
    assert v["total_mib"] == 12 * 2 * 12 * 1024 * 64 * 4 / MIB == 72.0
