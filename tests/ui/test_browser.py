"""One real browser: Debian's chromium through playwright opens the Decode page, presses Next 3 times and
sees the KV cache grow by exactly 3 with no exception box, then Play advances on its own until Pause; and
it runs one preset comparison on the Compare page end to end. Skipped where /usr/bin/chromium is absent."""

from __future__ import annotations

import sys

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, PROMPT, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import (
    CHROMIUM,
    METRIC_JS,
    AppServer,
    chromium,
    declared_pages,
    exceptions,
    metric,
    stepper_button,
    wait_idle,
    wait_metric_change,
    wait_metric_count,
)

from llmviz.i18n.translator import translate

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium "
                                "fonts-noto-cjk; never `playwright install`)")


def decode_url_path() -> str:
    found = [url for file, url in declared_pages() if file.endswith("decode.py")]
    assert len(found) == 1, "app.py declares no Decode page with a url_path"
    return found[0]


@pytest.mark.slow  # ~23 s of a browser: with the other browser walks in the slow checks CI runs second
def test_next_three_times_grows_the_kv_cache_by_three(app_model):
    query = {"prompt": PROMPT} if EMBEDDED_WEIGHTS.exists() else {"model": app_model, "prompt": PROMPT}
    kv_label = translate("en", "decode.kv_len")
    with AppServer() as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(server.url(decode_url_path(), **query))
        wait_idle(page)
        first = wait_metric_change(page, kv_label, None, 60)  # under load a metric can lag the idle state
        assert first is not None and first.isdigit(), f"no integer '{kv_label}' metric: {first!r}"
        seen = [int(first)]
        for _ in range(3):
            stepper_button(page, "next").click()
            seen.append(int(wait_metric_change(page, kv_label, str(seen[-1]))))
        wait_idle(page)
        assert seen == [seen[0] + i for i in range(4)], seen  # one new cache row per click, no more, no less
        assert int(metric(page, kv_label)) == seen[0] + 3
        assert exceptions(page) == []
        assert "step=3" in page.url  # the link now reopens this step
        sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
        assert "简体中文" in sidebar, "the shared /decode link ran without app.py (no language switch)"
        # Play advances on its own (a fragment that reruns on a timer) until Pause
        stepper_button(page, "play").click()
        page.wait_for_function("([js, label, want]) => { const v = eval(js)(label); return v && +v >= want; }",
                               arg=[METRIC_JS, kv_label, seen[-1] + 2], timeout=15000)
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        play = translate("en", "decode.play")
        shows_play = "([sel, play]) => (document.querySelector(sel)?.innerText || '').includes(play)"
        for attempt in range(3):  # the fragment redraws the button on every tick: a click can land on a replaced one
            stepper_button(page, "play").click()
            try:  # wait for this click's answer before another: a second click while it is on its way plays again
                page.wait_for_function(shows_play, arg=[".st-key-dec_play button", play], timeout=10000)
                break
            except PlaywrightTimeout:
                assert attempt < 2, "three clicks on Pause and it still plays"
        page.wait_for_timeout(1200)  # a timer tick already in flight when Pause was pressed may still land
        wait_idle(page)
        paused = int(metric(page, kv_label))
        page.wait_for_timeout(2500)
        assert int(metric(page, kv_label)) == paused >= seen[-1] + 2
        assert exceptions(page) == []


@pytest.mark.slow  # ~15 s: the default suite stays under 10 minutes on CI's 2 cores
def test_a_preset_comparison_end_to_end(app_model):
    from llmviz.analysis.kv_memory import human

    query = {"prompt": PROMPT} if EMBEDDED_WEIGHTS.exists() else {"model": app_model, "prompt": PROMPT}
    with AppServer() as server, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(server.url("compare", **query))
        wait_idle(page)
        page.get_by_text(translate("en", "preset.kv-fp16"), exact=True).click()
        wait_idle(page)
        page.get_by_role("button", name=translate("en", "compare.run"), exact=True).click()
        kv = wait_metric_count(page, translate("en", "compare.m.kv_used"), 2, timeout_s=120)
        wait_idle(page)
        assert exceptions(page) == []
        assert "cmp_b=kv-dtype%3Dfp16" in page.url and "cmp_run=1" in page.url  # the link reruns it
        shown = page.locator('[data-testid="stMain"]').inner_text()
        assert "Tokens in agreement" in shown and "B: kv-dtype=fp16" in shown
    units = {"B": 1, "KiB": 2**10, "MiB": 2**20}
    a, b = (float(v.split()[0].replace(",", "")) * units[v.split()[1]] for v in kv)
    assert abs(b * 2 - a) <= 0.1 * units[kv[0].split()[1]], kv  # fp16 halves the KV bytes on screen
    assert human(a) == kv[0]
