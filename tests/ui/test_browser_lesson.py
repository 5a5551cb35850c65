"""The lesson in a real browser: Debian's chromium drives every step with the keyboard (→ and Space
forward, ← back) in the presenter view at 1280x720, in Chinese: each step reached in order, the URL's `lesson=`
naming it, the live panel's control and chart inside the first screen (in English too), no layout fault, no
exception; one Reveal measured, its verdict inside the first screen, and shown at the end; and the whole lesson on a
390x844 phone, each step read from its first screen.
Slow (a minute on two cores): CI runs it as its second step. Skipped where /usr/bin/chromium is absent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ui_helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import CHROMIUM, AppServer, chromium, wait_idle
from lesson_walk import unfocus, walk

from llmviz.i18n.translator import translate
from llmviz.ui.lesson.lesson_steps import END, POSITIONS, STEP_IDS

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium "
                                 "fonts-noto-cjk; never `playwright install`)")]


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    shots = tmp_path_factory.mktemp("lesson_shots")
    with AppServer() as server, chromium() as browser:
        page = browser.new_page()
        result = walk(page, server.url(""), lang="zh", shots=shots, reveal=("K1",))
        with page.expect_download(timeout=30_000) as info:  # the end's JSON, as the student downloads it
            page.locator(".st-key-lesson_end_json button").click()
        exported = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
        end_text = page.locator('[data-testid="stMain"]').inner_text()
    return result, shots, (end_text, exported)


TABS = "() => Array.from(document.querySelectorAll('.st-key-lesson_side [role=tab]')).map(b => b.ariaSelected)"


@pytest.fixture(scope="module")
def walked_en():
    with AppServer() as server, chromium() as browser:
        page = browser.new_page()
        result = walk(page, server.url(""), lang="en")
        page.goto(server.url("lesson", lang="en", present=1, lesson="1.1.7"))  # a step with one slip
        wait_idle(page)
        unfocus(page)
        tabs = [page.evaluate(TABS)]
        for key in ("s", "m"):  # the slips' tab, then the step's map again: in the browser, no rerun
            page.keyboard.press(key)
            page.wait_for_function(f"() => ({TABS})()[{2 if key == 's' else 0}] === 'true'", timeout=5000)
            tabs.append(page.evaluate(TABS))
        page.keyboard.press("g")  # the glossary's popover
        page.wait_for_function("() => document.querySelectorAll('[data-testid=stTable] tbody tr').length > 0",
                               timeout=5000)
        rows = page.evaluate("() => document.querySelectorAll('[data-testid=stTable] tbody tr').length")
        page.goto(server.url("lesson", lang="en", present=1, lesson="3.1.1"))  # the round trip: the full page
        wait_idle(page)
        page.locator(".st-key-lesson_open button").first.click()
        wait_idle(page)
        opened = page.url
        page.locator(".st-key-lesson_return button").first.click()
        wait_idle(page)
        titles = page.evaluate("() => Array.from(document.querySelectorAll('[data-testid=stMain] h3'))"
                               ".map(h => h.innerText.trim())")
        return result | {"tabs": tabs, "glossary_rows": rows, "trip": (opened, page.url, titles)}


def test_the_full_page_and_back_land_on_the_same_step(walked_en):
    opened, back, titles = walked_en["trip"]
    assert "/batch?" in opened and "from_lesson=1" in opened and "lesson=3.1.1" in opened
    assert "/lesson?" in back and "lesson=3.1.1" in back and "from_lesson" not in back
    assert f"§3.1 · {translate('en', 'lesson.3.1.1.title')}" in titles


def test_s_opens_the_slips_m_the_map_and_g_the_glossary(walked_en):
    from llmviz.analysis.article import GLOSSARY

    assert walked_en["tabs"] == [["true", "false", "false"], ["false", "false", "true"], ["true", "false", "false"]]
    assert walked_en["glossary_rows"] == len(GLOSSARY)


def test_the_keyboard_reaches_every_step_in_order(walked):
    result, _, _ = walked
    seen = [s["position"] for s in result["steps"]]
    # the first page has no lesson= yet (the first step); from then on the URL names each step in the article's order
    assert seen[0] in (None, STEP_IDS[0])
    assert seen[1:] == list(POSITIONS[1:])
    assert result["back_position"] == POSITIONS[-2]  # ← went back exactly one step (then → to the end again)
    assert [s["exceptions"] for s in result["steps"]] == [[]] * len(POSITIONS)


def test_every_panels_control_and_chart_are_inside_the_first_screen(walked, walked_en):
    for result in (walked[0], walked_en):
        outside = [(p, s["bottoms"]) for p, s in zip(POSITIONS, result["steps"], strict=True)
                   if p != END and not s["panel_in_first_screen"]]
        assert outside == [], result["lang"]
        assert [s["exceptions"] for s in result["steps"]] == [[]] * len(POSITIONS), result["lang"]
        assert all(s["bottoms"]["control"] > 0 for p, s in zip(POSITIONS, result["steps"], strict=True) if p != END)
        assert {p: s["cut"] for p, s in zip(POSITIONS, result["steps"], strict=True) if s["cut"]} == {}, result["lang"]


def test_a_reveals_verdict_is_inside_the_first_screen(walked):
    result, _, _ = walked
    assert 0 < result["verdict_bottom"]["K1"] <= 720


def test_a_reveal_lands_on_the_end_page(walked):
    result, shots, (end_text, exported) = walked
    assert 0 < result["reveal_s"]["K1"] < 60
    assert translate("zh", "lesson.end_count", n=1, held=0)[:8] in end_text  # "你揭晓了 1 个结论"
    [k1] = exported["revealed"]  # the claim the student revealed, measured here, beside the article's figure
    assert k1["id"] == "K1" and k1["measured"] is not None and k1["low"] <= k1["measured"] <= k1["high"]
    assert k1["article"] == pytest.approx(68 / 35 - 1, rel=1e-6)
    names = sorted(p.name for p in shots.glob("*.png"))
    assert names[0] == "lesson_zh_1280_1.1.png" and "lesson_zh_1280_end.png" in names and len(names) == 10


def test_no_step_has_a_layout_fault_on_the_desktop(walked, walked_en):
    """At 1280x720: each step's title in the top half, no second heading in its panel, no cut table, no sideways
    scroll, Back and Next on one row (scripts/lesson_walk.layout_faults)."""
    for result in (walked[0], walked_en):
        assert result["layout_faults"] == {}, result["lang"]


@pytest.fixture(scope="module")
def walked_phone(tmp_path_factory):
    """The whole lesson at 390x844 in Chinese, not presenting: a student's phone."""
    with AppServer() as server, chromium() as browser:
        return walk(browser.new_page(), server.url(""), lang="zh", width=390, height=844, present=False)


def test_on_a_phone_every_step_is_read_from_its_first_screen(walked_phone):
    """From the second step on, the step's title in the top half of the first screen and its panel's first chart,
    metric or control inside it; Back, the chapters and Next in one row; no chart toolbar, no table cut, no sideways
    scroll, no exception."""
    assert walked_phone["viewport"] == [390, 844]
    assert [s["position"] for s in walked_phone["steps"]][1:] == list(POSITIONS[1:])
    assert walked_phone["layout_faults"] == {}
    assert [s["exceptions"] for s in walked_phone["steps"]] == [[]] * len(POSITIONS)
    titles = [s["layout"]["title_top"] for s in walked_phone["steps"][1:] if s["layout"]]
    assert len(titles) == len(POSITIONS) - 2 and max(titles) <= 422  # every step but the first and the end
