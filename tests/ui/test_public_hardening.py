"""Issue 19, the app: no link injects markdown, and on a public server no visitor holds the server (links that
replayed hundreds of steps or ran a comparison on open, a request trace of hours, a measurement with no end,
Streamlit's own 200 MB upload limit, the server's memory shown)."""

from __future__ import annotations

import json

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file, rendered_text

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="runs the embedded model")

IMAGE = "![x](http://evil.example/a.png)"
LINK = "[click](http://evil.example)"
HOSTILE = f"The list of {IMAGE} {LINK}"


def unescaped_links(at) -> list[str]:
    """Every rendered string (markdown, alerts, captions, widget labels and tooltips) where a link or an image
    would render: "](" that no backslash escapes."""
    return [text for text in rendered_text(at) if "](http" in text]


def test_a_prompt_in_the_link_renders_as_text_on_home():
    at = open_app(prompt=HOSTILE)
    assert not unescaped_links(at), unescaped_links(at)
    assert any("evil\\.example" in m.value and "tokens**" in m.value for m in at.markdown)  # shown, as text


def test_the_settings_warning_does_not_echo_a_link_as_markdown():
    at = open_app(seed=IMAGE, temperature=LINK)
    warning = [w.value for w in at.warning if "not valid" in w.value]
    assert warning and "evil" in warning[0] and not unescaped_links(at), warning


def test_the_layouts_tooltip_shows_the_home_prompt_as_text():
    at = open_app(page_file("kv_layouts"), prompt=HOSTILE, kv_prompts="")
    helps = [str(a.proto.help) for a in at.text_area if a.key == "kv_prompts_w"]
    assert helps and "evil\\.example" in helps[0] and not unescaped_links(at), helps


def test_decode_and_compare_pages_show_the_prompt_as_text():
    for page in ("decode", "compare"):
        at = open_app(page_file(page), prompt=HOSTILE, cmp_model="gpt2-124m-random" if page == "compare" else "")
        assert not unescaped_links(at), (page, unescaped_links(at))


def test_a_public_link_opens_at_most_its_step_cap(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_LINK_STEPS", "3")
    at = open_app(prompt="The list of", step=200, temperature=0)  # the run opens (on Home, where the link lands)
    assert at.session_state["llmviz_run"].cursor == 3
    assert any("step 200" in i.value and "at most 3 steps" in i.value for i in at.info), [i.value for i in at.info]
    at.switch_page(page_file("decode")).run()
    assert not at.exception and at.session_state["llmviz_run"].cursor == 3
    assert any("KV cache" in x for x in rendered_text(at))  # the memory panel is drawn ...
    assert not any("RSS" in x for x in rendered_text(at))  # ... without the server's own memory


def test_the_local_tool_replays_the_whole_link_and_shows_rss(monkeypatch):
    monkeypatch.delenv("LLMVIZ_PUBLIC", raising=False)
    at = open_app(page_file("decode"), prompt="The list of", step=5, temperature=0)
    assert at.session_state["llmviz_run"].cursor == 5
    assert any("RSS" in x for x in rendered_text(at))


def test_a_public_layouts_link_is_capped_too(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_LINK_STEPS", "2")
    at = open_app(page_file("kv_layouts"), prompt="The list of", kv_step=100, kv_prompts="")
    assert at.session_state["llmviz_kv_live"].cursor == 2
    assert any("at most 2 steps" in i.value for i in at.info)


def test_a_public_compare_link_waits_for_the_click(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    at = open_app(page_file("compare"), prompt="The list of", cmp_b="kv-layout=paged", cmp_steps=2, cmp_repeats=1,
                  cmp_run=1)
    assert "llmviz_compare" not in at.session_state  # nothing ran on open
    assert any("press **Compare**" in i.value for i in at.info), [i.value for i in at.info]
    next(b for b in at.button if b.label == "Compare").click().run(timeout=300)
    assert not at.exception and "llmviz_compare" in at.session_state  # the link's comparison, pre-filled


def test_public_mode_sets_streamlits_own_upload_limit(monkeypatch):
    from streamlit import config

    before = config.get_option("server.maxUploadSize")
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_MAX_UPLOAD_MB", "3")
    try:
        at = open_app(page_file("serving"))
        at.selectbox(key="serve_trace_w").set_value("upload").run()
        assert config.get_option("server.maxUploadSize") == 3
        assert [u.proto.max_upload_size_mb for u in at.get("file_uploader")] == [3]
    finally:
        config.set_option("server.maxUploadSize", before)


def oversized_trace() -> bytes:
    """40 requests of 5 + 250 tokens: each fits the embedded model's context, 10,200 tokens of work in all."""
    requests = [{"id": i, "arrival_step": 0, "prompt_ids": [412, 87, 1290, 5, 77], "output_len": 250}
                for i in range(40)]
    return json.dumps({"name": "long", "requests": requests}).encode()


def test_a_public_server_refuses_an_oversized_request_trace(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    at = open_app(page_file("serving"))
    at.selectbox(key="serve_model_w").set_value("llmviz-tiny").run()
    at.selectbox(key="serve_trace_w").set_value("upload").run()
    at.file_uploader(key="serve_upload_w").set_value(("long.json", oversized_trace(), "application/json")).run()
    next(b for b in at.button if b.label == "Run static and continuous").click().run(timeout=120)
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("10,200 tokens" in e and "at most 8,192" in e for e in errors), errors
    assert "llmviz_serve_batching" not in at.session_state


def test_a_public_measurement_past_its_limit_stops_and_frees_the_slot(monkeypatch):
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    monkeypatch.setenv("LLMVIZ_HEAVY_LIMIT_S", "0.001")
    at = open_app(page_file("serving"))
    at.selectbox(key="serve_model_w").set_value("llmviz-tiny").run()
    for _ in range(2):  # the second run is not "already running": the first freed its slot
        next(b for b in at.button if b.label == "Run static and continuous").click().run(timeout=120)
        errors = [e.value for e in at.error]
        assert not at.exception and any("took too long" in e and "0.001 s" in e for e in errors), errors
    assert "llmviz_serve_batching" not in at.session_state
