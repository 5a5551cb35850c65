"""No text from a file or a link leads outside the app, in a real browser: Chromium
uploads a trace whose card's model name, device and dtype are markdown, HTML and bare URLs, and opens Home, the
lesson (a prefill and a decode step) and the KV layouts page with it; then it opens Home and the KV layouts page
from a link whose ?prompt= and ?seed= are URLs. On every page: no `a[href]` (HTML or SVG: plotly draws its links
in SVG) pointing to another host, and no `img` with another host's source. This is what Streamlit's renderer
(react-markdown, remark-gfm) and plotly.js really do, which tests/support/markup_scan.py imitates. The code before
the fix failed it: Home's Device and Dtype metrics and the lesson's map caption (file), Home's prompt line and the
layouts' prompts (link) drew live links. Slow (~40 s on two cores); skipped where /usr/bin/chromium is absent."""

from __future__ import annotations

import sys

import pytest
from markup_scan import URL, hostile_zip
from ui_helpers import EMBEDDED_WEIGHTS, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import CHROMIUM, AppServer, chromium, exceptions, wait_idle

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium "
                                 "fonts-noto-cjk; never `playwright install`)"),
              pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="records a run of the embedded model")]

# Every link and image of the page whose address leaves the app's own host (127.0.0.1:port).
OUTSIDE_JS = """() => {
  const here = location.host, out = [];
  const outside = (v) => { try { const u = new URL(v, location.href);
    return /^(https?|mailto|xmpp):$/.test(u.protocol) && u.host !== here; } catch (e) { return false; } };
  for (const a of document.querySelectorAll('a')) {
    const href = a.getAttribute('href') || a.getAttribute('xlink:href') ||
                 a.getAttributeNS('http://www.w3.org/1999/xlink', 'href');
    if (href && outside(href)) out.push('a ' + href + ' | ' + (a.textContent || '').slice(0, 60));
  }
  for (const img of document.querySelectorAll('img')) {
    const src = img.getAttribute('src');
    if (src && outside(src)) out.push('img ' + src);
  }
  return out;
}"""


def outside_links(page) -> list[str]:
    page.wait_for_timeout(800)  # let plotly and the markdown settle after the script's run
    return page.evaluate(OUTSIDE_JS)


def go_to(page, path: str) -> None:
    """Switch page inside this browser session (the sidebar's link: the replayed trace stays)."""
    page.locator(f'[data-testid="stSidebarNav"] a[href$="/{path}"]').first.click()
    wait_idle(page, timeout_s=120)


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory):
    from llmviz.engine.loading.model import load_model

    path = tmp_path_factory.mktemp("markup") / "evil [x](https:⁄⁄evil.example).zip"
    path.write_bytes(hostile_zip(load_model("llmviz-tiny")))
    return path


def test_a_hostile_trace_and_link_draw_no_outside_link_or_image(hostile_file):
    seen: dict[str, list[str]] = {}
    with AppServer() as server, chromium() as browser:
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.goto(server.url("trace", model="/no/such/model"))
        wait_idle(page, timeout_s=120)
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(hostile_file))
        page.wait_for_selector('[data-testid="stMetric"]', timeout=60_000)  # the summary of the file
        wait_idle(page, timeout_s=120)
        seen["trace"] = outside_links(page)
        for path in ("", "lesson"):
            go_to(page, path)
            seen[path or "home"] = outside_links(page) + exceptions(page)
        for step in range(4):  # on to a decode step (its map caption names the model too)
            page.locator(".st-key-lesson_next button").first.click()
            wait_idle(page, timeout_s=120)
            seen[f"lesson step {step + 2}"] = outside_links(page) + exceptions(page)
        text = page.locator('[data-testid="stMain"]').inner_text()
        go_to(page, "kv-layouts")
        seen["kv-layouts"] = outside_links(page) + exceptions(page)
        for path in ("", "kv-layouts"):
            page.goto(server.url(path, prompt=f"{URL} www.evil.example me@evil.example", seed=URL))
            wait_idle(page, timeout_s=120)
            seen[f"link {path or 'home'}"] = outside_links(page) + exceptions(page)
    assert "evil" in text  # the card's fields are shown, as text
    assert seen == {name: [] for name in seen}, seen
