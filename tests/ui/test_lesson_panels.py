"""The lesson's live panels, in Chinese, each number read off the page and checked against an
independent source: the config file and transformers' own tokenizer for shapes and counts, bytes counted by hand,
the article's 24 KB / 6 MB / 64 MB, and the engine's own mask rule written out as loops. Each control is moved
once and the figure it changes is read again."""

import json
import math
import re

import pytest
from page_probes import metrics
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file, shown

from llmviz.analysis.kv_memory import human
from llmviz.i18n.translator import translate

PAGE = page_file("lesson")
JINAN = "济南的冬天"

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the embedded model is not trained yet")


@pytest.fixture(scope="module")
def config() -> dict:
    return json.loads((EMBEDDED_WEIGHTS.parent / "config.json").read_text())


@pytest.fixture(scope="module")
def prompt_ids() -> list[int]:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(EMBEDDED_WEIGHTS.parent))(JINAN)["input_ids"]


def at_step(position: str):
    at = open_app(PAGE, lang="zh", lesson=position)
    assert not at.error, [e.value for e in at.error]
    return at


def z(key: str, **values) -> str:
    return translate("zh", key, **values)


def test_the_prompts_tokens_against_the_tokenizer(prompt_ids):
    at = at_step("1.1.1")
    m = metrics(at)
    assert m[z("tokens.n_tokens")] == str(len(prompt_ids)) and m[z("tokens.n_chars")] == "5"
    assert m[z("tokens.col_id")] == str(prompt_ids[0])
    assert m[z("tokens.col_bytes")] == "e6"  # 济 is e6 b5 8e in UTF-8, spelled in bytes by this vocabulary
    option = at.select_slider(key="lesson_ctl_tokens").options[0]  # markdown: the label escaped
    assert shown(option) == "0 · <e6>" and option == "0 · \\<e6\\>"  # a lone byte by its hex, not �
    at.select_slider(key="lesson_ctl_tokens").set_value(len(prompt_ids) - 1).run()
    assert metrics(at)[z("tokens.col_id")] == str(prompt_ids[-1])


def chip_fields(at) -> list[list[str]]:
    """The position chips of the step's table (viz/tokens.field_chips): per chip, its position then its fields."""
    body = next(h.proto.body for h in at.html if 'class="tok legend"' in h.proto.body)
    chips = re.findall(r'<span class="tok">((?:<span class="(?:pos|id)">[^<]*</span>)+)</span>', body)
    return [re.findall(r'<span class="(?:pos|id)">([^<]*)</span>', c) for c in chips]


def test_berts_view_is_seven_positions(prompt_ids):
    at = at_step("1.1.2")
    m = metrics(at)
    assert (m[z("tokens.n_tokens")], m[z("tokens.vocab")], m[z("lesson.last_position")]) == ("7", "21,128", "6")
    # BERT's input as the article draws it: [CLS] 济 南 的 冬 天 [SEP], one segment, positions 0..6
    assert chip_fields(at) == [[str(i), tok, "0"] for i, tok in enumerate(["[CLS]", *JINAN, "[SEP]"])]
    at.segmented_control(key="lesson_ctl_bert").set_value("here").run()
    assert metrics(at)[z("tokens.vocab")] == "9,216"  # the embedded vocabulary (its card)
    assert [c[:2] for c in chip_fields(at)] == [[str(i), str(t)] for i, t in enumerate(prompt_ids)]  # the tokenizer's
    at.segmented_control(key="lesson_ctl_bert").set_value("bert_sum").run()  # BERT's input, random tables, said so
    assert metrics(at)[z("lesson.shape")] == "[7, 768]"
    assert z("lesson.bert_sum_note", token="[21128, 768]", position="[512, 768]", segment="[2, 768]") in [
        c.value for c in at.caption]


def test_prefill_shapes_from_the_config(config, prompt_ids):
    n, d, hd = len(prompt_ids), config["hidden_size"], config["hidden_size"] // config["num_attention_heads"]
    assert metrics(at_step("1.1.3"))[z("lesson.shape")] == f"[{n}, {d}]"
    assert metrics(at_step("1.1.4"))[z("lesson.shape_q")] == f"[{n}, {hd}]"
    m = metrics(at_step("1.1.5"))
    assert m[z("lesson.shape_scores")] == f"[{n}, {n}]" and m[z("lesson.scale")].endswith(f"{1 / math.sqrt(hd):.4g}")


def test_the_cache_in_bytes_by_hand(config, prompt_ids):
    n, kv = len(prompt_ids), config["num_key_value_heads"]
    hd, layers = config["hidden_size"] // config["num_attention_heads"], config["num_hidden_layers"]
    m = metrics(at_step("1.1.6"))
    assert m[z("lesson.shape_cache", layer=0)] == f"[{n}, {kv}, {hd}]"
    assert m[z("lesson.model_bytes")] == f"{n * kv * hd * 2 * 4 * layers:,} B"  # fp32: 4 bytes a number
    # the same cache with its batch and layer axes (the article's slip at §4.1: k_cache.shape has more than three):
    # as attention reads it, and the contiguous cache's tensor as torch holds it, max_seq slots a row (the run's own)
    assert m[z("lesson.shape_engine", layer=0)] == f"[1, {kv}, {n}, {hd}]"
    from llmviz.engine.loading.model import load_model
    from llmviz.engine.session import Session
    from llmviz.ui.settings import Settings

    settings = Settings(model=str(EMBEDDED_WEIGHTS.parent), prompt=JINAN)
    lm = load_model(str(EMBEDDED_WEIGHTS.parent), device=settings.device, dtype=settings.dtype)
    session = Session(lm, JINAN, settings.engine_config(lm.cfg.max_position_embeddings))
    held = list(session.cache.storage[0].shape)  # what torch allocated for the lesson's run
    assert held[:4] == [layers, 2, 1, kv] and held[5] == hd
    assert m[z("lesson.shape_engine_all", layout="contiguous")] == str(held)
    at = at_step("1.1.7")
    assert metrics(at)[z("lesson.article_layer")] == "24,576 B"  # the article's "24 KB": one layer, not twelve
    at.segmented_control(key="lesson_ctl_kv_bytes").set_value("fp16").run()
    m = metrics(at)
    assert m[z("lesson.article_layer")] == "12,288 B" and m[z("lesson.here_layer")] == f"{n * kv * hd * 2 * 2:,} B"
    at.segmented_control(key="lesson_ctl_kv_bytes").set_value("int8").run()
    captions = [c.value for c in at.caption]
    assert metrics(at)[z("lesson.article_layer")] == "6,144 B"  # 4 x 12 x 64 x 2 x 1
    # the sentence under the figures reads the same arithmetic, and says the run's own cache is fp32 (the map's)
    ours = f"= 每层 {n * kv * hd * 2:,} 字节"
    assert any("4 × 12 × 64 × 2 × 1 字节 = 6,144 字节" in c and ours in c for c in captions)
    assert z("lesson.kv_bytes_stored", dtype="int8", stored="fp32") in captions


def test_the_slip_is_shown_whole_beside_the_panel():
    at = at_step("1.1.7")
    texts = [m.value for m in at.markdown]
    says = [v for v in texts if v.startswith("**§1.1** · ") and "24 KB" in v]
    assert len(says) == 1 and "*" not in says[0][len("**§1.1**"):]  # the article's sentence, its marks rendered
    # one layer: 4 tokens x 12 heads x 64 x (K and V) x 4 B; twelve layers; the whole sentence, not cut in a cell
    evidence = [v for v in texts if v.startswith(z("article.evidence_line", text=""))]
    assert len(evidence) == 1 and "24,576 B" in evidence[0] and f"{12 * 24_576:,} B" in evidence[0]
    assert evidence[0].endswith("MiB。")


def test_the_block_tables_slip_draws_the_engines_tables():
    """Step 2.1.2's slip: vLLM's drawing, its arrows from each request's logical block to the physical block the
    engine's table names, as the caption lists them (the lab's own test works the tables by hand)."""
    from page_probes import charts

    at = at_step("2.1.2")
    fig = charts(at)[z("article.tables_title", block=4)]
    arrows = [a for a in fig["layout"]["annotations"] if a.get("showarrow")]
    caption = next(c.value for c in at.caption if c.value.startswith(z("article.tables_note", a="", b="", block=4,
                                                                          model="")[:8]))
    tables = [[int(b) for b in part.split(" → ")] for part in re.findall(r"(\d+(?: → \d+)+)", caption)]
    assert len(tables) == 2 and len(arrows) == sum(map(len, tables))
    assert sorted(a["y"] for a in arrows) == sorted(b for t in tables for b in t)  # each arrow ends at its block


def test_decode_feeds_one_row(config, prompt_ids):
    at = at_step("1.2.1")
    m = metrics(at)
    assert m[z("lesson.prefill_input")] == f"[{len(prompt_ids)}, {config['hidden_size']}]"
    assert m[z("lesson.decode_input")] == f"[1, {config['hidden_size']}]"
    assert m[z("decode.kv_len")] == str(len(prompt_ids) + 1)
    at.select_slider(key="lesson_ctl_decode_input").set_value(4).run()
    assert metrics(at)[z("decode.kv_len")] == str(len(prompt_ids) + 4)


def test_the_cache_grows_a_row_a_step(config, prompt_ids):
    at = at_step("1.2.3")
    kv, hd = config["num_key_value_heads"], config["hidden_size"] // config["num_attention_heads"]
    label = z("lesson.shape_cache", layer=config["num_hidden_layers"] - 1)
    for i in (1, 3, 4):
        at.select_slider(key="lesson_ctl_cache_growth").set_value(i).run()
        assert metrics(at)[label] == f"[{len(prompt_ids) + i}, {kv}, {hd}]"


def test_the_articles_6_mb_and_64_mb():
    at = at_step("1.2.4")
    assert metrics(at)[z("lesson.article_layer")] == f"{6 * 2**20:,} B"  # 1024 x 12 x 64 x 2 x 4
    # and a real cache of those shapes, allocated by the engine: the bytes torch holds for it, the formula's by hand
    real = z("lesson.real_cache", tokens=1024, shape="[2, 1, 12, 1024, 64]", dtype="float32",
             held=f"{1024 * 12 * 64 * 2 * 4:,}", human="6.0 MiB")
    assert real in [c.value for c in at.caption]
    assert metrics(at_step("4.1.2"))[z("lesson.oom_article")] == "64.0 MiB"  # 2048 x 4096 x 2 x 4


def test_what_a_budget_holds(config):
    per_token = config["num_hidden_layers"] * 2 * config["num_key_value_heads"] * (
        config["hidden_size"] // config["num_attention_heads"]) * 4
    context = config["max_position_embeddings"]
    at = at_step("4.1.4")
    assert metrics(at)[z("lesson.fits_tokens")] == f"{context // 4:,}"  # a quarter of one whole sequence's cache
    options = at.select_slider(key="lesson_ctl_max_seq").options
    assert len(options) == 5  # a sixteenth of the whole context's cache up to all of it, never past the context
    at.select_slider(key="lesson_ctl_max_seq").set_value(per_token * context).run()
    assert metrics(at)[z("lesson.fits_tokens")] == f"{context:,}"
    at.select_slider(key="lesson_ctl_max_seq").set_value(per_token * context // 16).run()
    assert metrics(at)[z("lesson.fits_tokens")] == f"{context // 16:,}"


def test_a_request_past_the_budget_is_refused_by_the_engine(config):
    """Step 4.1.4's run: the prompt grown to the context's last position under a quarter of one whole sequence's
    cache: a row reserved at the context is refused before it starts, the max_seq_len the budget holds (a quarter of
    the context) ends the request there, and a pool of that many tokens in blocks of 16 refuses the next token."""
    context = config["max_position_embeddings"]
    held = context // 4
    at = at_step("4.1.4")
    assert at.select_slider(key="lesson_ctl_request").value == context - 1
    at.button(key="lesson_budget_run").click().run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    table = at.table[0].value
    assert list(table[z("lesson.budget.col_outcome")]) == [
        z("lesson.budget.refused_start"), z("lesson.budget.ended", n=held),
        z("lesson.budget.refused_at", n=held) + z("lesson.budget.blocks", n=held // 16)]
    said = at.code[0].value
    assert said.startswith("KVCacheTooLargeError: ") and "\nKVCacheFullError: " in said


def test_gqa_shares_kv_heads(config):
    heads = config["num_attention_heads"]
    at = at_step("4.2.4")
    at.select_slider(key="lesson_ctl_gqa").set_value(2).run()
    m = metrics(at)
    assert m[z("lesson.group")] == str(heads // 2) and m[z("lesson.of_mha")] == f"{100 * 2 / heads:.1f}%"


def test_the_block_sparse_mask_counted_by_loops(prompt_ids):
    n = len(prompt_ids)
    at = at_step("5.1")
    for block in (1, 4):
        at.segmented_control(key="lesson_ctl_sparse").set_value(block).run()
        seen = sum(1 for q in range(n) for k in range(q + 1) if q // block - k // block < 2 or k // block < 1)
        assert metrics(at)[z("lesson.keys_seen")] == str(seen)
    at.segmented_control(key="lesson_ctl_sparse_kind").set_value("window").run()  # the article's 局部注意力
    for window in (2, 6):
        at.segmented_control(key="lesson_ctl_sparse_window").set_value(window).run()
        assert metrics(at)[z("lesson.keys_seen")] == str(sum(min(q + 1, window) for q in range(n)))


def test_one_more_token_and_every_steps_logits_are_the_oracles(app_model):
    """One press, one token; every step's next-token logits the lesson's run recorded are what transformers
    computes from the same ids (the prompt and the tokens drawn so far) on the same weights."""
    import torch
    from transformers import AutoModelForCausalLM

    at = at_step("1.2.7")
    before = int(metrics(at)[z("decode.generated")])
    at.button(key="lesson_ctl_continuation").click().run()
    assert int(metrics(at)[z("decode.generated")]) == before + 1
    trace = at.session_state["llmviz_run"].trace
    ids = list(trace.prompt_ids) + list(trace.row_output_ids(0))
    assert len(trace.row_output_ids(0)) == before + 1 and len(trace.steps) >= before + 1
    oracle = AutoModelForCausalLM.from_pretrained(str(EMBEDDED_WEIGHTS.parent), dtype=torch.float32).eval()
    with torch.no_grad():
        logits = oracle(torch.tensor([ids])).logits[0].numpy()  # [len, V]: position i predicts token i + 1
    n = len(trace.prompt_ids)
    for k, step in enumerate(trace.steps[:before + 1]):  # step k saw the prompt and k drawn tokens
        assert step.logits is not None
        assert abs(step.logits[0] - logits[n - 1 + k]).max() < 1e-3, k


def test_what_a_decode_step_reads_by_hand(config):
    """§4.2 (C18): at 512 cached tokens a step reads layers x (K, V) x KV heads x head_dim x 4 B x 512 of cache
    (4 x 2 x 8 x 32 x 4 x 512 = 4 MiB), shown in binary units so that it fits its column, the exact bytes in a
    caption; the weights it reads are every parameter in fp32 but the embedding rows it skips."""
    at = at_step("4.2.1")
    m = metrics(at)
    hd = config["hidden_size"] // config["num_attention_heads"]
    kv = config["num_hidden_layers"] * 2 * config["num_key_value_heads"] * hd * 4 * 512
    assert kv == 4 * 2**20 and m[z("lesson.kv_read")] == "4.0 MiB"
    caption = next(c.value for c in at.caption if f"{kv:,} B" in c.value)  # the exact bytes, in a caption
    exact = int(caption.split("、")[1].split(" B")[0].split()[-1].replace(",", ""))
    params = 5_769_472  # the embedded model's card
    assert params * 4 - config["vocab_size"] * config["hidden_size"] * 4 <= exact <= params * 4
    assert m[z("lesson.weights_read")] == f"{exact / 2**20:.1f} MiB"


def test_this_models_cache_never_holds_past_its_context(config):
    """Issue 36: the article's formula at 2,048 tokens, but a 512-token model's cache at its 512 (by hand: layers x
    512 x kv heads x head dim x 2 x 4 B), and the caption says so."""
    at = at_step("4.1.2")
    context = config["max_position_embeddings"]
    hd = config["hidden_size"] // config["num_attention_heads"]
    held = min(2048, context)
    layer = held * config["num_key_value_heads"] * hd * 2 * 4
    assert metrics(at)[z("lesson.here_layer")] == human(layer)
    if context < 2048:
        assert any(z("lesson.oom_context", tokens=2048, held=context) in c.value for c in at.caption)


def test_the_ridge_points_of_the_a100_and_of_this_machine():
    """Issue 36 (8): the article's "hundreds of FLOPs per byte" is the A100's ridge, 312e12 / 2,039e9 = 153 (by
    hand); beside it this machine's, from the probes: a hand-made 58 GFLOP/s over 20 GB/s is 2.9, and a decode
    step's intensity (about 1) lies below both."""
    at = at_step("1.2.5")
    assert metrics(at)[z("lesson.ridge_a100")] == "153"
    at.session_state["llmviz_device_limits"] = {"peak": {"gflop_per_s": 58.0}, "dram": {"gb_per_s": 20.0},
                                                "device": "cpu"}
    at.run()
    assert metrics(at)[z("lesson.ridge_here", device="cpu")] == "2.9"
    note = next(c.value for c in at.caption if c.value.startswith(z("lesson.ridge_note", a100=153.02, here=2.9,
                                                                        intensity=1.0, bound="")[:20]))
    assert "153" in note and "2.9" in note and note.endswith(z("lesson.ridge_memory"))


def test_the_ridge_button_measures_this_machine():
    at = at_step("4.2.2")
    at.button(key="lesson_ctl_ridge").click().run()
    assert not at.exception and not at.error
    raw = at.session_state["llmviz_device_limits"]  # measured on whatever device this machine has
    here = float(metrics(at)[z("lesson.ridge_here", device=raw["device"])])
    assert here == pytest.approx(raw["peak"]["gflop_per_s"] / raw["dram"]["gb_per_s"], abs=0.05)
    # §1.2's memory share under it: a decode step's bytes by hand, the embedded model's 23,077,888 B of fp32 weights
    # (tied: the table is read whole as the head) and 10 tokens' K and V (9 cached and the new one, 8,192 B each)
    weights, kv = 23_077_888, 10 * 8_192
    table = at.table[0].value
    change = dict(zip(table[z("lesson.mem.col.switch")], table[z("lesson.mem.col.change")], strict=True))
    assert change[z("lesson.mem.remedy.weights_fp16")] == f"{-100 * (weights / 2) / (weights + kv):+.1f}%" == "-49.8%"
    assert change[z("lesson.mem.remedy.kv_fp16")] == f"{-100 * (kv / 2) / (weights + kv):+.1f}%" == "-0.2%"
    m = metrics(at)
    step_ms, memory_ms = (float(m[z(f"lesson.mem.{k}")].removesuffix(" ms")) for k in ("step_ms", "memory_ms"))
    cache = raw.get("cache")
    gb_s = cache["gb_per_s"] if cache and weights + kv <= cache["bytes"] else raw["dram"]["gb_per_s"]
    assert memory_ms == pytest.approx((weights + kv) / (gb_s * 1e6), abs=0.006)  # the metric shows two decimals
    assert float(m[z("lesson.mem.share")].removesuffix("%")) == pytest.approx(100 * memory_ms / step_ms, abs=1.5)


def test_attentions_output_is_the_probabilities_times_v():
    """Step 1.1.5's third view: a query's softmax row times V, row by row, then summed, as drawn; checked against the
    engine: every head's P·V, joined and put through the layer's o_proj, is the recorded attention output."""
    import numpy as np
    import torch
    from page_probes import charts, engine_prefill
    from plotly_data import array

    from llmviz.trace import hooks

    at = at_step("1.1.5")
    at.segmented_control(key="lesson_ctl_scores").set_value("output").run()
    drawn = next(f for title, f in charts(at).items() if title.startswith(z("lesson.output_title", query="")[:4]))
    z_drawn = array(drawn["data"][0]["z"])  # [row + 2, hd]: p_j V_j for j <= row, then the sum
    lm, step = engine_prefill(EMBEDDED_WEIGHTS.parent, JINAN)
    probs, v = step.hook(hooks.probs(0)).array[0], step.hook(hooks.v(0)).array[0]  # [h, n, n], [kv, n, hd]
    n, heads, kv = probs.shape[1], probs.shape[0], v.shape[0]
    assert z_drawn.shape == (n + 1, v.shape[2])  # the last query: every key, then the sum
    assert np.allclose(z_drawn[-1], probs[0, -1] @ v[0], atol=1e-5)
    assert np.allclose(z_drawn[:-1].sum(axis=0), z_drawn[-1], atol=1e-5)
    per_head = np.concatenate([probs[h] @ v[h // (heads // kv)] for h in range(heads)], axis=-1)  # [n, h * hd]
    o_proj = lm.model.layers[0].attn.o_proj
    with torch.no_grad():
        weight = o_proj.weight  # on the run's device (a GPU where there is one)
        out = o_proj(torch.from_numpy(per_head).to(weight.device, weight.dtype)).float().cpu().numpy()
    assert np.allclose(out, step.hook(hooks.attn_out(0)).array[0], atol=1e-4)


def test_the_score_matrix_grows_as_n_squared_against_the_config(config):
    """Step 1.1.5's fourth view, measured when opened: the lengths double up to the longest prompt the config's
    context takes, the score matrix counted per length is heads x n x n from the config, its last doubling's ratio
    (511/256)² by hand; the times are this machine's (each with its min and max), so only their form is checked."""
    from page_probes import charts

    at = at_step("1.1.5")
    at.segmented_control(key="lesson_ctl_scores").set_value("growth").run()
    assert not at.error, [e.value for e in at.error]
    m, heads = metrics(at), config["num_attention_heads"]
    assert m[z("lesson.growth_scores", a=256, b=511)] == f"×{(511 / 256) ** 2:.2f}" == "×3.98"
    assert re.fullmatch(r"×\d+\.\d\d \(\d+\.\d\d–\d+\.\d\d\)", m[z("lesson.growth_attention", a=256, b=511)])
    table = next(t.value for t in at.table if z("lesson.growth_col_bytes") in t.value.columns)
    lengths = [32, 64, 128, 256, config["max_position_embeddings"] - 1]
    assert list(table[z("lesson.growth_col_n")]) == lengths
    assert list(table[z("lesson.growth_col_scores", h=heads)]) == [f"{heads * n * n:,}" for n in lengths]
    assert list(table[z("lesson.growth_col_bytes")]) == [human(4 * heads * n * n) for n in lengths]
    drawn = charts(at)[z("lesson.growth_title")]
    assert [tr["x"] for tr in drawn["data"]] == [lengths] * 4  # attention, its n² guide, projection, its n guide


def test_the_positions_are_this_runs_rope_angles(config, prompt_ids):
    """Step 1.1.3's second view: the positions the run fed (0 .. n-1) and RoPE's angle of each position and pair,
    against the formula by hand: position p, pair i turns by p * theta ** (-2i / head_dim)."""
    import numpy as np
    from page_probes import charts
    from plotly_data import array

    at = at_step("1.1.3")
    at.segmented_control(key="lesson_ctl_embedding_view").set_value("positions").run()
    n, hd = len(prompt_ids), config["hidden_size"] // config["num_attention_heads"]
    assert metrics(at)[z("lesson.positions_fed")] == f"0 … {n - 1}"
    heat = charts(at)[z("tokens.pos_rope_title", n=n, pairs=hd // 2)]["data"][0]
    theta = config.get("rope_theta", 10000.0)
    by_hand = np.arange(n)[:, None] * theta ** (-2 * np.arange(hd // 2)[None, :] / hd)  # [n, pairs]
    assert np.allclose(array(heat["customdata"]), by_hand, rtol=1e-5, atol=1e-5)


def test_step_5_2_measures_the_methods_on_heldout_text(app_model):
    """LLM.int8() measured live beside fp32 (the reference, measured first): each row's perplexity is the engine's
    held-out perplexity of that model, LLM.int8()'s outlier columns are counted, and the 4-bit weights' share is
    explained by the fp32 tables (the vocabulary's rows by hand)."""

    from llmviz import service
    from llmviz.labs.evaluation import engine_perplexity, heldout_ids
    from llmviz.trace.config import EngineConfig

    at = open_app(PAGE, model=app_model, lang="zh", lesson="5.2")
    at.segmented_control(key="lesson_ctl_quant").set_value("int4").run()
    vocab, d = 9216, 256  # the embedded model's table: one embedding, which the output head shares (tied), fp32
    assert any(f"{vocab:,} 行" in c.value for c in at.caption)
    at.segmented_control(key="lesson_ctl_quant").set_value("llm-int8").run()
    at.button(key="lesson_quant_measure").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(df.value for df in at.dataframe if z("lesson.quant_col_ppl") in df.value.columns)
    assert list(table[z("lesson.quant_col_method")]) == ["none", "llm-int8"]
    for method, ppl in zip(("none", "llm-int8"), table[z("lesson.quant_col_ppl")], strict=True):
        lm = service.models.load(app_model, EngineConfig(device="cpu", quant=method))
        assert float(ppl) == pytest.approx(engine_perplexity(lm, heldout_ids(lm.tokenizer)), rel=2e-4)  # any device
    assert any(c.value.startswith("LLM.int8()：这里有") for c in at.caption)
    kept = vocab * d * 4 + d * 4  # the table and the final norm, fp32: 9.0 MiB, 41% of 22.0 MiB
    assert any(f"{kept / 2**20:.1f} MiB" in c.value and "41%" in c.value for c in at.caption)
