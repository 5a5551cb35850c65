"""The classroom stepper in a real browser: what a new user hit, tried as they did it. Debian's chromium
through playwright; skipped where /usr/bin/chromium is absent. The longer walks are marked slow (CI runs them as
its second step: ./scripts/test -m slow)."""

from __future__ import annotations

import sys
import time

import pytest
from ui_helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import CHROMIUM, AppServer, chromium, declared_pages, exceptions, metric, wait_idle, wait_metric_change

from llmviz.i18n.translator import translate

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium "
                                "fonts-noto-cjk; never `playwright install`)")

TYPED = "Once upon a time"


def type_then_click_page(page, link: str, hold_s: float, text: str = TYPED) -> None:
    """Type in the Prompt box and, without clicking anywhere else, press a page in the sidebar: the mouse held
    down `hold_s` seconds (a person's click; 0 is a script's)."""
    box = page.get_by_label(translate("en", "home.prompt"))
    box.click()
    box.fill(text)
    page.get_by_role("link", name=link).hover()
    page.mouse.down()
    time.sleep(hold_s)
    page.mouse.up()
    time.sleep(1.0)
    wait_idle(page, 60)


def home_boxes(page) -> tuple[str, str, str]:
    """(prompt, model, attention) as the Home page shows them."""
    prompt = page.get_by_label(translate("en", "home.prompt")).input_value()
    model = page.get_by_role("textbox", name=translate("en", "home.model")).input_value()
    attention = page.get_by_role("combobox", name=translate("en", "home.attn")).input_value()
    return prompt, model, attention


@pytest.mark.slow  # ~21 s of a browser; the AppTest page tests keep the prompt across pages in the quick suite
def test_typed_prompt_survives_a_page_click():
    """Defect 1: the page changes, and back on Home the typed prompt is there; the model and attention boxes
    keep their values; the run shown is still the one of the applied settings (typing is not running)."""
    decode = translate("en", "nav.decode")
    with AppServer() as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(server.url(""))
        wait_idle(page, 120)
        before = home_boxes(page)
        assert before[1:] == ("llmviz-tiny", "sdpa"), before
        type_then_click_page(page, decode, hold_s=0.12)
        assert page.url.rstrip("/").endswith("/decode"), page.url
        assert page.locator("h1").first.inner_text() == translate("en", "decode.title")
        assert exceptions(page) == []
        assert "prompt=" not in page.url  # the default prompt's run: nothing was applied
        page.get_by_role("link", name=translate("en", "nav.home")).click()
        wait_idle(page, 60)
        assert home_boxes(page) == (TYPED, *before[1:])
        landed = []
        for i in range(9):  # a script's instant click (it lost the page change 2 times in 9): now it goes
            type_then_click_page(page, decode, hold_s=0.0, text=f"{TYPED} {i}")  # (navigation.guard), every time
            landed.append(page.url.rstrip("/").endswith("/decode"))
            page.get_by_role("link", name=translate("en", "nav.home")).click()
            wait_idle(page, 60)
            assert home_boxes(page) == (f"{TYPED} {i}", *before[1:])  # and nothing typed is lost
        assert landed == [True] * 9
        assert exceptions(page) == []


@pytest.mark.slow  # a browser walk of a minute or more: CI's second step
def test_every_page_asks_only_this_server():
    """Defect: the page icon came from fonts.gstatic.com (it fails offline). Every request of every declared
    page, the favicon included, goes to the app's own server."""
    with AppServer() as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url))
        for _, url in declared_pages():
            page.goto(server.url(url))
            wait_idle(page, 120)
        time.sleep(1.0)
        assert any("/decode" in u for u in asked) and len(asked) > 20, asked
        home = server.url().rstrip("/")
        elsewhere = sorted({u for u in asked if not u.startswith((home, "data:", "blob:"))})
        assert elsewhere == [], elsewhere


@pytest.mark.slow  # a browser walk of a minute or more: CI's second step
def test_play_stops_when_the_page_is_left():
    """Defect 6: Play on Decode, then Home: no step is taken any more, and back on Decode it is paused at the
    step it had reached (the Next metric is read from the page)."""
    import re

    with AppServer() as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(server.url("decode"))
        wait_idle(page, 120)
        page.get_by_role("button", name=translate("en", "decode.play")).click()
        time.sleep(2.5)
        page.get_by_role("link", name=translate("en", "nav.home")).click()
        time.sleep(1.0)
        wait_idle(page, 60)
        assert page.locator("h1").first.inner_text() == translate("en", "home.title")
        left_at = int(re.search(r"step=(\d+)", page.url).group(1))
        time.sleep(3.0)  # 3 Play intervals
        assert int(re.search(r"step=(\d+)", page.url).group(1)) == left_at
        page.get_by_role("link", name=translate("en", "nav.decode")).click()
        time.sleep(1.0)
        wait_idle(page, 60)
        assert left_at >= 1 and metric(page, translate("en", "decode.step")) == str(left_at)
        assert page.get_by_role("button", name=translate("en", "decode.play")).count() == 1  # not "Pause"
        time.sleep(2.0)
        assert metric(page, translate("en", "decode.step")) == str(left_at)
        assert exceptions(page) == []


@pytest.mark.slow  # a browser walk of a minute or more: CI's second step
def test_a_click_near_a_prefill_tiles_corner_picks_it_and_brings_the_maps_into_view():
    """Defect 5: a grid tile answered only a click on a small marker at its centre, and the enlarged maps
    stayed far up the page. Click near the corner of layer 1, head 2's tile: the layer and head boxes take
    those values and the maps' header is scrolled into the viewport."""
    prompt = "The list of all the values in this table"
    with AppServer() as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(server.url("prefill", prompt=prompt))
        wait_idle(page, 120)
        grid = page.locator(".st-key-prefill_grid .nsewdrag").first
        grid.scroll_into_view_if_needed()
        wait_idle(page, 30)
        box = grid.bounding_box()
        import numpy as np

        from llmviz import service
        from llmviz.analysis.attention import pool_map
        from llmviz.trace.config import EngineConfig

        n = len(service.models.load("llmviz-tiny", EngineConfig(device="cpu")).tokenizer.encode(prompt))
        tile_h, tile_w = pool_map(np.zeros((n, n)), 24).shape  # as the page pools each map
        x_cell, y_cell = 2 * (tile_w + 1) + 0.15, 1 * (tile_h + 1) + tile_h - 0.85  # near the bottom-left corner
        (x0, x1), (y0, y1) = page.evaluate("""() => { const l = document.querySelector(
            '.st-key-prefill_grid .js-plotly-plot')._fullLayout; return [l.xaxis.range, l.yaxis.range]; }""")
        page.mouse.click(box["x"] + (x_cell - x0) / (x1 - x0) * box["width"],  # y is reversed: y0 is the bottom
                         box["y"] + (y_cell - y1) / (y0 - y1) * box["height"])
        time.sleep(1.0)
        wait_idle(page, 60)
        layer = page.get_by_role("combobox", name=translate("en", "prefill.layer")).input_value()
        head = page.get_by_role("combobox", name=translate("en", "prefill.head")).input_value()
        assert (layer, head) == ("1", "2")
        time.sleep(1.0)  # the smooth scroll
        top = page.locator("#prefill-maps").bounding_box()["y"]
        assert 0 <= top < 720, top
        assert exceptions(page) == []


@pytest.mark.slow  # a browser walk of a minute or more: CI's second step
def test_presenter_view_fits_1280x720_and_steps_with_the_keyboard():
    """Part 2 and 5: at 1280x720 the KV grid and the next-token chart lie inside the viewport without scrolling;
    → and n step forward, ← and p back, Space plays and pauses; in both languages."""
    step_label = {lang: translate(lang, "decode.step") for lang in ("en", "zh")}
    with AppServer() as server, chromium() as browser:
        for lang in ("en", "zh"):
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(server.url("decode", present=1, lang=lang))
            wait_idle(page, 120)
            # the first idle can come before the first run has drawn the page: a key pressed then has no button
            assert wait_metric_change(page, step_label[lang], None, 120) == "0"
            for key in (".st-key-kvgrid", ".st-key-dist"):
                box = page.locator(key).first.bounding_box()
                assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 720, (lang, key, box)
            assert not page.locator('[data-testid="stSidebar"]').first.is_visible()
            seen = []
            for key in ("ArrowRight", "n", "ArrowRight", "ArrowLeft", "p"):
                page.mouse.click(1270, 10)  # focus on the page, not on a widget
                page.keyboard.press(key)
                time.sleep(0.4)
                wait_idle(page, 60)
                seen.append(metric(page, step_label[lang]))
            assert seen == ["1", "2", "3", "2", "1"], (lang, seen)
            page.keyboard.press("Space")  # Play
            time.sleep(3.0)
            page.keyboard.press("Space")  # Pause
            time.sleep(1.0)
            wait_idle(page, 60)
            played = int(metric(page, step_label[lang]))
            assert played > 1, (lang, played)
            time.sleep(1.5)
            assert int(metric(page, step_label[lang])) == played  # paused
            assert exceptions(page) == []
            page.screenshot(path=f"/tmp/llmviz-presenter-{lang}.png")
            page.close()
