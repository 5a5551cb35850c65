"""The interface opens in the browser's language (navigator.language) when a link names none: a Chinese browser
sees the Chinese Home, its heading and 济南的冬天 as the prompt, and the URL then carries lang=zh; an English
browser sees English; a link's own lang= wins over the browser. Real Chromium with its locale set (playwright's
browser context), since only a browser sends the locale. Skipped where /usr/bin/chromium is absent."""

from __future__ import annotations

import sys
import urllib.parse
from contextlib import suppress

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from ui_helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import CHROMIUM, AppServer, chromium, exceptions, wait_idle

from llmviz.i18n.translator import translate

PROMPT_SHOWN = "() => { const box = document.querySelector('.st-key-home_prompt textarea'); return box && box.value; }"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium "
                                "fonts-noto-cjk; never `playwright install`)")


def opened(browser, url: str, locale: str) -> tuple[str, dict, int, str]:
    """The first h1 of the page a browser in `locale` opens at `url`, the URL's query after the first run, the
    exception boxes shown and the prompt box's text."""
    context = browser.new_context(locale=locale, viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(url)
        wait_idle(page, timeout_s=90)
        page.wait_for_selector("h1", timeout=30_000)
        heading = page.locator("h1").first.inner_text().strip()
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page.url).query))
        # a rerun may redraw the box just after the app first reads idle: wait for its text (an empty box stays
        # empty, and the assertion says so)
        with suppress(PlaywrightTimeout):
            page.wait_for_function(PROMPT_SHOWN, timeout=10_000)
        prompt = page.locator(".st-key-home_prompt textarea").input_value()
        return heading, query, len(exceptions(page)), prompt
    finally:
        context.close()


@pytest.mark.slow  # ~12 s of a browser: the default suite stays under 10 minutes on CI's 2 cores
def test_the_browsers_language_opens_unless_the_link_names_one():
    with AppServer() as server, chromium() as browser:
        heading, query, errors, prompt = opened(browser, server.url(), "zh-CN")
        assert (heading, query.get("lang"), errors, prompt) == (translate("zh", "home.title"), "zh", 0, "济南的冬天")
        heading, query, errors, prompt = opened(browser, server.url(), "en-US")
        assert (heading, query.get("lang", "en"), errors) == (translate("en", "home.title"), "en", 0)
        assert prompt == "The list of"
        heading, query, errors, prompt = opened(browser, server.url(lang="en"), "zh-CN")  # the link's language wins
        assert (heading, query.get("lang", "en"), errors) == (translate("en", "home.title"), "en", 0)
