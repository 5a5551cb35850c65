"""Walk the whole lesson in a real browser with the keyboard: → and Space forward (alternately), ← once
back and forward again, in the presenter view; at each step check the URL's position, the step's title, the
live panel's control and chart inside the first screen (a Reveal's verdict too) and no exception, and time
key-to-drawn (the key pressed until the step's title shows with the script idle). Optionally a screenshot of each
chapter's first step, and Reveal on some claims.
Shared by the browser test (tests/ui/test_browser_lesson.py) and the benchmark (bench/lesson.py).
"""

from __future__ import annotations

import contextlib
import statistics
import time
import urllib.parse
from pathlib import Path

from browser_kit import IDLE, exceptions, wait_idle

from llmviz.i18n.translator import translate
from llmviz.ui.lesson.lesson_steps import END, POSITIONS, STEPS

PANEL = ".st-key-lesson-panel"
VERDICT = ".st-key-lesson-verdict"
# The bottoms (px) of the first control and the first chart or table in the live panel's column (null: none there).
FIRST_SCREEN_JS = """() => {
 const col = document.querySelector('.st-key-lesson-panel [data-testid="stColumn"]');
 if (!col) return null;
 const first = (sel) => Array.from(col.querySelectorAll(sel)).map(e => e.getBoundingClientRect())
   .filter(r => r.height > 0).map(r => Math.round(r.bottom))[0] ?? null;
 return {control: first('[data-testid="stSlider"], [data-testid="stButtonGroup"], [data-testid="stCheckbox"], '
                        + '[data-testid="stSelectbox"], [data-testid="stButton"], [data-testid="stRadio"]'),
         chart: first('[data-testid="stPlotlyChart"], [data-testid="stDataFrame"], [data-testid="stTable"]')};
}"""


def position(url: str) -> str | None:
    return (urllib.parse.parse_qs(urllib.parse.urlparse(url).query).get("lesson") or [None])[0]


def expected_title(lang: str, pos: str) -> str | None:
    step = next((s for s in STEPS if s.id == pos), None)
    if step is None:
        return translate(lang, "lesson.end_title")
    return f"§{step.section} · {translate(lang, f'lesson.{step.id}.title')}"


def press(page, key: str, lang: str, to: str, timeout_s: float = 30) -> float:
    """Press `key`, wait until step `to` is drawn (its title shown, the script idle); seconds taken."""
    title = expected_title(lang, to)
    began = time.perf_counter()
    page.keyboard.press(key)
    try:
        page.wait_for_function(
            "([title, idle]) => Array.from(document.querySelectorAll('[data-testid=\"stMain\"] h3'))"
            ".some(h => h.innerText.trim() === title) && document.querySelector(idle) !== null",
            arg=[title, IDLE], polling="raf", timeout=timeout_s * 1000)
    except Exception as exc:
        shown = page.evaluate("() => Array.from(document.querySelectorAll('[data-testid=\"stMain\"] h3'))"
                              ".map(h => h.innerText.trim())")
        raise AssertionError(f"{key!r} to {to}: wanted {title!r}, shown {shown}, at {page.url}") from exc
    took = time.perf_counter() - began
    wait_idle(page, timeout_s)
    return took


# The panel's metric labels and values cut short by an ellipsis (their text wider than their box)
CUT_JS = """() => Array.from(document.querySelectorAll(['stMetricLabel', 'stMetricValue'].map(
  id => `.st-key-lesson-panel [data-testid=${id}], .st-key-lesson-panel [data-testid=${id}] *`).join(', ')))
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText.trim())"""


# The step's layout: its title's top, the top of the panel's first chart, metric or control, the headings inside the
# panel (the step's title is the page's only one), its tables whose columns run past their box (cut on the right), the
# page scrolling sideways, Back and Next on one row, a chart toolbar shown (px from the top of the screen).
LAYOUT_JS = """() => {
 const top = (e) => e ? Math.round(e.getBoundingClientRect().top) : null;
 const panel = document.querySelector('.st-key-lesson-panel');
 const title = Array.from(document.querySelectorAll('[data-testid="stMain"] h3'))
   .find(h => h.innerText.startsWith('§'));
 const firsts = panel ? Array.from(panel.querySelectorAll('[data-testid="stSlider"], [data-testid="stButtonGroup"], '
   + '[data-testid="stCheckbox"], [data-testid="stSelectbox"], [data-testid="stButton"], [data-testid="stRadio"], '
   + '[data-testid="stMetric"], [data-testid="stPlotlyChart"], [data-testid="stDataFrame"], [data-testid="stTable"], '
   + '.llmviz-chips')).map(e => e.getBoundingClientRect()).filter(r => r.height > 0).map(r => Math.round(r.top)) : [];
 const main = document.querySelector('[data-testid="stMain"]');
 const back = document.querySelector('.st-key-lesson_back'), next = document.querySelector('.st-key-lesson_next');
 return {title_top: top(title), first_top: firsts.length ? Math.min(...firsts) : null,
   headings_in_panel: panel ? Array.from(panel.querySelectorAll('h1, h2'))
     .map(h => h.innerText.trim().slice(0, 40)) : [],
   tables_cut: panel ? Array.from(panel.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller'))
     .filter(e => e.scrollWidth > e.clientWidth + 1).length : 0,
   sideways: document.documentElement.scrollWidth > document.documentElement.clientWidth + 1
     || (main && main.scrollWidth > main.clientWidth + 1),
   nav_one_row: !!(back && next) && Math.abs(back.getBoundingClientRect().top - next.getBoundingClientRect().top) < 4,
   toolbars: Array.from(document.querySelectorAll('.modebar-container')).filter(e => e.offsetParent !== null).length,
   titles_crossed: panel ? Array.from(panel.querySelectorAll('.js-plotly-plot')).filter(p => {
     const a = p.querySelector('.g-gtitle'), b = p.querySelector('.g-ytitle');
     if (!a || !b) return false;
     const r = a.getBoundingClientRect(), s = b.getBoundingClientRect();
     return r.width > 0 && s.width > 0 && r.left < s.right - 1 && s.left < r.right - 1 && r.top < s.bottom - 6
       && s.top < r.bottom - 6; }).length : 0};  // text boxes pad their line: 6 px apart is touching, not over
}"""


def check_step(page, pos: str, height: int) -> dict:
    """What one step shows: the URL's position, the panel's top, the bottoms of its control and of its chart (px),
    whether both are inside the first screen (the lesson's one-screen rule; a panel without a chart, its control),
    its layout (LAYOUT_JS), exceptions."""
    box = page.locator(PANEL).first.bounding_box() if pos != END else None
    bottoms = page.evaluate(FIRST_SCREEN_JS) if pos != END else None
    inside = bool(bottoms) and bottoms["control"] is not None and bottoms["control"] <= height and (
        bottoms["chart"] is None or bottoms["chart"] <= height)
    return {"position": position(page.url), "panel_top": box and round(box["y"]), "bottoms": bottoms,
            "panel_in_first_screen": inside, "cut": sorted(set(page.evaluate(CUT_JS))) if pos != END else [],
            "layout": page.evaluate(LAYOUT_JS) if pos != END else None, "exceptions": exceptions(page)}


def layout_faults(step: dict, height: int, first: bool, phone: bool) -> list[str]:
    """What a step's layout gets wrong (the phone-first rules, and the desktop's): its title outside the top half of
    the first screen (the lesson's first step excepted: its intro comes first), its panel's first chart, metric or
    control outside the first screen, a second heading in the panel, a cut table, a y axis's title running into its
    chart's title, a sideways scroll, Back and Next on two rows, a chart toolbar on a phone."""
    lay, faults = step["layout"], []
    if lay is None:
        return faults
    if not first and (lay["title_top"] is None or lay["title_top"] > height / 2):
        faults.append(f"title at {lay['title_top']} px")
    if lay["first_top"] is None or lay["first_top"] > height:
        faults.append(f"first chart, metric or control at {lay['first_top']} px")
    faults += [f"heading in the panel: {h}" for h in lay["headings_in_panel"]]
    faults += ["a table cut"] * lay["tables_cut"] + ["a y axis's title over its chart's title"] * lay["titles_crossed"]
    faults += ["sideways scroll"] * bool(lay["sideways"]) + ["Back and Next on two rows"] * (not lay["nav_one_row"])
    return faults + ["a chart toolbar"] * (phone and lay["toolbars"])


def verdict_bottom(page) -> int | None:
    """Where a Reveal's verdict ends (px from the top of the screen), None when there is none."""
    box = page.locator(VERDICT).first.bounding_box() if page.locator(VERDICT).count() else None
    return box and round(box["y"] + box["height"])


def walk(page, base_url: str, lang: str = "zh", shots: Path | None = None, height: int = 720,
         reveal: tuple[str, ...] = (), think_s: float = 0.0, width: int = 1280, present: bool = True) -> dict:
    """The walk (in the presenter view, or not: a student's phone); returns per-step checks and times, the median
    key-to-drawn of steps without a measurement, and each Reveal's seconds (pressed think_s seconds after its step
    was drawn: a student predicting)."""
    page.set_viewport_size({"width": width, "height": height})
    page.goto(f"{base_url}lesson?lang={lang}" + ("&present=1" if present else ""))
    wait_idle(page, 180)
    unfocus(page)
    steps, times, reveals, verdicts, states = [], [], {}, {}, {}
    for i, pos in enumerate(POSITIONS):
        if i:
            key = "ArrowRight" if i % 2 else " "
            times.append(press(page, key, lang, pos))
        steps.append(check_step(page, pos, height) | {"key_to_drawn_s": times[-1] if i else None})
        step = STEPS[i] if i < len(STEPS) else None
        if shots is not None and step is not None and (i == 0 or STEPS[i - 1].section != step.section):
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shots / f"lesson_{lang}_{width}_{step.section}.png"))
        if step is not None and step.claim in reveal:
            time.sleep(think_s)  # the server measures the claim meanwhile (measured as its step opens)
            reveals[step.claim] = round(click_to_idle(page, f".st-key-lesson_reveal_{step.claim} button"), 2)
            verdicts[step.claim] = verdict_bottom(page)
            states[step.claim] = reveal_state(page, lang, step.claim)
            unfocus(page)
    back = press(page, "ArrowLeft", lang, POSITIONS[-2])
    back_at = position(page.url)
    forward = press(page, "ArrowRight", lang, END)
    if shots is not None:
        page.screenshot(path=str(shots / f"lesson_{lang}_{width}_end.png"))
    plain = [s["key_to_drawn_s"] for s, p in zip(steps, POSITIONS, strict=True)
             if s["key_to_drawn_s"] is not None and p not in reveal_positions(reveal)]
    faults = {p: f for i, (s, p) in enumerate(zip(steps, POSITIONS, strict=True))
              if (f := layout_faults(s, height, first=i == 0, phone=width < 640))}
    return {"lang": lang, "viewport": [width, height], "steps": steps, "layout_faults": faults,
            "back_position": back_at,
            "back_s": round(back, 3), "forward_s": round(forward, 3),
            "median_key_to_drawn_s": round(statistics.median(plain), 3), "max_key_to_drawn_s": round(max(plain), 3),
            "reveal_s": reveals, "verdict_bottom": verdicts, "reveal_state": states}


def reveal_state(page, lang: str, claim: str) -> str:
    """What a Reveal showed: "final" (the run's verdict), "so_far" (a verdict on the rounds so far, the run still
    going: its caption says so) or "measuring" (no figures yet: the run had no batch)."""
    if not page.locator(VERDICT).count():
        return "measuring"
    going = translate(lang, "lesson.ahead_after", claim=claim, seconds=0, rounds=0)
    prefix = going.replace("（", "(").split("(")[0].strip()
    return "so_far" if page.get_by_text(prefix).count() else "final"


def click_to_idle(page, selector: str, timeout_s: float = 120) -> float:
    """Click, then seconds until the script that click started is idle again: the moment idle is first seen (not
    wait_idle's settling time after it, nor a fixed wait for the run to start, which the first version counted). A
    click that starts no run, or one over before it is seen running, would count the 2 s that waiting took: a Reveal
    runs for longer than that (it measures, or draws the figures it reuses)."""
    from playwright.sync_api import TimeoutError as NotSeen

    began = time.perf_counter()
    page.locator(selector).click()
    with contextlib.suppress(NotSeen):  # the run begins: the app leaves idle (unless it ran and finished unseen)
        page.wait_for_selector(IDLE, state="detached", timeout=2000)
    page.wait_for_selector(IDLE, state="attached", timeout=timeout_s * 1000)
    took = time.perf_counter() - began
    wait_idle(page, timeout_s)  # and it stays idle (no rerun follows)
    return took


def reveal_positions(claims: tuple[str, ...]) -> set[str]:
    """The positions whose step measured something (the one after a Reveal is timed as usual)."""
    return {s.id for s in STEPS if s.claim in claims}


def unfocus(page) -> None:
    """Keys to the page, not to a widget (a clicked button keeps the focus)."""
    page.evaluate("() => { if (document.activeElement) document.activeElement.blur(); }")
