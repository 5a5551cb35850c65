"""KV layouts page: real values on screen (C6, C8, C9; K3). After k steps the contiguous rows show their
unused tail (max_seq - cached slots), the paged block tables cover ceil(cached / block size) blocks, and the
growing layout's torch.cat copied exactly the bytes the cache held the step before, all computed here by
hand from the model's shape and the prompts' token counts; the sweep draws the lengths asked for and a
verdict from its own numbers; bad input gets a message, not a traceback."""

import json
import math

import numpy as np
import pytest
from plotly_data import array
from ui_helpers import PROMPT, open_app, page_file, rendered_text, shown

from llmviz import service
from llmviz.analysis.kv_memory import human
from llmviz.trace.config import EngineConfig

EXTRA = "Return the"
LIVE = "llmviz_kv_live"


@pytest.fixture(scope="module")
def shape(app_model):
    """Bytes of one cached token by hand (layers x K,V x kv_heads x head_dim x 4 B) and the prompts' lengths."""
    lm = service.models.load(app_model, EngineConfig())
    c = lm.cfg
    return {"bpt": c.num_layers * 2 * c.num_kv_heads * c.head_dim * 4,
            "prompts": [len(lm.tokenizer.encode(p)) for p in (PROMPT, EXTRA)], "context": c.max_position_embeddings}


def open_layouts(app_model, **params):
    """The page as a link with kv_* settings opens it (AppTest starts on Home, which reads the link and warns
    about bad values there: those warnings are kept as at.url_warnings)."""
    at = open_app(None, **{"model": app_model, "prompt": PROMPT, **params})
    at.url_warnings = [shown(w.value) for w in at.warning]
    at.switch_page(page_file("kv_layouts")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def click(at, label: str, timeout: float = 120):
    next(b for b in at.button if b.label == label).click().run(timeout=timeout)
    assert not at.exception, [e.value for e in at.exception]
    return at


def figure(at, title_start: str) -> dict:
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        if spec["layout"]["title"]["text"].startswith(title_start):
            return spec
    raise AssertionError(f"no chart titled {title_start!r}")


def table(at, first_column: str):
    return next(t.value for t in at.table if t.value.columns[0] == first_column)


def test_three_steps_show_each_layouts_bytes(app_model, shape):
    at = open_layouts(app_model, kv_prompts=EXTRA, kv_bs=4, kv_max=64)
    for _ in range(3):
        click(at, "Next step ▶")
    assert at.session_state[LIVE].cursor == 3
    lens = [n + 3 for n in shape["prompts"]]  # prefill, then 3 decode steps of one token per row
    bpt = shape["bpt"]
    assert any(f"**Step 3** (decode) · tokens cached per sequence: **{lens[0]}, {lens[1]}**" in x
               for x in rendered_text(at))

    summary = table(at, "Layout").set_index("Layout")
    assert summary.loc["Contiguous", "Reserved, unused"] == 2 * 64 - sum(lens)
    assert summary.loc["Contiguous", "Bytes allocated"] == human(2 * 64 * bpt)
    held = [math.ceil(n / 4) for n in lens]
    assert summary.loc["Paged", "Token slots reserved"] == sum(held) * 4
    assert summary.loc["Paged", "Reserved, unused"] == sum(held) * 4 - sum(lens)
    assert summary.loc["Growing (torch.cat)", "Bytes allocated"] == human(sum(lens) * bpt)
    assert summary.loc["Growing (torch.cat)", "Copied this step"] == human((sum(lens) - 2) * bpt)

    contiguous = figure(at, "Slots of each row")
    assert array(contiguous["data"][0]["x"]).tolist() == lens
    assert array(contiguous["data"][1]["x"]).tolist() == [64 - n for n in lens]
    assert contiguous["layout"]["title"]["text"] == f"Slots of each row: {128 - sum(lens)} of 128 reserved slots unused"

    copies = figure(at, "Bytes torch.cat copied")
    before = [0] + [(sum(shape["prompts"]) + 2 * (k - 1)) * bpt for k in (1, 2, 3)]  # the cache before each step
    assert array(copies["data"][0]["customdata"]).tolist() == before
    assert array(copies["data"][1]["customdata"]).tolist() == [(sum(shape["prompts"]) + 2 * k) * bpt for k in range(4)]

    blocks = table(at, "Sequence")
    assert [len(row.split(" → ")) for row in blocks["Block table (pool block ids, in order)"]] == held
    assert list(blocks["Last block filled"]) == [f"{n - (b - 1) * 4}/4" for n, b in zip(lens, held, strict=True)]
    assert list(blocks["Unused slots"]) == [b * 4 - n for n, b in zip(lens, held, strict=True)]
    pool = figure(at, "Block pool")
    z = array(pool["data"][0]["z"]).astype(float)
    cells = z[~np.isnan(z)]
    num_blocks = 2 * math.ceil(64 / 4)
    assert cells.size == num_blocks * 4
    assert [(cells == 2 + i).sum() for i in range(2)] == lens  # a slot per cached token, coloured by its sequence
    assert (cells == 1).sum() == sum(held) * 4 - sum(lens)  # the unused tails of the last blocks
    assert (cells == 0).sum() == (num_blocks - sum(held)) * 4  # the free blocks
    assert pool["layout"]["title"]["text"].startswith(f"Block pool: {sum(held)} of {num_blocks} blocks held")


def test_the_link_reopens_the_step_and_reports_bad_values(app_model, shape):
    at = open_layouts(app_model, kv_step=2, kv_bs=5, kv_max=64, kv_prompts="")
    assert any("kv_bs=5" in w for w in at.url_warnings)
    live = at.session_state[LIVE]
    assert live.cursor == 2 and len(live.prompts) == 1
    assert table(at, "Sequence")["Last block filled"][0] == f"{(shape['prompts'][0] + 2 - 1) % 4 + 1}/4"  # bs 4
    click(at, "◀ Previous")
    assert at.session_state[LIVE].cursor == 1 and at.session_state[LIVE].recorded == 3  # replayed, not recomputed
    assert at.query_params["kv_step"] in ("1", ["1"])


def test_the_sweep_draws_the_lengths_asked_for_with_a_verdict(app_model, shape):
    at = open_layouts(app_model, kv_model="home", kv_lengths="8, 24", kv_repeats=1)
    click(at, "Run the sweep", timeout=240)
    result = at.session_state["llmviz_kv_sweep"][1]
    assert result["lengths"] == [8, 24] and result["repeats"] == 1
    spec = figure(at, "Decode ms per token")
    assert [array(d["x"]).tolist() for d in spec["data"]] == [[8, 24]] * 3
    assert [d["name"] for d in spec["data"]] == ["Contiguous", "Growing (torch.cat)", "Paged"]
    assert [k["bytes_used"] for k in result["kv"]["contiguous"]] == [8 * shape["bpt"], 24 * shape["bpt"]]
    texts = rendered_text(at)
    # K3 by the claims' one rule on the sweep's rounds: contiguous over paged at 24 tokens, its interval; one round
    # bounds nothing, and nothing past 1024 tokens was measured: the claim cannot be told here
    c24, p24 = (result["ms_per_token"][x]["median"][1] for x in ("contiguous", "paged"))
    box = next(x for x in texts if x.startswith("**K3 · "))
    assert box.startswith("**K3 · cannot tell here**") and f"×{p24 / c24:.2f}" in box, box
    assert "Not measured." in box  # paged past 1024 tokens
    assert any(f"this model's context is {shape['context']} tokens" in x for x in texts)
    numbers = table(at, "tokens in the cache")
    assert list(numbers["tokens in the cache"]) == [8, 24]
    downloads = [d.proto.label for d in at.get("download_button")]
    assert downloads == ["Download JSON", "Download CSV"]


def test_bad_sweep_lengths_get_a_message(app_model, shape):
    at = open_layouts(app_model, kv_model="home", kv_lengths="8, 100000")
    click(at, "Run the sweep")
    assert any("Impossible setting" in e.value and "100000 does not fit" in e.value for e in at.error)
    at.text_input(key="kv_lengths_w").set_value("8, abc").run()
    click(at, "Run the sweep")
    assert any("is not a list of lengths" in e.value for e in at.error)
    at = open_layouts(app_model, kv_lengths="abc")
    assert any("kv_lengths='abc'" in w for w in at.url_warnings)


def test_a_prompt_longer_than_max_seq_gets_a_message(app_model):
    tokenizer = service.models.load(app_model, EngineConfig()).tokenizer
    prompt = next(p for p in (" ".join(["fox"] * n) for n in range(1, 200)) if len(tokenizer.encode(p)) > 64)
    assert len(tokenizer.encode(prompt)) < 128
    at = open_layouts(app_model, prompt=prompt, kv_max=64)
    assert any(e.value.startswith("**Prompt problem:**") for e in at.error)
    assert "llmviz_kv_live" not in at.session_state and at.button  # the sweep is still offered
    at.selectbox(key="kv_max_w").set_value(128).run()
    assert not at.error and at.session_state[LIVE].key[-1] == 128


def test_homes_storage_switches_apply_and_the_layout_switch_is_left_out(app_model, shape):
    at = open_layouts(app_model, engine="kv-dtype=fp16,kv-layout=paged", kv_max=64, kv_prompts="")
    summary = table(at, "Layout").set_index("Layout")
    n = shape["prompts"][0]
    assert summary.loc["Contiguous", "Bytes allocated"] == human(64 * shape["bpt"] // 2)  # fp16: 2 B per element
    assert summary.loc["Growing (torch.cat)", "Bytes holding tokens"] == human(n * shape["bpt"] // 2)
    assert any("used here: kv-dtype=fp16; left out" in x and x.endswith(": kv-layout.") for x in rendered_text(at))


def test_the_page_in_chinese_shows_no_english(app_model):
    from catalog_scan import english_fragments, leaks

    at = open_layouts(app_model, lang="zh", kv_model="home", kv_lengths="8, 16", kv_repeats=1)
    click(at, "下一步 ▶")
    click(at, "运行扫描", timeout=240)
    assert at.title[0].value == "KV 缓存布局：连续、增长、分页"
    texts = rendered_text(at)
    assert any("**第 1 步**（解码）" in x for x in texts)
    assert any(x.startswith("**K3 · 在此无法判断**：") for x in texts)  # one round: the claims' rule, in Chinese
    assert leaks(texts, english_fragments()) == {}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_locality_section_measures_blocks_in_order_and_scattered(app_model, lang):
    """Issue 22 (C12): the table holds the sweep's own medians for each length, and says what was timed."""
    from llmviz.i18n.translator import translate

    at = open_layouts(app_model, lang=lang, kv_model="home", kv_repeats=1)
    at.button(key="kv_locality_run").click().run(timeout=300)
    assert not at.exception
    result = at.session_state["llmviz_locality"][1]
    frame = next(d.value for d in at.dataframe if translate(lang, "locality.col_scattered") in d.value.columns)
    assert list(frame[translate(lang, "locality.col_tokens")]) == result["lengths"]
    first = result["ms_per_token"]["scattered"]
    assert frame[translate(lang, "locality.col_scattered")][0].startswith(f"{first['median'][0]:.3f} (")
    assert any(translate(lang, "timed.locality", steps=8, repeats=1, factor=4) in c.value for c in at.caption)
    # the prefetch loop tied to it: in order, the pool's blocks 0, 1, 2, ... (a fixed stride); scattered, the run's
    # own table, the same count of blocks from a pool four times larger; the sentence reads the table's ratio
    from page_probes import charts

    longest = result["lengths"][-1]
    order = charts(at)[translate(lang, "locality.order_title", tokens=longest, block=16)]
    blocks = -(-longest // 16)  # the blocks the longest run's cache holds, its decode steps' included
    in_order, scattered = (tr["y"] for tr in order["data"])
    assert list(in_order) == list(range(len(in_order))) and len(in_order) >= blocks
    pool = 4 * -(-result["max_seq"] // 16)  # four times the blocks a sequence of max_seq needs
    assert len(scattered) == len(in_order) and max(scattered) < pool and list(scattered) != list(in_order)
    ratio = result["ms_per_token"]["scattered"]["median"][-1] / result["ms_per_token"]["in_order"]["median"][-1]
    assert any(f"{100 * (ratio - 1):+.1f}%" in m.value for m in at.markdown)
