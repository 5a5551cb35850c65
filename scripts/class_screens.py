"""The README guide's screenshots of a class in one room, taken from a real run: one app on this machine
(the embedded model, a class store in a temporary folder), a projector at 1280x720 in the presenter view and phones
at 390x844 in Debian's Chromium. Three phones join and predict K4 (x1.50, x2.00, x2.00); the projector shows the
votes; at §3.2 each phone sends a prompt, the projector approves and runs them.

    python scripts/class_screens.py [--lang zh|en] [--out docs/images]

Writes class-projector-votes.png, class-projector-gantt.png, class-phone-predict.png, class-phone-result.png (and
prints what it wrote). Every page is checked for an uncaught exception first.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from browser_kit import AppServer, chromium, exceptions, wait_idle  # noqa: E402
from browser_kit import wait_text as shows  # noqa: E402
from lesson_walk import unfocus  # noqa: E402

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "device_scale_factor": 2}
PRESSES = (10, 20, 20)  # the K4 slider from x1.00 in steps of 0.05: x1.50, x2.00, x2.00
PROMPTS = ("济南的冬天", "The list of", "人工智能")


def nav(page, presses: int) -> None:
    for _ in range(presses):
        unfocus(page)
        page.keyboard.press("ArrowRight")
        wait_idle(page, 120)


def take(lang: str, out: Path) -> list[Path]:
    from llmviz.i18n.translator import translate

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory() as folder:
        os.environ["LLMVIZ_CLASS_STORE"] = f"sqlite:///{Path(folder) / 'class.db'}"
        with AppServer(timeout=180) as server, chromium() as browser:
            projector = browser.new_page(viewport={"width": 1280, "height": 720})
            projector.goto(server.url("lesson", lang=lang, present=1, lesson="2.2.1"))
            wait_idle(projector, 180)
            projector.locator(".st-key-class_start button").first.click()
            wait_idle(projector, 60)
            code = re.search(r"room=([A-Z0-9]{6})", projector.url).group(1)
            phones = []
            for _ in PRESSES:
                phone = browser.new_context(**PHONE).new_page()
                phone.goto(server.url("lesson", room=code, lang=lang))
                wait_idle(phone, 180)
                phones.append(phone)
            nav(projector, 1)  # 2.2.2: K4's prediction
            for phone, presses in zip(phones, PRESSES, strict=True):
                shows(phone, "K4")
                wait_idle(phone, 60)
                thumb = phone.locator(".st-key-lesson_predict_K4 input[type=range]").first
                thumb.focus()
                for _ in range(presses):
                    thumb.press("ArrowRight")
                wait_idle(phone, 60)
            shows(projector, translate(lang, "class.answered", n=len(phones), joined=len(phones)))
            projector.locator(".st-key-llmviz_class_shown_K4 label").first.click()
            wait_idle(projector, 60)
            projector.locator(".st-key-class-histogram").first.scroll_into_view_if_needed()
            written += [out / "class-projector-votes.png", out / "class-phone-predict.png"]
            projector.screenshot(path=str(written[-2]))
            phones[0].screenshot(path=str(written[-1]))
            nav(projector, 4)  # 2.2.3, 3.1.1, 3.1.2, 3.2.1: the class is the workload
            for phone, text in zip(phones, PROMPTS, strict=True):
                shows(phone, translate(lang, "class.prompt"))
                wait_idle(phone, 60)
                phone.locator(".st-key-class_prompt input").first.fill(text)
                phone.locator(".st-key-class_send button").first.click()
                wait_idle(phone, 60)
            projector.reload()  # the reloaded tab leads once the old one is silent (3 s)
            wait_idle(projector, 120)
            projector.wait_for_selector(".st-key-class_take_lead", state="detached", timeout=15_000)
            wait_idle(projector, 60)
            projector.locator(".st-key-class_review_here button").first.click()
            projector.locator(".st-key-class_approve button").first.click()
            wait_idle(projector, 60)
            projector.locator(".st-key-class_run button").first.click()
            projector.wait_for_selector(".st-key-class-gantt [data-testid=stPlotlyChart]", timeout=120_000)
            wait_idle(projector, 60)
            projector.locator(".st-key-class-gantt").first.scroll_into_view_if_needed()
            for phone in phones:
                shows(phone, translate(lang, "class.ttft"))
            phones[0].locator(".st-key-class-mine").first.scroll_into_view_if_needed()
            written += [out / "class-projector-gantt.png", out / "class-phone-result.png"]
            projector.screenshot(path=str(written[-2]))
            phones[0].screenshot(path=str(written[-1]))
            thrown = [e for p in (projector, *phones) for e in exceptions(p)]
            if thrown:
                raise RuntimeError(f"an exception on a page: {thrown[:3]}")
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=("zh", "en"), default="zh")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    for path in take(args.lang, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
