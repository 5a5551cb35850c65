"""Turns by fair share (llmviz/classroom/fair_share.py): with every turn taken, the waiter whose client used the
server least goes first, whatever the order they came in; alone, a run never waits; a long run stops holding its turn;
a client's use decays by its half-life. Hand cases, with real threads where waiting is the point."""

from __future__ import annotations

import threading
import time

import pytest

from llmviz.classroom.fair_share import FairShare


def test_a_client_that_used_less_goes_first():
    share = FairShare(slots=1, long_s=30.0)
    for _ in range(5):  # the attacker has used the server: 5 runs of 0.02 s
        turn = share.acquire("203.0.113.66")
        time.sleep(0.02)
        share.release(turn)
    assert share.use("203.0.113.66") > 0.09
    held = share.acquire("198.51.100.1")  # the only turn, taken
    order: list[str] = []

    def run(client: str) -> None:
        turn = share.acquire(client)
        order.append(client)
        share.release(turn)

    attacker = threading.Thread(target=run, args=("203.0.113.66",))
    attacker.start()
    time.sleep(0.1)  # the attacker waits first...
    honest = threading.Thread(target=run, args=("198.51.100.2",))
    honest.start()
    time.sleep(0.1)  # ...then a student who has used nothing
    share.release(held)
    attacker.join(5)
    honest.join(5)
    assert order == ["198.51.100.2", "203.0.113.66"]


def test_alone_a_run_never_waits():
    share = FairShare(slots=2)
    began = time.perf_counter()
    turns = [share.acquire("203.0.113.66") for _ in range(2)]  # two at once: both turns
    assert time.perf_counter() - began < 0.05
    for turn in turns:
        share.release(turn)


def test_a_long_run_stops_holding_its_turn():
    share = FairShare(slots=1, long_s=0.2)
    share.acquire("teacher")  # a Reveal's measurement, never released here
    began = time.perf_counter()
    share.release(share.acquire("student"))
    assert 0.15 < time.perf_counter() - began < 1.0  # waited the long run's 0.2 s, no more


def test_no_run_waits_past_the_most():
    share = FairShare(slots=1, long_s=60.0, most_wait_s=0.2)
    share.acquire("stuck")
    began = time.perf_counter()
    share.release(share.acquire("next"))
    assert 0.15 < time.perf_counter() - began < 1.0


def test_use_counts_the_turns_held_and_halves_each_half_life():
    now = [100.0]
    share = FairShare(slots=1, half_life_s=10.0, long_s=2.0, clock=lambda: now[0])
    turn = share.acquire("a")
    now[0] += 0.5
    share.release(turn)
    assert share.use("a") == pytest.approx(0.5)
    turn = share.acquire("a")
    now[0] += 5.0  # a long run: counts long_s at most
    share.release(turn)
    assert share.use("a") == pytest.approx(0.5 * 0.5 ** 0.5 + 2.0)
    now[0] += 10.0
    assert share.use("a") == pytest.approx((0.5 * 0.5 ** 0.5 + 2.0) / 2)
    assert share.use("never") == 0.0


def test_settings_are_checked():
    with pytest.raises(ValueError):
        FairShare(slots=0)
