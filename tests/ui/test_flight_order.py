"""Runs ahead take turns (ui/claims/claim_flight.py): one measures at a time, holding the server's one
heavy slot; the step opened last goes first, the lesson's next claim after every opened step, and a run gives its
turn between batches to one that goes before it, the slot with it. Hand-made runs on threads, a real HeavyGate of
one slot (a paused run that kept its slot would starve the other: ServerBusyError, and it would never measure)."""

from __future__ import annotations

import threading
import time

from llmviz.analysis.claim_spec import sharing
from llmviz.ui.claims.claim_flight import ClaimFlights
from llmviz.ui.lesson.lesson_measure import next_claims
from llmviz.ui.public import HeavyGate, LatestClaims

WAIT = 10.0


def claim(cid: str, rounds: int) -> dict:
    return {"id": cid, "effects": [{"name": "x", "rounds": rounds}]}


class Runs:
    """Hand-made runs of two batches each, writing what they do to one log; a run's first batch waits for `go`."""

    def __init__(self):
        self.log, self.lock = [], threading.Lock()
        self.started = {}
        self.go = {}
        self.gate = HeavyGate(slots=1)

    def write(self, line: str) -> None:
        with self.lock:
            self.log.append(line)

    def slot(self, name: str):
        return lambda: self.gate.slot(name, 2.0)

    def run(self, cid: str, batches: int = 2):
        self.started[cid], self.go[cid] = threading.Event(), threading.Event()

        def measure(report):
            for b in range(1, batches + 1):
                self.started[cid].set()
                if b == 1:
                    assert self.go[cid].wait(WAIT)
                self.write(f"{cid}.{b}")
                assert self.gate.running == {f"ahead:{cid}"}  # it holds the one slot while it measures
                report(cid, claim(cid, 3 * b))
            return {cid: {"claim": claim(cid, 3 * batches), "when": "now", "at": time.time()}}

        return measure


def wait_for(predicate, seconds: float = WAIT) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def test_the_step_opened_last_goes_first_between_batches_and_the_next_claim_last():
    flights, latest, r = ClaimFlights(), LatestClaims(), Runs()
    assert flights.ahead(latest, "K1", r.run("K1"), 600, slot=r.slot("ahead:K1"))
    assert r.started["K1"].wait(WAIT)  # K1 measures its first batch
    assert flights.ahead(latest, "K6", r.run("K6"), 600, opened=False, slot=r.slot("ahead:K6"))  # the next claim
    assert flights.ahead(latest, "K5", r.run("K5"), 600, slot=r.slot("ahead:K5"))  # a step opened since
    for cid in ("K1", "K5", "K6"):
        r.go[cid].set()
    assert wait_for(lambda: all(latest.get(c) is not None for c in ("K1", "K5", "K6")))
    # K5 between K1's batches; K1 (opened) before the next claim K6
    assert r.log == ["K1.1", "K5.1", "K5.2", "K1.2", "K6.1", "K6.2"]
    assert latest.get("K1")["claim"]["effects"][0]["rounds"] == 6 and not r.gate.running


def test_a_reveal_moves_its_claim_up_and_a_reopened_step_too():
    flights, latest, r = ClaimFlights(), LatestClaims(), Runs()
    assert flights.ahead(latest, "K1", r.run("K1", batches=1), 600, slot=r.slot("ahead:K1"))
    assert r.started["K1"].wait(WAIT)
    assert flights.ahead(latest, "K9", r.run("K9", batches=1), 600, opened=False, slot=r.slot("ahead:K9"))
    assert flights.ahead(latest, "K7", r.run("K7", batches=1), 600, slot=r.slot("ahead:K7"))
    assert flights.ahead(latest, "K8", r.run("K8", batches=1), 600, slot=r.slot("ahead:K8"))
    flights.promote("K9")  # Reveal pressed on K9: it goes first of those waiting
    assert not flights.ahead(latest, "K7", r.run("K7"), 600)  # K7's step opened again: no second run, moved up
    for cid in ("K1", "K7", "K8", "K9"):
        r.go[cid].set()
    assert wait_for(lambda: all(latest.get(c) is not None for c in ("K1", "K7", "K8", "K9")))
    assert r.log == ["K1.1", "K7.1", "K9.1", "K8.1"]


def test_one_run_serves_the_claims_of_one_workload():
    """K2's step measures the kv-fp16 pair for K4 too: both are marked, both entries kept, K4's step starts none."""
    flights, latest, r = ClaimFlights(), LatestClaims(), Runs()
    go = threading.Event()

    def pair(report):
        assert go.wait(WAIT)
        report("K2", claim("K2", 6))
        report("K4", claim("K4", 6))
        return {c: {"claim": claim(c, 6), "when": "now", "at": time.time()} for c in ("K2", "K4")}

    assert flights.ahead(latest, sharing("K2"), pair, 600, slot=r.slot("ahead:K2"))
    assert flights.measuring("K4") == flights.measuring("K2") == "ahead"
    assert not flights.ahead(latest, sharing("K4"), r.run("K4"), 600)  # K4's step: the pair is measured already
    go.set()
    assert wait_for(lambda: latest.get("K4") is not None and flights.measuring("K4") is None)
    assert latest.get("K2")["claim"]["id"] == "K2" and not flights.ahead(latest, sharing("K4"), pair, 600)


def test_the_next_claim_is_the_lessons_next_other_workload():
    """Read from the lesson's steps (analysis/lesson_plan.STEPS): K1 1.1.8, K2 1.2.6, K3 2.1.3, K11 2.2.1,
    K4 2.2.2, K5 ... K10 5.4. K2's next claims leave out K4 (measured with it); the last claim has none."""
    assert next_claims("K1") == ["K2", "K3", "K11", "K5", "K6", "K7", "K8", "K9", "K10"]
    assert next_claims("K2")[:3] == ["K3", "K11", "K5"] and next_claims("K11")[:2] == ["K4", "K5"]
    assert next_claims("K9") == ["K10"] and next_claims("K10") == []
