"""Measure while the class thinks: a claim's step starts its measurement on the server as it
opens, once for every visitor (a hundred visitors, one run), shows its rounds so far, and the Reveal after a
prediction reads it in seconds; a recent measurement is not taken again. ClaimFlights with a hand-made run (threads,
events), then the lesson page in AppTest on K9 (counted on the request trace: a real measurement in seconds)."""

from __future__ import annotations

import threading
import time

import pytest
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz.ui import server
from llmviz.ui.claims.claim_flight import AHEAD, ClaimFlights
from llmviz.ui.lesson import lesson_measure
from llmviz.ui.public import LatestClaims


def claim_so_far(rounds: int) -> dict:
    return {"id": "K4", "effects": [{"name": "decode_speedup", "rounds": rounds}]}


def test_a_step_measures_once_shows_its_rounds_and_hands_over_to_the_reveal():
    flights, latest = ClaimFlights(), LatestClaims()
    go, reported, calls = threading.Event(), threading.Event(), []

    def run(report):
        calls.append(1)
        report("K4", claim_so_far(6))
        reported.set()
        go.wait(10)
        report("K4", claim_so_far(12))
        return {"K4": {"claim": claim_so_far(12), "when": "now", "at": time.time()}}

    assert flights.ahead(latest, "K4", run, fresh_s=600)
    assert reported.wait(10)
    state = flights.so_far("K4")
    assert state["rounds"] == 6 and state["claim"]["effects"][0]["rounds"] == 6
    assert flights.measuring("K4") == AHEAD
    assert not flights.ahead(latest, "K4", run, fresh_s=600)  # a second visitor: no second run
    got = []

    def reveal():  # a Reveal pressed while the step's run goes on waits for it, then reads it
        with flights.turn(latest, "K4", "session-1", wait_s=10) as entry:
            got.append(entry)

    waiter = threading.Thread(target=reveal)
    waiter.start()
    time.sleep(0.3)
    assert not got  # still waiting on the run ahead
    go.set()
    waiter.join(10)
    assert got[0]["claim"]["effects"][0]["rounds"] == 12 and calls == [1]
    assert flights.so_far("K4") is None and flights.measuring("K4") is None
    assert not flights.ahead(latest, "K4", run, fresh_s=600)  # recent: not measured again
    assert flights.ahead(latest, "K4", lambda report: None, fresh_s=0)  # stale: measured again (here: nothing kept)


def test_a_failed_run_ahead_leaves_the_claim_to_the_reveal():
    from llmviz.errors import LlmvizError

    flights, latest = ClaimFlights(), LatestClaims()

    def fails(report):
        raise LlmvizError("out of memory")

    assert flights.ahead(latest, "K6", fails, fresh_s=600)
    deadline = time.monotonic() + 10
    while flights.measuring("K6") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert flights.measuring("K6") is None and latest.get("K6") is None
    with flights.turn(latest, "K6", "session-1", wait_s=1) as entry:
        assert entry is None  # this session measures it now


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the lesson runs the embedded model")
def test_the_lesson_measures_as_the_step_opens_and_the_reveal_reads_it(monkeypatch):
    from llmviz import service

    monkeypatch.setenv(lesson_measure.AHEAD_ENV, "step")  # not the next claim too
    server.latest_claims.clear()
    lesson_measure.flights.clear()
    real, calls = service.measure.claims, []

    def counted(*args, **kwargs):
        calls.append(args[0] if args else kwargs.get("ids"))
        return real(*args, **kwargs)

    monkeypatch.setattr(service.measure, "claims", counted)
    first = open_app(page_file("lesson"), model="llmviz-tiny", lesson="5.3")  # K9's step: measured as it opens
    second = open_app(page_file("lesson"), model="llmviz-tiny", lesson="5.3")  # another visitor: no second run
    deadline = time.monotonic() + 120
    while server.latest_claims().get("K9") is None and time.monotonic() < deadline:
        time.sleep(0.2)
    entry = server.latest_claims().get("K9")
    assert entry is not None and entry["claim"]["id"] == "K9" and calls == ["K9"]
    began = time.monotonic()
    second.slider(key="lesson_predict_K9").set_value(30.0).run()
    second.button(key="lesson_reveal_K9").click().run()
    waited = time.monotonic() - began
    assert not second.exception, [e.value for e in second.exception]
    kept = second.session_state[lesson_measure.REVEALED_KEY]["K9"]
    assert kept["source"] == "server" and kept["when"] == entry["when"] and calls == ["K9"]
    assert kept["measured"] == entry["claim"]["effects"][0]["measured"] and waited < 5.0
    first.run()  # the first visitor's page again: nothing measured again (recent)
    assert calls == ["K9"]
    lesson_measure.flights.clear()
    server.latest_claims.clear()


def k4_figures(rounds: int) -> dict:
    a = [10.0 + 0.1 * (i % 3) for i in range(rounds)]
    b = [5.0 + 0.05 * (i % 4) for i in range(rounds)]
    spread = lambda ms: {"median": sorted(ms)[len(ms) // 2], "min": min(ms), "max": max(ms), "all": ms}  # noqa: E731
    return {"model": "gpt2-124m-random", "device": "cpu", "threads": 1, "specs": ["a", "b"],
            "decode_ms_per_token": [spread(a), spread(b)], "kv_bytes_allocated": [1000, 500],
            "looks": {"batch": 6, "batches": 8}}


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the lesson runs the embedded model")
def test_a_reveal_before_the_run_ends_shows_the_rounds_so_far_then_the_end(monkeypatch):
    """Issue 48: a Reveal pressed while the step's run still measures waits at most a few seconds, then shows the
    claim on the rounds so far (6 of K4's), and the final measurement (12 rounds) replaces it when the run ends."""
    from llmviz import service

    monkeypatch.setenv(lesson_measure.AHEAD_ENV, "step")  # not the next claim too
    monkeypatch.setattr(lesson_measure, "REVEAL_WAIT_S", 1.0)
    server.latest_claims.clear()
    lesson_measure.flights.clear()
    release, first_batch = threading.Event(), threading.Event()

    def slow_claims(ids, quick=True, device="auto", load_fn=None, progress=None, patience=1.0, on_batch=None):
        on_batch("K4", k4_figures(6))
        first_batch.set()
        release.wait(30)
        return {"quick": True, "threads": 1, "seconds": {"K4": 9.0}, "claims": {"K4": k4_figures(12)}}

    monkeypatch.setattr(service.measure, "claims", slow_claims)
    at = open_app(page_file("lesson"), model="llmviz-tiny", lesson="2.2.2")
    assert first_batch.wait(10)
    began = time.monotonic()
    at.button(key="lesson_reveal_K4").click().run()
    assert time.monotonic() - began < 5.0 and not at.exception, [e.value for e in at.exception]
    kept = at.session_state[lesson_measure.REVEALED_KEY]["K4"]
    assert kept["source"] == "so_far" and kept["rounds"] == 6
    release.set()
    deadline = time.monotonic() + 10
    while server.latest_claims().get("K4") is None and time.monotonic() < deadline:
        time.sleep(0.1)
    at.run()
    kept = at.session_state[lesson_measure.REVEALED_KEY]["K4"]
    assert kept["source"] == "server" and kept["rounds"] == 12
    lesson_measure.flights.clear()
    server.latest_claims.clear()


@pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the lesson runs the embedded model")
def test_a_reveal_before_the_first_batch_waits_seconds_and_says_it_is_measuring(monkeypatch):
    """Issue 48: a run ahead with no batch yet (a GPT-2-shape decode pair's first batch outlasts a student's thought
    on a 2-core CPU) does not hold the Reveal: it says the claim is being measured, then shows the first batch."""
    from llmviz import service
    from llmviz.i18n.translator import translate

    monkeypatch.setenv(lesson_measure.AHEAD_ENV, "step")  # not the next claim too
    monkeypatch.setattr(lesson_measure, "REVEAL_WAIT_S", 0.5)
    server.latest_claims.clear()
    lesson_measure.flights.clear()
    started, batch, release = threading.Event(), threading.Event(), threading.Event()

    def slow_claims(ids, quick=True, device="auto", load_fn=None, progress=None, patience=1.0, on_batch=None):
        started.set()
        batch.wait(30)
        on_batch("K4", k4_figures(6))
        release.wait(30)
        return {"quick": True, "threads": 1, "seconds": {"K4": 9.0}, "claims": {"K4": k4_figures(12)}}

    monkeypatch.setattr(service.measure, "claims", slow_claims)
    at = open_app(page_file("lesson"), model="llmviz-tiny", lesson="2.2.2", lang="en")
    assert started.wait(10)
    began = time.monotonic()
    at.button(key="lesson_reveal_K4").click().run()
    assert time.monotonic() - began < 5.0 and not at.exception, [e.value for e in at.exception]
    kept = at.session_state[lesson_measure.REVEALED_KEY]["K4"]
    assert kept["source"] == "so_far" and kept["measured"] is None
    head = translate("en", "lesson.ahead_after", claim="K4", seconds=0, rounds=0).split("(")[0]
    assert any(i.value.startswith(head) for i in at.info) and not at.success and not at.warning
    batch.set()
    deadline = time.monotonic() + 10
    while (lesson_measure.flights().so_far("K4") or {}).get("rounds", 0) < 6 and time.monotonic() < deadline:
        time.sleep(0.1)
    at.run()  # the follow-up sees the first batch
    assert at.session_state[lesson_measure.REVEALED_KEY]["K4"]["rounds"] == 6
    release.set()
    deadline = time.monotonic() + 10
    while server.latest_claims().get("K4") is None and time.monotonic() < deadline:
        time.sleep(0.1)
    at.run()
    assert at.session_state[lesson_measure.REVEALED_KEY]["K4"]["source"] == "server"
    lesson_measure.flights.clear()
    server.latest_claims.clear()
