"""One measurement per claim at a time: threads stand in for browser sessions pressing Reveal
together on a public server (llmviz/ui/claims/claim_flight.py). Each counts its own measure calls; the store is the
server's LatestClaims."""

from __future__ import annotations

import threading
import time

import pytest

from llmviz.errors import ServerBusyError
from llmviz.ui.claims.claim_flight import ClaimFlights
from llmviz.ui.public import LatestClaims


def reveal(flights: ClaimFlights, latest: LatestClaims, claim: str, session: str, measure, wait_s: float = 10):
    """What a session's Reveal does: the shared entry, or its own measurement put for the others."""
    with flights.turn(latest, claim, session, wait_s) as kept:
        if kept is not None:
            return kept
        entry = measure(session)
        flights.put(latest, claim, entry)
        return entry


def together(n: int, fn) -> list:
    """fn(i) in n threads started at once; their results (or the exception each raised), in order."""
    start, out = threading.Barrier(n), [None] * n

    def run(i):
        start.wait()
        try:
            out[i] = fn(i)
        except Exception as exc:  # the test reads it
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    return out


def test_three_sessions_one_claim_one_measurement():
    flights, latest, calls = ClaimFlights(), LatestClaims(), []

    def measure(session):
        calls.append(session)
        time.sleep(0.3)  # long enough that the others arrive while it runs
        return {"claim": {"id": "K8", "by": session}, "when": "now"}

    got = together(3, lambda i: reveal(flights, latest, "K8", f"s{i}", measure))
    assert len(calls) == 1
    assert got == [{"claim": {"id": "K8", "by": calls[0]}, "when": "now"}] * 3
    assert flights.measuring("K8") is None


def test_a_failed_measurement_lets_one_waiter_measure_next():
    flights, latest, calls = ClaimFlights(), LatestClaims(), []

    def measure(session):
        calls.append(session)
        time.sleep(0.3)
        if len(calls) == 1:
            raise ServerBusyError("stopped", code="time_limit")
        return {"claim": {"id": "K8", "by": session}, "when": "later"}

    got = together(3, lambda i: reveal(flights, latest, "K8", f"s{i}", measure))
    assert len(calls) == 2 and calls[0] != calls[1]  # the first failed; exactly one other measured
    failed = [g for g in got if isinstance(g, ServerBusyError)]
    assert len(failed) == 1 and got.count({"claim": {"id": "K8", "by": calls[1]}, "when": "later"}) == 2
    assert latest.get("K8")["claim"]["by"] == calls[1]


def test_different_claims_measure_at_the_same_time():
    flights, latest, running, overlap = ClaimFlights(), LatestClaims(), set(), []
    guard = threading.Lock()

    def measure(claim):
        def run(session):
            with guard:
                running.add(claim)
                overlap.append(len(running))
            time.sleep(0.3)
            with guard:
                running.discard(claim)
            return {"claim": {"id": claim}, "when": "now"}
        return run

    claims = ["K3", "K8"]
    started = time.perf_counter()
    got = together(2, lambda i: reveal(flights, latest, claims[i], f"s{i}", measure(claims[i])))
    assert [g["claim"]["id"] for g in got] == claims
    assert max(overlap) == 2 and time.perf_counter() - started < 0.55  # side by side, not one after the other


def test_a_waiter_past_its_limit_is_told_the_server_is_busy():
    flights, latest = ClaimFlights(), LatestClaims()
    with flights.turn(latest, "K8", "s0", 10) as kept:
        assert kept is None
        with pytest.raises(ServerBusyError) as exc, flights.turn(latest, "K8", "s1", 0.2):
            pass
        assert exc.value.code == "busy_server"
        with pytest.raises(ServerBusyError) as again, flights.turn(latest, "K8", "s0", 0.2):
            pass  # the measuring session itself, pressing again
        assert again.value.code == "busy_session"
    assert flights.measuring("K8") is None  # no entry put: the next press measures
