"""Prefill page (C3, C4): shapes, scores, maps, KV bytes and timings shown are the engine's own."""

from __future__ import annotations

import numpy as np
import pytest
from page_probes import charts, engine_prefill, metrics, open_page, open_replay
from plotly_data import array
from ui_helpers import EMBEDDED_WEIGHTS, open_app, shown, table_with

from llmviz.ui.markdown import escape

PAGE = "app_pages/prefill.py"
SHORT, LONG = "The list", "The quick brown fox jumps over the lazy dog. Return the list of values"


def markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


@pytest.mark.parametrize("prompt", [SHORT, LONG])
def test_qkv_shapes_follow_the_prompt_length(model_dirs, prompt):
    folder = model_dirs["llama_gqa_rope3"]
    lm, step = engine_prefill(folder, prompt)
    n, d, hd = step.input_ids.shape[1], lm.cfg.hidden_size, lm.cfg.head_dim
    assert step.hook("layers.0.q").shape == [1, lm.cfg.num_heads, n, hd]
    at = open_page(folder, prompt, PAGE)
    text = markdown(at)
    assert f"X [{n}, {d}] × W_Q [{d}, {hd}] → Q [{n}, {hd}]" in text
    assert f"X [{n}, {d}] × W_K [{d}, {hd}] → K [{n}, {hd}]" in text
    assert f"Q [{n}, {hd}] × Kᵀ [{hd}, {n}] → S [{n}, {n}]" in text
    assert f"({n * (n - 1) // 2} of {n * n} entries)" in text  # the causal mask, counted
    assert f"√d_k = √{hd} (that is, multiplied by {hd ** -0.5:.4g})" in text


def test_kv_bytes_are_the_engines(model_dirs):
    folder = model_dirs["llama_gqa_rope3"]
    lm, step = engine_prefill(folder, LONG)
    kv, c = step.kv, lm.cfg
    at = open_page(folder, LONG, PAGE)
    shown = metrics(at)
    assert shown["Engine: bytes in use"] == f"{kv['bytes_used']:,} B"
    assert shown["Engine: bytes allocated"] == f"{kv['bytes_allocated']:,} B"
    assert shown["By the formula"] == shown["From the recorded K/V tensors"] == f"{kv['bytes_used']:,} B"
    n = step.input_ids.shape[1]
    per_layer = n * c.num_kv_heads * c.head_dim * 2 * 4
    layers = table_with(at, "bytes (K + V)")
    assert list(layers["K [tokens, KV heads, head_dim]"]) == [str([n, c.num_kv_heads, c.head_dim])] * c.num_layers
    assert list(layers["bytes (K + V)"]) == [f"{per_layer:,}"] * c.num_layers
    article = table_with(at, "Article (BERT-base, fp32)").set_index("")
    assert article.loc["per layer", "Article (BERT-base, fp32)"] == "24,576 B (24.0 KiB)"
    here = f"{escape(folder)}, this prompt"  # a table's headers render as markdown: the name is escaped
    assert article.loc["tokens", here] == str(n)
    assert article.loc["per layer", here].startswith(f"{per_layer:,} B")
    bars = charts(at)["KV cache bytes after prefill"]["data"][0]
    assert list(array(bars["x"])) == [kv["bytes_used"]] * 3 + [kv["bytes_allocated"]]


def test_chosen_head_shows_its_recorded_scores_and_probs(model_dirs):
    folder = model_dirs["qwen2"]
    lm, step = engine_prefill(folder, LONG)
    at = open_page(folder, LONG, PAGE)
    at.selectbox(key="prefill_layer").set_value(1).run()
    at.selectbox(key="prefill_head").set_value(3).run()
    assert not at.exception
    figs = charts(at)
    recorded = step.hook("layers.1.scores").array[0, 3]  # [n, n]
    shown = array(figs["Scores QKᵀ/√d_k, layer 1, head 3"]["data"][0]["z"]).astype(float)
    assert np.array_equal(np.isnan(shown), np.isneginf(recorded))  # masked entries drawn as masked
    assert np.allclose(shown[~np.isnan(shown)], recorded[np.isfinite(recorded)], atol=1e-5)
    probs = array(figs["Softmax probabilities, layer 1, head 3"]["data"][0]["z"])
    want = step.hook("layers.1.probs").array[0, 3]
    hidden = np.isneginf(recorded)  # masked in the scores: 0 after softmax, drawn grey, not white
    assert np.array_equal(np.isnan(probs), hidden) and np.all(want[hidden] == 0)
    assert np.allclose(probs[~hidden], want[~hidden], atol=1e-6)
    assert np.allclose(np.nan_to_num(probs).sum(axis=1), 1.0, atol=1e-5)
    grid = figs[f"Attention maps: {lm.cfg.num_layers} layers × {lm.cfg.num_heads} heads"]
    s = min(step.input_ids.shape[1], 24)  # each map is pooled to at most 24 x 24
    assert array(grid["data"][0]["z"]).shape == (2 * (s + 1) - 1, 4 * (s + 1) - 1)
    box = grid["layout"]["shapes"][0]  # the outline sits on layer 1 (rows s+1..), head 3 (columns 3(s+1)..)
    assert box["y0"] < s + 1 < box["y1"] and box["x0"] < 3 * (s + 1) < box["x1"]
    # qwen2 here is GQA 4 heads / 2 KV heads: query head 3 reads K/V head 1
    assert "**K** (key/value head 1)" in markdown(at)


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_the_recomputed_note_shows_only_for_a_fused_backend(model_dirs, attn):
    at = open_page(model_dirs["gpt2"], SHORT, PAGE, attn=attn)
    notes = [i.value for i in at.info if "recomputed from the recorded Q and K" in i.value]
    if attn == "sdpa":
        assert len(notes) == 1 and "**sdpa**" in notes[0]
        scores = at.session_state["llmviz_run"].trace.steps[0].hook("layers.0.scores")
        assert scores.recomputed and scores.note.startswith("recomputed")  # the engine's own record says so
    else:
        assert notes == []


def test_prefill_time_per_layer_with_the_capture_caveat(model_dirs):
    folder = model_dirs["gpt2"]
    at = open_page(folder, SHORT, PAGE)
    run = at.session_state["llmviz_run"]
    spans = run.trace.steps[0].timings["spans_ms"]
    assert list(spans) == ["mask", "embed", "layer.0", "layer.1", "kv.write", "head", "sample"]
    title = next(t for t in charts(at) if t.startswith("Where the prefill's"))
    bars = charts(at)[title]["data"][0]
    assert bars["x"] == ["step plan", "embedding", "layer 0", "layer 1", "KV write",
                         "output head", "sampling"]
    assert np.allclose(array(bars["y"]), list(spans.values()))
    assert any("capture level full" in c.value and "“Step plan” is" in c.value for c in at.caption)


def test_the_page_in_chinese(model_dirs):
    folder = model_dirs["llama_gqa_rope3"]
    _, step = engine_prefill(folder, SHORT)
    at = open_page(folder, SHORT, PAGE, lang="zh")
    assert at.title[0].value == "预填充：一次处理整个提示词"
    assert metrics(at)["引擎：已使用字节数"] == f"{step.kv['bytes_used']:,} B"
    assert any("注意力后端是 **sdpa**" in i.value for i in at.info)


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")
def test_the_embedded_model(model_dirs):
    lm, step = engine_prefill("llmviz-tiny", SHORT)
    at = open_page("llmviz-tiny", SHORT, PAGE)
    n, hd = step.input_ids.shape[1], lm.cfg.head_dim
    assert f"→ Q [{n}, {hd}]" in markdown(at)
    assert metrics(at)["Engine: bytes in use"] == f"{step.kv['bytes_used']:,} B"


def test_a_trace_without_tensors_says_so_and_keeps_its_timings(model_dirs):
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.trace.config import EngineConfig

    lm = load_model(str(model_dirs["llama_tied"]))
    session = Session(lm, SHORT, EngineConfig(capture="meta"))
    session.step()
    at = open_replay(session.trace, PAGE)
    assert [w.value for w in at.warning if "capture level meta" in w.value and "layers.0.attn_in" in shown(w.value)]
    assert [t for t in charts(at) if t.startswith("Where the prefill's")]
    assert not at.selectbox and not at.metric  # nothing drawn from tensors that are not there


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_articles_shapes_are_offered_and_run(lang):
    """Issue 22: a page that shows shapes offers gpt2-124m-random, the article's 768 x 12 x 64 x 12, saying its
    weights are random; after the click its Q is [n, 64] per head of 12."""
    from llmviz.i18n.translator import translate

    at = open_app(PAGE, prompt="The list of", lang=lang)
    assert any(translate(lang, "shapes.offer") == c.value for c in at.caption)
    at.button(key="shapes_prefill").click().run()
    assert not at.exception
    run = at.session_state["llmviz_run"]
    config = run.trace.model_card["config"]
    assert (config["hidden_size"], config["num_heads"], config["head_dim"], config["num_layers"]) == (768, 12, 64, 12)
    assert tuple(run.trace.steps[0].hook("layers.0.q").shape[1:]) == (12, len(run.trace.prompt_ids), 64)
    assert any(translate(lang, "shapes.using") == c.value for c in at.caption)


def test_a_block_sparse_run_draws_its_pattern_on_the_maps(model_dirs):
    """Issue 22 (C20): the scores map of a block-sparse run is masked by trace/sparsity.py's rule, and the page
    counts what the pattern hides beyond the causal mask."""
    import numpy as np

    from llmviz.trace.sparsity import BlockSparse

    at = open_page(model_dirs["llama_gqa_rope3"], "The quick brown fox jumps over the lazy dog", PAGE, attn="eager",
                   engine="sparse-block=2,sparse-local=1,sparse-global=1")
    figure = charts(at)["Scores QKᵀ/√d_k, layer 0, head 0"]
    z = array(figure["data"][0]["z"])
    n = z.shape[0]
    rule = BlockSparse(2, 1, 1).allows(np.arange(n)[:, None], np.arange(n)[None, :])
    assert np.array_equal(~np.isnan(z) if np.isnan(z).any() else np.isfinite(z), rule)
    hidden = int(np.tril(~rule).sum())  # below the diagonal: what the pattern adds to the causal mask
    assert any(f"The block-sparse pattern masks {hidden} more entries" in m.value for m in at.markdown)
