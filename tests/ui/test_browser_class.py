"""A class in one room in real browsers through `scripts/serve-class`: two replicas behind HAProxy, one
class store (a SQLite file), a projector at 1280x720 and two phone-sized students (390x844) in Debian's Chromium.
The students join from the projector's link and follow the teacher's step; their predictions reach the projector,
whose count says so and whose histogram draws them; at §3.2 their prompts, approved and run, reach the projector's
Gantt under their names, and each phone shows its own request's time to first token. Slow (two cold replicas, three
browsers): CI runs it second.
Skipped where Chromium or HAProxy is absent."""

from __future__ import annotations

import contextlib
import re
import sys

import pytest
from balancer_helpers import Relay
from ui_helpers import ROOT

sys.path.insert(0, str(ROOT / "scripts"))
from browser_kit import CHROMIUM, chromium, exceptions, free_port, wait_idle
from browser_kit import wait_text as shows
from lesson_walk import expected_title, unfocus
from serve_class import Class, find_haproxy

from llmviz.i18n.translator import translate

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is absent (apt-get install -y chromium)"),
              pytest.mark.skipif(find_haproxy() is None, reason="HAProxy is absent (apt-get install -y haproxy)")]
TITLES = "() => Array.from(document.querySelectorAll('[data-testid=stMain] h3')).map(h => h.innerText.trim())"


def title(step: str) -> str:
    return expected_title("zh", step)


@pytest.fixture(scope="module")
def lesson_class(tmp_path_factory, monkeypatch_module):
    folder = tmp_path_factory.mktemp("class")
    monkeypatch_module.setenv("LLMVIZ_CLASS_STORE", f"sqlite:///{folder / 'class.db'}")  # the replicas inherit it
    port = free_port()
    (folder / "logs").mkdir()
    with Class(2, port, log_dir=folder / "logs") as _, chromium() as browser, Relay(port, "127.0.0.2") as relay:
        base = f"http://127.0.0.1:{port}"
        projector = browser.new_page(viewport={"width": 1280, "height": 720})
        watch = Counted(folder / "class.db")
        projector.goto(f"{base}/lesson?lang=zh&present=1&lesson=2.2.1")
        wait_idle(projector, 180)
        projector.locator(".st-key-class_start button").first.click()
        wait_idle(projector, 60)
        code = re.search(r"room=([A-Z0-9]{6})", projector.url).group(1)
        phones = []
        for through in (base, f"http://127.0.0.1:{relay.listen_port}"):  # the second student: another address
            phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True).new_page()
            phone.goto(f"{through}/lesson?room={code}&lang=zh")
            wait_idle(phone, 180)
            phones.append(phone)
        record = {"code": code, "joined": [p.evaluate(TITLES) for p in phones], "counted": watch.done()}
        again = phones[0].context.new_page()  # the first phone's browser opens the join link again: its own seat
        again.goto(f"{base}/lesson?room={code}&lang=zh")
        wait_idle(again, 180)
        record["seats"] = (store_of(folder).students(code), again.locator("[data-testid=stCaptionContainer]")
                           .all_inner_texts(), phones[0].locator("[data-testid=stCaptionContainer]").all_inner_texts())
        again.close()
        unfocus(projector)
        projector.keyboard.press("ArrowRight")  # the teacher's next step: 2.2.2, K4's prediction
        wait_idle(projector, 60)
        for phone in phones:
            shows(phone, title("2.2.2"))
            wait_idle(phone, 60)
        record["followed"] = [p.evaluate(TITLES) for p in phones]
        for phone, presses in zip(phones, (10, 20), strict=True):  # x1.00 -> x1.50 and x2.00 (steps of 0.05)
            thumb = phone.locator('.st-key-lesson_predict_K4 input[type=range]').first
            for _ in range(3):  # a rerun mid-presses may take the thumb's focus: press on from where it stands
                thumb.focus()
                left = presses - round((float(thumb.input_value()) - 1.0) / 0.05)
                if left <= 0:
                    break
                for _ in range(left):
                    thumb.press("ArrowRight")
                wait_idle(phone, 60)
        shows(projector, translate("zh", "class.answered", n=2, joined=2))
        projector.locator(".st-key-llmviz_class_shown_K4 label").first.click()
        wait_idle(projector, 60)
        histogram = ".st-key-class-histogram [data-testid=stPlotlyChart]"
        with contextlib.suppress(Exception):  # drawn by the run the click starts: give it the time a chart takes
            projector.wait_for_selector(histogram, timeout=15_000)
        record["histogram"] = projector.locator(histogram).count()
        for _ in range(4):  # 2.2.3, 3.1.1, 3.1.2, then 3.2.1: the class is the workload
            unfocus(projector)
            projector.keyboard.press("ArrowRight")
            wait_idle(projector, 120)
        for phone, text in zip(phones, ("济南的冬天", "The list of"), strict=True):
            shows(phone, title("3.2.1"))
            wait_idle(phone, 60)
            phone.locator(".st-key-class_prompt input").first.fill(text)
            phone.locator(".st-key-class_send button").first.click()
            wait_idle(phone, 60)
        projector.reload()  # the same browser (its cookie): the reloaded tab leads once the old one is silent 3 s
        wait_idle(projector, 120)
        projector.wait_for_selector(".st-key-class_take_lead", state="detached", timeout=15_000)
        wait_idle(projector, 60)
        record["reloaded"] = (projector.locator(".st-key-class_take_lead").count(), "lesson=3.2.1" in projector.url,
                              projector.locator("[data-testid=stAlertContentInfo]").count())
        projector.locator(".st-key-class_review_here button").first.click()  # the review, on the projector
        projector.locator(".st-key-class_approve button").first.click()
        wait_idle(projector, 60)
        projector.locator(".st-key-class_run button").first.click()
        projector.wait_for_selector(".st-key-class-gantt [data-testid=stPlotlyChart]", timeout=120_000)
        wait_idle(projector, 60)
        record["gantt_rows"] = projector.evaluate(
            "() => Array.from(document.querySelectorAll('.st-key-class-gantt .ytick text')).map(e => e.textContent)")
        for phone in phones:
            shows(phone, translate("zh", "class.ttft"), timeout_s=30)
        record["mine"] = [p.locator(".st-key-class-mine").first.inner_text() for p in phones]
        record["exceptions"] = [exceptions(p) for p in (projector, *phones)]
        record["stored"] = sorted(store_of(folder).predictions(code, "K4", 1).values())
        projector.screenshot(path=str(folder / "projector.png"))
        phones[0].screenshot(path=str(folder / "phone.png"))
    return record


def store_of(folder):
    from llmviz.classroom.stores import open_store  # what the replicas wrote, read from the file itself

    return open_store(f"sqlite:///{folder / 'class.db'}")


class Counted:
    """The class's limits' counters as the replicas write them, {key: the highest count seen} (the client each one
    counted), read every 0.2 s while the class runs: a window's row goes at the next count after its minute."""

    def __init__(self, path):
        import threading

        self.path, self.seen, self.stop = path, {}, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        import sqlite3

        while not self.stop.wait(0.2):
            try:
                with sqlite3.connect(self.path) as db:
                    rows = db.execute("SELECT key, count FROM hits").fetchall()
            except sqlite3.Error:  # the file is made by the first replica's store
                continue
            for key, n in rows:
                self.seen[key] = max(n, self.seen.get(key, 0))

    def done(self) -> dict[str, int]:
        self.stop.set()
        self.thread.join()
        return {k: n for k, n in self.seen.items() if ":" in k}


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_students_join_and_follow_the_teacher(lesson_class):
    assert all(title("2.2.1") in titles for titles in lesson_class["joined"])
    assert all(title("2.2.2") in titles for titles in lesson_class["followed"])


def test_each_student_is_counted_as_its_own_address_behind_the_balancer(lesson_class):
    """Issue 47, finding 1: behind serve-class every student was one client. The balancer writes the address it
    saw; the replicas trust it from HAProxy alone, so the two students count as 127.0.0.1 and 127.0.0.2."""
    counted = lesson_class["counted"]
    assert counted.get("seat:127.0.0.1") == 1 and counted.get("seat:127.0.0.2") == 1
    assert counted.get("join:127.0.0.1") == 1 and counted.get("join:127.0.0.2") == 1


def test_a_browser_opening_the_link_again_keeps_its_one_seat(lesson_class):
    students, again, first = lesson_class["seats"]
    assert len(students) == 2  # the second tab of the first phone's browser took no third seat
    name = next(c for c in first if " · " in c)
    assert name in again  # the same student, by name, on both tabs


def test_the_class_is_the_workload(lesson_class):
    """Each student's request reaches the Gantt under their name, and its time to first token shows on its phone;
    the projector reloaded still leads the class (no "Lead from here"; its Run is there)."""
    assert lesson_class["reloaded"] == (0, True, 0)
    assert len(lesson_class["gantt_rows"]) == 2 and all(row.strip() for row in lesson_class["gantt_rows"])
    assert all(translate("zh", "class.ttft") in text and " ms" in text for text in lesson_class["mine"])


def test_their_predictions_reach_the_projector(lesson_class):
    assert lesson_class["stored"] == pytest.approx([1.5, 2.0])  # ten and twenty presses of 0.05 from x1.00
    assert lesson_class["histogram"] == 1
    assert lesson_class["exceptions"] == [[], [], []]
