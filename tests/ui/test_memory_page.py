"""The memory calculator page (C17): the bytes it shows for published configs are the ones worked out
by hand in tests/analysis/test_memory_calc.py (Llama-3-8B: 1 GiB of KV for 8192 tokens in fp16; Mistral-7B:
512 MiB at 32768 tokens because of its 4096-token window), what fits where, and a clear message for a pasted
config that is not one, in both languages."""

import pytest
from ui_helpers import open_app, page_file

from llmviz.i18n.translator import translate


def pick(at, source: str, **widgets):
    at.selectbox(key="mem_source").set_value(source).run()
    for key, value in widgets.items():
        at.number_input(key=key).set_value(value).run()
    assert not at.exception, [e.value for e in at.exception]
    return {m.label: m.value for m in at.metric}


def table(at, first_column: str):
    return next(d.value for d in at.dataframe if d.value.columns[0] == first_column).set_index(first_column)


def test_llama3_8b_one_long_sequence_and_what_fits():
    at = open_app(page_file("memory"))
    shown = pick(at, "llama-3-8b", mem_max_seq=8192, mem_tokens=8192)
    assert shown["KV per token"] == "128.0 KiB" and shown["KV per sequence"] == "1.0 GiB"
    assert shown["Weights"] == "15.0 GiB"  # 16,060,522,496 B = 2 x 8,030,261,248 parameters
    assert shown["Total for batch 1"] == "16.0 GiB"  # 17,134,264,320 B
    gpus = table(at, "GPU")
    column = "Sequences of 8,192 tokens that fit"
    assert gpus.loc["Tesla T4", "Fits"] == "✓" and gpus.loc["Tesla T4", column] == "1"
    assert gpus.loc["GeForce RTX 3060", "Fits"] == "✗" and gpus.loc["GeForce RTX 3060", column] == "0"
    assert gpus.loc["A100 80GB", column] == "65"
    moves = table(at, "Change")
    assert moves.loc["int8 KV cache, with its scales", "Change of the total"] == "-3.0%"  # 2**30 x 124/256 of 17.13e9 B
    assert any("Without GQA" in m for m in moves.index)  # Llama-3-8B has GQA already: what it saves


def test_mistral_window_caps_the_cache():
    at = open_app(page_file("memory"))
    shown = pick(at, "mistral-7b-v0.1", mem_max_seq=32768)  # tokens left empty: each sequence fills max_seq
    assert shown["KV per sequence"] == "512.0 MiB"  # 4096 positions, not 32768
    assert any("32 layers attend only to the last 4,096 tokens" in i.value for i in at.info)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_pasted_config_that_is_not_one_gets_a_message(lang):
    at = open_app(page_file("memory"), lang=lang)
    at.selectbox(key="mem_source").set_value("paste").run()
    assert any(translate(lang, "memory.paste_empty") in i.value for i in at.info)
    for text in ("{not json", '{"model_type": "llama", "hidden_size": 4096}', '{"model_type": "bert"}',
                 '{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1000000000,'
                 ' "intermediate_size": 10, "vocab_size": 10}'):
        at.text_area(key="mem_paste").set_value(text).run()
        assert not at.exception, [e.value for e in at.exception]
        assert len(at.error) == 1 and "Traceback" not in at.error[0].value, text
        assert not at.metric, text
    at.text_area(key="mem_paste").set_value('{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,'
                                            ' "num_key_value_heads": 2, "num_hidden_layers": 2,'
                                            ' "intermediate_size": 128, "vocab_size": 100}').run()
    assert not at.error and len(at.metric) == 4
    kv_token = translate(lang, "memory.kv_token")
    per_token = next(m.value for m in at.metric if m.label == kv_token)
    assert per_token == "256 B"  # 2 layers x 2 (K, V) x 2 KV heads x head_dim 16 x 2 B (fp16)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_articles_numbers_redone_for_llama3_8b(lang):
    """Issue 22, by hand: Llama-3-8B keeps 8 KV heads x 128 in 32 layers; in fp32 4 tokens are
    4 x 8 x 128 x 2 x 4 = 32,768 B per layer, 1,024 tokens 8 MiB per layer and 256 MiB in all; §4.1's budget
    at 2048 tokens: the article's formula gives 2048 x 4096 x 2 x 4 = 64 MiB, the right one 16 MiB per layer."""
    at = open_app(page_file("memory"), lang=lang)
    pick(at, "llama-3-8b")
    here = translate(lang, "memory.redo_col_here", name="llama-3-8b")
    redo = next(d.value for d in at.dataframe if translate(lang, "memory.redo_col_article") in d.value.columns)
    rows = dict(zip(redo[""], redo[here], strict=True))
    assert rows[translate(lang, "article.redo.t4_layer")] == "32,768 B (32.0 KiB)"
    assert rows[translate(lang, "article.redo.t1024_layer")] == f"{8 * 2**20:,} B (8.0 MiB)"
    assert rows[translate(lang, "article.redo.t1024_model")] == f"{256 * 2**20:,} B (256.0 MiB)"
    article = dict(zip(redo[""], redo[translate(lang, "memory.redo_col_article")], strict=True))
    assert article[translate(lang, "article.redo.t4_layer")] == "24,576 B (24.0 KiB)"  # the article's 24 KB
    weights = [float(rows[translate(lang, f"article.redo.weights_{n}")].rstrip("%")) for n in (16, 512, 2048)]
    assert weights == sorted(weights, reverse=True) and weights[0] > 99  # weights dominate a short context
    oom = next(d.value for d in at.dataframe if translate(lang, "memory.oom_col_article") in d.value.columns)
    rows = dict(zip(oom[""], oom[here], strict=True))
    assert oom[translate(lang, "memory.oom_col_article")][0] == f"{64 * 2**20:,} B (64.0 MiB)"
    assert rows[translate(lang, "article.redo.oom_right_layer")] == f"{16 * 2**20:,} B (16.0 MiB)"
    assert rows[translate(lang, "article.redo.oom_right_model")] == f"{512 * 2**20:,} B (512.0 MiB)"


def test_a_link_reopens_the_same_answer():
    """The page's inputs travel in the link (ui/memory_url.py): Llama-3-8B, 4 sequences of 2,000 tokens in an 8,192
    window, paged in blocks of 32, int8 KV: the figures the page shows, then the same figures from the link alone."""
    at = open_app(page_file("memory"))
    pick(at, "llama-3-8b", mem_batch=4, mem_max_seq=8192, mem_tokens=2000)
    at.selectbox(key="mem_layout").set_value("paged").run()
    at.number_input(key="mem_block").set_value(32).run()  # the block box opens once the layout reads it
    at.selectbox(key="mem_kv_dtype").set_value("int8").run()
    shown = {m.label: m.value for m in at.metric}
    link = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert {k: v for k, v in link.items() if k.startswith("mem_")} == {
        "mem_source": "llama-3-8b", "mem_batch": "4", "mem_max_seq": "8192", "mem_tokens": "2000",
        "mem_layout": "paged", "mem_block": "32", "mem_kv_dtype": "int8"}
    # the weights' dtype and the KV heads were left at their defaults: not written
    again = open_app(page_file("memory"), **{k: v for k, v in link.items() if k.startswith("mem_")})
    assert not again.exception
    assert again.number_input(key="mem_batch").value == 4 and again.number_input(key="mem_tokens").value == 2000
    assert again.selectbox(key="mem_layout").value == "paged" and again.selectbox(key="mem_kv_dtype").value == "int8"
    assert {m.label: m.value for m in again.metric} == shown
    assert shown["KV per sequence"] != pick(open_app(page_file("memory")), "llama-3-8b")["KV per sequence"]


def test_the_tokens_box_empties_back_to_full_sequences():
    at = open_app(page_file("memory"))
    at.selectbox(key="mem_layout").set_value("dynamic").run()  # holds what is written (contiguous reserves max_seq)
    full = pick(at, "llama-3-8b", mem_max_seq=8192)["KV per sequence"]
    assert pick(at, "llama-3-8b", mem_tokens=100)["KV per sequence"] != full
    assert at.query_params["mem_tokens"] in ("100", ["100"])
    at.number_input(key="mem_tokens").set_value(None).run()
    assert {m.label: m.value for m in at.metric}["KV per sequence"] == full and "mem_tokens" not in at.query_params


def test_a_hostile_memory_link_opens_the_defaults_and_says_so():
    at = open_app(None, mem_source="../etc/passwd", mem_batch="0", mem_kv_heads="-3", mem_layout="ring")
    warned = " ".join(w.value for w in at.warning).replace("\\", "")  # markdown escapes
    assert all(name in warned for name in ("mem_source", "mem_batch", "mem_kv_heads", "mem_layout")), warned
    at.switch_page(page_file("memory")).run()
    assert not at.exception and at.number_input(key="mem_batch").value == 1
