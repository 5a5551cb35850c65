"""Turns by fair share (llmviz/classroom/fair_share.py): with every turn taken, the waiter whose client used the
server least goes first, whatever the order they came in; alone, a run never waits; a long run stops holding its turn;
a client's use decays by its half-life; 200 waiters cost about as much work as 200 runs, and a waiter sleeps until it is
admitted or a long run ages out. Hand cases, with real threads where waiting is the point."""

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


class Counted:
    """A method of the share, counted (how much work choosing the next run costs)."""

    def __init__(self, share: FairShare, name: str):
        self.calls, self.method = 0, getattr(share, name)
        setattr(share, name, self)

    def __call__(self, *args):
        self.calls += 1
        return self.method(*args)


def test_200_waiters_go_by_their_clients_use_then_in_arrival_order_for_little_work():
    """Behind a held turn, 200 runs of 10 clients queue in a mixed order: 5 clients have used the server (0.1 to
    0.5 s), 5 never have. Each run goes in the order of its client's use, and among equal use (the 5 new clients', or
    one client's own runs) in the order they came. Choosing costs a few steps a run, and no waiter wakes but the one
    admitted: the old way (every waiter waking and looking at every other on each release) took ~n^2 use() calls per
    release."""
    now = [100.0]  # the clock stands still while they wait: the clients' use is what it was
    share = FairShare(slots=1, long_s=60.0, most_wait_s=60.0, clock=lambda: now[0])
    for i in range(5):
        turn = share.acquire(f"used{i}")
        now[0] += 0.1 * (5 - i)  # used0 used the most
        share.release(turn)
    held = share.acquire("teacher")
    counters = [Counted(share, "use"), Counted(share, "_rank")]
    dispatched = Counted(share, "_dispatch")
    order: list[int] = []

    def run(j: int, client: str) -> None:
        turn = share.acquire(client)
        order.append(j)
        share.release(turn)

    clients = [f"used{j % 5}" if j % 2 else f"new{j % 5}" for j in range(200)]
    threads = [threading.Thread(target=run, args=(j, client), daemon=True) for j, client in enumerate(clients)]
    for j, thread in enumerate(threads):
        thread.start()
        while share.waiting() < j + 1:  # queued before the next one comes
            time.sleep(0.0005)
    assert order == []
    expected = sorted(range(200), key=lambda j: (share.use(clients[j]), j))
    share.release(held)
    for thread in threads:
        thread.join(10)
    assert order == expected
    assert [clients[j] for j in order[:100]] == [f"new{j % 5}" for j in range(0, 200, 2)]  # never used, as they came
    assert clients[order[100]] == "used4" and clients[order[-1]] == "used0"
    assert sum(c.calls for c in counters) < 8 * 200  # ~5 a run here
    assert dispatched.calls <= 2 * 200 + 2  # one on each arrival and release: no other waiter woke


def test_a_waiter_wakes_when_a_long_run_ages_out_with_no_release():
    """No one releases: the waiter's own timer, set to when the running turn turns long, wakes it (once, not a look
    every few milliseconds)."""
    share = FairShare(slots=1, long_s=0.3)
    share.acquire("teacher")  # a Reveal's measurement, never released here
    dispatched = Counted(share, "_dispatch")
    took: list[float] = []

    def run() -> None:
        began = time.perf_counter()
        share.acquire("student")
        took.append(time.perf_counter() - began)

    waiter = threading.Thread(target=run, daemon=True)
    waiter.start()
    waiter.join(5)
    assert took and 0.25 < took[0] < 1.0
    assert dispatched.calls <= 3  # on arrival, then on its timer (and once more if the clock's rounding woke it early)


def test_settings_are_checked():
    with pytest.raises(ValueError):
        FairShare(slots=0)
