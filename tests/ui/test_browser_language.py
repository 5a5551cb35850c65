"""The interface opens in the browser's language (navigator.language) when a link names none: a Chinese browser
sees the Chinese Home, its heading and 济南的冬天 as the prompt, and the URL then carries lang=zh; an English
browser sees English; a link's own lang= wins over the browser. Real Chromium with its locale set (playwright's
browser context), since only a browser sends the locale. Skipped where /usr/bin/chromium is absent."""

from __future__ import annotations

import sys
import urllib.parse

import pytest
from ui_helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import CHROMIUM, AppServer, chromium, exceptions, wait_idle

from llmviz.i18n.translator import translate
from llmviz.ui.settings import DEFAULT_PROMPTS, language_of

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium "
                                "fonts-noto-cjk; never `playwright install`)")


@pytest.mark.parametrize(("locale", "lang"), [
    ("zh-CN", "zh"), ("zh", "zh"), ("zh-Hant-TW", "zh"), ("ZH_cn", "zh"), ("en-US", "en"), ("en", "en"),
    ("fr-FR", None), ("", None), (None, None), ("zhx", None), ("english", None),
])
def test_a_locale_names_the_language_it_asks_for(locale, lang):
    assert language_of(locale) == lang


def opened(browser, url: str, locale: str) -> tuple[str, dict, int]:
    """The first h1 of the page a browser in `locale` opens at `url`, the URL's query after the first run, and the
    exception boxes shown."""
    context = browser.new_context(locale=locale, viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(url)
        wait_idle(page, timeout_s=90)
        page.wait_for_selector("h1", timeout=30_000)
        heading = page.locator("h1").first.inner_text().strip()
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(page.url).query))
        return heading, query, len(exceptions(page))
    finally:
        context.close()


@pytest.mark.slow  # ~12 s of a browser: the default suite stays under 10 minutes on CI's 2 cores
def test_the_browsers_language_opens_unless_the_link_names_one():
    with AppServer() as server, chromium() as browser:
        heading, query, errors = opened(browser, server.url(), "zh-CN")
        assert (heading, query.get("lang"), errors) == (translate("zh", "home.title"), "zh", 0)
        assert query.get("prompt", DEFAULT_PROMPTS["zh"]) == "济南的冬天"  # the article's example, left out as default
        heading, query, errors = opened(browser, server.url(), "en-US")
        assert (heading, query.get("lang", "en"), errors) == (translate("en", "home.title"), "en", 0)
        heading, query, errors = opened(browser, server.url(lang="en"), "zh-CN")  # the link's language wins
        assert (heading, query.get("lang", "en"), errors) == (translate("en", "home.title"), "en", 0)
