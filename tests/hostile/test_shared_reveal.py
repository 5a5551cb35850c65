"""A class pressing Reveal together measures a claim once: on a public server a session that
waited in the heavy queue looks the claim up again once its slot is granted, and reads the measurement another
session put meanwhile instead of measuring it a second time (the old code said "Measured now" and ran it again).
tests/ui/test_claim_flight.py checks the per-claim single flight with threads."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from hostile_helpers import TRIED
from ui_helpers import EMBEDDED_WEIGHTS, open_app, page_file

from llmviz.analysis.claim_effects import judged
from llmviz.ui import measure, server
from llmviz.ui.lesson import lesson_measure

pytestmark = pytest.mark.skipif(not EMBEDDED_WEIGHTS.exists(), reason="the lesson runs the embedded model")

WHEN = "2026-12-04 09:00:00"  # the other session's measurement, told apart by its time


def k4() -> dict:
    spread = lambda m: {"median": m, "min": 0.9 * m, "max": 1.1 * m}  # noqa: E731
    return judged("K4", {"model": "llmviz-tiny", "device": "cpu", "threads": 2, "specs": ["a", "b"],
                         "decode_ms_per_token": [spread(10.0), spread(4.0)],
                         "prefill_ms": [spread(1.0), spread(1.0)], "kv_bytes_allocated": [1000, 500]})


def test_a_measurement_put_while_queued_is_read_not_repeated(monkeypatch):
    TRIED["pages"] += 1
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    server.latest_claims.clear()
    lesson_measure.flights.clear()
    real_slot, granted = measure.slot, []

    @contextmanager
    def slot_after_another_session(t):
        """The heavy slot, granted once another session's K4 is in the server's store (it held the slot first)."""
        server.latest_claims().put("K4", {"claim": k4(), "when": WHEN})
        with real_slot(t) as deadline:
            granted.append(True)
            yield deadline

    def no_measurement(*args, **kwargs):
        raise AssertionError("measured again")

    monkeypatch.setattr(measure, "slot", slot_after_another_session)
    from llmviz import service

    monkeypatch.setattr(service.measure, "claims", no_measurement)
    at = open_app(page_file("lesson"), model="llmviz-tiny", lesson="2.2.2")
    assert server.latest_claims().get("K4") is None  # nothing measured yet: this session takes the turn
    at.button(key="lesson_reveal_K4").click().run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    kept = at.session_state[lesson_measure.REVEALED_KEY]["K4"]
    assert granted == [True] and kept["source"] == "server" and kept["when"] == WHEN
    assert kept["measured"] == pytest.approx(1.5)  # 10 ms / 4 ms - 1, the other session's figures
    assert any(WHEN in c.value for c in at.caption)
    assert lesson_measure.flights().measuring("K4") is None  # the turn is handed back
    server.latest_claims.clear()
    lesson_measure.flights.clear()


def test_a_reveal_while_another_session_measures_waits_and_reads_it(monkeypatch):
    """Another session holds K4's turn (measuring it) when this one presses Reveal: this one waits, measures
    nothing, and shows the other's measurement once it is put."""
    import threading

    TRIED["pages"] += 1
    monkeypatch.setenv("LLMVIZ_PUBLIC", "1")
    server.latest_claims.clear()
    lesson_measure.flights.clear()
    from llmviz import service

    monkeypatch.setattr(service.measure, "claims",
                        lambda *a, **k: (_ for _ in ()).throw(AssertionError("measured again")))
    at = open_app(page_file("lesson"), model="llmviz-tiny", lesson="2.2.2")
    flights, latest, holding = lesson_measure.flights(), server.latest_claims(), threading.Event()

    def other_session():
        with flights.turn(latest, "K4", "other", 10) as kept:
            assert kept is None
            holding.set()
            threading.Event().wait(0.5)  # measuring
            flights.put(latest, "K4", {"claim": k4(), "when": WHEN})

    other = threading.Thread(target=other_session)
    other.start()
    assert holding.wait(10)
    at.button(key="lesson_reveal_K4").click().run()
    other.join(10)
    kept = at.session_state[lesson_measure.REVEALED_KEY]["K4"]
    assert not at.exception and not at.error and kept["source"] == "server" and kept["when"] == WHEN
    server.latest_claims.clear()
    lesson_measure.flights.clear()
