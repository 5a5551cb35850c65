"""Tokens and embeddings page (C1, C2): the numbers shown are the engine's, read back from the page."""

from __future__ import annotations

import re

import numpy as np
import pytest
from page_probes import charts, engine_prefill, metrics, open_page, open_replay
from plotly_data import array
from ui_helpers import EMBEDDED_WEIGHTS, table_with

from llmviz.engine.loading.model import load_model
from llmviz.engine.session import Session
from llmviz.i18n.translator import translate

JINAN = "济南的冬天"


@pytest.mark.parametrize("prompt", ["The list", "The quick brown fox jumps over the lazy dog. Return the list"])
def test_token_count_and_vocab_are_the_engines(model_dirs, prompt):
    folder = model_dirs["llama_tied"]
    lm, step = engine_prefill(folder, prompt)
    at = open_page(folder, prompt)
    shown = metrics(at)
    n = step.input_ids.shape[1]
    assert shown["Tokens"] == str(n) and shown["Characters"] == str(len(prompt))
    assert shown["Vocabulary size"] == f"{lm.cfg.vocab_size:,}"
    table = table_with(at, "id")
    assert list(table["id"]) == [int(i) for i in step.input_ids[0]] and len(table) == n
    assert any(c.value.startswith("Every token here ends on a character boundary") for c in at.caption)
    columns = [set(d.value.columns) for d in at.dataframe]
    assert not any({"character", "characters"} & c for c in columns)  # no table of characters for plain English


@pytest.mark.parametrize("kind", ["gpt2", "llama_gqa_rope3"])
def test_jinan_bytes_are_regrouped(model_dirs, kind):
    at = open_page(model_dirs[kind], JINAN)
    assert metrics(at)["Tokens"] == "15" and metrics(at)["Characters"] == "5" and metrics(at)["UTF-8 bytes"] == "15"
    chars = table_with(at, "character")  # character | token position | UTF-8 bytes | tokens | in this vocabulary
    assert list(chars["character"]) == list(JINAN) and list(chars["tokens"]) == [3] * 5
    assert list(chars["in this vocabulary"]) == ["3 byte tokens"] * 5
    groups = table_with(at, "characters")  # characters | token positions | ids | bytes | decoded alone
    assert list(groups["characters"]) == list(JINAN)
    assert list(groups["bytes (hex)"]) == ["e6 b5 8e", "e5 8d 97", "e7 9a 84", "e5 86 ac", "e5 a4 a9"]
    assert list(groups["token positions"]) == ["0–2", "3–5", "6–8", "9–11", "12–14"]
    assert set(groups["each token decoded alone"]) == {"\ufffd \ufffd \ufffd"}
    chips = next(h.proto.body for h in at.html if "llmviz-chips" in h.proto.body)  # the token chips (C1)
    assert re.findall(r'<div class="chr">(.*?)</div>', chips) == list(JINAN)
    assert re.findall(r'<span class="id">(\d+)</span>', chips) == [str(i) for i in table_with(at, "id")["id"]]
    assert any("15 byte tokens" in m.value for m in at.markdown)


@pytest.mark.parametrize("kind", ["gpt2", "llama_gqa_rope3"])
def test_embedding_and_position_figures_hold_the_recorded_tensors(model_dirs, kind):
    prompt = "The quick brown fox"
    lm, step = engine_prefill(model_dirs[kind], prompt)
    at = open_page(model_dirs[kind], prompt)
    n, d = step.input_ids.shape[1], lm.cfg.hidden_size
    figs = charts(at)
    z = array(figs[f"Embedding matrix of the prompt [{n}, {d}]"]["data"][0]["z"])
    assert z.shape == (n, d) and np.allclose(z, step.hook("embed").array[0], atol=1e-6)
    pca = figs["Token vectors projected onto 2 dimensions (PCA)"]["data"][0]
    assert len(array(pca["x"])) == n
    pos = step.hook("pos").array[0]
    if kind == "gpt2":  # learned absolute positions: the table rows [n, d]
        z = array(figs[f"Learned position vectors of the prompt [{n}, {d}]"]["data"][0]["z"])
        assert z.shape == (n, d) and np.allclose(z, pos, atol=1e-6)
        assert any("learned absolute positions" in m.value for m in at.markdown)
    else:  # RoPE: the rotation angle of each position and dimension pair [n, hd/2]
        pairs = lm.cfg.head_dim // 2
        heat = figs[f"RoPE rotation angles [{n} positions, {pairs} dimension pairs]"]["data"][0]
        assert np.allclose(array(heat["customdata"]), pos, atol=1e-6)
        assert array(heat["z"]).shape == (n, pairs)
        rates = next(c.value for c in at.caption if c.value.startswith("Read from the recorded angles"))
        assert "pair 0 turns 1 radian per token" in rates  # θ^0 = 1 radian: said in the singular


def test_the_page_in_chinese(model_dirs):
    at = open_page(model_dirs["gpt2"], JINAN, lang="zh")
    assert at.title[0].value == "分词与嵌入"
    assert metrics(at)["token 数"] == "15" and list(table_with(at, "字符组")["字符组"]) == list(JINAN)  # the groups
    entries = list(table_with(at, "词表条目")["词表条目"])  # GPT-2's byte-level spelling: 济 is e6 b5 8e -> æ µ İ
    assert entries[:3] == ["æ", "µ", "İ"] and translate("zh", "tokens.piece_note") in [c.value for c in at.caption]


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")
def test_the_embedded_model_says_which_characters_are_tokens():
    """Issue 21: the page's per-character table against transformers' own tokenizer of the embedded model (a
    character is whole when that tokenizer gives it one token alone), and the token count against the engine."""
    from transformers import AutoTokenizer

    at = open_page("llmviz-tiny", JINAN)
    _, step = engine_prefill("llmviz-tiny", JINAN)
    assert metrics(at)["Tokens"] == str(step.input_ids.shape[1])
    hf = AutoTokenizer.from_pretrained(str(EMBEDDED_WEIGHTS.parent))
    oracle = [len(hf.tokenize(c)) for c in JINAN]
    chars = table_with(at, "character")
    assert list(chars["character"]) == list(JINAN) and list(chars["tokens"]) == oracle
    assert sum(oracle) == step.input_ids.shape[1]  # the characters' tokens are the whole prompt's
    split = [c for c, n in zip(JINAN, oracle, strict=True) if n > 1]
    if split:
        assert list(table_with(at, "characters")["characters"]) == split


def test_a_trace_without_tensors_still_shows_its_tokens(model_dirs):
    from llmviz.trace.config import EngineConfig

    lm = load_model(str(model_dirs["gpt2"]))
    session = Session(lm, JINAN, EngineConfig(capture="meta"))
    session.step()
    at = open_replay(session.trace, "app_pages/tokens.py")
    assert metrics(at)["Tokens"] == "15" and list(table_with(at, "characters")["characters"]) == list(JINAN)
    assert [w.value for w in at.warning if "capture level meta" in w.value and "embed, pos" in w.value]
    assert not any(title.startswith("Embedding matrix") for title in charts(at))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bert_reads_jinan_as_seven_positions_beside_this_model(model_dirs, lang):
    """Issue 22 (C2): [CLS] 济 南 的 冬 天 [SEP] at positions 0-6, segment 0, a 21,128-entry vocabulary, beside
    the loaded model's own tokens (here 15 byte tokens, RoPE, no segments)."""
    from llmviz.i18n.translator import translate

    at = open_page(model_dirs["llama_gqa_rope3"], JINAN, lang=lang)
    bert = next(d.value for d in at.dataframe if translate(lang, "tokens.bert_col_segment") in d.value.columns)
    assert list(bert[translate(lang, "tokens.bert_col_token")]) == ["[CLS]", *JINAN, "[SEP]"]
    assert list(bert[translate(lang, "tokens.bert_col_position")]) == list(range(7))
    assert set(bert[translate(lang, "tokens.bert_col_segment")]) == {0}
    assert any("21,128" in m.value for m in at.markdown)
    here = next(m.value for m in at.markdown if m.value.startswith(translate(lang, "tokens.bert_here", model="x",
                                                                             n=0, vocab=0, scheme="", bos="")[:4]))
    assert "15" in here and translate(lang, "tokens.bert_scheme_rope") in here
