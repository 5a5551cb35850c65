"""Turns by fair share when the page is busy: a client that has used the server more waits behind one that has used it
less (issue 47, finding 5, "one address starves the class").

The budget (client_budget.py) bounds what one address may spend, sized so that a class of 60 phones behind one NAT
address never meets it; on this project's 2-core machine that bound is itself most of what a process serves. So the
budget alone cannot keep 32 sessions of one address from slowing every other student: when runs wait for the
server, the next one to go is the one whose client has used it least. A run of the page takes one of SLOTS turns;
a run that finds every turn taken waits, and when a turn frees the waiter whose client's recent use is lowest goes
first (its use: the seconds its runs held a turn, decaying with a half-life). With no one waiting nothing changes:
a class alone on its server, behind one address or sixty, runs as before; an attacker's runs still go, each behind
every student's.

Long runs (a Reveal's measurement) hold a turn only for LONG_S: after that they no longer count as taking one, so
that a measurement never blocks the page for others; their use counts up to LONG_S too. A waiter gives up waiting
after MOST_WAIT_S and goes anyway (a net under a bug: no run waits forever). Streamlit-free and torch-free; the clock
is injectable (tests/classroom/test_fair_share.py); llmviz/ui/client_gate.py calls it around each run of the page.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

SLOTS = 1  # page runs at once in one process: one Python core (the GIL), and a run's waits on the store beside it
HALF_LIFE_S = 10.0  # a client's use halves in this long: a burst of a minute ago no longer counts against it
LONG_S = 2.0  # a run older than this no longer takes a turn, and its use counts this much at most
MOST_WAIT_S = 30.0
POLL_S = 0.05  # how often a waiter looks again while a long run ages out of its turn


@dataclass
class Turn:
    client: str
    started: float
    seq: int


class FairShare:
    def __init__(self, slots: int = SLOTS, half_life_s: float = HALF_LIFE_S, long_s: float = LONG_S,
                 most_wait_s: float = MOST_WAIT_S, clock: Callable[[], float] = time.monotonic):
        if not (isinstance(slots, int) and slots >= 1 and half_life_s > 0 and long_s > 0 and most_wait_s > 0):
            raise ValueError(f"fair share: slots >= 1 and positive times, got {slots}, {half_life_s}, {long_s}, "
                             f"{most_wait_s}")
        self.slots, self.half_life_s, self.long_s, self.most_wait_s = slots, half_life_s, long_s, most_wait_s
        self.clock = clock
        self._lock = threading.Condition()
        self._use: dict[str, tuple[float, float]] = {}  # client -> (use in seconds, when last updated)
        self._running: dict[int, Turn] = {}
        self._waiting: dict[int, tuple[str, float]] = {}  # seq -> (client, since)
        self._seq = itertools.count()

    def use(self, client: str, now: float | None = None) -> float:
        """A client's recent use: the seconds its runs held a turn, halved every half_life_s."""
        now = self.clock() if now is None else now
        held, at = self._use.get(client, (0.0, now))
        return held * math.pow(0.5, max(0.0, now - at) / self.half_life_s)

    def _busy(self, now: float) -> int:
        return sum(now - t.started < self.long_s for t in self._running.values())

    def _next(self, now: float) -> int | None:
        """The waiter to go when a turn is free: its client's use lowest, then the one waiting longest."""
        if not self._waiting:
            return None
        return min(self._waiting, key=lambda seq: (self.use(self._waiting[seq][0], now), seq))

    def acquire(self, client: str) -> Turn:
        """Wait for this run's turn (at once when one is free and no one waits); the turn, to release."""
        with self._lock:
            seq = next(self._seq)
            since = self.clock()
            self._waiting[seq] = (client, since)
            while True:
                now = self.clock()
                if (self._busy(now) < self.slots and self._next(now) == seq) or now - since >= self.most_wait_s:
                    break
                self._lock.wait(POLL_S)
            del self._waiting[seq]
            turn = self._running[seq] = Turn(client, now, seq)
            self._lock.notify_all()  # another turn may be free too
            return turn

    def release(self, turn: Turn) -> None:
        """The run ended: its client's use grows by the time it held its turn (at most long_s)."""
        with self._lock:
            now = self.clock()
            self._running.pop(turn.seq, None)
            self._use[turn.client] = (self.use(turn.client, now) + min(self.long_s, max(0.0, now - turn.started)),
                                      now)
            self._forget(now)
            self._lock.notify_all()

    def _forget(self, now: float) -> None:
        """Drop the clients whose use has decayed to nothing (a millisecond), so the table holds the recent ones."""
        if len(self._use) > 1000:
            for client in [c for c in self._use if self.use(c, now) < 1e-3]:
                del self._use[client]
